"""Start-up: how long `proactivebench eval` takes from its start to its first model request.

A user waits this long on every run, resumed runs and `--limit` trials included: the
interpreter, the imports, loading and validating the records, the check that every image an
episode may show exists and has a sound header, and opening the run directory and the response
cache. The command runs as a user runs it (a new process, the console script) against the fake
OpenAI server of the testing kit, which notes when the first chat request arrives (both clocks
are the system's monotonic clock). The first run is a warm-up: it fills the page cache and
writes the compiled modules, as any earlier use on a user's machine has.

Each round times two runs on the same data: a *first* run, with no memory of earlier image
checks (`image-checks.sqlite` removed from beside the response cache), which reads every
header its episodes may show, and a *second* run, which finds them remembered and only `stat`s
the files. Every run has a response cache of its own (so that its first request reaches the
server) in one folder, beside which the memory lies.

    python benchmarks/startup.py [--per-scenario 100] [--repeats 5]
    python benchmarks/startup.py --official-counts [--repeats 3]

`--official-counts`: a synthetic set with the official test set's samples per scenario (ROD 88,
VSOD 42, MVP-N 2,591, IN-C 1,095, QD 2,105, CIT 396, COCO 1,240: 7,557) and VSOD's ~230 frames
a sample, made by copying the generator's samples (`official_counts`).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from proactivebench.data.synth import generate  # noqa: E402
from proactivebench.testing.server import FakeOpenAI  # noqa: E402

try:
    from proactivebench.data.checked import NAME
except ImportError:  # a version before the checks were remembered (versions.py, --baseline)
    NAME = "image-checks.sqlite"

#: The official test set's samples per scenario (paper, sec. 3.3; paper_results.json).
OFFICIAL_COUNTS = {
    "ROD": 88,
    "VSOD": 42,
    "MVP-N": 2591,
    "IN-C": 1095,
    "QD": 2105,
    "CIT": 396,
    "COCO": 1240,
}
#: VSOD's frames per sample in the official data (about; the other scenarios' samples show as
#: many images as the generator's do).
OFFICIAL_VSOD_FRAMES = 230


def official_counts(base: Path, out: Path) -> int:
    """Copy the synthetic set at `base` into `out` with `OFFICIAL_COUNTS` samples per scenario
    (sample i a copy of base sample i mod n, in a folder of its own) and VSOD's samples grown
    to `OFFICIAL_VSOD_FRAMES` frames (frame k a copy of frame k mod n). Returns the images."""
    from proactivebench.benchmark.registry import scenario

    out.mkdir(parents=True)
    for meta in base.glob("*.json"):  # the manifest: synthetic, no official id filter
        shutil.copy(meta, out / meta.name)
    images = 0
    for short, count in OFFICIAL_COUNTS.items():
        name = scenario(short).strings.dataset_file
        records = [json.loads(line) for line in (base / name).read_text().splitlines()]
        lines = []
        for i in range(count):
            record = dict(records[i % len(records)])
            folder = os.path.dirname(record["image_template"])  # TOP/NNNNNN
            top = os.path.dirname(folder)
            target = f"{top}/{i:06d}"
            shutil.copytree(base / folder, out / target)
            record["id"] = i
            record["image_template"] = record["image_template"].replace(folder, target, 1)
            if short == "VSOD":
                frames = record["num_images"]
                for k in range(frames, OFFICIAL_VSOD_FRAMES):
                    source = out / target / f"{k % frames:04d}.png"
                    shutil.copyfile(source, out / target / f"{k:04d}.png")
                record["num_images"] = OFFICIAL_VSOD_FRAMES
            images += sum(1 for _ in (out / target).iterdir())
            lines.append(json.dumps(record))
        (out / name).write_text("\n".join(lines) + "\n")
    return images


def first_request_after_start(data: Path, scratch: Path, url: str, fake: FakeOpenAI) -> float:
    """Seconds from spawning `proactivebench eval` to the server's first chat request."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    caches = scratch / "caches"
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
        str(caches / f"{out.name}.sqlite"),  # its own answers; the image checks' memory shared
    ]
    # As on a user's machine, compiled modules are cached (the first, warm-up run writes them).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    seen = len(fake.chat_requests)
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, env=env)
    first = min(r.time for r in fake.chat_requests[seen:])
    return first - start


def forget_checks(scratch: Path) -> None:
    """Remove the memory of image checks (and its journals) from beside the response caches."""
    for suffix in ("", "-wal", "-shm"):
        (scratch / "caches" / f"{NAME}{suffix}").unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--official-counts", action="store_true")
    parser.add_argument("--data", type=Path, help="time on this data directory instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        scratch = Path(tmp)
        data = args.data or scratch / "data"
        if args.data:
            what = f"{data}"
        elif args.official_counts:
            base = scratch / "base"
            generate(base, per_scenario=40, seed=0)
            images = official_counts(base, data)
            records = sum(OFFICIAL_COUNTS.values())
            what = f"synthetic, official counts ({records} records, {images} images)"
        else:
            generate(data, per_scenario=args.per_scenario, seed=0)
            what = f"synthetic, {args.per_scenario} per scenario ({7 * args.per_scenario} records)"
        (scratch / "caches").mkdir()
        first_request_after_start(data, scratch, fake.url, fake)  # warm the page cache
        firsts, seconds = [], []
        for _ in range(args.repeats):
            forget_checks(scratch)
            firsts.append(first_request_after_start(data, scratch, fake.url, fake))
            seconds.append(first_request_after_start(data, scratch, fake.url, fake))
    print(f"data: {what}")
    for label, times in (("first run (no checks remembered)", firsts), ("second run", seconds)):
        print(
            f"{label}, start to first request, median of {args.repeats}: "
            f"{statistics.median(times):.3f} s  (every run: {', '.join(f'{t:.3f}' for t in times)})"
        )


if __name__ == "__main__":
    main()
