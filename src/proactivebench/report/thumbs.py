"""Thumbnails of the views a model was shown, for the HTML report's episode viewer.

A view is an image file of the data directory with its transforms (COCO's crop, a resize):
the thumbnail shows the same region the run showed, shrunk to a size a report of thousands of
episodes can carry (`data.thumbnails`: decoded at a reduced scale, made in worker processes
when there are many). Each distinct view is made once, however many turns, episodes and runs
show it, and a `ThumbCache` keeps it across reports, keyed by its file's content and the view.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data.directory import PathGuard
from proactivebench.data.images import DEFAULT_MAX_IMAGE_MB
from proactivebench.data.thumbnails import (
    THUMB_QUALITY,
    Batch,
    FileIdentity,
    ViewKey,
    thumbnail_format,
)
from proactivebench.report.thumbcache import ThumbCache, thumb_key

if TYPE_CHECKING:
    from proactivebench.report.runs import Run

#: The longest edge of a thumbnail, in pixels: with WebP at quality 50, ~0.3-1 KB a view,
#: which keeps a report of 7 x 500 episodes far below 30 MB.
THUMB_EDGE = 112


def view_key(turn: dict) -> ViewKey:
    crop = turn.get("crop")
    return (turn["image"], tuple(crop) if crop is not None else None, turn.get("resize_short_edge"))


class Thumbnails:
    """Data URLs of the views of one data directory, made on first request (`url`) or all at
    once (`prefetch`, which can use the cores)."""

    def __init__(
        self,
        data_dir: Path | None,
        edge: int = THUMB_EDGE,
        max_file_bytes: int | None = DEFAULT_MAX_IMAGE_MB * 10**6,
        cache: ThumbCache | None = None,
        pool_min_views: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.edge = edge
        #: A view whose file is larger, or above Pillow's pixel limit, gets no thumbnail.
        self.max_file_bytes = max_file_bytes
        self.cache = cache if cache is not None and cache.usable else None
        self.pool_min_views = pool_min_views
        self._guard = PathGuard(data_dir) if data_dir is not None and data_dir.is_dir() else None
        self._urls: dict[ViewKey, str | None] = {}
        #: Started, not collected: the jobs and their batch.
        self._pending: tuple[list[tuple[str, ViewKey]], Batch] | None = None
        self.missing = 0
        #: Thumbnails made (not taken from the cache), for tests and benchmarks.
        self.made = 0

    @property
    def available(self) -> bool:
        return self._guard is not None

    def url(self, key: ViewKey) -> str | None:
        """The view's thumbnail as a data URL, or None when its image cannot be read."""
        self._collect()
        if key not in self._urls:
            self.prefetch([key])
        return self._urls[key]

    def prefetch(self, keys: Iterable[ViewKey]) -> None:
        """Make the thumbnails of `keys` not made yet, now."""
        self.start(keys)
        self._collect()

    def start(self, keys: Iterable[ViewKey]) -> None:
        """Begin making the thumbnails of `keys` not made yet: those in the cache are taken
        from it; the others, when there are many, are made by worker processes while this one
        goes on (collected at the next `url` or `prefetch`), else made when collected."""
        self._collect()
        wanted = [k for k in dict.fromkeys(keys) if k not in self._urls]
        jobs: list[tuple[str, ViewKey]] = []
        for key in wanted:
            path = self._path(key)
            if path is None:
                self._settle(key, None)
            elif (cached := self._cached(path, key)) is not None:
                self._settle(key, cached)
            else:
                jobs.append((path, key))
        if jobs:
            hashed = self.cache is not None
            batch = Batch(jobs, self.edge, self.max_file_bytes, self.pool_min_views, hashed)
            self._pending = (jobs, batch)

    def close(self) -> None:
        """Stop the worker processes of thumbnails not collected (after an error, Ctrl-C)."""
        if self._pending is not None:
            self._pending[1].close()
            self._pending = None

    def _collect(self) -> None:
        """Take the thumbnails started by `start`, and keep them in the cache."""
        if self._pending is None:
            return
        jobs, batch = self._pending
        self._pending = None
        made = batch.results()
        self.made += len(jobs)
        files: dict[FileIdentity, str] = {}
        keep: list[tuple[str, bytes]] = []
        for (_, key), (thumb, identity, digest) in zip(jobs, made, strict=True):
            self._settle(key, thumb)
            if thumb is not None and identity is not None and digest is not None:
                files[identity] = digest
                keep.append((self._thumb_key(digest, key), thumb))
        if self.cache is not None and keep:
            self.cache.put(files.items(), keep)

    def _path(self, key: ViewKey) -> str | None:
        if self._guard is None:
            return None
        try:
            return self._guard.resolve(key[0])
        except (OSError, ValueError, ProactiveBenchError):
            return None

    def _cached(self, path: str, key: ViewKey) -> bytes | None:
        """The view's thumbnail from the cache, found by its file's identity (a `stat`, no
        read); None without a cache, for a file seen for the first time, changed, or above
        the size cap (refused as when it is made)."""
        if self.cache is None or not self.cache.usable:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        if self.max_file_bytes is not None and stat.st_size > self.max_file_bytes:
            return None
        digest = self.cache.digest((path, stat.st_size, stat.st_mtime_ns))
        return None if digest is None else self.cache.thumbnail(self._thumb_key(digest, key))

    def _thumb_key(self, digest: str, key: ViewKey) -> str:
        return thumb_key(digest, key[1:], (self.edge, THUMB_QUALITY, thumbnail_format()))

    def _settle(self, key: ViewKey, thumb: bytes | None) -> None:
        self._urls[key] = None if thumb is None else _data_url(thumb)
        self.missing += thumb is None


def prefetch_all(wanted: Iterable[tuple[Thumbnails | None, Iterable[ViewKey]]]) -> None:
    """Make the thumbnails of many views at once, by data directory (`Thumbnails.prefetch`)."""
    for thumbs, keys in _by_maker(wanted):
        thumbs.prefetch(keys)


def start_all(thumbs: Mapping[str, Thumbnails | None], runs: Iterable[Run]) -> None:
    """Begin making the thumbnails of every view the runs show (`Thumbnails.start`), by
    scenario, so that they are made while the report is drawn."""
    wanted = (
        (thumbs.get(scenario), (key for line in lines for key in views_of(line)))
        for run in runs
        for scenario, lines in run.by_scenario.items()
    )
    for maker, keys in _by_maker(wanted):
        maker.start(keys)


def views_of(line: dict[str, Any]) -> Iterator[ViewKey]:
    """The views a result line shows: its turns' (an open-ended line is its own turn), and
    those of its in-context demonstrations."""
    turns = (line.get("trace") or []) if "trace" in line else [line]
    for demo in line.get("demonstrations") or []:
        turns = [*turns, *(demo.get("turns") or [])]
    for turn in turns:
        if turn.get("image"):
            yield view_key(turn)


def _by_maker(
    wanted: Iterable[tuple[Thumbnails | None, Iterable[ViewKey]]],
) -> list[tuple[Thumbnails, list[ViewKey]]]:
    groups: dict[int, tuple[Thumbnails, list[ViewKey]]] = {}
    for thumbs, keys in wanted:
        if thumbs is not None:
            groups.setdefault(id(thumbs), (thumbs, []))[1].extend(keys)
    return list(groups.values())


def _data_url(thumb: bytes) -> str:
    mime = "image/webp" if thumbnail_format() == "WEBP" else "image/jpeg"
    return f"data:{mime};base64," + base64.b64encode(thumb).decode("ascii")
