"""History and ICL runs beside the paper's Figs. 8 and 9 (`report --paper`).

The paper gives no per-model table of these experiments, only averages over ten models
(`paper_results.FIGURE_SUBSETS`): what Fig. 8 (conversation history) and Fig. 9 (1 or 3 in-context
demonstrations, ROD and MVP-N) print, and the zero-shot mean of the same ten models from
Table 1. A run is shown beside them, with its interval; there is no rank (the rows are means
of models, not models).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from proactivebench.benchmark.metrics import INTERVAL_NAME, Metric, metric, number_text
from proactivebench.benchmark.paper_results import (
    PAPER_SOURCE,
    figure_mean,
    figure_models,
    paper_table,
)
from proactivebench.report.comparable import average_apart, not_comparable, own_filter
from proactivebench.report.measures import RunMeasures
from proactivebench.report.published import (
    PAPER_AVERAGE,
    PAPER_METRICS,
    PUBLISHED,
    YOURS,
    figure_name,
    unfiltered,
    value_of,
)
from proactivebench.report.runs import Run, labelled
from proactivebench.report.tables import MISSING, Cell, Table

#: The settings a figure's runs may have besides the one that defines them: the paper resized
#: every history run to a short edge of 224 px (App. E) and reduced Phi-4's demonstrations.
_ALLOWED = {"history": {"resize_short_edge"}, "icl": {"icl_reduced"}}
#: What a figure's runs must have: Fig. 8's were all played at a 224 px short edge (App. E);
#: a history run at full size, or another size, is another measurement, placed nowhere.
_REQUIRED = {"history": {"resize_short_edge": 224}}
#: The figure of each setting, and which of its printed rows a run's value of it reads.
_FIGURES = {"history": "fig8_history", "icl": "fig9_icl"}
#: Fig. 9's panels by number of demonstrations.
_ICL_PANELS = {1: "(a)", 3: "(b)"}


def figure_counterpart(run: Run) -> tuple[str, str] | None:
    """(figure, the prefix of its printed rows for this run) for a plain MCQA run with
    `--history` (Fig. 8) or `--icl 1`/`--icl 3` (Fig. 9); None otherwise."""
    if run.counterpart is not None and run.counterpart not in _FIGURES.values():
        return None  # the caller placed it elsewhere (a suite's experiment)
    if run.oeg:
        return None
    return figure_of(run.settings, all_samples=unfiltered(run))


def figure_of(settings: Mapping[str, Any], *, all_samples: bool) -> tuple[str, str] | None:
    """`figure_counterpart` of a run whose run.json records `settings`: the one rule, for a
    run and for a suite's experiment before it is played."""
    if str(settings.get("mode") or "mcqa") != "mcqa":
        return None
    if own_filter(settings) or all_samples:
        return None
    marks = [k for k in labelled(settings) if k != "mode"]
    for setting, figure in _FIGURES.items():
        if setting in marks and set(marks) - {setting} <= _ALLOWED[setting]:
            required = _REQUIRED.get(setting, {})
            if any(settings.get(name) != value for name, value in required.items()):
                return None
            if setting == "icl":
                panel = _ICL_PANELS.get(int(settings.get("icl") or 0))
                return (figure, panel) if panel is not None else None
            return figure, ""
    return None


@dataclass
class FigureComparison:
    """One figure and metric with the runs beside its printed averages."""

    key: str
    figure: str
    metric: Metric
    paper_metric: str
    columns: list[str]
    #: The printed rows: (the figure's label of the row, {column: value or None}).
    printed: list[tuple[str, dict[str, float | None]]]
    #: The zero-shot mean (Table 1) over the figure's models, every column.
    models: list[str]
    zero_shot: dict[str, float]
    runs: list[tuple[Run, dict[str, dict[str, float | None]]]]

    @property
    def source(self) -> str:
        return f"published: {PAPER_SOURCE}, {figure_name(self.figure)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "metric": self.metric.key,
            "paper_metric": self.paper_metric,
            "source": self.source,
            "caption": paper_table(self.figure)["caption"],
            "columns": self.columns,
            "published": [{"config": c, "cells": cells} for c, cells in self.printed],
            "zero_shot_mean": {
                "table": "table1_mcqa",
                "models": self.models,
                "cells": self.zero_shot,
            },
            "runs": [
                {
                    "label": run.label,
                    "model": run.model,
                    "not_comparable": not_comparable(run),
                    "cells": c,
                }
                for run, c in self.runs
            ],
        }

    def table(self) -> Table:
        percent = self.metric.percent
        name = figure_name(self.figure)
        columns = ["row", "source", *self.columns[:-1], "average"]
        if self.columns[-1] != PAPER_AVERAGE:  # Fig. 9: ROD and MVP-N only, no average
            columns = ["row", "source", *self.columns]
        rows, kinds = [], []
        for config, cells in self.printed:
            row = [Cell(config), Cell(f"published, {name}", short=PUBLISHED)]
            row += [_printed_cell(cells.get(c)) for c in self.columns]
            rows.append(row)
            kinds.append(PUBLISHED)
        mean = [
            Cell(f"zero-shot: mean of {len(self.models)} models"),
            Cell("mean of published, Table 1", short="mean, Table 1"),
        ]
        rows.append(
            mean + [Cell(f"{self.zero_shot[c]:.2f}", self.zero_shot[c]) for c in self.columns]
        )
        kinds.append(PUBLISHED)
        for run, cells in self.runs:
            row = [Cell(run.label), Cell("yours")]
            # An average of other scenarios than the figure's stands beside it marked, as in
            # the tables (`comparable.average_apart`), not as a plain number.
            apart = self.columns[-1] == PAPER_AVERAGE and average_apart(run, self.columns[:-1])
            for column in self.columns:
                cell = cells[column]
                if cell.get("value") is None:
                    row.append(Cell(MISSING))
                    continue
                value, low, high = cell["value"], cell["low"], cell["high"]
                text = number_text(value, percent)
                if low is not None and high is not None and low != high:
                    text += f" [{number_text(low, percent)}, {number_text(high, percent)}]"
                short = None
                if apart and column == PAPER_AVERAGE:  # the page: the notes say it
                    short, text = text, text + " not compared"
                row.append(Cell(text, value, low, high, short=short))
            rows.append(row)
            kinds.append(YOURS)
        notes = [
            f"published: {PAPER_SOURCE}, {paper_table(self.figure)['caption']}",
            f"The paper prints only averages over {len(self.models)} models "
            f"({', '.join(self.models)}); '—' where it prints no value for a column. The "
            "zero-shot mean is Table 1's over the same models. Rows marked 'yours' are this "
            f"report's runs, with their {INTERVAL_NAME}.",
        ]
        for run, _ in self.runs:
            caveats = not_comparable(run)
            if self.columns[-1] == PAPER_AVERAGE:  # an average of the figure's scenarios
                apart = average_apart(run, self.columns[:-1])
                caveats += [apart] if apart is not None else []
            if caveats:
                notes.append(
                    f"{run.label}: not comparable with the published averages "
                    f"({'; '.join(caveats)})"
                )
        title = f"{self.metric.heading} beside the paper's {name} ({self.source})"
        return Table(
            self.key,
            title,
            columns,
            rows,
            notes,
            average_last=False,
            row_kinds=kinds,
            text_columns=(1,),
        )


def _printed_cell(value: float | None) -> Cell:
    return Cell(MISSING) if value is None else Cell(f"{value:.1f}", value)


def compare_with_figures(all_measures: Sequence[RunMeasures]) -> list[FigureComparison]:
    """Fig. 8 and Fig. 9, each metric, with the runs that have them as counterpart."""
    grouped: dict[tuple[str, str], list[RunMeasures]] = {}
    for measures in all_measures:
        found = figure_counterpart(measures.run)
        if found is not None:
            grouped.setdefault(found, []).append(measures)
    comparisons = []
    for (figure, panel), group in sorted(grouped.items()):
        table = paper_table(figure)
        columns = list(table["columns"])
        for ours in ("accuracy", "ps_rate"):
            theirs = PAPER_METRICS[ours]
            printed = [
                (str(row["config"]), {c: row["cells"].get(c, {}).get(theirs) for c in columns})
                for row in table["rows"]
                if str(row["config"]).startswith(panel)
                and any(v.get(theirs) is not None for v in row["cells"].values())
            ]
            models = figure_models(figure, "table1_mcqa")
            zero_shot = {c: figure_mean(figure, "table1_mcqa", c, theirs) for c in columns}
            runs = [(m.run, _cells(m, columns, ours)) for m in group]
            key = f"paper-{figure.split('_', 1)[0]}{panel.strip('()')}-{theirs}"
            comparisons.append(
                FigureComparison(
                    key, figure, metric(ours), theirs, columns, printed, models, zero_shot, runs
                )
            )
    return comparisons


def _cells(measures: RunMeasures, columns: list[str], key: str) -> dict[str, dict[str, Any]]:
    cells: dict[str, dict[str, Any]] = {}
    for column in columns:
        value = value_of(measures, column, key)
        cells[column] = (
            {"value": None}
            if value is None
            else {"value": value.estimate, "low": value.low, "high": value.high}
        )
    return cells
