"""Answer reading (docs/protocol.md §4) on hand-worked examples."""

import pytest

from handmade import record
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios.actions import action_of, is_abstention
from proactivebench.benchmark.scenarios.answers import (
    lenient_answer,
    letter_of,
    normalize_full,
    read_choice,
    read_group,
    strip_reasoning,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("B. Move the block", "movetheblock"),
        ("  Dog ", "dog"),
        ("A. B. cup", "cup"),  # up to the *last* capital-letter-dot
        ("The answer is C.  Banana", "banana"),
        ("hot dog", "hotdog"),
        ("x.\nA. dog", "x.\na.dog"),  # the prefix rule reads the first line only
        ("a. dog", "a.dog"),  # lowercase letters are not a prefix
        ("", ""),
    ],
)
def test_normalize_full(text: str, expected: str) -> None:
    assert normalize_full(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("B", "b"), ("b. dog", "b"), (" C .", "c"), ("AB", None), ("", None), ("dog", None)],
)
def test_letter_of(text: str, expected: str | None) -> None:
    assert letter_of(text) == expected


ACTIONS = ["Move the blocks to the left.", "Move the blocks to the right.", "I cannot answer."]
CATS = ["apple", "banana", "cup"]


def test_full_text_beats_letters() -> None:
    r = read_group("Move the blocks to the right.", ACTIONS, ACTIONS[:2])
    assert (r.verdict, r.chosen) == ("correct", ACTIONS[1])
    assert read_group("i cannot answer.", ACTIONS, ACTIONS[:2]).verdict == "wrong"


def test_letters_are_shifted_past_the_action_options() -> None:
    # Shown list: A, B, C = actions; D, E, F = categories.
    assert read_group("E", CATS, ["banana"], shift=3).verdict == "correct"
    assert read_group("D.", CATS, ["banana"], shift=3).verdict == "wrong"
    assert read_group("A", CATS, ["banana"], shift=3).verdict == "mismatch"
    assert read_group("A", ACTIONS, ACTIONS[:2]).chosen == ACTIONS[0]
    assert read_group("C", ACTIONS, ACTIONS[:2]).verdict == "wrong"


def test_unknown_text_is_a_mismatch() -> None:
    assert read_group("a pineapple", CATS, ["cup"]).verdict == "mismatch"
    assert read_group("", CATS, ["cup"]).verdict == "mismatch"


def test_action_keywords() -> None:
    assert action_of("Move the blocks to the left.", ("LEFT", "RIGHT")) == ("LEFT", "")
    # Two keywords of one action ("details", "drawing") give that action.
    assert action_of("Add more details to the drawing.", ("DETAILS",))[0] == "DETAILS"
    # Keywords outside the action space are ignored ("up" is not an IN-C action).
    assert action_of("Speed up the deblur.", ("BLUR", "NOISE"))[0] == "BLUR"
    none, reason = action_of("Do something.", ("LEFT", "RIGHT"))
    assert none is None and "no action" in reason
    two, reason = action_of(
        "Remove the JPEG compression artifacts.", ("JPEG_COMPRESSION", "ARTIFACTS")
    )
    assert two is None and "several" in reason


def test_abstention() -> None:
    assert is_abstention("I cannot answer.") and is_abstention("I DO NOT know")
    assert not is_abstention("Rewind the video.")


# ----- strict and lenient extraction ---------------------------------------------------------

#: ROD, first turn: A left, B right, C/D abstain, E.. categories (nothing correct yet but moves).
#: Each row: the answer, the choice under strict reading, the choice under lenient reading.
FORMATS = [
    ("B", "action", "action"),
    ("B. Move the blocks to the right.", "action", "action"),
    ("Move the blocks to the right.", "action", "action"),
    ("(B)", "unreadable", "action"),
    ("[B]", "unreadable", "action"),
    ("**B**", "unreadable", "action"),
    ("`B`", "unreadable", "action"),
    ("Answer: B", "unreadable", "action"),
    ("The answer is B.", "unreadable", "action"),
    ("Final answer: (b) Move the blocks to the right.", "unreadable", "action"),
    ("<think>Left or right? Right.</think>\nB", "unreadable", "action"),
    ("reasoning that ran long</think> B", "unreadable", "action"),
    ("<think>It is B. Hmm, or", "unreadable", "unreadable"),  # cut off: no answer
    ("**C**", "unreadable", "wrong"),  # an abstention stays one
    ("(G)", "unreadable", "wrong"),  # cup: not yet correct on ROD's first turn
    ("I would move them", "unreadable", "unreadable"),
]


@pytest.mark.parametrize(("answer", "strict", "lenient"), FORMATS)
def test_answer_formats_under_strict_and_lenient_reading(answer, strict, lenient) -> None:
    obs = make_episode(record("ROD")).observation
    assert read_choice(obs, answer).kind == strict
    assert read_choice(obs, lenient_answer(answer)).kind == lenient


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>a</think>B<THINK>b\nc</Think> C", "B C"),  # every block, any case
        ("lost its opening tag</think>0, 1", "0, 1"),
        ("a</think>b</think>c", "c"),  # up to the last lone closing tag
        ("<think>never closed B", ""),  # cut-off reasoning is no answer
        ("B<think>then it ran out", "B"),
        ("a</think>B<think>1, 1. Hmm", "B"),
        ("no reasoning", "no reasoning"),
        ("İ</think>B", "B"),  # a character whose lower case is longer moves nothing
    ],
)
def test_strip_reasoning(text: str, expected: str) -> None:
    """One rule for the lenient reader and the OEG judge (judge.parse_verdict)."""
    assert strip_reasoning(text) == expected
