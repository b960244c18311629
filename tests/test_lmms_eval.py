"""The lmms-eval task (adapters/lmms_eval_task.py, the YAMLs of proactivebench/tasks) and
`import-lmms-eval`.

lmms-eval cannot share an environment with the `verifiers` extra (docs/lmms-eval.md), so these
tests skip without it; `.ci/run` runs this file in a second environment with the `lmms-eval`
extra. The rounds are checked against episodes our own loop played (the oracle baseline moves
through several turns); the end-to-end test runs lmms-eval's command line with its
`qwen2_5_vl` wrapper on a tiny checkpoint and compares with `eval --model hf:`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lmms_eval", reason="needs the lmms-eval extra (a separate environment)")
yaml = pytest.importorskip("yaml")

from proactivebench.adapters import lmms_eval_task as task  # noqa: E402
from proactivebench.benchmark.metrics import episode_scores  # noqa: E402
from proactivebench.benchmark.prompting import mcqa_text  # noqa: E402
from proactivebench.benchmark.registry import scenario_names  # noqa: E402
from proactivebench.benchmark.scenarios import View  # noqa: E402
from proactivebench.core.errors import ProactiveBenchError, SettingsError  # noqa: E402
from proactivebench.data.synth import generate  # noqa: E402
from proactivebench.models.base import Decoding  # noqa: E402
from proactivebench.tasks import TASK_DIR  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, env=environ, check=False
    )


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in (run / "results.jsonl").read_text().splitlines()]


@pytest.fixture()
def data_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    generate(data, per_scenario=2, seed=3, split="test")
    monkeypatch.setenv(task.DATA_ENV, str(data))
    monkeypatch.delenv(task.SETTINGS_ENV, raising=False)
    monkeypatch.setattr(task, "_plans", {})
    return data


def _same_image(a: Any, b: Any) -> bool:
    return a.size == b.size and a.mode == b.mode and a.tobytes() == b.tobytes()


def test_rounds_replay_the_episodes_our_loop_plays(data_env: Path, tmp_path: Path) -> None:
    """Each round shows the image and text of that turn of the episode `eval` played with the
    same answers (the oracle's, several turns long), the round after the last says the episode
    ended, and the scores are our line's."""
    run = tmp_path / "oracle"
    done = _cli(
        "proactivebench",
        "eval",
        "--data",
        str(data_env),
        "--model",
        "baseline:oracle",
        "--out",
        str(run),
        "--no-report",
    )
    assert done.returncode == 0, done.stderr
    lines = _lines(run)
    assert max(line["num_turns"] for line in lines) >= 2  # multi-round is exercised
    images = task.plan().images
    for line in lines:
        doc = {"scenario": line["scenario"], "sample_id": line["sample_id"], "answer": "x"}
        answers = [t["answer"] for t in line["trace"]]
        shown = [
            (
                images.image(
                    View(
                        t["image"],
                        tuple(t["crop"]) if t["crop"] else None,
                        t.get("resize_short_edge"),
                    )
                ),
                mcqa_text(t["prompt"], t["options"]),
            )
            for t in line["trace"]
        ]
        assert _same_image(task.doc_to_visual(doc)[0], shown[0][0])
        assert task.doc_to_text(doc) == shown[0][1]
        for k in range(1, len(answers)):
            visuals, text, ended, so_far, _ = task.doc_to_text(
                doc, previous_output=answers[:k], round_idx=k
            )
            assert not ended and so_far == answers[:k]
            assert len(visuals) == 1 and _same_image(visuals[0], shown[k][0])
            assert text == shown[k][1]
        assert task.doc_to_text(doc, previous_output=answers, round_idx=len(answers))[2] is True
        # What lmms-eval 0.7 hands process_results: the str() of the wrapper's tuple.
        entries = task.process_results(doc, [str(tuple(answers))])
        replayed = entries["accuracy"][task.RESULT_KEY]
        for key in ("correct", "num_turns", "end_reason", "proactive_suggestions", "settings"):
            assert replayed.get(key) == line.get(key), key
        assert [t["verdict"] for t in replayed["trace"]] == [t["verdict"] for t in line["trace"]]
        scores = episode_scores(line, fractions=True)
        assert entries["accuracy"]["score"] == scores["accuracy"]
        assert entries["ps_rate"]["score"] == scores["ps_rate"]
    summary = json.loads((run / "summary.json").read_text())["scenarios"]
    for short, score in summary.items():
        entries = [
            task.process_results(
                {"scenario": line["scenario"], "sample_id": line["sample_id"]},
                [tuple(t["answer"] for t in line["trace"])],
            )
            for line in lines
            if line["scenario"] == short
        ]
        assert task.aggregate_accuracy([e["accuracy"] for e in entries]) == pytest.approx(
            score["accuracy"] / 100
        )
        assert task.aggregate_ps_rate([e["ps_rate"] for e in entries]) == pytest.approx(
            score["ps_rate"]
        )


def test_answers_of_reads_every_shape_lmms_eval_hands_over() -> None:
    assert task.answers_of([("A", "B")]) == ["A", "B"]
    assert task.answers_of([["A"]]) == ["A"]
    assert task.answers_of([str(("A", "(B)"))]) == ["A", "(B)"]
    assert task.answers_of(["(B) the cup"]) == ["(B) the cup"]  # one plain answer
    assert task.answers_of([]) == []


def test_settings_come_from_the_environment_and_refuse_what_lmms_eval_cannot_carry(
    data_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert task.settings_from('{"limit": 1, "hint": true}').hint is True
    for refused in ('{"history": true}', '{"icl": 2}', '{"mode": "oeg"}', '{"scenarios": ["QD"]}'):
        with pytest.raises(SettingsError, match=next(iter(json.loads(refused)))):
            task.settings_from(refused)
    with pytest.raises(SettingsError, match="not JSON"):
        task.settings_from("{limit: 1}")
    monkeypatch.setenv(task.SETTINGS_ENV, '{"limit": 1}')
    assert len(task.episode_docs("ROD")) == 1
    monkeypatch.delenv(task.DATA_ENV)
    monkeypatch.setattr(task, "_plans", {})
    with pytest.raises(ProactiveBenchError, match=task.DATA_ENV):
        task.plan()


def test_the_task_files_follow_the_registry() -> None:
    """One subtask per registered scenario, the group naming them all, our decoding."""
    subtasks = {}
    for path in TASK_DIR.glob("proactivebench_*.yaml"):
        config = yaml.safe_load(path.read_text())
        subtasks[config["task"]] = config["dataset_name"]
    assert subtasks == {task.task_name(s): s for s in scenario_names()}
    group = yaml.safe_load((TASK_DIR / "proactivebench.yaml").read_text())
    assert group["group"] == task.GROUP
    assert group["task"] == [task.task_name(s) for s in scenario_names()]
    template = (TASK_DIR / "_default_template_yaml").read_text()
    config = yaml.load(template, Loader=_IgnoreFunctions)
    kwargs = config["generation_kwargs"]
    assert kwargs["max_new_tokens"] == Decoding().max_tokens
    assert kwargs["temperature"] == Decoding().temperature
    # Scoring replays the answers the rounds saw: lmms-eval must not strip <think> blocks.
    assert config["reasoning_tags"] == "none"


class _IgnoreFunctions(yaml.SafeLoader):
    """Reads the template without importing what its `!function` tags name."""


_IgnoreFunctions.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))

# The tiny Qwen2.5-VL's chat template in the family's format: a default system prompt when the
# conversation has none (so lmms-eval's wrapper, which always sends its "You are a helpful
# assistant.", and our `hf:` backend, which sends none, render the same prompt).
QWEN_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: The processor's pixel bounds, given to the wrapper too (its own resize, qwen_vl_utils', then
#: keeps each synthetic image at the size our processor gives it: the same image tokens).
MIN_PIXELS, MAX_PIXELS = 784, 1003520


def _tiny_qwen(out: Path, kind: str) -> Path:
    """A tiny random Qwen2.5-VL whose image features are zero: lmms-eval's wrapper re-encodes
    every image as JPEG (quality 85) and resizes it with qwen_vl_utils before the processor,
    so its pixels differ from what `hf:` sends; with the vision merger's output zeroed the
    answers depend on the prompt and on the number of image tokens only, which must agree.

    `kind` "random": its answers are random bytes that depend on the whole prompt (every episode
    ends after its first turn, unreadable). "A": its layers add nothing to the residual stream
    and the output layer maps the prompt's last token (the newline after `assistant`) to "A"
    and "A" to the end token, so it answers "A" every turn: the first option, often an
    intervention, which moves the episode on (several rounds per episode)."""
    import torch
    import transformers

    from proactivebench.testing.families import build_qwen2_5_vl

    build_qwen2_5_vl(out)
    processor = transformers.AutoProcessor.from_pretrained(out)
    processor.chat_template = QWEN_TEMPLATE
    for part in (processor.image_processor, processor.video_processor):
        part.size = {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}
    processor.save_pretrained(out)
    model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(out)
    merger = [
        m for n, m in model.named_modules() if "merger" in n and isinstance(m, torch.nn.Linear)
    ]
    with torch.no_grad():
        merger[-1].weight.zero_()
        merger[-1].bias.zero_()
        if kind == "A":
            for name, weight in model.named_parameters():
                if "language_model.layers" in name and name.endswith(
                    ("o_proj.weight", "down_proj.weight")
                ):
                    weight.zero_()
            tokens = processor.tokenizer
            newline, letter = tokens.convert_tokens_to_ids(["Ċ", "A"])  # byte-level "\n"
            embed = model.get_input_embeddings().weight
            head = model.get_output_embeddings().weight
            embed[newline], embed[letter] = torch.eye(embed.shape[1])[:2]
            head.zero_()
            head[letter], head[tokens.eos_token_id] = 10 * embed[newline], 10 * embed[letter]
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("lmms-data")
    generate(data, per_scenario=1, seed=3, split="test")
    return data


@pytest.mark.parametrize("kind", ["random", "A"])
def test_lmms_eval_scores_equal_eval_hf_on_a_tiny_checkpoint(
    kind: str, tiny_data: Path, tmp_path: Path
) -> None:
    """lmms-eval's command line with its qwen2_5_vl wrapper (greedy) gives, per scenario, the
    accuracy and ps rate `eval --model hf:` gives on the same checkpoint and data, the same
    answers, and `import-lmms-eval` turns its samples logs into a run with `eval`'s summary.

    Both sides as the wrapper runs: bfloat16 (it loads every checkpoint so) and one request per
    `generate` (its batch size 1; a padded batch rounds differently in bfloat16)."""
    data = tiny_data
    checkpoint = _tiny_qwen(tmp_path / "qwen", kind)
    ours = tmp_path / "ours"
    done = _cli(
        "proactivebench",
        "eval",
        "--data",
        str(data),
        "--model",
        f"hf:{checkpoint}",
        "--model-option",
        "dtype=bfloat16",
        "--model-option",
        "device=cpu",
        "--model-option",
        "max_batch=1",
        "--out",
        str(ours),
        "--no-report",
        "--no-cache",
    )
    assert done.returncode == 0, done.stderr
    turns = [line["num_turns"] for line in _lines(ours)]
    assert max(turns) == 1 if kind == "random" else max(turns) >= 3  # the checkpoint works
    logs = tmp_path / "lmms"
    model_args = (
        f"pretrained={checkpoint},device=cpu,device_map=cpu,"
        f"min_pixels={MIN_PIXELS},max_pixels={MAX_PIXELS}"
    )
    done = _cli(
        "lmms_eval",
        "--model",
        "qwen2_5_vl",
        "--model_args",
        model_args,
        "--include_path",
        str(TASK_DIR),
        "--tasks",
        "proactivebench",
        "--batch_size",
        "1",
        "--log_samples",
        "--output_path",
        str(logs),
        env={task.DATA_ENV: str(data), task.SETTINGS_ENV: ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next(logs.rglob("*_results.json")).read_text())["results"]
    summary = json.loads((ours / "summary.json").read_text())["scenarios"]
    for short, score in summary.items():
        theirs = results[task.task_name(short)]
        assert theirs["accuracy,none"] == pytest.approx(score["accuracy"] / 100), short
        assert theirs["ps_rate,none"] == pytest.approx(score["ps_rate"]), short
    imported = tmp_path / "imported"
    samples = sorted(str(p) for p in logs.rglob("*_samples_*.jsonl"))
    done = _cli(
        "proactivebench",
        "import-lmms-eval",
        *samples,
        "--out",
        str(imported),
        "--model",
        f"hf:{checkpoint}",
    )
    assert done.returncode == 0, done.stderr
    answers = {
        (x["scenario"], x["sample_id"]): [t["answer"] for t in x["trace"]] for x in _lines(ours)
    }
    assert {
        (x["scenario"], x["sample_id"]): [t["answer"] for t in x["trace"]] for x in _lines(imported)
    } == answers
    again = json.loads((imported / "summary.json").read_text())["scenarios"]
    assert {s: (v["n"], v["accuracy"], v["ps_rate"]) for s, v in again.items()} == {
        s: (v["n"], v["accuracy"], v["ps_rate"]) for s, v in summary.items()
    }
