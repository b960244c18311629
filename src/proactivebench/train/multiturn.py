"""Experimental multi-turn GRPO: the model asks, the episode answers with the next image.

TRL's `environment_factory` gives every rollout its own environment object whose public
methods are tools the model may call; a tool may return image parts, which TRL feeds to the
next turn. Our environment is the episode state machine itself (`Episode.read` / `apply`):
the tool `intervene` reads the requested option exactly as the benchmark reads an answer and,
when it is an accepted intervention, carries it out and returns the next image and question.
The rollout ends when the model answers without calling the tool; `EpisodeOutcome` reads that
answer on the episode and rewards the outcome: 1 for the right category, less `turn_cost`
per intervention (`rewards.outcome_reward`).

Episodes need records and images, so this mode trains on directories in the official layout
(our generator's train split), not on the official single-turn train split. Tool calling needs
a chat template that TRL can parse tool calls from (e.g. Qwen3-VL's); see docs/training.md.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from proactivebench.benchmark import registry
from proactivebench.benchmark.prompting import mcqa_text
from proactivebench.benchmark.records import Record, Source, parse_record
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Episode
from proactivebench.core.errors import DataError
from proactivebench.core.texts import dumps
from proactivebench.data.images import ImageStore
from proactivebench.train.examples import parse_holdout
from proactivebench.train.rewards import RewardSettings, completion_text, outcome_reward


def record_json(record: Record) -> str:
    """A record as the JSON line it came from (fields as in the official files)."""
    obj = {k: v for k, v in dataclasses.asdict(record).items() if k != "source"}
    if obj.get("strong_occlusions") is None:
        obj.pop("strong_occlusions", None)
    return dumps(obj)


def record_of(scenario: str, line: str) -> Record:
    return parse_record(
        registry.scenario(scenario).record_type, json.loads(line), Source("<training row>", 1)
    )


def episode_row(
    record: Record, data_dir: Path, store: ImageStore, episode_options: dict[str, Any]
) -> dict[str, Any]:
    """The first turn of a record's episode as a prompt, with what rebuilds the episode."""
    obs = make_episode(record, **episode_options).observation
    return {
        "prompt": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "text": None},
                    {"type": "text", "text": mcqa_text(obs.prompt, obs.options)},
                ],
            }
        ],
        "images": [store.image(obs.view).copy()],
        "scenario": record.scenario,
        "sample_id": record.id,
        "record": record_json(record),
        "data_dir": str(data_dir),
        # `make_episode`'s options, as JSON: one column whatever the options are.
        "episode_options": dumps(episode_options),
    }


def load_episode_rows(
    source: str | Path, *, holdout: Iterable[str] = (), **episode_options: Any
) -> Any:
    """One row per episode of a directory in the official layout, held-out scenarios left out."""
    import datasets

    from proactivebench.data.directory import load_dataset, scenarios_present

    root = Path(source)
    if not root.is_dir():
        raise DataError(
            "the multi-turn mode plays episodes: --data must be a directory in the official "
            "layout (e.g. from 'data synth --split train')",
            path=str(source),
        )
    held = set(parse_holdout(holdout))
    kept = [s for s in scenarios_present(root) if s not in held]
    if not kept:
        raise DataError("no scenario left to train on", path=str(root))
    data = load_dataset(root, kept, all_samples=True)
    store = ImageStore(root.resolve())
    rows = [
        episode_row(r, root.resolve(), store, episode_options)
        for rs in data.records.values()
        for r in rs
    ]
    if not rows:
        raise DataError("no episodes in the data directory", path=str(root))
    return datasets.Dataset.from_list(rows)


class EpisodeEnvironment:
    """One rollout's episode. TRL calls `reset` with the row, then the model's tool calls."""

    def __init__(self) -> None:
        self.episode: Episode | None = None
        self.store: ImageStore | None = None
        self.ended = ""

    def reset(
        self, record: str, scenario: str, data_dir: str, episode_options: str = "{}", **_: Any
    ) -> None:
        """Start the row's episode; the prompt already shows its first turn."""
        options = json.loads(episode_options)
        self.episode = make_episode(record_of(scenario, record), **options)
        if self.store is None or str(self.store.root) != data_dir:
            self.store = ImageStore(data_dir)
        self.ended = ""

    def intervene(self, option: str) -> list[dict[str, Any]] | str:
        """Ask for one of the interventions offered among the options, e.g. to move the object
        or to rewind the video; it is carried out and you are shown the next image.

        Args:
            option: The option's letter or its text, e.g. "A" or "Rotate the object."

        Returns:
            The new image and the question about it, or why the episode ended.
        """
        if self.episode is None or self.episode.done:
            return "The episode is over; answer with the category."
        # Read and applied as any answer of this turn: a category named here ends the episode.
        result = self.episode.apply(self.episode.read(str(option)))
        if result.done or result.observation is None:
            self.ended = result.end or "step_limit"
            return f"The episode ended ({self.ended})."
        obs = result.observation
        assert self.store is not None
        return [
            {"type": "image", "image": self.store.image(obs.view).copy()},
            {"type": "text", "text": mcqa_text(obs.prompt, obs.options)},
        ]


def settle(environment: EpisodeEnvironment, answer: str) -> tuple[bool, int]:
    """Read a rollout's final answer on its episode (if it still runs): (correct, turns).

    A function, not a method: every public method of the environment is a tool for TRL."""
    episode = environment.episode
    if episode is None:
        return False, 0
    if not episode.done:
        episode.step(answer)
    return episode.correct and episode.done, episode.num_turns


class EpisodeOutcome:
    """The multi-turn reward: each rollout's final answer read on its own episode."""

    def __init__(self, settings: RewardSettings | None = None, name: str = "outcome") -> None:
        self.settings = settings or RewardSettings()
        self.__name__ = name

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        environments: Sequence[EpisodeEnvironment] | None = None,
        **_: Any,
    ) -> list[float]:
        if environments is None:
            raise ValueError("the outcome reward needs the rollouts' environments")
        rewards = []
        for completion, environment in zip(completions, environments, strict=True):
            correct, turns = settle(environment, completion_text(completion))
            rewards.append(outcome_reward(correct, turns, self.settings.turn_cost))
        return rewards


def environment_factory(data: str) -> Callable[[], EpisodeEnvironment]:
    """What `GRPOTrainer(environment_factory=...)` gets: a new environment per rollout."""
    return EpisodeEnvironment


def multiturn_rewards(settings: RewardSettings) -> tuple[list[Any], list[float]]:
    return [EpisodeOutcome(settings)], [1.0]
