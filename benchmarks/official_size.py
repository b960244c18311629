"""A synthetic data set with images of the official size: 640×480 photo-like JPEGs.

The official images (COCO, ImageNet, video frames) are 640 px JPEGs of 50-150 KB, while our
generator draws small PNGs (224-448 px, ~10 KB). What a client does per image (read, decode,
encode, base64, JSON, send) grows with the bytes, so throughput must be measured on images of
the real size. This copies a synthetic set in the official layout and replaces every image by
a 640×480 JPEG of the same scene with film grain and texture added (so it compresses like a
photo, not like a flat drawing); the records point at the `.jpg` files. Generated on demand,
never checked in:

    python benchmarks/official_size.py --out /tmp/official-size [--per-scenario 60]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

SIZE = (640, 480)
#: JPEG qualities tried in turn until a file weighs 50-150 KB, as the official ones do.
QUALITIES = (85, 92, 96)
MIN_BYTES, MAX_BYTES = 50 * 1024, 150 * 1024
#: Grain fields reused (at random offsets) from one image to the next: drawing fresh normal
#: noise for every image would take longer than everything else together.
_GRAIN_FIELDS = 6


@functools.cache  # one per field and worker process
def _grain(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    height, width = SIZE[1] * 2, SIZE[0] * 2
    texture = rng.normal(0.0, 6.0, (height, width, 1))  # luminance grain
    colour = rng.normal(0.0, 3.5, (height, width, 3))  # chroma grain
    return (texture + colour).astype(np.int16)


def _convert(job: tuple[str, str, int]) -> int:
    """Write the photo-like JPEG of one PNG; returns its size in bytes."""
    source, target, seed = job
    rng = np.random.default_rng(seed)
    grain = _grain(seed % _GRAIN_FIELDS)
    top, left = (int(v) for v in rng.integers(0, SIZE[1], 2))
    with Image.open(source) as image:
        pixels = np.asarray(image.convert("RGB").resize(SIZE, Image.Resampling.BILINEAR))
    noisy = pixels.astype(np.int16) + grain[top : top + SIZE[1], left : left + SIZE[0]]
    photo = Image.fromarray(noisy.clip(0, 255).astype(np.uint8))
    for quality in QUALITIES:  # flat scenes (sketches) need a higher quality to weigh as much
        photo.save(target, quality=quality)
        size = os.path.getsize(target)
        if size >= MIN_BYTES:
            break
    if size > MAX_BYTES:  # busy scenes: a little more compression
        photo.save(target, quality=QUALITIES[0] - 10)
        size = os.path.getsize(target)
    return size


def make_official_size(synthetic: Path, out: Path, workers: int | None = None) -> dict[str, float]:
    """Copy the synthetic set at `synthetic` into `out` with official-size JPEG images.

    Returns the number of images and their mean, smallest and largest size in KB.
    """
    out.mkdir(parents=True, exist_ok=True)
    for meta in synthetic.glob("*.json"):  # the manifest: the official id filter stays off
        shutil.copy(meta, out / meta.name)
    for jsonl in synthetic.glob("*_preprocessed.jsonl"):
        lines = []
        for line in jsonl.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            record["image_template"] = record["image_template"].replace(".png", ".jpg")
            lines.append(json.dumps(record))
        (out / jsonl.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    jobs = []
    for n, png in enumerate(sorted(synthetic.rglob("*.png"))):
        target = out / png.relative_to(synthetic).with_suffix(".jpg")
        target.parent.mkdir(parents=True, exist_ok=True)
        jobs.append((str(png), str(target), n))
    with ProcessPoolExecutor(workers or os.cpu_count()) as pool:
        sizes = list(pool.map(_convert, jobs, chunksize=32))
    kb = np.asarray(sizes) / 1024
    return {"images": len(sizes), "mean_kb": kb.mean(), "min_kb": kb.min(), "max_kb": kb.max()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-scenario", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from proactivebench.data.synth import generate

    synthetic = args.out.with_name(args.out.name + "-png")
    generate(synthetic, per_scenario=args.per_scenario, seed=args.seed)
    stats = make_official_size(synthetic, args.out)
    shutil.rmtree(synthetic)
    print(
        f"{args.out}: {stats['images']} JPEGs of 640x480, {stats['mean_kb']:.0f} KB on average "
        f"({stats['min_kb']:.0f}-{stats['max_kb']:.0f} KB)"
    )


if __name__ == "__main__":
    main()
