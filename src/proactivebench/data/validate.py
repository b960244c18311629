"""`data validate`: every problem of a data directory, in one report.

Checks every record of every scenario file (the official filter is not applied: a broken
record is broken whether or not today's filter keeps it) and that every image an episode may
show exists inside the directory, in play and in reference mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from proactivebench.data.layout import (
    PathGuard,
    read_records,
    scenario_file,
    scenarios_present,
)
from proactivebench.errors import DataError
from proactivebench.records import Source, record_warnings
from proactivebench.scenarios import Episode, make_episode


def check_images(
    root: Path, episodes: list[Episode], guard: PathGuard | None = None
) -> list[DataError]:
    """Every image the episodes may show must exist inside the data dir, and not be empty.

    Problems name the record (file:line) and the path, so a half-extracted download is
    reported up front instead of surfacing as errors halfway through a long run. A run passes
    its image store's `guard`, so that the paths resolved here are not resolved again.
    """
    return [problem for problem, _ in _image_problems(episodes, guard or PathGuard(root))]


#: What is wrong with an image path, by the kind `PathGuard.kind` finds.
_KIND_PROBLEMS = {
    "missing": "image not found",
    "empty": "image file is empty (0 bytes)",
    "other": "not a file",
}


def _distinct_images(episodes: list[Episode]) -> Iterator[tuple[str, Source]]:
    """Each image the episodes may show, once, with the record that first shows it."""
    seen: set[str] = set()
    for episode in episodes:
        for relative in episode.image_paths():
            if relative not in seen:
                seen.add(relative)
                yield relative, episode.record.source


def _image_problems(episodes: list[Episode], guard: PathGuard) -> list[tuple[DataError, str]]:
    """(problem, image) for every image that is missing, empty, not a file, or outside."""
    problems: list[tuple[DataError, str]] = []
    for relative, source in _distinct_images(episodes):
        try:
            reason = _KIND_PROBLEMS.get(guard.kind(relative))
        except DataError as exc:  # the path leaves the data dir
            problems.append((DataError(exc.message, path=source.path, line=source.line), relative))
            continue
        if reason:
            problem = DataError(f"{reason}: {relative}", path=source.path, line=source.line)
            problems.append((problem, relative))
    return problems


def check_image_contents(
    episodes: list[Episode], guard: PathGuard, skip: set[str], *, decode: bool = False
) -> list[DataError]:
    """Every image file (but those in `skip`, already reported) must be one Pillow can read:
    its header (cheap), or with `decode` its pixels too (slow: every image is decoded)."""
    from PIL import Image

    problems: list[DataError] = []
    for relative, source in _distinct_images(episodes):
        if relative in skip:
            continue
        try:
            with Image.open(guard.resolve(relative)) as image:
                if decode:
                    image.load()
        except Exception as exc:  # Pillow's errors for broken files are of many kinds
            what = "cannot decode" if decode else "not a readable image"
            problems.append(
                DataError(f"{what}: {relative} ({exc})", path=source.path, line=source.line)
            )
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
        missing = _image_problems(episodes, guard)
        problems.extend(problem for problem, _ in missing)
        skip = {image for _, image in missing}
        problems.extend(check_image_contents(episodes, guard, skip, decode=decode))
    return check
