"""`proactivebench import-inspect LOG --out RUN_DIR`: an Inspect AI log as one of our runs."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("import-inspect")
@click.argument("log", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path))
def import_inspect_command(log: Path, out_dir: Path) -> None:
    """Turn an Inspect log of proactivebench/proactivebench into a run directory."""
    from proactivebench.adapters.inspect_log import import_inspect_log
    from proactivebench.cli import out, summary_table

    summary = import_inspect_log(log, out_dir)
    out.print(summary_table(summary))
    out.print(f"results: {out_dir / 'results.jsonl'}")
