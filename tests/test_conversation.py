"""The conversation layer: the exact messages each request carries, built here independently
from docs/protocol.md §3, §7 and the strings of protocol.json (not from
`benchmark/prompting.py`)."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from handmade import ABSTAIN, CATS, rod, write_dataset
from proactivebench.benchmark.scenarios import View
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models.base import ChatRequest, Completion, Model
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings

PROTOCOL = json.loads(
    (Path(__file__).parents[1] / "src/proactivebench/spec/protocol.json").read_text()
)
ROD_OPTIONS = ["Move the blocks to the left.", "Move the blocks to the right.", *ABSTAIN]


def mcqa(prompt: str, options: Sequence[str]) -> str:
    """The MCQA text of docs/protocol.md §3, from the raw strings."""
    strings = PROTOCOL["mcqa"]
    lines = "".join(f"{chr(65 + i)}. {option}\n" for i, option in enumerate(options))
    return prompt + strings["options_header"] + lines + strings["short_answer_suffix"]


def user(image: str, text: str, resize: int | None = None) -> dict[str, Any]:
    view = View(image, None, resize)
    return {
        "role": "user",
        "content": [{"type": "image", "view": view}, {"type": "text", "text": text}],
    }


class Scripted(Model):
    """Answers from a script per turn and keeps a copy of every request's messages."""

    name = "scripted"
    needs_images = False

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.sent: list[list[dict[str, Any]]] = []

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for request in requests:
            self.sent.append(copy.deepcopy(list(request.messages)))
            out.append(Completion(self.answers[len(self.sent) - 1]))
        return out


@pytest.fixture
def one_rod(tmp_path: Path) -> Path:
    # first_image 2 of 4 frames: LEFT shows frame 1, RIGHT frame 2 again.
    return write_dataset(tmp_path / "data", {"ROD": [rod(0)]})


def test_history_episode_of_three_turns_sends_every_earlier_turn(
    one_rod: Path, tmp_path: Path
) -> None:
    model = Scripted(["A", "B. Move the blocks to the right.", "C"])  # left, right, abstain
    evaluate(one_rod, model, tmp_path / "run", EvalSettings(history=True))
    question = mcqa(rod()["prompt"], [*ROD_OPTIONS, *CATS])
    turn1 = user("ROD/0/2.png", question)
    turn2 = user("ROD/0/1.png", question)
    turn3 = user("ROD/0/2.png", question)
    assert model.sent == [
        [turn1],
        [turn1, {"role": "assistant", "content": "A"}, turn2],
        [
            turn1,
            {"role": "assistant", "content": "A"},
            turn2,
            {"role": "assistant", "content": "B. Move the blocks to the right."},
            turn3,
        ],
    ]
    (line,) = read_results(tmp_path / "run" / "results.jsonl")
    assert [t["verdict"] for t in line["trace"]] == ["proactive", "proactive", "wrong"]
    assert line["end_reason"] == "abstained" and line["settings"]["history"] is True


def test_without_history_each_turn_is_sent_alone(one_rod: Path, tmp_path: Path) -> None:
    model = Scripted(["A", "B", "cup"])
    evaluate(one_rod, model, tmp_path / "run")
    assert [len(messages) for messages in model.sent] == [1, 1, 1]
    assert model.sent[1] == [user("ROD/0/1.png", mcqa(rod()["prompt"], [*ROD_OPTIONS, *CATS]))]
    (line,) = read_results(tmp_path / "run" / "results.jsonl")
    assert line["correct"] is True and "history" not in line["settings"]


def test_resize_short_edge_reaches_every_view(one_rod: Path, tmp_path: Path) -> None:
    model = Scripted(["A", "cup"])
    evaluate(one_rod, model, tmp_path / "run", EvalSettings(history=True, resize_short_edge=224))
    question = mcqa(rod()["prompt"], [*ROD_OPTIONS, *CATS])
    assert model.sent[1] == [
        user("ROD/0/2.png", question, 224),
        {"role": "assistant", "content": "A"},
        user("ROD/0/1.png", question, 224),
    ]
    trace = read_results(tmp_path / "run" / "results.jsonl")[0]["trace"]
    assert all(turn["resize_short_edge"] == 224 for turn in trace)


def test_resuming_with_other_conversation_settings_is_refused(
    one_rod: Path, tmp_path: Path
) -> None:
    from proactivebench.core.errors import RunMismatchError

    evaluate(one_rod, Scripted(["A", "cup"]), tmp_path / "run")
    with pytest.raises(RunMismatchError, match=r"settings\.history: null → true"):
        evaluate(one_rod, Scripted(["A", "cup"]), tmp_path / "run", EvalSettings(history=True))


# ----- in-context examples ------------------------------------------------------------------------


def demo_pair(image: str, question: str, answer: str, size: int) -> list[dict[str, Any]]:
    return [user(image, question, size), {"role": "assistant", "content": answer}]


@pytest.mark.parametrize("cot", [False, True])
def test_icl_two_rod_demonstrations_then_the_episode(tmp_path: Path, cot: bool) -> None:
    # Demonstration records offer a single move, so the "random correct move" of ROD is known.
    only_left = ["Move the blocks to the left.", "I cannot answer."]
    data = write_dataset(
        tmp_path / "data",
        {"ROD": [rod(0), rod(1, options=only_left), rod(2, options=only_left, answer="dog")]},
    )
    model = Scripted(["A"])  # the episode's own first answer: move left (then "" ends it)
    run = tmp_path / "run"
    evaluate(data, model, run, EvalSettings(scenarios=("ROD",), icl=2, cot=cot, limit=1))
    demo_question = mcqa(rod()["prompt"], [*only_left, *CATS])
    # Answers are the options' texts; with CoT the move is "<CoT prompt> <letter>. <option>".
    move = "Move the blocks to the left."
    if cot:
        move = f"{PROTOCOL['scenarios']['ROD']['cot_prompt']} A. {move}"
    size = PROTOCOL["resize_short_edge"]["icl_ROD"]  # 512
    prefix = [
        # Sample 1: frame 2, LEFT shows frame 1, where the category is answered.
        *demo_pair("ROD/1/2.png", demo_question, move, size),
        *demo_pair("ROD/1/1.png", demo_question, "cup", size),
        *demo_pair("ROD/2/2.png", demo_question, move, size),
        *demo_pair("ROD/2/1.png", demo_question, "dog", size),
    ]
    episode_question = mcqa(rod()["prompt"], [*ROD_OPTIONS, *CATS])
    assert model.sent[0] == [*prefix, user("ROD/0/2.png", episode_question)]
    (line,) = read_results(run / "results.jsonl")
    assert [d["sample_id"] for d in line["demonstrations"]] == [1, 2]
    assert line["demonstrations"][0]["turns"][1]["answer"] == "cup"
    assert line["settings"]["icl"] == 2 and line["settings"].get("cot", False) is cot


def test_icl_reduced_mvpn_keeps_first_and_last_turn(tmp_path: Path) -> None:
    from handmade import mvpn

    data = write_dataset(tmp_path / "data", {"MVP-N": [mvpn(5), mvpn(8), mvpn(12)]})
    model = Scripted(["D"])  # apple at once
    settings = EvalSettings(scenarios=("MVP-N",), icl=2, icl_reduced=True, limit=1)
    evaluate(data, model, tmp_path / "run", settings)
    question = mcqa(mvpn()["prompt"], [*mvpn()["options"], *CATS])
    size = PROTOCOL["resize_short_edge"]["icl_MVP-N"]  # 112
    # Each demonstration rotates on turns 1 and 2 (views 7, then 3) and answers on the last,
    # informative view (9); reduced keeps the first turn and the last.
    expected = []
    for sample in (8, 12):
        expected += demo_pair(f"MVP-N/{sample}/0_0007.png", question, "Rotate the object.", size)
        expected += demo_pair(f"MVP-N/{sample}/1_0009.png", question, "apple", size)
    assert model.sent[0] == [*expected, user("MVP-N/5/0_0007.png", question)]
    assert read_results(tmp_path / "run" / "results.jsonl")[0]["correct"] is True


def test_icl_settings_that_cannot_go_together_are_refused() -> None:
    from proactivebench.core.errors import ProactiveBenchError

    with pytest.raises(ProactiveBenchError, match="add --icl K"):
        EvalSettings(cot=True)
    with pytest.raises(ProactiveBenchError, match="reference mode"):
        EvalSettings(icl=2, reference=True)


def test_lenient_extraction_reads_decorated_answers_and_says_how(
    one_rod: Path, tmp_path: Path
) -> None:
    answers = ["<think>blocks hide it</think> (A)", "**cup**"]
    evaluate(one_rod, Scripted(answers), tmp_path / "strict")
    (strict,) = read_results(tmp_path / "strict" / "results.jsonl")
    assert strict["end_reason"] == "unreadable" and strict["num_turns"] == 1
    settings = EvalSettings(answer_extraction="lenient")
    evaluate(one_rod, Scripted(answers), tmp_path / "lenient", settings)
    (lenient,) = read_results(tmp_path / "lenient" / "results.jsonl")
    assert lenient["correct"] is True and lenient["settings"]["answer_extraction"] == "lenient"
    assert [(t["answer"], t["read_as"]) for t in lenient["trace"]] == [
        ("<think>blocks hide it</think> (A)", "A."),
        ("**cup**", "cup"),
    ]


def test_every_request_can_be_rebuilt_from_its_result_line(tmp_path: Path) -> None:
    from handmade import mvpn
    from proactivebench.benchmark.prompting import request_messages

    data = write_dataset(tmp_path / "data", {"MVP-N": [mvpn(5), mvpn(8), mvpn(12)]})
    model = Scripted(["A", "B. Rotate the object.", "D"] * 3)
    settings = EvalSettings(history=True, icl=2, cot=True, option_order="shuffled")
    evaluate(data, model, tmp_path / "run", settings, concurrency=1)
    rebuilt = [
        request_messages(line, turn)
        for line in read_results(tmp_path / "run" / "results.jsonl")
        for turn in range(1, line["num_turns"] + 1)
    ]
    assert rebuilt == model.sent and len(rebuilt) > 3


def test_demonstration_images_are_checked_before_the_run(tmp_path: Path) -> None:
    from proactivebench.core.errors import DataErrors

    data = write_dataset(tmp_path / "data", {"ROD": [rod(0), rod(1), rod(2)]})
    (data / "ROD/2/1.png").unlink()  # only a demonstration (sample 2) could show it
    settings = EvalSettings(limit=1)  # plays sample 0 alone
    evaluate(data, Scripted(["A", "cup"]), tmp_path / "plain", settings)
    with pytest.raises(DataErrors, match=r"image not found: ROD/2/1\.png"):
        evaluate(data, Scripted(["A", "cup"]), tmp_path / "icl", EvalSettings(limit=1, icl=2))


def test_icl_asking_more_demonstrations_than_the_data_holds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clirun import eval_args, run_cli
    from handmade import vsod
    from proactivebench.core.errors import ProactiveBenchError

    data = write_dataset(
        tmp_path / "data", {"ROD": [rod(0), rod(1), rod(2)], "VSOD": [vsod(6), vsod(9)]}
    )
    # Each episode's own sample is never its demonstration: ROD offers 2, VSOD 1.
    with pytest.raises(ProactiveBenchError, match=r"VSOD: 1\).*pass --icl 1 or fewer"):
        evaluate(data, Scripted(["A"]), tmp_path / "api", EvalSettings(icl=2))
    assert not (tmp_path / "api").exists()
    code, out = run_cli(eval_args(data, tmp_path / "cli", "--icl", "50"), capsys)
    assert code == 1 and "Traceback" not in out
    assert "--icl 50" in out and "ROD: 2, VSOD: 1" in out and "--icl 1 or fewer" in out
    assert not (tmp_path / "cli" / "run.json").exists()
    # As many as there are is fine, for the scenarios played.
    evaluate(data, Scripted(["A"]), tmp_path / "rod", EvalSettings(scenarios=("ROD",), icl=2))


def test_demonstrations_show_what_their_answer_does_under_random_actions(tmp_path: Path) -> None:
    # The ablation draws the episode's moves at random; a demonstration is a correct example
    # and its next frame is the one its answer leads to.
    data = write_dataset(tmp_path / "data", {"ROD": [rod(i) for i in range(12)]})
    settings = EvalSettings(scenarios=("ROD",), icl=11, random_actions=True, seed=1, limit=1)
    evaluate(data, Scripted(["A"]), tmp_path / "run", settings)
    (line,) = read_results(tmp_path / "run" / "results.jsonl")
    delta = {"Move the blocks to the left.": -1, "Move the blocks to the right.": 1}
    moves = set()
    for demo in line["demonstrations"]:
        first, second = demo["turns"]
        moves.add(first["answer"])
        frame = (2 + delta[first["answer"]]) % 4
        assert second["image"] == f"ROD/{demo['sample_id']}/{frame}.png"
        assert second["answer"] == "cup"
    assert len(moves) == 2  # both moves drawn, each shown doing what it says


def test_a_one_frame_rod_demonstration_moves_then_names_the_category(tmp_path: Path) -> None:
    one_frame = rod(1, first_image=0, num_images=1)
    data = write_dataset(tmp_path / "data", {"ROD": [rod(0), one_frame]})
    evaluate(data, Scripted(["A"]), tmp_path / "run", EvalSettings(icl=1, limit=1))
    (line,) = read_results(tmp_path / "run" / "results.jsonl")
    (demo,) = line["demonstrations"]
    # The move wraps around to the one frame, where the category is answered.
    first, second = demo["turns"]
    assert first["image"] == second["image"] == "ROD/1/0.png"
    assert first["answer"] in ROD_OPTIONS[:2] and second["answer"] == "cup"
