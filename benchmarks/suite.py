"""The paper's suite (`proactivebench paper`) against a server that takes 50 ms per request.

Its multiple-choice experiments (the open-ended ones need a judge; without one the suite skips
them, as the command does) are played side by side by `suite.run_suite` on synthetic data,
against the fake server of `tests/openai_server.py` in *another process* (its answers a hash of
the request, so episodes take varied numbers of turns), with a fresh response cache:

1. the saving: the requests the suite asked (the server's own count) against the sum the
   experiments would ask alone (each episode's turns, one request each, from the results),
   and the suite's own count of answers taken from another experiment's request;
2. the wall time against the latency bound of the unique requests: max(the longest
   episode's turns, unique requests / requests in flight) × latency, the time no client
   could beat; the target is at least 60 % of it.

    python benchmarks/suite.py [--per-scenario 20] [--latency 0.05] [--concurrency 8]
                               [--requests-in-flight 32]
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

from openai_server import ServerProcess  # noqa: E402
from proactivebench.data.synth import generate  # noqa: E402
from proactivebench.models import load_model  # noqa: E402
from proactivebench.models.cache import ResponseCache  # noqa: E402
from proactivebench.settings import RunOptions  # noqa: E402
from proactivebench.suite import paper_suite, run_suite  # noqa: E402

MODEL = "bench-vlm"


def turns(run_dir: Path) -> list[int]:
    """Each episode's turns (its requests) in a run directory."""
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    return [json.loads(line)["num_turns"] for line in lines if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8, help="episodes per experiment")
    parser.add_argument("--requests-in-flight", type=int, default=32)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    experiments = [e for e in paper_suite().experiments if not e.judged]
    options = RunOptions(concurrency=args.concurrency, requests_in_flight=args.requests_in_flight)
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(latency=args.latency) as server:
        root = Path(tmp)
        generate(root / "data", per_scenario=args.per_scenario, seed=0)
        cache = ResponseCache(root / "cache.sqlite")
        started = time.perf_counter()
        outcome = asyncio.run(
            run_suite(
                root / "data",
                experiments,
                root / "out",
                model=lambda: load_model(f"openai:{MODEL}@{server.url}", timeout=30),
                options=options,
                cache=cache,
            )
        )
        wall = time.perf_counter() - started
        cache.close()
        assert not outcome.failed, [e.reason for e in outcome.failed]
        per = {e.experiment.id: turns(e.out_dir) for e in outcome.experiments}
    alone = sum(sum(t) for t in per.values())
    longest = max(max(t) for t in per.values())
    unique = outcome.asked
    bound = max(longest, unique / args.requests_in_flight) * args.latency
    print(f"experiments: {', '.join(per)} ({sum(len(t) for t in per.values())} episodes)")
    print(
        f"requests: {unique} asked; {alone} if each experiment ran alone; saved "
        f"{alone - unique} ({100 * (alone - unique) / alone:.1f} %); the suite's count: "
        f"{outcome.saved}"
    )
    print(
        f"wall {wall:.2f} s; latency bound {bound:.2f} s (longest episode {longest} turns, "
        f"{unique} requests / {args.requests_in_flight} in flight x {args.latency * 1000:.0f} "
        f"ms); {100 * bound / wall:.0f} % of the bound"
    )


if __name__ == "__main__":
    main()
