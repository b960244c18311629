"""Views made concrete: an image file as the model sees it, read, decoded and encoded once.

What a backend sends depends on whether the view transforms its file:

- an *untransformed* view of a JPEG, PNG, WebP or GIF file (most turns of the official data:
  640 px JPEGs) travels as the file's own bytes. Nothing is decoded or re-encoded, so the
  model gets exactly the file, and a turn costs a file read and a base64 pass instead of a
  decode and an encode (about 0.2 ms instead of 7 ms for a 640×480 JPEG);
- a *transformed* view (a COCO crop, a resize for long histories), or a file in another
  format, is decoded, transformed and encoded as the backend asks.

Every file is opened through `opened_image`, the one door to Pillow: a file above the size cap
(`--max-image-mb`) is refused unread, an image above Pillow's pixel limit
(`Image.MAX_IMAGE_PIXELS`) is refused from its header, before its pixels are decoded, and every
other Pillow error becomes an `ImageError` naming the file: a bad image fails its own episode
(or view, or thumbnail), never the run. A view scaled down (`resize_short_edge`) decodes a
JPEG at a reduced scale (`Image.draft`) that keeps at least twice the target size.

A multi-turn episode shows the same file several times (COCO: one file, many crops) and
conversation history re-sends every earlier image, so decoded views and data URLs are kept in
caches bounded by their size in bytes, and each file's content hash is computed once. Backends
share one `ImageStore` per run.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import os
import stat as kinds
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import DataError, ImageError
from proactivebench.core.paths import open_to_read
from proactivebench.data.directory import PathGuard

if TYPE_CHECKING:  # Pillow is imported when a view is first decoded: most turns send bytes
    from PIL import Image

#: A version of an image file: (real path, size, modification time in ns, inode, Pillow's pixel
#: limit of the check).
HeaderVersion = tuple[str, int, int, int, int | None]

#: File formats every vision-language server reads, sent as they are, by their signatures:
#: (offset, magic bytes, MIME type). Checking four signatures costs a fraction of what asking
#: Pillow (which parses the whole header) would, on every turn.
PASS_THROUGH_SIGNATURES = (
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (8, b"WEBP", "image/webp"),  # after b"RIFF" and the chunk size
    (0, b"GIF8", "image/gif"),
)
ENCODINGS = {"JPEG": "image/jpeg", "PNG": "image/png"}
#: The default cap on an image file's size, in megabytes (`--max-image-mb`): far above any
#: photo a vision-language model is shown (the official images are ~100 KB), far below what
#: would exhaust memory when read whole.
DEFAULT_MAX_IMAGE_MB = 50
#: Up to this many bytes, a file already in memory is made into a data URL on the caller's
#: thread (`ImageStore.ready_data_url`: base64 of 1 MB takes about 1 ms); past it, or for a
#: file not read yet, in a worker thread.
INLINE_BYTES = 1 << 20
#: A scaled-down view decodes a JPEG at no less than this many times its target size, as
#: Pillow's `thumbnail` does (its `reducing_gap`), so that the final resize still filters.
REDUCING_GAP = 2


#: Why a file whose format Pillow does not recognise is refused (text, HTML, a damaged header).
_UNIDENTIFIED = "cannot identify image file: not an image Pillow can read"


class UnreadableImage(ImageError):
    """A file Pillow cannot read or decode; `reason` is Pillow's word for it."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"cannot decode image {name}: {reason}")
        self.reason = reason


def check_file_size(path: str | os.PathLike[str], name: str, max_bytes: int | None) -> int:
    """The file's size in bytes, from `stat`: `ImageError` above `max_bytes` (nothing read)."""
    return _checked_stat(path, name, max_bytes).st_size


def _checked_stat(path: str | os.PathLike[str], name: str, max_bytes: int | None) -> os.stat_result:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise ImageError(f"image not found: {name}") from None
    except OSError as exc:
        raise ImageError(f"cannot read image {name}: {exc.strerror}") from None
    _check_kind_and_size(stat, name, max_bytes)
    return stat


def _check_kind_and_size(stat: os.stat_result, name: str, max_bytes: int | None) -> None:
    """`ImageError` for anything but a regular file (a FIFO would block its reader forever, a
    device would never end) and for a file above `max_bytes`."""
    if not kinds.S_ISREG(stat.st_mode):
        raise ImageError(f"image {name} is not a file (a folder, FIFO or device): not read")
    if max_bytes is not None and stat.st_size > max_bytes:
        raise ImageError(
            f"image {name} is {stat.st_size / 1e6:,.1f} MB, above the cap of "
            f"{max_bytes / 1e6:,.0f} MB per image file (--max-image-mb raises it)"
        )


def open_image_file(path: str | os.PathLike[str], name: str, max_bytes: int | None) -> BinaryIO:
    """The image file at `path`, open for reading: the one way an image's bytes are read.

    Opened without blocking (O_NONBLOCK), then checked on the open descriptor (`fstat`): a
    FIFO, device or folder in an image's place, even one swapped in after an earlier check,
    is an `ImageError` at once instead of a read that hangs; so is a file above `max_bytes`.
    """
    try:
        return open_to_read(path, lambda found: _check_kind_and_size(found, name, max_bytes))
    except FileNotFoundError:
        raise ImageError(f"image not found: {name}") from None
    except OSError as exc:
        raise ImageError(f"cannot read image {name}: {exc.strerror}") from None


#: Image files whose header passed `check_header`, by version of the file: (path, size,
#: modification time in ns, inode, Pillow's pixel limit). A file written since has another key
#: and is read again; a process that checks the same data twice (runs in a notebook, a
#: benchmark, `eval` then its report, a suite's experiments) reads each header once, and the
#: versions an earlier process read (`data.checked`) join them (`recall_headers`).
_GOOD_HEADERS: set[HeaderVersion] = set()
_GOOD_HEADERS_LOCK = threading.Lock()


def header_version(path: str | os.PathLike[str], stat: os.stat_result) -> HeaderVersion:
    """What tells this version of the file apart, under today's pixel limit, unread."""
    from PIL import Image

    return (os.fspath(path), stat.st_size, stat.st_mtime_ns, stat.st_ino, Image.MAX_IMAGE_PIXELS)


def check_header(
    path: str | os.PathLike[str], name: str, *, max_bytes: int | None
) -> HeaderVersion | None:
    """`opened_image`'s checks (size cap, a header Pillow reads, within its pixel limit),
    without decoding; a file that passed them before, unchanged since, costs one `stat`.
    Returns the version found good by this read (unless the file changed while it was read),
    None when nothing was read."""
    key, passed = _known_version(path, name, max_bytes)
    if passed:
        return None
    with opened_image(path, name, max_bytes=max_bytes):
        pass
    with contextlib.suppress(OSError):
        if header_version(path, os.stat(path)) != key:
            return None  # written while it was read: what passed may not be this version
    with _GOOD_HEADERS_LOCK:
        _GOOD_HEADERS.add(key)
    return key


def header_passed(
    path: str | os.PathLike[str],
    name: str,
    *,
    max_bytes: int | None,
    stat: os.stat_result | None = None,
) -> bool:
    """Whether the file as it is now (its `stat`, or the one just taken of it: its folder's
    listing) passed `check_header` before; nothing is read, and a file above the size cap is an
    `ImageError` all the same."""
    return _known_version(path, name, max_bytes, stat)[1]


def _known_version(
    path: str | os.PathLike[str],
    name: str,
    max_bytes: int | None,
    stat: os.stat_result | None = None,
) -> tuple[HeaderVersion, bool]:
    if stat is None:
        stat = _checked_stat(path, name, max_bytes)
    else:
        _check_kind_and_size(stat, name, max_bytes)
    key = header_version(path, stat)
    with _GOOD_HEADERS_LOCK:
        return key, key in _GOOD_HEADERS


def passed_unchanged(paths: Mapping[str, str], max_bytes: int | None) -> set[str]:
    """The names of `paths` (name -> real path) whose file, as `lstat` finds it now, is a
    regular file within `max_bytes` of a version that passed `check_header` before: one
    `lstat` each, nothing read. A link, a folder, a missing file, one above the cap or of a
    version never passed is left out, for the full check. (`header_passed` for many files at
    once: this is what a rerun pays per image, so the loop does nothing else.)"""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    cap = max_bytes if max_bytes is not None else float("inf")
    with _GOOD_HEADERS_LOCK:
        good = _GOOD_HEADERS.copy()
    lstat, regular = os.lstat, kinds.S_ISREG
    passed: set[str] = set()
    for name, path in paths.items():
        try:
            found = lstat(path)
        except OSError:
            continue
        size = found.st_size
        version = (path, size, found.st_mtime_ns, found.st_ino, limit)
        if regular(found.st_mode) and size <= cap and version in good:
            passed.add(name)
    return passed


def any_header_passed() -> bool:
    """Whether this process knows of any header that passed (read here, or recalled)."""
    with _GOOD_HEADERS_LOCK:
        return bool(_GOOD_HEADERS)


def recall_headers(versions: Iterable[HeaderVersion]) -> None:
    """Versions of files whose header passed in an earlier process: checking one costs a
    `stat` (a version not among them is read, as always)."""
    with _GOOD_HEADERS_LOCK:
        _GOOD_HEADERS.update(versions)


@contextmanager
def opened_image(
    path: str | os.PathLike[str], name: str, *, max_bytes: int | None
) -> Iterator[Image.Image]:
    """The image file opened by Pillow (its header read, pixels not yet decoded), checked
    against the size cap and Pillow's pixel limit. Any Pillow error in the block, while it
    decodes too, becomes an `ImageError` naming `name`."""
    from PIL import Image

    try:
        with open_image_file(path, name, max_bytes) as file:
            image = Image.open(file)
            limit = Image.MAX_IMAGE_PIXELS
            width, height = image.size
            if limit and width * height > limit:
                raise ImageError(
                    f"image {name} is {width}x{height} pixels, above Pillow's pixel limit of "
                    f"{limit:,} (Image.MAX_IMAGE_PIXELS; a decompression bomb?)"
                )
            yield image
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"image {name} is above Pillow's pixel limit: {exc}") from None
    except FileNotFoundError:
        raise ImageError(f"image not found: {name}") from None
    except Image.UnidentifiedImageError:  # its message is the repr of our open file object
        raise UnreadableImage(name, _UNIDENTIFIED) from None
    except Exception as exc:  # Pillow's errors for broken files are of many kinds
        raise UnreadableImage(name, str(exc) or type(exc).__name__) from None


def view_size(size: tuple[int, int], short_edge: int) -> tuple[int, int]:
    """The size an image of `size` is scaled to for a short edge of `short_edge`."""
    scale = short_edge / min(size)
    return int(size[0] * scale), int(size[1] * scale)


def _resized(size: tuple[int, int], view: View) -> tuple[int, int]:
    """`view_size` for the view's `resize_short_edge`, refused above Pillow's pixel limit:
    the option scales up as well as down, and a large short edge would take the memory of a
    decompression bomb (a 4:3 image at 60,000 pixels: 14 GB of RGB) before any check of the
    file's own size could see it."""
    from PIL import Image

    assert view.resize_short_edge
    width, height = view_size(size, view.resize_short_edge)
    limit = Image.MAX_IMAGE_PIXELS
    if limit and width * height > limit:
        raise ImageError(
            f"image {view.image} at a short edge of {view.resize_short_edge} pixels would be "
            f"{width}x{height} pixels, above Pillow's pixel limit of {limit:,} "
            "(Image.MAX_IMAGE_PIXELS): lower --resize-short-edge"
        )
    return width, height


def apply_view(image: Image.Image, view: View) -> Image.Image:
    """Crop (a PIL box, as the protocol's COCO transform), then scale the short edge."""
    if view.crop is not None:
        image = image.crop(view.crop)
    if view.resize_short_edge:
        image = image.resize(_resized(image.size, view))
    return image


def decode_view(raw: Image.Image, view: View) -> Image.Image:
    """The RGB pixels `view` shows of an opened file, decoded once: a JPEG scaled down is
    decoded at a reduced scale (the result's size is the same as from the full decode), and an
    RGB file is not copied for a conversion it does not need."""
    target = None
    if view.crop is None and view.resize_short_edge:
        target = _resized(raw.size, view)
        raw.draft(None, (REDUCING_GAP * target[0], REDUCING_GAP * target[1]))
    raw.load()
    image = raw if raw.mode == "RGB" else raw.convert("RGB")
    if target is not None:
        return image.resize(target) if image.size != target else image
    return apply_view(image, view)


def is_transformed(view: View) -> bool:
    """Whether the view changes its file's pixels (a crop or a resize)."""
    return view.crop is not None or bool(view.resize_short_edge)


def pass_through_mime(payload: bytes) -> str | None:
    """The MIME type of a file sent as it is (JPEG, PNG, WebP, GIF), else None."""
    for offset, magic, mime in PASS_THROUGH_SIGNATURES:
        if payload.startswith(magic, offset) and (offset == 0 or payload.startswith(b"RIFF")):
            return mime
    return None


def data_url_of(mime: str, payload: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(payload).decode('ascii')}"


class _SizedLRU:
    """Least-recently-used entries whose sizes add up to at most `max_bytes`."""

    def __init__(self, max_bytes: int, size_of: Callable[[Any], int]) -> None:
        self.max_bytes = max_bytes
        self.size_of = size_of
        self.bytes = 0
        self.items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        value = self.items.get(key)
        if value is not None:
            self.items.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        old = self.items.pop(key, None)
        if old is not None:
            self.bytes -= self.size_of(old)
        self.items[key] = value
        self.bytes += self.size_of(value)
        while self.bytes > self.max_bytes and len(self.items) > 1:
            _, evicted = self.items.popitem(last=False)
            self.bytes -= self.size_of(evicted)


def _pixel_bytes(image: Image.Image) -> int:
    return image.width * image.height * len(image.getbands())


class ImageStore:
    """Thread-safe access to a data set's images as views, with size-bounded caches.

    `decodes` counts the images decoded from disk, so that tests and benchmarks can check
    that each view is decoded once.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        max_decoded_bytes: int = 512 << 20,
        max_url_bytes: int = 128 << 20,
        max_file_bytes: int | None = DEFAULT_MAX_IMAGE_MB * 10**6,
        guard: PathGuard | None = None,
    ) -> None:
        self.root = Path(root)
        #: Files above it are refused unread (`--max-image-mb`).
        self.max_file_bytes = max_file_bytes
        #: The check before the run's (`selection.DataChecks`), whose folder listings and real
        #: paths the run's reads use again; one of its own otherwise.
        self.guard = guard or PathGuard(self.root)
        self._lock = threading.Lock()
        self._images = _SizedLRU(max_decoded_bytes, _pixel_bytes)
        self._urls = _SizedLRU(max_url_bytes, len)
        # A turn needs its file twice, for the content hash of the cache key and for the
        # data URL: the second read comes from here.
        self._files = _SizedLRU(16 << 20, len)
        self._hashes: dict[str, str] = {}
        self.decodes = 0

    def path(self, view: View) -> str:
        """The real path of the view's file, checked to lie inside the data dir."""
        try:
            return self.guard.resolve(view.image)
        except DataError as exc:
            raise ImageError(str(exc)) from None

    def read_bytes(self, view: View) -> bytes:
        """The bytes of the view's file."""
        with self._lock:
            cached = self._files.get(view.image)
        if cached is not None:
            return cached
        path = self.path(view)
        try:
            with open_image_file(path, view.image, self.max_file_bytes) as file:
                payload = file.read()
        except OSError as exc:
            raise ImageError(f"cannot read image {view.image}: {exc.strerror}") from None
        with self._lock:
            self._files.put(view.image, payload)
        return payload

    def image(self, view: View) -> Image.Image:
        """The RGB image the view shows (shared: do not modify it in place)."""
        with self._lock:
            cached = self._images.get(view)
        if cached is not None:
            return cached
        with opened_image(self.path(view), view.image, max_bytes=self.max_file_bytes) as raw:
            image = decode_view(raw, view)
        with self._lock:
            self.decodes += 1
            self._images.put(view, image)
        return image

    def encoded(self, view: View, fmt: str = "JPEG", quality: int = 90) -> bytes:
        """The view decoded, transformed and encoded as JPEG or PNG (not cached)."""
        buffer = io.BytesIO()
        options = {"quality": quality} if fmt.upper() == "JPEG" else {}
        self.image(view).save(buffer, format=fmt.upper(), **options)
        return buffer.getvalue()

    def data_url(self, view: View, fmt: str = "JPEG", quality: int = 90) -> str:
        """The view as a `data:` URL, cached: history and repeated views are encoded once.

        An untransformed view of a JPEG, PNG, WebP or GIF file is the file's own bytes, and
        `fmt` and `quality` do not apply to it; any other view is encoded as `fmt`.
        """
        if not is_transformed(view):
            url = self._cached_url(view) or self._file_url(view)
            if url is not None:
                return url
        key = (view, fmt.upper(), quality)
        url = self._cached_url(key)
        if url is None:
            url = data_url_of(ENCODINGS[key[1]], self.encoded(view, key[1], quality))
            with self._lock:
                self._urls.put(key, url)
        return url

    def cached_data_url(self, view: View, fmt: str = "JPEG", quality: int = 90) -> str | None:
        """The view's data URL if it is made already (a lookup, nothing read), else None."""
        if not is_transformed(view):
            url = self._cached_url(view)
            if url is not None:
                return url
        return self._cached_url((view, fmt.upper(), quality))

    def _cached_url(self, key: Any) -> str | None:
        with self._lock:
            return self._urls.get(key)

    def ready_data_url(self, view: View, fmt: str = "JPEG", quality: int = 90) -> str | None:
        """The view's data URL when it costs no file read and no decode, else None: made
        already, or an untransformed view whose file's bytes are in memory (read for the
        response cache's key a moment before) and small enough for a base64 pass on the event
        loop (`INLINE_BYTES`). A new image thus costs one worker-thread hop, not two."""
        url = self.cached_data_url(view, fmt, quality)
        if url is not None or is_transformed(view):
            return url
        with self._lock:
            payload = self._files.get(view.image)
        if payload is None or len(payload) > INLINE_BYTES:
            return None
        return self._url_of_file(view, payload)

    def _file_url(self, view: View) -> str | None:
        """The file's own bytes as a data URL, or None if its format is not sent as is."""
        return self._url_of_file(view, self.read_bytes(view))

    def _url_of_file(self, view: View, payload: bytes) -> str | None:
        mime = pass_through_mime(payload)
        if mime is None:
            return None  # another format, or not an image: decoding says which
        url = data_url_of(mime, payload)
        with self._lock:
            self._urls.put(view, url)
        return url

    def hashed(self, views: Iterable[View]) -> bool:
        """Whether every view's file hash is known already (`file_hash` is then a lookup)."""
        with self._lock:
            return all(view.image in self._hashes for view in views)

    def file_hash(self, view: View) -> str:
        """SHA-256 of the image file's bytes (cache keys must change when the file does)."""
        with self._lock:
            cached = self._hashes.get(view.image)
        if cached is not None:
            return cached
        digest = hashlib.sha256(self.read_bytes(view)).hexdigest()
        with self._lock:
            self._hashes[view.image] = digest
        return digest
