"""The learning check of benchmarks/learning.py, shortened: one seed, a few steps, tiny sizes.

It checks the pipeline's pieces, not that anything is learned at this size: the warm-up leaves
a model that answers in the protocol's format, GRPO (through `train_grpo`, and its
shuffled-reward control) sees rewards that vary within groups, and the evaluation on the test
split covers the held-out scenarios. Reading the right category on clear images is not reached
by the warm-up yet, even at full size (docs/training.md): that check is a strict xfail, so it
says so when it starts to pass.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "learning.py"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("learning", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["learning"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    learning = _script()
    sizes = learning.Sizes(
        train_per_scenario=3,
        test_per_scenario=1,
        hidden=64,
        layers=1,
        vocab=300,
        vision_steps=5,
        warmup_steps=60,
        warmup_lr=5e-3,
        batch=8,
        grpo_steps=2,
        grpo_batch=16,
        generations=8,  # 2 prompts x 8 per step: a group whose answers all earn the same is rare
    )
    out = tmp_path_factory.mktemp("learning")
    train, test = learning.prepare_data(out, sizes)
    return learning, learning.run_seed(0, out, train, test, sizes, control=True)


def test_the_warm_up_answers_in_the_protocols_format(outcome: tuple[Any, dict[str, Any]]) -> None:
    _, result = outcome
    assert result["clear_test"]["format"] >= 0.8


@pytest.mark.xfail(strict=True, reason="the warm-up does not read the options yet (issue 22)")
def test_the_warm_up_names_the_right_category_well_above_chance(
    outcome: tuple[Any, dict[str, Any]],
) -> None:
    _, result = outcome
    assert result["clear_test"]["right"] >= 0.5  # chance: about 1/8


def test_grpo_and_its_control_see_reward_variance(outcome: tuple[Any, dict[str, Any]]) -> None:
    _, result = outcome
    for arm in ("grpo", "control"):
        assert result["grpo"][arm]["steps"] == 2
        assert result["grpo"][arm]["steps_with_variance"] > 0


def test_the_evaluation_covers_seen_and_held_out_scenarios(
    outcome: tuple[Any, dict[str, Any]],
) -> None:
    learning, result = outcome
    for arm in ("warm", "grpo", "control"):
        table = result["eval"][arm]
        assert set(learning.HOLDOUT) <= set(table)
        assert {"ROD", "VSOD", "IN-C", "QD", "CIT"} <= set(table)
        for scenario in learning.HOLDOUT:
            assert [len(table[scenario][m]) for m in learning.MEASURES] == [3, 3, 3]
    text = learning.table([result])
    assert "| MVP-N | held out | grpo |" in text and "| ROD | seen | control |" in text


def test_the_control_shuffles_a_batchs_rewards() -> None:
    learning = _script()
    shuffled = learning.ShuffledReward(lambda **_: [0.0, 0.0, 1.0, 0.5, 0.0, 1.0], seed=3)
    values = shuffled(completions=[])
    assert sorted(values) == [0.0, 0.0, 0.0, 0.5, 1.0, 1.0]
    assert values != [0.0, 0.0, 1.0, 0.5, 0.0, 1.0]
