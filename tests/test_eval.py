"""End-to-end evaluation: baselines, replay, results files, resume, episode errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.benchmark.scenarios.base import best_move
from proactivebench.jobs.evaluate import aevaluate, evaluate
from proactivebench.models import load_model
from proactivebench.models.base import ChatRequest, Completion, Model
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings

#: Fewest turns the protocol allows for a correct answer: ROD hides the object on turn 1.
MIN_TURNS = {s: 2 if s == "ROD" else 1 for s in paper_scenarios()}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def lines(run: Path) -> list[dict]:
    return read_results(run / "results.jsonl")


def test_oracle_is_perfect_with_fewest_turns(data: Path, tmp_path: Path) -> None:
    outcome = evaluate(data, load_model("baseline:oracle"), tmp_path)
    results = lines(tmp_path)
    assert len(results) == 15
    for r in results:
        assert r["correct"] is True
        assert r["num_turns"] == MIN_TURNS[r["scenario"]]
        assert r["proactive_suggestions"] == r["num_turns"] - 1
    for short, score in outcome.summary.scenarios.items():
        assert score.accuracy == 100.0 and score.ps_rate == MIN_TURNS[short] - 1


#: Turns the proactive baseline takes on the records of `full_dataset`, computed by hand from
#: the rules: it intervenes while a correct intervention is offered and a turn remains after it.
#: COCO up_right: one horizontal and one vertical move reach their limits, so turn 3 has no
#: move left; zoom: granularity 2 + 1 = 3 steps. CIT: wait, rewind, wait, then the category.
PROACTIVE_TURNS = {
    ("ROD", 0): 4,
    ("ROD", 1): 4,
    ("VSOD", 6): 3,
    ("VSOD", 9): 3,
    ("MVP-N", 5): 3,
    ("MVP-N", 8): 3,
    ("IN-C", 2): 5,
    ("IN-C", 3): 5,
    ("QD", 0): 3,
    ("QD", 2): 3,
    ("CIT", 0): 4,
    ("CIT", 1): 4,
    ("COCO", 0): 2,
    ("COCO", 1): 3,
    ("COCO", 2): 3,
}


def test_proactive_baseline_is_perfect_with_most_turns(data: Path, tmp_path: Path) -> None:
    outcome = evaluate(data, load_model("baseline:proactive"), tmp_path)
    results = lines(tmp_path)
    assert {(r["scenario"], r["sample_id"]): r["num_turns"] for r in results} == PROACTIVE_TURNS
    assert all(r["correct"] for r in results)
    for r in results:  # every turn but the last asked for an intervention
        assert [t["verdict"] for t in r["trace"]] == ["proactive"] * (r["num_turns"] - 1) + [
            "correct"
        ]
    assert all(s.accuracy == 100.0 for s in outcome.summary.scenarios.values())


@pytest.mark.parametrize("mode", [{"hint": True}, {"reference": True}, {"random_actions": True}])
def test_oracle_is_perfect_in_every_mode(data: Path, tmp_path: Path, mode: dict) -> None:
    outcome = evaluate(data, load_model("baseline:oracle"), tmp_path, EvalSettings(**mode))
    assert all(s.accuracy == 100.0 for s in outcome.summary.scenarios.values())
    if mode.get("reference"):
        assert all(r["num_turns"] == 1 for r in lines(tmp_path))


def test_abstain_scores_zero(data: Path, tmp_path: Path) -> None:
    outcome = evaluate(data, load_model("baseline:abstain"), tmp_path)
    assert all(s.accuracy == 0.0 and s.ps_rate == 0.0 for s in outcome.summary.scenarios.values())
    assert all(r["trace"][0]["verdict"] == "wrong" for r in lines(tmp_path))


def test_replay_reproduces_a_hand_made_script(data: Path, tmp_path: Path) -> None:
    script = tmp_path / "answers.jsonl"
    rows = [
        {"scenario": "ROD", "sample_id": 0, "answers": ["B", "cup"], "note": "ignored"},
        {"scenario": "ROD", "sample_id": 1, "answers": ["cup"]},
        {"scenario": "VSOD", "sample_id": 6, "answers": ["Rewind the video.", "A", "H"]},
        {"scenario": "MVP-N", "sample_id": 5, "answers": ["A", "A", "A"]},
        {"scenario": "IN-C", "sample_id": 2, "answers": ["Deblur the image.", "banana"]},
    ]
    script.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    outcome = evaluate(data, load_model(f"replay:{script}"), run)
    got = {(r["scenario"], r["sample_id"]): (r["correct"], r["num_turns"]) for r in lines(run)}
    assert got[("ROD", 0)] == (True, 2)
    assert got[("ROD", 1)] == (False, 1)
    assert got[("VSOD", 6)] == (True, 3)
    assert got[("VSOD", 9)] == (False, 1)  # not in the script: "" is a mismatch
    assert got[("MVP-N", 5)] == (False, 3)
    assert got[("IN-C", 2)] == (True, 2)
    scores = {k: (v.accuracy, v.ps_rate) for k, v in outcome.summary.scenarios.items()}
    assert scores == {
        "ROD": (50.0, 0.5),
        "VSOD": (50.0, 1.0),
        "MVP-N": (0.0, 1.0),
        "IN-C": (50.0, 0.5),
        "QD": (0.0, 0.0),
        "CIT": (0.0, 0.0),
        "COCO": (0.0, 0.0),
    }
    average = outcome.summary.average
    assert average is not None and average.accuracy == pytest.approx(150 / 7)
    rod0 = next(r for r in lines(run) if (r["scenario"], r["sample_id"]) == ("ROD", 0))
    first, second = rod0["trace"]
    assert first["image"] == "ROD/0/2.png" and second["image"] == "ROD/0/3.png"
    assert first["answer"] == "B" and first["verdict"] == "proactive"
    assert first["action"] == "RIGHT" and first["crop"] is None
    assert first["prompt"] == "What object is behind the blocks?"
    assert first["options"][:2] == ["Move the blocks to the left.", "Move the blocks to the right."]
    assert second["verdict"] == "correct"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            b'{"scenario": "ROD", "sample_id": 0, "answers": ["B"]}\n'
            b'{"scenario": "ROD", "sample_id": 1, "answers": ["\xff"]}\n',
            # 49 characters before it: the offset counts from 0
            "answers.jsonl:2: not UTF-8 text (byte 0xff at 49)",
        ),
        (
            b'{"scenario": "ROD", "sample_id": 0, "answers": ["B"',
            # the line's 51 characters, then the end where a ',' was due: column 52
            "answers.jsonl:1: invalid JSON: Expecting ',' delimiter: column 52",
        ),
    ],
    ids=["not-utf-8", "torn"],
)
def test_a_replay_file_that_cannot_be_read_is_one_clear_error(
    data: Path, tmp_path: Path, capsys, content: bytes, said: str
) -> None:
    """A replay script is read by the rule of the record files: the line and the byte that is
    not UTF-8 (no traceback), the column where its JSON breaks."""
    script = tmp_path / "answers.jsonl"
    script.write_bytes(content)
    args = eval_args(data, tmp_path / "run")
    args[args.index("baseline:oracle")] = f"replay:{script}"
    code, text = run_cli(args, capsys)
    assert code == 1 and said in text and "Traceback" not in text, text


def test_a_fifo_as_the_replay_file_is_refused_not_waited_on(data: Path, tmp_path: Path) -> None:
    """A FIFO in the script's place is refused at once: reading it would wait for a writer
    that never comes. In a process of its own, so that a regression fails instead of hanging."""
    fifo = tmp_path / "answers.jsonl"
    os.mkfifo(fifo)
    args = eval_args(data, tmp_path / "run")
    args[args.index("baseline:oracle")] = f"replay:{fifo}"
    env = dict(os.environ, PROACTIVEBENCH_CACHE=str(tmp_path / "cache"))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "proactivebench", *args],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("eval waits for ever on a FIFO given as replay:FILE")
    assert done.returncode == 1, done.stderr
    assert "answers.jsonl: cannot read replay file: not a regular file" in done.stderr


def test_coco_trace_records_the_crop(data: Path, tmp_path: Path) -> None:
    evaluate(data, load_model("baseline:oracle"), tmp_path, EvalSettings(scenarios=("COCO",)))
    crops = {r["sample_id"]: r["trace"][0]["crop"] for r in lines(tmp_path)}
    assert crops[0] == [49.5, 40.0, 120.0, 90.0]
    assert crops[2] == [49.5, 35.75, 190.5, 134.25]


def test_cli_eval_writes_results_summary_and_table(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    code, text = run_cli(eval_args(data, run, "--scenarios", "ROD,COCO", "--limit", "1"), capsys)
    assert code == 0
    assert "ROD" in text and "COCO" in text and "average" in text and "100.0" in text
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scenarios"]["ROD"] == {
        "n": 1,
        "accuracy": 100.0,
        "ps_rate": 1.0,
        "errors": 0,
        # The action distribution (protocol §9): the oracle moves once, then names the category.
        "choice_category": 50.0,
        "choice_proactive": 50.0,
        "choice_abstain": 0.0,
        "choice_unreadable": 0.0,
        "first_choice_category": 0.0,
        "first_choice_proactive": 100.0,
        "first_choice_abstain": 0.0,
        "first_choice_unreadable": 0.0,
        "blind_asking": 0.0,
    }
    assert summary["scenarios"]["COCO"]["n"] == 1 and "VSOD" not in summary["scenarios"]


def test_rerun_resumes_without_repeating(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--limit", "1"), capsys)[0] == 0
    first = (run / "results.jsonl").read_text()
    # A crash mid-write leaves a torn last line: it is dropped, not glued to the next record.
    with (run / "results.jsonl").open("a") as f:
        f.write('{"scenario": "ROD", "sam')
    assert run_cli(eval_args(data, run), capsys)[0] == 0
    results = lines(run)
    keys = [(r["scenario"], r["sample_id"]) for r in results]
    assert len(keys) == len(set(keys)) == 15
    assert (run / "results.jsonl").read_text().startswith(first)


def test_run_dir_of_other_settings_is_refused(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--limit", "1"), capsys)[0] == 0
    code, text = run_cli(eval_args(data, run, "--limit", "1", "--hint"), capsys)
    assert code != 0 and "other settings" in text and "settings.hint: false → true" in text


class Flaky(Model):
    """Fails on every ROD request: a backend whose retries are exhausted."""

    name = "flaky"
    sees_answer_key = True  # a test double that answers right
    needs_images = False

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        obs = requests[0].observation
        if obs.scenario == "ROD":
            raise ConnectionError("server unreachable")
        return [Completion(obs.correct_categories[0])]


def test_a_failing_model_call_is_an_episode_error_not_a_wrong_answer(data, tmp_path) -> None:
    outcome = evaluate(data, Flaky(), tmp_path)
    rod = [r for r in lines(tmp_path) if r["scenario"] == "ROD"]
    assert all("server unreachable" in r["error"] and "correct" not in r for r in rod)
    assert outcome.summary.scenarios["ROD"].n == 0 and outcome.summary.scenarios["ROD"].errors == 2
    assert outcome.summary.scenarios["VSOD"].accuracy == 100.0


def test_random_baselines_are_seeded(data: Path, tmp_path: Path) -> None:
    def answers(seed: int, run: str) -> list:
        evaluate(
            data,
            load_model("baseline:random", seed=seed),
            tmp_path / run,
            EvalSettings(seed=seed),
            concurrency=3,
        )
        return sorted(json.dumps(r, sort_keys=True) for r in lines(tmp_path / run))

    assert answers(1, "a") == answers(1, "b")
    assert answers(1, "a") != answers(2, "c")


class Looks(Model):
    """Decodes every image it is shown, as a real backend does, then answers like an oracle."""

    name = "looks"
    sees_answer_key = True  # a test double that answers right
    needs_images = True

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        assert self.images is not None
        obs = requests[0].observation
        for part in requests[0].messages[0]["content"]:
            if part["type"] == "image":
                self.images.image(part["view"])
        return [Completion((obs.correct_categories or obs.correct_actions)[0])]


def test_an_undecodable_image_is_an_error_on_its_episode(tmp_path: Path) -> None:
    import io

    from PIL import Image

    data = full_dataset(tmp_path / "data")
    whole = io.BytesIO()
    Image.new("RGB", (64, 64), (9, 99, 199)).save(whole, format="PNG")
    # Its header passes the check before the run; its pixels are cut off.
    (data / "QD/2/0000.png").write_bytes(whole.getvalue()[:-40])
    outcome = evaluate(data, Looks(), tmp_path / "run")
    qd = {r["sample_id"]: r for r in lines(tmp_path / "run") if r["scenario"] == "QD"}
    assert "cannot decode image QD/2/0000.png" in qd[2]["error"]
    assert qd[0]["correct"] is True
    assert outcome.summary.scenarios["QD"].errors == 1 and outcome.summary.scenarios["QD"].n == 1


def test_model_options_are_typed_and_checked(data: Path, tmp_path: Path, capsys) -> None:
    from proactivebench.cli.options import parse_model_options

    assert parse_model_options(("max_batch=16", "dtype=bfloat16", "flag=true", "a-b=1.5")) == {
        "max_batch": 16,
        "dtype": "bfloat16",
        "flag": True,
        "a_b": 1.5,
    }
    code, text = run_cli(eval_args(data, tmp_path / "r", "--model-option", "x=1"), capsys)
    assert code != 0 and "take no options" in text
    code, text = run_cli(eval_args(data, tmp_path / "r", "--model-option", "novalue"), capsys)
    assert code != 0 and "KEY=VALUE" in text
    # The seed is the run's (--seed), not a backend option: one usage error, no traceback
    # (load_model was handed it twice), for the model and the judge alike.
    said = "is not a backend option: the run's --seed seeds the model and the judge"
    for flag, extra in (("--model-option", []), ("--judge-option", ["--mode", "oeg"])):
        args = eval_args(data, tmp_path / "r", flag, "seed=5", *extra)
        args[args.index("baseline:oracle")] = "python:json:dumps"
        if flag == "--judge-option":
            args += ["--judge", "python:json:dumps"]
        code, text = run_cli(args, capsys)
        assert code == 2 and f"Invalid value for {flag}: seed {said}" in text, text
        assert "Traceback" not in text


def test_a_full_disk_ends_the_run_with_a_clear_error(
    data: Path, tmp_path: Path, monkeypatch
) -> None:
    import errno

    from proactivebench.core.errors import ProactiveBenchError

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("os.fsync", no_space)
    with pytest.raises(ProactiveBenchError, match=r"cannot write .*No space left"):
        evaluate(data, load_model("baseline:oracle"), tmp_path)


class Recovering(Model):
    """Fails on ROD until `healthy` is set: a server that was down, then came back."""

    name = "recovering"
    sees_answer_key = True  # a test double that answers right
    needs_images = False
    healthy = False

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        obs = requests[0].observation
        if obs.scenario == "ROD" and not self.healthy:
            raise ConnectionError("server down")
        return [Completion(best_move(obs))]


def test_a_rerun_retries_the_episodes_that_ended_in_an_error(data: Path, tmp_path: Path) -> None:
    model = Recovering()
    first = evaluate(data, model, tmp_path)
    assert first.errors == {"ConnectionError: server down": 2}
    model.healthy = True
    second = evaluate(data, model, tmp_path)
    assert second.resumed == 13 and not second.errors
    assert second.summary.scenarios["ROD"].accuracy == 100.0
    assert second.summary.scenarios["ROD"].errors == 0
    assert len(lines(tmp_path)) == 17  # the two error lines stay, superseded


# ----- the engine's contract ----------------------------------------------------------------------


def test_result_lines_say_why_episodes_ended_and_what_was_right(data: Path, tmp_path: Path) -> None:
    evaluate(data, load_model("baseline:abstain"), tmp_path / "abstain")
    for line in lines(tmp_path / "abstain"):
        assert line["end_reason"] == "abstained" and line["correct"] is False
    evaluate(data, load_model("baseline:oracle"), tmp_path / "oracle")
    answers = {("ROD", 0): "cup", ("VSOD", 6): "dog", ("COCO", 0): "apple"}  # handmade records
    got = {(r["scenario"], r["sample_id"]): r for r in lines(tmp_path / "oracle")}
    for key, category in answers.items():
        assert got[key]["correct_category"] == category and got[key]["end_reason"] == "correct"


def test_a_bug_in_a_scenario_ends_the_run_and_is_not_recorded(
    data: Path, tmp_path: Path, monkeypatch
) -> None:
    from proactivebench.benchmark.scenarios.rod import RODEpisode

    def broken(self, action: str) -> bool:
        raise ZeroDivisionError("a bug in the ROD rules")

    monkeypatch.setattr(RODEpisode, "_transition", broken)
    with pytest.raises(ZeroDivisionError, match="a bug in the ROD rules"):
        evaluate(data, load_model("baseline:oracle"), tmp_path, EvalSettings(scenarios=("ROD",)))
    assert not any("error" in r for r in lines(tmp_path))  # not blamed on the model


def test_evaluate_runs_inside_a_running_event_loop(data: Path, tmp_path: Path) -> None:
    async def notebook_cell() -> tuple[float, float]:
        plain = evaluate(data, load_model("baseline:oracle"), tmp_path / "sync")
        awaited = await aevaluate(data, load_model("baseline:oracle"), tmp_path / "async")
        return plain.summary.average.accuracy, awaited.summary.average.accuracy  # type: ignore[union-attr]

    assert asyncio.run(notebook_cell()) == (100.0, 100.0)


def test_evaluate_leaves_the_callers_cache_open(data: Path, tmp_path: Path) -> None:
    from proactivebench.models.cache import ResponseCache

    class Echo(Model):
        name = "echo"

        async def generate(self, requests):
            return [Completion("A", usage={"prompt_tokens": 3}, latency_s=0.25) for _ in requests]

    cache = ResponseCache(tmp_path / "cache.sqlite")
    evaluate(data, Echo(), tmp_path / "one", EvalSettings(scenarios=("ROD",)), cache=cache)
    evaluate(data, Echo(), tmp_path / "two", EvalSettings(scenarios=("ROD",)), cache=cache)
    turns = [t for r in lines(tmp_path / "one") for t in r["trace"]]
    assert all(t["usage"] == {"prompt_tokens": 3} for t in turns)
    asked = [t for t in turns if not t.get("cached")]  # the two ROD records ask alike
    assert asked and all(t["latency_s"] == 0.25 for t in asked)
    assert all(t["cached"] for r in lines(tmp_path / "two") for t in r["trace"])
    cache.close()
