"""Rewards in TRL's signature, computed by the benchmark's own answer reader
(docs/protocol.md §4).

A completion is read against its example's options exactly as an episode reads an answer
(`read_choice`): a correct category earns `category` (1), an accepted intervention earns
`intervention` (1) at a state where no category is accepted yet and `intervention_when_answerable`
(0.5) once one is, and a wrong, abstaining or unreadable answer earns 0.

Why an intervention earns less once the category is accepted: with 1 for every accepted
intervention, "always ask" is an optimal policy of the single-turn task; a policy trained that
way learned to intervene on every turn and never to answer, and its episode accuracy fell to 0
on held-out scenarios. At 0.5, answering a category that is accepted is worth twice as much.

The multi-turn mode rewards the outcome of the whole episode instead (`outcome_reward`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from proactivebench.benchmark.scenarios.answers import (
    EXTRACTIONS,
    Choice,
    lenient_answer,
    read_choice,
)
from proactivebench.train.examples import observation_of


@dataclass(frozen=True)
class RewardSettings:
    """What each reading of an answer is worth; every field can be set in a config file."""

    category: float = 1.0
    #: An accepted intervention where no category is accepted (ROD's first turn).
    intervention: float = 1.0
    #: An accepted intervention where the category is accepted too: less than `category`,
    #: so that "always ask" is not optimal.
    intervention_when_answerable: float = 0.5
    #: How completions are read: the protocol's way ("strict") or after removing reasoning
    #: and decorations ("lenient", see `lenient_answer`).
    answer_extraction: str = "strict"
    #: Weight of the format reward (1 for an answer that is exactly one shown option); 0: off.
    format_weight: float = 0.0
    #: Multi-turn mode: subtracted from the outcome for every intervention made.
    turn_cost: float = 0.0

    def __post_init__(self) -> None:
        if self.answer_extraction not in EXTRACTIONS:
            raise ValueError(
                f"answer_extraction must be one of {EXTRACTIONS}, not {self.answer_extraction!r}"
            )
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "answer_extraction" and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise ValueError(f"reward setting {f.name} must be a finite number, not {value!r}")

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> RewardSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown reward setting(s) {unknown}; known: {', '.join(sorted(known))}"
            )
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def completion_text(completion: Any) -> str:
    """The text of one completion as TRL passes it: a string, or (conversational prompts) a
    list of messages whose last assistant message holds a string or text parts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
                return ""
    return ""


def read_completion(row: dict[str, Any], text: str, extraction: str = "strict") -> Choice:
    """What a completion chooses at the example's state, read as the benchmark reads."""
    if extraction == "lenient":
        text = lenient_answer(text)
    return read_choice(observation_of(row), text)


def choice_reward(choice: Choice, answerable: bool, settings: RewardSettings) -> float:
    """The worth of one reading: category, accepted intervention, or nothing."""
    if choice.kind == "category":
        return settings.category
    if choice.kind == "action":
        return settings.intervention_when_answerable if answerable else settings.intervention
    return 0.0


def _rows(columns: dict[str, Sequence[Any]], count: int) -> list[dict[str, Any]]:
    return [{name: values[i] for name, values in columns.items()} for i in range(count)]


def _mean_std(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance)


class ProactiveReward:
    """The answer reward, called by TRL with the example columns as keyword arguments.

    Logs the mean and standard deviation of its rewards per scenario through TRL's
    `log_metric` (as `rewards/<name>/<scenario>/mean` and `/std`), so that `trainer_state.json`
    shows which scenarios learn.
    """

    def __init__(self, settings: RewardSettings | None = None, name: str = "proactive") -> None:
        self.settings = settings or RewardSettings()
        self.__name__ = name

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        ground_truth: Sequence[str],
        proactive_actions: Sequence[Sequence[str]],
        options: Sequence[Sequence[str]],
        action_count: Sequence[int],
        scenario: Sequence[str] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        **_: Any,
    ) -> list[float]:
        columns = {
            "ground_truth": ground_truth,
            "proactive_actions": proactive_actions,
            "options": options,
            "action_count": action_count,
        }
        if scenario is not None:
            columns["scenario"] = scenario
        rewards = []
        for row, completion in zip(_rows(columns, len(completions)), completions, strict=True):
            choice = read_completion(
                row, completion_text(completion), self.settings.answer_extraction
            )
            rewards.append(choice_reward(choice, bool(row["ground_truth"]), self.settings))
        if log_metric is not None and scenario is not None:
            self._log_per_scenario(rewards, scenario, log_metric)
        return rewards

    def _log_per_scenario(
        self,
        rewards: list[float],
        scenario: Sequence[str],
        log_metric: Callable[[str, float], None],
    ) -> None:
        groups: dict[str, list[float]] = {}
        for value, short in zip(rewards, scenario, strict=True):
            groups.setdefault(short, []).append(value)
        for short, values in groups.items():
            mean, std = _mean_std(values)
            log_metric(f"rewards/{self.__name__}/{short}/mean", mean)
            log_metric(f"rewards/{self.__name__}/{short}/std", std)


_LETTERED = re.compile(r"([A-Za-z])(?:\s*\.\s*(.*))?", re.DOTALL)


def is_well_formed(text: str, options: Sequence[str]) -> bool:
    """Whether `text` is exactly one shown option, as the MCQA prompt asks: its letter ("B",
    "B."), its letter and its text ("B. cup"), or its text ("cup"), and nothing else."""
    answer = text.strip()
    match = _LETTERED.fullmatch(answer)
    if match is not None:
        index = ord(match.group(1).upper()) - ord("A")
        rest = (match.group(2) or "").strip().lower()
        return 0 <= index < len(options) and rest in ("", options[index].strip().lower())
    return answer.lower() in {o.strip().lower() for o in options}


class FormatReward:
    """1 for a completion that is exactly one shown option, else 0 (see `is_well_formed`)."""

    def __init__(self, name: str = "format") -> None:
        self.__name__ = name

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        options: Sequence[Sequence[str]],
        **_: Any,
    ) -> list[float]:
        return [
            float(is_well_formed(completion_text(c), o))
            for c, o in zip(completions, options, strict=True)
        ]


def outcome_reward(correct: bool, turns: int, turn_cost: float = 0.0) -> float:
    """The multi-turn reward: 1 if the episode ends with the right category, less
    `turn_cost` for every intervention (turns − 1)."""
    return (1.0 if correct else 0.0) - turn_cost * max(turns - 1, 0)


def reward_functions(settings: RewardSettings) -> tuple[list[Any], list[float]]:
    """The single-turn reward callables and their weights for `GRPOConfig.reward_weights`."""
    funcs: list[Any] = [ProactiveReward(settings)]
    weights = [1.0]
    if settings.format_weight:
        funcs.append(FormatReward())
        weights.append(settings.format_weight)
    return funcs, weights
