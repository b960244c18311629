"""Reports of runs: tables with intervals, cross-run comparisons, plots, an HTML episode
viewer (`build.write_report`) and terminal transcripts (`transcript`).

`write_report` and its kin are loaded on first use: importing one part of the package (a run's
measures for `eval --no-report`'s table, say) does not import the report's builder, plots and
page.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proactivebench.report.build import REPORT_DIR, ReportOutcome, write_report

__all__ = ["REPORT_DIR", "ReportOutcome", "write_report"]


def __getattr__(name: str) -> Any:
    """`REPORT_DIR`, `ReportOutcome` and `write_report`, from `report.build` when first asked."""
    if name in __all__:
        return getattr(importlib.import_module("proactivebench.report.build"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
