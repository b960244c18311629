"""Episodes per second of the engine with the oracle, against a plain sequential loop.

The plain loop is what a first implementation does (and what the reference package's example
does): one episode after another, and every turn opens, decodes and transforms its image from
disk before asking the model. Our engine does no image work for backends that do not look at
images (baselines, replay), keeps episodes in flight concurrently and fsyncs each result line.

    python benchmarks/engine.py [--per-scenario 100] [--repeats 3]

Prints the median of each side over the repeats and their ratio, measured in one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image

from proactivebench.benchmark.registry import make_episode
from proactivebench.data.directory import load_dataset
from proactivebench.data.images import apply_view
from proactivebench.data.synth import generate
from proactivebench.jobs.evaluate import evaluate, select_records
from proactivebench.models import load_model


def engine_run(data: Path, scratch: Path) -> tuple[float, int]:
    """Wall time of `evaluate` with the oracle; returns (seconds, episodes)."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    start = time.perf_counter()
    outcome = evaluate(data, load_model("baseline:oracle"), out, concurrency=8)
    elapsed = time.perf_counter() - start
    return elapsed, sum(s.n for s in outcome.summary.scenarios.values())


def plain_loop(data: Path) -> tuple[float, int]:
    """One episode at a time, every turn's image reloaded from disk; no result file."""
    start = time.perf_counter()
    dataset = load_dataset(data)
    episodes = 0
    for record in select_records(dataset, None):
        episode = make_episode(record)
        while not episode.done:
            view = episode.observation.view
            with Image.open(data / view.image) as raw:
                apply_view(raw.convert("RGB"), view)
            episode.step(episode.oracle_answer())
        episodes += 1
    return time.perf_counter() - start, episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        data = scratch / "data"
        generate(data, per_scenario=args.per_scenario, seed=0)
        engine, plain = [], []
        for _ in range(args.repeats):  # interleaved, so drift in machine load hits both sides
            seconds, n = engine_run(data, scratch)
            engine.append(n / seconds)
            seconds, n = plain_loop(data)
            plain.append(n / seconds)
    engine_eps, plain_eps = statistics.median(engine), statistics.median(plain)
    print(f"episodes per run           : {n}")
    print(f"engine (oracle), median    : {engine_eps:10.1f} episodes/s  {engine}")
    print(f"plain loop + image reload  : {plain_eps:10.1f} episodes/s  {plain}")
    print(f"ratio engine / plain       : {engine_eps / plain_eps:10.2f}x")


if __name__ == "__main__":
    main()
