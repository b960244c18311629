"""The `hf:` backend on a tiny random LLaVA-style checkpoint, loaded by path like a real one.

Covers what a user relies on: every scenario runs end to end, answers are the model's raw text,
each image part reaches the model as one image, in order, and a checkpoint that cannot load
says why in one message. That left-padded batches give what each request gives alone is
checked for every family, this one included, in test_hf_families.py.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image

from handmade import full_dataset
from hfruns import first_turn_requests, generate
from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data.images import ImageStore
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.models.base import ChatRequest, Decoding
from proactivebench.models.hf import HFModel, _describe_load_error, to_hf_conversation
from proactivebench.models.resilient import Resilient
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings
from proactivebench.testing.tiny_vlm import IMAGE_TOKENS

VERDICTS = {"correct", "proactive", "wrong", "mismatch"}
SHORT = Decoding(max_tokens=6)


@pytest.fixture(scope="module")
def loaded(tiny_vlm_dir: Path) -> Resilient:
    """The backend as a run gets it: inside the retry wrapper."""
    wrapped = load_model(f"hf:{tiny_vlm_dir}", device="cpu", dtype="float32")
    assert isinstance(wrapped, Resilient) and isinstance(wrapped.inner, HFModel)
    return wrapped


@pytest.fixture(scope="module")
def model(loaded: Resilient) -> HFModel:
    """The backend itself, for what only it has (its tokenizer, its torch model)."""
    assert isinstance(loaded.inner, HFModel)
    return loaded.inner


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def test_loads_a_checkpoint_by_path(loaded: Resilient, model: HFModel, tiny_vlm_dir: Path) -> None:
    assert model.name == loaded.name == f"hf:{tiny_vlm_dir}"
    assert model.max_batch == loaded.max_batch == 8 and model.needs_images and loaded.needs_images
    assert loaded.max_consecutive_failures == 0  # its failures end only their episode
    assert model.tokenizer.padding_side == "left"
    assert str(model.model.device) == "cpu"


def test_evaluate_plays_every_scenario_with_raw_answers(
    loaded: Resilient, model: HFModel, data: Path, tmp_path: Path
) -> None:
    evaluate(data, loaded, tmp_path, EvalSettings(decoding=SHORT))
    results = read_results(tmp_path / "results.jsonl")
    assert {r["scenario"] for r in results} == set(paper_scenarios()) and len(results) == 15
    for r in results:
        assert "error" not in r, r
        assert r["trace"] and all(t["verdict"] in VERDICTS for t in r["trace"])
    # The trace keeps exactly what the model wrote for that prompt, undecorated.
    model.bind_images(ImageStore(data))
    expected = {
        (req.observation.scenario, req.observation.sample_id): generate(model, [req])[0].text
        for req in first_turn_requests(data, SHORT)
    }
    got = {(r["scenario"], r["sample_id"]): r["trace"][0]["answer"] for r in results}
    assert got == expected
    assert any(answer.strip() for answer in got.values())


def test_each_image_part_reaches_the_model_in_order(
    model: HFModel, data: Path, tmp_path: Path
) -> None:
    Image.new("RGB", (40, 30), (0, 0, 0)).save(tmp_path / "black.png")
    Image.new("RGB", (40, 30), (255, 255, 255)).save(tmp_path / "white.png")
    model.bind_images(ImageStore(tmp_path))
    black, white = View("black.png"), View("white.png")
    obs = first_turn_requests(data, SHORT)[0].observation

    def user(*views: View) -> list[dict]:
        parts: list[dict] = [{"type": "image", "view": v} for v in views]
        return [{"role": "user", "content": [*parts, {"type": "text", "text": "Which?"}]}]

    requests = [
        ChatRequest(user(black), obs, SHORT),
        ChatRequest(
            [*user(white), {"role": "assistant", "content": "A"}, *user(black)], obs, SHORT
        ),
    ]
    pixels_seen: list[Any] = []
    ids_seen: list[Any] = []

    def on_vision(_module: Any, args: tuple, kwargs: dict[str, Any]) -> None:
        pixels_seen.append((args[0] if args else kwargs["pixel_values"]).clone())

    def on_forward(_module: Any, _args: tuple, kwargs: dict[str, Any]) -> None:
        ids_seen.append(kwargs["input_ids"].clone())

    hooks = [
        model.model.model.vision_tower.register_forward_pre_hook(on_vision, with_kwargs=True),
        model.model.register_forward_pre_hook(on_forward, with_kwargs=True),
    ]
    try:
        generate(model, requests)
    finally:
        for hook in hooks:
            hook.remove()
    assert len(pixels_seen) == 1  # one batch, its images encoded once
    pixels, ids = pixels_seen[0], ids_seen[0]  # the prefill holds the whole prompt
    assert pixels.shape[0] == 3
    means = pixels.flatten(1).mean(dim=1).tolist()
    assert means[0] < 0 < means[1] and means[2] < 0  # black, then white, then black
    image_token = model.model.config.image_token_id
    assert (ids == image_token).sum(dim=1).tolist() == [IMAGE_TOKENS, 2 * IMAGE_TOKENS]


def test_forced_answers_play_multi_turn_episodes(
    model: HFModel, data: Path, tmp_path: Path
) -> None:
    """Decoding extras reach `generate`: biased to answer "B", episodes take actions."""
    tokenizer = model.tokenizer
    b = tokenizer.convert_tokens_to_ids("B")
    eos = tokenizer.eos_token_id
    bias = [[[b], 50.0], [[b, eos], 100.0]]
    settings = EvalSettings(
        decoding=Decoding(max_tokens=4, extra=(("sequence_bias", bias),)), scenarios=("ROD",)
    )
    evaluate(data, model, tmp_path, settings)
    results = read_results(tmp_path / "results.jsonl")
    assert results and all("error" not in r for r in results)
    answers = [t["answer"] for r in results for t in r["trace"]]
    assert set(answers) == {"B"}
    assert max(r["num_turns"] for r in results) > 1


def test_conversation_conversion_keeps_order_and_roles() -> None:
    views = [View("a.png"), View("b.png")]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "image", "view": views[0]}]},
        {"role": "assistant", "content": "A"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Now?"}, {"type": "image", "view": views[1]}],
        },
    ]
    conversation, images = to_hf_conversation(messages, lambda v: v.image)  # type: ignore[arg-type, return-value]
    assert images == ["a.png", "b.png"]
    assert conversation == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "image"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A"}]},
        {"role": "user", "content": [{"type": "text", "text": "Now?"}, {"type": "image"}]},
    ]


def test_a_bad_path_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProactiveBenchError, match="no such directory"):
        load_model(f"hf:{tmp_path / 'missing'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProactiveBenchError, match="cannot load hf model"):
        load_model(f"hf:{tmp_path / 'empty'}")


#: transformers' message when a class needs torchvision, hard-wrapped as it writes it.
NO_TORCHVISION = (
    "\nQwen2VLVideoProcessor requires the Torchvision library but it was not found in your "
    "environment. Check out the instructions on the\ninstallation page: "
    "https://pytorch.org/get-started/locally/ and follow the ones that match your environment.\n"
    "Please note that you may need to restart your runtime after installation.\n"
)
NO_NUM2WORDS = "Package `num2words` is required. Install it with `pip install num2words`."


def missing(name: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"No module named {name!r}", name=name)


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (ImportError(NO_TORCHVISION), "Qwen2VLVideoProcessor needs torchvision"),
        (ImportError(NO_NUM2WORDS), "this checkpoint needs num2words"),
        (missing("num2words"), "this checkpoint needs num2words"),
        (missing("PIL.Image"), "this checkpoint needs pillow"),
        (ValueError("bad processor config"), "this checkpoint needs sentencepiece"),
    ],
)
def test_a_missing_package_says_what_to_install_in_one_line(exc: Exception, line: str) -> None:
    if isinstance(exc, ValueError):  # raised while handling the real cause
        exc.__context__ = missing("sentencepiece")
    package = line.rsplit(" ", 1)[1]
    assert _describe_load_error("org/model", exc) == (
        f"cannot load hf model 'org/model': {line}, which is not installed; "
        f"install {package}: pip install {package}"
    )


def test_other_load_errors_are_shown_whole_up_to_a_few_lines() -> None:
    """Unwrapped into one paragraph; a long one keeps its whole first sentences."""
    wrapped = "The config is\nbroken. Fix it:\n  set `vocab_size`."
    assert _describe_load_error("org/model", ValueError(wrapped)) == (
        "cannot load hf model 'org/model': The config is broken. Fix it: set `vocab_size`."
    )
    sentences = [f"Sentence {i} of the error says more." for i in range(40)]
    shown = _describe_load_error("org/model", ValueError(" ".join(sentences)))
    kept = shown.removeprefix("cannot load hf model 'org/model': ").removesuffix(" [...]")
    assert kept.endswith(".") and " ".join(sentences).startswith(kept)
    assert 400 < len(kept) <= 600 and "\n" not in shown
    # A version mismatch is not a missing package: shown as it is.
    mismatch = ImportError("cannot import name 'Foo' from 'bar'", name="bar")
    assert _describe_load_error("org/model", mismatch).endswith(
        ": cannot import name 'Foo' from 'bar'"
    )
    assert _describe_load_error("org/model", RuntimeError()).endswith(": RuntimeError")


def test_bad_options_are_clear_errors(tiny_vlm_dir: Path) -> None:
    with pytest.raises(ProactiveBenchError, match="unknown option"):
        load_model(f"hf:{tiny_vlm_dir}", precision="fp8")
    with pytest.raises(ProactiveBenchError, match="unknown dtype"):
        load_model(f"hf:{tiny_vlm_dir}", dtype="fp8")
    with pytest.raises(ProactiveBenchError, match="unknown device"):
        load_model(f"hf:{tiny_vlm_dir}", device="toaster")
    with pytest.raises(ProactiveBenchError, match="max_batch"):
        load_model(f"hf:{tiny_vlm_dir}", max_batch=0)


def test_a_failure_is_raised_at_once_not_retried(
    loaded: Resilient, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local model's failure (here: out of memory) would repeat: one attempt, as raised."""
    calls: list[int] = []

    def out_of_memory(requests: list[ChatRequest]) -> list[Any]:
        calls.append(len(requests))
        raise RuntimeError("CUDA out of memory (injected)")

    monkeypatch.setattr(loaded.inner, "_generate_batch", out_of_memory)
    loaded.bind_images(ImageStore(data))
    retries = loaded.stats["retries"]
    with pytest.raises(RuntimeError, match=r"^CUDA out of memory \(injected\)$"):
        generate(loaded, first_turn_requests(data, SHORT)[:2])
    assert calls == [2] and loaded.stats["retries"] == retries
    assert loaded.retry.max_retries > 0  # it could have retried: it chose not to


def test_each_distinct_view_is_decoded_once(model: HFModel, data: Path) -> None:
    """Views shown again (retries, cyclic moves, histories) come from the store's cache."""
    requests = first_turn_requests(data, SHORT) * 3
    store = ImageStore(data)
    model.bind_images(store)
    generate(model, requests)
    assert store.decodes == len({r.observation.view for r in requests}) > 10


def test_all_model_work_runs_on_one_thread_of_its_own(
    tiny_vlm_dir: Path, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading, and every batch of every call, run, concurrent or not, on one thread that is
    not the caller's: torch makes an OpenMP thread team per calling thread, and a second team
    slows every operator down (see models/hf.py)."""
    threads: list[tuple[str, int]] = []
    load, generate_batch = HFModel._load, HFModel._generate_batch

    def loading(self: HFModel, *args: Any) -> Any:
        threads.append(("load", threading.get_ident()))
        return load(self, *args)

    def generating(self: HFModel, requests: Any) -> Any:
        threads.append(("generate", threading.get_ident()))
        return generate_batch(self, requests)

    monkeypatch.setattr(HFModel, "_load", loading)
    monkeypatch.setattr(HFModel, "_generate_batch", generating)
    model = load_model(f"hf:{tiny_vlm_dir}", device="cpu", dtype="float32", max_batch=2)
    model.bind_images(ImageStore(data))
    requests = first_turn_requests(data, SHORT)[:6]

    async def concurrently() -> list[list[Any]]:
        return await asyncio.gather(*(model.generate([r]) for r in requests[:3]))

    generate(model, requests)  # three batches of two, one call
    asyncio.run(concurrently())  # three calls at once, from another event loop
    evaluate(data, model, tmp_path, EvalSettings(decoding=SHORT, scenarios=("ROD",)))
    kinds = [kind for kind, _ in threads]
    assert kinds[0] == "load" and kinds.count("load") == 1 and kinds.count("generate") >= 7
    assert len({ident for _, ident in threads}) == 1
    assert threads[0][1] != threading.get_ident()


@pytest.mark.parametrize(("options", "passed"), [({}, False), ({"use_kernels": True}, True)])
def test_hub_kernels_replace_no_layer_unless_asked(
    tiny_vlm_dir: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], passed: bool
) -> None:
    """transformers (5.25) swaps a GPU model's layers for kernels it downloads from the Hub
    unless `from_pretrained` is told not to: with HF_HUB_OFFLINE=1 on an H200 every load failed
    for a kernel nobody asked for. Asked for (`use_kernels=true`), they are passed on."""
    import transformers

    auto = transformers.AutoModelForImageTextToText
    load = auto.from_pretrained
    seen: list[Any] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("use_kernels", "not given"))
        return load(*args, **kwargs)

    monkeypatch.setattr(auto, "from_pretrained", recording)
    loaded = load_model(f"hf:{tiny_vlm_dir}", device="cpu", **options)
    assert isinstance(loaded, Resilient) and isinstance(loaded.inner, HFModel)
    assert seen == [passed]
