"""Two GRPO steps on the tiny local LLaVA with our rewards, through `proactivebench train grpo`.

One run (module fixture) trains 2 steps with LoRA on our generator's train split, MVP-N held
out, and the tests read what it left: the trainer's log (rewards per function and scenario, a
non-zero gradient norm on a step whose rewards vary), the merged model that `eval --model
hf:DIR` loads, the adapter beside it, and `train_run.json`. The tiny model is random, so its
sampling is restricted to the option letters (`generation_kwargs.suppress_tokens`) and one
token: every completion is then a readable answer, some right and some wrong, which gives the
rewards variance. Everything runs offline on CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from clirun import eval_baselines, run_cli
from proactivebench.cli import main
from proactivebench.run.rundir import latest_results, read_results
from proactivebench.train.examples import scenario_counts
from proactivebench.train.grpo import TrainSettings, training_data

HELD_OUT = "MVP-N"
LETTERS = "ABCDEFGHIJKLMN"


def letters_only(model_dir: Path) -> list[int]:
    """Every token id except the single letters and the end-of-text token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    allowed = {tokenizer.convert_tokens_to_ids(c) for c in LETTERS} | {tokenizer.eos_token_id}
    return [i for i in range(len(tokenizer)) if i not in allowed]


@pytest.fixture(scope="module")
def config_file(tiny_vlm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = {
        "per_device_train_batch_size": 8,
        "num_generations": 4,
        "max_completion_length": 1,
        "learning_rate": 0.05,
        "activation_checkpointing": False,
        "seed": 7,
        "generation_kwargs": {"suppress_tokens": letters_only(tiny_vlm_dir)},
        "lora": {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0},
        "rewards": {"intervention_when_answerable": 0.5},
    }
    path = tmp_path_factory.mktemp("config") / "grpo.yaml"
    import yaml

    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(
    tiny_vlm_dir: Path,
    synth_train: Path,
    config_file: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    out = tmp_path_factory.mktemp("grpo") / "run"
    args = ["train", "grpo", "--model", str(tiny_vlm_dir), "--data", str(synth_train)]
    args += ["--out", str(out), "--config", str(config_file), "--max-steps", "2", "--lora"]
    args += ["--holdout", HELD_OUT]
    try:  # capsys is per test; this module-wide run prints to the real output
        main(args)
    except SystemExit as exc:
        assert not exc.code, f"train grpo exited with {exc.code}"
    return out


def log_history(out: Path) -> list[dict[str, Any]]:
    state = json.loads((out / "trainer_state.json").read_text())
    return [entry for entry in state["log_history"] if "loss" in entry]


def test_two_steps_log_rewards_per_function_and_scenario(trained: Path) -> None:
    out = trained
    steps = log_history(out)
    assert [s["step"] for s in steps] == [1, 2]
    for step in steps:
        assert 0.0 <= step["rewards/proactive/mean"] <= 1.0
        assert "rewards/proactive/std" in step
        per_scenario = [k for k in step if k.startswith("rewards/proactive/") and k.count("/") == 3]
        assert per_scenario, step
        assert not [k for k in per_scenario if f"/{HELD_OUT}/" in k]


def test_gradient_flows_on_a_step_with_reward_variance(trained: Path) -> None:
    out = trained
    varied = [s for s in log_history(out) if s["reward_std"] > 0]
    assert varied, "no step had reward variance"
    assert all(s["grad_norm"] > 0 for s in varied)


def test_no_held_out_record_reaches_the_trainer(
    trained: Path, synth_train: Path, tiny_vlm_dir: Path
) -> None:
    out = trained
    run = json.loads((out / "train_run.json").read_text())
    assert run["held_out"] == [HELD_OUT]
    assert run["hint"] is False and run["lora"]["r"] == 4
    assert HELD_OUT not in run["trained_on"] and HELD_OUT not in run["examples_per_scenario"]
    assert set(run["trained_on"]) == {"ROD", "VSOD", "IN-C", "QD", "CIT", "COCO"}
    settings = TrainSettings.build(str(tiny_vlm_dir), str(synth_train), out, holdout=HELD_OUT)
    assert HELD_OUT not in scenario_counts(training_data(settings))


def test_lora_saves_merged_weights_and_the_adapter_beside(trained: Path) -> None:
    out = trained
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
    assert (out / "processor_config.json").is_file() or (out / "preprocessor_config.json").is_file()
    adapter = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert "language_model" in adapter["target_modules"]
    from safetensors import safe_open

    with safe_open(str(out / "adapter" / "adapter_model.safetensors"), "pt") as f:
        names = list(f.keys())
    assert names and all("language_model" in n for n in names)
    assert not [n for n in names if "vision" in n]
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        assert not [n for n in f.keys() if "lora" in n]  # noqa: SIM118 (merged: no LoRA)


def test_dir_loads_in_eval_and_compare_reads_the_holdout(
    trained: Path,
    tiny_vlm_dir: Path,
    synth_test: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = trained
    runs = {}
    for name, model in (("base", tiny_vlm_dir), ("tuned", out)):
        runs[name] = tmp_path / name
        args = ["eval", "--data", str(synth_test), "--model", f"hf:{model}"]
        args += ["--out", str(runs[name]), "--max-tokens", "2", "--no-cache"]
        code, text = run_cli(args, capsys)
        assert code == 0, text
    lines = latest_results(read_results(runs["tuned"] / "results.jsonl"))
    assert len(lines) == 7 and not [r for r in lines if r.get("error")]
    code, text = run_cli(["train", "compare", str(runs["base"]), str(runs["tuned"])], capsys)
    assert code == 0, text
    rows = {line.split()[1]: line for line in text.splitlines() if line.startswith("│")}
    assert "held out" in rows[HELD_OUT] and "seen" in rows["ROD"]
    assert "train_run.json" in text


def test_compare_gains_of_known_runs(
    synth_test: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # abstain scores 0 % everywhere, the oracle 100 %: every gain is +100.
    eval_baselines(synth_test, tmp_path, capsys, "abstain", "oracle")
    from proactivebench.train.compare import compare_runs

    comparison = compare_runs(tmp_path / "abstain", tmp_path / "oracle", holdout="ROD,QD")
    assert {r.scenario for r in comparison.rows if not r.seen} == {"ROD", "QD"}
    assert all(r.accuracy_gain == 100.0 for r in comparison.rows)
    assert comparison.mean_gain(True)[0] == comparison.mean_gain(False)[0] == 100.0
    code, text = run_cli(
        ["train", "compare", str(tmp_path / "abstain"), str(tmp_path / "oracle")], capsys
    )
    assert code == 1 and "--holdout" in text and "Traceback" not in text


def test_bad_settings_end_in_one_message(
    tmp_path: Path, synth_train: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("learning_rat = 0.1\n")
    base = [
        "train",
        "grpo",
        "--model",
        "nowhere",
        "--data",
        str(synth_train),
        "--out",
        str(tmp_path / "o"),
    ]
    code, text = run_cli([*base, "--config", str(bad)], capsys)
    assert code == 1 and "unknown GRPOConfig field(s): learning_rat" in text
    bad.write_text("[rewards]\ncategori = 2\n")
    code, text = run_cli([*base, "--config", str(bad)], capsys)
    assert code == 1 and "unknown reward setting(s) ['categori']" in text
    code, text = run_cli([*base, "--holdout", "ROD,NOPE"], capsys)
    assert code == 1 and "unknown scenario 'NOPE'" in text
    code, text = run_cli([*base, "--config", str(tmp_path / "none.yaml")], capsys)
    assert code == 1 and "cannot read the config file" in text
    assert "Traceback" not in text
