"""`train grpo` under `accelerate launch` with 2 processes, on CPU (gloo), as docs/training.md
says to launch it on GPUs.

The batch settings need both processes: per_device_train_batch_size 2 with num_generations 4
is refused in one process (2 completions per generation, half a group) and trains with two
(2 x 2 = one whole group). The run must train 2 steps over both processes' batches, print and
save once (the main process), and leave whole files.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")
pytest.importorskip("accelerate")

from clirun import run_cli
from proactivebench.core.errors import TrainError
from proactivebench.train.examples import load_examples
from proactivebench.train.processes import check_same_data, data_digest

#: Two per process, four per prompt: whole groups only when two processes sample together.
BATCH = ["--set", "per_device_train_batch_size=2", "--set", "num_generations=4"]
SMALL = ["--set", "max_completion_length=1", "--set", "activation_checkpointing=false"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def grpo_args(model: Path, data: Path, out: Path) -> list[str]:
    """The `train grpo` arguments both tests give, launched or not."""
    args = ["train", "grpo", "--model", str(model), "--data", str(data), "--out", str(out)]
    return [*args, "--max-steps", "2", "--lora", *BATCH, *SMALL]


@pytest.fixture(scope="module")
def launched(
    tiny_vlm_dir: Path, synth_train: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    """The output directory and output (stdout, stderr) of the launch docs/training.md shows
    (there: 8 processes on GPUs, without --main_process_port)."""
    home = tmp_path_factory.mktemp("hf-home")  # no user's accelerate config applies
    out = tmp_path_factory.mktemp("launch") / "tuned"
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
    launch += ["--num_processes", "2", "--main_process_port", str(free_port())]
    command = [*launch, "-m", "proactivebench", *grpo_args(tiny_vlm_dir, synth_train, out)]
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout + done.stderr


@pytest.mark.slow  # two processes train: a multi-process launch (the slow set)
def test_two_processes_train_two_steps_together(launched: tuple[Path, str]) -> None:
    out, output = launched
    run = json.loads((out / "train_run.json").read_text("utf-8"))
    assert run["processes"] == 2 and run["steps"] == 2
    state = json.loads((out / "trainer_state.json").read_text("utf-8"))
    assert state["global_step"] == 2
    assert [e["step"] for e in state["log_history"] if "loss" in e] == [1, 2]
    # Each step took one prompt (2 processes x 2 completions / 4 per prompt): 2 in all.
    examples = sum(run["examples_per_scenario"].values())
    assert round(state["epoch"] * examples) == 2
    assert output.count("trained 2 steps") == 1 and output.count("training examples:") == 1


@pytest.mark.slow  # two processes train: a multi-process launch (the slow set)
def test_the_main_process_saves_whole_files_once(launched: tuple[Path, str]) -> None:
    out, _ = launched
    names = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "config.json", "adapter", "train_run.json"} <= names
    assert "trainer_state.json" in names and "train_resume.json" not in names
    assert not [n for n in names if n.startswith("checkpoint-") or "error" in n]
    for name in ("config.json", "train_run.json", "trainer_state.json"):
        json.loads((out / name).read_text("utf-8"))
    json.loads((out / "adapter" / "adapter_config.json").read_text("utf-8"))
    from safetensors import safe_open

    for weights in (out / "model.safetensors", out / "adapter" / "adapter_model.safetensors"):
        with safe_open(str(weights), "pt") as f:
            assert list(f.keys())


def test_one_process_refuses_the_batch_and_says_why(
    tiny_vlm_dir: Path, synth_train: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = run_cli(grpo_args(tiny_vlm_dir, synth_train, tmp_path / "out"), capsys)
    assert code == 1 and len(text.strip().splitlines()) == 1, text
    assert "must be divisible by num_generations (4)" in text
    assert "with 1 process(es)" in text and "2 x 1 process(es) x steps_per_generation 1" in text
    assert not (tmp_path / "out").exists()


class _Processes:
    """accelerate's process state as two processes see it, for `check_same_data`."""

    num_processes = 2


def test_processes_with_other_data_are_refused(
    synth_train: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = load_examples(str(synth_train))
    fewer = load_examples(str(synth_train), holdout=["ROD"])
    assert data_digest(data) == data_digest(load_examples(str(synth_train)))
    assert data_digest(fewer) != data_digest(data)

    def gathered(digests: list[Any]) -> list[Any]:
        return [*digests, data_digest(fewer)]  # what process 1 read

    monkeypatch.setattr("accelerate.utils.gather_object", gathered)
    with pytest.raises(TrainError, match=r"differs between processes \(process\(es\) 1 "):
        check_same_data(_Processes(), data)
    monkeypatch.setattr("accelerate.utils.gather_object", lambda d: [*d, data_digest(data)])
    check_same_data(_Processes(), data)
