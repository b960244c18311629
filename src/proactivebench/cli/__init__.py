"""The `proactivebench` command line: the root group, its commands, and `main`.

The commands live in one module per group (`run`: eval, judge, merge; `suite`: paper, suite;
`demo`; `data`; `report`: report, show; `play`; `train`; `inspect_log`: import-inspect;
`lmms_eval_log`: import-lmms-eval;
`publish`: push; `list`), all standalone click commands that use `output` (consoles, tables,
progress, exit codes) and `options` (shared options and their parsing) and the library. This
module only puts them under one group and runs it: `main` sets up logging and turns every user
error into one message and an exit code, never a traceback. No module of the package imports
this one.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

import click

from proactivebench.cli import (
    data,
    demo,
    inspect_log,
    lmms_eval_log,
    play,
    publish,
    report,
    run,
    suite,
    train,
)
from proactivebench.cli import list as list_cli
from proactivebench.cli.output import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    PrintableFormatter,
    console,
    fit_to_output,
    out,
    print_error,
    printable,
)
from proactivebench.errors import DISK_ERRNOS, ProactiveBenchError, WriteError
from proactivebench.texts import NotJSONError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proactivebench")
def cli() -> None:
    """Measure and train proactiveness in multimodal LLMs (ProactiveBench)."""


cli.add_command(run.eval_command)
cli.add_command(run.judge_command)
cli.add_command(run.merge_command)
cli.add_command(suite.paper_command)
cli.add_command(suite.suite_command)
cli.add_command(play.play_command)
cli.add_command(demo.demo_command)
cli.add_command(data.data_group)
cli.add_command(report.report_command)
cli.add_command(report.show_command)
cli.add_command(train.train_group)
cli.add_command(inspect_log.import_inspect_command)
cli.add_command(lmms_eval_log.import_lmms_eval_command)
cli.add_command(publish.push_command)
cli.add_command(list_cli.list_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors become one message and a non-zero exit, never a traceback."""
    fit_to_output(console, out)
    root = logging.getLogger()
    if not root.handlers:  # the library's warnings, one line each
        handler = logging.StreamHandler()
        handler.setFormatter(PrintableFormatter("warning: %(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[handler])
    terminated: list[int] = []
    with _sigterm_as_ctrl_c(terminated):
        try:
            cli.main(args=argv, prog_name="proactivebench", standalone_mode=False)
        except (click.exceptions.Abort, KeyboardInterrupt):
            console.print("interrupted; rerun the same command to resume")
            sys.exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
        except click.ClickException as exc:
            # click writes it itself, not through our consoles: the value it quotes (a path,
            # an option's text) is made printable here.
            exc.message = printable(exc.message)
            exc.show()
            sys.exit(exc.exit_code)
        except OSError as exc:
            if exc.errno not in DISK_ERRNOS:
                raise
            _fail(WriteError(exc.filename, exc))  # a write no writer of ours expected
        except (ProactiveBenchError, NotJSONError) as exc:
            _fail(exc)


def _fail(exc: ProactiveBenchError | NotJSONError) -> NoReturn:
    print_error(str(exc))
    sys.exit(EXIT_ERROR)


def _raise_interrupt() -> NoReturn:
    raise KeyboardInterrupt


def _interrupt() -> None:
    """Stop as Ctrl-C stops a command where asyncio has no Ctrl-C handler of its own (it takes
    Ctrl-C over only when Python's is in place, not when the shell had it ignored). Raised in
    the middle of a task's step, KeyboardInterrupt would end that task with it (asyncio then
    prints "Task exception was never retrieved" and its traceback); raised from a callback of
    the running loop, it leaves the loop between steps, and `asyncio.run` cancels the tasks,
    whose cleanup (results written, the run directory released) runs as on Ctrl-C."""
    asyncio = sys.modules.get("asyncio")  # not imported: no loop can be running
    try:
        loop = asyncio.get_running_loop() if asyncio is not None else None
    except RuntimeError:  # no loop runs in this thread
        loop = None
    if loop is None:
        raise KeyboardInterrupt
    loop.call_soon_threadsafe(_raise_interrupt)


@contextlib.contextmanager
def _sigterm_as_ctrl_c(terminated: list[int]) -> Iterator[None]:
    """SIGTERM (`kill`, a job scheduler's end of time) stops a command as Ctrl-C does: what
    finished is kept, the run directory released, the same message; the exit code stays the
    conventional 143. Appends to `terminated` when it happened."""

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        terminated.append(signum)
        ctrl_c = signal.getsignal(signal.SIGINT)
        if callable(ctrl_c):  # Python's, or asyncio's while a run's event loop runs
            ctrl_c(signal.SIGINT, frame)
        else:  # Ctrl-C ignored (a background job): stop all the same
            _interrupt()

    try:
        previous = signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread: signals are not ours to handle
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
