"""What writing a report gives back (`ReportOutcome`), apart from the builder.

Its own module, importing nothing of the report: the outcome of a report written by a worker
process (`report.worker`) is read back in `eval`'s process without importing the builder,
numpy or matplotlib there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proactivebench.report.measures import Intervals, RunMeasures
    from proactivebench.report.tables import Table


@dataclass
class ReportOutcome:
    """A report written (or found up to date): where, which files, and what to tell."""

    out_dir: Path
    files: list[Path] = field(default_factory=list)
    #: What is missing and why (no matplotlib, images not found...).
    notes: list[str] = field(default_factory=list)
    #: Per scenario, too many unreadable answers.
    warnings: list[str] = field(default_factory=list)
    measures: list[RunMeasures] = field(default_factory=list)
    #: The tables a terminal shows (`report` prints these, not the whole report.md): the
    #: cross-run tables of several runs, or the one run's table, and any `--vs` comparison.
    headline: list[Table] = field(default_factory=list)
    #: The first run's intervals (what a terminal table shows as ±).
    intervals: Intervals = field(default_factory=dict)
    #: The report was up to date and left as it was (`if_changed`): `files`, `notes`,
    #: `warnings` and `intervals` are those of when it was written; nothing was measured.
    unchanged: bool = False
    #: The run directories the report was built from, as the caller named them.
    runs: list[Path] = field(default_factory=list)
    #: The paper's findings its runs speak to, one sentence each (a suite's report:
    #: `report.findings`), as the report states them first.
    findings: list[str] = field(default_factory=list)

    @property
    def html(self) -> Path:
        return self.out_dir / "report.html"

    def __repr__(self) -> str:
        """One line, not the measures and tables (`print(write_report(...))` printed ~135k
        characters): where, from which runs, which files (those in sub-folders counted)."""
        names = [_relative(path, self.out_dir) for path in self.files]
        shown = sorted(name for name in names if "/" not in name)
        inside = len(names) - len(shown)
        if inside:
            shown.append(f"+{inside} in {' '.join(_folders(names))}")
        runs = [str(run) for run in self.runs]
        return (
            f"ReportOutcome(out_dir={str(self.out_dir)!r}, runs={runs!r}, files={shown!r}, "
            f"notes={len(self.notes)}, warnings={len(self.warnings)}, "
            f"unchanged={self.unchanged})"
        )


def _relative(path: Path, out: Path) -> str:
    """`path` inside `out`, as the report names it (`tables/summary.csv`)."""
    try:
        return Path(path).relative_to(out).as_posix()
    except ValueError:
        return str(path)


def _folders(names: list[str]) -> list[str]:
    """The report's sub-folders that `names` lie in (`plots/`, `tables/`)."""
    return sorted({name.split("/", 1)[0] + "/" for name in names if "/" in name})
