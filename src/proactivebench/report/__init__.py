"""Reports of runs: tables with intervals, cross-run comparisons, plots, an HTML episode
viewer (`build.write_report`) and terminal transcripts (`transcript`)."""

from proactivebench.report.build import REPORT_DIR, ReportOutcome, write_report

__all__ = ["REPORT_DIR", "ReportOutcome", "write_report"]
