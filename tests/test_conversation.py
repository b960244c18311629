"""The conversation layer: the exact messages each request carries, built here independently
from docs/protocol.md §3, §7 and the strings of protocol.json (not from `prompting.py`)."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from handmade import ABSTAIN, CATS, rod, write_dataset
from proactivebench.models.base import ChatRequest, Completion, Model
from proactivebench.runner import EvalSettings, evaluate, read_results
from proactivebench.scenarios import View

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
    from proactivebench.results import RunMismatchError

    evaluate(one_rod, Scripted(["A", "cup"]), tmp_path / "run")
    with pytest.raises(RunMismatchError, match=r"settings\.history: null → true"):
        evaluate(one_rod, Scripted(["A", "cup"]), tmp_path / "run", EvalSettings(history=True))
