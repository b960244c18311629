"""`eval`'s report written by a worker process made ready while the run plays
(`report.worker`): the same report as this process writes, this process's own when the worker
cannot, the builder's own error for refused input, no worker for short runs or --no-report,
and no worker left behind."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.report import build, worker
from proactivebench.report.build import write_report
from proactivebench.report.worker import ReportWorker


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, synth_test: Path) -> Path:
    """A finished run of the proactive baseline (7 episodes, several turns each)."""
    run = tmp_path_factory.mktemp("worker") / "run"
    evaluate(synth_test, load_model("baseline:proactive"), run)
    return run


def _result_files(report: Path, plots: bool = False) -> dict[str, bytes]:
    """The report's files that results decide (`plots`: and its PNGs, which matplotlib
    draws byte for byte alike from the same measures)."""
    names = [*sorted(report.glob("tables/*")), report / "report.md", report / "report.json"]
    names += sorted(report.glob("plots/*.png")) if plots else []
    return {str(p.relative_to(report)): p.read_bytes() for p in names}


def _ended(pid: int) -> bool:
    """Whether process `pid` is gone (or a zombie nobody reaped: it runs no more)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def test_the_worker_writes_the_report_this_process_would(played: Path, tmp_path: Path) -> None:
    with ReportWorker() as ahead:
        ahead.start()
        started = ahead.process
        assert started is not None and started.is_alive()
        outcome = ahead.write(played, out_dir=tmp_path / "by-worker", thumb_cache=None)
        assert ahead.trouble is None
        assert ahead.process is None  # one report, then it ends
    here = write_report([played], tmp_path / "here", thumb_cache=None)
    # Written by the worker: its measures stayed there (this process's outcome has them).
    assert outcome.measures == [] and here.measures
    assert _result_files(tmp_path / "by-worker", plots=True) == _result_files(
        tmp_path / "here", plots=True
    )
    assert sorted(p.name for p in (tmp_path / "by-worker" / "plots").iterdir()) == [
        "accuracy_vs_ps.png",
        "actions.png",
        "scenarios.png",
    ]
    assert outcome.intervals == here.intervals
    assert (outcome.notes, outcome.warnings) == (here.notes, here.warnings)
    assert [p.relative_to(tmp_path / "by-worker") for p in outcome.files] == [
        p.relative_to(tmp_path / "here") for p in here.files
    ]


def test_a_worker_that_died_leaves_the_report_to_this_process(played: Path, tmp_path: Path) -> None:
    with ReportWorker() as ahead:
        ahead.start()
        assert ahead.process is not None
        ahead.process.kill()
        ahead.process.join()
        outcome = ahead.write(played, out_dir=tmp_path / "out", thumb_cache=None)
        assert ahead.trouble is not None and "worker process ended" in ahead.trouble
    assert outcome.measures  # written here
    here = write_report([played], tmp_path / "here", thumb_cache=None)
    assert _result_files(tmp_path / "out") == _result_files(tmp_path / "here")
    assert len(list((tmp_path / "out" / "plots").glob("*.png"))) == 3
    assert here.notes == outcome.notes


def test_a_worker_that_fails_leaves_the_report_to_this_process(
    played: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's side (`_serve`) in a thread of this process, its builder failing there
    only: the answer says so and this process writes the report."""
    original = build.write_report

    def fails_in_the_worker(*args: object, **kwargs: object) -> build.ReportOutcome:
        if threading.current_thread().name == "fake-worker":
            raise RuntimeError("no memory left")
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "write_report", fails_in_the_worker)
    ours, theirs = multiprocessing.Pipe()
    serving = threading.Thread(target=worker._serve, args=(theirs,), name="fake-worker")
    serving.start()
    ahead = ReportWorker()
    ahead._conn = ours  # the connection `start` would make, to the thread
    outcome = ahead.write(played, out_dir=tmp_path / "out", thumb_cache=None)
    serving.join()
    assert ahead.trouble == ("the report's worker process failed (RuntimeError: no memory left)")
    assert outcome.measures and (tmp_path / "out" / "report.html").is_file()
    assert len(list((tmp_path / "out" / "plots").glob("*.png"))) == 3


def test_refused_input_is_the_builders_own_error(tmp_path: Path) -> None:
    with pytest.raises(ProactiveBenchError) as here:
        write_report([tmp_path / "no-run"], tmp_path / "a", thumb_cache=None, allow_empty=False)
    with ReportWorker() as ahead:
        ahead.start()
        with pytest.raises(ProactiveBenchError) as there:
            ahead.write(
                tmp_path / "no-run", out_dir=tmp_path / "b", thumb_cache=None, allow_empty=False
            )
        assert ahead.trouble is None  # the input's error, not the worker's
    assert type(there.value) is type(here.value)
    assert str(there.value) == str(here.value)


_HELPED = """
import json, os, signal, sys
from multiprocessing import Pipe
from pathlib import Path
from proactivebench.report.build import write_report
from proactivebench.report.worker import Drawer
kill, out, runs = sys.argv[1] == "kill", Path(sys.argv[2]), sys.argv[3:]
sizes = {"baseline:proactive": 7.0, "baseline:reactive": 13.0, "baseline:random": 34.0}
write_report(runs, out / "here", thumb_cache=None, params=sizes)
_, stands_for_the_parent = Pipe()
drawer = Drawer(stands_for_the_parent)
if kill:
    os.kill(drawer.pid, signal.SIGKILL)
try:
    write_report(runs, out / "helped", thumb_cache=None, params=sizes, plot_helper=drawer.draw)
finally:
    drawer.close()
print(json.dumps(drawer.drawn))
"""


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory, synth_test: Path) -> list[Path]:
    root = tmp_path_factory.mktemp("three")
    for name in ("proactive", "reactive", "random"):
        evaluate(synth_test, load_model(f"baseline:{name}"), root / name)
    return [root / name for name in ("proactive", "reactive", "random")]


@pytest.mark.parametrize("kill", [False, True], ids=["drawn-by-the-drawer", "drawer-killed"])
def test_plots_drawn_by_the_drawer_are_the_same(
    three_runs: list[Path], tmp_path: Path, kill: bool
) -> None:
    """The worker's drawer (a fork, so in a process of its own here: one without threads)
    draws the scatter and the size plot while the rest is drawn; a drawer that died leaves
    them to be drawn here. The report is the same, PNGs included."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-c", _HELPED, "kill" if kill else "keep", str(tmp_path)]
    done = subprocess.run(
        [*command, *map(str, three_runs)], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(done.stdout.splitlines()[-1]) == ([] if kill else ["accuracy_vs_ps", "size"])
    helped = _result_files(tmp_path / "helped", plots=True)
    assert helped == _result_files(tmp_path / "here", plots=True)
    assert {"plots/size.png", "plots/accuracy_vs_ps.png"} <= set(helped)


def test_closing_ends_the_worker_whatever_it_does() -> None:
    ahead = ReportWorker()
    ahead.start()
    assert ahead.process is not None
    pid = ahead.process.pid
    ahead.close()  # still importing, or waiting for its request
    assert ahead.process is None and _ended(pid)
    assert pid not in [child.pid for child in multiprocessing.active_children()]
    ahead.close()  # twice is fine


_ORPHAN = """
import os
from proactivebench.report.worker import ReportWorker
ahead = ReportWorker()
ahead.start()
print(ahead.process.pid, flush=True)
os._exit(0)  # no close, no atexit: as if killed
"""


def test_a_worker_whose_parent_died_ends() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ORPHAN], capture_output=True, text=True, check=True
    )
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 120  # a bound on a hang, not a measure of speed
    while not _ended(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ended(pid)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[ReportWorker]:
    """Every `ReportWorker.start` in this process, recorded (then done)."""
    started: list[ReportWorker] = []
    original = ReportWorker.start

    def start(self: ReportWorker) -> None:
        started.append(self)
        original(self)

    monkeypatch.setattr(ReportWorker, "start", start)
    return started


@pytest.mark.parametrize(
    ("min_episodes", "extra", "started"),
    [(7, (), True), (8, (), False), (0, ("--no-report",), False)],
    ids=["7-episodes-of-7", "8-episodes-of-7", "no-report"],
)
def test_eval_starts_a_worker_for_enough_episodes_and_a_report(
    synth_test: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    starts: list[ReportWorker],
    min_episodes: int,
    extra: tuple[str, ...],
    started: bool,
) -> None:
    """`synth_test` plays 7 episodes: a worker from `MIN_EPISODES` episodes to play on, and
    never for --no-report; the report is the same however it is written."""
    monkeypatch.setattr(worker, "MIN_EPISODES", min_episodes)
    code, text = run_cli(eval_args(synth_test, tmp_path / "run", *extra), capsys)
    assert code == 0, text
    assert "warning" not in text
    assert len(starts) == started
    report = tmp_path / "run" / "report"
    if extra:
        assert not report.exists()
        return
    if started:
        assert starts[0].trouble is None and starts[0].process is None
    assert json.loads((report / "report.json").read_text())["runs"][0]["model"] == (
        "baseline:oracle"
    )
    assert len(list((report / "plots").glob("*.png"))) == 3
    write_report([tmp_path / "run"], tmp_path / "here")
    assert _result_files(report) == _result_files(tmp_path / "here")


_IMPORTED = """
import multiprocessing, sys
from proactivebench.cli import main
if sys.argv[1] == "worker":
    from proactivebench.report import worker
    worker.MIN_EPISODES = 0
try:
    main(sys.argv[2:])
except SystemExit as exit:
    assert not exit.code, exit.code
print(sorted(m for m in sys.modules if m.startswith(("matplotlib", "proactivebench.report."))))
print(multiprocessing.active_children())
"""


def _imported_by_eval(way: str, *args: str) -> tuple[str, str]:
    """`eval ARGS` in a process of its own (`way` "worker": every run has a worker): the
    report's modules and matplotlib it imported, and its child processes left at the end."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-c", _IMPORTED, way, *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    modules, children = done.stdout.splitlines()[-2:]
    return modules, children


def test_eval_reads_the_workers_report_without_the_builder(
    synth_test: Path, tmp_path: Path
) -> None:
    """The run's process imports neither the builder nor matplotlib (what the worker is
    for): it reads back an outcome of builtins (`report.outcome`)."""
    modules, children = _imported_by_eval("worker", *eval_args(synth_test, tmp_path / "run"))
    assert "proactivebench.report.worker" in modules
    assert "proactivebench.report.build" not in modules and "matplotlib" not in modules
    assert children == "[]"
    assert (tmp_path / "run" / "report" / "report.html").is_file()


def test_eval_no_report_imports_no_worker(synth_test: Path, tmp_path: Path) -> None:
    """In a process of its own: --no-report imports neither the worker's module nor the
    report's builder or matplotlib, and leaves no child process."""
    args = eval_args(synth_test, tmp_path / "run", "--no-report")
    modules, children = _imported_by_eval("plain", *args)
    assert "proactivebench.report.worker" not in modules and "matplotlib" not in modules
    assert "proactivebench.report.build" not in modules
    assert children == "[]"
    assert not (tmp_path / "run" / "report").exists()
