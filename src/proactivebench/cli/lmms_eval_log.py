"""`proactivebench import-lmms-eval SAMPLES... --out RUN_DIR`: lmms-eval's samples logs of the
proactivebench task as one of our runs (read by `report` and `show` like any other)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from proactivebench.cli.options import imported_run_option
from proactivebench.cli.output import EXIT_EPISODE_ERRORS, print_warnings
from proactivebench.cli.run import tell_table


@click.command("import-lmms-eval")
@click.argument("samples", nargs=-1, required=True, type=click.Path(path_type=Path))
@imported_run_option("the logs'")
@click.option(
    "--model",
    default="lmms-eval",
    show_default=True,
    help="The model's name in the run (lmms-eval's samples logs do not record it).",
)
def import_lmms_eval_command(samples: tuple[Path, ...], out_dir: Path, model: str) -> None:
    """Turn lmms-eval's samples logs (--log_samples: one *_samples_proactivebench_<scenario>.jsonl
    per scenario) into a run directory. Exits 3 when episodes ended in an error."""
    from proactivebench.adapters.lmms_eval_log import import_lmms_eval_samples

    imported = import_lmms_eval_samples(samples, out_dir, model)
    summary = imported.summary
    tell_table(summary, out_dir)
    print_warnings(imported.warnings)
    if any(score.errors for score in summary.scenarios.values()):
        sys.exit(EXIT_EPISODE_ERRORS)
