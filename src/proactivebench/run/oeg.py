"""Open-ended generation (docs/protocol.md §6): one turn without options, judged.

The model gets the first image and the open-ended question; a judge (`judge.Judge`) decides
which of the scenario's valid answers the generation holds. An episode here is the protocol's
logic plus two model calls; the engine supplies the calls, so that batching, caching, retries and
the results file work as for multiple choice. `rejudge_line` judges one line of a finished run
again (the `rejudge` job plays it), without asking the tested model anything; a failed judge
call never replaces a verdict.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from proactivebench.benchmark.prompting import Message, oeg_message
from proactivebench.benchmark.results import OEGResult
from proactivebench.benchmark.scenarios import Episode
from proactivebench.core.errors import RunAbort, episode_error
from proactivebench.models.base import ChatRequest, Completion, Decoding
from proactivebench.run.judge import Judge, Judgement, answer_entries

Ask = Callable[[ChatRequest], Awaitable[Completion]]
AskMany = Callable[[Sequence[ChatRequest]], Awaitable[list[Completion]]]


def oeg_messages(episode: Episode) -> list[Message]:
    """The model's request: the first image, then the open-ended question."""
    return [oeg_message(episode.observation.view, episode.oeg_prompt())]


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
    shown = obs if answer_key else obs.open_ended(result.prompt)
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


async def judge_generation(
    judge: Judge, ask_judge: AskMany, prompt: str, valid: str, generation: str, scenario: str
) -> Judgement | str:
    """The judge's votes on `generation` against the valid answers `valid`, decided; or, when
    the judge could not be asked (after its retries), why, as an episode's error ("judge:
    ..."). A run that must stop (`RunAbort`) stops."""
    requests = judge.requests(prompt, valid, generation)
    try:
        outputs = [c.text if isinstance(c.text, str) else "" for c in await ask_judge(requests)]
    except RunAbort:
        raise
    except Exception as exc:
        return f"judge: {episode_error(exc)}"
    return Judge.decide(valid, outputs, scenario)


async def _judge_into(result: OEGResult, valid: str, judge: Judge, ask_judge: AskMany) -> None:
    """Judge `result`'s generation against `valid` and record the verdict (or the error)."""
    result.valid_answers_text = valid
    result.valid_answers = answer_entries(valid)
    judgement = await judge_generation(
        judge, ask_judge, result.prompt, valid, result.generation or "", result.scenario
    )
    if isinstance(judgement, str):
        result.error = judgement
        return
    result.judge_outputs = list(judgement.outputs)
    result.judge_parsed = list(judgement.parsed)
    result.judge_error = None
    result.proactive_suggestion = judgement.verdict.proactive_suggestion
    result.category_prediction = judgement.verdict.category_prediction
    result.aggregate = judgement.verdict.aggregate
    result.judge_agreement = round(judgement.agreement, 4)
    result.error = None


async def rejudge_line(
    line: dict[str, Any],
    judge: Judge,
    ask_judge: AskMany,
    settings: dict[str, Any],
    *,
    again: bool = False,
) -> OEGResult:
    """One line of a finished OEG run judged by `judge` (whose run settings are `settings`).

    A line without a generation (the model failed) stays an error; a line this judge already
    judged is kept as it is (a rerun retries only what failed), unless `again` (the judge's
    code was edited since: another judge under the same settings). A failed judge call never
    replaces a verdict: the line keeps it, and its `settings` (which judge gave it), with
    `judge_error` saying why the new judge could not judge it.
    """
    if not needs_judging(line, {} if again else settings):
        return as_it_is(line, settings)
    result = OEGResult.from_json(line)
    result.settings = settings
    await _judge_into(result, result.valid_answers_text or "", judge, ask_judge)
    if result.error is not None and not line.get("error"):
        kept = OEGResult.from_json(line)
        kept.judge_error = result.error
        return kept
    return result


def as_it_is(line: dict[str, Any], settings: dict[str, Any]) -> OEGResult:
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
