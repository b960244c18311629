"""Start-up: how long `proactivebench eval` takes from its start to its first model request.

A user waits this long on every run, resumed runs and `--limit` trials included: the
interpreter, the imports, loading and validating the records, the check that every image an
episode may show exists, and opening the run directory and the response cache. The command
runs as a user runs it (a new process, the console script) on a synthetic set of 7 × 100
samples against the fake OpenAI server of the tests, which notes when the first chat request
arrives (both clocks are the system's monotonic clock). The first run is a warm-up: it fills
the page cache and writes the compiled modules, as any earlier use on a user's machine has.

    python benchmarks/startup.py [--per-scenario 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from proactivebench.data.synth import generate  # noqa: E402
from proactivebench.testing.server import FakeOpenAI  # noqa: E402


def first_request_after_start(data: Path, scratch: Path, url: str, fake: FakeOpenAI) -> float:
    """Seconds from spawning `proactivebench eval` to the server's first chat request."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    command = [
        *(os.path.join(os.path.dirname(sys.executable), "proactivebench"),),
        "eval",
        "--data",
        str(data),
        "--model",
        f"openai:bench-vlm@{url}",
        "--out",
        str(out / "run"),
        "--cache",
        str(out / "cache.sqlite"),
    ]
    # As on a user's machine, compiled modules are cached (the first, warm-up run writes them).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    seen = len(fake.chat_requests)
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, env=env)
    first = min(r.time for r in fake.chat_requests[seen:])
    return first - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        scratch = Path(tmp)
        data = scratch / "data"
        generate(data, per_scenario=args.per_scenario, seed=0)
        first_request_after_start(data, scratch, fake.url, fake)  # warm the page cache
        times = [
            first_request_after_start(data, scratch, fake.url, fake) for _ in range(args.repeats)
        ]
    print(f"data: synthetic, {args.per_scenario} per scenario ({7 * args.per_scenario} records)")
    print(f"start to first request, median of {args.repeats}: {statistics.median(times):.3f} s")
    print(f"  every run: {', '.join(f'{t:.3f}' for t in times)} s")


if __name__ == "__main__":
    main()
