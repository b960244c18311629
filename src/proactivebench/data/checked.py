"""Image checks remembered across runs: each version of an image file has its header read once.

Before a run, every image its episodes may show is checked (`validate.check_image_contents`:
it exists, is within the size cap, has a header Pillow reads, within Pillow's pixel limit).
Reading the headers is most of that check, and every run, resumed run, `--limit` trial and
experiment of a suite would read them again: on the official test set, tens of thousands of
files. So the versions of the files that passed are remembered, here, by what tells a version
apart without reading it: the real path, size, modification time (ns) and inode, under
Pillow's pixel limit of the check (`images.header_version`). A file written since, even to the
same size, or a limit lowered, has another version and is read again; the size cap is checked
from `stat` on every run, remembered or not. Only passes are remembered: a file that failed is
read again by the next run, and refused again.

One SQLite file (`image-checks.sqlite`, beside the response cache a run uses), in WAL mode so
that runs started together share it. It only saves work, so none of its faults fails a run: a
file that cannot be opened, read or written is told once, as a warning, and the run reads the
headers itself; a damaged database is removed so that the next run starts a sound one, a file
of something else there (not SQLite, another program's database) is left as it is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from proactivebench.core.errors import ForeignFileError, WriteError
from proactivebench.core.paths import not_our_database, refuse_linked_database, side_cache_fault

if TYPE_CHECKING:
    from proactivebench.data.images import HeaderVersion

log = logging.getLogger(__name__)

#: The memory's file name, beside the response cache.
NAME = "image-checks.sqlite"
#: Bumped when what the header check verifies changes: what an older check passed is read again.
CHECK_VERSION = 1
_TABLE = f"headers_v{CHECK_VERSION}"
#: What this memory's tables are called, of every version (a database with none of them is
#: another program's, left alone).
_TABLES = "headers_v"
#: Seconds a read or write waits for another run's transaction before giving up.
BUSY_TIMEOUT_S = 10.0
#: Paths per query (below SQLite's limit on a statement's parameters).
_CHUNK = 500
#: From this many paths under one folder, the folder's rows are read at once (`recall`).
_RANGE_FROM = 2000
_SELECT = f"SELECT path, size, mtime_ns, inode, pixel_limit FROM {_TABLE}"


class CheckedImages:
    """The versions of image files whose header check passed, in one SQLite file; off after a
    fault. Opened for each look-up and each write, so that nothing is left to close."""

    def __init__(self, path: str | Path, *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        #: What went wrong, once told; None while the memory works.
        self.problem: str | None = None

    @classmethod
    def beside(cls, cache_path: str | Path) -> CheckedImages:
        """The memory in the folder of the response cache at `cache_path`."""
        return cls(Path(cache_path).parent / NAME)

    def recall(self, paths: Sequence[str], *, under: str | None = None) -> list[HeaderVersion]:
        """The remembered versions of the files at `paths` (real paths), one at most each.

        With `under` (the real path, ending in a separator, of a folder that holds them all)
        and many paths, the folder's rows are read as one range of the primary key and those of
        `paths` kept: on a data set of tens of thousands of images, a fraction of the time of
        asking for each."""
        if not paths:
            return []  # nothing to ask: the file is not even opened
        with self._connection() as db:
            if db is None:
                return []
            if under is not None and under.endswith(os.sep) and len(paths) >= _RANGE_FROM:
                # The paths starting with `under`: from it up to, not including, the string
                # whose last character follows the separator.
                above = under[:-1] + chr(ord(under[-1]) + 1)
                rows = db.execute(f"{_SELECT} WHERE path >= ? AND path < ?", (under, above))
                wanted = set(paths)
                return [row for row in rows.fetchall() if row[0] in wanted]
            found: list[HeaderVersion] = []
            for start in range(0, len(paths), _CHUNK):
                chunk = paths[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                # (TEXT, INTEGER...) come back as (str, int...): a version as it is.
                found += db.execute(f"{_SELECT} WHERE path IN ({marks})", chunk).fetchall()
            return found
        return []  # the memory failed while it was read: nothing recalled

    def remember(self, versions: Iterable[HeaderVersion]) -> None:
        """Record that these versions passed (each replaces its path's earlier version)."""
        rows = list(versions)
        if not rows:
            return
        with self._connection() as db:
            if db is not None:
                with db:
                    db.executemany(f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?, ?, ?, ?)", rows)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection | None]:
        """The open memory, or None once it has failed; a fault inside turns it off."""
        db = self._open()
        if db is None:
            yield None
            return
        try:
            yield db
        except (OSError, sqlite3.Error) as exc:
            self._fault(exc)
        finally:
            with contextlib.suppress(sqlite3.Error):
                db.close()

    def _open(self) -> sqlite3.Connection | None:
        if self.problem is not None:
            return None
        db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            refuse_linked_database(self.path)
            db = sqlite3.connect(self.path, timeout=self.busy_timeout)
            foreign = not_our_database(self.path, db, lambda table: table.startswith(_TABLES))
            if foreign is not None:
                raise ForeignFileError(self.path, foreign)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            with db:
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {_TABLE} (path TEXT PRIMARY KEY, size INTEGER, "
                    "mtime_ns INTEGER, inode INTEGER, pixel_limit INTEGER)"
                )
            return db
        except (OSError, sqlite3.Error, WriteError) as exc:  # a link, another file
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            self._fault(exc)
            return None

    def _fault(self, exc: BaseException) -> None:
        """The memory is off for the rest of this process, told once; a damaged file goes."""
        self.problem = side_cache_fault(
            "memory of image checks", self.path, exc, "this run reads every image header itself"
        )
