"""The paper's published rows beside a report's runs (`report --paper`).

Each run whose settings have a counterpart in the paper (plain MCQA: Table 1; `--hint`:
Table 7; `--reference`: Table 6; `--all-samples`: Table 4; OEG: Table 2, with `--hint`
Table 9; multi-turn OEG: Table 10) is placed among the paper's rows of that table, one table
per metric: every row sorted by its average (best first, by the metric's
`higher_is_better`), the run's rank per column among the published rows (none for the ps rate,
which has no better direction: `UNRANKED_RATE_NOTE`), and, when the run's
model is one of the paper's (`paper_results.recognise_model`, or `--paper-model`), whether the
paper's value lies inside the run's 95 % interval.

The published numbers come from `paper_results.paper_table` as transcribed; nothing is retyped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from proactivebench.benchmark.metrics import INTERVAL_NAME, Metric, metric, number_text
from proactivebench.benchmark.paper_results import (
    FIGURE_AVERAGES,
    PAPER_SOURCE,
    PaperModel,
    figure_mean,
    figure_models,
    paper_model_named,
    paper_table,
    recognise_model,
)
from proactivebench.benchmark.protocol import official_filter_ids
from proactivebench.benchmark.registry import by_stem
from proactivebench.core.stats import Interval
from proactivebench.report.comparable import (
    average_apart,
    not_comparable,
    said_table,
    settings_table,
    synthetic,
)
from proactivebench.report.measures import RunMeasures
from proactivebench.report.runs import Run
from proactivebench.report.tables import MISSING, Cell, Table

#: Our metric key -> the paper's column metric (Table 1 "acc", Table 2 "cc"...).
PAPER_METRICS = {"accuracy": "acc", "ps_rate": "psr", "aggregate": "agg", "cp": "cc", "ps": "ps"}
#: The paper's average column.
PAPER_AVERAGE = "avg"
#: Half the paper's last printed digit: a published value within this of our interval counts
#: as inside it (the paper rounds to one decimal).
ROUNDING = 0.05
#: A metric a counterpart table does not print, printed for the same models and setting by
#: another table, which is then shown for that metric alone: Table 2 (plain OEG, main text)
#: prints cc and ps; Table 8, its twin in the appendix (the same cc and ps), adds the
#: aggregate, which a plain OEG run would otherwise stand beside no published value for.
ALSO_PRINTED: dict[str, tuple[str, tuple[str, ...]]] = {"table2_oeg": ("table8_oeg_agg", ("agg",))}


def counterpart(run: Run) -> str | None:
    """The paper's table of runs like `run` (`comparable.COUNTERPARTS`): the one its caller
    named (a suite's experiment) unless its settings contradict it, else its settings'; None
    for settings the paper tabulates nowhere (history, ICL, CoT, a filter of one's own, two
    settings at once) and for a named table the settings contradict (`comparable.said_table`:
    never placed by it)."""
    if run.counterpart is not None:
        return said_table(run)
    return settings_table(run, unfiltered(run))


def unfiltered(run: Run) -> bool:
    """Whether `run` played samples the official test filter drops: an `--all-samples` run
    (run.json does not record it: which samples are played is a selection, not the run's
    identity, so it is read from the sample ids). A run of filtered samples only (a small
    `--limit` of an unfiltered run among them) counts as filtered, and so does a run of
    generated data, which no official list filters."""
    if run.settings.get("all_samples"):
        return True
    if synthetic(run):
        return False  # generated data: the official filter applies to none of it
    stems = {short: stem for stem, short in by_stem().items()}
    for scenario, lines in run.by_scenario.items():
        kept = official_filter_ids(stems[scenario]) if scenario in stems else frozenset()
        if kept and any(line.get("sample_id") not in kept for line in lines):
            return True
    return False


def table_number(key: str) -> str:
    """`table1_mcqa` -> "Table 1" (what a caption names)."""
    return "Table " + key.split("_", 1)[0].removeprefix("table")


@dataclass
class Placed:
    """One run's row among the paper's, for one metric."""

    run: Run
    paper_model: PaperModel | None
    #: Per paper column: our value (with interval), our rank among the published rows and
    #: how many were ranked, the paper's value for the run's model and whether it lies inside
    #: our interval.
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The scenarios the run's average covers (the paper's: all seven).
    covers: list[str] = field(default_factory=list)
    #: What makes the run not comparable with the published rows (`comparable`): then it
    #: has no rank and no inside/outside verdict.
    caveats: list[str] = field(default_factory=list)
    #: Why its average is not the table's (`comparable.average_apart`: other scenarios), or
    #: None: then its average alone has no rank and no verdict.
    average_apart: str | None = None

    @property
    def average_ranked(self) -> bool:
        """Whether the run's average is ranked among the published averages."""
        return not self.caveats and self.average_apart is None


@dataclass
class PaperComparison:
    """One paper table and metric with the runs placed in it."""

    key: str
    paper_key: str
    metric: Metric
    paper_metric: str
    columns: list[str]
    caption: str
    #: The paper's rows as transcribed: (model, {column: value}).
    published: list[tuple[str, dict[str, float | None]]]
    placed: list[Placed]
    #: The mean of the published rows a figure prints (`paper_results.FIGURE_AVERAGES`): the
    #: figure's key, its models and the mean per column; None where no figure averages this
    #: table.
    figure: tuple[str, list[str], dict[str, float]] | None = None

    @property
    def source(self) -> str:
        return f"published: {PAPER_SOURCE}, {table_number(self.paper_key)}"

    @property
    def short_source(self) -> str:
        """The source column's text (the title and the notes name the authors): narrow, so
        that a 1280 px window shows the scenarios beside it."""
        return f"published, {table_number(self.paper_key)}"

    def table(self) -> Table:
        return paper_rows_table(self)

    def as_dict(self) -> dict[str, Any]:
        """report.json's entry: the published rows exactly as transcribed and each run's."""
        return {
            "paper_table": self.paper_key,
            "metric": self.metric.key,
            "paper_metric": self.paper_metric,
            "source": self.source,
            "caption": self.caption,
            "columns": self.columns,
            "published": [{"model": m, "cells": cells} for m, cells in self.published],
            "figure_mean": None
            if self.figure is None
            else {"figure": self.figure[0], "models": self.figure[1], "cells": self.figure[2]},
            "runs": [
                {
                    "label": p.run.label,
                    "model": p.run.model,
                    "paper_model": p.paper_model.name if p.paper_model else None,
                    "average_covers": p.covers,
                    "not_comparable": p.caveats,
                    "average_not_comparable": p.average_apart,
                    "cells": p.cells,
                }
                for p in self.placed
            ],
        }


#: Under a table of a rate with no better direction (the ps rate): why its runs have no rank.
UNRANKED_RATE_NOTE = (
    "{heading} has no rank: more is not better in itself (a model that asks whenever it can, "
    "blindly, has the most; one that never asks, 0). Read it between baseline:oracle's (the "
    "fewest suggestions that reach the answer) and baseline:proactive's (every suggestion it "
    "can), beside accuracy, which is ranked."
)


def ranks(metric: Metric) -> bool:
    """Whether the runs are ranked by `metric`: only a rate with a better direction."""
    return metric.higher_is_better is not None


def _better(metric: Metric, a: float, b: float) -> bool:
    """Whether `a` ranks above `b` (a metric with no direction ranks by higher values)."""
    return a < b if metric.higher_is_better is False else a > b


def rank(metric: Metric, value: float, published: Sequence[float]) -> int:
    """1 + the published values strictly better than `value` (ties share the better rank)."""
    return 1 + sum(1 for p in published if _better(metric, p, value))


def inside(paper: float, interval: Interval) -> bool:
    """Whether the paper's printed value lies in our interval, allowing its rounding."""
    return interval.low - ROUNDING <= paper <= interval.high + ROUNDING


def value_of(measures: RunMeasures, column: str, key: str) -> Interval | None:
    """A run's value (with interval) of the metric `key` in a paper column (`avg`: its
    average)."""
    found = measures.average if column == PAPER_AVERAGE else measures.scenarios.get(column)
    return found.values.get(key) if found is not None else None


def _model_of(run: Run, named: PaperModel | None) -> PaperModel | None:
    return named if named is not None else recognise_model(run.model)


def compare_with_paper(
    all_measures: Sequence[RunMeasures], paper_model: str | None = None
) -> list[PaperComparison]:
    """Every paper table (and metric) that has a counterpart among the runs, in the paper's
    order, with those runs placed; `paper_model` (`--paper-model`) names the runs' model for
    every run (an unknown name is an error listing the paper's)."""
    named = paper_model_named(paper_model) if paper_model is not None else None
    by_table: dict[str, list[RunMeasures]] = {}
    for measures in all_measures:
        key = counterpart(measures.run)
        if key is not None:
            by_table.setdefault(key, []).append(measures)
    shown: dict[str, tuple[str, ...] | None] = dict.fromkeys(by_table)  # None: every metric
    for key, (twin, metrics) in ALSO_PRINTED.items():
        if key in by_table and twin not in by_table:
            by_table[twin], shown[twin] = by_table[key], metrics
    found = []
    for paper_key in sorted(by_table, key=lambda k: int(table_number(k).split()[-1])):
        table = paper_table(paper_key)
        ours_of = {theirs: ours for ours, theirs in PAPER_METRICS.items()}
        only = shown[paper_key]
        for theirs in table["metrics"]:
            if theirs in ours_of and (only is None or theirs in only):
                found.append(
                    _compare(paper_key, table, metric(ours_of[theirs]), theirs, by_table, named)
                )
    return found


def _compare(
    paper_key: str,
    table: dict[str, Any],
    ours: Metric,
    theirs: str,
    by_table: dict[str, list[RunMeasures]],
    named: PaperModel | None,
) -> PaperComparison:
    columns = list(table["columns"])
    published = [
        (row["model"], {c: row["cells"].get(c, {}).get(theirs) for c in columns})
        for row in table["rows"]
    ]
    placed = []
    for measures in by_table[paper_key]:
        model = _model_of(measures.run, named)
        own = dict(published).get(model.name) if model is not None else None
        row = Placed(measures.run, model if own is not None else None)
        row.covers = list(measures.average.covers)
        row.caveats = not_comparable(measures.run)
        row.average_apart = average_apart(measures.run, columns[:-1])
        for column in columns:
            scored = [v[column] for _, v in published if v[column] is not None]
            printed = own[column] if own is not None else None
            value = value_of(measures, column, ours.key)
            ranked = row.average_ranked if column == PAPER_AVERAGE else not row.caveats
            row.cells[column] = _cell(ours, value, scored, printed, ranked=ranked)
        placed.append(row)
    figure = FIGURE_AVERAGES.get((paper_key, theirs))
    means = None
    if figure is not None:
        models = figure_models(figure, paper_key)
        means = (figure, models, {c: figure_mean(figure, paper_key, c, theirs) for c in columns})
    return PaperComparison(
        f"paper-{paper_key.split('_', 1)[0]}-{theirs}",
        paper_key,
        ours,
        theirs,
        columns,
        table["caption"],
        published,
        placed,
        means,
    )


def _cell(
    ours: Metric,
    value: Interval | None,
    scored: list[float],
    theirs: float | None,
    ranked: bool,
) -> dict[str, Any]:
    """A run's cell in a paper column: its value and interval, the paper's value for its model,
    and, when the run is comparable (`ranked`), its rank among the published values and
    whether the paper's value lies inside its interval."""
    if value is None:
        return {"value": None}
    cell: dict[str, Any] = {"value": value.estimate, "low": value.low, "high": value.high}
    if ranked and ranks(ours):
        cell.update(rank=rank(ours, value.estimate, scored), of=len(scored) + 1)
    if theirs is not None:
        cell["paper"] = theirs
        if ranked:
            cell["inside"] = inside(theirs, value)
    return cell


def published_averages(
    all_measures: Sequence[RunMeasures], x_key: str, y_key: str
) -> list[tuple[str, list[tuple[float, float, str]]]]:
    """Per paper table that is a counterpart of a run (in the runs' order) and prints both
    metrics: its name and every published model's (x, y) averages with the model's name, for
    a scatter of ours that names them."""
    keys: list[str] = []
    for measures in all_measures:
        key = counterpart(measures.run)
        if key is not None and key not in keys:
            keys.append(key)
    found = []
    x, y = PAPER_METRICS.get(x_key), PAPER_METRICS.get(y_key)
    for key in keys:
        table = paper_table(key)
        if x not in table["metrics"] or y not in table["metrics"]:
            continue
        averages = [(row["cells"][PAPER_AVERAGE], row["model"]) for row in table["rows"]]
        points = [
            (a[x], a[y], model)
            for a, model in averages
            if a.get(x) is not None and a.get(y) is not None
        ]
        found.append((f"published, {table_number(key)}", points))
    return found


# ----- the table ------------------------------------------------------------------------------

#: Row kinds (`Table.row_kinds`): the HTML's classes, set apart by report.css.
PUBLISHED, MEAN, YOURS, RANK, CHECK = "published", "published-mean", "yours", "rank", "check"


def figure_name(key: str) -> str:
    """`fig3_reference_vs_benchmark` -> "Fig. 3"."""
    return "Fig. " + key.split("_", 1)[0].removeprefix("fig")


def _sort_value(metric: Metric, average: float | None) -> float:
    if average is None:
        return float("inf")
    return average if metric.higher_is_better is False else -average


def paper_rows_table(comparison: PaperComparison) -> Table:
    """The paper's rows and the runs', sorted by average (best first); under each run its rank
    per column and, for a model of the paper, the check of the paper's value against ours."""
    metric = comparison.metric
    columns = ["model", "source", *comparison.columns[:-1], "average"]
    entries: list[tuple[float, int, list[list[Cell]], list[str]]] = []
    for index, (model, values) in enumerate(comparison.published):
        cells = [Cell(model), Cell(comparison.short_source, short=PUBLISHED)]
        cells += [_paper_cell(values[c]) for c in comparison.columns]
        average = values[PAPER_AVERAGE]
        entries.append((_sort_value(metric, average), index, [cells], [PUBLISHED]))
    if comparison.figure is not None:
        figure, models, means = comparison.figure
        cells = [
            Cell(f"mean of {len(models)} models"),
            Cell(f"mean of published, {figure_name(figure)}", short=f"mean, {figure_name(figure)}"),
        ]
        cells += [_paper_cell(means[c], 2) for c in comparison.columns]
        entries.append((_sort_value(metric, means[PAPER_AVERAGE]), len(entries), [cells], [MEAN]))
    for index, placed in enumerate(comparison.placed):
        rows, kinds = _run_rows(placed, comparison)
        average = placed.cells[PAPER_AVERAGE].get("value")
        entries.append((_sort_value(metric, average), -1 - index, rows, kinds))
    unranked = {-1 - i for i, placed in enumerate(comparison.placed) if not placed.average_ranked}
    # Runs before published rows of the same average: the reader's row is not buried. A run
    # whose average is not comparable is not placed among the published rows (sorted by
    # average): after them all.
    entries.sort(key=lambda e: (e[1] in unranked, e[0], e[1] >= 0, e[1] if e[1] >= 0 else -e[1]))
    rows = [row for entry in entries for row in entry[2]]
    kinds = [kind for entry in entries for kind in entry[3]]
    if not ranks(metric):
        order, ranked = "highest first, not a ranking", ""
    else:
        direction = "lower" if metric.higher_is_better is False else "higher"
        order = f"{direction} is better"
        ranked = (
            "'rank' is each run's place per column among the published rows (1 = best, ties "
            "share the better place); "
        )
    notes = [
        f"published: {PAPER_SOURCE}, {comparison.caption}",  # the caption names its table
        f"Rows sorted by average ({order}); rows marked 'yours' are this report's runs, "
        f"with their {INTERVAL_NAME}; {ranked}'vs published' gives "
        f"the paper's value for the run's model and whether it lies inside the interval "
        f"(allowing the paper's rounding of ±{ROUNDING}).",
        "The paper's average is the unweighted mean of its seven scenarios; the runs' "
        "average likewise, over the scenarios they scored.",
    ]
    if not ranks(metric):
        notes.insert(1, UNRANKED_RATE_NOTE.format(heading=metric.heading))
    if comparison.figure is not None:
        figure, models, _ = comparison.figure
        notes.append(
            f"'mean of {len(models)} models': the published rows' column means over the models "
            f"{figure_name(figure)} averages ({', '.join(models)}), which it prints rounded."
        )
    for placed in comparison.placed:
        if placed.caveats:
            notes.append(unranked_note(placed.run.label, placed.caveats))
        if placed.average_apart is not None:
            notes.append(average_note(placed))
    title = f"{metric.heading} among the paper's models ({comparison.source})"
    return Table(
        comparison.key,
        title,
        columns,
        rows,
        notes,
        average_last=False,
        row_kinds=kinds,
        text_columns=(1,),
    )


def unranked_note(label: str, caveats: list[str]) -> str:
    """What a table says of a run shown beside the published rows but not comparable."""
    return (
        f"{label}: not comparable with the published rows ({'; '.join(caveats)}): shown "
        "last, without a rank or an inside/outside verdict"
    )


#: What the report says, in one wording wherever it says it (the page's head, the table's
#: notes), of a run whose average covers other scenarios than the paper's.
AVERAGE_APART = (
    "its average is not ranked nor checked against the paper's; its scenario columns are "
    "ranked and checked"
)


def average_note(placed: Placed) -> str:
    """What a table says of a run whose average is of other scenarios than the paper's."""
    label, apart = placed.run.label, placed.average_apart
    if placed.caveats:
        return f"{label}: {apart}"
    return f"{label}: {apart}: {AVERAGE_APART}"


def _paper_cell(value: float | None, decimals: int = 1) -> Cell:
    """A printed value as printed (one decimal); a mean of them to `decimals`."""
    return Cell(MISSING) if value is None else Cell(f"{value:.{decimals}f}", value)


def _run_rows(placed: Placed, comparison: PaperComparison) -> tuple[list[list[Cell]], list[str]]:
    metric, columns = comparison.metric, comparison.columns
    label = placed.run.label
    ranked = not placed.caveats
    # HTML shows the rows under the run's by what they are (`Cell.short`): its label again,
    # and the source column's long texts, are in the files.
    paper_name = placed.paper_model.name if placed.paper_model else ""
    mine = [Cell(label), Cell("yours")]
    rank_row = [Cell(f"{label}: rank", short="↳ rank"), Cell("yours: rank", short="rank")]
    if not ranked:
        rank_row = [
            Cell(f"{label}: not ranked", short="↳ not ranked"),
            Cell("yours: not comparable", short="not comparable"),
        ]
    checks = [Cell(f"{label} vs {paper_name}", short=f"↳ {paper_name} as published")]
    checks.append(Cell(f"yours vs {comparison.short_source}", short="vs published"))
    for column in columns:
        cell = placed.cells[column]
        if cell.get("value") is None:
            mine.append(Cell(MISSING))
            rank_row.append(Cell(MISSING))
            checks.append(Cell(MISSING))
            continue
        value, low, high = cell["value"], cell["low"], cell["high"]
        text = number_text(value, metric.percent)
        if low != high:
            text += f" [{number_text(low, metric.percent)}, {number_text(high, metric.percent)}]"
        mine.append(Cell(text, value, low, high))
        # Each cell says whether it is ranked: a run's average may not be when its columns are.
        rank_row.append(
            Cell(f"{cell['rank']}/{cell['of']}", cell["rank"]) if "rank" in cell else Cell(MISSING)
        )
        if "paper" in cell:
            verdict = cell.get("inside")
            mark = "not compared" if verdict is None else "inside" if verdict else "outside"
            # Not compared (the run is not comparable, or its average covers other
            # scenarios): the page shows the paper's value alone, its notes say why.
            short = f"{cell['paper']:.1f}" if verdict is None else None
            checks.append(Cell(f"{cell['paper']:.1f} {mark}", cell["paper"], short=short))
        else:
            checks.append(Cell(MISSING))
    rows, kinds = [mine, rank_row], [YOURS, RANK]
    if not ranks(metric):  # no rank to give (`UNRANKED_RATE_NOTE`)
        rows, kinds = [mine], [YOURS]
    if placed.paper_model is not None:
        rows.append(checks)
        kinds.append(CHECK)
    return rows, kinds
