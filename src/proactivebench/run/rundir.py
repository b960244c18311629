"""The run directory: what a run is (`run.json`), what each episode gave (`results.jsonl`),
and writing, reading, resuming, locking and merging them.

`results.jsonl` gets one line per finished episode (`results.EpisodeResult` /
`results.OEGResult`), appended and fsynced as episodes end; `run.json` holds the run's identity:
the data, the model and every setting that changes play, so that a rerun resumes only the
same run (written with the first result, so a failed start pins nothing), plus its
`provenance` (never compared); `summary.json` the per-scenario table. Every writer holds
`RunLock`, and every file written whole goes through `paths.write_whole` (or `paths.staged_folder`).
`.finished.json` says that the run was complete, and from what (`FinishedRun`): a rerun that
finds it still true answers at once, without loading the data or reading the results again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.benchmark.metrics import Summary, summarize, unread_problem
from proactivebench.benchmark.registry import scenario_names, scenario_rank
from proactivebench.benchmark.results import (
    EpisodeResult,
    OEGResult,
    is_oeg_line,
    mode_problem,
    result_key,
    result_order,
    settings_problem,
    shape_problem,
)
from proactivebench.core.errors import (
    DamagedRunError,
    ForeignLinesError,
    LinkRefusedError,
    NotARunDirError,
    NothingToDoError,
    ProactiveBenchError,
    RunDirInUseError,
    RunMismatchError,
    WriteError,
    listed,
)
from proactivebench.core.paths import (
    open_to_read,
    open_to_write,
    read_file,
    refuse_link,
    write_whole,
)
from proactivebench.core.texts import dumps, loads, shown_json
from proactivebench.data.directory import scenario_file
from proactivebench.run.datarecords import DATA_RECORDS, other_data, records_of
from proactivebench.run.selection_record import SELECTION, Selection, selection_of

log = logging.getLogger(__name__)

RESULTS = "results.jsonl"
#: The lines an unfinished `judge` judged so far (appended and fsynced as they are judged):
#: after Ctrl-C or a crash, the rerun takes them instead of asking the judge again; removed
#: once the results file holds them. No reader counts them; `report` says they wait there.
JUDGED_SO_FAR = "results.judging.jsonl"
SUMMARY = "summary.json"
#: The run.json key of a sharded run: {"index": I, "count": N}.
SHARD = "shard"
RUN_CONFIG = "run.json"
#: The run.json key of what is recorded about the run but is not its identity (never compared
#: on resume or merge): one entry per invocation that wrote results (`provenance`).
PROVENANCE = "provenance"
#: Where `eval` and a one-run `report` put a run's report: inside the run directory (a suite
#: puts the report of its experiments in OUT/REPORT_DIR too).
REPORT_DIR = "report"
#: The note of a complete run (`FinishedRun`): hidden, as the lock is; not part of any contract.
FINISHED = ".finished.json"


# ----- results.jsonl --------------------------------------------------------------------------


class ResultsFile:
    """`results.jsonl`: one line per finished episode, appended, flushed and fsynced.

    Lines are whole writes, so a killed process leaves at most one torn last line, which the
    next open removes; `write` + `sync` let the scheduler group-commit what finished together.
    The file is opened at the first write, after `before_first_write` (`evaluate` writes
    `run.json` there): a run that never finished an episode leaves neither file behind. A write
    that fails (a full disk) is cut back to the lines before it, so no half line is left.
    """

    def __init__(self, path: Path, before_first_write: Callable[[], None] | None = None) -> None:
        self.path = path
        self._before_first_write = before_first_write
        self._repair_tail()
        self._fd: int | None = None
        #: Lines this object appended.
        self.written = 0

    def _repair_tail(self) -> None:
        """Drop a last line cut short by a crash, so appending cannot glue two records."""
        try:
            fd = open_to_write(self.path, os.O_RDWR)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise WriteError(self.path, exc) from None
        with open(fd, "r+b") as f:
            end = f.seek(0, os.SEEK_END)
            position = end
            while position > 0:  # scan back in blocks for the last newline
                start = max(0, position - 65536)
                f.seek(start)
                block = f.read(position - start)
                if position == end and block.endswith(b"\n"):
                    return  # the usual case: the file ends with a whole line
                newline = block.rfind(b"\n")
                if newline >= 0:
                    f.truncate(start + newline + 1)
                    return
                position = start
            f.truncate(0)  # a single torn line and nothing else

    def write(self, results: Sequence[EpisodeResult | OEGResult | dict[str, Any]]) -> None:
        """Append (the lines survive a killed process from here on); a failed write raises
        `ProactiveBenchError` naming the file, with the file cut back to its whole lines."""
        lines = (r if isinstance(r, dict) else r.to_json() for r in results)
        data = jsonl(lines).encode("utf-8")
        if self._fd is None:
            if self._before_first_write is not None:
                self._before_first_write()
            try:
                self._fd = open_to_write(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            except OSError as exc:
                raise WriteError(self.path, exc) from None
        start = os.fstat(self._fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            # The lines that went out whole stay (a full disk keeps what fitted, however many
            # lines this write held); the torn one is cut, else the next open would drop it.
            whole = data.rfind(b"\n", 0, len(data) - len(view)) + 1
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start + whole)
                self.written += data.count(b"\n", 0, whole)
            raise WriteError(self.path, exc) from None
        self.written += len(results)

    def sync(self) -> None:
        """fsync: the lines survive a machine crash from here on."""
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise WriteError(self.path, exc) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def has_results(run_dir: Path) -> bool:
    """Whether `run_dir` holds a results file. One there that is not a regular file (a
    folder, a FIFO, a broken link) is refused by name: never taken for "no results yet", nor
    opened (a FIFO would wait forever)."""
    path = run_dir / RESULTS
    if not path.exists() and not path.is_symlink():
        return False
    if not path.is_file():
        raise DamagedRunError(f"cannot read {path}: not a regular file (a FIFO, device or folder)")
    return True


def read_results(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a results file, as JSON objects.

    A torn last line (a write cut short by a crash, with no newline yet) is ignored; any other
    line that is not a result (bad bytes, not JSON, a field of the wrong shape:
    `results.shape_problem`) is an error that names the file and line, since resuming over it
    could lose or repeat episodes, and counting it would give numbers that are not the run's.
    """
    lines = []
    for number, line, problem in numbered_lines(path):
        if problem is not None:
            raise DamagedRunError(f"{path}:{number}: not a result line ({problem})")
        lines.append(line)
    return lines


def numbered_lines(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, parsed line, why it is not a result line or None) for every complete
    non-blank line of a results file; nothing for a file that does not exist."""
    try:
        data = read_file(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ProactiveBenchError(f"cannot read {path}: {exc.strerror}") from None
    raws = data.split(b"\n")
    if raws and raws[-1].strip():
        raws[-1] = b""  # the torn tail
    for number, raw in enumerate(raws, start=1):
        if not raw.strip():
            continue
        try:
            line = loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            yield number, None, str(exc)
            continue
        yield number, line, shape_problem(line)


@dataclass
class RunLines:
    """The lines of a run directory that count: one per episode (`latest_results`), each of
    the right shape, played with the run's settings, of an episode the run can hold and not
    contradicted by another finished line of it; and `rejected`, one `file:line: why` for
    every line left out (none of them is counted anywhere), or for every set of lines that
    contradict each other; `left_out`, how many lines those messages name: the count every
    sentence that says how many gives."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    left_out: int = 0


def run_lines(
    run_dir: Path,
    config: dict[str, Any],
    known: Callable[[str, int], bool] | None = None,
) -> RunLines:
    """The counted and the rejected lines of `run_dir`'s results (see `RunLines`), given its
    `run.json` (`config`). `known(scenario, sample_id)` says whether the data holds an
    episode; with the data at hand or not, an episode the selection `config` records
    (`selection_record.Selection`) did not choose is refused (a run.json without one: only a
    scenario the benchmark does not have).

    Every reader that counts (eval's resume and table, judge, report, merge) takes its lines from
    here, so that a line pasted from another run or hand-edited is left out by all of them
    alike, and named."""
    path = run_dir / RESULTS
    settings = config.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    not_held = _not_held(run_dir, config, known)
    out = RunLines()
    kept: list[tuple[int, dict[str, Any]]] = []
    for number, line, problem in numbered_lines(path):
        if problem is not None:
            problem = f"not a result line ({problem})"
        else:
            problem = _recorded_problem(line, settings)
        if problem is None:
            problem = not_held(line["scenario"], line["sample_id"])
        if problem is not None:
            out.rejected.append(f"{path}:{number}: {problem}; not counted")
            out.left_out += 1
        else:
            kept.append((number, line))
    finished: dict[tuple[str, int], list[tuple[int, dict[str, Any]]]] = {}
    for number, line in kept:
        if not line.get("error"):
            finished.setdefault(result_key(line), []).append((number, line))
    conflicting = set()
    for key, found in finished.items():
        first = _what_it_says(found[0][1])
        if any(_what_it_says(line) != first for _, line in found[1:]):
            conflicting.add(key)
            numbers = ", ".join(str(n) for n, _ in found)
            out.rejected.append(
                f"{path}:{numbers}: different finished results for {key[0]} sample {key[1]}; "
                "none of them counted"
            )
            out.left_out += len(found)
        else:
            # No writer finishes an episode twice: a copy (a file joined with itself, a
            # line pasted again) is counted once and named, so that n is never silently
            # fewer than the finished lines a reader of the file sees.
            for number, _ in found[1:]:
                out.rejected.append(
                    f"{path}:{number}: a copy of line {found[0][0]} ({key[0]} sample {key[1]}); "
                    "not counted"
                )
                out.left_out += 1
    out.lines = latest_results(line for _, line in kept if result_key(line) not in conflicting)
    return out


def _not_held(
    run_dir: Path, config: dict[str, Any], known: Callable[[str, int], bool] | None
) -> Callable[[str, int], str | None]:
    """Why the run cannot hold an episode (None when it can): the data does not hold it
    (`known`, with the data at hand), or the selection run.json records did not choose it
    (a run recorded before the selection was: any episode the data holds)."""
    selection = selection_of(config, run_dir / RUN_CONFIG)

    def not_held(scenario: str, sample_id: int) -> str | None:
        if known is not None and not known(scenario, sample_id):
            return f"the data holds no {scenario} sample {sample_id}"
        if selection is not None and not selection.holds(scenario, sample_id):
            return (
                f"{scenario} sample {sample_id} was not selected by this run (run.json's selection)"
            )
        return None

    return not_held


def line_problem(line: Any, settings: dict[str, Any], **named: str) -> str | None:
    """Why `line` cannot count as a result of a run played with `settings` (None when it can):
    its shape (`shape_problem`), its recorded settings, its scenario. The one rule for lines
    read from a run (`run_lines`) and for lines copied in from another harness's log (the
    importers), so that an imported line that no reader could count is refused where it
    enters, not written into a run that every later command then stumbles over. `named`:
    what the settings are called in the message (`settings_problem`'s `whose`, `source`)."""
    problem = shape_problem(line)
    if problem is not None:
        return f"not a result line ({problem})"
    return _recorded_problem(line, settings, **named)


def _recorded_problem(line: dict[str, Any], settings: dict[str, Any], **named: str) -> str | None:
    """`line_problem` for a line whose shape has passed (`numbered_lines` checked it: every
    resume and report reads each line once)."""
    problem = settings_problem(line, settings, **named)
    if problem is None:
        problem = mode_problem(line, settings, source=named.get("source", "run.json"))
    if problem is None:
        problem = unread_problem(line)
    if problem is None and line["scenario"] not in scenario_names():
        problem = f"scenario {line['scenario']!r} is not one of {', '.join(scenario_names())}"
    return problem


def _what_it_says(line: dict[str, Any]) -> dict[str, Any]:
    """A finished line without what differs between two plays of one episode by nature
    (seconds, token counts, whether the cache answered): two lines that differ in anything
    else say different things of the episode."""
    volatile = ("latency_s", "usage", "cached")
    trace = line.get("trace")
    rest = {k: v for k, v in line.items() if k not in volatile}
    if isinstance(trace, list):
        rest["trace"] = [{k: v for k, v in t.items() if k not in volatile} for t in trace]
    return rest


def refuse_rejected(rejected: Sequence[str], what: str) -> None:
    """Stop with the rejected lines named (the first few, and how many there are in all):
    `what` says what cannot go on over them and what to do."""
    if not rejected:
        return
    more = [f"... and {len(rejected) - 5} more"] if len(rejected) > 5 else []
    raise listed(ForeignLinesError(), what, [*rejected[:5], *more])


def read_episodes(path: Path) -> list[EpisodeResult | OEGResult]:
    """The latest result of every episode of a results file, typed."""
    return [
        OEGResult.from_json(line) if is_oeg_line(line) else EpisodeResult.from_json(line)
        for line in latest_results(read_results(path))
    ]


def latest_results(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per episode: a later line (a retried error) replaces an earlier one."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for result in results:
        key = result_key(result)
        if result.get("error") and key in latest and not latest[key].get("error"):
            continue  # never let an error hide a finished episode
        latest[key] = result
    return list(latest.values())


# ----- one run at a time ------------------------------------------------------------------------


class RunLock:
    """Holds a run directory for one process: a second writer into it (`eval`, `judge`,
    `merge --out`, `import-inspect --out`, a `report` into it) ends at once, naming the process
    that holds it (two runs appending to one results file would both play everything).

    An advisory lock (`filelock`) on `RUN_DIR/.lock`, released when the process ends, however it
    ends; the holder's PID is written beside it, for the message. Both files are removed when
    the holder releases the directory (a process killed outright leaves them: they hold
    nothing, and the next writer takes them). Reentrant within a process:
    a writer that holds the directory may call another (`eval` writes its report).
    `wait`: seconds to wait for the holder before giving up, for a hold of a moment (a suite's
    `suite.json` updated by two invocations at once); a run's writers never wait (0).
    """

    #: Directories this process holds: resolved path -> (lock, depth).
    _held: dict[Path, tuple[Any, int]] = {}  # noqa: RUF012 - process-wide on purpose
    _guard = threading.Lock()

    def __init__(self, run_dir: Path, wait: float = 0) -> None:
        self.run_dir = Path(run_dir)
        self.wait = wait
        self._key: Path | None = None
        self._created = False

    def __enter__(self) -> RunLock:
        key = self.run_dir.resolve()
        with self._guard:
            if key in self._held:
                lock, depth = self._held[key]
                self._held[key] = (lock, depth + 1)
                self._key = key
                return self
        self._created = not self.run_dir.exists()
        make_run_dir(self.run_dir)
        lock = self._acquire()
        with self._guard:
            self._held[key] = (lock, 1)
        self._key = key
        return self

    def _acquire(self) -> Any:
        from filelock import FileLock, Timeout

        pid_file = self.run_dir / ".lock.pid"
        try:  # filelock opens the lock by name, with O_TRUNC: a link there is refused first
            refuse_link(self.run_dir / ".lock")
        except LinkRefusedError:
            self._clean_up()
            raise
        lock = FileLock(self.run_dir / ".lock", timeout=self.wait)
        try:
            lock.acquire()
        except Timeout:
            holder = pid_file.read_text().strip() if pid_file.exists() else "unknown"
            raise RunDirInUseError(
                f"{self.run_dir} is in use by another run (PID {holder}); wait for it to end, "
                "or use another --out"
            ) from None
        except OSError as exc:
            self._clean_up()
            raise WriteError(self.run_dir / ".lock", exc) from None
        try:
            fd = open_to_write(pid_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with open(fd, "w", encoding="utf-8") as f:
                f.write(f"{os.getpid()}\n")
        except LinkRefusedError:
            lock.release()
            self._clean_up()
            raise
        except OSError as exc:
            lock.release()
            self._clean_up()
            raise WriteError(pid_file, exc) from None
        return lock

    def __exit__(self, *exc: object) -> None:
        if self._key is None:
            return
        with self._guard:
            lock, depth = self._held.pop(self._key)
            if depth > 1:
                self._held[self._key] = (lock, depth - 1)
        self._key = None
        if depth > 1:
            return
        # Removed while still held, so only by the holder: another process that opened the old
        # `.lock` cannot take it (filelock refuses an inode already unlinked), and the next
        # writer makes a new one. A finished directory keeps no lock files.
        for name in (".lock.pid", ".lock"):
            with contextlib.suppress(OSError):
                (self.run_dir / name).unlink(missing_ok=True)
        lock.release()
        self._clean_up()

    @staticmethod
    def holder(run_dir: Path) -> str | None:
        """The PID of another process holding `run_dir` (a run still writing it), or None: for
        a reader that must not take a run half-written (`push`). Looked at, never taken: a
        directory it cannot lock (read-only) is taken as free."""
        from filelock import FileLock, Timeout

        if RunLock._held.get(Path(run_dir).resolve()) or not (run_dir / ".lock").is_file():
            return None
        lock = FileLock(run_dir / ".lock", timeout=0)
        try:
            lock.acquire()
        except Timeout:
            pid_file = run_dir / ".lock.pid"
            return pid_file.read_text().strip() if pid_file.is_file() else "unknown"
        except OSError:
            return None
        lock.release()
        return None

    def _clean_up(self) -> None:
        """A directory this lock created and no run was started in (bad data, nothing to play,
        a failed start) is removed again: no empty run dir is left behind."""
        if self._created and not (self.run_dir / RUN_CONFIG).exists():
            for name in (".lock", ".lock.pid"):
                (self.run_dir / name).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.run_dir.rmdir()


# ----- run.json -------------------------------------------------------------------------------


def make_run_dir(run_dir: Path) -> None:
    """Create a run directory, or say in one line why it cannot be one."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotARunDirError(f"cannot use {run_dir} as a run directory: it is a file") from None
    except OSError as exc:
        raise ProactiveBenchError(
            f"cannot write the run directory {run_dir}: {exc.strerror}"
        ) from None


def claim_run_dir(
    out_dir: Path, identity: dict[str, Any], provenance: list[dict[str, Any]] | None = None
) -> None:
    """Make `out_dir` the home of the run `identity`, or check that it already is.

    A directory holding another run is refused, naming what differs, so that runs of different
    models or settings are never mixed by a resume or a merge.
    """
    if check_run_dir(out_dir, identity) is None:
        write_run_config(out_dir, identity, provenance or [])


def check_run_dir(out_dir: Path, identity: dict[str, Any]) -> dict[str, Any] | None:
    """The `run.json` of `out_dir` when it holds the run `identity` (None when it holds no
    run yet); a run of other data, model or settings is refused, naming what differs, and so
    is a folder that is not a run's (`refuse_not_a_run`).
    Provenance (`PROVENANCE`: versions, times, endpoints) is never compared."""
    refuse_not_a_run(out_dir)
    make_run_dir(out_dir)
    path = out_dir / RUN_CONFIG
    if not path.exists():
        return None
    previous = read_run_config(out_dir)
    recorded = without_provenance(previous)
    if recorded != identity:
        changes = "; ".join(identity_differences(recorded, identity))
        raise RunMismatchError(
            f"{out_dir} holds a run with other settings ({path}: {changes}); use another "
            "--out to start a new run, or the same options to resume"
        )
    return previous


#: What `suite.run_suite` records in its OUT of the experiments it played there (`report OUT`
#: reads it); here, below the suite and its report, which both name it.
SUITE_RECORD = "suite.json"
#: The keys of a run's identity (`evaluate.run_identity`) that every experiment of one suite's
#: output shares: the data and the model (with its request settings); the rest are the
#: experiment's own settings.
ONE_SUITE_KEYS = ("data_dir", "model", "model_settings")
#: What a suite writes in OUT beside the experiments' run directories: no experiment's id, in
#: any case (a file system that ignores case, macOS's and Windows', would mix them).
SUITE_RESERVED = (REPORT_DIR, SUITE_RECORD)
#: Files that only other kinds of folders hold, and what they say the folder is: a suite's
#: output (`SUITE_RECORD`) and a report (`publish.REPORT_FILES`, `report.build.BUILT_FROM`).
NOT_A_RUN = {
    SUITE_RECORD: "a suite's output (paper or suite --out)",
    "report.json": "a report folder",
    "report.html": "a report folder",
    ".built-from.json": "a report folder",
}


def refuse_not_a_run(out_dir: Path) -> None:
    """Refuse `out_dir` as a run's home when it is a suite's output, a report folder (one
    written, or the one a run's or suite's report will be written to), a data directory or a
    folder of runs: writing a run there would put one run's files over the suite's (or inside
    a report, over the records it is played from, or over the runs it holds), and every reader
    would then take the folder for the wrong thing. Checked before anything is written, by
    every writer of a run (`check_run_dir`, a judged copy)."""
    for name, kind in NOT_A_RUN.items():
        if (out_dir / name).exists():
            _refuse_as(out_dir, f"{kind} ({out_dir / name})")
    owner = _report_folder_of(out_dir)
    if owner is not None:
        _refuse_as(out_dir, f"the folder the report of {owner} is written to")
    records = _record_file_in(out_dir)
    if records is not None:
        _refuse_as(out_dir, f"a data directory ({records})")
    if not (out_dir / RUN_CONFIG).exists():
        held = _runs_within(out_dir)
        if held is not None:
            _refuse_as(out_dir, f"a folder of runs ({held})")


def _report_folder_of(folder: Path) -> Path | None:
    """The run or suite output whose report goes to `folder` (its `REPORT_DIR`, written or
    not yet), or None."""
    where = folder.resolve()
    if where.name != REPORT_DIR:
        return None
    owner = where.parent
    held = (owner / RUN_CONFIG).is_file() or (owner / SUITE_RECORD).is_file()
    return owner if held else None


def _record_file_in(folder: Path) -> Path | None:
    """A scenario's record file in `folder` (`data.directory.scenario_file`): it is a data
    directory, or None."""
    found = (scenario_file(folder, name) for name in scenario_names())
    return next((path for path in found if path.exists()), None)


def _refuse_as(out_dir: Path, what: str) -> None:
    """Refuse `out_dir` as a run's home, saying what it is instead."""
    raise NotARunDirError(
        f"cannot write a run into {out_dir}: it is {what}, not a run directory. Give --out a "
        "new directory"
    )


def _runs_within(folder: Path) -> Path | None:
    """The run.json of a run directly inside `folder` (a suite's experiments before its
    suite.json, runs gathered in one folder), or None: a run never holds another directly."""
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return None
    return next((c / RUN_CONFIG for c in children if (c / RUN_CONFIG).is_file()), None)


def refuse_orphan_lines(out_dir: Path) -> None:
    """A results file with lines but no run.json says nothing of whose they are (another
    model's, other settings): a new run (or a judged copy) must not adopt them as its own."""
    if read_results(out_dir / RESULTS):
        raise ForeignLinesError(
            f"{out_dir / RESULTS} has result lines but {out_dir} has no {RUN_CONFIG}: whose "
            "run they are cannot be told. Move results.jsonl away, or use another --out"
        )


def write_run_config(
    out_dir: Path,
    identity: dict[str, Any],
    provenance: list[dict[str, Any]],
    selection: Selection | None = None,
    data: Mapping[str, str] | None = None,
) -> None:
    """Write `run.json`: the identity, then what the run selected
    (`selection_record.Selection`), the digests of the records it played (`datarecords`) and
    what is recorded about each invocation."""
    config = dict(identity)
    if selection is not None:
        config[SELECTION] = selection.to_json()
    if data:
        config[DATA_RECORDS] = dict(sorted(data.items(), key=lambda item: scenario_rank(item[0])))
    if provenance:
        config[PROVENANCE] = provenance
    write_whole(out_dir / RUN_CONFIG, dumps(config, indent=2) + "\n")


#: The run.json keys that record what a run did, not what it is: never compared on resume
#: or merge.
RECORDS = (PROVENANCE, SELECTION, DATA_RECORDS)


def without_provenance(config: dict[str, Any]) -> dict[str, Any]:
    """A `run.json` as the run's identity: what a resume compares (without `RECORDS`)."""
    return {k: v for k, v in config.items() if k not in RECORDS}


def provenance_of(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The provenance entries of a `run.json` (none in a run written before they existed)."""
    entries = config.get(PROVENANCE)
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """`run.json` of a run directory, or one clear error naming it."""
    path = run_dir / RUN_CONFIG
    try:
        config = loads(read_file(path).decode("utf-8"))
    except FileNotFoundError:
        raise NotARunDirError(f"{run_dir} is not a run directory (no {RUN_CONFIG})") from None
    except NotADirectoryError:  # a file given where a run directory was meant
        raise NotARunDirError(f"{run_dir} is not a run directory (a file, not a folder)") from None
    except OSError as exc:  # a folder or FIFO in run.json's place, no permission
        raise DamagedRunError(
            f"cannot read {path}: {exc.strerror or exc}; move it away to start the run afresh"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DamagedRunError(
            f"{path} is damaged ({exc}); move it away to start the run afresh"
        ) from None
    if not isinstance(config, dict):
        raise DamagedRunError(f"{path} is damaged (not a JSON object)")
    _check_provenance(config, path)
    return config


def _check_provenance(config: dict[str, Any], path: Path) -> None:
    """Refuse a `provenance` that is not a list of objects: `provenance_of` read such a one as
    no invocation at all, so how the run was stopped, and what it was played with, went
    unsaid."""
    entries = config.get(PROVENANCE, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        shown = shown_json(entries)
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        raise DamagedRunError(
            f"{path} is damaged ('{PROVENANCE}' is not a list of objects, one per invocation: "
            f"got {shown}); restore it, or remove the key"
        )


def identity_differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """`key: old → new` for every leaf that differs between two run identities."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in dict.fromkeys([*old, *new]):
            name = f"{prefix}.{key}" if prefix else str(key)
            lines += identity_differences(old.get(key), new.get(key), name)
        return lines
    if old == new:
        return []
    return [f"{prefix}: {shown_json(old)} → {shown_json(new)}"]


def shard_gaps(shards: list[tuple[Path, dict[str, Any] | None]]) -> list[str]:
    """What keeps these run directories from being the whole of one run: shards missing or
    given twice, or runs split differently. `shards` pairs each directory with the `shard` of
    its run.json (None for a run that was not split: the only shard of one)."""
    counts = {(s or {"count": 1})["count"] for _, s in shards}
    if len(counts) > 1:
        splits = ", ".join(f"{run}: {_shard_name(s)}" for run, s in shards)
        return [f"the runs were split into different numbers of shards ({splits})"]
    count = counts.pop()
    holders: dict[int, list[str]] = {}
    for run, shard in shards:
        holders.setdefault((shard or {"index": 0})["index"], []).append(str(run))
    gaps = [
        f"shard {index}/{count} given {len(runs)} times ({', '.join(runs)})"
        for index, runs in sorted(holders.items())
        if len(runs) > 1
    ]
    missing = [f"{index}/{count}" for index in range(count) if index not in holders]
    if missing:
        gaps.append(f"shard(s) {', '.join(missing)} missing")
    return gaps


def _shard_name(shard: dict[str, Any] | None) -> str:
    return "not split" if shard is None else f"shard {shard['index']}/{shard['count']}"


def merge_runs(
    run_dirs: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    partial: bool = False,
    replace: bool = False,
) -> Summary:
    """Join the run directories of the shards of one run into `out_dir`.

    The runs must share data, model and settings, and together hold every shard once;
    `partial` merges what is there anyway (an episode present in several runs is kept once,
    and the merged directory can be resumed with `eval` to play what is missing). `replace`
    lets the merge replace the results of an earlier merge of the same run in `out_dir` (a
    launched run merging its resumed shards again, `proactivebench.jobs.launch`); without it a
    directory with results is refused.
    """
    if not run_dirs:
        raise NothingToDoError("merge needs at least one run directory")
    identity: dict[str, Any] | None = None
    shards: list[tuple[Path, dict[str, Any] | None]] = []
    history: list[dict[str, Any]] = []
    configs: list[dict[str, Any]] = []
    for run in map(Path, run_dirs):
        config = read_run_config(run)
        holder = RunLock.holder(run)
        if holder is not None:  # its lines are still being written: a snapshot of half a run
            raise ProactiveBenchError(
                f"{run} is in use by another run (PID {holder}): merge it once that run ends"
            )
        configs.append(config)
        history += provenance_of(config)
        _tell_if_stopped_short(run, provenance_of(config), out_dir)
        config = without_provenance(config)
        shards.append((run, config.pop(SHARD, None)))
        if identity is None:
            identity = config
        elif config != identity:
            changes = "; ".join(identity_differences(identity, config))
            raise RunMismatchError(
                f"{run} holds a run with other data, model or settings: {changes}"
            )
    _refuse_other_records([run for run, _ in shards], configs)
    gaps = shard_gaps(shards)
    if gaps and not partial:
        raise ProactiveBenchError(
            f"not the whole run: {'; '.join(gaps)}. Merge every shard once, or pass --partial "
            "to merge what is there"
        )
    if gaps:
        log.warning("partial merge: %s", "; ".join(gaps))
    selections = [
        selection_of(config, run / RUN_CONFIG)
        for (run, _), config in zip(shards, configs, strict=True)
    ]
    if not gaps:
        _tell_if_not_one_selection(shards, selections)
    held: list[tuple[Path, list[dict[str, Any]]]] = []
    for (run, _), config in zip(shards, configs, strict=True):
        # Each shard's lines against its own selection: a line of another shard's slice
        # pasted in is named, not merged.
        found = run_lines(run, config)
        for rejected in found.rejected:
            log.warning("%s", rejected)
        held.append((run, found.lines))
    merged = _joined_lines(held)
    out = Path(out_dir)
    with RunLock(out):
        if (out / RESULTS).exists() and not replace:
            raise ProactiveBenchError(f"{out / RESULTS} exists; merge into a new directory")
        history.sort(key=lambda entry: str(entry.get("started", "")))
        # run.json is always the shards' as they are now (their selection, records and
        # provenance), whatever the folder held: results with an earlier run.json's selection
        # would be counted by merge and refused by every reader. A run of other settings is
        # refused (`check_run_dir`).
        check_run_dir(out, identity or {})
        write_run_config(
            out,
            identity or {},
            history,
            _merged_selection(selections),
            _merged_records(configs),
        )
        ordered = sorted(merged.values(), key=result_order)
        write_results(out / RESULTS, ordered)
        summary = summarize(ordered, model=str((identity or {}).get("model", "")))
        write_summary(out, summary)
    return summary


def _joined_lines(
    held: Sequence[tuple[Path, list[dict[str, Any]]]],
) -> dict[tuple[str, int], dict[str, Any]]:
    """The shards' counted lines as one run's, one per episode: a finished line before an
    error line. Two shards that hold different finished results for one episode (the shards
    partition the run, so one of them holds a line it never played: a pasted one, in a shard
    recorded before run.json named its selection) are named, and neither is counted, as
    `run_lines` does within one run: never one picked silently."""
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    holders: dict[tuple[str, int], list[str]] = {}
    conflicting: set[tuple[str, int]] = set()
    for run, lines in held:
        for result in lines:
            key = result_key(result)
            before = merged.get(key)
            finished = not result.get("error")
            if (
                before is not None
                and not before.get("error")
                and finished
                and _what_it_says(before) != _what_it_says(result)
            ):
                conflicting.add(key)
            if finished:
                holders.setdefault(key, []).append(str(run))
            if before is None or (before.get("error") and finished):
                merged[key] = result
    for key in sorted(conflicting, key=lambda k: result_order(merged[k])):
        log.warning(
            "different finished results for %s sample %s in %s; none of them counted",
            *key,
            ", ".join(holders[key]),
        )
    return {key: line for key, line in merged.items() if key not in conflicting}


def _tell_if_not_one_selection(
    shards: Sequence[tuple[Path, dict[str, Any] | None]],
    selections: Sequence[Selection | None],
) -> None:
    """Warn when the shards' recorded selections are not the N slices of one selection
    (`selection.select_records`: every N-th episode of one list): shards played with another
    `--limit` (or `--subset`, `--scenarios`) each, whose merge is a run no single command
    selects. Slices of one list never share an episode, and slice I of T episodes holds
    ceil((T - I) / N) of them. Shards that did not record their selection are not judged."""
    if len(shards) < 2 or any(s is None for s in selections):
        return
    count = len(shards)
    seen: set[tuple[str, int]] = set()
    shared = 0
    sizes: list[tuple[int, int, Path]] = []
    for (run, shard), selection in zip(shards, selections, strict=True):
        keys = _selected_keys(selection)  # type: ignore[arg-type]
        shared += len(keys & seen)
        seen |= keys
        sizes.append(((shard or {"index": 0})["index"], len(keys), run))
    total = len(seen)
    uneven = [
        f"{run}: {size}"
        for index, size, run in sorted(sizes)
        if size != -(-(total - index) // count)
    ]
    if shared or uneven:
        signs = [f"{shared} episode(s) selected by two shards"] if shared else []
        if uneven:
            signs.append(
                f"episodes per shard not those of {count} slices of {total} ({', '.join(uneven)})"
            )
        log.warning(
            "the shards did not select the slices of one run (%s): played with another --limit, "
            "--subset or --scenarios each? The merged run is what they played, not one selection",
            "; ".join(signs),
        )


def _selected_keys(selection: Selection) -> set[tuple[str, int]]:
    """Every (scenario, sample id) a selection chose."""
    return {(name, i) for name, entry in selection.scenarios.items() for i in entry.ids}


def _merged_records(configs: Sequence[dict[str, Any]]) -> dict[str, str] | None:
    """The digests of the records the shards played, joined (`datarecords`); none when a shard
    did not record them. Shards that played other records are refused first
    (`_refuse_other_records`)."""
    found = [records_of(c) for c in configs]
    if not found or any(f is None for f in found):
        return None
    return {k: v for f in found for k, v in (f or {}).items()}


def _refuse_other_records(runs: Sequence[Path], configs: Sequence[dict[str, Any]]) -> None:
    """Refuse shards that played other records (`datarecords.other_data`: the data changed
    between them): one merged run would hold two data sets' samples under one set of ids."""
    for run, config in zip(runs[1:], configs[1:], strict=True):
        why = other_data(configs[0], config)
        if why is not None:
            raise RunMismatchError(
                f"{run} was played on other data than {runs[0]} ({why}): a merged run holds "
                "one data set's episodes; merge the shards played on the same data"
            )


def _merged_selection(selections: Sequence[Selection | None]) -> Selection | None:
    """What the merged shards selected together (no shard); None when one of them did not
    record it (a run begun before run.json recorded its selection)."""
    if not selections or any(s is None for s in selections):
        return None
    whole = Selection()
    for selection in selections:
        whole = whole.joined(selection, None)  # type: ignore[arg-type]
    return whole


def _tell_if_stopped_short(
    run: Path, entries: list[dict[str, Any]], out_dir: str | os.PathLike[str]
) -> None:
    """Warn when shard `run` was stopped before it ended: killed outright (no end time in its
    last provenance entry, or a torn last line), or interrupted or stopped by an error (its
    `stopped_by`). It may lack episodes of its selection, which no merge can name, so the
    merged run must not pass for a whole one unsaid."""
    signs = []
    if entries and entries[-1].get("ended") is None:
        signs.append("run.json: its last invocation has no end time")
    elif entries and entries[-1].get("stopped_by"):
        signs.append(f"run.json: its last invocation was stopped ({entries[-1]['stopped_by']})")
    if _ends_torn(run / RESULTS):
        signs.append("results.jsonl: its last line is cut off")
    if signs:
        log.warning(
            "%s stopped before it ended (%s): the merged run may lack episodes it had in "
            "flight; `proactivebench eval ... --out %s` plays what is missing",
            run,
            "; ".join(signs),
            out_dir,
        )


def _ends_torn(path: Path) -> bool:
    """Whether the file's last line has no newline yet (a write cut short), read from its
    last byte; False for a file that is missing, empty or cannot be read."""
    try:
        with open_to_read(path) as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return False
            f.seek(size - 1)
            return f.read(1) != b"\n"
    except OSError:
        return False


def write_results(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """A whole results file at once (`merge`, `import-inspect`), as `write_whole` writes."""
    write_whole(path, jsonl(lines))


def jsonl(lines: Iterable[dict[str, Any]]) -> str:
    """Result lines as `results.jsonl` holds them: one JSON object per line, UTF-8 as is."""
    return "".join(dumps(r, ensure_ascii=False) + "\n" for r in lines)


def write_summary(out_dir: Path, summary: Summary) -> None:
    write_whole(out_dir / SUMMARY, summary_json(summary))


def summary_json(summary: Summary) -> str:
    """summary.json's text: one format for the file a run holds and the one `push` uploads."""
    return dumps(summary.as_dict(), indent=2) + "\n"


# ----- a complete run, known without reading it ------------------------------------------------


def file_stamp(path: Path) -> list[int] | None:
    """What `stat` says of a file that changes whenever it is written, replaced or removed
    (size, modification time in ns, inode); None when it does not exist."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


def _run_files(run_dir: Path) -> dict[str, list[int] | None]:
    return {name: file_stamp(run_dir / name) for name in (RESULTS, RUN_CONFIG, SUMMARY)}


class FinishedRun:
    """`.finished.json`: a run found complete (every chosen episode has a line, none an
    error), with what it was chosen from (`stamp`: the run identity, the selection settings,
    `stat` of the data's record files) and `stat` of results.jsonl, run.json and summary.json.

    A rerun whose stamp is the same, in a directory whose three files have not changed since,
    has nothing to play and the same scores: it is told so at once (`outcome`). Any change (a
    line appended, a merge, a re-judged line, an edited record file, another `--limit`) makes
    the note stale, and the rerun takes the full way: data loaded, images checked, results read.
    """

    NAME = FINISHED

    def __init__(self, stamp: dict[str, Any], outcome: dict[str, Any]) -> None:
        self.stamp = stamp
        self.outcome = outcome

    @staticmethod
    def normal(stamp: dict[str, Any]) -> dict[str, Any]:
        """`stamp` as it reads back from JSON (tuples become lists), for comparing."""
        return loads(dumps(stamp))

    @classmethod
    def read(cls, run_dir: Path, stamp: dict[str, Any] | None = None) -> FinishedRun | None:
        """The note of `run_dir` if it holds for the run's files now (and for `stamp`, when
        given), else None (none written, damaged, or stale: a full rerun then decides)."""
        try:
            note = loads(read_file(run_dir / FINISHED).decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        if not isinstance(note, dict) or not isinstance(note.get("outcome"), dict):
            return None
        if stamp is not None and note.get("stamp") != cls.normal(stamp):
            return None
        if note.get("files") != _run_files(run_dir):
            return None
        return cls(note.get("stamp") or {}, note["outcome"])

    def remember(self, run_dir: Path, key: str, value: Any) -> None:
        """Add what was derived from the run's files as they are (the answers a report
        finds unreadable) to the note, for the next rerun to tell without reading them; the
        caller holds the run's `RunLock`. A note gone stale meanwhile is left alone."""
        if FinishedRun.read(run_dir, self.stamp) is None:
            return
        self.outcome[key] = value
        with contextlib.suppress(WriteError):  # only a saving: the next rerun reads the lines
            self.write(run_dir)

    def write(self, run_dir: Path) -> None:
        """Record the run as complete, as its files are now (after summary.json is written)."""
        note = {"stamp": self.stamp, "files": _run_files(run_dir), "outcome": self.outcome}
        write_whole(run_dir / FINISHED, dumps(note, ensure_ascii=False) + "\n")
