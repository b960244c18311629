"""Large-model options of the `hf:` backend, through the CLI as a user gives them.

`device_map` hands placement to `from_pretrained` (on this CPU machine `auto` and `cpu` both put
the tiny LLaVA on the CPU, so the answers must equal the default load's); `quantization_config`
becomes transformers' own config class and reaches `from_pretrained`, whose missing package is
one clear error; `dtype` and quantization are part of the model's identity (cache keys and
run.json), placement is not; bad values are one line and exit 1, before anything loads.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from clirun import run_cli
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.models import load_model
from proactivebench.models.hf import HFModel
from proactivebench.run.rundir import read_results
from resultlines import comparable

BNB_4BIT = {"quant_method": "bitsandbytes", "load_in_4bit": True}


def hf_eval_args(data: Path, model_dir: Path, out: Path, *options: str) -> list[str]:
    """`eval` of `hf:model_dir` on `data`, with `--model-option` for each of `options`."""
    args = ["eval", "--data", str(data), "--model", f"hf:{model_dir}", "--out", str(out)]
    args += ["--max-tokens", "4", "--no-cache", "--no-report"]
    for option in options:
        args += ["--model-option", option]
    return args


def hf_eval(
    data: Path, model_dir: Path, out: Path, capsys: pytest.CaptureFixture[str], *options: str
) -> tuple[int, str]:
    """Exit code and output of `hf_eval_args`."""
    return run_cli(hf_eval_args(data, model_dir, out, *options), capsys)


def answers(run: Path) -> list[dict[str, Any]]:
    lines = read_results(run / "results.jsonl")
    assert lines and not [line for line in lines if line.get("error")]
    return sorted(
        (comparable(line) for line in lines), key=lambda r: (r["scenario"], r["sample_id"])
    )


@pytest.fixture(scope="module")
def default_run(
    synth_test: Path, tiny_vlm_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The tiny LLaVA evaluated with no option: where `device` (auto: the CPU here) puts it."""
    from proactivebench.cli import main

    out = tmp_path_factory.mktemp("default")
    try:
        main(hf_eval_args(synth_test, tiny_vlm_dir, out))
    except SystemExit as done:
        assert done.code in (0, None)
    assert (out / "results.jsonl").exists()
    return out


@pytest.mark.parametrize("device_map", ["auto", "cpu", '{"": "cpu"}'])
def test_a_device_map_loads_and_answers_as_the_default(
    device_map: str,
    synth_test: Path,
    tiny_vlm_dir: Path,
    default_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, text = hf_eval(synth_test, tiny_vlm_dir, tmp_path, capsys, f"device_map={device_map}")
    assert code == 0, text
    assert answers(tmp_path) == answers(default_run)
    assert any(turn["answer"].strip() for r in answers(tmp_path) for turn in r["trace"])
    # Placement is not the model: nothing about it in the run's identity.
    config = json.loads((tmp_path / "run.json").read_text("utf-8"))
    assert "model_settings" not in config


def test_from_pretrained_places_the_model_by_the_device_map(
    tiny_vlm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = spy_on_from_pretrained(monkeypatch)
    model = load_model(f"hf:{tiny_vlm_dir}", device_map="auto")
    assert isinstance(model.inner, HFModel)
    assert seen[-1]["device_map"] == "auto"
    assert {str(p.device) for p in model.inner.model.parameters()} == {"cpu"}
    assert str(model.inner.model.device) == "cpu"  # where generation inputs are sent


def spy_on_from_pretrained(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every model `from_pretrained` call, which still loads."""
    import transformers

    auto = transformers.AutoModelForImageTextToText
    original = auto.from_pretrained.__func__
    seen: list[dict[str, Any]] = []

    def recording(cls: Any, path: str, **kwargs: Any) -> Any:
        seen.append(dict(kwargs))
        return original(cls, path, **kwargs)

    monkeypatch.setattr(auto, "from_pretrained", classmethod(recording))
    return seen


def test_a_quantization_config_becomes_transformers_own_config() -> None:
    from transformers import BitsAndBytesConfig

    from proactivebench.models.hf import _quantization_config

    config = _quantization_config({**BNB_4BIT, "bnb_4bit_compute_dtype": "bfloat16"})
    assert isinstance(config, BitsAndBytesConfig)
    assert config.load_in_4bit and not config.load_in_8bit
    assert str(config.bnb_4bit_compute_dtype) == "torch.bfloat16"


@pytest.mark.skipif(
    importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes is installed"
)
def test_a_quantization_without_its_package_is_one_clear_error(
    synth_test: Path,
    tiny_vlm_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from transformers import BitsAndBytesConfig

    seen = spy_on_from_pretrained(monkeypatch)
    code, text = hf_eval(
        synth_test, tiny_vlm_dir, tmp_path, capsys, f"quantization_config={json.dumps(BNB_4BIT)}"
    )
    assert code == 1 and len(text.strip().splitlines()) == 1, text
    assert "bitsandbytes" in text and "pip install" in text and "Traceback" not in text
    # It got as far as from_pretrained, with transformers' config, placed as it loads.
    assert isinstance(seen[-1]["quantization_config"], BitsAndBytesConfig)
    assert seen[-1]["device_map"] == "cpu"
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["device_map=everywhere"], "bad device_map"),
        (["device_map=-1"], "bad device_map"),
        (['device_map={"": "toaster"}'], "bad device_map"),
        (["device=cpu", "device_map=auto"], "give device or device_map, not both"),
        (["quantization_config=4bit"], "quantization_config must be a JSON object"),
        (['quantization_config={"quant_method": "nope"}'], 'unknown quant_method "nope"'),
        (['quantization_config={"quant_method": "bitsandbytes"}'], "load_in_4bit or load_in_8bit"),
        (['quantization_config={"quant_method": "quanto", "weights": "int3"}'], "int3"),
        (["dtype=fp8"], "unknown dtype"),
    ],
)
def test_bad_large_model_options_are_one_line_and_exit_1(
    options: list[str],
    message: str,
    synth_test: Path,
    tiny_vlm_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, text = hf_eval(synth_test, tiny_vlm_dir, tmp_path / "run", capsys, *options)
    assert code == 1 and len(text.strip().splitlines()) == 1, text
    assert message in text and "Traceback" not in text
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_dtype_and_quantization_are_the_model_placement_is_not(tiny_vlm_dir: Path) -> None:
    default = HFModel(str(tiny_vlm_dir))
    placed = HFModel(str(tiny_vlm_dir), device_map="cpu", attn_implementation="eager")
    half = HFModel(str(tiny_vlm_dir), dtype="bfloat16")
    assert default.cache_name == placed.cache_name and default.request_settings() == {}
    assert placed.request_settings() == {}
    assert half.cache_name != default.cache_name and half.cache_name.startswith(default.cache_name)
    assert half.request_settings() == {"dtype": "bfloat16"}
    with pytest.raises(ProactiveBenchError):
        HFModel(str(tiny_vlm_dir), quantization_config={"quant_method": "nope"})


def test_a_run_does_not_resume_with_another_dtype(
    synth_test: Path, tiny_vlm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = hf_eval(synth_test, tiny_vlm_dir, tmp_path, capsys, "dtype=float32")
    assert code == 0, text
    config = json.loads((tmp_path / "run.json").read_text("utf-8"))
    assert config["model_settings"] == {"dtype": "float32"}
    code, text = hf_eval(synth_test, tiny_vlm_dir, tmp_path, capsys, "dtype=bfloat16")
    assert code == 1 and "model_settings" in text, text


def test_a_spreading_device_map_beside_other_ranks_on_the_node_is_refused(
    tiny_vlm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Launched with 2 processes per node, `device_map=auto` would put two copies over the same
    GPUs; with one process per node (several nodes) it is the way to run a large model."""
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    with pytest.raises(ProactiveBenchError, match="started 2 processes on it"):
        HFModel(str(tiny_vlm_dir), device_map="auto")
    HFModel(str(tiny_vlm_dir), device_map="cpu")  # one device, chosen: not refused
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert HFModel(str(tiny_vlm_dir), device_map="auto").model is not None
