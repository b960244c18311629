"""Playing one episode: the one loop that `eval`, the Inspect solver, the verifiers
environment and the lmms-eval task share.

Each caller supplies how a request is answered (`ask`): the engine's scheduler and response
cache, Inspect's `generate`, a verifiers chat. What a request holds (the conversation), how an
answer is read and moved (`Episode.read`/`apply`), what the result line records, and whether
the episode is multiple choice or open-ended and judged: all of that is decided here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from proactivebench.benchmark.demonstrations import Demonstration, choose
from proactivebench.benchmark.demonstrations import play as play_demonstration
from proactivebench.benchmark.prompting import Conversation
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.results import EpisodeResult, OEGResult, TurnRecord
from proactivebench.benchmark.scenarios import Episode, Observation, StepResult
from proactivebench.core.errors import RunAbort, episode_error
from proactivebench.models.base import ChatRequest, Completion, Decoding
from proactivebench.run.judge import Judge, judged_settings
from proactivebench.run.oeg import Ask, AskMany, play_oeg_episode
from proactivebench.run.oeg_multiturn import play_oeg_multiturn_episode
from proactivebench.run.settings import EvalSettings

Result = EpisodeResult | OEGResult


@dataclass
class Judging:
    """The judge of an open-ended run, and how its requests are answered."""

    judge: Judge
    ask: AskMany


async def play(
    episode: Episode,
    ask: Ask,
    settings: EvalSettings,
    *,
    pools: dict[str, list[Record]] | None = None,
    judging: Judging | None = None,
    answer_key: bool = False,
) -> Result:
    """Play `episode` to its end as `settings` say, and return its result line.

    `pools` are the samples demonstrations are drawn from (every loaded record of each
    scenario; needed with `settings.icl`); `judging` decides open-ended answers; `answer_key`
    lets the requests carry the observation's answer key (the built-in baselines only, see
    `Model.sees_answer_key`).
    """
    result: Result
    identity = settings.identity()
    if settings.judged:
        if judging is None:
            raise ValueError("an open-ended episode needs a judge")
        identity = judged_settings(identity, judging.judge)
    if settings.mode == "oeg-multiturn":
        assert judging is not None
        result = await play_oeg_multiturn_episode(
            episode,
            ask,
            settings.decoding,
            judging.judge,
            judging.ask,
            seed=settings.seed,
            history=settings.history,
            answer_key=answer_key,
        )
    elif settings.mode == "oeg":
        assert judging is not None
        result = await play_oeg_episode(
            episode,
            ask,
            settings.decoding,
            judging.judge,
            judging.ask,
            answer_key=answer_key,
        )
    else:
        demos = demonstrations(episode, settings, pools or {})
        conversation = Conversation(
            history=settings.history, prefix=[m for d in demos for m in d.messages()]
        )
        result = await play_episode(
            episode,
            ask,
            settings.decoding,
            conversation=conversation,
            answer_key=answer_key,
            read_as=settings.read_as,
        )
        if demos:
            result.demonstrations = [d.to_json() for d in demos]
    result.settings = identity
    return result


def demonstrations(
    episode: Episode, settings: EvalSettings, pools: dict[str, list[Record]]
) -> list[Demonstration]:
    """The in-context examples shown before `episode`: other samples of its scenario, drawn
    by the run's seed and played by the oracle (docs/protocol.md §7)."""
    demo = settings.demonstrations
    if demo is None:
        return []
    options = settings.episode_options()
    chosen = choose(pools[episode.scenario], episode.record, demo.count, settings.seed)
    return [
        play_demonstration(r, demo, seed=settings.seed, episode_options=options) for r in chosen
    ]


async def play_episode(
    episode: Episode,
    ask: Ask,
    decoding: Decoding,
    *,
    conversation: Conversation | None = None,
    answer_key: bool = False,
    read_as: Callable[[str], str] = str,
) -> EpisodeResult:
    """Play one multiple-choice episode to its end, turn by turn.

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
        suggestions = episode.suggestions
        shown = obs if answer_key else obs.without_answer_key()
        request = ChatRequest(conversation.request(obs), shown, decoding)
        try:
            completion = await ask(request)
        except RunAbort:
            raise  # the whole run stops, not this episode
        except Exception as exc:
            result.error = episode_error(exc)
            result.num_turns = len(result.trace)
            return result
        answer = completion.text if isinstance(completion.text, str) else ""
        conversation.answered(answer)
        read = read_as(answer)
        step = episode.step(read)
        turn = _turn_record(obs, answer, step, completion)
        if read != answer:
            turn.read_as = read
        if episode.random_suggestions:
            turn.random_suggestions = list(suggestions)
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
