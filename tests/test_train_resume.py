"""`train grpo` tells the truth about what it trained: a resumed full fine-tune starts from its
checkpoint's weights (for every family `hf:` supports), and a run that can take no step fails
with the reason instead of saving the base weights as the trained model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

from clirun import run_cli
from proactivebench.core.errors import TrainError
from proactivebench.testing.families import FAMILIES
from proactivebench.train.grpo import TrainSettings, resume_weights_as_saved, train_grpo

LETTERS = "ABCDEFGHIJKLMN"
HOLDOUT = "ROD,VSOD,MVP-N,IN-C"


def weights(directory: Path) -> dict[str, Any]:
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(directory).state_dict()


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_checkpoint_loads_back_into_the_trainers_model(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint `save_pretrained` writes (in the family's published key layout) is what
    the trainer's model holds after the resume load: every weight, for every family."""
    for package in FAMILIES[name].needs:
        pytest.importorskip(package)
    import torch
    from transformers import AutoModelForImageTextToText, Trainer, TrainingArguments

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base = FAMILIES[name].build(tmp_path / "base")
    trained = AutoModelForImageTextToText.from_pretrained(base)
    with torch.no_grad():
        for parameter in trained.parameters():
            parameter.add_(1.0)  # "training": every weight moves
    trained.save_pretrained(tmp_path / "checkpoint-1")
    expected = {k: v.clone() for k, v in trained.state_dict().items()}
    model = AutoModelForImageTextToText.from_pretrained(base)
    args = TrainingArguments(str(tmp_path / "out"), use_cpu=True, report_to="none")
    trainer = Trainer(model=model, args=args)
    resume_weights_as_saved(trainer)
    trainer._load_from_checkpoint(str(tmp_path / "checkpoint-1"))
    loaded = trainer.model.state_dict()
    assert loaded.keys() == expected.keys()
    assert all(torch.equal(loaded[k], expected[k]) for k in expected)


def test_a_resumed_full_fine_tune_equals_the_uninterrupted_one(
    tiny_vlm_dir: Path, synth_train: Path, tmp_path: Path
) -> None:
    import torch
    from transformers import AutoTokenizer, TrainerCallback

    tokenizer = AutoTokenizer.from_pretrained(tiny_vlm_dir)
    allowed = {tokenizer.convert_tokens_to_ids(c) for c in LETTERS} | {tokenizer.eos_token_id}
    config = {
        "per_device_train_batch_size": 4,
        "num_generations": 2,
        "max_completion_length": 1,
        "learning_rate": 0.05,
        "seed": 3,
        # letters only: readable answers, some right, so the rewards vary and weights move
        "generation_kwargs": {
            "suppress_tokens": [i for i in range(len(tokenizer)) if i not in allowed]
        },
        "max_steps": 2,
        "save_strategy": "steps",
        "save_steps": 1,
    }

    class StopAtSecondStep(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 1:
                raise KeyboardInterrupt

    def settings(out: Path) -> TrainSettings:
        return TrainSettings.build(
            str(tiny_vlm_dir), str(synth_train), out, config=config, holdout=HOLDOUT
        )

    train_grpo(settings(tmp_path / "whole"))
    with pytest.raises(KeyboardInterrupt):
        train_grpo(settings(tmp_path / "resumed"), callbacks=[StopAtSecondStep()])
    assert train_grpo(settings(tmp_path / "resumed")).steps == 2
    whole, resumed = weights(tmp_path / "whole"), weights(tmp_path / "resumed")
    base = weights(tiny_vlm_dir)
    assert any(not torch.equal(whole[k], base[k]) for k in base)  # training changed weights
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)


def test_a_batch_larger_than_the_data_is_refused_with_the_reason(
    tiny_vlm_dir: Path, synth_train: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs" / "out"
    args = ["train", "grpo", "--model", str(tiny_vlm_dir), "--data", str(synth_train)]
    args += ["--out", str(out), "--holdout", HOLDOUT, "--max-steps", "2"]
    args += ["--set", "per_device_train_batch_size=64", "--set", "num_generations=2"]
    code, text = run_cli(args, capsys)
    assert code == 1, text
    assert "Traceback" not in text
    assert "fewer than the 32 distinct examples one generation samples" in text
    assert not (tmp_path / "runs").exists()


def test_a_run_that_took_no_step_saves_nothing(
    tiny_vlm_dir: Path, synth_train: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever makes the trainer take no step, the base weights are not saved as trained."""
    import proactivebench.train.grpo as grpo

    monkeypatch.setattr(grpo, "check_enough_examples", lambda settings, examples: None)
    config = {"per_device_train_batch_size": 64, "num_generations": 2, "max_steps": 2}
    out = tmp_path / "runs" / "out"
    settings = TrainSettings.build(
        str(tiny_vlm_dir), str(synth_train), out, config=config, holdout=HOLDOUT
    )
    with pytest.raises(TrainError, match="training took no step on the 24 examples"):
        train_grpo(settings)
    assert not (tmp_path / "runs").exists()
