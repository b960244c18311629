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

from proactivebench.data.images import DEFAULT_MAX_IMAGE_MB
from proactivebench.data.layout import PathGuard
from proactivebench.data.thumbnails import (
    THUMB_QUALITY,
    Batch,
    ViewKey,
    thumbnail_format,
)
from proactivebench.errors import ProactiveBenchError
from proactivebench.report.thumbcache import FileIdentity, ThumbCache, content_hash, thumb_key

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
        #: Started, not collected: the jobs, their files' content hashes, the batch.
        self._pending: tuple[list[tuple[str, ViewKey]], list[str | None], Batch] | None = None
        #: Files hashed since the cache was last written: identity -> content hash.
        self._new_files: dict[FileIdentity, str] = {}
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
        digests: list[str | None] = []
        for key in wanted:
            path = self._path(key)
            if path is None:
                self._settle(key, None)
                continue
            digest = self._digest(path)
            cached = None if digest is None else self._cache_get(digest, key)
            if cached is not None:
                self._settle(key, cached)
            else:
                jobs.append((path, key))
                digests.append(digest)
        if jobs:
            batch = Batch(jobs, self.edge, self.max_file_bytes, self.pool_min_views)
            self._pending = (jobs, digests, batch)
        else:
            self._keep([])

    def close(self) -> None:
        """Stop the worker processes of thumbnails not collected (after an error, Ctrl-C)."""
        if self._pending is not None:
            self._pending[2].close()
            self._pending = None

    def _collect(self) -> None:
        """Take the thumbnails started by `start`, and keep them in the cache."""
        if self._pending is None:
            return
        jobs, digests, batch = self._pending
        self._pending = None
        made = batch.results()
        self.made += len(jobs)
        keep: list[tuple[str, bytes]] = []
        for (_, key), digest, thumb in zip(jobs, digests, made, strict=True):
            self._settle(key, thumb)
            if thumb is not None and digest is not None:
                keep.append((self._thumb_key(digest, key), thumb))
        self._keep(keep)

    def _keep(self, thumbs: list[tuple[str, bytes]]) -> None:
        """Write new thumbnails, and the hashes of files read since the last write, in the
        cache."""
        if self.cache is not None and (self._new_files or thumbs):
            self.cache.put(self._new_files.items(), thumbs)
        self._new_files = {}

    def _path(self, key: ViewKey) -> str | None:
        if self._guard is None:
            return None
        try:
            return self._guard.resolve(key[0])
        except (OSError, ValueError, ProactiveBenchError):
            return None

    def _digest(self, path: str) -> str | None:
        """The BLAKE2b hash of the file's bytes (twice as fast as SHA-256 here: 0.09 s for the
        480 files of a 7 x 60 run), by its identity when the cache knows it, else read
        (and kept with the thumbnails); None without a cache or for a file that cannot be
        read."""
        if self.cache is None or not self.cache.usable:
            return None
        try:
            stat = os.stat(path)
            if self.max_file_bytes is not None and stat.st_size > self.max_file_bytes:
                return None  # refused as when it is made
            identity = (path, stat.st_size, stat.st_mtime_ns)
            digest = self._new_files.get(identity) or self.cache.digest(identity)
            if digest is None:
                with open(path, "rb") as file:
                    digest = self._new_files[identity] = content_hash(file.read())
        except OSError:
            return None
        return digest

    def _cache_get(self, digest: str, key: ViewKey) -> bytes | None:
        assert self.cache is not None
        return self.cache.thumbnail(self._thumb_key(digest, key))

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
