"""`train grpo` refuses bad input before it trains: one message naming what and where, a
non-zero exit, no traceback, and no directory left behind.

Every case here fails before the first training step (most before the data is read), so the
tests need no training; the one that builds a trainer stops it at its first step.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from PIL import Image

from clirun import run_cli
from proactivebench.core.errors import DataError, TrainError
from proactivebench.core.texts import dumps
from proactivebench.train.checks import clear_previous_outputs, owned_outputs
from proactivebench.train.examples import load_examples
from proactivebench.train.grpo import TrainSettings, train_grpo

SMALL = {"per_device_train_batch_size": 4, "num_generations": 2, "max_completion_length": 1}


def grpo_args(model: Path | str, data: Path | str, out: Path, *extra: str) -> list[str]:
    return ["train", "grpo", "--model", str(model), "--data", str(data), "--out", str(out), *extra]


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    code, text = run_cli(args, capsys)
    assert code != 0, text
    assert "Traceback" not in text
    for part in expected:
        assert part in text, text
    return text


def write_config(path: Path, values: dict[str, Any]) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return path


# ----- the model ---------------------------------------------------------------------------------


def test_a_model_that_is_no_vlm_is_refused_before_the_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import LlamaConfig

    missing_data = tmp_path / "no-data"  # the model is checked first: the data is never read
    out = tmp_path / "out"
    empty = tmp_path / "empty"
    empty.mkdir()
    refused(grpo_args(empty, missing_data, out), capsys, f"--model {empty}", "no config.json")
    blank = tmp_path / "blank"
    blank.mkdir()
    (blank / "config.json").write_text("{}")
    refused(grpo_args(blank, missing_data, out), capsys, f"--model {blank}: cannot read its config")
    text_only = tmp_path / "llama"
    LlamaConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2).save_pretrained(
        text_only
    )
    for extra in ((), ("--lora",)):
        refused(
            grpo_args(text_only, missing_data, out, *extra),
            capsys,
            "not an image-text-to-text model",
            "no vision_config",
        )
    refused(grpo_args("/nonexistent/model", missing_data, out), capsys, "no such directory")
    assert not out.exists()


def test_lora_targets_that_match_nothing_are_refused(
    tiny_vlm_dir: Path, synth_train: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "c.yaml", {**SMALL, "lora": {"target_modules": ".*nope.*"}})
    out = tmp_path / "out"
    args = grpo_args(tiny_vlm_dir, synth_train, out, "--config", str(config), "--lora")
    refused(args, capsys, "--lora: no module of", "'.*nope.*'")
    assert not out.exists()


# ----- the data ----------------------------------------------------------------------------------


def official_row(**changes: Any) -> dict[str, Any]:
    row = {
        "prompt": [
            {
                "role": "user",
                "content": [{"type": "image", "text": None}, {"type": "text", "text": "What?"}],
            }
        ],
        "ground_truth": "cup",
        "proactive_actions": ["Move the blocks to the left."],
        "options": ["Move the blocks to the left.", "I do not know.", "apple", "cup"],
        "images": ["img.png"],
    }
    row.update(changes)
    return row


def write_rows(folder: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir(exist_ok=True)
    Image.new("RGB", (8, 8)).save(folder / "img.png")
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_official_rows_are_checked_and_image_paths_resolved_beside_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "data"
    good = write_rows(folder, "good.jsonl", [official_row(), official_row()])
    monkeypatch.chdir(tmp_path)  # "img.png" is beside the file, not in the current directory
    dataset = load_examples(good)
    assert dataset[0]["images"] == [str((folder / "img.png").resolve())]
    cases = {
        "images": (official_row(images=["missing.png"]), "no image file 'missing.png'"),
        "images ": (official_row(images=[]), "at least one image"),
        "images  ": (official_row(images=["img.png", "img.png"]), "2 image(s) but the prompt"),
        "prompt": (official_row(prompt="just text"), "list of chat messages"),
        "options": (
            official_row(options=[], ground_truth="", proactive_actions=[]),
            "can only score 0",
        ),
        "ground_truth": (
            official_row(ground_truth="", proactive_actions=[]),
            "nothing is accepted",
        ),
    }
    for field, (bad, message) in cases.items():
        path = write_rows(folder, "bad.jsonl", [official_row(), bad])
        with pytest.raises(DataError) as error:
            load_examples(path)
        assert f"{path}:2: field '{field.strip()}'" in str(error.value)
        assert message in str(error.value)


def test_unreadable_data_files_are_named(
    tiny_vlm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text('{"prompt": [}\n{"a": 1}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all" * 10)
    for path, message in (
        (malformed, "not a readable json file"),
        (empty, "the file is empty"),
        (garbage, "not a readable parquet file"),
    ):
        with pytest.raises(DataError, match=message) as error:
            load_examples(path)
        assert str(path) in str(error.value)
    out = tmp_path / "out"
    text = refused(grpo_args(tiny_vlm_dir, garbage, out), capsys, f"{garbage}: not a readable")
    assert text.count("magic bytes") == 1  # datasets' own account of it is not printed too
    assert not out.exists()


def test_hub_without_network_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import HfApi, constants

    calls = []

    def unreachable(self: Any, repo: str, **kwargs: Any) -> None:
        calls.append(kwargs.get("timeout"))
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(HfApi, "dataset_info", unreachable)
    with pytest.raises(DataError, match="cannot reach the dataset tdemin16/ProactiveBench"):
        load_examples("hub")
    assert len(calls) == 1 and calls[0] is not None


# ----- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"learning_rate": "fast"}, "c.yaml: learning_rate: expected a number, not 'fast'"),
        ({"learning_rate": float("nan")}, "learning_rate: expected a finite number"),
        ({"learning_rate": 0}, "learning_rate: expected a positive number"),
        ({"max_completion_length": 0}, "max_completion_length: expected a positive integer"),
        ({"holdout": 5}, "c.yaml: holdout: expected scenario names"),
        ({"hint": "no"}, "c.yaml: hint: expected true or false, not 'no'"),
        ({"max_steps": 0}, "max_steps: expected a positive integer (or -1"),
        ({"max_steps": -5}, "max_steps: expected a positive integer (or -1"),
        ({"use_vllm": "yes"}, "use_vllm: expected true or false"),
        ({"output_dir": "/elsewhere"}, "output_dir: the output directory is set with --out"),
        # GRPOConfig accepts it and nothing reads it ("for scripts"): it trained from scratch
        ({"resume_from_checkpoint": "tuned/checkpoint-2"}, "resume_from_checkpoint: train grpo"),
        ({"num_generations": 1}, "c.yaml: num_generations: expected an integer >= 2"),
        ({"mode": "both"}, "c.yaml: mode: expected one of single, multi, not 'both'"),
    ],
)
def test_config_values_are_checked_up_front(config: dict[str, Any], message: str) -> None:
    with pytest.raises(TrainError) as error:
        settings = TrainSettings.build("m", "d", "o", config=config, config_name="c.yaml")
        from proactivebench.train.grpo import check_settings

        check_settings(settings)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("config", "flags", "message"),
    [
        ({"lora": {"r": -1}}, [], "c.yaml: lora.r: expected a positive integer, not -1"),
        ({"lora": {"lora_alpha": 0}}, [], "c.yaml: lora.lora_alpha: expected a positive number"),
        ({"lora": {"lora_dropout": 1}}, [], "lora.lora_dropout: expected a number >= 0 and < 1"),
        ({"lora": {"r": "eight"}}, [], "c.yaml: lora.r: expected an integer, not 'eight'"),
        ({"lora": {"rank": 4}}, [], "c.yaml: unknown LoraConfig field(s) in 'lora': rank"),
        ({"lora": {"task_type": "SEQ_CLS"}}, [], "c.yaml: lora.task_type: set by train grpo"),
        ({}, ["--set", "temperature=-1"], "--set: temperature: expected a positive number, not -1"),
        ({"temperature": "hot"}, [], "c.yaml: temperature: expected a number, not 'hot'"),
        ({"learning_rate": -0.1}, [], "c.yaml: learning_rate: expected a positive number"),
        ({"num_generations": 0}, [], "c.yaml: num_generations: expected an integer >= 2"),
        ({}, ["--set", "num_generations=1"], "--set: num_generations: expected an integer >= 2"),
        ({}, ["--set", "top_p=1.5"], "--set: top_p: expected a number > 0 and <= 1, not 1.5"),
        ({"beta": -1}, [], "c.yaml: beta: expected a number >= 0, not -1"),
        ({"adam_beta2": 1}, [], "c.yaml: adam_beta2: expected a number >= 0 and < 1"),
    ],
)
def test_every_field_passed_to_trl_and_peft_is_checked_before_a_model_is_loaded(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    config: dict[str, Any],
    flags: list[str],
    message: str,
) -> None:
    # Neither the model nor the data exists: the settings are refused before either is read.
    path = write_config(tmp_path / "c.yaml", config)
    out = tmp_path / "out"
    args = grpo_args(tmp_path / "no-model", tmp_path / "no-data", out, "--lora")
    code, text = run_cli([*args, "--config", str(path), *flags], capsys)
    assert code == 1, text
    assert message.replace("c.yaml", str(path)) in text, text
    assert "Traceback" not in text and "--model" not in text
    assert not out.exists()


def test_the_field_table_names_real_fields() -> None:
    """A range for a field the library does not have would never apply (a renamed field)."""
    import dataclasses

    from peft import LoraConfig
    from trl import GRPOConfig

    from proactivebench.train.checks import GRPO_FIELDS, LORA_FIELDS

    for section, cls in ((GRPO_FIELDS, GRPOConfig), (LORA_FIELDS, LoraConfig)):
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        assert set(section.ranges) <= names
        assert set(section.reserved) <= names


def test_max_steps_is_checked_wherever_it_is_set() -> None:
    for value in (0, -5, "3"):
        with pytest.raises(TrainError, match="--set: max_steps"):
            TrainSettings.build("m", "d", "o", overrides={"max_steps": value})
    assert TrainSettings.build("m", "d", "o", overrides={"max_steps": -1}).grpo["max_steps"] == -1


def test_set_flags_are_named(
    tmp_path: Path, synth_train: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = grpo_args(tmp_path / "model", synth_train, tmp_path / "out")
    text = refused([*base, "--set", "learning_rate"], capsys, "--set", "expected KEY=VALUE")
    assert "--model-option" not in text
    refused(
        [*base, "--set", "per_device_train_batch_size=abc"],
        capsys,
        "--set: per_device_train_batch_size: expected an integer, not 'abc'",
    )
    refused(
        [*base, "--set", "generation_kwargs={bad"],
        capsys,
        "--set: generation_kwargs: expected a mapping",
    )


def test_a_lora_section_applies_only_with_the_flag(caplog: pytest.LogCaptureFixture) -> None:
    config = {"lora": {"r": 4}}
    with caplog.at_level("WARNING"):
        settings = TrainSettings.build("m", "d", "o", config=config, config_name="c.yaml")
    assert settings.lora is None
    assert "applies only with --lora" in caplog.text
    assert TrainSettings.build("m", "d", "o", config=config, lora=True).lora["r"] == 4


# ----- the output directory ----------------------------------------------------------------------


def test_out_is_checked_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("mine")
    model, data = tmp_path / "no-model", tmp_path / "no-data"
    refused(grpo_args(model, data, a_file), capsys, f"--out {a_file}: exists and is not a dir")
    refused(
        grpo_args(model, data, a_file / "sub"), capsys, f"--out {a_file / 'sub'}: cannot create"
    )
    previous = tmp_path / "previous"
    previous.mkdir()
    (previous / "train_run.json").write_text("{}")
    refused(
        grpo_args(model, data, previous),
        capsys,
        f"--out {previous}: not empty (holds train_run.json)",
        "--overwrite",
    )
    assert (previous / "train_run.json").read_text() == "{}"  # nothing lost
    # the model is checked after the out dir, and the directory made for the run is removed
    refused(grpo_args(model, data, tmp_path / "new" / "out"), capsys, "--model")
    assert not (tmp_path / "new").exists()


def test_overwrite_replaces_only_a_previous_runs_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "adapter").mkdir(parents=True)
    (out / "adapter" / "adapter_model.safetensors").write_bytes(b"x")
    for name in ("train_run.json", "trainer_state.json", "model.safetensors", "config.json"):
        (out / name).write_text("old")
    (out / "notes.txt").write_text("mine")
    clear_previous_outputs(owned_outputs(out))
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_overwrite_refuses_a_directory_that_never_held_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out . --overwrite` in a project folder deleted its README.md and the eval runs in
    runs/ (names a run's outputs share): --overwrite needs a previous run to replace."""
    project = tmp_path / "project"
    (project / "runs" / "base").mkdir(parents=True)
    (project / "runs" / "base" / "results.jsonl").write_text("mine")
    (project / "README.md").write_text("mine")
    (project / "config.json").write_text("mine")
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    refused(
        grpo_args(tmp_path / "no-model", tmp_path / "no-data", project, "--overwrite"),
        capsys,
        f"--out {project}: holds no previous training run",
        "README.md",
    )
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before
    assert (project / "README.md").read_text() == "mine"
    # a previous run's directory is still taken (the model is checked next, and refused)
    (project / "train_run.json").write_text("{}")
    refused(
        grpo_args(tmp_path / "no-model", tmp_path / "no-data", project, "--overwrite"),
        capsys,
        "--model",
    )
    assert (project / "README.md").read_text() == "mine"  # replaced only when a model is saved


def test_a_run_stopped_after_it_started_leaves_no_directory(
    tiny_vlm_dir: Path,
    synth_train: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from transformers import TrainerCallback

    class Stop(TrainerCallback):
        def on_train_begin(self, *args: Any, **kwargs: Any) -> None:
            raise KeyboardInterrupt

    out = tmp_path / "runs" / "out"
    settings = TrainSettings.build(
        str(tiny_vlm_dir), str(synth_train), out, config=SMALL, holdout="ROD,VSOD,MVP-N,IN-C"
    )
    import proactivebench.train.grpo as grpo

    built = []

    def keep(*args: Any, **kwargs: Any) -> Any:
        built.append(build_trainer(*args, **kwargs))
        return built[-1]

    build_trainer = grpo.build_trainer
    monkeypatch.setattr(grpo, "build_trainer", keep)
    with pytest.raises(KeyboardInterrupt):
        train_grpo(settings, callbacks=[Stop()])
    assert not (tmp_path / "runs").exists()
    # The progress bar stays; the per-step dicts it would print on stdout do not.
    from transformers.trainer_callback import ProgressCallback, TrainerControl

    (bar,) = [c for c in built[0].callback_handler.callbacks if isinstance(c, ProgressCallback)]
    bar.training_bar = object()  # a bar is showing: the stock callback would write to it
    assert bar.on_log(built[0].args, built[0].state, TrainerControl(), logs={"loss": 1.0}) is None

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("proactivebench.train.grpo.train_grpo", interrupted)
    code, text = run_cli(grpo_args(tiny_vlm_dir, synth_train, out), capsys)
    assert code == 130 and "nothing was saved" in text and "resume" not in text


def test_a_failure_inside_training_is_one_message_and_a_log(
    tiny_vlm_dir: Path,
    synth_train: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What TRL, PEFT or torch raise once training runs (out of memory, a bad generation
    setting) ends the command with one message and exit 1; the traceback goes to a file."""
    from transformers import TrainerCallback

    import proactivebench.train.grpo as grpo

    class Boom(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("CUDA out of memory (simulated)")

    build_trainer = grpo.build_trainer
    monkeypatch.setattr(
        grpo, "build_trainer", lambda s, d, callbacks=None: build_trainer(s, d, [Boom()])
    )
    out = tmp_path / "out"
    config = write_config(tmp_path / "c.yaml", {**SMALL, "max_steps": 1})
    args = grpo_args(tiny_vlm_dir, synth_train, out, "--config", str(config))
    args += ["--holdout", "ROD,VSOD,MVP-N,IN-C"]
    code, text = run_cli(args, capsys)
    log = out / "train_error.log"
    assert code == 1, text
    assert "Traceback" not in text
    assert "training failed at step 0: RuntimeError: CUDA out of memory (simulated)" in text
    assert f"the full traceback is in {log}" in text
    assert "Traceback" in log.read_text() and "on_step_begin" in log.read_text()
    assert sorted(p.name for p in out.iterdir()) == ["train_error.log"]
    # The log alone does not pin the directory: a rerun trains there, and the log goes.
    monkeypatch.setattr(grpo, "build_trainer", build_trainer)
    code, text = run_cli(args, capsys)
    assert code == 0, text
    assert (out / "train_run.json").is_file() and not log.exists()


def interrupt_at(step: int) -> Any:
    """A trainer callback that stops training as Ctrl-C would once `step` steps are done."""
    from transformers import TrainerCallback

    class Interrupt(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == step:
                raise KeyboardInterrupt

    return Interrupt()


def step_counter() -> Any:
    """A trainer callback whose `steps` counts the steps this run trained."""
    from transformers import TrainerCallback

    class Count(TrainerCallback):
        steps = 0

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            Count.steps += 1

    return Count()


def test_an_interrupted_run_with_checkpoints_resumes(
    tiny_vlm_dir: Path, synth_train: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    config = {**SMALL, "max_steps": 2, "save_strategy": "steps", "save_steps": 1}
    holdout = "ROD,VSOD,MVP-N,IN-C"

    def settings(**changes: Any) -> TrainSettings:
        values = {"config": config, "holdout": holdout, **changes}
        return TrainSettings.build(str(tiny_vlm_dir), str(synth_train), out, **values)

    with pytest.raises(KeyboardInterrupt):
        train_grpo(settings(), callbacks=[interrupt_at(1)])
    assert (out / "checkpoint-1").is_dir() and (out / "train_resume.json").is_file()
    # other settings do not resume these checkpoints, and nothing is lost
    with pytest.raises(TrainError, match="unfinished run with other settings"):
        train_grpo(settings(holdout="ROD"))
    counted = step_counter()
    outcome = train_grpo(settings(), callbacks=[counted])
    assert outcome.steps == 2 and counted.steps == 1  # only the step not yet done
    assert (out / "train_run.json").is_file() and not (out / "train_resume.json").exists()


@pytest.mark.parametrize(
    ("config", "wanted"),
    [
        ({}, {"use_kernels": False}),
        ({"model_init_kwargs": {"dtype": "bfloat16"}}, {"use_kernels": False, "dtype": "bfloat16"}),
        ({"model_init_kwargs": {"use_kernels": True}}, {"use_kernels": True}),
    ],
)
def test_the_trainer_loads_the_model_without_hub_kernels_unless_asked(
    config: dict[str, Any], wanted: dict[str, Any], tmp_path: Path
) -> None:
    """As the hf backend: transformers would swap the model's layers on a GPU for kernels
    downloaded from the Hub (offline, the load failed on an H200); the user's own
    model_init_kwargs are kept and may ask for them."""
    from proactivebench.train.grpo import grpo_config

    settings = TrainSettings.build("m", "d", tmp_path / "o", config=config, config_name="c.yaml")
    assert grpo_config(settings, [1.0]).model_init_kwargs == wanted


def test_a_run_cut_short_resumes_from_its_last_whole_checkpoint(
    tiny_vlm_dir: Path,
    synth_train: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three ways a rerun could not resume: a checkpoint cut short while saving (killed or
    Ctrl-C: no trainer_state.json) failed every rerun at step 0; a run started with
    --overwrite over a previous run was 'an unfinished run with other settings' without the
    flag, and started afresh with it (the command the interruption message said to rerun);
    a run killed before its first checkpoint was 'other settings' too."""
    from proactivebench.train.grpo import resumable_checkpoint, settings_identity

    out = tmp_path / "out"
    (out / "adapter").mkdir(parents=True)  # a previous LoRA run's outputs
    (out / "adapter" / "adapter_model.safetensors").write_bytes(b"old")
    (out / "train_run.json").write_text("{}")
    (out / "notes.txt").write_text("mine")
    config = {**SMALL, "max_steps": 3, "save_strategy": "steps", "save_steps": 1}

    def settings(**changes: Any) -> TrainSettings:
        values = {"config": config, "holdout": "ROD,VSOD,MVP-N,IN-C", **changes}
        return TrainSettings.build(str(tiny_vlm_dir), str(synth_train), out, **values)

    with pytest.raises(KeyboardInterrupt):
        train_grpo(settings(overwrite=True), callbacks=[interrupt_at(2)])
    (out / "checkpoint-2" / "trainer_state.json").unlink()  # killed while saving step 2
    assert resumable_checkpoint(settings(overwrite=True)) == out / "checkpoint-1"

    import proactivebench.train.grpo as grpo

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(grpo, "train_grpo", interrupted)
        given = ["--config", str(write_config(tmp_path / "c.yaml", config))]
        given += ["--holdout", "ROD,VSOD,MVP-N,IN-C", "--overwrite"]
        args = grpo_args(tiny_vlm_dir, synth_train, out, *given)
        code, text = run_cli(args, capsys)
    assert code == 130
    assert f"rerun the same command without --overwrite to resume from {out / 'checkpoint-1'}" in (
        " ".join(text.split())
    )

    counted = step_counter()
    outcome = train_grpo(settings(), callbacks=[counted])
    assert outcome.steps == 3 and counted.steps == 2  # steps 2 and 3, from checkpoint-1
    assert json.loads((out / "train_run.json").read_text())["steps"] == 3
    assert not (out / "adapter").exists() and (out / "notes.txt").read_text() == "mine"
    assert (out / "checkpoint-2" / "trainer_state.json").is_file()
    assert not (out / "train_resume.json").exists()

    # killed before its first checkpoint: only the settings file is left; the same settings
    # train from the start there
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    moved = dataclasses.replace(settings(), out_dir=fresh)
    (fresh / "train_resume.json").write_text(dumps(settings_identity(moved)))
    outcome = train_grpo(moved)
    assert outcome.steps == 3 and (fresh / "train_run.json").is_file()
