"""The judge of open-ended answers (docs/protocol.md §6): which valid answers a generation holds.

A judge is any `Model` (an OpenAI-compatible server, a local `transformers` model, a user's
function). It gets the protocol's system prompt and user template with the tested model's
prompt, the valid answers and the generation; its verdict is the last run of comma-separated
0s and 1s in its visible output (reasoning in `<think>…</think>` removed by
`scenarios.answers.strip_reasoning`; reasoning whose `<think>` is never closed was cut short and
holds no verdict). A run of the wrong length, or none, scores 0 everywhere, as the reference
scores it; such a vote is *unparsed*, and every line records which of its votes parsed, so that
a judge that answers in another format is seen, not read as a judge that found nothing.

Judges vary from one sample to the next, so a judgement may take the majority of several
votes (each with its own seed, so that they differ and are cached apart); the share of votes
that agree with the majority is kept with the result (an unparsed vote agrees with nothing).
A judge must answer free-standing requests: a model that only plays episode turns (the
baselines, replay) is refused when the judge is made, before anything is asked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proactivebench.benchmark import registry
from proactivebench.benchmark.protocol import oeg_strings
from proactivebench.benchmark.scenarios.answers import strip_reasoning
from proactivebench.core.errors import ProactiveBenchError, SettingsError
from proactivebench.models.base import ChatRequest, Decoding, Model

#: The reference's OEG decoding: sampling with the model's own temperature, and room for long
#: reasoning: no temperature is sent, and up to 32,768 new tokens.
OEG_MAX_TOKENS = 32768
_VERDICT_RUN = re.compile(r"[01](?:\s*,\s*[01])*")


def oeg_decoding() -> Decoding:
    """The default decoding of OEG generations and judges (overridable)."""
    return Decoding(max_tokens=OEG_MAX_TOKENS, temperature=None)


def answer_entries(valid_answers: str) -> list[str]:
    """The entries shown to the judge: the comma-separated parts, trimmed, without dots."""
    return [part.strip().replace(".", "") for part in valid_answers.split(",")]


def judge_messages(user_prompt: str, valid_answers: str, generation: str) -> list[dict[str, Any]]:
    """The judge's request: the protocol's system prompt and user template, filled."""
    strings = oeg_strings()
    user = strings["judge_user_template"].format(
        user_prompt=user_prompt,
        correct_answers=str(answer_entries(valid_answers)),
        generated_answer=generation,
    )
    return [
        {"role": "system", "content": strings["judge_system_prompt"]},
        {"role": "user", "content": user},
    ]


@dataclass(frozen=True)
class Verdict:
    """What a judgement found: a proactive suggestion, a correct category, either (0 or 1)."""

    proactive_suggestion: int = 0
    category_prediction: int = 0
    #: Whether the judge's output held a verdict of the right length.
    parsed: bool = False

    @property
    def aggregate(self) -> int:
        return int(self.proactive_suggestion or self.category_prediction)


def judged_settings(settings: Mapping[str, Any], judge: Judge | None) -> dict[str, Any]:
    """A run's episode settings with the judge that decides its answers, as `run.json` and
    every open-ended line record them: the one place a judge's identity joins them."""
    return {**settings, "judge": judge.identity()} if judge is not None else dict(settings)


def parse_verdict(valid_answers: str, judge_output: str, scenario: str) -> Verdict:
    """Read a judge's output: the last 0/1 run of its visible output, as many as the entries
    that are not empty; the scenario's first `oeg_proactive_count` are interventions."""
    runs = _VERDICT_RUN.findall(strip_reasoning(judge_output))
    if not runs:
        return Verdict()
    expected = sum(1 for part in valid_answers.split(",") if part.strip())
    marks = [mark.strip() for mark in runs[-1].split(",") if mark.strip()]
    if len(marks) != expected:
        return Verdict()
    count = registry.scenario(scenario).strings.oeg_proactive_count
    return Verdict(
        proactive_suggestion=int("1" in marks[:count]),
        category_prediction=int("1" in marks[count:]),
        parsed=True,
    )


@dataclass(frozen=True)
class Judgement:
    """The majority verdict of one or more votes, and the raw outputs they came from."""

    verdict: Verdict
    outputs: tuple[str, ...]
    #: Share of votes whose (ps, cp) verdict equals the majority's; an unparsed vote gave no
    #: verdict, so it never agrees.
    agreement: float
    #: Per vote, whether its output held a verdict (`Verdict.parsed`).
    parsed: tuple[bool, ...] = ()


def check_votes(votes: Any) -> int:
    """The number of judge votes, or one error naming it (it may come from a text parameter)."""
    if isinstance(votes, bool) or not isinstance(votes, int) or votes < 1:
        raise SettingsError(f"judge_votes must be an integer >= 1, got {votes!r}")
    return votes


class Judge:
    """Asks a judge model `votes` times and takes the majority of its verdicts."""

    def __init__(self, model: Model, *, votes: int = 1, decoding: Decoding | None = None) -> None:
        if not model.answers_requests:
            raise ProactiveBenchError(
                f"{model.name} cannot judge: it answers episode turns only (it reads the turn, "
                "not the messages); use a chat model as the judge (openai:, hf: or python:)"
            )
        self.model = model
        self.votes = check_votes(votes)
        self.decoding = decoding or oeg_decoding()

    def with_model(self, model: Model) -> Judge:
        """The same judge asking `model` (e.g. the judge model behind a response cache)."""
        return Judge(model, votes=self.votes, decoding=self.decoding)

    def identity(self) -> dict[str, Any]:
        """What defines the judgements, for `run.json` and every result line."""
        identity = {
            "judge": self.model.name,
            "votes": self.votes,
            "decoding": self.decoding.as_dict(),
        }
        if self.model.request_settings():
            identity["model_settings"] = self.model.request_settings()
        return identity

    def requests(self, user_prompt: str, valid_answers: str, generation: str) -> list[ChatRequest]:
        messages = judge_messages(user_prompt, valid_answers, generation)
        decodings = (
            [self.decoding]
            if self.votes == 1
            else [self.decoding.with_extra(seed=vote) for vote in range(self.votes)]
        )
        return [ChatRequest(messages, None, decoding) for decoding in decodings]

    @staticmethod
    def decide(valid_answers: str, outputs: list[str], scenario: str) -> Judgement:
        """Each field by strict majority of the votes (a tie is 0; an unparsed vote counts as
        0s, as the reference scores it); the agreement is the share of votes that gave a
        verdict and whose (ps, cp) equals the result."""
        verdicts = [parse_verdict(valid_answers, output, scenario) for output in outputs]
        votes = len(verdicts)
        ps = int(2 * sum(v.proactive_suggestion for v in verdicts) > votes)
        cp = int(2 * sum(v.category_prediction for v in verdicts) > votes)
        agreeing = sum(
            v.parsed and (v.proactive_suggestion, v.category_prediction) == (ps, cp)
            for v in verdicts
        )
        majority = Verdict(ps, cp, parsed=any(v.parsed for v in verdicts))
        parsed = tuple(v.parsed for v in verdicts)
        return Judgement(majority, tuple(outputs), agreeing / votes, parsed)
