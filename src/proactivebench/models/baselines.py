"""Reference players that need no model: upper and lower bounds and sanity checks.

They read the observation (and its answer key) instead of the image, so they run at the speed
of the episode engine. Random choices are seeded per (seed, scenario, sample, turn): a rerun,
a resumed run or a different concurrency gives the same answers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from proactivebench.benchmark.scenarios import Observation
from proactivebench.benchmark.scenarios.actions import is_abstention
from proactivebench.benchmark.scenarios.base import best_move
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model, episode_turn


class Baseline(Model):
    needs_images = False
    sees_answer_key = True
    answers_requests = False
    max_batch = 1024
    #: Not cached: the answer depends on the observation, its answer key and the seed, and
    #: playing it costs less than a cache lookup.
    cacheable = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def sent_decoding(self, decoding: Decoding) -> dict[str, Any]:
        """Nothing: the answers do not depend on decoding (run.json's provenance says so)."""
        return {}

    def rng(self, obs: Observation) -> random.Random:
        return random.Random(f"{self.name}:{self.seed}:{obs.scenario}:{obs.sample_id}:{obs.turn}")

    def answer(self, obs: Observation) -> str:
        raise NotImplementedError

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [Completion(self.answer(episode_turn(r, self.name))) for r in requests]


class Oracle(Baseline):
    """The best move: a correct action while the category is not yet correct, else the category.

    Scores 100 % with the fewest turns the protocol allows.
    """

    name = "baseline:oracle"

    def answer(self, obs: Observation) -> str:
        return best_move(obs)


class Proactive(Baseline):
    """Asks for every intervention it can: a correct action whenever one is offered and a later
    turn remains in which to answer, else the category.

    Scores 100 % with the most proactive suggestions the protocol allows: the row of a model
    that is right and always asks first.
    """

    name = "baseline:proactive"

    def answer(self, obs: Observation) -> str:
        if obs.correct_actions and obs.turn < obs.max_turns:
            return obs.correct_actions[0]
        return best_move(obs)


class RandomChoice(Baseline):
    """Uniform over the shown options (actions, abstentions and categories alike)."""

    name = "baseline:random"

    def answer(self, obs: Observation) -> str:
        return self.rng(obs).choice(obs.options)


class Reactive(Baseline):
    """Answers a category at once, uniformly: what a model that never asks does at chance."""

    name = "baseline:reactive"

    def answer(self, obs: Observation) -> str:
        return self.rng(obs).choice(obs.categories)


class Abstain(Baseline):
    """Always abstains: picks a shown "I cannot answer"-style option; scores 0 %."""

    name = "baseline:abstain"

    def answer(self, obs: Observation) -> str:
        return next((o for o in obs.options if is_abstention(o)), "I cannot answer.")


BASELINES: dict[str, type[Baseline]] = {
    cls.name.split(":", 1)[1]: cls for cls in (Oracle, Proactive, RandomChoice, Reactive, Abstain)
}
