"""`proactivebench push`: runs, suites' outputs and reports to a Hugging Face dataset repo
(`proactivebench.jobs.publish`), with a dataset card; one line on what went where."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from proactivebench.cli.output import out, print_warnings


@click.command("push")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--repo",
    "repo_id",
    required=True,
    help="Dataset repo OWNER/NAME on the Hub (HF_ENDPOINT selects the Hub); created if missing.",
)
@click.option(
    "--private",
    is_flag=True,
    help="Create the repo private (an existing repo keeps its visibility).",
)
def push_command(paths: tuple[Path, ...], repo_id: str, private: bool) -> None:
    """Push run directories, a suite's output (paper/suite --out) or reports to a Hub dataset
    repo, with a dataset card; rerun to update it (runs/NAME/, reports/NAME/, README.md)."""
    from proactivebench.jobs.publish import push

    outcome = push(paths, repo_id, private=private)
    what = f"{len(outcome.runs)} run(s), {len(outcome.reports)} report(s)"
    out.print(
        f"pushed {what} to {escape(outcome.url)} (commit {escape(outcome.commit[:12])})",
        highlight=False,
    )
    print_warnings(outcome.notes)
