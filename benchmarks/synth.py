"""Speed of the synthetic generator: wall time and images per second, per scenario and overall.

    python benchmarks/synth.py [--per-scenario 100] [--seed 0]

Generates into a temporary directory (deleted afterwards), one scenario at a time, and prints
for each the samples, images and bytes written and the time taken, then the totals. The
budget the project holds it to: 100 samples per scenario in under 60 s on two cores.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from proactivebench.benchmark.protocol import scenario_strings
from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.data.synth import generate


def _files(root: Path) -> tuple[int, int]:
    """(PNG count, total bytes) under `root`."""
    pngs = list(root.rglob("*.png"))
    return len(pngs), sum(p.stat().st_size for p in pngs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n = args.per_scenario
    print(f"{'scenario':<8} {'samples':>7} {'images':>7} {'MB':>6} {'seconds':>8} {'images/s':>9}")
    total_images = total_bytes = 0
    total_time = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for short in paper_scenarios():
            start = time.perf_counter()
            generate(root, per_scenario=n, seed=args.seed, scenarios=[short])
            elapsed = time.perf_counter() - start
            images, size = _files(root / scenario_strings(short).stem)
            total_images, total_bytes, total_time = (
                total_images + images,
                total_bytes + size,
                total_time + elapsed,
            )
            rate = images / elapsed
            print(f"{short:<8} {n:>7} {images:>7} {size / 1e6:>6.1f} {elapsed:>8.2f} {rate:>9.0f}")
    print(
        f"{'all':<8} {n * len(paper_scenarios()):>7} {total_images:>7} {total_bytes / 1e6:>6.1f} "
        f"{total_time:>8.2f} {total_images / total_time:>9.0f}"
    )


if __name__ == "__main__":
    main()
