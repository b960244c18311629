"""`proactivebench judge` (re-judging a finished OEG run) against a judge that takes 0.3 s per
answer: this version and an earlier one, side by side in one run.

A judge is a large model behind a server; what the client must do is keep enough of its
requests in flight that the latency overlaps, as `eval` does for the tested model. This script:

1. makes one open-ended run of 70 episodes (10 synthetic samples of each scenario) against
   the fake server of `testing.server`, whose generations the judge then reads;
2. re-judges it with `proactivebench judge ... --no-cache --no-report` (a whole process, as a
   user runs it) against the fake server in *another process* (so that client and server share
   the cores), with 1 vote and with 4 votes, by each version in turn: the earlier one from a
   git worktree (as `benchmarks/versions.py` does), run by the same interpreter; rounds
   alternate the order, medians are printed;
3. measures each version's fixed cost: the same command against a server that answers at
   once (start-up, imports, reading and writing the run);
4. prints the latency bound, the time no client could beat: with `--concurrency C` lines in
   flight, each asking its V votes together, C x V requests are in flight, so 70 lines take
   max(1, ceil(70 V / (C V))) waves of one latency. The votes of a line do not depend on each
   other. The earlier version judges one line at a time (its bound: 70 latencies);
5. checks that both versions wrote the same results (every `results.jsonl` line and
   `summary.json` equal).

The judge's answers are a key (`--answers` of the fake server): a verdict for each line, by
the fingerprint of its request, so that every vote parses.

    python benchmarks/judge.py [--baseline 66fa9fe] [--rounds 3] [--latency 0.3]
                               [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from versions import baseline_tree, console_script, environment  # noqa: E402

from proactivebench.data.synth import generate  # noqa: E402
from proactivebench.jobs.evaluate import evaluate  # noqa: E402
from proactivebench.models import load_model  # noqa: E402
from proactivebench.run.judge import Judge, judge_messages  # noqa: E402
from proactivebench.run.rundir import read_results  # noqa: E402
from proactivebench.run.settings import EvalSettings  # noqa: E402
from proactivebench.testing.server import FakeOpenAI, ServerProcess, fingerprint  # noqa: E402

PER_SCENARIO = 10  # 7 scenarios: 70 lines
VOTES = (1, 4)


def make_run(scratch: Path) -> tuple[Path, Path]:
    """An OEG run of 70 episodes, and the judge's answer key for its lines."""
    data = scratch / "data"
    generate(data, per_scenario=PER_SCENARIO, seed=0)
    run = scratch / "run"
    with FakeOpenAI(record=False) as fake:
        model = load_model(f"openai:tested@{fake.url}")
        first = Judge(load_model(f"openai:first-judge@{fake.url}"))
        evaluate(data, model, run, EvalSettings(mode="oeg"), judge=first)
    answers = {}
    for line in read_results(run / "results.jsonl"):
        valid = line["valid_answers_text"]
        messages = judge_messages(line["prompt"], valid, line["generation"])
        entries = [part for part in valid.split(",") if part.strip()]
        # The first entry is found in every other line: verdicts of both kinds.
        marks = ["1" if i == 0 and line["sample_id"] % 2 == 0 else "0" for i in entries]
        answers[fingerprint(messages)] = ", ".join(marks)
    key = scratch / "answers.json"
    key.write_text(json.dumps(answers))
    return run, key


def judge_once(
    tree: Path, run: Path, out: Path, url: str, votes: int, concurrency: int | None
) -> float:
    """Wall time of one `proactivebench judge` process of `tree`'s version into `out`."""
    shutil.rmtree(out, ignore_errors=True)
    command = [console_script(), "judge", str(run), "--judge", f"openai:judge@{url}"]
    command += ["--judge-votes", str(votes), "--out", str(out), "--no-cache", "--no-report"]
    if concurrency is not None:
        command += ["--concurrency", str(concurrency)]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=environment(tree / "src"))
    return time.perf_counter() - started


def written(out: Path) -> tuple[str, str]:
    return (out / "results.jsonl").read_text(), (out / "summary.json").read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="66fa9fe", help="git ref of the earlier version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=8, help="lines in flight (new)")
    args = parser.parse_args()
    walls: dict[tuple[str, int], list[float]] = {}
    starts: dict[str, list[float]] = {"old": [], "new": []}
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        run, key = make_run(scratch)
        lines = len(read_results(run / "results.jsonl"))
        with baseline_tree(args.baseline, scratch) as old:
            trees = {"old": old, "new": ROOT}
            with (
                ServerProcess(latency=args.latency, answers=key) as server,
                ServerProcess(latency=0.0, answers=key) as instant,
            ):
                for round_ in range(args.rounds):
                    order = ["old", "new"] if round_ % 2 == 0 else ["new", "old"]
                    for name in order:
                        concurrency = args.concurrency if name == "new" else None
                        out = scratch / f"{name}-fixed"
                        fixed = judge_once(trees[name], run, out, instant.url, 1, concurrency)
                        starts[name].append(fixed)
                        for votes in VOTES:
                            out = scratch / f"{name}-{votes}"
                            wall = judge_once(trees[name], run, out, server.url, votes, concurrency)
                            walls.setdefault((name, votes), []).append(wall)
                    for votes in VOTES:
                        same &= written(scratch / f"old-{votes}") == written(
                            scratch / f"new-{votes}"
                        )
                    print(f"round {round_ + 1} of {args.rounds} done", flush=True)
    report(args, lines, walls, starts, same)


def report(
    args: argparse.Namespace,
    lines: int,
    walls: dict[tuple[str, int], list[float]],
    starts: dict[str, list[float]],
    same: bool,
) -> None:
    latency, concurrency = args.latency, args.concurrency
    print(
        f"\n{lines} lines, judge latency {args.latency} s, new version at --concurrency "
        f"{concurrency} (old: one line at a time); medians of {args.rounds} rounds"
    )
    start = {name: statistics.median(values) for name, values in starts.items()}
    print(
        f"fixed cost (the same command, 1 vote, against a server that answers at once: start-up, "
        f"reading, writing): old {start['old']:.2f} s, new {start['new']:.2f} s"
    )
    header = f"{'votes':>5s} {'old (s)':>8s} {'new (s)':>8s} {'old/new':>8s} {'bound (s)':>9s}"
    print(f"{header} {'new/bound':>9s} {'(new - fixed)/bound':>19s}")
    for votes in VOTES:
        old = statistics.median(walls[("old", votes)])
        new = statistics.median(walls[("new", votes)])
        in_flight = concurrency * votes
        bound = max(1, math.ceil(lines * votes / in_flight)) * latency
        judging = (new - start["new"]) / bound
        print(
            f"{votes:5d} {old:8.2f} {new:8.2f} {old / new:8.1f} {bound:9.2f} "
            f"{new / bound:9.2f} {judging:19.2f}"
        )
        every = lambda v: ", ".join(f"{x:.2f}" for x in v)  # noqa: E731
        print(f"      runs: old {every(walls[('old', votes)])}; new {every(walls[('new', votes)])}")
    print(f"same results.jsonl and summary.json, old and new: {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit("the two versions' results differ")


if __name__ == "__main__":
    main()
