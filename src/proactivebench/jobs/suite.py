"""A suite: several experiments with one model, played side by side in one process.

A suite file (TOML) lists experiments, each an id, where the paper shows it and `eval`'s run
settings by their declared names (`settings.EvalSettings`); `suites/paper.toml`, shipped in
the package, is the paper's list (`proactivebench paper`). `run_suite` plays every experiment
into its own ordinary run directory `OUT/<id>` (so `report`, `show`, `judge` and `merge` work
on each) with one `engine.RunEngine`: one response cache and one limit on requests in flight
for them all. A request two experiments ask alike (the same episode's turns in `mcqa` and
`unfiltered`) is asked once, even at the same moment (`models.cache.Sharing`), and the
outcome says how many requests that saved. Each experiment resumes as `eval` does; one that
fails (its server unreachable, a bad setting for the data) is told apart and the others go
on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proactivebench.benchmark.paper_results import paper_results
from proactivebench.core.errors import (
    DamagedRunError,
    DataError,
    NotARunDirError,
    NothingToDoError,
    ProactiveBenchError,
    RunMismatchError,
    SettingsError,
    SuiteFileError,
)
from proactivebench.core.paths import read_file, write_whole
from proactivebench.core.texts import dumps, loads, shown_json
from proactivebench.data.directory import named_scenarios, parse_scenario_names
from proactivebench.jobs.evaluate import RunOutcome, aevaluate
from proactivebench.models.base import ChatRequest, Completion, Model, ModelWrapper
from proactivebench.models.cache import ResponseCache
from proactivebench.report.comparable import own_filter, table_of
from proactivebench.report.published import ALSO_PRINTED
from proactivebench.report.published_figures import figure_of
from proactivebench.report.runs import labelled
from proactivebench.run.datarecords import changed_since, data_records, records_of
from proactivebench.run.engine import RunEngine
from proactivebench.run.judge import Judge
from proactivebench.run.play_episode import Result
from proactivebench.run.rundir import (
    ONE_SUITE_KEYS,
    RUN_CONFIG,
    SUITE_RECORD,
    SUITE_RESERVED,
    RunLock,
    identity_differences,
    read_run_config,
)
from proactivebench.run.settings import EvalSettings, RunOptions, check_setting, offered

if TYPE_CHECKING:
    from proactivebench.report import ReportOutcome

#: The keys of an entry besides the settings: its id, where the paper shows it, and the key
#: (in paper_results.json) of the paper's table or figure its run stands beside in the report.
ID, PAPER, PUBLISHED = "id", "paper", "published"
#: suite.json's key of the episodes per scenario a run was played with (None: all).
LIMIT = "limit"
#: An experiment's id names its run directory: a plain name.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Experiment:
    """One entry of a suite: a run of the suite's model with these settings, into OUT/<id>."""

    id: str
    #: Where the paper shows it (a table or figure, and what it measures); "" when not said.
    paper: str
    settings: EvalSettings
    #: The paper's table or figure its run is placed in by the report (`published`), or None.
    published: str | None = None

    @property
    def judged(self) -> bool:
        return self.settings.judged


@dataclass(frozen=True)
class Suite:
    """The experiments of a suite file, in its order."""

    path: str
    experiments: tuple[Experiment, ...]

    def chosen(self, only: Sequence[str] = (), skip: Sequence[str] = ()) -> list[Experiment]:
        """The experiments `only` names (all when empty) without those `skip` names; an id
        the suite does not hold is refused, naming the ids it does, and so is a choice that
        leaves none."""
        ids = [e.id for e in self.experiments]
        unknown = [i for i in [*only, *skip] if i not in ids]
        if unknown:
            raise SettingsError(
                f"{self.path} has no experiment {', '.join(map(repr, unknown))}; its "
                f"experiments: {', '.join(ids)}"
            )
        chosen = [e for e in self.experiments if (not only or e.id in only) and e.id not in skip]
        if not chosen:
            raise NothingToDoError(
                f"no experiment of {self.path} is left to run: --skip leaves out every one "
                f"{'--only names' if only else 'it holds'}"
            )
        return chosen


def paper_suite() -> Suite:
    """The paper's experiments (`suites/paper.toml`)."""
    text = resources.files("proactivebench").joinpath("suites/paper.toml").read_text("utf-8")
    return parse_suite(text, "paper.toml (shipped)")


def read_suite(path: str | os.PathLike[str]) -> Suite:
    """The suite in the TOML file `path`, every entry checked against the declared settings."""
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteFileError(f"cannot read the suite file {path}: {exc}") from None
    return parse_suite(text, str(path), Path(path).parent)


def parse_suite(text: str, where: str, folder: Path | None = None) -> Suite:
    """The suite a file's text describes: `[[experiment]]` tables, each with an `id`, an
    optional `paper` and settings by name; anything else is one error naming the file, the
    entry and the key. A path it holds (`filter`) is relative to `folder`, the suite file's
    (None: the current directory)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteFileError(f"{where} is not TOML: {exc}") from None
    extra = sorted(set(document) - {"experiment"})
    if extra:
        raise SuiteFileError(
            f"{where}: unknown key {extra[0]!r}; a suite file holds [[experiment]] tables"
        )
    entries = document.get("experiment")
    if not isinstance(entries, list) or not entries:
        raise SuiteFileError(f"{where}: no [[experiment]] table")
    experiments: list[Experiment] = []
    for number, entry in enumerate(entries, 1):
        experiment = _experiment(entry, f"{where}: experiment {number}", folder)
        if any(e.id == experiment.id for e in experiments):
            raise SuiteFileError(f"{where}: two experiments have the id {experiment.id!r}")
        experiments.append(experiment)
    return Suite(where, tuple(experiments))


def _experiment(entry: dict[str, Any], where: str, folder: Path | None) -> Experiment:
    ident = entry.get(ID)
    if not isinstance(ident, str) or not _ID.fullmatch(ident):
        raise SuiteFileError(
            f"{where}: 'id' must be a name of letters, digits, '-', '_' or '.' (it names the "
            f"run directory), got {ident!r}"
        )
    if ident.casefold() in SUITE_RESERVED:  # the suite's own files in OUT, in any case
        raise SuiteFileError(
            f"{where}: 'id' {ident!r} is taken: OUT/{ident} is the suite's own (the report of "
            f"every experiment, the list of them); choose another id"
        )
    where = f"{where} ({ident!r})"
    paper = entry.get(PAPER, "")
    if not isinstance(paper, str):
        raise SuiteFileError(f"{where}: 'paper' must be a text, got {paper!r}")
    published = entry.get(PUBLISHED)
    tables = paper_results()["tables"]
    if published is not None and published not in tables:
        raise SuiteFileError(
            f"{where}: 'published' names no table or figure of the paper: {published!r}; "
            f"the paper's: {', '.join(tables)}"
        )
    settings = _settings(entry, where, folder)
    if published is not None:
        contradiction = _contradiction(settings, published)
        if contradiction is not None:
            raise SuiteFileError(f"{where}: 'published' {published!r}: {contradiction}")
    return Experiment(ident, paper, settings, published)


def _settings(entry: dict[str, Any], where: str, folder: Path | None) -> EvalSettings:
    """The run settings of an entry, every value checked now, before any experiment plays
    (what would fail only when its experiment starts, after the others played, included);
    a path relative to `folder` (the suite file's; None: the current directory)."""
    declared = {s.name: s for s in offered(EvalSettings, "cli")}
    values: dict[str, Any] = {}
    for key, value in entry.items():
        if key in (ID, PAPER, PUBLISHED):
            continue
        spec = declared.get(key)
        if spec is None:
            raise SuiteFileError(
                f"{where}: unknown setting {key!r}; the settings: {', '.join(declared)}"
            )
        try:
            values[key] = check_setting(spec, value)
        except SettingsError as exc:
            raise SuiteFileError(f"{where}: setting {key!r}: {exc}") from None
        if spec.info.path and isinstance(values[key], str) and folder is not None:
            values[key] = str(folder / values[key])
    try:
        settings = EvalSettings(**values)
    except SettingsError as exc:  # a combination of settings (e.g. --icl with --reference)
        raise SuiteFileError(f"{where}: {exc}") from None
    except DataError as exc:  # a file a path names (a filter) that cannot be read
        paths = [k for k in values if declared[k].info.path]
        raise SuiteFileError(f"{where}: setting {' / '.join(map(repr, paths))}: {exc}") from None
    # Known when the file is read (scenarios registered from Python included), by the rule
    # the data loader applies when the experiment starts, after the others began.
    if settings.scenarios is not None:
        try:
            named_scenarios(settings.scenarios)
        except DataError as exc:
            raise SuiteFileError(f"{where}: setting 'scenarios': {exc}") from None
    return settings


def _contradiction(settings: EvalSettings, published: str) -> str | None:
    """Why the runs of `settings` cannot stand beside the paper's `published` (None when they
    can), by the report's own rule of which table or figure a run is placed in: a suite entry
    placing, say, a hint run among Table 1's zero-shot models would rank it there."""
    recorded = settings.identity()  # what run.json will record
    mode, all_samples = settings.mode, settings.all_samples
    figure = figure_of(recorded, all_samples=all_samples)
    places = [p for p in (table_of(mode, recorded, all_samples=all_samples), figure) if p]
    keys = [p if isinstance(p, str) else p[0] for p in places]
    # Table 8 prints the aggregate Table 2's runs also give: the same runs stand beside both.
    keys += [ALSO_PRINTED[k][0] for k in keys if k in ALSO_PRINTED]
    if published in keys:
        return None
    marks = [k for k in labelled(recorded) if k != "mode"] + ["all_samples"] * all_samples
    marks += ["filter"] * own_filter(recorded)
    played = f"--mode {mode}" + "".join(f" --{m.replace('_', '-')}" for m in marks)
    where = " or ".join(keys) or "no table or figure of the paper"
    return f"runs of these settings ({played}) stand beside {where}, not there"


def capped(settings: EvalSettings, limit: int | None) -> EvalSettings:
    """`settings` with at most `limit` episodes per scenario (the command's --limit caps the
    file's own)."""
    if limit is None or (settings.limit is not None and settings.limit <= limit):
        return settings
    return dataclasses.replace(settings, limit=limit)


# ----- running ----------------------------------------------------------------------------------

#: An experiment's status at the end: played to the end; not run (no judge for an open-ended
#: one); failed (its error told); some episodes ended in an error (a rerun retries them).
DONE, SKIPPED, FAILED, EPISODE_ERRORS = "done", "skipped", "failed", "episode errors"


@dataclass
class ExperimentOutcome:
    experiment: Experiment
    out_dir: Path
    status: str
    outcome: RunOutcome | None = None
    #: Why it failed or was skipped.
    reason: str | None = None
    #: Requests it sent, and answers it took from a request another experiment asked.
    asked: int = 0
    shared: int = 0


@dataclass
class SuiteOutcome:
    experiments: list[ExperimentOutcome] = field(default_factory=list)

    @property
    def asked(self) -> int:
        """Requests sent to the model and the judge by this invocation."""
        return sum(e.asked for e in self.experiments)

    @property
    def saved(self) -> int:
        """Requests not sent because another experiment asked the same in this invocation."""
        return sum(e.shared for e in self.experiments)

    @property
    def failed(self) -> list[ExperimentOutcome]:
        return [e for e in self.experiments if e.status == FAILED]


#: `on_start(experiment id, episodes, already done)`, `on_result(experiment id, result)`.
OnStart = Callable[[str, int, int], None]
OnResult = Callable[[str, Result], None]


class _KeptOpen(ModelWrapper):
    """A model several experiments share: a run closes its models when it ends, which would
    close the connections the others still use; the suite closes it once, at the end."""

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return await self.inner.generate(requests)

    async def aclose(self) -> None:
        pass


def _maker(given: Model | Callable[[], Model], shared: list[Model]) -> Callable[[], Model]:
    """A new model per experiment from a factory; or the one model given, kept open (and
    noted in `shared`, for the suite to close at the end)."""
    if not isinstance(given, Model):
        return given
    shared.append(given)
    return lambda: _KeptOpen(given)


async def run_suite(
    data_dir: str | os.PathLike[str],
    experiments: Sequence[Experiment],
    out_dir: str | os.PathLike[str],
    *,
    model: Model | Callable[[], Model],
    judge: Judge | Callable[[], Judge] | None = None,
    options: RunOptions | None = None,
    cache: ResponseCache | None = None,
    limit: int | None = None,
    on_start: OnStart = lambda ident, total, done: None,
    on_result: OnResult = lambda ident, result: None,
) -> SuiteOutcome:
    """Play `experiments` side by side into `out_dir/<id>`, each a run of `model` and,
    open-ended, judged by `judge`; without `judge` those are skipped. A model (or judge) given
    as a factory makes one per experiment: each answers as it would alone (a seeded sampler's
    draws are its own), the way for backends cheap to make (`openai:`, `python:`, the
    baselines); one given as an instance is shared by all (a local `hf:` model, loaded once),
    closed at the end. They share one engine
    of `options` (`concurrency`: episodes in flight per experiment; `requests_in_flight`:
    requests over them all) and `cache`. An experiment that fails is told in its outcome;
    the others go on. Cancelled (Ctrl-C), every run keeps what it wrote, as `eval` does."""
    engine = RunEngine(options, cache)
    root = Path(out_dir)
    refuse_before_running(Path(data_dir), root)
    shared: list[Model] = []
    make_model = _maker(model, shared)
    try:
        ours = await suite_identity(Path(data_dir), make_model)
        record_suite(root, [], limit, ours)  # the identity only: entries come as runs start
    except BaseException:
        for kept in shared:
            await kept.aclose()
        raise
    outcomes = [ExperimentOutcome(e, root / e.id, "") for e in experiments]
    make_judge: Callable[[], Judge] | None = None
    if isinstance(judge, Judge):
        judge_model = _maker(judge.model, shared)
        make_judge = lambda: judge.with_model(judge_model())  # noqa: E731
    elif judge is not None:
        make_judge = judge

    async def one(entry: ExperimentOutcome) -> None:
        experiment = entry.experiment
        if experiment.judged and make_judge is None:
            entry.status, entry.reason = SKIPPED, "open-ended: needs --judge"
            return
        try:
            outcome = await aevaluate(
                data_dir,
                make_model(),
                entry.out_dir,
                capped(experiment.settings, limit),
                engine=engine,
                judge=make_judge() if experiment.judged and make_judge is not None else None,
                on_start=lambda total, done: started(experiment, total, done),
                on_result=lambda result: on_result(experiment.id, result),
            )
        except ProactiveBenchError as exc:
            entry.status, entry.reason = FAILED, str(exc)
            return
        entry.outcome = outcome
        entry.status = EPISODE_ERRORS if outcome.errors else DONE

    def started(experiment: Experiment, total: int, done: int) -> None:
        # Recorded once its run took these settings (it starts): one skipped (no judge) or
        # failed before it started was never played, and listed it read as a lost run.
        record_suite(root, [experiment], limit, ours, order=[e.id for e in experiments])
        on_start(experiment.id, total, done)

    try:
        await asyncio.gather(*(one(entry) for entry in outcomes))
    finally:
        for kept in shared:
            await kept.aclose()
        for entry in outcomes:
            counts = engine.sharing.runs.get(str(entry.out_dir))
            if counts is not None:
                entry.asked, entry.shared = counts.asked, counts.shared
    return SuiteOutcome(outcomes)


def refuse_before_running(data_dir: Path, out_dir: Path) -> None:
    """What would fail every experiment alike, refused once before anything is written: data
    that is not a data directory, an OUT that is a file, or a run directory (its report
    folder would take the suite's report, its folder the experiments')."""
    parse_scenario_names(None, data_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotARunDirError(f"cannot use {out_dir} as a suite's output: it is a file")
    if (out_dir / RUN_CONFIG).exists():
        raise RunMismatchError(
            f"{out_dir} is a run directory ({out_dir / RUN_CONFIG}), not a suite's output: it "
            "would hold the experiments' run directories and their report; use another --out"
        )


#: The key of suite.json that keeps the identity (`ONE_SUITE_KEYS`) its experiments share.
IDENTITY = "identity"


async def suite_identity(data_dir: Path, make_model: Callable[[], Model]) -> dict[str, Any]:
    """The data and model (name, request settings) of this invocation, as its runs record them
    (`ONE_SUITE_KEYS`): one model is made to learn them (the shared instance, or one of the
    factory's), closed again."""
    probe = make_model()
    try:
        return {
            "data_dir": str(data_dir.resolve()),
            "model": probe.name,
            "model_settings": probe.request_settings() or None,
        }
    finally:
        await probe.aclose()


def refuse_another_model(out_dir: Path, before: dict[str, Any], ours: dict[str, Any]) -> None:
    """Refuse an invocation whose model or data differ from those of `out_dir`'s suite.json
    (`before`: its identity, else the run.json of each experiment it names): a suite's output
    is one model's experiments on one data set. Its report names one model and compares each
    experiment with the plain run (the action changes of Figs. 5, 7). Called under the lock of
    `out_dir` with the recording (`record_suite`): checked before it, two invocations started
    at once both passed, and one model's runs were compared with another's as one model's.
    The runs are named first (what OUT holds), then suite.json's identity (an invocation
    whose runs have not started yet)."""
    played = {}
    for entry in before.get("experiments", []):
        path = out_dir / entry[ID] / RUN_CONFIG
        if path.is_file():
            played[path] = read_run_config(path.parent)
            _refuse_other(out_dir, path, played[path], ours)
    _refuse_changed_data(out_dir, played, ours)
    recorded = before.get(IDENTITY)
    if isinstance(recorded, dict):  # named by an invocation whose runs have not started yet
        _refuse_other(out_dir, out_dir / SUITE_RECORD, recorded, ours)


def _refuse_other(
    out_dir: Path, path: Path, recorded: dict[str, Any], ours: dict[str, Any]
) -> None:
    """Refuse `ours` when the identity `path` records differs from it, naming what differs."""
    theirs = {key: recorded.get(key) or None for key in ONE_SUITE_KEYS}
    if theirs != ours:
        changes = "; ".join(identity_differences(theirs, ours))
        raise RunMismatchError(
            f"{out_dir} holds the experiments of another model or data set ({path}: "
            f"{changes}); a suite's output is one model's on one data set: use another "
            "--out, or the same --model and --data to resume it or add experiments"
        )


def _refuse_changed_data(
    out_dir: Path, played: dict[Path, dict[str, Any]], ours: dict[str, Any]
) -> None:
    """Refuse an invocation whose data directory, at the same path, no longer holds the
    records an experiment played (each run.json's digests, `played`): its runs would pair
    samples of other data under the same ids with the plain run's. The data's records are
    digested once, for every experiment."""
    scenarios = {s for config in played.values() for s in records_of(config) or {}}
    if not scenarios or not isinstance(ours.get("data_dir"), str):
        return
    now = data_records(Path(ours["data_dir"]), sorted(scenarios))
    for path, config in played.items():
        changed = changed_since(config, now)
        if changed:
            raise RunMismatchError(
                f"{out_dir} holds experiments played on other records than "
                f"{ours['data_dir']} holds now ({path}: the {', '.join(changed)} records "
                "differ); a suite's output is one model's on one data set: use another --out"
            )


#: Seconds an invocation waits for another one updating the same `suite.json` (a moment's
#: read-modify-write) before giving up, naming it.
RECORD_WAIT_S = 60.0


def record_suite(
    out_dir: Path,
    experiments: Sequence[Experiment],
    limit: int | None,
    ours: dict[str, Any] | None = None,
    order: Sequence[str] = (),
) -> None:
    """Note in `out_dir/suite.json` which experiments it holds (with where the paper shows
    each), so that `report OUT` lays their report out as the paper: the entries of an earlier
    invocation (`--only`) are kept, those played now replace theirs. Read, changed and written
    whole under the lock of `out_dir` (`RunLock`, waiting for another invocation's update of a
    moment): two invocations into one OUT at once (`paper --only a`, `paper --only b`) keep
    both entries.

    Each entry keeps the limit its run was played with (episodes per scenario; None: all),
    the larger of an earlier invocation's and this one's (a run only grows), and the record's
    `limit` is the largest of them: a report of runs of which any is partial says so, whatever
    the last invocation's --limit (or a suite file's own `limit`).

    `ours` (the invocation's data and model, `suite_identity`) is checked against those OUT
    holds (`refuse_another_model`) and kept in the record, in the same hold of the lock: the
    first invocation to record names the one model OUT is for.

    `order`: the invocation's experiment ids in its suite's order, which the entries of them
    keep (the report lists them so) whichever run started first."""
    with RunLock(out_dir, wait=RECORD_WAIT_S):
        before = read_suite_record(out_dir)
        record = _recorded(out_dir, before, experiments, limit)
        record["experiments"] = _in_order(record["experiments"], order)
        if ours is not None:
            refuse_another_model(out_dir, before, ours)
            record[IDENTITY] = ours
        elif IDENTITY in before:
            record[IDENTITY] = before[IDENTITY]
        write_whole(out_dir / SUITE_RECORD, dumps(record, indent=2) + "\n")


def _recorded(
    out_dir: Path, before: dict[str, Any], experiments: Sequence[Experiment], limit: int | None
) -> dict[str, Any]:
    """The record `before` with the entries of `experiments` played with `limit` renewed."""
    # Entries written before they kept their own limit: the record's was theirs.
    entries = {e["id"]: {LIMIT: before.get(LIMIT), **e} for e in before.get("experiments", [])}
    for experiment in experiments:
        played = capped(experiment.settings, limit).limit
        if (out_dir / experiment.id / RUN_CONFIG).is_file() and experiment.id in entries:
            played = _larger(entries[experiment.id].get(LIMIT), played)
        entries[experiment.id] = {
            ID: experiment.id,
            PAPER: experiment.paper,
            PUBLISHED: experiment.published,
            "plain": _plain(experiment.settings),
            LIMIT: played,
        }
    limits = [e[LIMIT] for e in entries.values() if isinstance(e.get(LIMIT), int)]
    return {"experiments": list(entries.values()), LIMIT: max(limits, default=None)}


def _in_order(entries: list[dict[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    """`entries` with those `order` names in its order, in the places they hold (the others,
    of earlier invocations, stay where they are)."""
    rank = {ident: n for n, ident in enumerate(order)}
    ours = iter(sorted((e for e in entries if e[ID] in rank), key=lambda e: rank[e[ID]]))
    return [next(ours) if e[ID] in rank else e for e in entries]


def _larger(first: Any, second: int | None) -> int | None:
    """Two limits on one run directory, one after the other: what it holds (None: all)."""
    if not isinstance(first, int) or second is None:
        return None
    return max(first, second)


def is_suite_dir(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a suite's experiments (its `suite.json`) rather than one run; a
    `suite.json` there (and no run.json) that is not one is refused by name, rather than
    `path` being taken for a run directory without a run.json."""
    root = Path(path)
    if (root / RUN_CONFIG).exists():
        return False
    return bool(read_suite_record(root))


def read_suite_record(out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """`suite.json` of a suite's output, or {} when there is none. One that is there but
    damaged (not JSON, a bad id, a value of the wrong kind) is refused by name, with its
    experiment and key: taken as {} it was overwritten by the next invocation, and a bad
    value was ignored without a word."""
    root = Path(out_dir)
    record, problem = _suite_record(root)
    if problem is not None and (root / SUITE_RECORD).exists():
        raise DamagedRunError(
            f"{root / SUITE_RECORD} is damaged ({problem}); run the suite's command (paper or "
            f"suite) again to write it, or name its experiments' run directories"
        )
    return record


def _suite_record(out_dir: Path) -> tuple[dict[str, Any], str | None]:
    """`suite.json` of `out_dir`, or {} and why it is none."""
    try:
        record = loads(read_file(out_dir / SUITE_RECORD).decode("utf-8"))
    except OSError as exc:
        return {}, exc.strerror or str(exc)
    except ValueError as exc:
        return {}, f"not JSON: {exc}"
    entries = record.get("experiments") if isinstance(record, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get(ID), str) and _ID.fullmatch(e[ID]) for e in entries
    ):
        return {}, "not a list of experiments, each with an id that names a folder"
    problem = _bad_value(record)
    return ({}, problem) if problem is not None else (record, None)


def _bad_value(record: dict[str, Any]) -> str | None:
    """The first value of `record` the readers could not take as it was written (a hand edit:
    `published: 5`, `limit: "2"`, `plain: "yes"`), named with its experiment and key; None when
    all hold. Taken as they were, a bad limit or flag was ignored without a word."""
    if not _limit_ok(record.get(LIMIT)):
        return (
            f"{LIMIT} is {_shown(record.get(LIMIT))}, not a count of episodes (1 or more) or null"
        )
    if IDENTITY in record and not _identity_ok(record[IDENTITY]):
        return f"{IDENTITY} is {_shown(record[IDENTITY])}, not the data and model of its runs"
    seen: set[str] = set()
    for entry in record["experiments"]:
        where = f"experiment {entry[ID]!r}"
        if entry[ID] in seen:
            return f"{where} is listed twice"
        seen.add(entry[ID])
        for key, (holds, wanted) in _ENTRY_VALUES.items():
            if key in entry and not holds(entry[key]):
                return f"{where}: {key} is {_shown(entry[key])}, not {wanted}"
    return None


def _identity_ok(value: Any) -> bool:
    """An identity as suite.json keeps it: the data's path and the model's name (texts), its
    request settings (an object or null)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("data_dir"), str)
        and isinstance(value.get("model"), str)
        and (value.get("model_settings") is None or isinstance(value["model_settings"], dict))
    )


def _limit_ok(value: Any) -> bool:
    """A limit as suite.json keeps it: a count of episodes per scenario, or None (all)."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


#: The values of a suite.json entry besides its id: what each must hold, and how it is named.
_ENTRY_VALUES: dict[str, tuple[Callable[[Any], bool], str]] = {
    PAPER: (lambda v: v is None or isinstance(v, str), "a text or null"),
    PUBLISHED: (lambda v: v is None or _a_table(v), "the key of a paper's table or null"),
    "plain": (lambda v: isinstance(v, bool), "true or false"),
    LIMIT: (_limit_ok, "a count of episodes (1 or more) or null"),
}


def _a_table(value: Any) -> bool:
    """Whether `value` is the key of one of the paper's tables or figures (paper_results.json),
    as a suite file's `published` must be: another was placed nowhere, without a word."""
    return isinstance(value, str) and value in paper_results()["tables"]


def _shown(value: Any) -> str:
    """A value as the file holds it (JSON, a NaN included), cut short."""
    text = shown_json(value)
    return text if len(text) <= 40 else text[:37] + "..."


def plain_run(out_dir: str | os.PathLike[str]) -> Path:
    """The run directory of a suite's plain multiple-choice experiment (suite.json's `plain`):
    what stands for the suite's model beside other models' (`report OUT1 OUT2 ...`)."""
    listed = read_suite_record(out_dir).get("experiments", [])
    found = [Path(out_dir) / e["id"] for e in listed if e.get("plain")]
    played = [run for run in found if (run / RUN_CONFIG).is_file()]
    if not played:
        raise NothingToDoError(
            f"{out_dir}: its suite has no plain multiple-choice run yet "
            f"({', '.join(e['id'] for e in listed) or 'no experiment'}), none to compare "
            "with other models"
        )
    return played[0]


def _plain(settings: EvalSettings) -> bool:
    """Whether an experiment is the plain multiple-choice run the others are compared with
    (the paper's Table 1: defaults, the official filter, every sample of it)."""
    default = EvalSettings()
    return (
        settings.identity() == default.identity()
        and not settings.all_samples
        and settings.subset is None
        and settings.sample_filter is None
    )


def write_suite_report(
    out_dir: str | os.PathLike[str],
    outcome: SuiteOutcome | None = None,
    *,
    thumb_cache: bool = True,
    report_dir: str | os.PathLike[str] | None = None,
    paper_model: str | None = None,
    if_changed: bool = True,
) -> ReportOutcome:
    """The suite's report in `out_dir/report`, laid out as the paper (`report.paper_layout`): the
    experiments first (with links to each one's own report, written too), then the paper's
    tables with the published rows and this model's, the action distributions and their
    changes from the plain run, then each run's tables. From `suite.json`; `outcome` (the
    invocation that just ran) gives each experiment's status; `report_dir` puts the report
    elsewhere, `paper_model` names the paper's model (`report --paper-model`); `if_changed`
    False (`report OUT`) writes the reports again even when their stamp says nothing
    changed."""
    from proactivebench.report.suite_report import write_suite_report as write

    statuses = {}
    for entry in outcome.experiments if outcome is not None else []:
        reason = f": {entry.reason}" if entry.reason else ""
        statuses[entry.experiment.id] = entry.status + reason
    return write(
        Path(out_dir),
        read_suite_record(out_dir),
        statuses,
        thumb_cache=thumb_cache,
        report_dir=Path(report_dir) if report_dir is not None else None,
        paper_model=paper_model,
        if_changed=if_changed,
    )
