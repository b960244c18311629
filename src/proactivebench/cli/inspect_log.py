"""`proactivebench import-inspect LOG --out RUN_DIR`: an Inspect AI log as one of our runs.

Reading the log needs the [inspect] extra (Inspect AI), imported only when the command runs;
the imported run is then read by `report` and `show` like any other.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from proactivebench.cli.options import imported_run_option
from proactivebench.cli.output import (
    EXIT_EPISODE_ERRORS,
    console,
    print_failures,
    print_warnings,
    printable,
)
from proactivebench.cli.run import tell_table

if TYPE_CHECKING:
    from proactivebench.adapters.inspect_log import InspectImport

#: How many missing sample ids are named.
SHOWN_MISSING = 5


@click.command("import-inspect")
@click.argument("log", type=click.Path(path_type=Path))
@imported_run_option("the log's")
def import_inspect_command(log: Path, out_dir: Path) -> None:
    """Turn an Inspect log of proactivebench/proactivebench into a run directory.

    Exits 3 when samples ended in an error or the log lacks some of the task's samples (a run
    Inspect did not finish: inspect eval-retry LOG finishes it), 1 when it holds none."""
    from proactivebench.adapters.imported import left_out_text
    from proactivebench.adapters.inspect_log import import_inspect_log

    imported = import_inspect_log(log, out_dir)
    tell_table(imported.summary, out_dir)
    left_out = left_out_text(imported.left_out, str(log))
    print_warnings([left_out] if left_out else [])
    report_gaps(imported, log)


def report_gaps(imported: InspectImport, log: Path) -> None:
    """Say why the Inspect run did not finish, what ended in an error and what the log lacks;
    exit with `EXIT_EPISODE_ERRORS` when samples errored or are missing, as `eval` does."""
    if imported.ending:
        console.print(
            f"[yellow]warning:[/yellow] {escape(printable(imported.ending))}", highlight=False
        )
    if imported.errors:
        scored = sum(s.n for s in imported.summary.scenarios.values())
        print_failures(
            imported.errors,
            f"{imported.errors.total()} sample(s) ended in an error",
            f" in the Inspect run, {scored} scored (the errors are left out of the metrics)",
        )
    if imported.missing:
        shown = ", ".join(imported.missing[:SHOWN_MISSING])
        more = ", ..." if len(imported.missing) > SHOWN_MISSING else ""
        console.print(
            f"[yellow]{len(imported.missing)} of the task's {imported.expected} samples are not "
            f"in the log[/yellow] ({escape(shown)}{more})",
            highlight=False,
        )
    if not imported.complete:
        console.print(
            f"to finish the run: inspect eval-retry {escape(str(log))}, then import the new log",
            highlight=False,
        )
        sys.exit(EXIT_EPISODE_ERRORS)
