"""The verifiers environment: its translation, its reward, and whole rollouts played offline.

The rollouts run verifiers' own stack (env, interaction, the tool-less `null` harness's chat
program, its interception server and eval client) against the fake OpenAI server on 127.0.0.1.
One thing is bypassed: verifiers prepares the harness's chat program with `uv` (bootstrapped
from the network); here the program runs with this interpreter, which has its dependencies.
Rewards are checked against `proactivebench eval` of the same answers with `replay:`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers.v1")

import verifiers.v1 as vf
from verifiers.v1.runtimes import subprocess as subprocess_runtime
from verifiers.v1.runtimes.base import Runtime
from verifiers.v1.utils.loaders import load_environment, resolve_env_config

from proactivebench.adapters.verifiers_env import (
    PlaySettings,
    ProactiveData,
    ProactiveEnv,
    ProactiveTaskset,
    ProactiveTasksetConfig,
    episode_outcome,
    episode_reward,
    to_wire_message,
)
from proactivebench.benchmark.prompting import mcqa_text, user_turn
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Episode, View
from proactivebench.benchmark.scenarios.answers import Choice
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data.directory import load_dataset
from proactivebench.data.images import ImageStore
from proactivebench.data.synth import generate
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.testing.server import FakeOpenAI
from scripted import lines, scripts, write_replay

ENV_ID = "proactivebench-verifiers"
#: The scenarios whose episodes the rollout test plays (each rollout starts a chat program,
#: per turn, about three seconds): ROD, whose interventions show other images.
ROLLOUT_SCENARIOS = ["ROD"]
#: What an accepted intervention earns in these tests (any value other than 0 and 1).
INTERVENTION = 0.25


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    generate(root, per_scenario=2, seed=4)
    return root


@pytest.fixture(scope="module")
def direct(
    data: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list, dict[tuple[str, int], dict[str, Any]]]:
    """The scripted answers and the lines of an evaluation replaying them (`replay:`)."""
    played = scripts(data, policies=("oracle", "A"))  # short episodes: rollouts are slow
    root = tmp_path_factory.mktemp("direct")
    evaluate(data, load_model(f"replay:{write_replay(played, root / 'answers.jsonl')}"), root)
    return played, lines(root)


def expected_reward(line: dict[str, Any]) -> float:
    """The reward of an episode from its result line: our reader's verdicts, as recorded."""
    accepted = sum(turn["verdict"] == "proactive" for turn in line["trace"])
    return float(bool(line["correct"])) + INTERVENTION * accepted


def task_data(data: Path, scenario: str, sample_id: int, **settings: Any) -> ProactiveData:
    play = PlaySettings(**settings)
    return ProactiveData(data_dir=str(data), scenario=scenario, sample_id=sample_id, play=play)


# ----- translation and reward -------------------------------------------------------------------


def test_a_user_turn_carries_the_image_as_a_data_url_and_the_question(data: Path) -> None:
    store = ImageStore(data)
    record = load_dataset(data, ["COCO"]).records["COCO"][0]
    obs = make_episode(record).observation  # a crop: encoded, not the file's bytes
    wire = to_wire_message(user_turn(obs), store)
    image, text = wire["content"]
    assert wire["role"] == "user"
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/")
    assert image["image_url"]["url"] == store.data_url(obs.view)
    assert text == {"type": "text", "text": mcqa_text(obs.prompt, obs.options)}
    assert vf.UserMessage.model_validate(wire).content[1].text == text["text"]


def test_the_reward_is_our_readers_verdict(data: Path, direct: tuple[list, dict]) -> None:
    played, expected = direct
    for scenario, sample_id, answers in played:
        line = expected[scenario, sample_id]
        outcome = episode_outcome(task_data(data, scenario, sample_id), answers)
        assert outcome.correct == line["correct"] and outcome.turns == line["num_turns"]
        assert episode_reward(outcome, INTERVENTION) == expected_reward(line)
        assert episode_reward(outcome) == float(line["correct"])  # interventions earn 0
    assert {line["correct"] for line in expected.values()} == {True, False}
    assert any(expected_reward(line) % 1 for line in expected.values())  # interventions occur


def test_replies_past_the_end_are_ignored_and_too_few_leave_it_unfinished(data: Path) -> None:
    record = load_dataset(data, ["ROD"]).records["ROD"][0]
    task = task_data(data, "ROD", record.id)
    obs = make_episode(record).observation
    move = obs.correct_actions[0]
    assert episode_outcome(task, [move]).unfinished
    assert not episode_outcome(task, [move]).correct
    done = episode_outcome(task, ["I do not know.", move, move])
    assert not done.unfinished and done.turns == 1 and not done.correct


def test_lenient_extraction_reads_decorated_replies(data: Path) -> None:
    record = load_dataset(data, ["QD"]).records["QD"][0]
    category = make_episode(record).observation.categories.index(record.answer)
    letter = chr(65 + len(make_episode(record).observation.action_options) + category)
    decorated = [f"<think>hmm</think> **Answer: ({letter})**"]
    strict = task_data(data, "QD", record.id)
    lenient = task_data(data, "QD", record.id, answer_extraction="lenient")
    assert not episode_outcome(strict, decorated).correct
    assert episode_outcome(lenient, decorated).correct


# ----- rollouts ---------------------------------------------------------------------------------


@pytest.fixture
def local_chat_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the harness's chat program with this interpreter instead of a uv environment,
    with every file verifiers writes under the test's directory."""

    async def prepare(self: Runtime, script: str | bytes, env: Any = None, **_: Any) -> list:
        source = script.encode() if isinstance(script, str) else script
        path = tmp_path / f"{hashlib.sha256(source).hexdigest()}.py"
        partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}")  # rollouts run at once
        partial.write_bytes(source)
        os.replace(partial, path)
        return [sys.executable, str(path)]

    monkeypatch.setattr(Runtime, "prepare_uv_script", prepare)
    # The subprocess runtime's workspaces go under the test's directory, not ~/.cache.
    monkeypatch.setattr(subprocess_runtime, "CACHE_DIR", tmp_path / "verifiers-cache")
    monkeypatch.setenv("PROACTIVEBENCH_FAKE_KEY", "test-key")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def test_rollouts_play_our_episodes_and_score_them_with_our_reader(
    data: Path, direct: tuple[list, dict], local_chat_program: None
) -> None:
    played, expected = direct
    store = ImageStore(data)
    by_first_image = {}
    for scenario, sample_id, answers in played:
        first = expected[scenario, sample_id]["trace"][0]
        by_first_image[store.data_url(_view(first))] = answers

    def respond(body: dict[str, Any]) -> str:
        """The scripted answer of the episode whose first image opens the conversation."""
        messages = body["messages"]
        first = next(m for m in messages if m["role"] == "user")["content"][0]
        turn = sum(m["role"] == "assistant" for m in messages)
        return by_first_image[first["image_url"]["url"]][turn]

    with FakeOpenAI(respond=respond, api_key="test-key") as server:
        config = resolve_env_config(
            {
                "taskset": {
                    "id": ENV_ID,
                    "data": str(data),
                    "scenarios": ROLLOUT_SCENARIOS,
                    "task": {"intervention_reward": INTERVENTION},
                }
            }
        )
        env = load_environment(config)
        assert isinstance(env, ProactiveEnv) and isinstance(env.taskset, ProactiveTaskset)
        tasks = list(env.taskset)
        client = vf.EvalClientConfig(base_url=server.url, api_key_var="PROACTIVEBENCH_FAKE_KEY")
        context = vf.ModelContext(model="fake-vlm", client=client)

        async def play_all() -> list[vf.Episode]:
            async with env.serving():
                return await asyncio.gather(*(env.run_episode(t, context) for t in tasks))

        episodes = asyncio.run(play_all())

    assert [t.key for t in tasks] == [f"{s}-{i}" for s, i, _ in played if s in ROLLOUT_SCENARIOS]
    assert {line["correct"] for (s, _), line in expected.items() if s in ROLLOUT_SCENARIOS} == {
        True,
        False,
    }
    for task, episode in zip(tasks, episodes, strict=True):
        assert episode.ok, [t.errors for t in episode.traces]
        (trace,) = episode.traces
        line = expected[task.data.scenario, task.data.sample_id]
        assert trace.rewards["proactive"].score == expected_reward(line), task.key
        assert trace.metrics["correct"] == float(line["correct"])
        assert trace.metrics["proactive_suggestions"] == line["num_turns"] - 1
        # One user turn per episode turn, each carrying that turn's image and question.
        users = [m for m in trace.messages if isinstance(m, vf.UserMessage)]
        assert len(users) == line["num_turns"]
        for message, turn in zip(users, line["trace"], strict=True):
            image, text = message.content
            assert image.image_url.url == store.data_url(_view(turn))
            assert text.text == mcqa_text(turn["prompt"], turn["options"])
        assert [m.content for m in trace.assistant_messages] == [t["answer"] for t in line["trace"]]


def _view(turn: dict[str, Any]) -> View:
    crop = tuple(turn["crop"]) if turn.get("crop") is not None else None
    return View(turn["image"], crop, turn.get("resize_short_edge"))  # type: ignore[arg-type]


def test_the_taskset_refuses_bad_settings_with_one_message(data: Path) -> None:
    def load(**settings: Any) -> list:
        return list(ProactiveTaskset(ProactiveTasksetConfig(id=ENV_ID, **settings)))

    with pytest.raises(ProactiveBenchError, match=r"--env\.taskset\.data"):
        load()
    with pytest.raises(ProactiveBenchError, match="option_order"):
        load(data=str(data), option_order="sideways")
    with pytest.raises(ProactiveBenchError, match="data directory not found"):
        load(data=str(data / "missing"))
    with pytest.raises(ProactiveBenchError, match="limit must be >= 1"):
        load(data=str(data), limit=-1)
    with pytest.raises(ProactiveBenchError, match="resize_short_edge must be >= 1"):
        load(data=str(data), resize_short_edge=-5)
    with pytest.raises(ProactiveBenchError, match="intervention_reward must be a finite number"):
        load(data=str(data), task={"intervention_reward": float("nan")})
    assert [t.key for t in load(data=str(data), scenarios=["QD"], limit=1)] == ["QD-0"]


def test_a_rule_change_in_scenarios_reaches_the_reward(
    data: Path, direct: tuple[list, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment keeps no rule of its own: make every answer unreadable to the
    episodes, and the same replies earn nothing."""
    played, _ = direct
    monkeypatch.setattr(Episode, "read", lambda self, answer: Choice("unreadable"))
    for scenario, sample_id, answers in played:
        outcome = episode_outcome(task_data(data, scenario, sample_id), answers)
        assert not outcome.correct and outcome.interventions == 0 and outcome.turns == 1


def test_the_extra_installs_the_uv_the_harness_runs() -> None:
    """verifiers' runtime prepares the harness's chat program with `uv sync --script` (and
    downloads a uv when none is on PATH, which fails offline): the `verifiers` extra brings one."""
    import inspect
    import re
    import tomllib

    from verifiers.v1.runtimes import base

    assert "uv sync --script" in inspect.getsource(base.Runtime.prepare_uv_script)
    pyproject = Path(__file__).parents[1] / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["verifiers"]
    assert any(re.match(r"uv\b", requirement) for requirement in extra), extra
