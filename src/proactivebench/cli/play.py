"""The `play` command: a person plays the benchmark in the browser (`proactivebench.humanplay`).

It parses the options (the run settings a person can honour are generated from their
declaration, as `eval`'s are), starts the web app, prints its URL, opens the browser when
there is one, and at the end prints the table and writes the report, as `eval` does.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import sys
import webbrowser
from pathlib import Path
from typing import Any

import click

from proactivebench.cli.options import data_option, setting_options
from proactivebench.cli.output import EXIT_OK, console, out
from proactivebench.run.settings import EvalSettings


def default_annotator() -> str:
    """The login name, or "anonymous" where there is none."""
    try:
        return getpass.getuser() or "anonymous"
    except (KeyError, OSError):
        return "anonymous"


def has_display() -> bool:
    """Whether a browser can be opened here (a desktop session, or macOS / Windows)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@click.command("play")
@data_option
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Run directory; rerunning the same command continues it.",
)
@click.option(
    "--annotator",
    default=None,
    help="Who plays: the run's model is human:NAME [default: your login name].",
)
@setting_options(EvalSettings, surface="play")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; another than 127.0.0.1 (a lab's network) serves anyone "
    "who has the printed URL, whose token every request must carry.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port to listen on (0: any free one).",
)
@click.option("--no-browser", is_flag=True, help="Print the URL only; do not open a browser.")
@click.option(
    "--no-report",
    is_flag=True,
    help="Do not write the report (RUN_DIR/report/) at the end.",
)
def play_command(
    data_dir: Path,
    out_dir: Path,
    annotator: str | None,
    host: str,
    port: int,
    no_browser: bool,
    no_report: bool,
    **run_settings: Any,
) -> None:
    """Play the benchmark yourself in the browser: a human baseline, as an ordinary run.

    You see what a model is shown, turn by turn (the same image, prompt and options) and
    answer with a click or the option's letter. Stop whenever you like (close the tab and
    press Ctrl-C, or Finish): rerun the same command to continue."""
    from proactivebench.cli.run import tell_run
    from proactivebench.humanplay import Started, play_in_browser
    from proactivebench.models.human import check_annotator

    settings = EvalSettings(**run_settings)
    # Only a missing option means the login name: an empty one (a script's unset variable) is
    # refused, or the answers would join the run of whoever else plays under that login.
    name = check_annotator(default_annotator() if annotator is None else annotator)

    def ready(started: Started) -> None:
        if started.resumed:
            console.print(
                f"{started.resumed} of {started.total} episodes done, continuing; an episode "
                "left unfinished starts again from its first turn",
                highlight=False,
            )
        out.print(
            f"play in your browser: {started.url}", markup=False, highlight=False, soft_wrap=True
        )
        console.print("stop with Ctrl-C (finished episodes are kept)", highlight=False)
        if not no_browser and has_display():
            webbrowser.open(started.url)

    outcome = asyncio.run(
        play_in_browser(data_dir, out_dir, settings, name, host=host, port=port, on_ready=ready)
    )
    if outcome is None:
        console.print("stopped; rerun the same command to continue", highlight=False)
        return
    status = tell_run(
        outcome.summary, outcome.out_dir, outcome.errors, outcome.cached, outcome.answers, no_report
    )
    if status != EXIT_OK:
        sys.exit(status)
