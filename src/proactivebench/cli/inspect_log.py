"""`proactivebench import-inspect LOG --out RUN_DIR`: an Inspect AI log as one of our runs.

Reading the log needs the [inspect] extra (Inspect AI), imported only when the command runs;
the imported run is then read by `report` and `show` like any other.
"""

from __future__ import annotations

from pathlib import Path

import click

from proactivebench.cli.output import out, summary_table


@click.command("import-inspect")
@click.argument("log", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="New run directory to write the log's episodes to (results.jsonl, run.json), for "
    "report and show.",
)
def import_inspect_command(log: Path, out_dir: Path) -> None:
    """Turn an Inspect log of proactivebench/proactivebench into a run directory."""
    from proactivebench.adapters.inspect_log import import_inspect_log

    summary = import_inspect_log(log, out_dir)
    out.print(summary_table(summary))
    out.print(f"results: {out_dir / 'results.jsonl'}")
