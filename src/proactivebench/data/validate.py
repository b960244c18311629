"""`data validate`: every problem of a data directory, in one report.

Checks every record of every scenario file (the official filter is not applied: a broken
record is broken whether or not today's filter keeps it) and that every image an episode may
show exists inside the directory, in play and in reference mode.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat as kinds
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from proactivebench.benchmark.records import Source, record_warnings
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Episode
from proactivebench.core.errors import DataError, ProactiveBenchError
from proactivebench.data.directory import (
    PathGuard,
    read_records,
    scenario_file,
    scenarios_present,
)
from proactivebench.data.images import (
    DEFAULT_MAX_IMAGE_MB,
    HeaderVersion,
    UnreadableImage,
    any_header_passed,
    check_header,
    header_passed,
    opened_image,
    passed_unchanged,
    recall_headers,
)

if TYPE_CHECKING:
    from proactivebench.data.checked import CheckedImages

#: An image to check: its path relative to the data dir, and the record that first shows it.
Item = tuple[str, Source]
Found = tuple[DataError | None, HeaderVersion | None]
_T = TypeVar("_T")
_R = TypeVar("_R")

#: What is wrong with an image path, by the kind `PathGuard.kind` finds.
_KIND_PROBLEMS = {
    "missing": "image not found",
    "empty": "image file is empty (0 bytes)",
    "other": "not a file",
}

#: From this many headers to read (or remembered images to `stat`), a pool is worth starting on
#: a network file system.
_POOL_FROM = 64
#: File systems whose reads wait on a network (or on a user-space server): their headers are
#: read by a pool, whose waits overlap (`_read_headers`). Any "fuse." type counts too.
NETWORK_FILE_SYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "lustre",
        "gpfs",
        "beegfs",
        "ceph",
        "glusterfs",
        "9p",
        "afs",
        "fuse",
        "fuseblk",
        "virtiofs",
        "panfs",
        "wekafs",
        "orangefs",
    }
)
#: Threads reading headers (or taking `stat`s) there.
_THREADS = 8
#: Where the mounted file systems are listed (Linux).
_MOUNTS = "/proc/self/mounts"


@dataclass
class ImageWalk:
    """The images the episodes may show: those present (once each, with the record that first
    shows it) and the problems found."""

    present: list[tuple[str, Source]] = field(default_factory=list)
    problems: list[DataError] = field(default_factory=list)


def walk_images(episodes: list[Episode], guard: PathGuard) -> ImageWalk:
    """Check that every image the episodes may show is a non-empty file inside the data dir.

    A record is not walked past its first missing image: its later frames are most likely
    missing too, and a record claiming a billion frames then costs no more than the files that
    exist. Empty files and folders are reported one by one.
    """
    walk = ImageWalk()
    seen: set[str] = set()
    bad: set[str] = set()
    for episode in episodes:
        source = episode.record.source
        for relative in episode.image_paths():
            if relative in bad:
                break  # reported already, under the record that first showed it
            if relative in seen:
                continue
            try:
                kind = guard.kind(relative)
                problem = f"{_KIND_PROBLEMS[kind]}: {relative}" if kind != "file" else None
            except DataError as exc:  # the path leaves the data dir
                kind, problem = "outside", exc.message
            seen.add(relative)
            if problem:
                walk.problems.append(DataError(problem, path=source.path, line=source.line))
                if kind in ("missing", "outside"):
                    bad.add(relative)
                    break
                continue
            walk.present.append((relative, source))
    return walk


def remembered(
    root: str | os.PathLike[str],
    relatives: Iterable[str],
    max_bytes: int | None,
    memory: CheckedImages | None,
) -> set[str]:
    """The images (paths under the data dir `root`) that, as they are now, passed the checks
    of `walk_images` and `check_image_contents` before (in this process, or in an earlier one
    with `memory`): one `lstat` each (by a pool of threads on a network file system, where each
    waits on the server), nothing listed or read. Only a plain path counts: its
    folder its own real path (no link on the way, nothing leaving the data dir) and the file a
    regular one, not a link, within the size cap, of a version whose header passed under
    today's pixel limit. Any other image is for the walk and the header check, as always."""
    inside = os.path.realpath(root).rstrip(os.sep) + os.sep
    candidates: dict[str, str] = {}
    for relative in set(relatives):
        # A plain relative path: no "..", "." or empty part (normpath would change it).
        wrapped = f"/{relative.replace(os.sep, '/')}/"
        if "//" in wrapped or "/./" in wrapped or "/../" in wrapped:
            continue
        candidates[relative] = inside + (
            relative if os.sep == "/" else relative.replace("/", os.sep)
        )
    if memory is not None:
        recall_headers(memory.recall(list(candidates.values()), under=inside))
    if not any_header_passed():  # a first run: nothing to look up
        return set()
    plain_folders = {inside.rstrip(os.sep): True}  # the data dir's real path: plain

    def plain(folder: str) -> bool:
        """Whether `folder` (below the data dir) is a folder reached through no link: each
        part below the data dir looked at once (`lstat`), whatever the images under it."""
        known = plain_folders.get(folder)
        if known is None:
            parent = os.path.dirname(folder)
            try:
                known = (
                    parent != folder and plain(parent) and kinds.S_ISDIR(os.lstat(folder).st_mode)
                )
            except OSError:
                known = False
            plain_folders[folder] = known
        return known

    in_plain_folders = {
        relative: path for relative, path in candidates.items() if plain(path.rpartition(os.sep)[0])
    }
    if len(in_plain_folders) < _POOL_FROM or not on_network_file_system(inside):
        return passed_unchanged(in_plain_folders, max_bytes)
    # On a network file system each `lstat` waits on the server: threads overlap the waits.
    parts = _in_pool(
        lambda part: [passed_unchanged(dict(part), max_bytes)], list(in_plain_folders.items())
    )
    return set().union(*parts)


def check_image_contents(
    images: list[tuple[str, Source]],
    guard: PathGuard,
    *,
    decode: bool = False,
    max_bytes: int | None = DEFAULT_MAX_IMAGE_MB * 10**6,
    memory: CheckedImages | None = None,
) -> list[DataError]:
    """Every image file must be one Pillow can read, within the size cap and Pillow's pixel
    limit: its header (cheap), or with `decode` its pixels too (slow: every image is decoded).

    Headers are read in this thread, or by a pool of threads on a network file system, where
    each read waits (`_read_headers`); each version of a file once per process, and once for
    all processes with `memory`: a version an earlier run found good is only `stat`ed. The
    problems come in the order of `images`, whichever thread found them."""
    if decode:
        return [p for p in map(partial(_decoded, guard, max_bytes), images) if p is not None]
    paths: list[str] = []
    for relative, _ in images:
        with contextlib.suppress(DataError):  # told by _header below, in its place
            paths.append(guard.resolve(relative))
    if memory is not None:
        recall_headers(memory.recall(paths))
    # Those that passed before cost a `stat` each, here; a task of the pool would cost more.
    known = [_header(guard, max_bytes, False, item) for item in images]
    unread = [item for item, found in zip(images, known, strict=True) if found is None]
    pooled = len(unread) >= _POOL_FROM and on_network_file_system(guard.root)
    read = iter(_read_headers(partial(_header, guard, max_bytes, True), unread, pooled))
    found = [done if done is not None else next(read) for done in known]
    if memory is not None:
        memory.remember(version for _, version in found if version is not None)
    return [problem for problem, _ in found if problem is not None]


def _read_headers(
    check: Callable[[Item], Found | None], images: list[Item], pooled: bool
) -> list[Found]:
    """`check` of each image, in order: in the caller's thread, or with `pooled` by a pool of
    threads, in slices (a task costs more than a small file's header). Parsing a header is
    Python work under the GIL, so on a local disk, warm or cold, threads only take turns (a
    pool of eight took twice as long as one thread on the project machine); only a disk that
    makes each read wait gains from them (`on_network_file_system`)."""
    if not pooled:
        return [_found(check(item)) for item in images]
    return _in_pool(lambda part: [_found(check(item)) for item in part], images)


def _in_pool(work: Callable[[list[_T]], list[_R]], items: list[_T]) -> list[_R]:
    """`work` over `items` by a pool of `_THREADS` threads, in slices (a task costs more than
    one small file's read or `stat`): the results of the slices, in order."""
    size = -(-len(items) // (_THREADS * 4))
    slices = [items[i : i + size] for i in range(0, len(items), size)]
    with ThreadPoolExecutor(_THREADS, thread_name_prefix="image-check") as pool:
        return [found for part in pool.map(work, slices) for found in part]


def on_network_file_system(path: str | os.PathLike[str]) -> bool:
    """Whether `path` lies on a file system of `NETWORK_FILE_SYSTEMS` (the mount holding its
    real path, from the system's list of mounts); False where that list cannot be read."""
    real = os.path.realpath(path)
    try:
        with open(_MOUNTS, "rb") as mounts:
            table = [line.split() for line in mounts]
    except OSError:
        return False
    best, kind = "", ""
    for fields in table:
        if len(fields) < 3:
            continue
        # Spaces and other bytes of a mount point are written as octal escapes (\040).
        point = os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[1]))
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2].decode("ascii", "replace")
    return kind in NETWORK_FILE_SYSTEMS or kind.startswith("fuse.")


def _found(found: Found | None) -> Found:
    assert found is not None  # a header read always says what it found
    return found


def _header(guard: PathGuard, max_bytes: int | None, read: bool, item: Item) -> Found | None:
    """One image's header check: its problem, or the version found good by reading it (None
    when it had passed before). Without `read`, only whether it passed before: None when it
    did not (nothing was read)."""
    relative, source = item
    try:
        path = guard.resolve(relative)
        if not read:
            listed = guard.listed_stat(path)  # taken by the walk: no second `stat`
            passed = header_passed(path, relative, max_bytes=max_bytes, stat=listed)
            return (None, None) if passed else None
        return None, check_header(path, relative, max_bytes=max_bytes)
    except UnreadableImage as exc:
        message = f"not a readable image: {relative} ({exc.reason})"
        return DataError(message, path=source.path, line=source.line), None
    except ProactiveBenchError as exc:  # too large, or gone since the walk
        return DataError(str(exc), path=source.path, line=source.line), None


def _decoded(guard: PathGuard, max_bytes: int | None, item: Item) -> DataError | None:
    """One image decoded whole: its problem, if any."""
    relative, source = item
    try:
        with opened_image(guard.resolve(relative), relative, max_bytes=max_bytes) as image:
            image.load()
    except UnreadableImage as exc:
        message = f"cannot decode: {relative} ({exc.reason})"
        return DataError(message, path=source.path, line=source.line)
    except ProactiveBenchError as exc:  # too large, or gone since the walk
        return DataError(str(exc), path=source.path, line=source.line)
    return None


@dataclass
class DatasetCheck:
    """What `validate_dataset` found: the records read, what makes the data set unusable
    (`problems`), and records that load but cannot be played in full (`warnings`)."""

    records: int = 0
    problems: list[DataError] = field(default_factory=list)
    warnings: list[DataError] = field(default_factory=list)


def validate_dataset(data_dir: str | Path, *, decode: bool = False) -> DatasetCheck:
    """Validate a data directory: its records, the existence of every image an episode may
    show, and each image's header (with `decode`, its pixels)."""
    root = Path(data_dir)
    check = DatasetCheck()
    try:
        present = scenarios_present(root)
    except DataError as exc:
        check.problems.append(exc)
        return check
    if not present:
        check.problems.append(DataError("no '*_preprocessed.jsonl' files found", path=str(root)))
        return check
    problems = check.problems
    for short in present:
        records, bad = read_records(scenario_file(root, short), short)
        check.records += len(records)
        problems.extend(bad)
        if not records and not bad:
            problems.append(_no_records(scenario_file(root, short)))
        check.warnings.extend(w for record in records for w in record_warnings(record))
        episodes = [make_episode(r, reference=ref) for r in records for ref in (False, True)]
        guard = PathGuard(root)
        walk = walk_images(episodes, guard)
        problems.extend(walk.problems)
        problems.extend(check_image_contents(walk.present, guard, decode=decode))
    return check


def _no_records(path: Path) -> DataError:
    """A scenario file without a record: "0 records checked ... valid" let an empty file (a
    download cut short, a file emptied by hand) pass, and eval then found nothing to play."""
    return DataError(
        "holds no records: an empty scenario file plays no episode (fill it, or remove it)",
        path=str(path),
    )
