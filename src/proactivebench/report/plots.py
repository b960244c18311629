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
from functools import wraps
from typing import TYPE_CHECKING, TypeVar

from proactivebench.report.measures import RunMeasures, size_correlations
from proactivebench.report.runs import scenario_order
from proactivebench.report.text import visible

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


def _figure(width: float, height: float) -> Figure:
    """Margins are set by hand: a layout engine would double the drawing time, and `eval`
    draws these at the end of every run."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100)


def _png(figure: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _key(all_measures: Sequence[RunMeasures]) -> tuple[str, str, str]:
    """The main rate of these runs: accuracy (MCQA) or aggregate (OEG), and the second one."""
    if all(m.run.oeg for m in all_measures):
        return "aggregate", "aggregate %", "ps"
    return "accuracy", "accuracy %", "ps_rate"


@literal
def scenario_bars(all_measures: Sequence[RunMeasures]) -> bytes:
    """Per-scenario bars of the main rate and the second one, one bar per run, with 95 %
    intervals; a scenario without a value has no bar."""
    main, main_label, second = _key(all_measures)
    scenarios = [*scenario_order([s for m in all_measures for s in m.scenarios]), "average"]
    figure = _figure(max(7.0, 1.1 * len(scenarios) + 1.5), 6.2)
    axes = figure.subplots(2, 1, sharex=True)
    width = 0.8 / max(1, len(all_measures))
    second_label = "ps rate (suggestions / episode)" if second == "ps_rate" else "ps %"
    for ax, key, label in ((axes[0], main, main_label), (axes[1], second, second_label)):
        for index, measures in enumerate(all_measures):
            xs, ys, lows, highs = [], [], [], []
            for position, scenario in enumerate(scenarios):
                score = (
                    measures.average if scenario == "average" else measures.scenarios.get(scenario)
                )
                value = score.values.get(key) if score else None
                if value is None:
                    continue
                xs.append(position + (index - (len(all_measures) - 1) / 2) * width)
                ys.append(value.estimate)
                lows.append(value.estimate - value.low)
                highs.append(value.high - value.estimate)
            label_of = _label(measures.run.label) if ax is axes[0] else None
            bars = ax.bar(xs, ys, width, yerr=[lows, highs], capsize=2, label=label_of)
            # A bar of height 0 draws nothing: a tick in its colour says "0", not "missing".
            zeros = [x for x, y in zip(xs, ys, strict=True) if y == 0]
            if zeros:
                colour = bars.patches[0].get_facecolor()
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
    columns = min(3, len(all_measures))
    rows = -(-len(all_measures) // columns)
    top = 1.0 - (0.45 + 0.22 * rows) / 6.2
    figure.legend(
        loc="upper center",
        ncols=columns,
        fontsize="small",
        frameon=False,
        bbox_to_anchor=(0.5, 1.0 - 0.3 / 6.2),
    )
    figure.suptitle("Per scenario, with 95 % bootstrap intervals", y=0.995, fontsize="medium")
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.1, top=top, hspace=0.08)
    return _png(figure)


@literal
def accuracy_vs_ps(all_measures: Sequence[RunMeasures]) -> bytes:
    """Each run's scenarios as points (main rate against ps), the average as a larger mark
    with its intervals both ways."""
    main, main_label, second = _key(all_measures)
    figure = _figure(7.5, 5.0)
    ax = figure.subplots()
    for measures in all_measures:
        xs = [
            s.values[second].estimate
            for s in measures.scenarios.values()
            if s.values.get(second) and s.values.get(main)
        ]
        ys = [
            s.values[main].estimate
            for s in measures.scenarios.values()
            if s.values.get(second) and s.values.get(main)
        ]
        points = ax.scatter(xs, ys, alpha=0.35, s=18)
        average_x, average_y = (
            measures.average.values.get(second),
            measures.average.values.get(main),
        )
        if average_x is None or average_y is None:
            continue
        ax.errorbar(
            [average_x.estimate],
            [average_y.estimate],
            xerr=[[average_x.estimate - average_x.low], [average_x.high - average_x.estimate]],
            yerr=[[average_y.estimate - average_y.low], [average_y.high - average_y.estimate]],
            fmt="o",
            markersize=8,
            color=points.get_facecolor()[0][:3],
            label=_label(measures.run.label),
        )
    ax.set_xlabel("ps rate (suggestions / episode)" if second == "ps_rate" else "ps %")
    ax.set_ylabel(main_label)
    ax.set_title("Scenarios (small) and average (large, 95 % intervals)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize="small")
    figure.subplots_adjust(left=0.1, right=0.97, bottom=0.11, top=0.93)
    return _png(figure)


@literal
def size_plot(all_measures: Sequence[RunMeasures]) -> bytes | None:
    """Proactiveness (average ps rate, or OEG ps %) and the main rate against parameter count,
    with Spearman's rho of each; None when fewer than two runs have a parameter count."""
    from matplotlib.ticker import FuncFormatter

    sized = [m for m in all_measures if m.run.params_b is not None]
    rhos = size_correlations(sized)
    if rhos is None:
        return None
    main, main_label, second = _key(sized)
    figure = _figure(9.5, 4.2)
    axes = figure.subplots(1, 2)
    for ax, key, label in ((axes[0], second, "ps rate"), (axes[1], main, main_label)):
        points = [
            (m.run.params_b, m.average.values[key].estimate, m.run.label)
            for m in sized
            if m.average.values.get(key) is not None
        ]
        xs = [float(p[0]) for p in points]  # type: ignore[arg-type]
        ys = [p[1] for p in points]
        rho = rhos.get(key)
        ax.scatter(xs, ys)
        # Labels alternate above and below their points (by size), so that runs of equal
        # rates side by side stay readable; the largest model's label goes to its left.
        ordered = sorted(points, key=lambda p: p[0])
        for rank, (x, y, name) in enumerate(ordered):
            last = rank == len(ordered) - 1 and rank > 0
            ax.annotate(
                _label(name),
                (x, y),
                fontsize="x-small",
                xytext=(-3 if last else 3, 3 if rank % 2 == 0 else -10),
                textcoords="offset points",
                ha="right" if last else "left",
            )
        ax.set_xscale("log")
        ax.margins(x=0.15, y=0.1)  # room for the labels of the outermost points
        for axis in (ax.xaxis,):
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.set_xlabel("parameters (billions, log scale)")
        ax.set_ylabel(label)
        shown = "n/a (needs 3 runs)" if rho is None else f"{rho:+.2f}"
        ax.set_title(f"{label} vs size: Spearman ρ = {shown}", fontsize="medium")
        ax.grid(alpha=0.3)
    unsized = [m.run.label for m in all_measures if m.run.params_b is None]
    if unsized:
        figure.text(
            0.01,
            0.01,
            _label("not shown (no parameter count): " + ", ".join(unsized)),
            fontsize="x-small",
            color="0.35",
        )
    figure.subplots_adjust(left=0.07, right=0.98, bottom=0.17, top=0.9, wspace=0.25)
    return _png(figure)
