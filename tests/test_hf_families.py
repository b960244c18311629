"""Every supported family through `hf:`: tiny random checkpoints of the real classes (families.py).

Per family: every scenario is played with the conversation history and in-context examples
(several images per request), and open-ended with the model as its own judge; each request the
processor encodes holds every image (image tokens expanded in `input_ids`, pixel values for
each image), and left-padded batches generate what each request generates alone.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from handmade import full_dataset
from hfruns import (
    Encoded,
    assert_batched_equals_alone,
    first_turn_requests,
    image_parts,
    image_token_runs,
    images_in_pixels,
    record_encodes,
)
from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.models.base import Decoding
from proactivebench.models.hf import HFModel
from proactivebench.models.resilient import Resilient
from proactivebench.run.judge import Judge
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings
from proactivebench.testing.families import FAMILIES
from resultlines import comparable

FAMILY_NAMES = list(FAMILIES)
SHORT = Decoding(max_tokens=4)


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The families' tiny checkpoint directories, each built at its first use in the session."""
    return {}


@pytest.fixture(params=FAMILY_NAMES)
def family(
    request: pytest.FixtureRequest,
    checkpoints: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, Path]:
    """A family's name and its checkpoint; skipped when a package it needs is missing."""
    return request.param, built(request.param, checkpoints, tmp_path_factory)


def built(name: str, checkpoints: dict[str, Path], factory: pytest.TempPathFactory) -> Path:
    for package in FAMILIES[name].needs:  # the `hf` extra installs them
        pytest.importorskip(package)
    if name not in checkpoints:
        checkpoints[name] = FAMILIES[name].build(factory.mktemp(name))
    return checkpoints[name]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def load(directory: Path, **options: object) -> tuple[Resilient, HFModel]:
    loaded = load_model(f"hf:{directory}", device="cpu", dtype="float32", **options)
    assert isinstance(loaded, Resilient) and isinstance(loaded.inner, HFModel)
    return loaded, loaded.inner


def answering_b(model: HFModel) -> Decoding:
    """Short answers biased to "B" (a proactive option of many records): multi-turn episodes."""
    b = model.tokenizer.convert_tokens_to_ids("B")
    eos = model.tokenizer.eos_token_id
    bias = [[[b], 50.0], [[b, eos], 100.0]]
    return Decoding(max_tokens=4, extra=(("sequence_bias", bias),))


def assert_images_reach_the_model(encoded: list[Encoded], image_token_id: int) -> None:
    """Each image part of each request: one run of image tokens in its row, one image in the
    pixel values of its batch."""
    assert encoded
    for requests, inputs in encoded:
        parts = [image_parts(r) for r in requests]
        assert image_token_runs(inputs["input_ids"], image_token_id) == parts
        assert images_in_pixels(inputs) == sum(parts)


#: A played run's result lines, the batches its model encoded, and the model.
Played = tuple[list[dict], list[Encoded], HFModel]


def play_with_history_and_icl(
    directory: Path, data: Path, run: Path, monkeypatch: pytest.MonkeyPatch, max_batch: int
) -> Played:
    loaded, model = load(directory, max_batch=max_batch)
    encoded = record_encodes(model, monkeypatch)
    settings = EvalSettings(history=True, icl=1, decoding=answering_b(model))
    evaluate(data, loaded, run, settings)
    return read_results(run / "results.jsonl"), encoded, model


@pytest.fixture(scope="module")
def played_batched(
    data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str, Path], Played]:
    """A family's history + ICL run in batches of up to 8, played once for the two tests that
    read it (what it encoded was recorded while it played)."""
    plays: dict[str, Played] = {}

    def play(name: str, directory: Path) -> Played:
        if name not in plays:
            run = tmp_path_factory.mktemp(f"{name}-batched")
            with pytest.MonkeyPatch.context() as monkeypatch:
                plays[name] = play_with_history_and_icl(directory, data, run, monkeypatch, 8)
        return plays[name]

    return play


def test_every_scenario_plays_with_history_and_icl_and_every_image_reaches_the_model(
    family: tuple[str, Path], played_batched: Callable[[str, Path], Played]
) -> None:
    name, directory = family
    results, encoded, model = played_batched(name, directory)
    assert {r["scenario"] for r in results} == set(paper_scenarios()) and len(results) == 15
    for r in results:
        assert "error" not in r, r
    assert max(r["num_turns"] for r in results) > 1  # the history grows within episodes
    image_token_id = model.tokenizer.convert_tokens_to_ids(FAMILIES[name].image_token)
    assert_images_reach_the_model(encoded, image_token_id)
    requests = [r for batch, _ in encoded for r in batch]
    assert max(image_parts(r) for r in requests) >= 4  # examples and history: many images
    assert max(len(batch) for batch, _ in encoded) > 1  # and several requests per batch
    bos = model.tokenizer.bos_token_id
    if bos is not None:  # Gemma 3: its template writes the BOS, its tokenizer would add one
        for _, inputs in encoded:
            bos_counts = (inputs["input_ids"] == bos).sum(dim=1).tolist()
            assert bos_counts == [1] * len(bos_counts)


def by_episode(results: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r["scenario"], str(r["sample_id"])): comparable(r) for r in results}


def test_batched_generation_equals_one_at_a_time(
    family: tuple[str, Path],
    played_batched: Callable[[str, Path], Played],
    data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """First turns (one image each) and the requests of a history + ICL run (many images)."""
    name, directory = family
    one_at_a_time, _, _ = play_with_history_and_icl(
        directory, data, tmp_path / "alone", monkeypatch, max_batch=1
    )
    batched, encoded, model = played_batched(name, directory)
    assert by_episode(batched) == by_episode(one_at_a_time)
    assert_batched_equals_alone(model, first_turn_requests(data, SHORT))
    assert_batched_equals_alone(model, [r for batch, _ in encoded for r in batch][:16])


def test_open_ended_generation_with_the_model_as_its_own_judge(
    family: tuple[str, Path], data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, directory = family
    loaded, model = load(directory)
    encoded = record_encodes(model, monkeypatch)
    judge = Judge(loaded, decoding=Decoding(max_tokens=8))
    evaluate(data, loaded, tmp_path, EvalSettings(mode="oeg", decoding=SHORT), judge=judge)
    results = read_results(tmp_path / "results.jsonl")
    assert {r["scenario"] for r in results} == set(paper_scenarios()) and len(results) == 15
    for r in results:
        assert "error" not in r, r
    tested = [(reqs, inputs) for reqs, inputs in encoded if all(image_parts(r) for r in reqs)]
    judged = [reqs for reqs, _ in encoded if not any(image_parts(r) for r in reqs)]
    assert len(tested) + len(judged) == len(encoded)  # never a batch of both
    assert sum(len(reqs) for reqs, _ in tested) == 15 and judged
    image_token_id = model.tokenizer.convert_tokens_to_ids(FAMILIES[name].image_token)
    assert_images_reach_the_model(tested, image_token_id)


#: The CLI in a Python where `package` cannot be imported (transformers then finds it absent).
WITHOUT_PACKAGE = (
    "import sys; sys.modules[sys.argv[1]] = None; "
    "from proactivebench.cli import main; main(sys.argv[2:])"
)


#: (family, the package made missing, the class that says it needs it: None, the checkpoint)
MISSING = [("qwen2.5-vl", "torchvision", "Qwen2VLVideoProcessor"), ("smolvlm", "num2words", None)]


def test_a_missing_package_is_one_line_that_says_what_to_install(
    checkpoints: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
    data: Path,
    tmp_path: Path,
) -> None:
    """Each case in a Python of its own (transformers reads what is installed once), the two
    side by side."""
    started = []
    for name, package, needed_by in MISSING:
        directory = built(name, checkpoints, tmp_path_factory)
        out = tmp_path / name
        args = ["eval", "--data", str(data), "--model", f"hf:{directory}", "--out", str(out)]
        command = [sys.executable, "-c", WITHOUT_PACKAGE, package, *args]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        started.append((process, directory, out, package, needed_by or "this checkpoint"))
    try:
        for process, directory, out, package, who in started:
            output, _ = process.communicate(timeout=300)
            assert process.returncode == 1, output
            assert output == (
                f"error: cannot load hf model '{directory}': {who} needs {package}, which is "
                f"not installed; install {package}: pip install {package}\n"
            )
            assert not (out / "results.jsonl").exists()
    finally:
        for process, *_ in started:
            if process.poll() is None:
                process.kill()
                process.wait()
