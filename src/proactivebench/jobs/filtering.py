"""The test filter of the paper's §3.3, computed again from a pool of runs
(`proactivebench data filter`).

A sample leaves the test set when at least a fraction of the models (the paper: 25 %, 6 of 22)
answer it right at the first turn of plain multiple choice: its verdict at turn 1 is "correct",
the model named the correct category before any proactive step. What remains is written in the
official list's shape (`{"ids": {file stem: [id, ...]}}`, read by the same reader), with a note
of where it came from, and `eval --filter FILE` plays it.

The runs must be comparable, or the count means nothing: one data set (`data_dir` of
`run.json`), plain MCQA (every episode setting at its default but those a model may set for
itself: its seed and decoding), one run per model, and every sample given a finished first turn
in every run. Whatever differs is refused, naming the run.

The filter says nothing of the samples no run played (a pool played with `--limit`): when the
data is at hand, their count per scenario is said and noted in the file (`not_played`), with
the digest of each record file (`records`), so that `eval --filter` refuses the filter on other
data, whose ids name other samples.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from proactivebench.benchmark.protocol import FILTER_IDS
from proactivebench.benchmark.registry import scenario, scenario_rank
from proactivebench.core.errors import DataError, NothingToDoError, RunMismatchError, SettingsError
from proactivebench.core.paths import write_whole
from proactivebench.core.texts import dumps, shown_json
from proactivebench.data.directory import apply_official_filter, load_dataset, scenario_file
from proactivebench.data.sample_filter import read_sample_filter, record_file_digest
from proactivebench.run.datarecords import other_data
from proactivebench.run.rundir import read_run_config, refuse_rejected, run_lines
from proactivebench.run.settings import EvalSettings, declared

#: The paper's threshold (§3.3): removed when a quarter of the models or more answer right.
PAPER_AT_LEAST = 0.25
#: Recorded settings a pool's runs may differ in: what a model sets for its own answers (its
#: sampling seed, its decoding), and a test filter (it only chooses samples: the runs must
#: still cover the same ones).
_OWN_TO_EACH_RUN = ("seed", "decoding", "filter")

Sample = tuple[str, int]


@dataclass(frozen=True)
class PoolRun:
    """One run of the pool: where it is, whose it is, and its first turns."""

    run_dir: Path
    model: str
    #: Each sample with a finished episode: whether its first turn named the correct category.
    right_first: dict[Sample, bool]


@dataclass(frozen=True)
class ScenarioCount:
    """One scenario's samples before the filter and after it."""

    before: int
    kept: int

    @property
    def removed(self) -> int:
        return self.before - self.kept


@dataclass(frozen=True)
class ComputedFilter:
    """A filter computed from a pool of runs: what it keeps and how it was decided."""

    runs: list[PoolRun]
    #: The data set of every run (`data_dir` of their `run.json`).
    data_dir: str
    at_least: float
    #: How many runs must answer a sample right at the first turn to remove it.
    needed: int
    #: Kept sample ids by scenario (short name), in the registry's order.
    kept: dict[str, list[int]]
    counts: dict[str, ScenarioCount]
    #: The digest of each record file of the data, by stem (empty: the data is not here).
    records: dict[str, str] = field(default_factory=dict)
    #: Per scenario: the samples of the data no run played (None: the data is not here, or
    #: the runs played a filter of their own, whose samples are not known here).
    not_played: dict[str, int] | None = None
    #: What a reader of the filter must know of the pool (`decoded_otherwise`).
    warnings: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        """The filter file: the official list's shape, plus where it came from (a key the
        reader never reads). Nothing in it depends on when it was written: the same runs give
        the same bytes."""
        rule = (
            f"at least {self.needed} of the {len(self.runs)} runs (the fraction "
            f"{self.at_least:g}, rounded up) answered it right at the first MCQA turn"
        )
        return {
            "_source": "Sample ids kept by a test filter computed by `proactivebench data "
            f"filter` (ProactiveBench §3.3), per data file stem: a sample was removed when {rule}. "
            "Play it with `proactivebench eval --filter FILE`.",
            FILTER_IDS: {scenario(s).strings.stem: ids for s, ids in self.kept.items()},
            "provenance": {
                "data_dir": self.data_dir,
                **({"records": self.records} if self.records else {}),
                "runs": [{"run": str(r.run_dir), "model": r.model} for r in self.runs],
                "at_least": self.at_least,
                "models_needed": self.needed,
                "counts": {s: self._counted(s, c) for s, c in self.counts.items()},
            },
        }

    def _counted(self, short: str, count: ScenarioCount) -> dict[str, int]:
        """One scenario's counts in the file; `not_played` only when some sample was."""
        counted = {"before": count.before, "removed": count.removed, "kept": count.kept}
        unplayed = (self.not_played or {}).get(short, 0)
        return {**counted, "not_played": unplayed} if unplayed else counted


def models_needed(at_least: float, runs: int) -> int:
    """How many of `runs` must answer a sample right to remove it: ceil(at_least × runs),
    computed on the fraction as written (0.25 × 22 = 5.5 → 6, the paper's 6 of 22; 0.28 × 25
    is 7, not the 8 that float arithmetic would give)."""
    if isinstance(at_least, bool) or not isinstance(at_least, int | float):
        raise SettingsError(f"--at-least must be a fraction in (0, 1], got {at_least!r}")
    if not (math.isfinite(at_least) and 0 < at_least <= 1):
        raise SettingsError(f"--at-least must be a fraction in (0, 1], got {at_least!r}")
    return math.ceil(Fraction(str(at_least)) * runs)


def compute_filter(
    run_dirs: Sequence[str | os.PathLike[str]], at_least: float = PAPER_AT_LEAST
) -> ComputedFilter:
    """The filter of a pool of MCQA runs (see the module's doc); a run that cannot be
    counted with the others is refused, naming it and what differs."""
    if not run_dirs:
        raise NothingToDoError("no run given: name the run directories of the pool")
    needed = models_needed(at_least, len(run_dirs))
    runs: list[PoolRun] = []
    first_config: dict[str, Any] | None = None
    first_lines: list[dict[str, Any]] = []
    owners: dict[str, Path] = {}
    for given in run_dirs:
        run_dir = Path(given)
        config = read_run_config(run_dir)
        _refuse_not_plain(run_dir, config)
        found = run_lines(run_dir, config)
        refuse_rejected(found.rejected, f"{run_dir} holds lines that cannot be counted")
        if first_config is None:
            first_config, first_lines = config, found.lines
        # The rule --vs and train compare apply: runs that record no data are told by their
        # samples' answers (`datarecords.other_data`).
        why = other_data(config, first_config, (found.lines, first_lines))
        if why is not None:
            raise RunMismatchError(
                f"{run_dir} was played on other data than {run_dirs[0]} ({why}): a filter "
                "counts runs of one data set"
            )
        model = str(config.get("model"))
        who = dumps([model, config.get("model_settings")], sort_keys=True)
        if who in owners:
            raise RunMismatchError(
                f"{run_dir} and {owners[who]} are runs of one model ({model}): a model counts "
                "once in the pool; leave one out"
            )
        owners[who] = run_dir
        runs.append(PoolRun(run_dir.resolve(), model, _first_turns(found.lines)))
    samples = _common_samples(runs)
    right = {s: sum(r.right_first[s] for r in runs) for s in samples}
    kept: dict[str, list[int]] = {}
    counts: dict[str, ScenarioCount] = {}
    for name in sorted({s for s, _ in samples}, key=scenario_rank):
        ids = sorted(i for s, i in samples if s == name)
        kept[name] = [i for i in ids if right[(name, i)] < needed]
        counts[name] = ScenarioCount(before=len(ids), kept=len(kept[name]))
    data_dir = str((first_config or {}).get("data_dir"))
    records, not_played = _data_behind(Path(data_dir), kept, samples, first_config or {})
    warnings = [w for r in run_dirs if (w := decoded_otherwise(Path(r))) is not None]
    return ComputedFilter(
        runs, data_dir, at_least, needed, kept, counts, records, not_played, warnings
    )


def decoded_otherwise(run_dir: Path) -> str | None:
    """A run of the pool not decoded as the protocol decodes multiple choice (greedy, 50 new
    tokens), or None: a model may sample its own answers, but its first turns are then another
    measurement than the paper's filter counted."""
    config = read_run_config(run_dir)
    settings = config.get("settings")
    recorded = settings.get("decoding") if isinstance(settings, dict) else None
    protocol = EvalSettings().identity().get("decoding")
    if recorded is None or recorded == protocol:
        return None
    return (
        f"{run_dir} was decoded otherwise than the protocol ({shown_json(recorded)}, where it "
        f"decodes {shown_json(protocol)}): its first turns are not those the paper's filter "
        "counted"
    )


def _data_behind(
    data_dir: Path, kept: dict[str, list[int]], samples: set[Sample], config: dict[str, Any]
) -> tuple[dict[str, str], dict[str, int] | None]:
    """The digest of each record file the filter covers, and per scenario the samples of the
    data that no run played: counted against the official test set when the runs played
    within it, else against every record (a pool played with `--all-samples`). Nothing when
    the data is not here; no count when the runs played a filter of their own. Runs that
    played samples the data no longer holds are refused: it changed since."""
    if not data_dir.is_dir():
        return {}, None
    dataset = load_dataset(data_dir, list(kept), all_samples=True)
    records = {
        scenario(s).strings.stem: record_file_digest(scenario_file(data_dir, s)) for s in kept
    }
    settings = config.get("settings")
    if isinstance(settings, dict) and settings.get("filter") is not None:
        return records, None
    not_played = {}
    for short, found in dataset.records.items():
        played = {i for s, i in samples if s == short}
        every = {r.id for r in found}
        if not played <= every:
            missing = ", ".join(map(str, sorted(played - every)[:3]))
            raise RunMismatchError(
                f"the runs played {short} samples that {data_dir} no longer holds ({missing}): "
                "the data changed since they were played; play the pool again on it"
            )
        official = (
            every if dataset.synthetic else {r.id for r in apply_official_filter(found, short)}
        )
        not_played[short] = len((official if played <= official else every) - played)
    return records, not_played


def write_filter(
    run_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    at_least: float = PAPER_AT_LEAST,
) -> ComputedFilter:
    """Compute the filter of `run_dirs` and write it to `out` whole (nothing is written when a
    run is refused, or when `out` holds a file that is not a filter file)."""
    _refuse_other_file(Path(out))
    computed = compute_filter(run_dirs, at_least)
    write_whole(out, dumps(computed.document(), indent=2) + "\n")
    return computed


def _refuse_other_file(out: Path) -> None:
    """`out` may be new or an earlier filter file (written again); any other file there (a
    run's results.jsonl, a record file, a typo's victim) would be lost: refused, unread
    further, naming why it is not a filter file."""
    if not out.exists():
        return
    try:
        read_sample_filter(out)
    except DataError as exc:
        raise DataError(
            f"{exc.message}: the filter is written only over an earlier filter file; name a "
            "new file",
            path=str(out),
        ) from None


def _refuse_not_plain(run_dir: Path, config: dict[str, Any]) -> None:
    """Refuse a run of any setting but plain MCQA."""
    settings = config.get("settings")
    differs = _not_plain(settings if isinstance(settings, dict) else {})
    if differs:
        raise RunMismatchError(
            f"{run_dir} is not a plain MCQA run ({'; '.join(differs)}): the filter counts "
            "first turns of multiple choice without hint, reference, history, demonstrations "
            "or any other setting; leave it out"
        )


def _not_plain(recorded: dict[str, Any]) -> list[str]:
    """`name: value` for every recorded setting that is not at its default (a model's own
    seed and decoding excepted), and for one this version does not know."""
    defaults = {s.name: s.default for s in declared(EvalSettings)}
    return [
        f"{name}: {shown_json(value)}"
        for name, value in recorded.items()
        if name not in _OWN_TO_EACH_RUN and (name not in defaults or value != defaults[name])
    ]


def _first_turns(lines: list[dict[str, Any]]) -> dict[Sample, bool]:
    """Each finished episode of the run's counted lines: whether its first turn's verdict was
    "correct". An episode that ended in an error has no first turn to count (a rerun of its
    eval retries it)."""
    first: dict[Sample, bool] = {}
    for line in lines:
        trace = line.get("trace")
        if line.get("error") or not isinstance(trace, list) or not trace:
            continue
        turn = trace[0]
        first[(line["scenario"], line["sample_id"])] = (
            isinstance(turn, dict) and turn.get("verdict") == "correct"
        )
    return first


def _common_samples(runs: list[PoolRun]) -> set[Sample]:
    """The samples every run gave a first turn; runs that cover different samples are
    refused, each named with what it lacks (a count is only fair over the same samples)."""
    union = set().union(*(r.right_first for r in runs))
    if not union:
        raise NothingToDoError(
            f"no finished episode in {', '.join(str(r.run_dir) for r in runs)}: nothing to filter"
        )
    gaps = []
    for run in runs:
        missing = sorted(union - run.right_first.keys(), key=lambda s: (scenario_rank(s[0]), s))
        if missing:
            shown = ", ".join(f"{s} {i}" for s, i in missing[:3])
            more = ", ..." if len(missing) > 3 else ""
            gaps.append(
                f"{run.run_dir} has no finished first turn for {len(missing)} of the "
                f"{len(union)} samples ({shown}{more})"
            )
    if gaps:
        raise RunMismatchError(
            "the runs cover different samples: "
            + "; ".join(gaps)
            + ". Play the same samples in every run (the same --scenarios and --limit; rerun "
            "an eval whose episodes ended in errors), or leave the run out"
        )
    return union
