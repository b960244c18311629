"""A run's report written by a process made ready while the run plays (`eval`).

Writing a report in a fresh process first imports the report's builder (numpy, the tables,
the page) and matplotlib: 0.7-0.9 s of CPU on the project machine, more than the writing
itself, paid after the run's last answer. `ReportWorker` starts a process when a run of
`MIN_EPISODES` or more episodes to play starts (`on_start`), which imports all that while the
run waits for its model, then waits for one request: write this run's report
(`build.write_report`), and exits. The run's process only sends the request and reads back the
outcome. A shorter run (a `--limit` trial, a test) writes its report itself, as before.

The worker is a means, not a contract: the report it writes is the one this process would
write (the same function, the same arguments). When it cannot (it died, was never ready, or
failed other than by refusing the report's input) the report is written here, as without a
worker, and `trouble` says why, for one warning. An input the report refuses (a
`ProactiveBenchError`) is refused again here, so that its message and type are the builder's
own.

The worker starts by `spawn` (a fresh interpreter, never a fork of this process and its
threads), ignores Ctrl-C (this process hears it) and ends on SIGTERM as on Ctrl-C (a report
being staged is removed, `paths.staged_folder`); `close` ends it, and nothing outlives this
process: an unclosed worker is ended when the interpreter exits, and a worker whose parent
died reads the end of its pipe and exits. It is not a daemon, so that it may start the
thumbnails' pool (`data.thumbnails`).

This module imports only the standard library at the top: `eval --no-report` never imports
it, and `eval` imports nothing of the report in its own process unless it falls back.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    from proactivebench.report.build import PlotOutcome
    from proactivebench.report.measures import RunMeasures
    from proactivebench.report.outcome import ReportOutcome

#: Seconds `close` waits for a worker to end after SIGTERM before killing it.
STOP_WAIT_S = 5.0
#: Episodes to play from which a worker is started (`ReportWorker.on_start`): a worker costs
#: 0.7-0.9 s of CPU (its imports) and saves as much after the last answer; a run of fewer
#: episodes may end before the worker is ready, and its report is written here as before.
MIN_EPISODES = 100


class ReportWorker:
    """At most one worker process, for one report (`write`); `close` it (or use it as a
    context). Created idle: `start` (or `on_start`, `evaluate`'s callback, for a run of at
    least `MIN_EPISODES` episodes to play) starts the process; without one, `write` writes
    here."""

    def __init__(self, min_episodes: int | None = None) -> None:
        self.min_episodes = MIN_EPISODES if min_episodes is None else min_episodes
        self._conn: Connection | None = None
        self._process: BaseProcess | None = None
        #: Why the last report was written in this process although a worker was started
        #: (None: it was not).
        self.trouble: str | None = None

    def on_start(self, total: int, done: int) -> None:
        """The runner's `on_start(total, done)`: a run of `min_episodes` or more episodes to
        play starts the worker, which has the run's time to get ready."""
        if total - done >= self.min_episodes:
            self.start()

    def start(self) -> None:
        """Start the worker process, unless started already (a failure to start is noted in
        `trouble`, and the report is written here)."""
        import multiprocessing

        from proactivebench.data.thumbnails import starting_workers

        if self._process is not None:
            return
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        try:
            with starting_workers(context):  # a blank main module: nothing of ours re-imported
                process = context.Process(target=serve, args=(child,), name="report-worker")
                process.start()
        except Exception as exc:  # no worker: the report is written here
            parent.close()
            self.trouble = f"the report's worker process did not start ({_said(exc)})"
            return
        finally:
            child.close()
        self._conn, self._process = parent, process
        atexit.register(self.close)

    def __enter__(self) -> ReportWorker:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def process(self) -> BaseProcess | None:
        """The worker process (None when it did not start); for tests."""
        return self._process

    def write(self, run_dir: str | Path, **options: Any) -> ReportOutcome:
        """`write_report([run_dir], **options)` by the worker, or here when it cannot (see
        the module's text); the worker ends after it. The outcome has no `measures` and no
        `headline` (those stay in the worker: `eval` prints neither)."""
        from proactivebench.core.errors import ProactiveBenchError

        request = ([str(run_dir)], options)
        if self._conn is None:  # never started (a short run), or it could not start
            answer: tuple[str, Any] = ("failed", self.trouble)
        else:
            try:
                self._conn.send(request)
                answer = self._conn.recv()
            except Exception as exc:  # EOF, a broken pipe, a request that does not pickle
                answer = ("failed", f"the report's worker process ended ({_said(exc)})")
            finally:
                self.close()
        kind, detail = answer
        if kind == "written":
            self.trouble = None
            return detail  # type: ignore[no-any-return]
        # Refused input is refused here again with the builder's own error; anything else is
        # the worker's trouble, told once, and the report is written here all the same.
        self.trouble = None if kind == "refused" or detail is None else str(detail)
        from proactivebench.report.build import write_report

        try:
            return write_report(request[0], **options)
        except ProactiveBenchError:
            self.trouble = None  # the input's error is what the user needs to read
            raise

    def close(self) -> None:
        """End the worker (SIGTERM, then SIGKILL after `STOP_WAIT_S`), whatever it is doing;
        idempotent."""
        atexit.unregister(self.close)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        process, self._process = self._process, None
        if process is None:
            return
        if process.is_alive():
            process.terminate()
            process.join(STOP_WAIT_S)
            if process.is_alive():
                process.kill()
        process.join()
        process.close()


def _said(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _stop(*_: object) -> None:
    raise KeyboardInterrupt


def serve(conn: Connection) -> None:
    """The worker: import the builder and matplotlib, wait for one request, write the report,
    send back the outcome (without measures and headline tables), and end. SIGTERM unwinds as
    Ctrl-C would (a staged report is removed); the end of the pipe (the parent is gone) ends
    it quietly. An error of its own (not the report's) is the parent's to tell: it writes
    the report itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    try:
        _serve(conn)
    except (KeyboardInterrupt, EOFError, OSError):
        pass
    finally:
        conn.close()
    # The report is written and its files closed (or there was none to write): end without
    # the interpreter's teardown of numpy and matplotlib (0.1-0.2 s the run's process would
    # wait for in `close`).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _serve(conn: Connection) -> None:
    from proactivebench.core.errors import ProactiveBenchError
    from proactivebench.report import build, plots

    plots.import_matplotlib()
    drawer = Drawer(conn)  # forked now: it has the imports, and no thread exists yet
    try:
        run_dirs, options = conn.recv()
        try:
            outcome = build.write_report(run_dirs, **options, plot_helper=drawer.draw)
        except ProactiveBenchError as exc:
            conn.send(("refused", _said(exc)))
            return
        except Exception as exc:  # told by the parent, which writes the report itself
            conn.send(("failed", f"the report's worker process failed ({_said(exc)})"))
            return
    finally:
        drawer.close()
    # Builtins only: the parent reads it back without importing the builder (`report.outcome`).
    light = dataclasses.replace(outcome, measures=[], headline=[])
    conn.send(("written", light))


class Drawer:
    """A fork of the worker that draws some of the report's plots (`build.HELPED_PLOTS`)
    while the worker draws the others and the tables: the drawing, two thirds of the report's
    time, on two cores. Forked once the worker has imported matplotlib, before any thread
    exists (the thumbnails' pool starts later), so it costs no import of its own. It draws
    for one report, then ends; it ends too when the worker ends (the end of its pipe). When it
    cannot draw (it died), the worker draws those plots itself."""

    def __init__(self, worker_conn: Connection) -> None:
        import multiprocessing

        #: The plots it drew (for tests).
        self.drawn: list[str] = []
        self._conn: Connection | None = None
        self._pid: int | None = None
        if not sys.platform.startswith("linux"):  # fork is safe there; elsewhere, none
            return
        ours, theirs = multiprocessing.Pipe()
        self._conn = ours
        self._pid = os.fork()
        if self._pid == 0:  # the drawer: nothing of the worker's pipes kept open
            ours.close()
            worker_conn.close()
            try:
                _draw(theirs)
            finally:
                os._exit(0)
        theirs.close()

    def draw(
        self, names: Sequence[str], all_measures: Sequence[RunMeasures], with_paper: bool
    ) -> tuple[Sequence[str], Callable[[], dict[str, PlotOutcome]]]:
        """The `build.PlotHelper`: send the plots to draw, with the measures they need."""
        if self._conn is None:
            return (), dict
        try:
            self._conn.send((list(names), [_drawn_from(m) for m in all_measures], with_paper))
        except Exception:  # a drawer gone, measures that do not pickle: all drawn here
            self.close()
            return (), dict
        return names, self._collect

    @property
    def pid(self) -> int | None:
        """The drawer's process (None: none, or ended); for tests."""
        return self._pid

    def _collect(self) -> dict[str, PlotOutcome]:
        try:
            drawn: dict[str, PlotOutcome] = self._conn.recv() if self._conn is not None else {}
        except Exception:  # it died: the worker draws them
            drawn = {}
        finally:
            self.close()
        self.drawn = list(drawn)
        return drawn

    def close(self) -> None:
        """End the drawer (the end of its pipe; SIGTERM if it is still drawing) and reap it."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._pid:
            pid, self._pid = self._pid, None
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)


def _drawn_from(measures: RunMeasures) -> RunMeasures:
    """What the plots read of a run's measures: its rates and labels, not its result lines
    (the first kept: `Run.oeg` reads it), which would cost more to send than to draw."""
    run = dataclasses.replace(
        measures.run, lines=measures.run.lines[:1], by_scenario={}, rejected=[]
    )
    return dataclasses.replace(measures, run=run)


def _draw(conn: Connection) -> None:
    """The drawer: one request of plots to draw, their outcomes sent back."""
    from proactivebench.report.build import plot_outcome

    try:
        names, all_measures, with_paper = conn.recv()
        conn.send({name: plot_outcome(name, all_measures, with_paper) for name in names})
    except (KeyboardInterrupt, EOFError, OSError):
        pass
