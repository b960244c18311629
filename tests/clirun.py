"""Running the CLI in-process, as a user would from the shell (exit code and all output)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from proactivebench.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit code and stdout + stderr of `proactivebench ARGS`."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
        raise SystemExit(0)
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out + captured.err


def eval_baselines(data: Path, root: Path, capsys: pytest.CaptureFixture[str], *names: str) -> None:
    """`eval` of each `baseline:NAME` on `data` into `root/NAME`, each succeeding."""
    for name in names:
        args = ["eval", "--data", str(data), "--model", f"baseline:{name}"]
        code, text = run_cli([*args, "--out", str(root / name)], capsys)
        assert code == 0, text


def eval_args(data: Path, out: Path, *extra: str) -> list[str]:
    """`eval` of the oracle on `data` into `out`, plus extra flags."""
    return ["eval", "--data", str(data), "--model", "baseline:oracle", "--out", str(out), *extra]


#: Holds a run directory's lock until its stdin closes (a writer in another process).
_HOLDER = """
import sys
from pathlib import Path
from proactivebench.run.rundir import RunLock
with RunLock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def held_by_another_process(run_dir: Path) -> Iterator[int]:
    """`run_dir` locked by another process (as a running `eval` holds it); yields its PID.
    The lock is reentrant within one process, so the holder must be another one."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.communicate(timeout=60)


# A test suite started in the background by a script (`pytest &` or `bash -c '...' &` in a
# non-interactive shell) inherits SIGINT *ignored*; Python then leaves Ctrl-C ignored in its
# own process and in every child, as the shell asked. A test of what Ctrl-C does gives the
# CLI Ctrl-C as a terminal gives it, whatever the suite itself was started with.


def ctrl_c_as_in_a_terminal() -> None:
    """A `preexec_fn`: in the child, before exec, SIGINT at its default (Python then raises
    KeyboardInterrupt on it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def ctrl_c_here() -> Iterator[None]:
    """In this process: Ctrl-C raises KeyboardInterrupt (and asyncio takes it over while a loop
    runs), as in a terminal; the disposition the suite had comes back afterwards."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def as_terminal(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    """Make the CLI print as on a terminal `width` columns wide, whatever runs the tests
    (`main` gives a console off a terminal an unbounded width)."""
    import proactivebench.cli
    from proactivebench.cli.output import console, out

    monkeypatch.setattr(proactivebench.cli, "fit_to_output", lambda *consoles: None)
    monkeypatch.setattr(out, "width", width)
    monkeypatch.setattr(console, "width", width)


#: The characters tables are drawn with (U+2500 to U+257F), set apart from what they hold.
_BOX = {code: " " for code in range(0x2500, 0x2580)}


def shown_tokens(text: str) -> set[str]:
    """The words a terminal output shows, the lines of its tables taken away: what must all
    still be there when the output is narrowed (a heading may become a label: `eval:`)."""
    return {word.removesuffix(":") for word in text.translate(_BOX).split()}
