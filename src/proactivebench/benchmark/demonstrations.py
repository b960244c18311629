"""In-context examples: episodes of other samples played by an oracle, shown before an episode
as earlier user and assistant turns (docs/protocol.md §7).

The paper defines them for ROD (one random correct intervention, then the category; images at
a short edge of 512) and MVP-N (the first correct intervention until the last turn, then the
category; images at 112). The other five scenarios get ROD's construction with the first
correct intervention, at the run's image size: our extension, so that every scenario can be
asked with examples. Chain of thought writes each intervention answer after the scenario's CoT
prompt (ROD and MVP-N have one); "reduced" keeps a demonstration's first and last turn.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proactivebench.benchmark.prompting import Message, assistant_turn, user_turn
from proactivebench.benchmark.protocol import raw_protocol
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Observation
from proactivebench.benchmark.scenarios.answers import option_letter
from proactivebench.benchmark.scenarios.base import best_move

#: Scenarios whose demonstrations intervene until the last turn (the others intervene once).
UNTIL_LAST_TURN = frozenset({"MVP-N"})


@dataclass(frozen=True)
class DemoSettings:
    """How demonstrations are made: how many, with chain of thought, reduced."""

    count: int
    cot: bool = False
    reduced: bool = False


@dataclass(frozen=True)
class DemoTurn:
    observation: Observation
    answer: str

    def to_json(self) -> dict[str, Any]:
        view = self.observation.view
        return {
            "image": view.image,
            "crop": list(view.crop) if view.crop is not None else None,
            "resize_short_edge": view.resize_short_edge,
            "prompt": self.observation.prompt,
            "options": list(self.observation.options),
            "answer": self.answer,
        }


@dataclass(frozen=True)
class Demonstration:
    """One oracle-played episode of another sample, as shown to the model."""

    sample_id: int
    turns: tuple[DemoTurn, ...]

    def messages(self) -> list[Message]:
        out: list[Message] = []
        for turn in self.turns:
            out += [user_turn(turn.observation), assistant_turn(turn.answer)]
        return out

    def to_json(self) -> dict[str, Any]:
        return {"sample_id": self.sample_id, "turns": [t.to_json() for t in self.turns]}


def demo_image_size(scenario: str, run_size: int | None) -> int | None:
    """The short edge of demonstration images: the paper's for ROD and MVP-N, else the run's."""
    return raw_protocol()["resize_short_edge"].get(f"icl_{scenario}", run_size)


def choose(pool: Sequence[Record], record: Record, count: int, seed: int) -> list[Record]:
    """`count` other samples of the pool, drawn by seed and shown in the pool's order."""
    others = [r for r in pool if r.id != record.id]
    rng = random.Random(f"icl:{seed}:{record.scenario}:{record.id}")
    drawn = {r.id for r in rng.sample(others, min(count, len(others)))}
    return [r for r in others if r.id in drawn]


def play(
    record: Record, settings: DemoSettings, *, seed: int, episode_options: dict[str, Any]
) -> Demonstration:
    """The oracle's episode of `record`: each answer is the chosen option's text (an
    intervention, or the category), as the reference writes them; with chain of thought an
    intervention reads "<CoT prompt> <letter>. <option>"."""
    options = {
        **episode_options,
        "resize_short_edge": demo_image_size(
            record.scenario, episode_options.get("resize_short_edge")
        ),
        # A demonstration is a correct example: its options are its record's own and its
        # next frame is the one its answer leads to, whatever ablation the run's episodes are
        # played with.
        "random_actions": False,
        "random_suggestions": False,
    }
    episode = make_episode(record, **options)
    obs = episode.reset()
    if _needs_second_turn(obs, episode.max_steps):
        episode = make_episode(record, **options, min_steps=2)
        obs = episode.reset()
    rng = random.Random(f"icl-move:{seed}:{record.scenario}:{record.id}")
    cot = episode.strings().cot_prompt if settings.cot else None
    turns: list[DemoTurn] = []
    while True:
        option = _move(obs, rng, intervened=bool(turns))
        if not option:
            break  # a record the oracle cannot play: the demonstration ends here
        answer = option
        if cot and option in obs.correct_actions:
            answer = f"{cot} {option_letter(obs.options.index(option))}. {option}"
        turns.append(DemoTurn(obs, answer))
        step = episode.step(option)
        if step.observation is None:
            break
        obs = step.observation
    if settings.reduced and len(turns) > 2:
        turns = [turns[0], turns[-1]]
    return Demonstration(record.id, tuple(turns))


def _needs_second_turn(obs: Observation, max_steps: int) -> bool:
    """Whether a record's episode ends before the category its intervention leads to (a ROD
    record with one frame: no category on the first turn, one step): its demonstration gets
    the second turn that the construction "one intervention, then the category" shows."""
    intervene_once = obs.scenario not in UNTIL_LAST_TURN
    return (
        intervene_once
        and max_steps < 2
        and bool(obs.correct_actions)
        and not (obs.correct_categories)
    )


def _move(obs: Observation, rng: random.Random, *, intervened: bool) -> str:
    """The demonstration's answer at `obs`: an intervention while the rule asks for one."""
    last_turn = obs.turn >= obs.max_turns
    once_more = obs.scenario in UNTIL_LAST_TURN or not intervened
    wants = once_more and not last_turn
    if obs.correct_actions and (wants or not obs.correct_categories):
        if obs.scenario == "ROD":
            return rng.choice(obs.correct_actions)
        return obs.correct_actions[0]
    return best_move(obs)
