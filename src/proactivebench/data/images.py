"""Views made concrete: decode an image once, apply its crop/resize, encode it once.

A multi-turn episode shows the same file several times (COCO: one file, many crops) and
conversation history re-sends every earlier image, so both the decoded transform and the
encoded bytes are cached per (file, transform[, format]). Backends share one `ImageStore`.
"""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from proactivebench.data.layout import PathGuard
from proactivebench.errors import DataError, ProactiveBenchError
from proactivebench.scenarios import View


class ImageError(ProactiveBenchError):
    """An image that cannot be read or decoded; the episode that needs it records an error."""


def apply_view(image: Image.Image, view: View) -> Image.Image:
    """Crop (a PIL box, as the protocol's COCO transform), then scale the short edge."""
    if view.crop is not None:
        image = image.crop(view.crop)
    if view.resize_short_edge:
        scale = view.resize_short_edge / min(image.size)
        image = image.resize((int(image.size[0] * scale), int(image.size[1] * scale)))
    return image


class _LRU:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        value = self.items.get(key)
        if value is not None:
            self.items.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        self.items[key] = value
        self.items.move_to_end(key)
        while len(self.items) > self.capacity:
            self.items.popitem(last=False)


class ImageStore:
    """Thread-safe, bounded caches of transformed images and of their data URLs."""

    def __init__(self, root: str | Path, capacity: int = 512) -> None:
        self.root = Path(root)
        self._guard = PathGuard(self.root)
        self._lock = threading.Lock()
        self._images = _LRU(capacity)
        self._urls = _LRU(capacity)
        self._hashes: dict[str, str] = {}

    def path(self, view: View) -> Path:
        try:
            return self._guard.resolve(view.image)
        except DataError as exc:
            raise ImageError(str(exc)) from None

    def image(self, view: View) -> Image.Image:
        """The RGB image the view shows (shared: do not modify it in place)."""
        with self._lock:
            cached = self._images.get(view)
        if cached is not None:
            return cached
        path = self.path(view)
        try:
            with Image.open(path) as raw:
                image = apply_view(raw.convert("RGB"), view)
        except FileNotFoundError:
            raise ImageError(f"image not found: {view.image}") from None
        except (OSError, UnidentifiedImageError, ValueError) as exc:
            raise ImageError(f"cannot decode image {view.image}: {exc}") from None
        with self._lock:
            self._images.put(view, image)
        return image

    def encoded(self, view: View, fmt: str = "JPEG", quality: int = 90) -> bytes:
        """The view encoded as JPEG or PNG bytes (not cached: `data_url` caches its result)."""
        buffer = io.BytesIO()
        options = {"quality": quality} if fmt.upper() == "JPEG" else {}
        self.image(view).save(buffer, format=fmt.upper(), **options)
        return buffer.getvalue()

    def data_url(self, view: View, fmt: str = "JPEG", quality: int = 90) -> str:
        """The view as a `data:` URL, cached: history and repeated views are encoded once."""
        key = (view, fmt.upper(), quality)
        with self._lock:
            cached = self._urls.get(key)
        if cached is not None:
            return cached
        mime = "image/jpeg" if key[1] == "JPEG" else f"image/{key[1].lower()}"
        payload = base64.b64encode(self.encoded(view, fmt, quality)).decode("ascii")
        url = f"data:{mime};base64,{payload}"
        with self._lock:
            self._urls.put(key, url)
        return url

    def file_hash(self, view: View) -> str:
        """SHA-256 of the image file's bytes (cache keys must change when the file does)."""
        with self._lock:
            cached = self._hashes.get(view.image)
        if cached is not None:
            return cached
        path = self.path(view)
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise ImageError(f"cannot read image {view.image}: {exc.strerror}") from None
        with self._lock:
            self._hashes[view.image] = digest
        return digest
