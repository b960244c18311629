"""A report laid out as the paper: the runs of a suite (`proactivebench paper`), each beside
the table or figure of the paper it reproduces.

`write_report(..., layout=Layout(...))` reads the runs as for any report; the layout then says
three things the runs alone cannot: which of the paper's tables each run stands beside (a
suite's experiment names it, where its settings may not tell: an `--all-samples` run is not
recorded as one, and on generated data no run is filtered), the tables to show first (the
experiments, with links to their own reports), a note for every table (every run partial:
`--limit`) and warnings of what the report leaves out. The tables come in the paper's order:
its tables and figures with the published rows first, then the action distributions (Fig. 4)
and their changes from the plain run (Figs. 5, 7), then what the report shows of any runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.report.runs import Run
from proactivebench.report.tables import Table, to_csv

#: Where a table goes in a paper-shaped report, by the start of its key: the experiments, the
#: paper's tables and figures, the action distributions side by side and their changes, the
#: comparisons with the plain run, the runs side by side, each run's own tables.
ORDER = ("experiments", "paper-", "actions", "actions-vs", "vs-", "cross-", "run-", "actions-")


@dataclass(frozen=True)
class Layout:
    """How a suite's report is laid out (see the module's docstring)."""

    #: Run directory (resolved) -> the key of the paper's table or figure it stands beside.
    counterparts: Mapping[str, str] = field(default_factory=dict)
    #: Tables shown before all others (the experiments).
    preface: tuple[Table, ...] = ()
    #: A note every table carries.
    note: str | None = None
    #: Run directory (resolved) -> the `--limit` it was played with (suite.json), which
    #: makes it partial where its run.json records no selection (`report.comparable`).
    limits: Mapping[str, int] = field(default_factory=dict)
    #: What the report must say first, of what it leaves out (a suite's experiments that
    #: suite.json lists without a run, run folders it does not list).
    warnings: tuple[str, ...] = ()
    #: Run directory (resolved) -> its experiment's id in the suite (`mcqa`, `hint`...): the
    #: report sets each experiment against the one it changes (`report.findings`).
    experiments: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def of(
        counterparts: Mapping[str | Path, str],
        limits: Mapping[str | Path, int] | None = None,
        experiments: Mapping[str | Path, str] | None = None,
        **rest: Any,
    ) -> Layout:
        """A layout whose `counterparts`, `limits` and `experiments` are keyed by any path of
        each run directory."""
        placed = {str(Path(p).resolve()): key for p, key in counterparts.items()}
        limited = {str(Path(p).resolve()): n for p, n in (limits or {}).items()}
        ids = {str(Path(p).resolve()): ident for p, ident in (experiments or {}).items()}
        return Layout(placed, limits=limited, experiments=ids, **rest)

    def stamp(self) -> dict[str, Any]:
        """What the report's up-to-date check compares: another layout is another report."""
        stamp = {
            "counterparts": dict(sorted(self.counterparts.items())),
            "preface": [to_csv(t) for t in self.preface],
            "note": self.note,
        }
        if self.limits:
            stamp["limits"] = dict(sorted(self.limits.items()))
        if self.warnings:
            stamp["warnings"] = list(self.warnings)
        if self.experiments:
            stamp["experiments"] = dict(sorted(self.experiments.items()))
        return stamp

    def by_experiment(self, runs: Sequence[Run]) -> dict[str, Run]:
        """The runs by their experiment's id (those the layout names)."""
        named = ((self.experiments.get(str(r.run_dir.resolve())), r) for r in runs)
        return {ident: run for ident, run in named if ident is not None}

    def place(self, runs: Sequence[Run]) -> None:
        """Tell each run the paper's table its caller named for it, and its `--limit`."""
        for run in runs:
            run.counterpart = self.counterparts.get(str(run.run_dir.resolve()))
            run.limit = self.limits.get(str(run.run_dir.resolve()))

    def arrange(self, tables: Sequence[Table]) -> list[Table]:
        """The preface, then `tables` in the paper's order (`ORDER`; the order they came in
        within each place), each carrying the note."""
        # sorted() is stable: within a place, e.g. the paper's tables, their order is kept.
        ranked = sorted([*self.preface, *tables], key=lambda t: _place(t.key))
        if self.note is None:
            return ranked
        return [dataclasses.replace(t, notes=[*t.notes, self.note]) for t in ranked]

    def headline_keys(self, tables: Sequence[Table]) -> set[str]:
        """What a terminal shows of the report: the experiments and the paper's tables."""
        return {t.key for t in tables if _place(t.key) <= 1}


def _place(key: str) -> int:
    """A table's place in `ORDER`: by its whole key (the experiments, the action shares side
    by side and their changes), else by the start of its key; unknown tables come last."""
    if key in ("experiments", "actions", "actions-vs"):
        return ORDER.index(key)
    for start in ("paper-", "vs-", "cross-", "run-", "actions-"):
        if key.startswith(start):
            return ORDER.index(start)
    return len(ORDER)
