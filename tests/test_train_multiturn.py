"""The multi-turn mode's translation: episodes become first-turn rows, the `intervene` tool
plays the episode state machine, and the outcome reward reads the final answer on it.

Hand-worked on `handmade.rod(0)` (4 images from image 2; options A/B moves, C/D abstentions,
E apple, F banana, G cup (the answer), H dog).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("datasets")

from PIL import Image

import handmade
from proactivebench.core.errors import DataError
from proactivebench.data.directory import load_dataset
from proactivebench.train.multiturn import (
    EpisodeEnvironment,
    EpisodeOutcome,
    load_episode_rows,
    record_of,
)
from proactivebench.train.rewards import RewardSettings


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return handmade.full_dataset(tmp_path_factory.mktemp("handmade"))


def rod_row(data: Path) -> dict:
    rows = load_episode_rows(data, holdout="VSOD,MVP-N,IN-C,QD,CIT,COCO")
    assert sorted(set(rows["scenario"])) == ["ROD"] and len(rows) == 2
    return rows[0]


def answer(text: str) -> list[list[dict[str, str]]]:
    return [[{"role": "assistant", "content": text}]]


def test_rows_rebuild_their_records(data: Path) -> None:
    rows = load_episode_rows(data)
    originals = {(r.scenario, r.id): r for rs in load_dataset(data).records.values() for r in rs}
    assert len(rows) == len(originals) == 15
    for row in rows:
        assert (
            record_of(row["scenario"], row["record"])
            == originals[(row["scenario"], row["sample_id"])]
        )
        assert "A. " in row["prompt"][0]["content"][1]["text"]


def test_intervening_shows_the_next_image_and_the_answer_is_rewarded(data: Path) -> None:
    env = EpisodeEnvironment()
    env.reset(**rod_row(data))
    shown = env.intervene("A")  # move left: image 1, now the category is accepted
    assert isinstance(shown, list) and shown[0]["type"] == "image"
    assert isinstance(shown[0]["image"], Image.Image)
    assert "G. cup\n" in shown[1]["text"]
    assert env.episode is not None and env.episode.image_id == 1
    reward = EpisodeOutcome(RewardSettings(turn_cost=0.1))
    assert reward([[]], answer("G"), environments=[env]) == [pytest.approx(0.9)]


def test_wrong_abstaining_and_exhausted_episodes_earn_nothing(data: Path) -> None:
    row = rod_row(data)
    outcome = EpisodeOutcome()
    env = EpisodeEnvironment()
    env.reset(**row)
    assert outcome([[]], answer("G"), environments=[env]) == [0.0]  # first turn: nothing seen
    env.reset(**row)
    assert "ended (abstained)" in env.intervene("D")
    assert outcome([[]], answer("G"), environments=[env]) == [0.0]
    env.reset(**row)
    for _ in range(3):
        assert isinstance(env.intervene("B"), list)
    assert "ended (step_limit)" in env.intervene("B")  # the 4th turn is the last
    assert outcome([[]], answer("G"), environments=[env]) == [0.0]
    env.reset(**row)  # a reset starts the episode afresh
    assert outcome([[]], answer("garbage"), environments=[env]) == [0.0]


def test_multi_turn_mode_needs_episodes(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="directory in the official"):
        load_episode_rows(tmp_path / "train.parquet")


TOOL_CALL = '<tool_call>\n{"name": "intervene", "arguments": {"option": "A"}}\n</tool_call>'


def test_multi_turn_grpo_runs_the_tool_loop_on_the_episode(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two multi-turn GRPO steps through TRL's own tool loop, with the model's sampling
    replaced by a script (a random tiny model never writes a tool call): on ROD's first turn,
    rollouts 0 and 2 call `intervene("A")`, see the next image and answer G (cup: correct,
    reward 1); rollouts 1 and 3 answer G at once (nothing is visible yet: reward 0)."""
    pytest.importorskip("trl")
    from trl import GRPOTrainer

    from proactivebench.testing.tiny_vlm import build_tiny_tool_vlm
    from proactivebench.train.grpo import TrainSettings, train_grpo

    calls: list[tuple[bool, bool]] = []

    def scripted(trainer, prompt_ids, images, fields, num_generations, has_tool_images=False):
        tokenizer = trainer._tokenizer
        completions = []
        for index, ids in enumerate(prompt_ids):
            follow_up = "<tool_response>" in tokenizer.decode(ids)
            calls.append((follow_up, has_tool_images))
            text = "G" if follow_up or index % 2 else TOOL_CALL
            completions.append(tokenizer.encode(text + "<|im_end|>", add_special_tokens=False))
        return completions, None

    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", scripted)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model = build_tiny_tool_vlm(tmp_path / "model")
    settings = TrainSettings.build(
        str(model),
        str(data),
        tmp_path / "out",
        mode="multi",
        holdout="VSOD,MVP-N,IN-C,QD,CIT,COCO",
        overrides={"max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4},
    )
    outcome = train_grpo(settings)
    steps = [e for e in outcome.log_history if "loss" in e]
    assert len(steps) == 2
    for step in steps:
        assert step["tools/call_frequency"] == 0.5 and step["tools/failure_frequency"] == 0.0
        assert step["rewards/outcome/mean"] == 0.5 and step["reward_std"] > 0
        assert step["grad_norm"] > 0
    # Each step: 4 first turns, then 2 follow-ups that saw the tool's image.
    assert calls == ([(False, False)] * 4 + [(True, True)] * 2) * 2
    assert (tmp_path / "out" / "model.safetensors").is_file()


def test_multi_turn_mode_refuses_a_template_without_tools(
    tiny_vlm_dir: Path, data: Path, tmp_path: Path
) -> None:
    # TRL's tool loop parses tool calls with templates it knows; the tiny model has none.
    pytest.importorskip("trl")
    from proactivebench.core.errors import TrainError
    from proactivebench.train.grpo import TrainSettings, build_trainer

    settings = TrainSettings.build(
        str(tiny_vlm_dir), str(data), tmp_path, mode="multi", overrides={"max_steps": 1}
    )
    rows = load_episode_rows(data)
    with pytest.raises(TrainError, match="chat template with tool calling"):
        build_trainer(settings, rows)
