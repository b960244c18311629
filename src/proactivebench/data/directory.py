"""Loading a data directory in the official layout: `<data_dir>/<stem>_preprocessed.jsonl`.

The official test set keeps only the ids of `official_filter_ids.json` and drops records whose
`strong_occlusions` is false (VSOD keeps the samples that need a rewind); a directory made by
our generator carries `synth_manifest.json`, which turns the id filter off. A user's filter
(`eval --filter FILE`, `data.sample_filter`) replaces the official list, on any data. Records are
validated on load (every problem located at file:line/field); images are never opened here,
only their paths checked.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from proactivebench.benchmark.records import Record, Source, parse_record, record_warnings
from proactivebench.benchmark.registry import by_stem, lookup, scenario, scenario_names
from proactivebench.core.errors import DataError, DataErrors
from proactivebench.data.jsonl import json_lines
from proactivebench.data.sample_filter import SampleFilter

SUFFIX = "_preprocessed.jsonl"
#: Written by the synthetic generator; its presence means the official id filter does not apply.
MANIFEST = "synth_manifest.json"


def scenario_file(data_dir: Path, short: str) -> Path:
    return data_dir / scenario(short).strings.dataset_file


def is_synthetic(data_dir: Path) -> bool:
    return (data_dir / MANIFEST).is_file()


def scenarios_present(data_dir: Path) -> list[str]:
    """Short names of the scenarios whose file exists, in the paper's order.

    A `*_preprocessed.jsonl` file whose stem names no scenario is an error, not something to
    skip silently: it is usually a typo or a file from another benchmark version. So is one
    that is not a file (a FIFO, device, folder, broken link): skipping it would drop its
    scenario from the run unsaid, and reading it could wait forever.
    """
    if not data_dir.is_dir():
        if data_dir.exists():
            raise DataError("not a data directory (a file, not a folder)", path=str(data_dir))
        raise DataError("data directory not found", path=str(data_dir))
    known = by_stem()
    for path in sorted(data_dir.glob(f"*{SUFFIX}")):
        stem = path.name.removesuffix(SUFFIX)
        if stem not in known:
            raise DataError(
                f"unknown scenario file stem {stem!r}; known: {', '.join(sorted(known))}",
                path=str(path),
            )
        if not path.is_file():
            not_a_file = "not a regular file (a FIFO, device, folder or broken link)"
            raise DataError(not_a_file, path=str(path))
    return [s for s in scenario_names() if scenario_file(data_dir, s).is_file()]


def parse_scenario_names(names: str | Iterable[str] | None, data_dir: Path) -> list[str]:
    """Resolve a `--scenarios` value (comma-separated short names) against the data dir."""
    present = scenarios_present(data_dir)
    if names is None:
        if not present:
            raise DataError(f"no '*{SUFFIX}' files found", path=str(data_dir))
        return present
    chosen = named_scenarios(names)
    for short in chosen:
        if short not in present:
            raise DataError(
                f"scenario {short} has no data file here", path=str(scenario_file(data_dir, short))
            )
    return chosen


def named_scenarios(names: str | Iterable[str]) -> list[str]:
    """The scenarios a `--scenarios` value names (short names, each once), or one `DataError`
    for what is wrong whatever the data: nothing named, or a name the benchmark does not have
    (a suite file is checked by this when read, before any experiment plays)."""
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names)]
    wanted = [n for n in wanted if n]
    if not wanted:
        known = ", ".join(scenario_names())
        raise DataError(f"no scenario named in {names!r}; choose from {known}")
    chosen: list[str] = []
    for name in wanted:
        short = lookup(name)
        if short is None:
            known = ", ".join(scenario_names())
            raise DataError(f"unknown scenario {name!r}; choose from {known}")
        if short not in chosen:
            chosen.append(short)
    return chosen


def read_records(path: Path, short: str) -> tuple[list[Record], list[DataError]]:
    """Parse every line of one scenario file; problems are collected, not raised."""
    records: list[Record] = []
    problems: list[DataError] = []
    seen: dict[int, int] = {}
    record_type = scenario(short).record_type
    try:
        lines = list(json_lines(path))
    except DataError as exc:
        return [], [exc]
    for number, obj in lines:
        if isinstance(obj, DataError):
            problems.append(obj)
            continue
        try:
            record = parse_record(record_type, obj, Source(str(path), number))
        except DataError as exc:
            problems.append(exc)
            continue
        if record.id in seen:
            problems.append(
                DataError(
                    f"duplicate id {record.id} (first on line {seen[record.id]})",
                    path=str(path),
                    line=number,
                    field="id",
                )
            )
            continue
        seen[record.id] = number
        records.append(record)
    return records, problems


def apply_official_filter(records: Sequence[Record], short: str) -> list[Record]:
    """Keep the official test ids (those the scenario's registration gives; all, when it
    gives none) and the records their type keeps (VSOD drops those marked
    `strong_occlusions: false`, as the reference loader does)."""
    info = scenario(short)
    keep = None if info.filter_ids is None else info.filter_ids(info.strings.stem)
    return [r for r in records if (keep is None or r.id in keep) and r.in_official_test()]


@dataclass
class Dataset:
    """Validated records of the chosen scenarios of one data directory."""

    root: Path
    records: dict[str, list[Record]]
    synthetic: bool
    #: Records that load and play but cannot be played in full (`records.record_warnings`).
    warnings: list[DataError] = field(default_factory=list)
    #: Scenarios whose records the official test filter kept none of (short names).
    emptied_by_official_filter: list[str] = field(default_factory=list)
    #: Per scenario (short name): the ids the user's filter keeps that its file lacks.
    filter_lacks: dict[str, list[int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return sum(len(v) for v in self.records.values())


def load_dataset(
    data_dir: str | os.PathLike[str],
    scenarios: str | Iterable[str] | None = None,
    *,
    all_samples: bool = False,
    sample_filter: SampleFilter | None = None,
) -> Dataset:
    """Load and validate; raise `DataErrors` listing every malformed record.

    Kept: every record with `all_samples`; the ids of `sample_filter` when given (on any data:
    only those, by the user's choice); else the official test set, except on our generator's
    data, which the official list knows nothing of."""
    root = Path(data_dir)
    chosen = parse_scenario_names(scenarios, root)
    synthetic = is_synthetic(root)
    records: dict[str, list[Record]] = {}
    problems: list[DataError] = []
    emptied: list[str] = []
    lacks: dict[str, list[int]] = {}
    for short in chosen:
        found, bad = read_records(scenario_file(root, short), short)
        problems.extend(bad)
        if sample_filter is not None:
            covered = [n for stem, n in by_stem().items() if stem in sample_filter.ids]
            stem = scenario(short).strings.stem
            keep = sample_filter.kept(stem, short, covered)
            sample_filter.refuse_other_data(scenario_file(root, short), stem, short)
            lacked = keep - {r.id for r in found}
            if lacked and not bad:
                lacks[short] = sorted(lacked)
            found = [r for r in found if r.id in keep]
        elif not (all_samples or synthetic):
            had = bool(found)
            found = apply_official_filter(found, short)
            if had and not found:
                emptied.append(short)
        records[short] = found
    if problems:
        raise DataErrors(problems)
    warnings = [w for found in records.values() for r in found for w in record_warnings(r)]
    return Dataset(
        root, records, synthetic, warnings, emptied_by_official_filter=emptied, filter_lacks=lacks
    )


class PathGuard:
    """Resolves image paths under one data dir, refusing anything that leads outside it.

    Symbolic links are followed before the check, so a link pointing out is refused too. A data
    set has thousands of images in few folders, and a run asks for each image's path several
    times (the check before the run, the image, its content hash), so the guard reads each
    folder once (one `os.scandir`, which also says which entries are files and which are
    links) and caches real paths, instead of an `lstat` and a `stat` per image and call.
    """

    _FILE, _EMPTY, _LINK, _OTHER = "file", "empty", "link", "other"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._root = os.path.normpath(os.fspath(root))
        self._real_root = os.path.realpath(self.root)
        self._inside = os.path.join(self._real_root, "")  # what every path inside starts with
        self._real_dirs: dict[str, str] = {self._root: self._real_root}
        self._resolved: dict[str, str] = {}
        self._listings: dict[str, dict[str, str]] = {}
        #: The `stat` of each file listed, by real path: what the check before a run tells an
        #: image file's version by (`listed_stat`), without a `stat` of its own.
        self._stats: dict[str, os.stat_result] = {}

    def resolve(self, relative: str) -> str:
        """The real path of `relative` (a file under the data dir), as a string."""
        real = self._resolved.get(relative)
        if real is None:
            native = relative if os.sep == "/" else relative.replace("/", os.sep)
            real = self._real(self._root + os.sep + native)
            if not real.startswith(self._inside):
                raise DataError(f"image path leaves the data dir: {relative!r}")
            self._resolved[relative] = real
        return real

    def kind(self, relative: str) -> str:
        """ "file", "empty" (a file of 0 bytes), "missing", or "other" (a folder, a device)."""
        folder, _, name = self.resolve(relative).rpartition(os.sep)
        return self._entries(folder or os.sep).get(name, "missing")

    def listed_stat(self, real: str) -> os.stat_result | None:
        """The `stat` of the file at the real path `real` when its folder was listed (by
        `kind`, `resolve`), else None."""
        return self._stats.get(real)

    def _real(self, path: str) -> str:
        """`os.path.realpath(path)`, from the cached real path and listing of its folder.

        String operations rather than `os.path.join`/`split`: this runs for every image of a
        data set before a run, and those cost more than the rest of the check.
        """
        parent, _, name = path.rpartition(os.sep)
        if name in ("", ".", "..") or len(parent) < len(self._root):
            return os.path.realpath(path)
        real_parent = self._real_dirs.get(parent)
        if real_parent is None:
            real_parent = self._real_dirs[parent] = self._real(parent)
        real = real_parent.rstrip(os.sep) + os.sep + name
        if self._entries(real_parent).get(name) == self._LINK:
            return os.path.realpath(real)
        return real

    def _entries(self, folder: str) -> dict[str, str]:
        """What `folder` holds, name -> file, empty, link or other (nothing when unreadable)."""
        entries = self._listings.get(folder)
        if entries is None:
            entries = {}
            try:
                with os.scandir(folder) as scan:
                    for entry in scan:
                        if entry.is_symlink():
                            entries[entry.name] = self._LINK
                        elif entry.is_file(follow_symlinks=False):
                            found = entry.stat(follow_symlinks=False)
                            entries[entry.name] = self._FILE if found.st_size else self._EMPTY
                            self._stats[entry.path] = found
                        else:
                            entries[entry.name] = self._OTHER
            except OSError:
                pass  # missing or unreadable: nothing in it can be shown
            self._listings[folder] = entries
        return entries
