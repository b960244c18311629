"""ProactiveBench as a verifiers (v1) environment: `vf-eval proactivebench-verifiers`.

A thin adapter, for evaluation with `vf-eval` and RL training with prime-rl. Each task is one
of our episodes. The environment opens a conversation with the model under training and plays
the episode in it: each user turn carries the current image and question (our conversation
builder's message), the model's answer moves our episode (played by
`proactivebench.run.play_episode`, as `proactivebench eval` plays it), and the next user turn
carries the image the chosen intervention reveals, until the episode ends.

The reward is our answer reader's verdict, computed from the trace alone: the assistant's
replies are played again through a fresh episode of the task (episodes are deterministic), so
scoring needs no state kept from the rollout and a rule change in `scenarios/` changes the
play and the reward alike. A correct category earns 1; each accepted intervention earns
`intervention_reward` (default 0, configurable; with a negative value, the same as the training
mode's `outcome_reward` with a turn cost, `train/rewards.py`).

The conversation keeps its history, as multi-turn RL needs: this is `proactivebench eval
--history`, without in-context examples. verifiers owns the model connection, retries and
concurrency. Needs the `verifiers` extra (`pip install -e '.[verifiers]'`); the
loadable package is `proactivebench_verifiers` (verifiers finds environments by module name).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field, create_model
from pydantic_config import BaseConfig

from proactivebench.benchmark.prompting import Message, is_image_part
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Episode
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data.directory import load_dataset
from proactivebench.data.images import ImageStore
from proactivebench.models.base import ChatRequest, Completion
from proactivebench.run.play_episode import play
from proactivebench.run.selection import choose_episodes
from proactivebench.run.settings import EvalSettings, Kind, offered

__all__ = [
    "PlaySettings",
    "ProactiveData",
    "ProactiveEnv",
    "ProactiveEnvConfig",
    "ProactiveTask",
    "ProactiveTaskConfig",
    "ProactiveTaskset",
    "ProactiveTasksetConfig",
    "episode_outcome",
    "episode_reward",
    "to_wire_message",
]


# ----- translation ------------------------------------------------------------------------------


def to_wire_message(message: Message, images: ImageStore) -> dict[str, Any]:
    """Our user message in the OpenAI wire shape verifiers takes: images as data URLs."""
    content = message["content"]
    if isinstance(content, list):
        content = [
            {"type": "image_url", "image_url": {"url": images.data_url(part["view"])}}
            if is_image_part(part)
            else {"type": "text", "text": str(part.get("text", ""))}
            for part in content
        ]
    return {"role": message["role"], "content": content}


def config_model(
    name: str, kinds: tuple[Kind, ...], doc: str, settings: type[EvalSettings] = EvalSettings
) -> type[BaseConfig]:
    """A verifiers config with the settings of `kinds` that a verifiers rollout can honour,
    made from their declaration (`proactivebench.run.settings`): same names, defaults and help."""
    fields: dict[str, Any] = {
        s.name: (s.type, Field(s.default, description=s.info.help))
        for s in offered(settings, "verifiers", kinds)
    }
    return create_model(name, __base__=BaseConfig, __doc__=doc, **fields)


PlaySettings = config_model(
    "PlaySettings",
    ("episode",),
    "The settings that change how an episode is played; each means what the "
    "`proactivebench eval` flag of the same name means.",
)
SelectionSettings = config_model(
    "SelectionSettings", ("selection",), "Which episodes the taskset holds."
)


class ProactiveData(vf.TaskData):
    """One episode: which sample, where its data lives, and how it is played."""

    data_dir: str
    scenario: str
    sample_id: int
    play: PlaySettings = PlaySettings()

    def settings(self) -> EvalSettings:
        return EvalSettings(**self.play.model_dump())

    def episode(self, settings: EvalSettings) -> Episode:
        """A fresh episode of this task (the same play every time: episodes are deterministic)."""
        record = _records(self.data_dir, self.scenario)[self.sample_id]
        return make_episode(record, **settings.episode_options())


@functools.lru_cache(maxsize=64)
def _records(data_dir: str, scenario: str) -> dict[int, Record]:
    """Every record of one scenario file, by id (loaded once per process)."""
    dataset = load_dataset(Path(data_dir), [scenario], all_samples=True)
    return {record.id: record for record in dataset.records[scenario]}


@functools.lru_cache(maxsize=8)
def _images(data_dir: str) -> ImageStore:
    """One image cache per data set, shared by the rollouts of this process."""
    return ImageStore(Path(data_dir))


@dataclass(frozen=True)
class Outcome:
    """What the replies did to the episode."""

    correct: bool
    #: Interventions carried out (turns whose verdict was "proactive", but for a random
    #: suggestion of another scenario, which ends the episode: it earns nothing).
    interventions: int
    turns: int
    #: The replies ran out before the episode ended (the rollout stopped early).
    unfinished: bool


def episode_outcome(data: ProactiveData, replies: Sequence[str]) -> Outcome:
    """Play `replies` through a fresh episode of `data`, as the environment played them."""
    settings = data.settings()
    episode = data.episode(settings)
    interventions = 0
    for reply in replies:
        if episode.done:
            break
        step = episode.step(settings.read_as(reply))
        interventions += step.verdict == "proactive" and step.end != "invalid_suggestion"
    return Outcome(episode.correct, interventions, episode.num_turns, not episode.done)


def episode_reward(outcome: Outcome, intervention_reward: float = 0.0) -> float:
    """1 for a correct category, plus `intervention_reward` per accepted intervention."""
    return float(outcome.correct) + intervention_reward * outcome.interventions


# ----- task and taskset -------------------------------------------------------------------------


class ProactiveTaskConfig(vf.TaskConfig):
    """The reward's knob, under `--env.taskset.task.*`."""

    intervention_reward: float = 0.0
    """What each accepted intervention earns (a correct category earns 1)."""


class ProactiveTask(vf.Task[ProactiveData, vf.State, ProactiveTaskConfig]):
    """Scores a finished conversation by playing its replies through our episode."""

    @property
    def key(self) -> str:
        return f"{self.data.scenario}-{self.data.sample_id}"

    def _outcome(self, trace: vf.Trace) -> Outcome:
        return episode_outcome(self.data, [m.content or "" for m in trace.assistant_messages])

    @vf.reward(weight=1.0)
    async def proactive(self, trace: vf.Trace) -> float:
        return episode_reward(self._outcome(trace), self.config.intervention_reward)

    @vf.metric
    async def correct(self, trace: vf.Trace) -> float:
        return float(self._outcome(trace).correct)

    @vf.metric
    async def proactive_suggestions(self, trace: vf.Trace) -> float:
        return float(self._outcome(trace).turns - 1)


class ProactiveTasksetConfig(vf.TasksetConfig, PlaySettings, SelectionSettings):  # type: ignore[misc, valid-type]
    """Which episodes and how they are played, under `--env.taskset.*`."""

    data: str = ""
    """A data directory in the official layout (or from `proactivebench data synth`)."""
    task: ProactiveTaskConfig = ProactiveTaskConfig()


class ProactiveTaskset(vf.Taskset[ProactiveTask, ProactiveTasksetConfig]):
    def load(self) -> Iterator[ProactiveTask]:
        config = self.config
        if not config.data:
            raise ProactiveBenchError("say where the data is: --env.taskset.data DIR")
        reward = config.task.intervention_reward
        if not math.isfinite(reward):
            raise ProactiveBenchError(f"intervention_reward must be a finite number, got {reward}")
        data_dir = Path(config.data).expanduser().resolve()
        play = PlaySettings(**config.model_dump(include=set(PlaySettings.model_fields)))
        selection = config.model_dump(include=set(SelectionSettings.model_fields))
        # Checks the settings, as `proactivebench eval` does.
        settings = EvalSettings(**play.model_dump(), **selection)
        for episode in choose_episodes(data_dir, settings).episodes:
            record = episode.record
            data = ProactiveData(
                id=f"{record.scenario}-{record.id}",
                name=f"{record.scenario} sample {record.id}",
                prompt=None,  # the environment opens the conversation with the first image
                data_dir=str(data_dir),
                scenario=record.scenario,
                sample_id=record.id,
                play=play,
            )
            yield ProactiveTask(data, config.task)


# ----- the environment --------------------------------------------------------------------------


class ProactiveEnvConfig(vf.EnvConfig):
    assistant: vf.AgentConfig = vf.AgentConfig(
        harness={"id": "null"}, runtime=vf.SubprocessConfig()
    )
    """The model under evaluation or training: a plain chat (the tool-less `null` harness),
    run on this machine (no code is executed)."""


class ProactiveEnv(vf.Env[ProactiveEnvConfig]):
    """Plays one episode per rollout: the user turns are our observations."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        data: ProactiveData = task.data  # type: ignore[assignment]
        images = _images(data.data_dir)
        failure: list[BaseException] = []
        async with agents.assistant.interaction(task) as chat:

            async def ask(request: ChatRequest) -> Completion:
                # The chat keeps the conversation: each turn sends only the newest user turn.
                turn = to_wire_message(request.messages[-1], images)
                try:
                    segment = await chat.turn([turn])
                except BaseException as exc:  # verifiers' own error: it decides what follows
                    failure.append(exc)
                    raise
                if segment.terminated:
                    raise _RolloutEnded  # a limit ended the rollout; the reward reads the replies
                return Completion(segment.last_reply)

            settings = data.settings()
            await play(data.episode(settings), ask, settings)
        if failure:
            raise failure[0]


class _RolloutEnded(Exception):
    """verifiers ended the conversation (a turn or token limit) before the episode ended."""
