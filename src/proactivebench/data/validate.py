"""`data validate`: every problem of a data directory, in one report.

Checks every record of every scenario file (the official filter is not applied: a broken
record is broken whether or not today's filter keeps it) and that every image an episode may
show exists inside the directory, in play and in reference mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from proactivebench.data.images import (
    DEFAULT_MAX_IMAGE_MB,
    UnreadableImage,
    check_header,
    opened_image,
)
from proactivebench.data.layout import (
    PathGuard,
    read_records,
    scenario_file,
    scenarios_present,
)
from proactivebench.errors import DataError, ProactiveBenchError
from proactivebench.records import Source, record_warnings
from proactivebench.registry import make_episode
from proactivebench.scenarios import Episode

#: What is wrong with an image path, by the kind `PathGuard.kind` finds.
_KIND_PROBLEMS = {
    "missing": "image not found",
    "empty": "image file is empty (0 bytes)",
    "other": "not a file",
}


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


def check_image_contents(
    images: list[tuple[str, Source]],
    guard: PathGuard,
    *,
    decode: bool = False,
    max_bytes: int | None = DEFAULT_MAX_IMAGE_MB * 10**6,
) -> list[DataError]:
    """Every image file must be one Pillow can read, within the size cap and Pillow's pixel
    limit: its header (cheap), or with `decode` its pixels too (slow: every image is decoded)."""
    problems: list[DataError] = []
    for relative, source in images:
        try:
            path = guard.resolve(relative)
            if not decode:
                check_header(path, relative, max_bytes=max_bytes)  # memoized per file version
                continue
            with opened_image(path, relative, max_bytes=max_bytes) as image:
                image.load()
        except UnreadableImage as exc:
            what = "cannot decode" if decode else "not a readable image"
            message = f"{what}: {relative} ({exc.reason})"
            problems.append(DataError(message, path=source.path, line=source.line))
        except ProactiveBenchError as exc:  # too large, or gone since the walk
            problems.append(DataError(str(exc), path=source.path, line=source.line))
    return problems


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
        check.warnings.extend(w for record in records for w in record_warnings(record))
        episodes = [make_episode(r, reference=ref) for r in records for ref in (False, True)]
        guard = PathGuard(root)
        walk = walk_images(episodes, guard)
        problems.extend(walk.problems)
        problems.extend(check_image_contents(walk.present, guard, decode=decode))
    return check
