"""The whole `proactivebench eval --no-report` process against a 50 ms server: c64 vs c1.

`throughput.py` times `evaluate` inside one Python process; a user waits for the whole
command: the interpreter, the imports, loading and checking the data, the run, the last
fsync. This script times that command as a user runs it (`python -m proactivebench`, a
new process, compiled modules cached), spawn to exit, on the benchmark of issue 34: about
400 episodes of 640×480 photo-like JPEGs (`official_size.py`; 57 per scenario: 399
episodes, 456 turns), against the fake server of `proactivebench.testing.server` in another
process answering each request after 50 ms with the oracle's answer (so that every run sends
the same requests; the script checks that each run scores 100 % with no error). Each run
gets a fresh run directory and a fresh response cache. It prints, as medians:

- wall time at `--concurrency 64` and at 1, and their ratio (the speed-up);
- the efficiency at 64 against the latency bound, max(longest episode's turns, all turns /
  64) × latency: the wall time no client could beat;
- the process's CPU time (user + system, all threads; `os.wait4`), and that CPU per turn.

    python benchmarks/eval_process.py [--per-scenario 57] [--repeats 3] [--low-repeats 1]
                                      [--latency 0.05] [--profile-with py-spy]

Rounds alternate so that the machine's load falls on both concurrencies alike. With
`--profile-with py-spy` (py-spy on PATH or beside the interpreter) one more c64 run is
recorded (`--profile-out`: a flame graph if it ends in .svg, else py-spy's collapsed stacks)
for all its threads, idle time left out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from throughput import MODEL, AnswerKeyRecorder, make_data, turns_per_episode  # noqa: E402

from proactivebench.jobs.evaluate import evaluate  # noqa: E402
from proactivebench.testing.server import ServerProcess  # noqa: E402


@dataclass
class ProcessRun:
    wall: float
    cpu: float


def eval_process(
    data: Path, url: str, scratch: Path, concurrency: int, wrap: list[str] | None = None
) -> ProcessRun:
    """Spawn `proactivebench eval --no-report` into a fresh run directory and cache; its wall
    time, spawn to exit, and its CPU time (user + system of it and its threads)."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    command = [
        sys.executable,
        "-m",
        "proactivebench",
        "eval",
        "--data",
        str(data),
        "--model",
        f"openai:{MODEL}@{url}",
        "--out",
        str(out / "run"),
        "--cache",
        str(out / "cache.sqlite"),
        "--concurrency",
        str(concurrency),
        "--no-report",
    ]
    # As on a user's machine, compiled modules are cached (the warm-up run writes them).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    # Its messages go to a file, not a pipe: a pipe nobody reads while we wait could fill.
    with (out / "stderr.txt").open("w+b") as messages:
        process = subprocess.Popen(
            [*(wrap or []), *command], stdout=subprocess.DEVNULL, stderr=messages, env=env
        )
        _pid, status, usage = os.wait4(process.pid, 0)  # its own CPU time, threads included
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            messages.seek(0)
            errors = messages.read().decode(errors="replace")
            raise SystemExit(f"eval at concurrency {concurrency} failed:\n{errors}")
    summary = json.loads((out / "run" / "summary.json").read_text())
    for short, score in summary["scenarios"].items():
        if score.get("errors") or score.get("accuracy") != 100.0:
            raise SystemExit(f"c{concurrency}: {short} scored {score} (answer key mismatch?)")
    return ProcessRun(wall, usage.ru_utime + usage.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=57)
    parser.add_argument("--images", choices=("official", "synthetic"), default="official")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3, help="runs at concurrency 64")
    parser.add_argument("--low-repeats", type=int, default=1, help="runs at concurrency 1")
    parser.add_argument("--profile-with", choices=("py-spy",), default=None)
    parser.add_argument("--profile-out", type=Path, default=Path("eval-process.svg"))
    args = parser.parse_args()
    high: list[ProcessRun] = []
    low: list[ProcessRun] = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        data, settings = make_data(scratch, args.per_scenario, args.images)
        key = AnswerKeyRecorder()
        lengths = turns_per_episode(evaluate(data, key, scratch / "key", settings, concurrency=8))
        answers = scratch / "answers.json"
        answers.write_text(json.dumps(key.answers))
        with ServerProcess(latency=args.latency, answers=answers) as server:
            eval_process(data, server.url, scratch, 64)  # warm-up: page cache, .pyc files
            for round_ in range(max(args.repeats, args.low_repeats)):
                plan = [(64, high)] * (round_ < args.repeats) + [(1, low)] * (
                    round_ < args.low_repeats
                )
                for concurrency, runs in plan if round_ % 2 == 0 else plan[::-1]:
                    runs.append(eval_process(data, server.url, scratch, concurrency))
            if args.profile_with == "py-spy":
                spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
                kind = "flamegraph" if args.profile_out.suffix == ".svg" else "raw"
                record = [spy, "record", "--rate", "500", "--format", kind, "--output"]
                eval_process(
                    data, server.url, scratch, 64, [*record, str(args.profile_out.resolve()), "--"]
                )
    turns = sum(lengths)
    bound = max(max(lengths), turns / 64) * args.latency
    wall_high = statistics.median(r.wall for r in high)
    wall_low = statistics.median(r.wall for r in low) if low else float("nan")
    cpu_high = statistics.median(r.cpu for r in high)
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average at the end {load:.2f}")
    print(f"data: {args.per_scenario} per scenario, {len(lengths)} episodes, {turns} turns")
    print(f"server latency per request           : {args.latency * 1000:.0f} ms")
    print(f"whole process, concurrency 1         : {wall_low:8.2f} s (median of {len(low)})")
    print(f"whole process, concurrency 64        : {wall_high:8.2f} s (median of {len(high)})")
    print(f"  the runs at 64                     : {', '.join(f'{r.wall:.2f}' for r in high)} s")
    print(f"speed-up 64 vs 1                     : {wall_low / wall_high:8.1f}x")
    print(f"latency bound at 64                  : {bound:8.2f} s")
    print(f"efficiency at 64 (bound / wall)      : {100 * bound / wall_high:8.0f} %")
    print(f"process CPU, concurrency 64          : {cpu_high:8.2f} s")
    print(f"process CPU per turn, concurrency 64 : {cpu_high / turns * 1000:8.2f} ms")
    if args.profile_with:
        print(f"flame graph of one more c64 run      : {args.profile_out}")


if __name__ == "__main__":
    main()
