"""Thumbnails of the views a model was shown, for the HTML report's episode viewer.

A view is an image file of the data directory with its transforms (COCO's crop, a resize):
the thumbnail applies them exactly as the run did (`data.images.apply_view`), then shrinks
the result, so the viewer shows what the model saw, at a size a report of thousands of
episodes can carry. Each distinct view is made once, however many turns, episodes and runs
show it.
"""

from __future__ import annotations

import base64
import io
from functools import cache
from pathlib import Path

from proactivebench.data.images import DEFAULT_MAX_IMAGE_MB, apply_view, opened_image
from proactivebench.data.layout import PathGuard
from proactivebench.errors import ProactiveBenchError
from proactivebench.scenarios import View

#: The longest edge of a thumbnail, in pixels, and its quality: WebP at 50 takes ~0.3-1 KB a
#: view (JPEG's headers alone take more), enough to recognise an occluder, a blur or a crop,
#: and keeps a report of 7 x 500 episodes far below 30 MB. JPEG where Pillow lacks WebP.
THUMB_EDGE = 112
THUMB_QUALITY = 50

ViewKey = tuple[str, tuple[float, ...] | None, int | None]


def view_key(turn: dict) -> ViewKey:
    crop = turn.get("crop")
    return (turn["image"], tuple(crop) if crop is not None else None, turn.get("resize_short_edge"))


class Thumbnails:
    """Data URLs of the views of one data directory, made on first request."""

    def __init__(
        self,
        data_dir: Path | None,
        edge: int = THUMB_EDGE,
        max_file_bytes: int | None = DEFAULT_MAX_IMAGE_MB * 10**6,
    ) -> None:
        self.data_dir = data_dir
        self.edge = edge
        #: A view whose file is larger, or above Pillow's pixel limit, gets no thumbnail.
        self.max_file_bytes = max_file_bytes
        self._guard = PathGuard(data_dir) if data_dir is not None and data_dir.is_dir() else None
        self._urls: dict[ViewKey, str | None] = {}
        self.missing = 0

    @property
    def available(self) -> bool:
        return self._guard is not None

    def url(self, key: ViewKey) -> str | None:
        """The view's thumbnail as a data URL, or None when its image cannot be read."""
        if key not in self._urls:
            self._urls[key] = self._make(key)
            self.missing += self._urls[key] is None
        return self._urls[key]

    def _make(self, key: ViewKey) -> str | None:
        from PIL import Image

        if self._guard is None:
            return None
        image_path, crop, resize = key
        try:
            path = self._guard.resolve(image_path)
            with opened_image(path, image_path, max_bytes=self.max_file_bytes) as opened:
                if crop is None:
                    # JPEG decodes at a fraction of its size for free; a crop needs the
                    # original coordinates, so it decodes whole.
                    opened.draft("RGB", (self.edge, self.edge))
                image = apply_view(opened.convert("RGB"), View(image_path, crop, resize))
                image.thumbnail((self.edge, self.edge), Image.Resampling.BILINEAR)
                buffer = io.BytesIO()
                image.save(buffer, format=_format(), quality=THUMB_QUALITY, method=0)
        except (OSError, ValueError, ProactiveBenchError):  # ImageError among them
            return None
        mime = "image/webp" if _format() == "WEBP" else "image/jpeg"
        return f"data:{mime};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


@cache
def _format() -> str:
    from PIL import features

    return "WEBP" if features.check("webp") else "JPEG"
