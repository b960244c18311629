"""Thumbnails of image views, made in worker processes when there are many.

What a thumbnail shows and costs (used by the report's episode viewer, `report.thumbs`):

- the view's region (`apply_view`: COCO's crop, a resize), shrunk to fit a square of `edge`
  pixels, never enlarged;
- a JPEG is decoded at a reduced scale (`Image.draft`: 1/2, 1/4 or 1/8, the smallest that
  keeps the region at least the thumbnail's size), with or without a crop: the crop box is
  mapped to the reduced image's coordinates and scaled in one step (`resize` with a `box`,
  which keeps fractions of a pixel), without a copy or a conversion of the whole image; other
  formats decode whole (PNG cannot do less) and are scaled the same way;
- more than `POOL_MIN_VIEWS` views are made in worker processes (one per free core, started
  from a fork server), while the report's process goes on with other work (`Batch`); fewer, here,
  since starting a pool costs more than it saves. Both make the same bytes.

This module imports no more than it needs (Pillow, the image helpers), so that the workers
start light.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import os
import signal
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING

from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data.images import apply_view, open_image_file, opened_image, view_size

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

    from PIL import Image

#: The quality of a thumbnail: WebP at 50 takes ~0.3-1 KB for a 112 px view (JPEG's headers
#: alone take more), enough to recognise an occluder, a blur or a crop. JPEG where Pillow lacks
#: WebP.
THUMB_QUALITY = 50
#: More views to make than this go to a pool of worker processes: starting one (a fork
#: server and its workers) takes ~0.1-0.3 s, the time of about a hundred thumbnails.
POOL_MIN_VIEWS = 300
#: Views per task sent to a worker, at most: few round trips, yet an even share per worker.
CHUNK_VIEWS = 32

#: A view: its image (name in the data directory), crop box, resize of the short edge.
ViewKey = tuple[str, tuple[float, ...] | None, int | None]
#: A file's identity: real path, size in bytes, modification time in nanoseconds.
FileIdentity = tuple[str, int, int]
#: What is made of one view: the thumbnail (None: the file cannot be read), and when asked for,
#: the file's identity and the hash of its bytes (`content_hash`), read before it is decoded.
Made = tuple[bytes | None, FileIdentity | None, str | None]


def make_many(
    jobs: Sequence[tuple[str, ViewKey]],
    edge: int,
    max_file_bytes: int | None,
    pool_min_views: int | None = None,
    hashed: bool = False,
) -> list[Made]:
    """`make_thumbnail` of each (real path, view) job, in order (a `Batch` collected at once)."""
    return Batch(jobs, edge, max_file_bytes, pool_min_views, hashed).results()


class Batch:
    """Thumbnails being made: started by a pool of worker processes when there are more than
    `pool_min_views` jobs (default `POOL_MIN_VIEWS`) and more than one core (so that this
    process can do other work meanwhile, such as drawing plots), else made here when
    collected. `results` collects them, in the jobs' order; `close` stops the pool, whatever is
    left (after an error, Ctrl-C).

    The workers start from a fork server, never forked from this process, whose threads (a
    model's, a launcher's) a fork would copy mid-work; the server imports this module and
    Pillow once. They do not import the main script, as multiprocessing's workers otherwise do
    (a console script's imports, or a user's script that calls `write_report` unguarded, which
    would start a report again in each worker). They ignore Ctrl-C: this process hears it,
    cancels the pending chunks and waits for the running ones, so no worker is left behind. A
    pool that breaks (a worker killed) leaves the rest to this process.
    """

    def __init__(
        self,
        jobs: Sequence[tuple[str, ViewKey]],
        edge: int,
        max_file_bytes: int | None,
        pool_min_views: int | None = None,
        hashed: bool = False,
    ) -> None:
        from concurrent.futures import Future, ProcessPoolExecutor

        self.args = (edge, max_file_bytes, hashed)
        workers = min(_cores(), math.ceil(len(jobs) / CHUNK_VIEWS))
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[list[Made]]] = []
        if (
            len(jobs) <= (POOL_MIN_VIEWS if pool_min_views is None else pool_min_views)
            or workers < 2
        ):
            self.chunks = [list(jobs)]
            return
        size = max(4, min(CHUNK_VIEWS, math.ceil(len(jobs) / (4 * workers))))
        self.chunks = [list(jobs[i : i + size]) for i in range(0, len(jobs), size)]
        context = _context()
        try:
            with starting_workers(context):  # the workers start as the chunks are submitted
                self._pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore)
                self._futures = [self._pool.submit(_make_chunk, c, *self.args) for c in self.chunks]
        except Exception:  # a pool that cannot start: all made here
            self.close()
        except BaseException:
            self.close()
            raise

    def results(self) -> list[Made]:
        from concurrent.futures.process import BrokenProcessPool

        made: list[Made] = []
        try:
            for index, chunk in enumerate(self.chunks):
                if index < len(self._futures):
                    try:
                        made += self._futures[index].result()
                        continue
                    except (BrokenProcessPool, OSError):
                        self._futures = []
                made += _make_chunk(chunk, *self.args)
        finally:
            self.close()
        return made

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


@contextlib.contextmanager
def starting_workers(context: BaseContext) -> Iterator[None]:
    """While workers are started:

    - a blank main module, which they have nothing to import from (multiprocessing reads the
      main module's name and file as it starts each one);
    - Ctrl-C noted, not raised, until they are started: raised in the middle of starting one,
      it would leave the pool waiting for that worker;
    - Ctrl-C blocked while the fork server starts, which inherits it blocked: a Ctrl-C while
      it imports would print its traceback (multiprocessing's resource tracker, started first,
      protects itself so, and unblocks it after).
    """
    heard: list[int] = []
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda *_: heard.append(1)) if main_thread else None
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    blocked = context.get_start_method() == "forkserver" and hasattr(signal, "pthread_sigmask")
    try:
        if blocked:
            from multiprocessing import forkserver, resource_tracker

            resource_tracker.ensure_running()
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            forkserver.ensure_running()
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
        if main_thread:
            signal.signal(signal.SIGINT, previous)
        if blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if heard:
            raise KeyboardInterrupt  # a Ctrl-C wins over whatever went wrong


def _cores() -> int:
    """The cores a pool may use: those this process may run on, less those the load average
    says are busy by others (this process's own counts as free: it waits for the workers). A
    pool on a machine whose cores are all busy only adds its start-up (1.3x the time of one
    process, measured at a load of 7 on 2 cores: `benchmarks/report.py`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Unix
        busy = 0.0
    return min(cores, round(cores - busy + 1))


@cache
def _context() -> BaseContext:
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # Imported once by the server, not by each worker.
    plugins = ["PIL.JpegImagePlugin", "PIL.PngImagePlugin", "PIL.WebPImagePlugin"]
    context.set_forkserver_preload([__name__, "PIL.Image", "PIL.features", *plugins])
    return context


def _ignore() -> None:
    """In a worker: Ctrl-C is for the report's process, which stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _make_chunk(
    jobs: list[tuple[str, ViewKey]], edge: int, max_file_bytes: int | None, hashed: bool
) -> list[Made]:
    return [make_thumbnail(path, key, edge, max_file_bytes, hashed) for path, key in jobs]


def make_thumbnail(
    path: str, key: ViewKey, edge: int, max_file_bytes: int | None, hashed: bool = False
) -> Made:
    """The thumbnail of one view of the file at `path` (encoded), or None when the file cannot
    be read; with `hashed`, the file's identity and the hash of its bytes too (made here, in
    the workers, rather than one file after another by the report's process)."""
    name, crop, resize = key
    identity = digest = None
    try:
        with opened_image(path, name, max_bytes=max_file_bytes) as opened:
            if hashed:
                with open_image_file(path, name, max_file_bytes) as file:
                    stat = os.fstat(file.fileno())
                    digest = content_hash(file.read())
                identity = (path, stat.st_size, stat.st_mtime_ns)
            image = _shrunk(opened, View(name, crop, resize), edge)
            buffer = io.BytesIO()
            image.save(buffer, format=thumbnail_format(), quality=THUMB_QUALITY, method=0)
    except (OSError, ValueError, ProactiveBenchError):  # ImageError among them
        return None, None, None
    return buffer.getvalue(), identity, digest


def content_hash(payload: bytes) -> str:
    """The hash of a file's bytes that keys its thumbnails: BLAKE2b (256 bits), twice as fast
    as SHA-256 on the project machine."""
    return hashlib.blake2b(payload, digest_size=32).hexdigest()


def thumbnail_size(size: tuple[int, int], edge: int) -> tuple[int, int]:
    """`size` scaled to fit in `edge` x `edge`, keeping its aspect; never enlarged."""
    width, height = size
    if width <= edge and height <= edge:
        return width, height
    scale = edge / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _shrunk(opened: Image.Image, view: View, edge: int) -> Image.Image:
    """The view's region of the opened file at thumbnail size, decoded at the smallest scale
    that keeps the region at least that large."""
    from PIL import Image

    width, height = opened.size
    box = (0, 0, width, height)
    if view.crop is not None:
        box = tuple(round(c) for c in view.crop)  # as `Image.crop` rounds it
    inside = 0 <= box[0] < box[2] <= width and 0 <= box[1] < box[3] <= height
    if not inside:
        # A crop beyond the image (padded with black) or empty: the plain way.
        image = apply_view(opened.convert("RGB"), view)
        image.thumbnail((edge, edge), Image.Resampling.BILINEAR)
        return image
    region = (box[2] - box[0], box[3] - box[1])
    shown = view_size(region, view.resize_short_edge) if view.resize_short_edge else region
    target = thumbnail_size(shown, edge)
    if opened.format == "JPEG":
        wanted = (
            math.ceil(width * target[0] / region[0]),
            math.ceil(height * target[1] / region[1]),
        )
        drafted = opened.draft("RGB", wanted)
        if drafted is not None:
            scale = width / drafted[1][2]  # the reduced image's pixel is `scale` of the file's
            box = tuple(c / scale for c in box)
    opened.load()
    image = opened if opened.mode in ("RGB", "L") else opened.convert("RGB")
    if image.size == target and box == (0, 0, *image.size):
        scaled = image
    else:
        scaled = image.resize(target, Image.Resampling.BILINEAR, box=box, reducing_gap=2.0)
    return scaled if scaled.mode == "RGB" else scaled.convert("RGB")


@cache
def thumbnail_format() -> str:
    """WEBP, or JPEG where Pillow lacks WebP."""
    from PIL import features

    return "WEBP" if features.check("webp") else "JPEG"
