"""The run directory: what a run is (`run.json`), what each episode gave (`results.jsonl`),
and writing, reading, resuming, locking and merging them.

`results.jsonl` gets one line per finished episode (`results.EpisodeResult` /
`results.OEGResult`), appended and fsynced as episodes end; `run.json` holds the run's identity:
the data, the model and every setting that changes play, so that a rerun resumes only the
same run; `summary.json` the per-scenario table.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from proactivebench.errors import ProactiveBenchError, RunMismatchError
from proactivebench.metrics import Summary, summarize
from proactivebench.results import (
    EpisodeResult,
    OEGResult,
    is_oeg_line,
    result_key,
    result_order,
)
from proactivebench.texts import loads

log = logging.getLogger(__name__)

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
#: The run.json key of a sharded run: {"index": I, "count": N}.
SHARD = "shard"
RUN_CONFIG = "run.json"


# ----- results.jsonl --------------------------------------------------------------------------


class ResultsFile:
    """`results.jsonl`: one line per finished episode, appended, flushed and fsynced.

    Lines are whole writes, so a killed process leaves at most one torn last line, which the
    next open removes; `write` + `sync` let the scheduler group-commit what finished together.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._repair_tail()
        self._handle = path.open("a", encoding="utf-8")

    def _repair_tail(self) -> None:
        """Drop a last line cut short by a crash, so appending cannot glue two records."""
        if not self.path.exists():
            return
        with self.path.open("r+b") as f:
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
        """Append and flush (the lines survive a killed process from here on)."""
        lines = (r if isinstance(r, dict) else r.to_json() for r in results)
        self._handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
        self._handle.flush()

    def sync(self) -> None:
        """fsync: the lines survive a machine crash from here on."""
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


def read_results(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a results file, as JSON objects.

    A torn last line (a write cut short by a crash, with no newline yet) is ignored; any other
    line that is not a result (bad bytes, not JSON, no scenario or sample id) is an error that
    names the file and line, since resuming over it could lose or repeat episodes.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ProactiveBenchError(f"cannot read {path}: {exc.strerror}") from None
    lines = data.split(b"\n")
    if lines and lines[-1].strip():
        lines[-1] = b""  # the torn tail
    results = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            line = loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ProactiveBenchError(f"{path}:{number}: not a result line ({exc})") from None
        if not (
            isinstance(line, dict)
            and isinstance(line.get("scenario"), str)
            and isinstance(line.get("sample_id"), int)
        ):
            raise ProactiveBenchError(
                f"{path}:{number}: not a result line (needs a scenario and a sample_id)"
            )
        results.append(line)
    return results


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
    """Holds a run directory for one process: a second run into it ends at once, naming the
    process that holds it (two runs appending to one results file would both play everything).

    An advisory lock (`filelock`) on `RUN_DIR/.lock`, released when the process ends, however it
    ends; the holder's PID is written beside it, for the message.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._lock: Any = None
        self._created = False

    def __enter__(self) -> RunLock:
        from filelock import FileLock, Timeout

        self._created = not self.run_dir.exists()
        make_run_dir(self.run_dir)
        pid_file = self.run_dir / ".lock.pid"
        self._lock = FileLock(self.run_dir / ".lock", timeout=0)
        try:
            self._lock.acquire()
        except Timeout:
            holder = pid_file.read_text().strip() if pid_file.exists() else "unknown"
            raise ProactiveBenchError(
                f"{self.run_dir} is in use by another run (PID {holder}); wait for it to end, "
                "or use another --out"
            ) from None
        pid_file.write_text(f"{os.getpid()}\n")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is None:
            return
        self._lock.release()
        if self._created and not (self.run_dir / RUN_CONFIG).exists():
            # The run never started (bad data, nothing to play): leave no empty run dir behind.
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
        raise ProactiveBenchError(
            f"cannot use {run_dir} as a run directory: it is a file"
        ) from None
    except OSError as exc:
        raise ProactiveBenchError(
            f"cannot write the run directory {run_dir}: {exc.strerror}"
        ) from None


def claim_run_dir(out_dir: Path, identity: dict[str, Any]) -> None:
    """Make `out_dir` the home of the run `identity`, or check that it already is.

    A directory holding another run is refused, naming what differs, so that runs of different
    models or settings are never mixed by a resume or a merge.
    """
    make_run_dir(out_dir)
    path = out_dir / RUN_CONFIG
    if not path.exists():
        try:
            path.write_text(json.dumps(identity, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ProactiveBenchError(f"cannot write {path}: {exc.strerror}") from None
        return
    previous = read_run_config(out_dir)
    if previous != identity:
        changes = "; ".join(_differences(previous, identity))
        raise RunMismatchError(
            f"{out_dir} holds a run with other settings ({path}: {changes}); use another "
            "--out to start a new run, or the same options to resume"
        )


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """`run.json` of a run directory, or one clear error naming it."""
    path = run_dir / RUN_CONFIG
    try:
        config = loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProactiveBenchError(f"{run_dir} is not a run directory (no {RUN_CONFIG})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProactiveBenchError(
            f"{path} is damaged ({exc}); move it away to start the run afresh"
        ) from None
    if not isinstance(config, dict):
        raise ProactiveBenchError(f"{path} is damaged (not a JSON object)")
    return config


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """`key: old → new` for every leaf that differs between two run identities."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in dict.fromkeys([*old, *new]):
            name = f"{prefix}.{key}" if prefix else str(key)
            lines += _differences(old.get(key), new.get(key), name)
        return lines
    if old == new:
        return []
    return [f"{prefix}: {json.dumps(old)} → {json.dumps(new)}"]


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
) -> Summary:
    """Join the run directories of the shards of one run into `out_dir`.

    The runs must share data, model and settings, and together hold every shard once;
    `partial` merges what is there anyway (an episode present in several runs is kept once,
    and the merged directory can be resumed with `eval` to play what is missing).
    """
    if not run_dirs:
        raise ProactiveBenchError("merge needs at least one run directory")
    identity: dict[str, Any] | None = None
    shards: list[tuple[Path, dict[str, Any] | None]] = []
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for run in map(Path, run_dirs):
        config = read_run_config(run)
        shards.append((run, config.pop(SHARD, None)))
        if identity is None:
            identity = config
        elif config != identity:
            changes = "; ".join(_differences(identity, config))
            raise RunMismatchError(
                f"{run} holds a run with other data, model or settings: {changes}"
            )
    gaps = shard_gaps(shards)
    if gaps and not partial:
        raise ProactiveBenchError(
            f"not the whole run: {'; '.join(gaps)}. Merge every shard once, or pass --partial "
            "to merge what is there"
        )
    if gaps:
        log.warning("partial merge: %s", "; ".join(gaps))
    for run, _ in shards:
        for result in latest_results(read_results(run / RESULTS)):
            key = result_key(result)
            if key not in merged or (merged[key].get("error") and not result.get("error")):
                merged[key] = result
    out = Path(out_dir)
    if (out / RESULTS).exists():
        raise ProactiveBenchError(f"{out / RESULTS} exists; merge into a new directory")
    claim_run_dir(out, identity or {})
    ordered = sorted(merged.values(), key=result_order)
    with (out / RESULTS).open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in ordered)
    summary = summarize(ordered, model=str((identity or {}).get("model", "")))
    write_summary(out, summary)
    return summary


def write_summary(out_dir: Path, summary: Summary) -> None:
    (out_dir / SUMMARY).write_text(json.dumps(summary.as_dict(), indent=2) + "\n", encoding="utf-8")
