"""The paper's suite (`proactivebench paper`) against a server that takes 50 ms per request.

Its multiple-choice experiments (the open-ended ones need a judge; without one the suite skips
them, as the command does) are played side by side by `suite.run_suite` on synthetic data,
against the fake server of `testing.server` in *another process* (its answers a hash of
the request, so episodes take varied numbers of turns), with a fresh response cache:

1. the saving: the requests the suite asked against the sum the experiments ask when each
   runs alone (with a cache of its own), and the suite's own count of answers taken from
   another experiment's request (they must agree);
2. the wall time against the latency bound of the unique requests: max(the longest
   episode's turns, unique requests / requests in flight) × latency, the time no client
   could beat; the target is at least 60 % of it. Measured at each limit on requests in
   flight given (default 8, the command's at --concurrency 8, and 32).

    python benchmarks/suite.py [--per-scenario 20] [--latency 0.05] [--concurrency 8]
                               [--requests-in-flight 8,32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from proactivebench.data.synth import generate  # noqa: E402
from proactivebench.jobs.suite import SuiteOutcome, paper_suite, run_suite  # noqa: E402
from proactivebench.models import load_model  # noqa: E402
from proactivebench.models.cache import ResponseCache  # noqa: E402
from proactivebench.run.settings import RunOptions  # noqa: E402
from proactivebench.testing.server import ServerProcess  # noqa: E402

MODEL = "bench-vlm"


def play(
    data: Path, experiments: list, out: Path, url: str, options: RunOptions
) -> tuple[SuiteOutcome, float]:
    """The suite of `experiments` into `out` with a fresh cache: its outcome and wall time."""
    cache = ResponseCache(out / "cache.sqlite")
    started = time.perf_counter()
    outcome = asyncio.run(
        run_suite(
            data,
            experiments,
            out,
            model=lambda: load_model(f"openai:{MODEL}@{url}", timeout=30),
            options=options,
            cache=cache,
        )
    )
    wall = time.perf_counter() - started
    cache.close()
    assert not outcome.failed, [e.reason for e in outcome.failed]
    return outcome, wall


def longest_episode(outcome: SuiteOutcome) -> int:
    """The most turns of one episode (a chain of requests no concurrency shortens)."""
    most = 0
    for entry in outcome.experiments:
        for line in (entry.out_dir / "results.jsonl").read_text().splitlines():
            if line.strip():
                most = max(most, json.loads(line)["num_turns"])
    return most


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8, help="episodes per experiment")
    parser.add_argument(
        "--requests-in-flight",
        default="8,32",
        help="comma-separated limits to measure (8: the command's default at --concurrency 8)",
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    experiments = [e for e in paper_suite().experiments if not e.judged]
    limits = [int(n) for n in args.requests_in_flight.split(",")]
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(latency=args.latency) as server:
        root = Path(tmp)
        data = root / "data"
        generate(data, per_scenario=args.per_scenario, seed=0)
        # Each experiment alone, with a cache of its own: what it asks without the others.
        alone = {}
        for experiment in experiments:
            options = RunOptions(concurrency=args.concurrency, requests_in_flight=limits[0])
            outcome, _ = play(
                data, [experiment], root / f"alone-{experiment.id}", server.url, options
            )
            alone[experiment.id] = outcome.asked
        together = []
        for limit in limits:
            options = RunOptions(concurrency=args.concurrency, requests_in_flight=limit)
            outcome, wall = play(data, experiments, root / f"suite-{limit}", server.url, options)
            together.append((limit, outcome, wall, longest_episode(outcome)))
    total = sum(alone.values())
    episodes = sum(e.outcome.summary_episodes() for e in together[0][1].experiments if e.outcome)
    print(f"experiments: {', '.join(alone)} ({episodes} episodes)")
    for limit, outcome, wall, longest in together:
        unique = outcome.asked
        bound = max(longest, unique / limit) * args.latency
        print(
            f"{limit} requests in flight: {unique} asked, {total} asked alone in all: saved "
            f"{total - unique} ({100 * (total - unique) / total:.1f} %), the suite's count "
            f"{outcome.saved}; wall {wall:.2f} s, latency bound {bound:.2f} s (longest episode "
            f"{longest} turns, {unique} / {limit} x {args.latency * 1000:.0f} ms): "
            f"{100 * bound / wall:.0f} % of the bound"
        )


if __name__ == "__main__":
    main()
