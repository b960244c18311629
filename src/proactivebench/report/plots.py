"""The report's figures, drawn with matplotlib (a dependency, imported only here) into PNG bytes.

Figures are made with `matplotlib.figure.Figure` and the Agg canvas, never `pyplot`: no
figure registry, no display needed, nothing left open. One global is touched: matplotlib's
rcParams, set for literal text only while a figure is drawn (`rc_context`, see `literal`).
Without matplotlib the report still has every table; `missing_reason()` says why the plots
are absent.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

from proactivebench.benchmark import registry
from proactivebench.benchmark.metrics import CHOICE_KINDS, metric
from proactivebench.benchmark.paper_results import PAPER_SOURCE, published_sizes
from proactivebench.benchmark.registry import scenario_order
from proactivebench.core.stats import Interval, spearman_rho
from proactivebench.report.comparable import average_not_comparable
from proactivebench.report.inert import visible
from proactivebench.report.measures import RunMeasures, sized_models
from proactivebench.report.published import published_averages

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def missing_reason() -> str | None:
    """Why plots cannot be drawn here, or None when they can."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "plots skipped: matplotlib is not installed (pip install matplotlib)"
    return None


def import_matplotlib() -> None:
    """Import what drawing needs (`matplotlib.figure`, the Agg canvas: 0.3-0.4 s here) now,
    e.g. in a worker while a run plays (`report.worker`); nothing when it is not installed."""
    try:
        import matplotlib.backends.backend_agg
        import matplotlib.figure  # noqa: F401
    except ImportError:
        pass


#: Every text drawn literally: a `$` in a model's name is a dollar sign, never TeX math.
_LITERAL_TEXT = {"text.parse_math": False, "text.usetex": False}

Drawn = TypeVar("Drawn")


@contextmanager
def _literal_text() -> Iterator[None]:
    from matplotlib import rc_context

    with rc_context(_LITERAL_TEXT):
        yield


def literal(draw: Callable[..., Drawn]) -> Callable[..., Drawn]:
    """Draw under `_LITERAL_TEXT` (text artists read `text.parse_math` when made)."""

    @wraps(draw)
    def drawn(*args: object, **kwargs: object) -> Drawn:
        with _literal_text():
            return draw(*args, **kwargs)

    return drawn


def _label(text: str) -> str:
    """A name as a plot shows it: control characters as escapes (fonts have no glyph)."""
    return visible(text)


def _rate_axis(ax: Axes, percent: bool) -> None:
    """Rates start at 0; an all-zero axis shows 0..1 (or 0..100 %), not -0.04..0.04."""
    if ax.dataLim.y1 > 0:
        ax.set_ylim(bottom=0)
    else:
        ax.set_ylim(0, 100.0 if percent else 1.0)


DPI = 100
#: The marker of a scenario that is not registered (any more) when its runs are reported.
OTHER_MARKER = "h"


def scenario_marker(short: str) -> str:
    """A scenario's marker in the scatter (colour is the run's): its registration's."""
    known = short in registry.scenario_names()
    return registry.scenario(short).marker if known else OTHER_MARKER


def run_colours(count: int) -> list[str]:
    """A colour per run, no two alike, in the runs' order: matplotlib's ten (C0-C9, tab10) up
    to ten runs, as before; up to twenty, tab20's lighter tints of them after those ten; more,
    evenly spaced hues of a continuous map. `paper` makes eleven runs: from a cycle of ten the
    eleventh (oeg-multiturn) took the first's (mcqa's) colour in every plot."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    if count <= 10:
        return [f"C{i}" for i in range(count)]
    if count <= 20:
        tab20 = [to_hex(c) for c in colormaps["tab20"].colors]
        return (tab20[0::2] + tab20[1::2])[:count]
    turbo = colormaps["turbo"]
    return [to_hex(turbo(0.05 + 0.9 * i / (count - 1))) for i in range(count)]


def _figure(width: float, height: float) -> Figure:
    """Margins are set by hand: a layout engine would double the drawing time, and `eval`
    draws these at the end of every run. The canvas is attached at once, so that a legend can
    be measured (text layout only, no drawing) to make room for it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _inches(figure: Figure, artist: Any) -> tuple[float, float]:
    """Width and height of a laid-out artist (a legend, a text) in inches."""
    box = artist.get_window_extent(figure.canvas.get_renderer())  # type: ignore[attr-defined]
    return box.width / figure.dpi, box.height / figure.dpi


def _key(all_measures: Sequence[RunMeasures]) -> tuple[str, str, str]:
    """The main rate of these runs: accuracy (MCQA) or aggregate (OEG), and the second one."""
    if all(m.run.oeg for m in all_measures):
        return "aggregate", metric("aggregate").heading, "ps"
    return "accuracy", metric("accuracy").heading, "ps_rate"


def _heading(key: str) -> str:
    """A metric's name on an axis or in a description: its declaration's label."""
    return metric(key).label


# ----- per-scenario bars ------------------------------------------------------------------------


@literal
def scenario_bars(all_measures: Sequence[RunMeasures]) -> bytes:
    return _png(scenario_bars_figure(all_measures))


def scenario_bars_figure(all_measures: Sequence[RunMeasures]) -> Figure:
    """Per-scenario bars of the main rate and the second one, one bar per run, with 95 %
    intervals; a scenario without a value has no bar, a value of 0 a tick in the run's colour.
    The legend of the runs goes above the plots, in as many columns as fit the width (one
    column, and a wider figure, for very long names): the figure grows to hold it, never
    clips it."""
    from matplotlib.patches import Patch

    main, main_label, second = _key(all_measures)
    scenarios = [*scenario_order([s for m in all_measures for s in m.scenarios]), "average"]
    plot_height = 5.4
    figure = _figure(max(7.0, 1.1 * len(scenarios) + 1.5), plot_height)
    axes = figure.subplots(2, 1, sharex=True)
    colours = run_colours(len(all_measures))
    # The runs with a bar, which alone take a place beside the others and are in the legend.
    drawn = [
        index
        for index, m in enumerate(all_measures)
        if any(
            s.values.get(k) is not None
            for s in [*m.scenarios.values(), m.average]
            for k in (main, second)
        )
    ]
    width = 0.8 / max(1, len(drawn))
    for ax, key, label in ((axes[0], main, main_label), (axes[1], second, _heading(second))):
        for slot, index in enumerate(drawn):
            measures = all_measures[index]
            xs, ys, lows, highs = [], [], [], []
            for position, scenario in enumerate(scenarios):
                score = (
                    measures.average if scenario == "average" else measures.scenarios.get(scenario)
                )
                value = score.values.get(key) if score else None
                if value is None:
                    continue
                xs.append(position + (slot - (len(drawn) - 1) / 2) * width)
                ys.append(value.estimate)
                lows.append(value.estimate - value.low)
                highs.append(value.high - value.estimate)
            colour = colours[index]
            ax.bar(xs, ys, width, yerr=[lows, highs], capsize=2, color=colour)
            # A bar of height 0 draws nothing: a tick in its colour says "0", not "missing".
            zeros = [x for x, y in zip(xs, ys, strict=True) if y == 0]
            if zeros:
                ax.scatter(
                    zeros,
                    [0] * len(zeros),
                    marker="_",
                    s=(72 * width) ** 2,
                    linewidths=3,
                    color=colour,
                    clip_on=False,
                    zorder=3,
                )
        ax.set_ylabel(label)
        _rate_axis(ax, key != "ps_rate")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(range(len(scenarios)), [_label(s) for s in scenarios])
    axes[1].set_xlabel("scenario")
    title = figure.suptitle("Per scenario, with 95 % intervals", fontsize="medium")
    # The legend names the runs drawn, in their colours; an open-ended run among
    # multiple-choice ones (other rates) has no bar, and is named in a note instead (it was
    # listed, in the first run's colour).
    handles = [Patch(facecolor=colours[i]) for i in drawn]
    labels = [_label(all_measures[i].run.label) for i in drawn]
    legend = _fitted_legend(figure, handles, labels)
    absent = [_label(m.run.label) for i, m in enumerate(all_measures) if i not in drawn]
    notes = ["Not in this plot (no value on these axes): " + ", ".join(absent) + "."]
    note_height = _note(figure, notes if absent else [])
    legend_height = _inches(figure, legend)[1] if legend is not None else 0.0
    title_height = _inches(figure, title)[1] + 0.15
    width_in, _ = figure.get_size_inches()
    height = plot_height + title_height + legend_height + 0.1 + note_height
    figure.set_size_inches(width_in, height)
    title.set_y(1 - 0.06 / height)
    title.set_verticalalignment("top")
    if legend is not None:
        legend.set_bbox_to_anchor((0.5, 1 - (title_height + 0.02) / height), figure.transFigure)
    figure.subplots_adjust(
        left=0.8 / width_in,
        right=1 - 0.2 / width_in,
        bottom=(0.6 + note_height) / height,
        top=1 - (title_height + legend_height + 0.15) / height,
        hspace=0.08,
    )
    return figure


def _fitted_legend(figure: Figure, handles: list[Any], labels: list[str], **options: Any) -> Any:
    """A legend centred across the figure, in up to three columns; fewer when the names are
    too long for the figure's width, and a wider figure when one column is still too wide:
    a long run name makes the figure grow, never clips the legend."""
    if not labels:
        return None
    width_in = figure.get_size_inches()[0]
    for columns in range(min(3, len(labels)), 0, -1):
        legend = figure.legend(
            handles,
            labels,
            loc="upper center",
            ncols=columns,
            fontsize="small",
            frameon=False,
            bbox_to_anchor=(0.5, 1.0),
            **options,
        )
        needed = _inches(figure, legend)[0] + 0.2
        if needed <= width_in or columns == 1:
            if needed > width_in:
                figure.set_size_inches(needed, figure.get_size_inches()[1])
            return legend
        legend.remove()
    return None


def _note(figure: Figure, lines: Sequence[str]) -> float:
    """Small grey lines at the figure's bottom left, wrapped to its width (set it first);
    returns the height they take, in inches (0 for none)."""
    import textwrap

    if not lines:
        return 0.0
    text = figure.text(0.01, 0.01, "\n".join(lines), fontsize="x-small", color="0.3")
    available = figure.get_size_inches()[0] - 0.2
    columns = max(len(line) for line in lines)
    while (width := _inches(figure, text)[0]) > available and columns > 20:
        columns = max(20, min(columns - 1, int(columns * 0.95 * available / width)))
        text.set_text("\n".join(textwrap.fill(line, columns) for line in lines))
    return _inches(figure, text)[1] + 0.1


# ----- rates against each other, per scenario ---------------------------------------------------


def scatter_axes(all_measures: Sequence[RunMeasures]) -> tuple[str, str]:
    """The scatter's x and y rates.

    MCQA: ps rate (suggestions per episode) against accuracy. The two are measured apart (a
    model may ask and still answer wrong, or answer right at once), so the plot shows whether
    asking goes with being right, scenario by scenario.

    OEG: ps % against cp %, not against the aggregate. The aggregate is "ps or cp" by
    definition (protocol §6), so it is never below ps and rises with it: a scatter of the two
    shows mostly that definition. ps (did the answer suggest an intervention) and cp (did it
    name the correct category) are judged apart, so their scatter shows how a model trades
    asking for guessing, and the aggregate is the bar plot's.
    """
    if all(m.run.oeg for m in all_measures):
        return "ps", "cp"
    return "ps_rate", "accuracy"


@dataclass
class _Point:
    run: int
    scenario: str | None  # None: the run's average
    x: Interval
    y: Interval
    shift: float = 0.0


def _points(all_measures: Sequence[RunMeasures], x_key: str, y_key: str) -> list[_Point]:
    points = []
    for index, measures in enumerate(all_measures):
        rows: list[tuple[str | None, Any]] = [*measures.scenarios.items(), (None, measures.average)]
        for scenario, score in rows:
            x, y = score.values.get(x_key), score.values.get(y_key)
            if x is not None and y is not None:
                points.append(_Point(index, scenario, x, y))
    return points


def _spread_coinciding(points: list[_Point], step: float) -> bool:
    """Small marks at the same x and y (one scenario in several runs with the same results,
    or two scenarios of one run, e.g. both at 0 %) would hide each other, whatever their
    shapes: each group is spread sideways by `step`, centred on the true value; so are the
    runs' averages at one place. Returns whether any mark was moved."""
    groups: dict[tuple[bool, float, float], list[_Point]] = {}
    for point in points:
        average = point.scenario is None
        key = (average, round(point.x.estimate, 9), round(point.y.estimate, 9))
        groups.setdefault(key, []).append(point)
    moved = False
    for group in groups.values():
        for rank, point in enumerate(group):
            point.shift = (rank - (len(group) - 1) / 2) * step
            moved = moved or point.shift != 0
    return moved


def identical_runs(all_measures: Sequence[RunMeasures], keys: Sequence[str]) -> list[list[str]]:
    """Labels of runs whose rates (`keys`, every scenario and the average) are all equal:
    their points would coincide, so the plot says so."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for measures in all_measures:
        rows = [*measures.scenarios.items(), ("", measures.average)]
        values = tuple(
            (name, key, None if s.values.get(key) is None else s.values[key].estimate)  # type: ignore[union-attr]
            for name, s in sorted(rows, key=lambda row: row[0])
            for key in keys
        )
        groups.setdefault(values, []).append(measures.run.label)
    return [labels for labels in groups.values() if len(labels) > 1]


def scatter_scenarios(all_measures: Sequence[RunMeasures]) -> list[str]:
    """The scenarios the scatter marks, in the paper's order: its legend lists each."""
    x_key, y_key = scatter_axes(all_measures)
    return scenario_order(
        [p.scenario for p in _points(all_measures, x_key, y_key) if p.scenario is not None]
    )


@literal
def accuracy_vs_ps(all_measures: Sequence[RunMeasures], with_paper: bool = False) -> bytes:
    return _png(accuracy_vs_ps_figure(all_measures, with_paper))


#: The marks of the paper's published averages (`report --paper`), one per table shown: hollow
#: grey shapes no scenario uses (`registry`'s markers: o s ^ D v P X, h for one's own), as
#: many as the tables a run can stand beside (`comparable.COUNTERPARTS`: seven; `paper` shows
#: four in one scatter), so that no two tables share a shape (three went round before: Table
#: 10's marks were Table 1's).
_PUBLISHED_MARKS = ("*", "p", "8", "<", ">", "d", "H")


def accuracy_vs_ps_figure(all_measures: Sequence[RunMeasures], with_paper: bool = False) -> Figure:
    """Each run's scenarios as small marks (colour: the run, shape: the scenario) and its
    average as a large circle with its 95 % intervals both ways (axes: `scatter_axes`).
    Points of equal value are set side by side, and runs with identical results are named
    under the plot, so that no run hides behind another. Two legends at the right: the runs,
    and the scenarios' shapes. With `with_paper` (`report --paper`), each published model's
    average in the runs' counterpart tables, as grey crosses (`published.published_averages`)."""
    from matplotlib.lines import Line2D

    x_key, y_key = scatter_axes(all_measures)
    points = _points(all_measures, x_key, y_key)
    colours = run_colours(len(all_measures))
    xs = [v for p in points for v in (p.x.low, p.x.high)]
    span = (max(xs) - min(xs)) if xs else 0.0
    moved = _spread_coinciding(points, 0.015 * (span or (100.0 if x_key != "ps_rate" else 1.0)))
    plot_width, plot_height = 6.2, 4.2
    figure = _figure(plot_width + 3.0, plot_height)
    ax = figure.subplots()
    marks: dict[str, list[_Point]] = {}
    for point in points:
        if point.scenario is None:
            ax.errorbar(
                [point.x.estimate + point.shift],
                [point.y.estimate],
                xerr=[[point.x.estimate - point.x.low], [point.x.high - point.x.estimate]],
                yerr=[[point.y.estimate - point.y.low], [point.y.high - point.y.estimate]],
                fmt="o",
                markersize=9,
                markeredgecolor="black",
                color=colours[point.run],
                zorder=3,
            )
        else:
            marks.setdefault(point.scenario, []).append(point)
    for scenario, group in marks.items():  # one collection per shape: quick to draw
        ax.scatter(
            [p.x.estimate + p.shift for p in group],
            [p.y.estimate for p in group],
            marker=scenario_marker(scenario),
            s=30,
            c=[colours[p.run] for p in group],
            edgecolors="white",
            linewidths=0.5,
        )
    published = published_averages(all_measures, x_key, y_key) if with_paper else []
    for index, (_, group) in enumerate(published):
        ax.scatter(
            [x for x, _, _ in group],
            [y for _, y, _ in group],
            marker=_PUBLISHED_MARKS[index % len(_PUBLISHED_MARKS)],
            s=42,
            facecolors="none",
            edgecolors="0.5",
            zorder=1,
        )
    ax.set_xlabel(_heading(x_key))
    ax.set_ylabel(_heading(y_key))
    # Percentages span 0-100 whatever the values (a run at 100 % reads as 100 %, not as the
    # middle of 95-105); the ps rate starts at 0.
    for set_limits, get_limits, key in (
        (ax.set_xlim, ax.get_xlim, x_key),
        (ax.set_ylim, ax.get_ylim, y_key),
    ):
        if key != "ps_rate":
            set_limits(-4.0, 104.0)
        elif not points:
            set_limits(-0.04, 1.0)
        else:
            high = max(get_limits()[1], 1.0)
            set_limits(min(get_limits()[0], -0.04 * high), high)
    ax.set_title(
        "Per scenario (small marks) and average (large, 95 % intervals)", fontsize="medium"
    )
    ax.grid(alpha=0.3)
    # The runs with a mark here: an open-ended run among multiple-choice ones (other rates), or
    # one whose every episode failed, has none, and is named in a note instead of the legend.
    drawn = sorted({p.run for p in points})
    run_handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="",
            markersize=8,
            color=colours[i],
            markeredgecolor="black",
        )
        for i in drawn
    ]
    scenario_handles = [
        Line2D(
            [],
            [],
            marker=scenario_marker(s),
            linestyle="",
            color="0.4",
            label=_label(s),
        )
        for s in scatter_scenarios(all_measures)
    ]
    # The scenarios' shapes at the right (short names, one column); the runs under the plot,
    # across its width, where a long model name has room.
    scenarios_legend = ax.legend(
        handles=scenario_handles,
        title="scenario",
        fontsize="small",
        title_fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
    )
    width = 0.9 + plot_width + 0.3 + _inches(figure, scenarios_legend)[0] + 0.2
    figure.set_size_inches(width, plot_height)
    run_labels = [_label(all_measures[i].run.label) for i in drawn]
    for index, (name, group) in enumerate(published):
        mark = _PUBLISHED_MARKS[index % len(_PUBLISHED_MARKS)]
        run_handles.append(
            Line2D([], [], marker=mark, linestyle="", markerfacecolor="none", color="0.5")
        )
        run_labels.append(f"{name} ({PAPER_SOURCE}): {len(group)} models' averages")
    runs_legend = _fitted_legend(figure, run_handles, run_labels)
    width = figure.get_size_inches()[0]
    legend_height = _inches(figure, runs_legend)[1] if runs_legend is not None else 0.0
    notes = []
    if moved:
        notes.append(
            "Marks with equal values (of several runs, or of several scenarios) are set side "
            "by side (their true x is the middle)."
        )
    # The published models' marks are numbered (names would cover each other), the key here;
    # a model in several tables keeps its number.
    numbers: dict[str, int] = {}
    for _, group in published:
        for _, _, model in group:
            numbers.setdefault(model, len(numbers) + 1)
    if numbers:
        notes.append(
            "Grey marks, numbered: the published models' averages: "
            + ", ".join(f"{n} {_label(model)}" for model, n in numbers.items())
            + "."
        )
    for labels in identical_runs(all_measures, (x_key, y_key)):
        notes.append("Identical results: " + " = ".join(_label(x) for x in labels) + ".")
    absent = [_label(m.run.label) for i, m in enumerate(all_measures) if i not in drawn]
    if absent:
        notes.append("Not in this plot (no value on these axes): " + ", ".join(absent) + ".")
    # Runs not comparable for the same reasons are named together, the reasons told once (a
    # suite's runs on generated data gave one long reason per run).
    apart: dict[str, list[str]] = {}
    for i in drawn if published else ():
        why = average_not_comparable(all_measures[i].run)
        if why:
            apart.setdefault("; ".join(why), []).append(_label(all_measures[i].run.label))
    if apart:
        notes.append(
            "Not comparable with the published models: "
            + "; ".join(f"{', '.join(labels)} ({why})" for why, labels in apart.items())
            + "."
        )
    note_height = _note(figure, notes)
    below = 0.6 + legend_height + note_height  # x label, runs, notes
    height = 0.35 + plot_height + below
    figure.set_size_inches(width, height)
    if runs_legend is not None:
        runs_legend.set_bbox_to_anchor((0.5, (legend_height + note_height) / height))
    figure.subplots_adjust(
        left=0.9 / width,
        right=(0.9 + plot_width) / width,
        bottom=below / height,
        top=1 - 0.35 / height,
    )
    if numbers:  # once the axes have their final place and size
        marks_of = [(x, y, str(numbers[model])) for _, group in published for x, y, model in group]
        _label_points(figure, ax, marks_of, colour="0.35")
    return figure


# ----- size ------------------------------------------------------------------------------------


def rho_text(sizes: Sequence[float], values: Sequence[float], rate: str) -> str:
    """Spearman's rho of `values` against `sizes`, or why there is none: fewer than three
    runs, every run the same size (no ranking of sizes), or every run the same `rate` (no
    ranking of rates)."""
    rho = spearman_rho(sizes, values)
    if rho is not None:
        return f"Spearman ρ = {rho:+.2f}"
    if len(sizes) < 3:
        return f"Spearman ρ = n/a: needs 3 runs with a size, has {len(sizes)}"
    if len(set(sizes)) == 1:
        return f"Spearman ρ = n/a: every run has the same size ({sizes[0]:g}B)"
    if len(set(values)) == 1:
        return f"Spearman ρ = n/a: every run has the same {rate} ({values[0]:g})"
    return "Spearman ρ = n/a"


@literal
def size_plot(all_measures: Sequence[RunMeasures], with_paper: bool = False) -> bytes | None:
    figure = size_figure(all_measures, with_paper)
    return None if figure is None else _png(figure)


def size_figure(all_measures: Sequence[RunMeasures], with_paper: bool = False) -> Figure | None:
    """Proactiveness (average ps rate, or OEG ps %) and the main rate against parameter count,
    with Spearman's rho of each or the reason it has none; None when fewer than two runs have
    a parameter count. One point per model (`measures.sized_models`: its plain-setting run).
    Runs left out (another run of the same model, no parameter count, or no value of a rate)
    are named under the plots. Runs of one size and rate share one label.

    With `with_paper` (`report --paper`) the paper's models of published size are drawn too
    (grey crosses, unlabelled, `paper_results.published_sizes`) and rho covers them: one run is then
    enough. A run not comparable with them (`comparable`) is drawn, named under the plots, and
    joins no rho with them; with none left, each plot gives the runs' own rho."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator

    sized, same_model = sized_models(all_measures)
    if len(sized) < (1 if with_paper else 2):
        return None
    main, _, second = _key(sized)
    figure = _figure(11.0, 4.6)
    axes = figure.subplots(1, 2)
    left_out: list[str] = []
    if same_model:
        left_out.append(
            "one point per model (its plain-setting run): "
            + ", ".join(m.run.label for m in same_model)
        )
    # A run not comparable with the paper's rows (`comparable`): drawn, in no rho with them
    # (`measures.size_correlations`' `not_with_published`).
    apart = [m.run.label for m in sized if with_paper and average_not_comparable(m.run)]
    labelled = []
    for ax, key in ((axes[0], second), (axes[1], main)):
        label = metric(key).heading
        points = [
            (float(m.run.params_b), m.average.values[key].estimate, m.run.label)  # type: ignore[arg-type, union-attr]
            for m in sized
            if m.average.values.get(key) is not None
        ]
        missing = [m.run.label for m in sized if m.average.values.get(key) is None]
        if missing:
            left_out.append(f"no {label}: " + ", ".join(missing))
        ax.scatter([p[0] for p in points], [p[1] for p in points], color="C0", zorder=3)
        labelled.append((ax, points))
        paper = published_sizes(key) if with_paper else []
        if paper:
            ax.scatter(
                [p[0] for p in paper],
                [p[1] for p in paper],
                color="0.55",
                marker="x",
                zorder=2,
                label=f"published ({PAPER_SOURCE}, {len(paper)} models)",
            )
            ax.legend(loc="best", fontsize="small")
        ax.set_xscale("log")
        sizes = sorted({p[0] for p in [*points, *paper]})
        if 0 < len(sizes) <= 8:  # the runs' own sizes, where they are few enough to read
            ax.xaxis.set_major_locator(FixedLocator(sizes))
        else:
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.margins(x=0.2, y=0.15)
        ax.set_xlabel("parameters (billions, log scale)")
        ax.set_ylabel(label)
        # With the published models when a run comparable with them has a value; else the
        # runs' own rho, as report.json's size_correlation gives them.
        ours = [p for p in points if p[2] not in apart]
        every = [*ours, *paper] if paper and ours else points
        shown = rho_text([p[0] for p in every], [p[1] for p in every], label)
        if paper and ours:
            shown += " (with the published models)"
        ax.set_title(f"{label} vs size\n{shown}", fontsize="medium")
        ax.grid(alpha=0.3)
    unsized = [m.run.label for m in all_measures if m.run.params_b is None]
    if unsized:
        left_out.insert(
            0,
            "no parameter count (give one with --params NAME=7B): " + ", ".join(unsized),
        )
    notes = [_label("Not shown: " + "; ".join(left_out))] if left_out else []
    if apart:
        notes.append(
            _label(
                "Drawn, in no rho with the published models (not comparable with them): "
                + ", ".join(apart)
            )
        )
    note_height = _note(figure, notes)
    height = 4.6 + note_height
    figure.set_size_inches(11.0, height)
    figure.subplots_adjust(
        left=0.75 / 11.0,
        right=1 - 0.25 / 11.0,
        bottom=(0.6 + note_height) / height,
        top=1 - 0.6 / height,
        wspace=0.28,
    )
    for ax, points in labelled:  # once the axes have their final place and size
        _label_points(figure, ax, points)
    return figure


#: Where a point's label may go, in points from the point, tried in order: beside it, then
#: further above or below.
_LABEL_PLACES = [(dx, dy) for dy in (4, -11, 13, -20, 22, -29) for dx in (5, -5)]


def _label_points(
    figure: Figure,
    ax: Axes,
    points: Sequence[tuple[float, float, str]],
    colour: str | None = None,
) -> None:
    """Name each point; runs at the same place share one label ("a = b"). Each label takes the
    first place (`_LABEL_PLACES`) where it overlaps no label placed before and stays inside
    the axes, so that neither another label nor the figure's edge hides part of it (the last
    place tried is kept when none is free)."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    ax.get_xlim(), ax.get_ylim()  # settle the limits, so that the data positions are final
    inside = ax.get_window_extent(renderer)
    places: dict[tuple[float, float], list[str]] = {}
    for x, y, name in points:
        places.setdefault((x, y), []).append(name)
    taken: list[Any] = []
    for (x, y), names in sorted(places.items(), key=lambda item: (-item[0][1], item[0][0])):
        text = ax.annotate(
            _label(" = ".join(names)),
            (x, y),
            xytext=_LABEL_PLACES[0],
            textcoords="offset points",
            fontsize="x-small",
            color=colour,
            zorder=5,  # over the marks
        )
        for dx, dy in _LABEL_PLACES:
            text.set_position((dx, dy))
            text.set_horizontalalignment("left" if dx > 0 else "right")
            box = text.get_window_extent(renderer)
            fits = (
                box.x0 >= inside.x0
                and box.x1 <= inside.x1
                and box.y0 >= inside.y0
                and box.y1 <= inside.y1
            )
            if fits and not any(box.overlaps(other) for other in taken):
                break
        taken.append(text.get_window_extent(renderer))


# ----- the action distribution ------------------------------------------------------------------

#: A colour per kind of choice (`metrics.CHOICE_KINDS`), the same in every report.
CHOICE_COLOURS = {
    "category": "#4C72B0",
    "proactive": "#DD8452",
    "abstain": "#8C8C8C",
    "unreadable": "#C44E52",
}
#: The two bars of each run: every turn's choice, and the first turn's.
ACTION_PANELS = (("choice_", "all turns"), ("first_choice_", "first turn"))


@literal
def action_bars(all_measures: Sequence[RunMeasures]) -> bytes | None:
    figure = action_bars_figure(all_measures)
    return None if figure is None else _png(figure)


def action_bars_figure(all_measures: Sequence[RunMeasures]) -> Figure | None:
    """The action distribution (docs/protocol.md §9) of each MCQA run, averaged over its
    scenarios as the paper's Figs. 4 and 19: one horizontal bar per run, stacked by kind of
    choice, over all turns (left) and at the first turn (right); shares of 7 % and more are
    written on their segment. The first run is on top. None without an MCQA run."""
    mcqa = [m for m in all_measures if not m.run.oeg]
    if not mcqa:
        return None
    row = 0.42
    plot_height = 0.9 + row * len(mcqa)
    figure = _figure(9.0, plot_height)
    axes = figure.subplots(1, 2, sharey=True)
    ys = list(range(len(mcqa)))
    for ax, (prefix, title) in zip(axes, ACTION_PANELS, strict=True):
        lefts = [0.0] * len(mcqa)
        for kind in CHOICE_KINDS:
            values = []
            for measures in mcqa:
                value = measures.average.values.get(prefix + kind)
                values.append(value.estimate if value is not None else 0.0)
            bars = ax.barh(ys, values, 0.7, left=lefts, color=CHOICE_COLOURS[kind], label=kind)
            for bar, value in zip(bars, values, strict=True):
                if value >= 7.0:
                    ax.text(
                        bar.get_x() + bar.get_width() / 2,
                        bar.get_y() + bar.get_height() / 2,
                        f"{value:.0f}",
                        ha="center",
                        va="center",
                        fontsize="x-small",
                        color="white",
                    )
            lefts = [a + b for a, b in zip(lefts, values, strict=True)]
        ax.set_xlim(0, 100)
        ax.set_title(title, fontsize="small")
        ax.set_xlabel("% of choices")
        ax.grid(axis="x", alpha=0.3)
        ax.set_axisbelow(True)
    names = [_label(m.run.label) for m in mcqa]
    axes[0].set_yticks(ys, names)
    axes[0].set_ylabel("run")
    axes[0].invert_yaxis()
    handles, labels = axes[0].get_legend_handles_labels()
    legend = figure.legend(
        handles, labels, loc="upper center", ncols=len(labels), fontsize="small", frameon=False
    )
    legend_height = _inches(figure, legend)[1] + 0.05
    # The run names are measured (tick labels have no extent before a draw): the figure widens
    # for long names rather than cutting them off at its left edge.
    from matplotlib import rcParams

    probe = figure.text(0, 0, "\n".join(names), fontsize=rcParams["ytick.labelsize"])
    names_in = _inches(figure, probe)[0]
    probe.remove()
    names_in += 0.3  # and the axis label "run" beside them
    width_in = max(9.0, names_in + 7.0)
    height = plot_height + legend_height
    figure.set_size_inches(width_in, height)
    figure.subplots_adjust(
        left=(names_in + 0.25) / width_in,
        right=1 - 0.2 / width_in,
        bottom=0.55 / height,
        top=1 - (legend_height + 0.3) / height,
        wspace=0.08,
    )
    return figure


def describe(name: str, all_measures: Sequence[RunMeasures]) -> str:
    """A plot's alternative text (the report's `alt`): what it shows, in words, for a screen
    reader, a page whose images did not load, and a test that reads the page."""
    runs = ", ".join(_label(m.run.label) for m in all_measures)
    if name == "scenarios":
        main, _, second = _key(all_measures)
        return f"Bars per scenario of {_heading(main)} and {_heading(second)}, one per run: {runs}"
    if name == "accuracy_vs_ps":
        x_key, y_key = scatter_axes(all_measures)
        shapes = ", ".join(_label(s) for s in scatter_scenarios(all_measures))
        return (
            f"{_heading(y_key)} against {_heading(x_key)}: one mark per run (colour) and "
            f"scenario (shape: {shapes}), and each run's average; runs: {runs}"
        )
    if name == "size":
        return f"Average rates against parameter count, with Spearman's rho; runs: {runs}"
    if name == "actions":
        return (
            "Action distribution, averaged over scenarios: one bar per MCQA run stacked by the "
            f"kind of choice ({', '.join(CHOICE_KINDS)}), over all turns and at the first "
            f"turn; runs: {runs}"
        )
    return name
