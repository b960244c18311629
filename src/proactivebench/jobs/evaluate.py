"""`evaluate`: a run from data, model and settings to `results.jsonl` and `summary.json`.

The steps, each in its own module: the episodes are chosen and their images checked
(`selection`), the run directory is claimed and locked (`rundir`), episodes not done yet are
played (`run.play_episode.play`, one at a time per worker) with many in flight, by the run
engine (`engine`: cache, preflight, scheduler, provenance), and the summary of every line is
written. A rerun of the same run skips what is already there, so a crash loses at most the
episodes in flight; a rerun of a complete run that nothing has changed since
(`rundir.FinishedRun`) answers from a note of its outcome, without loading anything."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.benchmark.metrics import ScenarioScore, Summary, summarize
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.results import cached_answers, result_key
from proactivebench.benchmark.scenarios import Episode
from proactivebench.core.errors import ProactiveBenchError, SettingsError
from proactivebench.data.directory import Dataset, read_records, scenario_file
from proactivebench.models.base import Model
from proactivebench.models.cache import ResponseCache
from proactivebench.run.datarecords import data_records, joined_records, records_of
from proactivebench.run.engine import Provenance, RunEngine, code_stamp, refuse_edited_code
from proactivebench.run.judge import Judge, judged_settings
from proactivebench.run.oeg import Ask
from proactivebench.run.play_episode import Judging, Result, play
from proactivebench.run.rundir import (
    RESULTS,
    RUN_CONFIG,
    SHARD,
    SUMMARY,
    FinishedRun,
    ResultsFile,
    RunMismatchError,
    check_run_dir,
    latest_results,
    merge_runs,
    provenance_of,
    read_results,
    read_run_config,
    refuse_orphan_lines,
    refuse_rejected,
    run_lines,
    write_run_config,
    write_summary,
)
from proactivebench.run.selection import (
    choose_episodes,
    recorded_selection,
    select_records,
    selection_stamp,
)
from proactivebench.run.selection_record import SELECTION, Selection, played_keys, selection_of
from proactivebench.run.settings import EvalSettings, RunOptions, run_options

# Names this module exported before the run's jobs had modules of their own, kept for
# scripts that import them from here (`proactivebench` exports them all).
__all__ = [
    "RESULTS",
    "RUN_CONFIG",
    "SUMMARY",
    "EvalSettings",
    "ResultsFile",
    "RunMismatchError",
    "RunOutcome",
    "aevaluate",
    "evaluate",
    "latest_results",
    "merge_runs",
    "read_results",
    "select_records",
]


@dataclass
class RunOutcome:
    summary: Summary
    out_dir: Path
    #: Episodes already finished by an earlier invocation, skipped this time.
    resumed: int
    #: Why episodes ended in an error (reason -> count); they are retried by a rerun.
    errors: Counter[str] = field(default_factory=Counter)
    #: The model's answers in the results, and how many of them came from the response cache.
    answers: int = 0
    cached: int = 0
    #: Episodes played by this invocation (0: the run was already complete).
    played: int = 0
    #: Episodes of the run that this invocation's selection did not choose (an earlier, larger
    #: --limit or other --scenarios): `summary` describes them too, as summary.json does.
    beyond: int = 0

    def summary_episodes(self) -> int:
        """The episodes `summary` describes: scored and errors, every scenario."""
        return sum(s.n + s.errors for s in self.summary.scenarios.values())


def run_identity(
    data_dir: Path,
    model: Model,
    settings: EvalSettings,
    judge: Judge | None,
    shard: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """What makes two runs' episodes comparable (`run.json`): data, model, the episode
    settings, and which shard of the run a directory holds (`merge_runs` checks them all).

    Selection settings (`limit`, `scenarios`, `all_samples`) only choose *which* episodes run,
    so a run may be resumed with a larger selection (e.g. after a `--limit` trial).
    """
    judged = judge if settings.judged else None
    identity: dict[str, Any] = {
        "data_dir": str(data_dir.resolve()),
        "model": model.name,
        "settings": judged_settings(settings.identity(), judged),
    }
    if model.request_settings():
        identity["model_settings"] = model.request_settings()
    if shard is not None:
        identity[SHARD] = {"index": shard[0], "count": shard[1]}
    return identity


@dataclass
class _Run:
    """A run made ready: episodes chosen and checked, run directory claimed."""

    episodes: list[Episode]
    todo: list[Episode]
    model: Model
    out: Path
    #: Every loaded record by scenario: where demonstrations are drawn from.
    pools: dict[str, list[Record]]
    #: The judge of an open-ended run, behind the response cache when there is one.
    judge: Judge | None = None
    #: run.json: what the run is, and the provenance entries of earlier invocations.
    identity: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    #: What the episodes were chosen from (`FinishedRun`), taken before the data was read.
    stamp: dict[str, Any] = field(default_factory=dict)
    #: Whether the data holds an episode (`run_lines`).
    known: Callable[[str, int], bool] | None = None
    #: What the run selected, this invocation and the earlier ones (run.json's `selection`).
    selection: Selection | None = None
    #: The digests of the records it played, by scenario (run.json's `data_records`).
    data: dict[str, str] = field(default_factory=dict)
    #: run.json as this invocation found it (None: the run begins now), and the lines the
    #: directory counted then (`run_lines`).
    recorded: dict[str, Any] | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)


async def _prepare(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings,
    shard: tuple[int, int] | None,
    engine: RunEngine,
    judge: Judge | None,
) -> _Run:
    root = Path(data_dir)
    out = Path(out_dir)
    identity = run_identity(root, model, settings, judge, shard)
    stamp = _stamp(root, identity, settings, model, judge)
    # In a thread: the other runs of the engine (a suite's experiments) go on asking meanwhile.
    chosen = await asyncio.to_thread(choose_episodes, root, settings, shard, engine.checks)
    # run.json is written with the first result (`_Session`): a run that never finished an
    # episode (server down, Ctrl-C, bad key) leaves no identity to pin the directory.
    previous = check_run_dir(out, identity)
    data = joined_records(previous, data_records(root, chosen.dataset.records), out, root)
    known = _held_by(root, chosen.dataset)
    if previous is None:
        refuse_orphan_lines(out)
        lines: list[dict[str, Any]] = []
    else:
        refuse_edited_code(out, previous, model, judge if settings.judged else None)
        found = run_lines(out, previous, known)  # its identity, and what it selected before
        refuse_rejected(
            found.rejected,
            f"cannot resume {out}: its results hold lines that are not this run's. Move them "
            f"out of {out / RESULTS} (or use another --out)",
        )
        lines = found.lines
    # Episodes that ended in an error are played again: their failure was the backend's.
    done = {result_key(r) for r in lines if not r.get("error")}
    todo = [e for e in chosen.episodes if (e.scenario, e.record.id) not in done]
    model = engine.model(model, str(out))
    model.bind_images(chosen.images)
    if judge is not None:
        judge = engine.judge(judge, str(out))
        judge.model.bind_images(chosen.images)
    history = provenance_of(previous) if previous is not None else []
    records = chosen.dataset.records
    selection = _whole_selection(recorded_selection(root, chosen, shard), previous, lines, out)
    return _Run(
        chosen.episodes,
        todo,
        model,
        out,
        records,
        judge,
        identity,
        history,
        stamp,
        known,
        selection,
        data,
        previous,
        lines,
    )


def _stamp(
    root: Path,
    identity: dict[str, Any],
    settings: EvalSettings,
    model: Model,
    judge: Judge | None,
) -> dict[str, Any]:
    """What a complete run's note (`FinishedRun`) holds for: the identity, what the episodes
    were chosen from, and the user's code behind the model and judge (edited code is looked
    at, and refused, by the full way)."""
    judged = judge if settings.judged else None
    return {"identity": identity, **selection_stamp(root, settings), **code_stamp(model, judged)}


def _whole_selection(
    mine: Selection, previous: dict[str, Any] | None, lines: list[dict[str, Any]], out: Path
) -> Selection:
    """What the run selected with this invocation: what run.json recorded before, or, for a
    run begun before it was recorded, the episodes of its lines (each checked against the
    data); with this invocation's selection, whose counts of what the data offers are now's."""
    if previous is None:
        return mine
    before = selection_of(previous, out / RUN_CONFIG) or played_keys(map(result_key, lines))
    return before.joined(mine, mine.shard)


def _held_by(root: Path, dataset: Dataset) -> Callable[[str, int], bool]:
    """Whether the data holds an episode: a sample of a loaded scenario's record file (all its
    records, the official filter's leavings too: a run resumed without --all-samples still
    holds the episodes it played with it); a scenario not loaded cannot be told, and counts."""
    ids = {s: {r.id for r in records} for s, records in dataset.records.items()}
    unfiltered: dict[str, set[int]] = {}

    def known(scenario: str, sample_id: int) -> bool:
        if scenario not in ids or sample_id in ids[scenario]:
            return True
        if scenario not in unfiltered:
            found, _ = read_records(scenario_file(root, scenario), scenario)
            unfiltered[scenario] = {r.id for r in found}
        return sample_id in unfiltered[scenario]

    return known


class _Session:
    """This invocation's provenance entry (`engine.Provenance`), written (with run.json itself)
    just before the first result, and again with its end time when the run stops, however it
    stops. Never part of the identity a resume compares (`rundir.PROVENANCE`)."""

    def __init__(self, run: _Run, settings: EvalSettings) -> None:
        self.run = run
        shard = run.selection.shard if run.selection is not None else None
        chosen = {**settings.selected_by(), **({"shard": list(shard)} if shard else {})}
        self.provenance = Provenance(
            model=run.model, decoding=settings.decoding, judge=run.judge, selected_by=chosen
        )
        self.results = ResultsFile(run.out / RESULTS, before_first_write=self._write)

    def _write(self) -> None:
        entry = self.provenance.stamped()
        history = [*self.run.history, entry]
        write_run_config(
            self.run.out, self.run.identity, history, self.run.selection, self.run.data
        )

    def end(self, *, failed: BaseException | None = None) -> None:
        """Close the results and record the end; a run stopped by `failed` says so in
        `stopped_by` ("interrupted": Ctrl-C or SIGTERM; else the error's class), so that a
        merge of shards tells one that holds less than its selection. Written quietly on a
        failure: its error is told."""
        self.results.close()
        if not self.results.written:
            return
        counts: dict[str, Any] = {"episodes_written": self.results.written}
        if failed is not None:
            interrupted = isinstance(failed, (KeyboardInterrupt, asyncio.CancelledError))
            counts["stopped_by"] = "interrupted" if interrupted else type(failed).__name__
        self.provenance.end(**counts)
        if failed is None:
            self._write()
            return
        with contextlib.suppress(ProactiveBenchError):
            self._write()


def _record_chosen(run: _Run) -> None:
    """Record in run.json what the run selected and the records it played when it does not
    say so yet, though this invocation plays nothing: a run begun before run.json recorded them
    would otherwise never get them, and its readers could not tell a partial run, nor its
    data, however often it is resumed. Nothing is written when run.json says so already."""
    previous = run.recorded
    if previous is None:
        return
    selection = run.selection.to_json() if run.selection is not None else None
    if FinishedRun.normal({"s": selection}) == {"s": previous.get(SELECTION)} and (
        records_of(previous) == (run.data or None)
    ):
        return
    write_run_config(run.out, run.identity, run.history, run.selection, run.data)


def _finish(run: _Run) -> RunOutcome:
    """The summary of the whole run (every line the directory counts, as the report counts
    them): summary.json, the table and the report describe one and the same set of lines,
    whatever this invocation selected (a smaller --limit than an earlier one never makes
    summary.json a subset's). Episode errors are the selection's: those a rerun retries."""
    wanted = {(e.scenario, e.record.id) for e in run.episodes}
    whole = run.lines  # nothing played: the lines read when the run was prepared
    if run.todo:
        found = run_lines(run.out, run.identity, run.known)
        refuse_rejected(found.rejected, f"{run.out / RESULTS} changed during the run")
        whole = found.lines
    lines = [r for r in whole if result_key(r) in wanted]
    summary = summarize(whole, model=run.model.name)
    write_summary(run.out, summary)
    errors = Counter(str(r["error"]) for r in lines if r.get("error"))
    resumed = len(run.episodes) - len(run.todo)
    answers, cached = cached_answers(whole)
    if not errors and len(lines) == len(wanted):  # complete: a rerun has nothing to play
        beyond = len(whole) - len(lines)
        note = {"episodes": len(lines), "answers": answers, "cached": cached, "beyond": beyond}
        FinishedRun(run.stamp, {**note, "scenarios": summary.as_dict()["scenarios"]}).write(run.out)
    return RunOutcome(
        summary,
        run.out,
        resumed,
        errors,
        answers,
        cached,
        played=len(run.todo),
        beyond=len(whole) - len(lines),
    )


def _finished(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings,
    shard: tuple[int, int] | None,
    judge: Judge | None,
) -> RunOutcome | None:
    """The outcome of a complete run that nothing has changed since (`FinishedRun`): told
    from its note, nothing loaded, read or written; None when the run must be looked at."""
    root, out = Path(data_dir), Path(out_dir)
    if not (out / FinishedRun.NAME).is_file() or not _records_chosen(out):
        return None
    identity = run_identity(root, model, settings, judge, shard)
    note = FinishedRun.read(out, _stamp(root, identity, settings, model, judge))
    if note is None:
        return None
    outcome = note.outcome
    try:
        scores = {name: ScenarioScore(**score) for name, score in outcome["scenarios"].items()}
        episodes, answers, cached = outcome["episodes"], outcome["answers"], outcome["cached"]
    except (KeyError, TypeError, AttributeError):  # a note not written by us: look at the run
        return None
    summary = Summary(model.name, scores)
    beyond = outcome.get("beyond", 0)
    beyond = beyond if isinstance(beyond, int) else 0
    return RunOutcome(summary, out, episodes, Counter(), answers, cached, 0, beyond)


def _records_chosen(out: Path) -> bool:
    """Whether run.json records what the run selected and the records it played (a run begun
    by an older version does not: its rerun takes the full way, which records them)."""
    try:
        config = read_run_config(out)
    except ProactiveBenchError:
        return False
    return SELECTION in config and records_of(config) is not None


async def aevaluate(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings | None = None,
    *,
    concurrency: int | None = None,
    options: RunOptions | None = None,
    engine: RunEngine | None = None,
    shard: tuple[int, int] | None = None,
    cache: ResponseCache | None = None,
    judge: Judge | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> RunOutcome:
    """`evaluate` on the running event loop (`await aevaluate(...)` in a notebook; several
    at once with one `engine` share its cache and its limit on requests in flight)."""
    settings = settings or EvalSettings()
    engine = _engine_of(engine, options, concurrency, cache)
    if settings.judged and judge is None:
        raise SettingsError(
            f"open-ended generation needs a judge: add --judge SPEC (--mode {settings.mode})"
        )
    if judge is not None and not settings.judged:
        raise SettingsError(
            "multiple choice takes no judge: --judge is for --mode oeg or oeg-multiturn"
        )
    with engine.claim(Path(out_dir)):
        finished = _finished(data_dir, model, out_dir, settings, shard, judge)
        if finished is not None:
            if on_start:
                on_start(finished.resumed, finished.resumed)
            return finished
        run = await _prepare(data_dir, model, out_dir, settings, shard, engine, judge)
        started = (len(run.episodes), len(run.episodes) - len(run.todo))
        if on_start and not run.todo:
            on_start(*started)
        judging = Judging(run.judge, run.judge.model.generate) if run.judge else None

        async def play_one(episode: Episode, ask: Ask) -> Result:
            return await play(
                episode,
                ask,
                settings,
                pools=run.pools,
                judging=judging,
                answer_key=run.model.sees_answer_key,
            )

        if not run.todo:  # every episode done already: nothing to ask, nothing to play
            _record_chosen(run)
            return _finish(run)
        session = _Session(run, settings)
        models = [run.model, *([run.judge.model] if run.judge else [])]
        try:
            await engine.play(
                run.todo,
                play_one,
                session.results,
                models,
                on_ready=(lambda: on_start(*started)) if on_start else (lambda: None),
                on_result=on_result or (lambda result: None),
            )
        except BaseException as exc:
            session.end(failed=exc)
            raise
        session.end()
        return _finish(run)


def _engine_of(
    engine: RunEngine | None,
    options: RunOptions | None,
    concurrency: int | None,
    cache: ResponseCache | None,
) -> RunEngine:
    """The engine a run is played by: the one given (whose options and cache are the run's),
    or one made of `options` (or `concurrency`) and `cache`."""
    if engine is None:
        return RunEngine(run_options(options, concurrency), cache)
    if options is not None or concurrency is not None or cache is not None:
        raise SettingsError(
            "an engine brings its own options and cache: give engine=, or options=/cache="
        )
    return engine


def evaluate(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings | None = None,
    *,
    concurrency: int | None = None,
    options: RunOptions | None = None,
    engine: RunEngine | None = None,
    shard: tuple[int, int] | None = None,
    cache: ResponseCache | None = None,
    judge: Judge | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> RunOutcome:
    """Run (or resume) an evaluation and write `results.jsonl` and `summary.json`.

    `options` (a `RunOptions`; or `concurrency` alone: episodes in flight) say how it is
    executed, never what it finds. `shard` = (I, N) plays the I-th of N disjoint slices
    (join them with `merge_runs`); `cache` answers repeated requests of image-reading backends
    from a `ResponseCache` (it stays open: what the caller opened, the caller closes). An
    `engine` (`engine.RunEngine`) brings both, for runs that share them. `judge` decides
    open-ended answers (`settings.judged`). `on_start(total, already_done)` and
    `on_result(episode_result)` let a caller draw progress. Called where an event loop is
    already running (a notebook), the run gets a loop of its own in a worker thread.
    """
    run = aevaluate(
        data_dir,
        model,
        out_dir,
        settings,
        concurrency=concurrency,
        options=options,
        engine=engine,
        shard=shard,
        cache=cache,
        judge=judge,
        on_start=on_start,
        on_result=on_result,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop_running = False  # the usual case; run outside this handler, so that an error
    else:  # raised by the run does not carry a "no running event loop" context
        loop_running = True
    return _run_in_thread(run) if loop_running else asyncio.run(run)


def _run_in_thread(coroutine: Any) -> RunOutcome:
    """Run `coroutine` to its end on a new event loop in another thread, and return its value."""
    outcome: list[RunOutcome] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(asyncio.run(coroutine))
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="proactivebench-run")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
