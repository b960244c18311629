"""Thumbnails kept across reports: the same view of the same image is made once per user.

A report of a large run spends most of its time making thumbnails, and the reports of one
data set (a rerun, a report of several runs, a judged run) show the same views again. This
cache keeps each thumbnail by what determines it: a hash of its image file's bytes, the
view's transform (crop, resize), and the thumbnail's edge, quality and format; a file whose
content changed gets a new thumbnail. Hashing every file on every report would cost a read of
each, so a file's hash is remembered by its identity (real path, size, modification time in
nanoseconds): an unchanged file is only `stat`ed, and a file seen for the first time is hashed
by the worker that makes its thumbnail.

One SQLite file (by default `thumbnails.sqlite` beside the response cache), in WAL mode so
that two reports written at once share it. The cache only saves work, so none of its faults
fails a report: a file that cannot be opened, read or written (damaged, read-only, busy past
the timeout) is told once, as a warning, and the report makes the rest of its thumbnails
afresh. A damaged database is removed so that the next report starts a sound one; a file of
something else there (not SQLite, another program's database) is left as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from proactivebench.core.errors import ForeignFileError, WriteError
from proactivebench.core.paths import not_our_database, refuse_linked_database, side_cache_fault
from proactivebench.data.thumbnails import FileIdentity

log = logging.getLogger(__name__)

#: Bumped when the way thumbnails are made changes, so that older ones are not shown.
THUMB_VERSION = 2
#: Seconds a read or write waits for another report's transaction before giving up.
BUSY_TIMEOUT_S = 10.0

#: The cache's tables: a database with neither is another program's, left alone.
_TABLES = frozenset({"files", "thumbs"})


def thumb_key(digest: str, view: tuple[object, object], made: tuple[object, ...]) -> str:
    """The key of one thumbnail: the file's content hash, the view's crop and resize, and how
    the thumbnail is made (edge, quality, format)."""
    text = repr((THUMB_VERSION, digest, view, made))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ThumbCache:
    """Content hashes of files and thumbnails by key, in one SQLite file; off after a fault."""

    def __init__(self, path: str | Path, *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        #: What went wrong, once told; None while the cache works.
        self.problem: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            refuse_linked_database(self.path)
            self._db = sqlite3.connect(self.path, timeout=busy_timeout)
            foreign = not_our_database(self.path, self._db, _TABLES.__contains__)
            if foreign is not None:
                raise ForeignFileError(self.path, foreign)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, "
                    "mtime_ns INTEGER, digest TEXT NOT NULL)"
                )
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS thumbs (key TEXT PRIMARY KEY, data BLOB NOT NULL)"
                )
        except (OSError, sqlite3.Error, WriteError) as exc:  # a link, another file
            self._fault(exc)

    @property
    def usable(self) -> bool:
        return self._db is not None

    def digest(self, identity: FileIdentity) -> str | None:
        """The content hash recorded for a file of this identity, or None."""
        row = self._one("SELECT digest, size, mtime_ns FROM files WHERE path = ?", identity[0])
        if row is None or (row[1], row[2]) != identity[1:]:
            return None
        return str(row[0])

    def thumbnail(self, key: str) -> bytes | None:
        row = self._one("SELECT data FROM thumbs WHERE key = ?", key)
        return None if row is None else bytes(row[0])

    def put(
        self, files: Iterable[tuple[FileIdentity, str]], thumbs: Iterable[tuple[str, bytes]]
    ) -> None:
        """Record files' hashes and thumbnails, in one transaction."""
        if self._db is None:
            return
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                    [(*identity, digest) for identity, digest in files],
                )
                self._db.executemany("INSERT OR REPLACE INTO thumbs VALUES (?, ?)", thumbs)
        except (OSError, sqlite3.Error) as exc:
            self._fault(exc)

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    def _one(self, query: str, value: str) -> tuple | None:
        if self._db is None:
            return None
        try:
            return self._db.execute(query, (value,)).fetchone()
        except (OSError, sqlite3.Error) as exc:
            self._fault(exc)
            return None

    def _fault(self, exc: BaseException) -> None:
        """The cache is off for the rest of this report, told once; a damaged file goes."""
        self.close()
        if self.problem is None:
            self.problem = side_cache_fault(
                "thumbnail cache", self.path, exc, "this report makes its thumbnails afresh"
            )
