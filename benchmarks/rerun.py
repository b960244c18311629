"""A rerun of a finished run: what it costs, against a fresh run, this version and an earlier one.

Each version plays one synthetic data set (7 × `--per-scenario` samples, `baseline:oracle`) into
a run directory of its own, as a user would from the shell (`proactivebench eval`, a process per
step, timed from spawn to exit), in this order:

1. **fresh**: `eval --no-report` into an empty directory (the data loaded, every image
   checked, every episode played);
2. **rerun, --no-report**: the same command again (nothing left to play);
3. `eval` with its report, the first time (not compared: it writes the report);
4. **rerun, default**: the same command again (nothing left to play; the report up to date).

Rounds alternate which version goes first; medians are printed, with each step's ratio to the
same version's fresh run, and new / old. The earlier version is checked out from git into a
temporary worktree (`versions.py`'s way) and run by the same interpreter.

    python benchmarks/rerun.py [--baseline 66fa9fe] [--per-scenario 1000] [--rounds 3]
                               [--data DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from versions import ROOT, baseline_tree, console_script, environment

STEPS = ("fresh", "rerun, --no-report", "first report", "rerun, default")


def timed_eval(tree: Path, data: Path, out: Path, *extra: str) -> float:
    """Seconds from spawn to exit of `proactivebench eval` of the oracle with `tree`'s code."""
    command = [console_script(), "eval", "--data", str(data), "--model", "baseline:oracle"]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--out", str(out), *extra],
        capture_output=True,
        text=True,
        env=environment(tree / "src"),
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"eval failed ({tree}):\n{done.stdout}\n{done.stderr}")
    return seconds


def one_round(tree: Path, data: Path, out: Path) -> dict[str, float]:
    shutil.rmtree(out, ignore_errors=True)
    return {
        "fresh": timed_eval(tree, data, out, "--no-report"),
        "rerun, --no-report": timed_eval(tree, data, out, "--no-report"),
        "first report": timed_eval(tree, data, out),
        "rerun, default": timed_eval(tree, data, out),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="66fa9fe", help="git ref of the earlier version")
    parser.add_argument("--per-scenario", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None, help="a synthetic set to reuse")
    args = parser.parse_args()
    times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        data = args.data or scratch / "data"
        if args.data is None:
            synth = [console_script(), "data", "synth", "--out", str(data)]
            subprocess.run(
                [*synth, "--per-scenario", str(args.per_scenario)],
                check=True,
                capture_output=True,
                env=environment(ROOT / "src"),
            )
        with baseline_tree(args.baseline, scratch) as old:
            trees = {"old": old, "new": ROOT}
            for round_ in range(args.rounds):
                order = ["old", "new"] if round_ % 2 == 0 else ["new", "old"]
                for name in order:
                    measured = one_round(trees[name], data, scratch / f"run-{name}")
                    for step, seconds in measured.items():
                        times[name].setdefault(step, []).append(seconds)
                print(f"round {round_ + 1} of {args.rounds} done", flush=True)
    print(f"\ndata: {data} ({args.per_scenario} per scenario), old = {args.baseline}")
    print(f"medians over {args.rounds} rounds, seconds from spawn to exit of each eval")
    print(f"{'step':22s} {'old':>8s} {'/ fresh':>8s} {'new':>8s} {'/ fresh':>8s} {'new/old':>8s}")
    medians = {n: {s: statistics.median(v) for s, v in t.items()} for n, t in times.items()}
    for step in STEPS:
        old, new = medians["old"][step], medians["new"][step]
        old_share = old / medians["old"]["fresh"]
        new_share = new / medians["new"]["fresh"]
        print(
            f"{step:22s} {old:8.2f} {old_share:7.0%} {new:9.2f} {new_share:7.0%} {new / old:8.2f}"
        )
    for name in ("old", "new"):
        runs = "; ".join(f"{s} " + ", ".join(f"{x:.2f}" for x in times[name][s]) for s in STEPS)
        print(f"  {name}: {runs}")


if __name__ == "__main__":
    main()
