"""`data validate`: every problem of a data directory, in one report.

Checks every record of every scenario file (the official filter is not applied: a broken
record is broken whether or not today's filter keeps it) and that every image an episode may
show exists inside the directory, in play and in reference mode.
"""

from __future__ import annotations

from pathlib import Path

from proactivebench.data.layout import (
    PathGuard,
    read_records,
    scenario_file,
    scenarios_present,
)
from proactivebench.errors import DataError
from proactivebench.scenarios import Episode, make_episode


def check_images(
    root: Path, episodes: list[Episode], guard: PathGuard | None = None
) -> list[DataError]:
    """Every image the episodes may show must exist inside the data dir.

    Problems name the record (file:line) and the path, so a half-extracted download is
    reported up front instead of surfacing as errors halfway through a long run. A run passes
    its image store's `guard`, so that the paths resolved here are not resolved again.
    """
    guard = guard or PathGuard(root)
    problems: list[DataError] = []
    seen: set[str] = set()
    for episode in episodes:
        source = episode.record.source
        for relative in episode.image_paths():
            if relative in seen:
                continue
            try:
                exists = guard.is_file(relative)
            except DataError as exc:
                problems.append(DataError(exc.message, path=source.path, line=source.line))
                continue
            if not exists:
                problems.append(
                    DataError(f"image not found: {relative}", path=source.path, line=source.line)
                )
            else:
                seen.add(relative)
    return problems


def validate_dataset(data_dir: str | Path) -> tuple[int, list[DataError]]:
    """Validate a data directory: (number of records read, every problem found)."""
    root = Path(data_dir)
    try:
        present = scenarios_present(root)
    except DataError as exc:
        return 0, [exc]
    if not present:
        return 0, [DataError("no '*_preprocessed.jsonl' files found", path=str(root))]
    problems: list[DataError] = []
    count = 0
    for short in present:
        records, bad = read_records(scenario_file(root, short), short)
        count += len(records)
        problems.extend(bad)
        episodes = [make_episode(r, reference=ref) for r in records for ref in (False, True)]
        problems.extend(check_images(root, episodes))
    return count, problems
