"""Where the tool keeps what it makes for the user (generated data, demo runs, response and
thumbnail caches), and how every file of a run, report, cache or data directory is opened to
be written: never through a link that leads outside it (`open_to_write`, `write_whole`,
`staged_folder`, `refuse_link`), and a file or folder written whole is never seen half-written."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from platformdirs import user_cache_dir

from proactivebench.core.errors import ForeignFileError, LinkRefusedError, WriteError

if TYPE_CHECKING:
    import sqlite3

#: Added to every open for writing: a link in the file's place is an error (ELOOP) rather than
#: followed, a FIFO does not block the open (O_NONBLOCK; it is then refused as not a file), and
#: the descriptor is not inherited by the processes we start.
SAFE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def cache_root() -> Path:
    """The user cache directory of proactivebench (`PROACTIVEBENCH_CACHE` overrides it)."""
    return Path(os.environ.get("PROACTIVEBENCH_CACHE") or user_cache_dir("proactivebench"))


def response_cache_path() -> Path:
    """The default SQLite response cache, shared by all runs of this user."""
    return cache_root() / "responses.sqlite"


def thumbnail_cache_path() -> Path:
    """The default SQLite thumbnail cache of reports, beside the response cache."""
    return cache_root() / "thumbnails.sqlite"


def refuse_link(path: str | os.PathLike[str]) -> None:
    """Raise `LinkRefusedError` when `path` is a symbolic link: for files that a library opens
    by name (SQLite, the lock file), where `open_to_write` cannot be used."""
    if os.path.islink(path):
        raise LinkRefusedError(path)


def open_to_write(path: str | os.PathLike[str], flags: int, mode: int = 0o666) -> int:
    """`os.open(path, flags)` for writing a file of our own: a symbolic link, FIFO or device in
    its place raises `LinkRefusedError` naming it (never followed, never blocking); other
    failures raise `OSError` as `os.open` does. `flags` says the rest (O_WRONLY or O_RDWR,
    O_APPEND, O_CREAT, O_TRUNC, O_EXCL).

    Why: a `results.jsonl` (or report, cache, marker) that is a link to a file elsewhere would
    have that file truncated or appended to; O_NOFOLLOW makes the check and the open one step,
    so a link swapped in between cannot slip through.
    """
    try:
        fd = os.open(path, flags | SAFE_FLAGS, mode)
    except OSError as exc:
        if os.path.islink(path):
            raise LinkRefusedError(path) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader
            raise LinkRefusedError(path, "a FIFO") from None
        raise
    try:
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            what = "a FIFO" if stat.S_ISFIFO(kind) else "not a regular file"
            raise LinkRefusedError(path, what)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_whole(path: str | os.PathLike[str], content: str | bytes) -> None:
    """Write `path` all at once: into a new temporary file beside it (O_EXCL: never an existing
    file or link), fsynced, then renamed over `path` (a rename replaces a link at `path` rather
    than writing through it). A crash or a full disk leaves the old file or the new one, never
    half of one; a failure raises `WriteError` naming `path`, with the temporary file removed.
    """
    path = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    temporary = path.with_name(f".{path.name}.partial-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = open_to_write(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except OSError as exc:
        raise WriteError(path, exc) from None
    try:
        with open(fd, "wb", closefd=True) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise WriteError(path, exc) from None


def _regular_file(path: str | os.PathLike[str]) -> Callable[[os.stat_result], None]:
    def check(found: os.stat_result) -> None:
        if not stat.S_ISREG(found.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or folder)", path)

    return check


def open_to_read(
    path: str | os.PathLike[str], check: Callable[[os.stat_result], None] | None = None
) -> BinaryIO:
    """`path` open for reading, opened without blocking and checked on the open descriptor
    (`check` of its `fstat`; by default: a regular file, else `OSError`), so that a FIFO or
    device in a file's place, even one swapped in after an earlier look, fails at once instead
    of a read that never ends."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        (check or _regular_file(path))(os.fstat(fd))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb")


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a run's or report's own file (`results.jsonl`, `run.json`, a note), read
    through `open_to_read`: a FIFO or device in its place is an `OSError` at once."""
    with open_to_read(path) as f:
        return f.read()


def refuse_linked_database(path: str | os.PathLike[str]) -> None:
    """A SQLite file, and the journals SQLite opens beside it by name, must not be links:
    SQLite follows them, so writes would land outside the cache directory."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        refuse_link(f"{os.fspath(path)}{suffix}")


#: The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def not_our_database(
    path: str | os.PathLike[str], db: sqlite3.Connection, is_ours: Callable[[str], bool]
) -> str | None:
    """Why the file at `path`, just connected to as `db` (nothing read or written yet), is no
    store of ours to write into, or None: a new or empty file, or a database holding a table
    `is_ours` accepts (tables added beside ours are the user's business). A file that is not
    SQLite (a results.jsonl given as `--cache` by a slip) would be taken for a damaged cache,
    set aside or removed, and a database put in its place; a database of tables that are all
    another program's would get ours and its journal mode changed. Both are left as they are.
    A damaged database raises SQLite's error here, as anywhere."""
    try:
        with open_to_read(path) as f:
            head = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:  # SQLite makes it when it first writes
        head = b""
    if head and head != SQLITE_HEADER:
        return "it is not a SQLite database, left as it is"
    tables = [
        name
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("sqlite_")
    ]
    if tables and not any(map(is_ours, tables)):
        return f"it is another program's database (tables {', '.join(tables)}), left as it is"
    return None


def remove_damaged_database(path: str | os.PathLike[str], exc: BaseException) -> bool:
    """Whether `exc` says the SQLite file at `path` is damaged (not a database, corrupt); if so,
    the file and its journals are removed, so that a cache that only saves work (thumbnails,
    image checks) starts a sound one next time."""
    import sqlite3  # only on a fault: most commands open no database

    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF if isinstance(exc, sqlite3.Error) else 0
    if code not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return False
    for suffix in ("-wal", "-shm", ""):
        with contextlib.suppress(OSError):
            Path(f"{os.fspath(path)}{suffix}").unlink(missing_ok=True)
    return True


def side_cache_fault(
    name: str, path: str | os.PathLike[str], exc: BaseException, instead: str
) -> str:
    """A fault of a cache that only saves work (the `name` at `path`: thumbnails, image checks):
    a damaged file is removed, and one warning says what is done `instead`. Returns the
    problem, for the cache to stay off after it."""
    damaged = remove_damaged_database(path, exc)
    problem = exc.problem if isinstance(exc, ForeignFileError) else str(exc) or type(exc).__name__
    what = "damaged, removed" if damaged else "not usable"
    logging.getLogger(__name__).warning(
        "the %s %s is %s (%s): %s", name, os.fspath(path), what, problem, instead
    )
    return problem


@contextlib.contextmanager
def staged_folder(folder: Path) -> Iterator[Path]:
    """A folder to build `folder`'s new contents in (beside it, on the same disk): when the
    block ends without an error they are moved into `folder` (renames, which take no space;
    files of `folder` not rebuilt are left), otherwise the stage is removed and `folder` is as
    it was. What fails to be written raises `WriteError` naming the file. `folder` may be
    given as `.` or `..` (its name is then the one the path leads to).
    """
    whole = Path(os.path.abspath(folder))  # "." has no name to put a stage beside
    if not whole.name:
        raise WriteError(folder, OSError(errno.EISDIR, "the root is no folder to build in"))
    blocker = next((p for p in (whole, *whole.parents) if p.is_file()), None)
    if blocker is not None:  # named, rather than as mkdir's "File exists" or "Not a directory"
        raise WriteError(folder, OSError(errno.ENOTDIR, f"{blocker} is a file, not a folder"))
    try:
        whole.parent.mkdir(parents=True, exist_ok=True)
        stage = whole.with_name(f".{whole.name}.partial-{os.getpid()}-{secrets.token_hex(4)}")
        stage.mkdir()
    except OSError as exc:
        raise WriteError(folder, exc) from None
    try:
        try:
            yield stage
        except OSError as exc:
            raise WriteError(exc.filename, exc) from None
        try:
            refuse_link(folder)
            if not folder.exists():
                os.rename(stage, folder)
                return
            for source in sorted(p for p in stage.rglob("*") if p.is_file()):
                target = folder / source.relative_to(stage)
                _refuse_linked_folders(folder, target.parent)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)
        except OSError as exc:
            raise WriteError(folder, exc) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _refuse_linked_folders(folder: Path, inner: Path) -> None:
    """A folder between `folder` and `inner` (`report/tables`) that is a link would move the
    new files outside `folder`: refused by name."""
    for part in [inner, *inner.parents]:
        if part == folder or folder not in part.parents:
            break
        refuse_link(part)
