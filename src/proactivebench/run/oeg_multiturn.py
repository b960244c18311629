"""Multi-turn open-ended generation (`--mode oeg-multiturn`, docs/protocol.md §6, paper
Table 10): open-ended turns, each judged, played on the MCQA environment.

The paper gives one sentence (§4.2): "By mapping every inapplicable proactive suggestion to a
random valid one, we can extend OEG to multiple turns". The rules chosen here, turn by turn:
the model answers the open-ended question (no options) about the current view; the judge reads
the answer against the valid answers *at that state* (`state_answers`); then

- a correct category ends the episode correct (it wins over a suggestion in the same answer);
- a proactive suggestion moves the environment: the valid action the answer names (the
  protocol's action keywords, among the actions of the state's valid options), or else one of
  the state's valid options drawn at random (seeded per run, sample and turn; recorded as
  `random_mapping`); a state that offers no valid action ends the episode wrong;
- anything else ends it wrong: "unreadable" when no judge vote held a readable verdict.

The episode's step limit applies as in MCQA, so the line is an MCQA line (`EpisodeResult`):
accuracy and ps rate (turns - 1) are MCQA's, and each turn keeps its judge outputs and 0/1
verdicts for the OEG measures per turn (`benchmark/metrics.py`).
"""

from __future__ import annotations

import random
from typing import Any

from proactivebench.benchmark.prompting import Message, assistant_turn, oeg_message
from proactivebench.benchmark.results import EpisodeResult, TurnRecord
from proactivebench.benchmark.scenarios import Episode, Observation
from proactivebench.benchmark.scenarios.actions import action_of
from proactivebench.benchmark.scenarios.answers import Choice
from proactivebench.core.errors import RunAbort, episode_error
from proactivebench.models.base import ChatRequest, Completion, Decoding
from proactivebench.run.judge import Judge, Judgement, answer_entries
from proactivebench.run.oeg import Ask, AskMany, judge_generation


def mapping_rng(seed: int, scenario: str, sample_id: int, turn: int) -> random.Random:
    """The generator of one turn's random mapping: the same run seed, sample and turn give
    the same action, whatever order the episodes are played in."""
    return random.Random(f"oeg-multiturn:{seed}:{scenario}:{sample_id}:{turn}")


def state_answers(episode: Episode) -> str:
    """The valid answers the judge looks for at the current state: the scenario's OEG list
    (`Episode.oeg_answers`), with the state's correct categories added at its end when the
    list leaves them out (ROD's and MVP-N's fixed lists hold moves only, the category being
    unseeable in their first view), so that a later turn can name the category."""
    valid = episode.oeg_answers()
    entries = answer_entries(valid)
    missing = [
        c.replace(".", "")
        for c in episode.observation.correct_categories
        if c.replace(".", "") not in entries
    ]
    if not missing:
        return valid
    return valid.rstrip().rstrip(".") + ", " + ", ".join(missing) + "."


def suggested_option(
    episode: Episode, generation: str, seed: int
) -> tuple[str | None, bool, str | None]:
    """The valid option a judged suggestion carries out: (option, drawn at random, why none).

    The option whose action the generation names (exactly one of the offered actions, by the
    protocol's keywords); otherwise one of the state's valid options, drawn by `seed`.
    """
    obs = episode.observation
    valid = list(obs.correct_actions)
    if not valid:
        return None, False, "the state offers no valid action to carry out"
    space = episode.action_space()
    by_action = {}
    for option in valid:
        action, _ = action_of(option, space, episode.keywords)
        if action is not None:
            by_action.setdefault(action, option)
    named, _ = action_of(generation, by_action, episode.keywords)
    if named is not None:
        return by_action[named], False, None
    rng = mapping_rng(seed, episode.scenario, episode.record.id, obs.turn)
    return rng.choice(valid), True, None


def choice_of(
    episode: Episode, judgement: Judgement, generation: str, seed: int
) -> tuple[Choice, bool, str | None]:
    """What a judged answer does to the episode: (the choice, randomly mapped, a reason)."""
    verdict = judgement.verdict
    if verdict.category_prediction:
        return Choice("category", episode.record.answer), False, None
    if verdict.proactive_suggestion:
        option, drawn, reason = suggested_option(episode, generation, seed)
        if option is None:
            return Choice("wrong"), False, reason
        return Choice("action", option), drawn, None
    if not verdict.parsed:
        return Choice("unreadable"), False, "no judge vote held a readable verdict"
    return Choice("wrong"), False, None


async def play_oeg_multiturn_episode(
    episode: Episode,
    ask: Ask,
    decoding: Decoding,
    judge: Judge,
    ask_judge: AskMany,
    *,
    seed: int,
    history: bool = False,
    answer_key: bool = False,
) -> EpisodeResult:
    """Play one multi-turn open-ended episode to its end; a failed call (model or judge)
    is an error on the episode, which a rerun plays again from its first turn."""
    record = episode.record
    result = EpisodeResult(
        scenario=record.scenario, sample_id=record.id, num_turns=0, correct_category=record.answer
    )
    past: list[Message] = []
    while not episode.done:
        obs = episode.observation
        prompt = episode.oeg_prompt()
        asked = oeg_message(obs.view, prompt)
        shown = obs if answer_key else obs.open_ended(prompt)
        try:
            completion = await ask(ChatRequest([*past, asked], shown, decoding))
        except RunAbort:
            raise
        except Exception as exc:
            result.error = episode_error(exc)
            break
        generation = completion.text if isinstance(completion.text, str) else ""
        turn = _turn(obs, prompt, generation, completion, state_answers(episode))
        result.trace.append(turn)
        if history:
            past += [asked, assistant_turn(generation)]
        valid = turn.valid_answers_text or ""
        judgement = await judge_generation(
            judge, ask_judge, prompt, valid, generation, record.scenario
        )
        if isinstance(judgement, str):
            result.error = judgement
            break
        _record_judgement(turn, judgement)
        choice, drawn, reason = choice_of(episode, judgement, generation, seed)
        step = episode.apply(choice)
        turn.verdict = step.verdict
        turn.action = step.info.get("action")
        turn.reason = reason or step.info.get("reason")
        turn.random_mapping = True if drawn else None
        result.end_reason = step.end
    if result.error is not None:
        result.num_turns, result.end_reason = len(result.trace), None
        return result
    result.correct = episode.correct
    result.num_turns = episode.num_turns
    return result


def _turn(
    obs: Observation, prompt: str, generation: str, completion: Completion, valid: str
) -> TurnRecord:
    """A judged turn's record before the judge answered (verdict "mismatch" until then)."""
    view = obs.view
    return TurnRecord(
        turn=obs.turn,
        image=view.image,
        crop=list(view.crop) if view.crop is not None else None,
        prompt=prompt,
        options=[],
        answer=generation,
        verdict="mismatch",
        resize_short_edge=view.resize_short_edge or None,
        usage=completion.usage,
        latency_s=round(completion.latency_s, 4) if completion.latency_s else None,
        cached=completion.cached,
        valid_answers_text=valid,
    )


# ----- re-judging (`proactivebench judge`) -----------------------------------------------------


def needs_rejudging(line: dict[str, Any], settings: dict[str, Any]) -> bool:
    """Whether `judge` asks about a multi-turn line: it was played to its end (an episode the
    model or the judge failed is played again by `eval`), and not yet judged by the judge of
    `settings`, or that judge failed on it."""
    if line.get("error") or not line.get("trace"):
        return False
    return line.get("settings") != settings or bool(line.get("judge_error"))


def as_it_is_multiturn(line: dict[str, Any], settings: dict[str, Any]) -> EpisodeResult:
    """A multi-turn line the judge is not asked about: as it is, but an episode that ended in
    an error takes the new settings (`eval` plays it again under them)."""
    result = EpisodeResult.from_json(line)
    if result.error is not None:
        result.settings = settings
    return result


def turn_verdict(turn: dict[str, Any]) -> tuple[Any, Any, bool]:
    """What of a judged turn decides the episode's path: (ps, cp, whether any vote parsed)."""
    parsed = turn.get("judge_parsed") or []
    return turn.get("proactive_suggestion"), turn.get("category_prediction"), any(parsed)


def verdicts_changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a re-judged line's turns decide otherwise than the line played: then its later
    turns would have been other turns, and the episode must be played again."""
    old = [turn_verdict(t) for t in before.get("trace") or []]
    new = [turn_verdict(t) for t in after.get("trace") or []]
    return old != new


async def rejudge_multiturn_line(
    line: dict[str, Any],
    judge: Judge,
    ask_judge: AskMany,
    settings: dict[str, Any],
    *,
    again: bool = False,
) -> EpisodeResult:
    """Every judged turn of a finished multi-turn line judged again by `judge` (whose run
    settings are `settings`), the tested model not asked; one this judge judged already only
    when `again` (its code was edited since). The line takes the new outputs and verdicts;
    `verdicts_changed` then says whether it still stands. A failed judge call keeps the line
    as it was, with `judge_error` saying why (`judge` retries it)."""
    if not needs_rejudging(line, {} if again else settings):
        return as_it_is_multiturn(line, settings)
    result = EpisodeResult.from_json(line)
    for turn in result.trace:
        if turn.valid_answers_text is None:
            continue
        judgement = await judge_generation(
            judge, ask_judge, turn.prompt, turn.valid_answers_text, turn.answer, result.scenario
        )
        if isinstance(judgement, str):
            kept = EpisodeResult.from_json(line)
            kept.judge_error = judgement
            return kept
        _record_judgement(turn, judgement)
    result.settings = settings
    result.judge_error = None
    return result


def _record_judgement(turn: TurnRecord, judgement: Judgement) -> None:
    """A judgement's outputs and verdicts on its turn."""
    turn.judge_outputs = list(judgement.outputs)
    turn.judge_parsed = list(judgement.parsed)
    turn.proactive_suggestion = judgement.verdict.proactive_suggestion
    turn.category_prediction = judgement.verdict.category_prediction
    turn.judge_agreement = round(judgement.agreement, 4)
