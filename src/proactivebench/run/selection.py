"""Choosing a run's episodes: the one way in for `evaluate` and the adapters.

The data is loaded, the records that the settings select are chosen (per scenario in file
order, `limit` each, then a shard's slice), and every image the episodes (and their
demonstrations) may show is checked (it exists, within the size cap, its header readable and
within Pillow's pixel limit) before a model is asked anything.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proactivebench.benchmark.records import Record
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Episode
from proactivebench.core.errors import DataError, DataErrors, NothingToDoError, SettingsError
from proactivebench.core.texts import dumps
from proactivebench.data.directory import (
    MANIFEST,
    SUFFIX,
    Dataset,
    PathGuard,
    is_synthetic,
    load_dataset,
    scenario_file,
)
from proactivebench.data.images import ImageStore
from proactivebench.data.validate import check_image_contents, remembered, walk_images
from proactivebench.run.rundir import file_stamp
from proactivebench.run.selection_record import ScenarioSelection, Selection
from proactivebench.run.settings import EvalSettings, declared

if TYPE_CHECKING:
    from proactivebench.data.checked import CheckedImages

log = logging.getLogger(__name__)


#: The seed of `--subset`'s draw: the reference code's `random.seed(0)` (protocol.json's
#: `oeg.reference_eval_subset`), the same whatever the run's --seed.
SUBSET_SEED = 0


def select_records(
    dataset: Dataset,
    limit: int | None,
    shard: tuple[int, int] | None = None,
    *,
    subset: int | None = None,
) -> list[Record]:
    """The records to play: scenario by scenario in file order (with `subset` = N: the
    scenario's records shuffled by `random.Random(SUBSET_SEED)`, the first N), `limit` per
    scenario, then every N-th one from I when `shard` = (I, N), so that the N shards
    partition the run."""
    chosen: list[Record] = []
    for records in dataset.records.values():
        if subset is not None:
            records = list(records)
            random.Random(SUBSET_SEED).shuffle(records)
            records = records[:subset]
        chosen.extend(records if limit is None else records[:limit])
    if shard is not None:
        index, count = shard
        if not 0 <= index < count:
            raise SettingsError(f"shard {index}/{count}: need 0 <= I < N")
        chosen = chosen[index::count]
    return chosen


def _nothing_selected(
    root: Path, dataset: Dataset, settings: EvalSettings, shard: tuple[int, int] | None
) -> str:
    """Why no episode was chosen: a shard past the selection's samples (more shards than
    samples) says so, since the record files hold samples for the other shards."""
    whole = len(select_records(dataset, settings.limit, subset=settings.subset))
    if not whole and dataset.emptied_by_official_filter:
        what, way_out = _official_emptied(dataset)
        return f"nothing to play: {what}; {way_out}"
    if shard is not None and whole:
        index, count = shard
        samples = f"{whole} sample" + ("s" if whole > 1 else "")
        return (
            f"nothing to play: shard {index}/{count} holds no sample (the selection has "
            f"{samples} for {count} shards: use at most {whole} shards)"
        )
    where = ", ".join(str(scenario_file(root, s)) for s in dataset.records) or str(root)
    return f"nothing to play: no sample selected from {where}"


@dataclass
class Chosen:
    """The episodes of a run, checked against the data before anything is asked."""

    dataset: Dataset
    episodes: list[Episode]
    #: The data set's shared image cache, for the backends.
    images: ImageStore


def choose_episodes(
    data_dir: str | os.PathLike[str],
    settings: EvalSettings,
    shard: tuple[int, int] | None = None,
    checks: DataChecks | None = None,
) -> Chosen:
    """Load the data, choose the episodes `settings` select and check every image they (and
    their demonstrations) may show: what `checks` (a run engine's, shared by its runs) found
    before is not looked at again."""
    root = Path(data_dir)
    checks = checks or DataChecks()
    dataset = checks.dataset(root, settings)
    options = settings.episode_options()
    records = select_records(dataset, settings.limit, shard, subset=settings.subset)
    _warn_filter(dataset, settings)
    if not records:
        raise NothingToDoError(_nothing_selected(root, dataset, settings, shard))
    _warn_unplayable(dataset, records)
    _warn_emptied(dataset, settings)
    _check_demonstrations(dataset, records, settings.icl)
    episodes = [make_episode(r, **options) for r in records]
    checked = episodes
    if settings.icl:  # demonstrations may show any sample of a scenario, not only those played
        checked = [make_episode(r, **options) for rs in dataset.records.values() for r in rs]
    max_bytes = settings.max_image_mb * 10**6
    store = ImageStore(root, max_file_bytes=max_bytes, guard=checks.guard(root))
    problems = checks.images(root, checked, max_bytes)
    if problems:
        raise DataErrors(problems)
    return Chosen(dataset, episodes, store)


def recorded_selection(
    root: Path, chosen: Chosen, shard: tuple[int, int] | None = None
) -> Selection:
    """What `chosen` selected, for run.json (`selection_record.Selection`): per loaded scenario, the
    samples the data offers under the scenario and filter choice (before `--limit` and the
    shard's slice) and the ids of the episodes chosen."""
    ids: dict[str, set[int]] = {name: set() for name in chosen.dataset.records}
    for episode in chosen.episodes:
        ids.setdefault(episode.scenario, set()).add(episode.record.id)
    scenarios = {
        name: ScenarioSelection(
            len({r.id for r in chosen.dataset.records.get(name, ())}), frozenset(found)
        )
        for name, found in ids.items()
    }
    return Selection(scenarios, shard, is_synthetic(root))


class DataChecks:
    """What the checks before a run found, kept for the runs of one engine (`RunEngine.checks`):
    the experiments of a suite read the records once, list each image folder once and check
    each image once. With `memory` (`data.checked`, beside the response cache), the image
    headers that passed are remembered for later processes too: a rerun, a resumed run or a
    `--limit` trial reads no header it read before, only `stat`s the files it may show.

    Only the selection is checked: the images its episodes (and, with ICL, the demonstrations
    drawn from the whole scenario) may show. Safe for runs choosing their episodes at once in
    several threads: one checks at a time, the next finds its images checked. What passed
    stays passed for the engine's life (record files excepted: one written since is read
    again): an image removed or spoilt under a live engine fails the episode that reads it,
    as one spoilt during a run does."""

    def __init__(self, memory: CheckedImages | None = None) -> None:
        self.memory = memory
        self._lock = threading.Lock()
        self._datasets: dict[str, Dataset] = {}
        self._guards: dict[str, PathGuard] = {}
        #: Images that exist and passed their header check: (data dir, size cap, path in it).
        self._passed: set[tuple[str, int | None, str]] = set()

    def dataset(self, root: Path, settings: EvalSettings) -> Dataset:
        """The records `settings` load from `root`, read and checked once while their files
        (and the manifest) are unchanged."""
        stamp = selection_stamp(root, settings)["data"]
        chosen = settings.sample_filter  # its ids, and the data it was computed on
        filtered = [chosen.digest, dict(chosen.records)] if chosen else None
        key = dumps(
            [str(root.resolve()), settings.scenarios, settings.all_samples, filtered, stamp]
        )
        with self._lock:
            found = self._datasets.get(key)
            if found is None:
                found = self._datasets[key] = load_dataset(
                    root,
                    settings.scenarios,
                    all_samples=settings.all_samples,
                    sample_filter=settings.sample_filter,
                )
            return found

    def guard(self, root: Path) -> PathGuard:
        """The one `PathGuard` of the data dir `root`: its folders listed once for the checks
        and the runs' reads (`ImageStore`)."""
        with self._lock:
            return self._guards.setdefault(os.path.realpath(root), PathGuard(root))

    def images(self, root: Path, episodes: list[Episode], max_bytes: int | None) -> list[DataError]:
        """The problems of the images `episodes` may show (missing, empty, outside the data
        dir, above the cap, no readable header, above Pillow's pixel limit), in the order of
        the episodes; none for an image that passed before."""
        where = os.path.realpath(root)
        guard = self.guard(root)
        with self._lock:
            # What each episode may show, worked out once (formatting paths is not free); a
            # record claiming more views than MAX_LISTED (a billion frames) is not listed but
            # walked, which stops at its first missing image (`walk_images`).
            shows = [(e, _listed(e)) for e in episodes]
            if self._passed:  # a later run of the engine: what passed is not looked at again
                passed = self._passed
                shows = [
                    (e, ps)
                    for e, ps in shows
                    if ps is None or any((where, max_bytes, p) not in passed for p in ps)
                ]
            # Images that passed before, unchanged since, cost an `lstat` each; the others
            # are walked (their folders listed) and their headers read.
            listed = [p for _, ps in shows if ps is not None for p in ps]
            known = remembered(root, listed, max_bytes, self.memory)
            unknown = [e for e, ps in shows if ps is None or not known.issuperset(ps)]
            walk = walk_images(unknown, guard)
            problems = walk.problems or check_image_contents(
                walk.present, guard, max_bytes=max_bytes, memory=self.memory
            )
            if not problems:
                self._passed.update((where, max_bytes, p) for p in listed)
            return problems


#: The most views of one episode listed before its images are checked: far above any record
#: of the paper's data, far below what a damaged record may claim (`num_images` 10^9).
MAX_LISTED = 100_000


def _listed(episode: Episode) -> tuple[str, ...] | None:
    """The views `episode` may show, or None when it claims more than MAX_LISTED."""
    paths = tuple(itertools.islice(episode.image_paths(), MAX_LISTED + 1))
    return paths if len(paths) <= MAX_LISTED else None


def selection_stamp(data_dir: str | os.PathLike[str], settings: EvalSettings) -> dict[str, Any]:
    """What the episodes `choose_episodes` would choose depend on, read from `stat` alone: the
    settings that are not episode settings (which records, the image size cap) and the data's
    record files (`stat` of each, and of the manifest that marks synthetic data; a file added or
    removed changes the list). Equal stamps choose the same episodes, from the same records;
    an edited record file changes the stamp (`rundir.FinishedRun`)."""
    root = Path(data_dir)
    chosen = {
        s.name: getattr(settings, s.name)
        for s in declared(EvalSettings)
        if s.info.kind != "episode"
    }
    files = {p.name: file_stamp(p) for p in sorted(root.glob(f"*{SUFFIX}"))}
    return {
        "selection": chosen,
        "data": {MANIFEST: file_stamp(root / MANIFEST), **files},
    }


def _check_demonstrations(dataset: Dataset, records: list[Record], icl: int) -> None:
    """Refuse more demonstrations per episode than a played scenario holds: each episode shows
    `icl` other samples of its scenario, and a run that showed fewer would record a setting it
    did not use."""
    if not icl:
        return
    played = dict.fromkeys(r.scenario for r in records)
    available = {s: len({r.id for r in dataset.records[s]}) - 1 for s in played}
    if icl <= min(available.values()):
        return
    counts = ", ".join(f"{s}: {n}" for s, n in available.items())
    most = min(available.values())
    fix = f"pass --icl {most} or fewer" if most > 0 else "leave out --icl"
    raise SettingsError(
        f"--icl {icl} asks for {icl} demonstrations per episode, but the data offers fewer "
        f"(other samples of the same scenario; {counts}): {fix}, or choose scenarios with "
        "--scenarios"
    )


def _warn_emptied(dataset: Dataset, settings: EvalSettings) -> None:
    """Say that the user's filter keeps no sample of some scenarios played: they are left out
    of the run, which a table of the others alone would not tell."""
    emptied = [short for short, records in dataset.records.items() if not records]
    if settings.sample_filter is not None and emptied:
        log.warning(
            "%s keeps no sample of %s: left out of the run",
            settings.sample_filter.path,
            ", ".join(emptied),
        )
    if dataset.emptied_by_official_filter:
        log.warning("%s: left out of the run; %s", *_official_emptied(dataset))


def _warn_filter(dataset: Dataset, settings: EvalSettings) -> None:
    """Say, one line each, where the user's filter and the data disagree: ids it keeps that
    the data lacks (the run plays the others), a filter computed on runs of another data
    folder whose records it cannot compare (no digest recorded), and samples its pool never
    played (it says nothing of them: they are not in it)."""
    chosen = settings.sample_filter
    if chosen is None:
        return
    for short, lacked in dataset.filter_lacks.items():
        shown = ", ".join(map(str, lacked[:5])) + (", ..." if len(lacked) > 5 else "")
        held = len(dataset.records[short])
        log.warning(
            "%s: %d of the %d %s ids it keeps are not in the data (%s): %s plays the %d it holds",
            chosen.path, len(lacked), len(lacked) + held, short, shown, short, held,
        )  # fmt: skip
    made_on = chosen.made_on
    if (
        made_on
        and not chosen.records
        and os.path.realpath(made_on) != os.path.realpath(dataset.root)
    ):
        log.warning(
            "%s was computed on runs of %s, not of %s, and records no digest of that data to "
            "compare: its ids are played here as they are",
            chosen.path, made_on, dataset.root,
        )  # fmt: skip
    for short, count in chosen.not_played.items():
        if short in dataset.records:
            log.warning(
                "%s: %d %s %s of the data it was computed on %s played by no run of its pool: "
                "not in the filter, so not played here",
                chosen.path, count, short, "samples" if count > 1 else "sample",
                "were" if count > 1 else "was",
            )  # fmt: skip


def _official_emptied(dataset: Dataset) -> tuple[str, str]:
    """What the official test filter did to the scenarios it left without a sample (data
    not made by our generator, whose ids are none of the official ones), and the way out."""
    names = dataset.emptied_by_official_filter
    ids = "none of its ids is" if len(names) == 1 else "none of their ids is"
    return (
        f"the official test filter keeps no sample of {', '.join(names)} here ({ids} an "
        "official test id)",
        "--all-samples plays every sample",
    )


def _warn_unplayable(dataset: Dataset, records: list[Record]) -> None:
    """Say once, before the run, that some selected records cannot be played in full."""
    selected = {(r.source.path, r.source.line) for r in records}
    warnings = [w for w in dataset.warnings if (w.path, w.line) in selected]
    if warnings:
        more = f" (and {len(warnings) - 1} more; `proactivebench data validate` lists them)"
        log.warning(
            "%d selected record(s) cannot be played in full: %s%s",
            len(warnings),
            warnings[0],
            more if len(warnings) > 1 else "",
        )
