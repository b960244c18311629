"""Choosing a run's episodes: the one way in for `evaluate` and the adapters.

The data is loaded, the records that the settings select are chosen (per scenario in file
order, `limit` each, then a shard's slice), and every image the episodes (and their
demonstrations) may show is checked (it exists, within the size cap, its header readable and
within Pillow's pixel limit) before a model is asked anything.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proactivebench.data.images import ImageStore
from proactivebench.data.layout import MANIFEST, SUFFIX, Dataset, load_dataset, scenario_file
from proactivebench.data.validate import check_image_contents, walk_images
from proactivebench.errors import DataErrors, NothingToDoError, SettingsError
from proactivebench.records import Record
from proactivebench.registry import make_episode
from proactivebench.rundir import file_stamp
from proactivebench.scenarios import Episode
from proactivebench.settings import EvalSettings, declared

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
) -> Chosen:
    """Load the data, choose the episodes `settings` select and check every image they (and
    their demonstrations) may show."""
    root = Path(data_dir)
    dataset = load_dataset(
        root,
        settings.scenarios,
        all_samples=settings.all_samples,
        sample_filter=settings.sample_filter,
    )
    options = settings.episode_options()
    records = select_records(dataset, settings.limit, shard, subset=settings.subset)
    if not records:
        where = ", ".join(str(scenario_file(root, s)) for s in dataset.records) or str(root)
        raise NothingToDoError(f"nothing to play: no sample selected from {where}")
    _warn_unplayable(dataset, records)
    _warn_emptied(dataset, settings)
    _check_demonstrations(dataset, records, settings.icl)
    episodes = [make_episode(r, **options) for r in records]
    checked = episodes
    if settings.icl:  # demonstrations may show any sample of a scenario, not only those played
        checked = [make_episode(r, **options) for rs in dataset.records.values() for r in rs]
    store = ImageStore(root, max_file_bytes=settings.max_image_mb * 10**6)
    walk = walk_images(checked, store.guard)
    # Headers too (a read of each file's first bytes): an image above the size cap or Pillow's
    # pixel limit, or not an image at all, is refused now rather than failing its episodes,
    # or a report, after the run.
    problems = walk.problems or check_image_contents(
        walk.present, store.guard, max_bytes=store.max_file_bytes
    )
    if problems:
        raise DataErrors(problems)
    return Chosen(dataset, episodes, store)


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
