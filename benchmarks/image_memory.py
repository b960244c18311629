"""Peak memory of decoding one large image for a scaled-down view (`--resize-short-edge`).

Pillow allocates pixels outside Python's allocator, so `tracemalloc` does not see them: each
decode runs in a fresh process and reports its peak resident set (`ru_maxrss`) above the
process's size before the decode. Side by side for a 12000x12000 PNG and JPEG, short edge 224:

- before: `Image.open(path).convert("RGB")`, then the resize (the decode before issue 18);
- now: `ImageStore.image` (`data.images.decode_view`: a JPEG drafted at a reduced scale, an
  RGB file not copied by a conversion).

    python benchmarks/image_memory.py [--edge 12000] [--short-edge 224]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import json, resource, sys
from PIL import Image
Image.MAX_IMAGE_PIXELS = None
from proactivebench.data.images import ImageStore, apply_view
from proactivebench.benchmark.scenarios import View
path, side, short = sys.argv[1], sys.argv[2], int(sys.argv[3])
view = View(path.rsplit("/", 1)[1], None, short)
store = ImageStore(path.rsplit("/", 1)[0], max_file_bytes=None)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if side == "before":
    with Image.open(path) as raw:
        image = apply_view(raw.convert("RGB"), view)
else:
    image = store.image(view)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"mb": (peak - base) / 1024, "size": image.size}))
"""

WRITER = """
import sys
from PIL import Image
Image.MAX_IMAGE_PIXELS = None
scratch, edge = sys.argv[1], int(sys.argv[2])
image = Image.radial_gradient("L").convert("RGB").resize((edge, edge))
image.save(f"{scratch}/big.png", compress_level=1)
image.save(f"{scratch}/big.jpg", quality=90)
"""


def peak_mb(path: Path, side: str, short_edge: int) -> tuple[float, tuple[int, int]]:
    """Peak memory (MB above the start) of one decode in a fresh process, and the view's size."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), side, str(short_edge)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    got = json.loads(out)
    return got["mb"], tuple(got["size"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edge", type=int, default=12000)
    parser.add_argument("--short-edge", type=int, default=224)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        paths = {"PNG": Path(scratch) / "big.png", "JPEG": Path(scratch) / "big.jpg"}
        # Written by another process: a child's peak RSS starts at its parent's (Linux keeps
        # the high-water mark across fork and exec), so this one must stay small.
        subprocess.run([sys.executable, "-c", WRITER, scratch, str(args.edge)], check=True)
        print(f"{'file':<6} {'before MB':>10} {'now MB':>8} {'ratio':>7}  view size")
        for name, path in paths.items():
            before, size_before = peak_mb(path, "before", args.short_edge)
            now, size_now = peak_mb(path, "now", args.short_edge)
            assert size_before == size_now, (size_before, size_now)
            ratio = before / max(now, 1)
            print(f"{name:<6} {before:>10.0f} {now:>8.0f} {ratio:>6.1f}x  {size_now}")


if __name__ == "__main__":
    main()
