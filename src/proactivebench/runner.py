"""The evaluation engine: plays episodes against a model and records every one as it ends.

Episodes are independent and their turns sequential, so up to `concurrency` episodes are in
flight at once; a model that accepts batches gets the turns that are ready together. Each
finished episode is appended to `RUN_DIR/results.jsonl` and fsynced, and a rerun of the same
run skips what is already there, so a crash loses at most the episodes in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.data.images import ImageStore
from proactivebench.data.layout import Dataset, load_dataset, scenario_file
from proactivebench.data.validate import check_images
from proactivebench.demonstrations import Demonstration, DemoSettings, choose, play
from proactivebench.errors import DataErrors, ProactiveBenchError
from proactivebench.judge import Judge, oeg_decoding
from proactivebench.metrics import Summary, summarize
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.cache import CachedModel, ResponseCache
from proactivebench.models.errors import RunAbort, episode_error
from proactivebench.oeg import play_oeg_episode
from proactivebench.prompting import Conversation
from proactivebench.records import Record
from proactivebench.results import (
    RESULTS,
    RUN_CONFIG,
    SHARD,
    SUMMARY,
    EpisodeResult,
    OEGResult,
    ResultsFile,
    RunLock,
    RunMismatchError,
    TurnRecord,
    cached_answers,
    claim_run_dir,
    latest_results,
    merge_runs,
    read_results,
    result_key,
    write_summary,
)
from proactivebench.scenarios import Episode, Observation, StepResult, make_episode
from proactivebench.scenarios.answers import EXTRACTIONS, lenient_answer
from proactivebench.scenarios.base import OPTION_ORDERS

log = logging.getLogger(__name__)

MODES = ("mcqa", "oeg")

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
    "play_episode",
    "read_results",
    "select_records",
]


#: EvalSettings' true/false settings, and its integer ones: (name, lowest value, may be None).
_FLAGS = ("hint", "reference", "random_actions", "all_samples", "history", "cot", "icl_reduced")
_COUNTS = (
    ("seed", None, False),
    ("limit", 1, True),
    ("resize_short_edge", 1, True),
    ("icl", 0, False),
)


@dataclass(frozen=True)
class EvalSettings:
    """What defines a run; a resumed run must have the same."""

    hint: bool = False
    reference: bool = False
    random_actions: bool = False
    seed: int = 0
    limit: int | None = None
    all_samples: bool = False
    scenarios: tuple[str, ...] | None = None
    decoding: Decoding = field(default_factory=Decoding)
    #: Each request carries the episode's earlier turns (docs/protocol.md §7).
    history: bool = False
    #: Every view (COCO's crops excepted) scaled to this short edge, for long histories.
    resize_short_edge: int | None = None
    #: In-context examples: this many oracle demonstrations of other samples before each
    #: episode, with chain of thought, reduced to their first and last turn.
    icl: int = 0
    cot: bool = False
    icl_reduced: bool = False
    #: "strict" reads answers as the protocol does; "lenient" first removes reasoning tags,
    #: markdown, "Answer:" prefixes and brackets around a letter (beyond the paper).
    answer_extraction: str = "strict"
    #: "record" (the protocol's) or "shuffled": options permuted per sample and turn.
    option_order: str = "record"
    #: "mcqa": multi-turn multiple choice; "oeg": one open-ended turn, judged (§6). An OEG run
    #: given the MCQA decoding gets the OEG one (no temperature, 32,768 tokens).
    mode: str = "mcqa"

    def __post_init__(self) -> None:
        self._check_types()
        if self.mode not in MODES:
            raise ProactiveBenchError(f"unknown mode {self.mode!r}; choose from {', '.join(MODES)}")
        if self.mode == "oeg":
            if self.icl or self.reference:
                raise ProactiveBenchError("open-ended generation has no --icl or --reference")
            if self.decoding == Decoding():
                object.__setattr__(self, "decoding", oeg_decoding())
        for name, allowed in (("option_order", OPTION_ORDERS), ("answer_extraction", EXTRACTIONS)):
            if getattr(self, name) not in allowed:
                raise ProactiveBenchError(
                    f"unknown {name} {getattr(self, name)!r}; choose from {', '.join(allowed)}"
                )
        if self.icl < 0:
            raise ProactiveBenchError(f"icl must be >= 0, got {self.icl}")
        if (self.cot or self.icl_reduced) and not self.icl:
            raise ProactiveBenchError("--cot and --icl-reduced shape demonstrations: add --icl K")
        if self.icl and self.reference:
            raise ProactiveBenchError(
                "--icl shows multi-turn demonstrations; reference mode is one clear turn"
            )

    def _check_types(self) -> None:
        """Flags must be true or false and counts integers in range: settings also come from
        Python callers and adapters' string parameters, where "false" would read as true."""
        for name in _FLAGS:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ProactiveBenchError(f"{name} must be true or false, got {value!r}")
        for name, lowest, optional in _COUNTS:
            value = getattr(self, name)
            if value is None and optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ProactiveBenchError(f"{name} must be an integer, got {value!r}")
            if lowest is not None and value < lowest:
                raise ProactiveBenchError(f"{name} must be >= {lowest}, got {value}")

    def episode_options(self) -> dict[str, Any]:
        return {
            "hint": self.hint,
            "reference": self.reference,
            "random_actions": self.random_actions,
            "seed": self.seed,
            "resize_short_edge": self.resize_short_edge,
            "option_order": self.option_order,
        }

    def identity(self) -> dict[str, Any]:
        """The settings that change what is played or asked: `run.json` and every result line.

        Settings added after the first release appear only when they are not their default, so
        that a run directory made by an earlier version still resumes.
        """
        settings: dict[str, Any] = {
            "hint": self.hint,
            "reference": self.reference,
            "random_actions": self.random_actions,
            "seed": self.seed,
            "decoding": self.decoding.as_dict(),
        }
        later = {
            "history": self.history,
            "resize_short_edge": self.resize_short_edge,
            "icl": self.icl,
            "cot": self.cot,
            "icl_reduced": self.icl_reduced,
            "answer_extraction": self.answer_extraction,
            "option_order": self.option_order,
            "mode": self.mode,
        }
        defaults = EvalSettings()
        settings.update({k: v for k, v in later.items() if v != getattr(defaults, k)})
        return settings

    @property
    def demonstrations(self) -> DemoSettings | None:
        if not self.icl:
            return None
        return DemoSettings(self.icl, cot=self.cot, reduced=self.icl_reduced)


def select_records(
    dataset: Dataset, limit: int | None, shard: tuple[int, int] | None = None
) -> list[Record]:
    """The records to play: scenario by scenario in file order, `limit` per scenario, then
    every N-th one from I when `shard` = (I, N), so that the N shards partition the run."""
    chosen: list[Record] = []
    for records in dataset.records.values():
        chosen.extend(records if limit is None else records[:limit])
    if shard is not None:
        index, count = shard
        if not 0 <= index < count:
            raise ProactiveBenchError(f"shard {index}/{count}: need 0 <= I < N")
        chosen = chosen[index::count]
    return chosen


class _Batcher:
    """Collects the requests that are ready and hands them to the model in batches."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.queue: asyncio.Queue[tuple[ChatRequest, asyncio.Future[Completion]]] = asyncio.Queue()

    async def submit(self, request: ChatRequest) -> Completion:
        if self.model.max_batch <= 1:
            return (await self.model.generate([request]))[0]
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        await self.queue.put((request, future))
        return await future

    async def serve(self) -> None:
        while True:
            batch = [await self.queue.get()]
            # Let the other episodes reach their next request before the batch goes out.
            await asyncio.sleep(0)
            while len(batch) < self.model.max_batch and not self.queue.empty():
                batch.append(self.queue.get_nowait())
            try:
                completions = await self.model.generate([r for r, _ in batch])
                if len(completions) != len(batch):
                    raise RuntimeError(
                        f"model returned {len(completions)} answers for {len(batch)} requests"
                    )
            except Exception as exc:  # the episodes waiting on this batch record the error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), completion in zip(batch, completions, strict=True):
                if not future.done():
                    future.set_result(completion)


async def play_episode(
    episode: Episode,
    ask: Callable[[ChatRequest], Any],
    decoding: Decoding,
    *,
    conversation: Conversation | None = None,
    answer_key: bool = False,
    lenient: bool = False,
) -> EpisodeResult:
    """Play one episode to its end; requests carry the observation's answer key only when
    `answer_key` (for the built-in baselines, see `Model.sees_answer_key`).

    Only a failure of the model call (after the backend's own retries) becomes an error on the
    episode, recorded and retried by a rerun; an exception anywhere else is a bug, and ends
    the run with its traceback instead of hiding in the results as a model error.
    """
    record = episode.record
    conversation = conversation or Conversation()
    result = EpisodeResult(
        scenario=record.scenario,
        sample_id=record.id,
        num_turns=0,
        correct_category=record.answer,
    )
    while not episode.done:
        obs = episode.observation
        shown = obs if answer_key else obs.without_answer_key()
        request = ChatRequest(conversation.request(obs), shown, decoding)
        try:
            completion: Completion = await ask(request)
        except RunAbort:
            raise  # the whole run stops, not this episode
        except Exception as exc:
            result.error = episode_error(exc)
            result.num_turns = len(result.trace)
            return result
        answer = completion.text if isinstance(completion.text, str) else ""
        conversation.answered(answer)
        read_as = lenient_answer(answer) if lenient else answer
        step = episode.step(read_as)
        turn = _turn_record(obs, answer, step, completion)
        if read_as != answer:
            turn.read_as = read_as
        result.trace.append(turn)
        result.end_reason = step.end
    result.correct = episode.correct
    result.num_turns = episode.num_turns
    return result


def _turn_record(
    obs: Observation, answer: str, step: StepResult, completion: Completion
) -> TurnRecord:
    view = obs.view
    return TurnRecord(
        turn=obs.turn,
        image=view.image,
        crop=list(view.crop) if view.crop is not None else None,
        prompt=obs.prompt,
        options=list(obs.options),
        answer=answer,
        verdict=step.verdict,
        resize_short_edge=view.resize_short_edge or None,
        action=step.info.get("action"),
        reason=step.info.get("reason"),
        usage=completion.usage,
        latency_s=round(completion.latency_s, 4) if completion.latency_s else None,
        cached=completion.cached,
    )


def _run_identity(
    data_dir: Path,
    model: Model,
    settings: EvalSettings,
    judge: Judge | None,
    shard: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """What makes two runs' episodes comparable: data, model and the settings that change play,
    and which shard of the run a directory holds (`merge_runs` checks that all are there).

    `limit`, `scenarios` and `all_samples` only choose *which* episodes run, so a run may be
    resumed with a larger selection (e.g. after a `--limit` trial).
    """
    identity: dict[str, Any] = {
        "data_dir": str(data_dir.resolve()),
        "model": model.name,
        "settings": _settings_identity(settings, judge),
    }
    if model.request_settings():
        identity["model_settings"] = model.request_settings()
    if shard is not None:
        identity[SHARD] = {"index": shard[0], "count": shard[1]}
    return identity


def _settings_identity(settings: EvalSettings, judge: Judge | None) -> dict[str, Any]:
    identity = settings.identity()
    if settings.mode == "oeg" and judge is not None:
        identity["judge"] = judge.identity()
    return identity


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


def episode_conversations(
    settings: EvalSettings, pools: dict[str, list[Record]]
) -> Callable[[Episode], tuple[Conversation, list[Demonstration]]]:
    """What makes each episode's conversation: its demonstrations (drawn from the samples of
    its scenario, played by the oracle) and whether it keeps history."""
    demo = settings.demonstrations
    options = settings.episode_options()

    def make(episode: Episode) -> tuple[Conversation, list[Demonstration]]:
        demos = []
        if demo is not None:
            chosen = choose(pools[episode.scenario], episode.record, demo.count, settings.seed)
            demos = [play(r, demo, seed=settings.seed, episode_options=options) for r in chosen]
        prefix = [message for d in demos for message in d.messages()]
        return Conversation(history=settings.history, prefix=prefix), demos

    return make


async def _run_async(
    episodes: Sequence[Episode],
    model: Model,
    results: ResultsFile,
    settings: EvalSettings,
    conversations: Callable[[Episode], tuple[Conversation, list[Demonstration]]],
    judge: Judge | None,
    concurrency: int,
    on_result: Callable[[EpisodeResult | OEGResult], None],
) -> None:
    batcher = _Batcher(model)
    identity = _settings_identity(settings, judge)
    finished: asyncio.Queue[EpisodeResult | OEGResult] = asyncio.Queue()
    pending = iter(episodes)

    async def play(episode: Episode) -> EpisodeResult | OEGResult:
        if judge is not None:
            return await play_oeg_episode(
                episode,
                batcher.submit,
                settings.decoding,
                judge,
                judge.model.generate,
                answer_key=model.sees_answer_key,
            )
        conversation, demos = conversations(episode)
        result = await play_episode(
            episode,
            batcher.submit,
            settings.decoding,
            conversation=conversation,
            answer_key=model.sees_answer_key,
            lenient=settings.answer_extraction == "lenient",
        )
        if demos:
            result.demonstrations = [d.to_json() for d in demos]
        return result

    async def worker() -> None:
        for episode in pending:
            result = await play(episode)
            result.settings = identity
            await finished.put(result)

    async def writer() -> None:
        # Group commit: what finished while the last fsync ran is written and synced together,
        # so the disk never throttles the episodes in flight.
        while True:
            batch = [await finished.get()]
            while not finished.empty():
                batch.append(finished.get_nowait())
            try:
                results.write(batch)
                await asyncio.to_thread(results.sync)
            except OSError as exc:
                raise ProactiveBenchError(f"cannot write {results.path}: {exc.strerror}") from None
            for result in batch:
                on_result(result)
                finished.task_done()

    async def until_done(tasks: set[asyncio.Future[Any]]) -> None:
        """Wait for `tasks`; a write error or a bug in any of them ends the run at once."""
        while tasks:
            done, tasks = await asyncio.wait(
                tasks | {committer}, return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                task.result()  # re-raise a write error (the committer never ends otherwise)
            tasks -= {committer}

    try:
        await model.preflight()
        if judge is not None:
            await judge.model.preflight()
    except BaseException:
        await _close(model, judge)
        raise
    server = asyncio.create_task(batcher.serve())
    committer = asyncio.create_task(writer())
    workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
    joiner: asyncio.Future[Any] | None = None
    try:
        await until_done(set(workers))
        joiner = asyncio.ensure_future(finished.join())
        await until_done({joiner})
    finally:
        # On an error or Ctrl-C: stop everything and collect the cancellations, so that no
        # task is left behind with an exception nobody retrieved.
        helpers = [server, committer, *workers, *([joiner] if joiner else [])]
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        # Episodes that finished but were not written yet (the run stopped meanwhile).
        left = []
        while not finished.empty():
            left.append(finished.get_nowait())
        if left:
            with contextlib.suppress(OSError):  # a full disk: the first error is the one told
                results.write(left)
                results.sync()
        await _close(model, judge)


async def _close(model: Model, judge: Judge | None) -> None:
    """The connections this run's event loop opened; the models stay usable."""
    await model.aclose()
    if judge is not None:
        await judge.model.aclose()


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
    their demonstrations) may show: the one way in for `evaluate` and the adapters."""
    root = Path(data_dir)
    dataset = load_dataset(root, settings.scenarios, all_samples=settings.all_samples)
    options = settings.episode_options()
    records = select_records(dataset, settings.limit, shard)
    if not records:
        where = ", ".join(str(scenario_file(root, s)) for s in dataset.records) or str(root)
        raise ProactiveBenchError(f"nothing to play: no sample selected from {where}")
    _warn_unplayable(dataset, records)
    episodes = [make_episode(r, **options) for r in records]
    checked = episodes
    if settings.icl:  # demonstrations may show any sample of a scenario, not only those played
        checked = [make_episode(r, **options) for rs in dataset.records.values() for r in rs]
    store = ImageStore(root)
    problems = check_images(root, checked, store.guard)
    if problems:
        raise DataErrors(problems)
    return Chosen(dataset, episodes, store)


def _prepare(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings,
    shard: tuple[int, int] | None,
    cache: ResponseCache | None,
    judge: Judge | None,
) -> _Run:
    root = Path(data_dir)
    out = Path(out_dir)
    chosen = choose_episodes(root, settings, shard)
    episodes, store = chosen.episodes, chosen.images
    claim_run_dir(out, _run_identity(root, model, settings, judge, shard))
    # Episodes that ended in an error are played again: their failure was the backend's.
    done = {result_key(r) for r in read_results(out / RESULTS) if not r.get("error")}
    todo = [e for e in episodes if (e.scenario, e.record.id) not in done]
    if cache is not None and model.needs_images:
        model = CachedModel(model, cache)
    model.bind_images(store)
    if judge is not None:
        if cache is not None and judge.model.needs_images:
            judge = judge.with_model(CachedModel(judge.model, cache))
        judge.model.bind_images(store)
    return _Run(episodes, todo, model, out, chosen.dataset.records, judge)


def _finish(run: _Run) -> RunOutcome:
    wanted = {(e.scenario, e.record.id) for e in run.episodes}
    lines = [r for r in latest_results(read_results(run.out / RESULTS)) if result_key(r) in wanted]
    summary = summarize(lines, model=run.model.name)
    write_summary(run.out, summary)
    errors = Counter(str(r["error"]) for r in lines if r.get("error"))
    resumed = len(run.episodes) - len(run.todo)
    answers, cached = cached_answers(lines)
    return RunOutcome(summary, run.out, resumed, errors, answers, cached)


async def aevaluate(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings | None = None,
    *,
    concurrency: int = 8,
    shard: tuple[int, int] | None = None,
    cache: ResponseCache | None = None,
    judge: Judge | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[EpisodeResult | OEGResult], None] | None = None,
) -> RunOutcome:
    """`evaluate` on the running event loop (`await aevaluate(...)` in a notebook)."""
    settings = settings or EvalSettings()
    if (settings.mode == "oeg") != (judge is not None):
        raise ProactiveBenchError(
            "open-ended generation needs a judge (--judge SPEC); multiple choice takes none"
        )
    with RunLock(Path(out_dir)):
        run = _prepare(data_dir, model, out_dir, settings, shard, cache, judge)
        if on_start:
            on_start(len(run.episodes), len(run.episodes) - len(run.todo))
        results = ResultsFile(run.out / RESULTS)
        try:
            await _run_async(
                run.todo,
                run.model,
                results,
                settings,
                episode_conversations(settings, run.pools),
                run.judge,
                concurrency,
                on_result or (lambda r: None),
            )
        finally:
            results.close()
        return _finish(run)


def evaluate(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings | None = None,
    *,
    concurrency: int = 8,
    shard: tuple[int, int] | None = None,
    cache: ResponseCache | None = None,
    judge: Judge | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[EpisodeResult | OEGResult], None] | None = None,
) -> RunOutcome:
    """Run (or resume) an evaluation and write `results.jsonl` and `summary.json`.

    `shard` = (I, N) plays the I-th of N disjoint slices (join them with `merge_runs`);
    `cache` answers repeated requests of image-reading backends from a `ResponseCache` (it
    stays open: what the caller opened, the caller closes). `judge` decides open-ended
    answers (`settings.mode == "oeg"`). `on_start(total, already_done)`
    and `on_result(episode_result)` let a caller draw progress. Called where an event loop is
    already running (a notebook), the run gets a loop of its own in a worker thread.
    """
    run = aevaluate(
        data_dir,
        model,
        out_dir,
        settings,
        concurrency=concurrency,
        shard=shard,
        cache=cache,
        judge=judge,
        on_start=on_start,
        on_result=on_result,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run)
    return _run_in_thread(run)


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
