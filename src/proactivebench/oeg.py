"""Open-ended generation (docs/protocol.md §6): one turn without options, judged.

The model gets the first image and the open-ended question; a judge (`judge.Judge`) decides
which of the scenario's valid answers the generation holds. An episode here is the protocol's
logic plus two model calls; the runner supplies the calls, so that batching, caching, retries and
the results file work as for multiple choice. `rejudge` judges a finished run again from its
lines, without asking the tested model anything; a failed judge call never replaces a verdict.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proactivebench.errors import NothingToDoError, RunAbort, episode_error
from proactivebench.judge import Judge, answer_entries
from proactivebench.metrics import Summary, is_unjudged, summarize
from proactivebench.models.base import ChatRequest, Completion, Decoding
from proactivebench.paths import read_file, write_whole
from proactivebench.prompting import Message
from proactivebench.provenance import now, software
from proactivebench.results import OEGResult, is_oeg_line, result_key, result_order
from proactivebench.rundir import (
    RESULTS,
    ResultsFile,
    RunLock,
    latest_results,
    provenance_of,
    read_results,
    read_run_config,
    without_provenance,
    write_results,
    write_run_config,
    write_summary,
)
from proactivebench.scenarios import Episode
from proactivebench.scheduler import Scheduler
from proactivebench.settings import RunOptions

if TYPE_CHECKING:
    from proactivebench.play import Result

Ask = Callable[[ChatRequest], Awaitable[Completion]]
AskMany = Callable[[Sequence[ChatRequest]], Awaitable[list[Completion]]]


def oeg_messages(episode: Episode) -> list[Message]:
    """The model's request: the first image, then the open-ended question."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "image", "view": episode.observation.view},
                {"type": "text", "text": episode.oeg_prompt()},
            ],
        }
    ]


async def play_oeg_episode(
    episode: Episode,
    ask: Ask,
    decoding: Decoding,
    judge: Judge,
    ask_judge: AskMany,
    *,
    answer_key: bool = False,
) -> OEGResult:
    """Generate once and judge; a failed call (model or judge) is an error on the episode."""
    record, obs = episode.record, episode.observation
    view = obs.view
    result = OEGResult(
        scenario=record.scenario,
        sample_id=record.id,
        image=view.image,
        prompt=episode.oeg_prompt(),
        crop=list(view.crop) if view.crop is not None else None,
        correct_category=record.answer,
    )
    shown = obs if answer_key else obs.without_answer_key()
    try:
        completion = await ask(ChatRequest(oeg_messages(episode), shown, decoding))
    except RunAbort:
        raise
    except Exception as exc:
        result.error = episode_error(exc)
        return result
    result.generation = completion.text if isinstance(completion.text, str) else ""
    result.usage = completion.usage
    result.latency_s = round(completion.latency_s, 4) if completion.latency_s else None
    result.cached = completion.cached or None
    valid = episode.oeg_answers()
    await _judge_into(result, valid, judge, ask_judge)
    return result


async def _judge_into(result: OEGResult, valid: str, judge: Judge, ask_judge: AskMany) -> None:
    """Judge `result`'s generation against `valid` and record the verdict (or the error)."""
    result.valid_answers_text = valid
    result.valid_answers = answer_entries(valid)
    requests = judge.requests(result.prompt, valid, result.generation or "")
    try:
        outputs = [c.text if isinstance(c.text, str) else "" for c in await ask_judge(requests)]
    except RunAbort:
        raise
    except Exception as exc:
        result.error = f"judge: {episode_error(exc)}"
        return
    judgement = Judge.decide(valid, outputs, result.scenario)
    result.judge_outputs = list(judgement.outputs)
    result.judge_parsed = list(judgement.parsed)
    result.judge_error = None
    result.proactive_suggestion = judgement.verdict.proactive_suggestion
    result.category_prediction = judgement.verdict.category_prediction
    result.aggregate = judgement.verdict.aggregate
    result.judge_agreement = round(judgement.agreement, 4)
    result.error = None


async def rejudge_line(
    line: dict[str, Any], judge: Judge, ask_judge: AskMany, settings: dict[str, Any]
) -> OEGResult:
    """One line of a finished OEG run judged by `judge` (whose run settings are `settings`).

    A line without a generation (the model failed) stays an error; a line this judge already
    judged is kept as it is (a rerun retries only what failed). A failed judge call never
    replaces a verdict: the line keeps it, and its `settings` (which judge gave it), with
    `judge_error` saying why the new judge could not judge it.
    """
    if not needs_judging(line, settings):
        return _as_it_is(line, settings)
    result = OEGResult.from_json(line)
    result.settings = settings
    await _judge_into(result, result.valid_answers_text or "", judge, ask_judge)
    if result.error is not None and not line.get("error"):
        kept = OEGResult.from_json(line)
        kept.judge_error = result.error
        return kept
    return result


def _as_it_is(line: dict[str, Any], settings: dict[str, Any]) -> OEGResult:
    """A line the judge is not asked about: as it is, but an episode the model failed takes
    the new settings (`eval` plays it again under them)."""
    result = OEGResult.from_json(line)
    if result.generation is None:
        result.settings = settings
    return result


def needs_judging(line: dict[str, Any], settings: dict[str, Any]) -> bool:
    """Whether `rejudge` asks the judge about `line`: it has a generation to judge, and not
    yet a verdict of the judge of `settings`."""
    if line.get("generation") is None or line.get("valid_answers_text") is None:
        return False
    done = line.get("settings") == settings and not line.get("error")
    return not done or bool(line.get("judge_error"))


#: The results file that `rejudge` replaced, kept beside the new one (one generation back).
PREVIOUS_RESULTS = "results.previous.jsonl"
#: The lines an unfinished `rejudge` judged so far (appended and fsynced as they are judged):
#: after Ctrl-C or a crash, the rerun takes them instead of asking the judge again; removed
#: once the results file holds them. `eval` and `report` never read it.
JUDGED_SO_FAR = "results.judging.jsonl"


@dataclass
class RejudgeOutcome:
    """What `rejudge` did: the new summary, where it wrote, and what it could not judge."""

    summary: Summary
    out_dir: Path
    #: The results file it replaced, kept as `PREVIOUS_RESULTS` (None when there was none).
    previous: Path | None = None
    #: Why lines could not be judged (the judge's errors, by message).
    failures: Counter[str] = field(default_factory=Counter)
    #: Of those lines, how many kept an earlier judge's verdict.
    kept: int = 0


def rejudge(
    run_dir: str | os.PathLike[str],
    judge: Judge,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    concurrency: int = RunOptions.concurrency,
    on_start: Callable[[int, int, int], None] | None = None,
    on_result: Callable[[OEGResult], None] | None = None,
) -> RejudgeOutcome:
    """Judge a finished OEG run again with `judge`, into `out_dir` (default: in place).

    The tested model is not asked again: its generations are read from the results file.
    Up to `concurrency` lines are judged at once, as `eval` plays episodes (the scheduler's
    workers; a judge that takes batches gets the votes of several lines together), each with
    its votes asked together; the results do not depend on it. `run.json` and every newly
    judged line record the new judge. The directory written is held with the run lock
    (`RunLock`) from the reading to the writing, as `eval` holds it. Each judged line is
    appended to `JUDGED_SO_FAR` as it ends, so that a rerun after Ctrl-C or a crash asks
    only about the others; at the end the results file it replaces is kept as
    `PREVIOUS_RESULTS` and the new one is written whole (temporary file, then rename).
    `on_start(to_judge, lines, judged_before)` is called once the judge answered its
    preflight, before it is asked (`judged_before`: lines an interrupted `rejudge` of the same
    judge judged), and
    `on_result(line)` as each line is judged. Lines the judge could not judge are counted
    (`RejudgeOutcome.failures`); a judge that cannot be reached ends it at once
    (`RunAbort`), with the results file untouched.
    """
    RunOptions(concurrency=concurrency)  # checks it as the command line would
    run = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run
    with RunLock(out):
        identity = read_run_config(run)
        lines = latest_results(read_results(run / RESULTS))
        if not lines or not all(is_oeg_line(line) for line in lines):
            raise NothingToDoError(f"{run} holds no open-ended (--mode oeg) results to judge")
        settings = {**identity.get("settings", {}), "judge": judge.identity()}
        identity = {**identity, "settings": settings}
        lines, before = _judged_before(lines, read_results(out / JUDGED_SO_FAR), settings)
        todo = [line for line in lines if needs_judging(line, settings)]

        def started() -> None:
            if on_start:
                on_start(len(todo), len(lines), before)

        if not todo:
            started()
        # Re-judging is recorded in run.json's provenance as an invocation of its own.
        entry: dict[str, Any] = {"command": "judge", "started": now(), **software()}
        entry["judge_endpoints"] = judge.model.endpoints
        entry["judge_decoding_sent"] = judge.model.sent_decoding(judge.decoding)
        judged = _judge_lines(
            todo, judge, settings, out / JUDGED_SO_FAR, concurrency, on_result, started
        )
        results = [judged.get(result_key(line)) or _as_it_is(line, settings) for line in lines]
        ordered = sorted((r.to_json() for r in results), key=result_order)
        entry["ended"] = now()
        outcome = RejudgeOutcome(summarize(ordered, model=str(identity.get("model", ""))), out)
        for line in ordered:
            if is_unjudged(line):
                outcome.failures[line.get("judge_error") or line["error"]] += 1
                outcome.kept += bool(line.get("judge_error"))
        outcome.previous = _keep(out / RESULTS, out / PREVIOUS_RESULTS)
        write_results(out / RESULTS, ordered)
        write_run_config(out, without_provenance(identity), [*provenance_of(identity), entry])
        write_summary(out, outcome.summary)
        (out / JUDGED_SO_FAR).unlink(missing_ok=True)
    return outcome


def _judged_before(
    lines: list[dict[str, Any]], so_far: list[dict[str, Any]], settings: dict[str, Any]
) -> tuple[list[dict[str, Any]], int]:
    """`lines` with those an interrupted `rejudge` judged (`JUDGED_SO_FAR`) in their place,
    and how many: only verdicts of this judge (`settings`), on the same generation of the
    same prompt, count; anything else there (a failed call, another judge's or another
    run's line) is asked again."""
    by_key = {result_key(line): index for index, line in enumerate(lines)}
    merged, taken = list(lines), set()
    for line in so_far:
        index = by_key.get(result_key(line))
        if index is None or needs_judging(line, settings) or line.get("settings") != settings:
            continue
        if any(line.get(k) != lines[index].get(k) for k in _JUDGED_TEXT):
            continue
        merged[index] = line
        taken.add(index)
    return merged, len(taken)


#: What a verdict is about: a line judged before counts only if these are unchanged.
_JUDGED_TEXT = ("prompt", "generation", "valid_answers_text")


def _judge_lines(
    todo: list[dict[str, Any]],
    judge: Judge,
    settings: dict[str, Any],
    so_far: Path,
    concurrency: int,
    on_result: Callable[[OEGResult], None] | None,
    started: Callable[[], None] = lambda: None,
) -> dict[tuple[str, int], OEGResult]:
    """Judge `todo` with `concurrency` lines in flight, each line appended to `so_far` as it
    ends (the scheduler's group commit); the results by line. `started` is called once the
    judge answered its preflight (a judge that cannot be reached shows no progress first)."""
    judged: dict[tuple[str, int], OEGResult] = {}
    if not todo:
        return judged

    def keep(result: Result) -> None:
        assert isinstance(result, OEGResult)
        judged[(result.scenario, result.sample_id)] = result
        if on_result:
            on_result(result)

    async def judge_one(line: dict[str, Any], submit: Ask) -> OEGResult:
        async def ask_votes(requests: Sequence[ChatRequest]) -> list[Completion]:
            return list(await asyncio.gather(*(submit(r) for r in requests)))

        return await rejudge_line(line, judge, ask_votes, settings)

    async def judge_all() -> None:
        try:
            await judge.model.preflight()
            started()
            scheduler = Scheduler(
                judge.model, judge_one, journal, concurrency=concurrency, on_result=keep
            )
            await scheduler.run(todo)
        finally:
            await judge.model.aclose()

    journal = ResultsFile(so_far)
    try:
        asyncio.run(judge_all())
    finally:
        journal.close()
    return judged


def _keep(path: Path, kept: Path) -> Path | None:
    """Copy `path` to `kept` whole (a crash leaves the old copy or the new one)."""
    if not path.exists():
        return None
    write_whole(kept, read_file(path))
    return kept
