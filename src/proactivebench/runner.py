"""The evaluation engine: plays episodes against a model and records every one as it ends.

Episodes are independent and their turns sequential, so up to `concurrency` episodes are in
flight at once; a model that accepts batches gets the turns that are ready together. Each
finished episode is appended to `RUN_DIR/results.jsonl` and fsynced, and a rerun of the same
run skips what is already there, so a crash loses at most the episodes in flight.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.data.images import ImageStore
from proactivebench.data.layout import Dataset, load_dataset
from proactivebench.data.validate import check_images
from proactivebench.errors import DataErrors, ProactiveBenchError
from proactivebench.metrics import Summary, summarize
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.cache import CachedModel, ResponseCache
from proactivebench.prompting import turn_messages
from proactivebench.protocol import SCENARIOS
from proactivebench.records import Record
from proactivebench.scenarios import Episode, Observation, make_episode

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
RUN_CONFIG = "run.json"


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

    def episode_options(self) -> dict[str, Any]:
        return {
            "hint": self.hint,
            "reference": self.reference,
            "random_actions": self.random_actions,
            "seed": self.seed,
        }


class RunMismatchError(ProactiveBenchError):
    """The run directory holds a run of another model, data set or settings."""


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
    episode: Episode, ask: Callable[[ChatRequest], Any], decoding: Decoding
) -> dict[str, Any]:
    """Play one episode to its end; the result line of `results.jsonl`."""
    record = episode.record
    result: dict[str, Any] = {"scenario": record.scenario, "sample_id": record.id}
    trace: list[dict[str, Any]] = []
    try:
        while not episode.done:
            obs = episode.observation
            completion: Completion = await ask(ChatRequest(turn_messages(obs), obs, decoding))
            answer = completion.text if isinstance(completion.text, str) else ""
            step = episode.step(answer)
            trace.append(_trace_entry(obs, answer, step.verdict, step.info))
    except Exception as exc:
        # A failure of the model call (after its own retries) is an error on this episode,
        # never a wrong answer: it is recorded and left out of the metrics.
        result.update(error=f"{type(exc).__name__}: {exc}", num_turns=len(trace), trace=trace)
        return result
    result.update(
        correct=episode.correct,
        num_turns=episode.num_turns,
        proactive_suggestions=episode.num_turns - 1,
        trace=trace,
    )
    return result


def _trace_entry(obs: Observation, answer: str, verdict: str, info: dict[str, Any]) -> dict:
    entry: dict[str, Any] = {
        "turn": obs.turn,
        "image": obs.view.image,
        "crop": list(obs.view.crop) if obs.view.crop is not None else None,
        "prompt": obs.prompt,
        "options": list(obs.options),
        "answer": answer,
        "verdict": verdict,
    }
    if obs.view.resize_short_edge:
        entry["resize_short_edge"] = obs.view.resize_short_edge
    for key in ("action", "reason"):
        if key in info:
            entry[key] = info[key]
    return entry


class ResultsFile:
    """`results.jsonl`: one line per finished episode, appended, flushed and fsynced.

    Lines are whole writes, so a killed process leaves at most one torn last line, which the
    next open removes; `write` + `sync` let the runner group-commit what finished together.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._repair_tail()
        self._handle = path.open("a", encoding="utf-8")

    def _repair_tail(self) -> None:
        """Drop a last line cut short by a crash, so appending cannot glue two records."""
        if not self.path.exists():
            return
        with self.path.open("r+b") as f:
            end = f.seek(0, os.SEEK_END)
            position = end
            while position > 0:  # scan back in blocks for the last newline
                start = max(0, position - 65536)
                f.seek(start)
                block = f.read(position - start)
                if position == end and block.endswith(b"\n"):
                    return  # the usual case: the file ends with a whole line
                newline = block.rfind(b"\n")
                if newline >= 0:
                    f.truncate(start + newline + 1)
                    return
                position = start
            f.truncate(0)  # a single torn line and nothing else

    def write(self, results: Sequence[dict[str, Any]]) -> None:
        """Append and flush (the lines survive a killed process from here on)."""
        self._handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results))
        self._handle.flush()

    def sync(self) -> None:
        """fsync: the lines survive a machine crash from here on."""
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


def read_results(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a results file (a torn last line is ignored)."""
    if not path.exists():
        return []
    results = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            results.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return results


def _run_identity(data_dir: Path, model: Model, settings: EvalSettings) -> dict[str, Any]:
    """What makes two runs' episodes comparable: data, model and the settings that change play.

    `limit`, `scenarios` and `all_samples` only choose *which* episodes run, so a run may be
    resumed with a larger selection (e.g. after a `--limit` trial).
    """
    return {
        "data_dir": str(data_dir.resolve()),
        "model": model.name,
        "settings": {**settings.episode_options(), "decoding": settings.decoding.as_dict()},
    }


def _claim_run_dir(out_dir: Path, config: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RUN_CONFIG
    if path.exists():
        previous = json.loads(path.read_text(encoding="utf-8"))
        if previous != config:
            raise RunMismatchError(
                f"{out_dir} holds a run with other settings ({path}); "
                "use another --out to start a new run, or the same options to resume"
            )
        return
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


@dataclass
class RunOutcome:
    summary: Summary
    out_dir: Path
    #: Episodes already finished by an earlier invocation, skipped this time.
    resumed: int
    #: Why episodes ended in an error (reason -> count); they are retried by a rerun.
    errors: Counter[str] = field(default_factory=Counter)


async def _run_async(
    episodes: Sequence[Episode],
    model: Model,
    results: ResultsFile,
    decoding: Decoding,
    concurrency: int,
    on_result: Callable[[dict[str, Any]], None],
) -> None:
    batcher = _Batcher(model)
    finished: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    pending = iter(episodes)

    async def worker() -> None:
        for episode in pending:
            await finished.put(await play_episode(episode, batcher.submit, decoding))

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

    async def until_done_or_writer_fails(tasks: set[asyncio.Future[Any]]) -> None:
        while tasks:
            done, tasks = await asyncio.wait(
                tasks | {committer}, return_when=asyncio.FIRST_COMPLETED
            )
            if committer in done:
                committer.result()  # only ends by an exception: re-raise the write error
            tasks -= {committer}

    server = asyncio.create_task(batcher.serve())
    committer = asyncio.create_task(writer())
    workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
    joiner: asyncio.Future[Any] | None = None
    try:
        await until_done_or_writer_fails(set(workers))
        joiner = asyncio.ensure_future(finished.join())
        await until_done_or_writer_fails({joiner})
    finally:
        # On an error or Ctrl-C: stop everything and collect the cancellations, so that no
        # task is left behind with an exception nobody retrieved.
        helpers = [server, committer, *workers, *([joiner] if joiner else [])]
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        await model.aclose()


def evaluate(
    data_dir: str | os.PathLike[str],
    model: Model,
    out_dir: str | os.PathLike[str],
    settings: EvalSettings | None = None,
    *,
    concurrency: int = 8,
    shard: tuple[int, int] | None = None,
    cache: ResponseCache | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutcome:
    """Run (or resume) an evaluation and write `results.jsonl` and `summary.json`.

    `shard` = (I, N) plays the I-th of N disjoint slices (join them with `merge_runs`);
    `cache` answers repeated requests of image-reading backends from a `ResponseCache`.
    `on_start(total, already_done)` and `on_result(result_line)` let a caller draw progress.
    """
    settings = settings or EvalSettings()
    root = Path(data_dir)
    out = Path(out_dir)
    dataset = load_dataset(root, settings.scenarios, all_samples=settings.all_samples)
    options = settings.episode_options()
    records = select_records(dataset, settings.limit, shard)
    episodes = [make_episode(r, **options) for r in records]
    store = ImageStore(root)
    problems = check_images(root, episodes, store.guard)
    if problems:
        raise DataErrors(problems)
    _claim_run_dir(out, _run_identity(root, model, settings))
    results_path = out / RESULTS
    # Episodes that ended in an error are played again: their failure was the backend's.
    done = {_key(r) for r in read_results(results_path) if not r.get("error")}
    todo = [e for e in episodes if (e.scenario, e.record.id) not in done]
    if on_start:
        on_start(len(episodes), len(episodes) - len(todo))
    if cache is not None and model.needs_images:
        model = CachedModel(model, cache)
    model.bind_images(store)
    results = ResultsFile(results_path)
    try:
        asyncio.run(
            _run_async(
                todo, model, results, settings.decoding, concurrency, on_result or (lambda r: None)
            )
        )
    finally:
        results.close()
    wanted = {(e.scenario, e.record.id) for e in episodes}
    lines = [r for r in latest_results(read_results(results_path)) if _key(r) in wanted]
    summary = summarize(lines, model=model.name)
    (out / SUMMARY).write_text(json.dumps(summary.as_dict(), indent=2) + "\n", encoding="utf-8")
    errors = Counter(str(r["error"]) for r in lines if r.get("error"))
    return RunOutcome(summary, out, resumed=len(episodes) - len(todo), errors=errors)


def _key(result: dict[str, Any]) -> tuple[str, int]:
    return result["scenario"], result["sample_id"]


def latest_results(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per episode: a later line (a retried error) replaces an earlier one."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for result in results:
        key = _key(result)
        if result.get("error") and key in latest and not latest[key].get("error"):
            continue  # never let an error hide a finished episode
        latest[key] = result
    return list(latest.values())


def merge_runs(
    run_dirs: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str]
) -> Summary:
    """Join the run directories of shards (or of interrupted pieces) of one run into `out_dir`.

    The runs must share data, model and settings; an episode present in several is kept once.
    """
    if not run_dirs:
        raise ProactiveBenchError("merge needs at least one run directory")
    identity: dict[str, Any] | None = None
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for run in map(Path, run_dirs):
        config_path = run / RUN_CONFIG
        if not config_path.is_file():
            raise ProactiveBenchError(f"{run} is not a run directory (no {RUN_CONFIG})")
        config = json.loads(config_path.read_text(encoding="utf-8"))
        if identity is None:
            identity = config
        elif config != identity:
            raise RunMismatchError(f"{run} holds a run with other data, model or settings")
        for result in latest_results(read_results(run / RESULTS)):
            key = _key(result)
            if key not in merged or (merged[key].get("error") and not result.get("error")):
                merged[key] = result
    out = Path(out_dir)
    if (out / RESULTS).exists():
        raise ProactiveBenchError(f"{out / RESULTS} exists; merge into a new directory")
    _claim_run_dir(out, identity or {})
    ordered = sorted(merged.values(), key=_result_order)
    with (out / RESULTS).open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in ordered)
    summary = summarize(ordered, model=str((identity or {}).get("model", "")))
    (out / SUMMARY).write_text(json.dumps(summary.as_dict(), indent=2) + "\n", encoding="utf-8")
    return summary


def _result_order(result: dict[str, Any]) -> tuple[int, int]:
    scenario = result["scenario"]
    return (
        SCENARIOS.index(scenario) if scenario in SCENARIOS else len(SCENARIOS),
        result["sample_id"],
    )
