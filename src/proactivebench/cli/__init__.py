"""The `proactivebench` command line: the root group, its commands, and `main`.

The commands live in one module per group (`run`: eval, judge, merge; `suite`: paper, suite;
`demo`; `data`; `report`: report, show; `play`; `train`; `inspect_log`: import-inspect;
`lmms_eval_log`: import-lmms-eval;
`publish`: push; `list`), all standalone click commands that use `output` (consoles, tables,
progress, exit codes) and `options` (shared options and their parsing) and the library. This
module only puts them under one group and runs it: `main` sets up logging and turns every user
error into one message and an exit code, never a traceback. No module of the package imports
this one.

A command's module is imported when the command runs (`LazyGroup`), not for every command: `eval`
does not pay for the web app of `play` or the downloader of `data download`, and the root's
`--help` lists the commands from `COMMANDS` without importing any (`tests/test_imports.py`).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import signal
import sys
from collections.abc import Iterator, MutableMapping
from gettext import gettext
from types import FrameType
from typing import NoReturn

import click

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
from proactivebench.core.errors import DISK_ERRNOS, ProactiveBenchError, WriteError
from proactivebench.core.texts import NotJSONError

#: Every command: its name, the module under `proactivebench.cli` and the attribute that hold
#: it, and the first sentence of its help, which the root's `--help` lists without importing
#: the module (`tests/test_imports.py` checks each against the command's own help).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "eval": ("run", "eval_command", "Play the benchmark's episodes with a model and score them."),
    "judge": (
        "run",
        "judge_command",
        "Judge a finished open-ended run again, without asking the tested model anything.",
    ),
    "merge": (
        "run",
        "merge_command",
        "Join the run directories of the shards of one run (every shard, once).",
    ),
    "paper": (
        "suite",
        "paper_command",
        "Run the paper's experiments for one model (docs/paper.md).",
    ),
    "suite": (
        "suite",
        "suite_command",
        "Run the experiments of SUITE_FILE (TOML: [[experiment]] tables of an id and eval's "
        "settings by name) for one model, as `paper` runs the paper's.",
    ),
    "play": (
        "play",
        "play_command",
        "Play the benchmark yourself in the browser: a human baseline, as an ordinary run.",
    ),
    "demo": (
        "demo",
        "demo_command",
        "Offline: generate a synthetic ProactiveBench once and score the built-in baselines.",
    ),
    "data": ("data", "data_group", "Get, make and check benchmark data."),
    "report": (
        "report",
        "report_command",
        "Write tables (Markdown, CSV, JSON, LaTeX), plots and an HTML episode viewer.",
    ),
    "show": (
        "report",
        "show_command",
        "Print one episode as a transcript: prompts, options, answers, verdicts, the end.",
    ),
    "train": (
        "train",
        "train_group",
        "Teach proactiveness: GRPO post-training with TRL (needs the [train] extra).",
    ),
    "import-inspect": (
        "inspect_log",
        "import_inspect_command",
        "Turn an Inspect log of proactivebench/proactivebench into a run directory.",
    ),
    "import-lmms-eval": (
        "lmms_eval_log",
        "import_lmms_eval_command",
        "Turn lmms-eval's samples logs (--log_samples: one "
        "*_samples_proactivebench_<scenario>.jsonl per scenario) into a run directory.",
    ),
    "push": (
        "publish",
        "push_command",
        "Push run directories, a suite's output (paper/suite --out) or reports to a Hub dataset "
        "repo, with a dataset card; rerun to update it (runs/NAME/, reports/NAME/, README.md).",
    ),
    "list": (
        "list",
        "list_command",
        "List the scenarios, baselines, model spec kinds, the paper's experiments and the "
        "optional extras installed.",
    ),
}


def load_command(name: str) -> click.Command:
    """The command `name` of `COMMANDS`, its module imported now."""
    module, attribute, _ = COMMANDS[name]
    command = getattr(importlib.import_module(f"proactivebench.cli.{module}"), attribute)
    assert isinstance(command, click.Command)
    return command


class LazyCommands(MutableMapping[str, click.Command]):
    """A group's `commands`: every name of `COMMANDS` is there, its command imported on first
    look (`cli.commands["eval"]`); iterating gives the names alone. A command added later
    (`add_command`) is kept as given."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}
        self._names = [*COMMANDS]  # not list(): importing cli.list shadows it here

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in self._names:
                raise KeyError(name)
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        if name not in self._names:
            self._names.append(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._names])

    def __len__(self) -> int:
        return len(self._names)

    def short_help(self, name: str, limit: int) -> str:
        """What the root's `--help` lists for `name`: the command's own short help when it is
        loaded or not one of `COMMANDS`, else made, as click makes it, from `COMMANDS`."""
        if name in self._loaded or name not in COMMANDS:
            return self[name].get_short_help_str(limit)
        return click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)


class LazyGroup(click.Group):
    """The root group: a command's module is imported when the command is run or asked for its
    own help, and the list in `--help` is made without importing any."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.commands: LazyCommands = LazyCommands()  # type: ignore[assignment]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As `click.Group.format_commands` lays the list out (none of ours is hidden)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, self.commands.short_help(name, limit)) for name in names]
        with formatter.section(gettext("Commands")):  # as click names it
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proactivebench")
def cli() -> None:
    """Measure and train proactiveness in multimodal LLMs (ProactiveBench)."""


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
    print_error(exc.lines if isinstance(exc, ProactiveBenchError) else str(exc))
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
