"""Reading a model's answer against one group of options (docs/protocol.md §4).

Total by construction: any string, however long or strange, yields a verdict. The two
normalisations reproduce the reference package's text handling exactly (its regular expression,
`str.lower`, `str.strip`, and removal of plain spaces only), because the reported numbers
depend on them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from proactivebench.benchmark.scenarios.actions import is_abstention

GroupVerdict = Literal["correct", "wrong", "mismatch"]

# Everything up to and including the last "<capital letter>." on the first line, and the
# whitespace after it: "B. Move the block" -> "Move the block".
_LETTER_PREFIX = re.compile(r"^.*[A-Z]\.\s*")


def normalize_full(text: str) -> str:
    """The full-text form compared in step 1: prefix dropped, lowercased, no spaces."""
    return _LETTER_PREFIX.sub("", text, count=1).lower().strip().replace(" ", "")


def letter_of(text: str) -> str | None:
    """The answer read as a letter (step 2): text before the first '.', if one character."""
    head = text.split(".", 1)[0].lower().strip()
    return head if len(head) == 1 else None


# ----- lenient extraction (beyond the paper) ------------------------------------------------------

_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_EMPHASIS = re.compile(r"\*+|`+|__")
_ANSWER_PREFIX = re.compile(
    r"^\s*(?:(?:the\s+)?(?:final\s+)?answer(?:\s+is)?\s*[:\-]?\s*)+", re.IGNORECASE
)
_BRACKETED_LETTER = re.compile(r"^\s*[(\[]([A-Za-z])[)\]]\s*[.:]?\s*")

#: How answers are read: the protocol's way, or after removing common decorations.
EXTRACTIONS = ("strict", "lenient")


#: A closing tag, found in the text itself (lowercasing first could move the positions:
#: "İ".lower() is two characters).
_CLOSING = re.compile(r"</think>", re.IGNORECASE)
_OPENING = re.compile(r"<think>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """`text` without a reasoning model's reasoning: every `<think>…</think>` block (any case,
    across lines), then everything up to and including the last remaining `</think>`, for the
    servers that strip the opening tag, then everything from a `<think>` that is never closed:
    reasoning cut short (the model ran out of tokens) is no answer, however it ends ("1, 1.
    Hmm, actually…" is a thought, not a verdict). Used by the lenient reader (`lenient_answer`)
    and by the OEG judge (`judge.parse_verdict`); the protocol's strict reader reads the raw
    text and never calls it."""
    text = _THINKING.sub("", text)
    closings = list(_CLOSING.finditer(text))
    if closings:
        text = text[closings[-1].end() :]
    opening = _OPENING.search(text)
    return text[: opening.start()] if opening else text


def lenient_answer(text: str) -> str:
    """`text` without the decorations that make a right answer unreadable to the protocol's
    reader: reasoning in `<think>…</think>` (or everything up to a lone `</think>`), markdown
    emphasis, an "Answer:" / "The answer is" prefix, and brackets around a leading letter
    ("(B)" reads as "B."). What remains is read exactly as the protocol reads (§4)."""
    text = strip_reasoning(text)
    text = _EMPHASIS.sub("", text)
    text = _ANSWER_PREFIX.sub("", text)
    text = _BRACKETED_LETTER.sub(lambda m: f"{m.group(1).upper()}. ", text, count=1)
    return text.strip()


def option_letter(index: int) -> str:
    """The letter shown for the option at `index` of the whole list (A, B, ...)."""
    return chr(65 + index)


@dataclass(frozen=True)
class GroupReading:
    verdict: GroupVerdict
    #: The option the answer designates (correct or wrong), None on a mismatch.
    chosen: str | None = None


def read_group(
    answer: str,
    entries: Sequence[str],
    correct: Sequence[str],
    shift: int = 0,
    letters: Sequence[str] | None = None,
) -> GroupReading:
    """Judge `answer` against `entries`, of which `correct` are right at this state.

    `shift` is the index of the group's first entry in the shown list, so that letters count
    from the start of the whole option list (categories come after the action options);
    `letters`, when given, are the entries' letters as shown (options in another order).
    """
    full = normalize_full(answer)
    normalized = [normalize_full(e) for e in entries]
    if full in normalized:
        chosen = entries[normalized.index(full)]
        if full in {normalize_full(c) for c in correct}:
            return GroupReading("correct", chosen)
        return GroupReading("wrong", chosen)
    letter = letter_of(answer)
    if letter is None:
        return GroupReading("mismatch")
    if letters is None:
        letters = [option_letter(i + shift) for i in range(len(entries))]
    letters = [shown.lower() for shown in letters]
    if letter not in letters:
        return GroupReading("mismatch")
    chosen = entries[letters.index(letter)]
    correct_letters = {letters[entries.index(c)] for c in correct if c in entries}
    return GroupReading("correct" if letter in correct_letters else "wrong", chosen)


ChoiceKind = Literal["category", "action", "wrong", "unreadable"]


@dataclass(frozen=True)
class Choice:
    """What an answer chose, read against one observation: a correct category, a correct
    intervention, a shown option that is not correct now, or nothing readable.

    Reading is separate from what the episode does with the choice (`Episode.apply`), so that
    a choice can come from elsewhere, e.g. a judge of open-ended answers, and so that rewards
    and the benchmark read answers the same way.
    """

    kind: ChoiceKind
    #: The shown option the answer designates (correct or not); None when unreadable.
    option: str | None = None
    action_reading: GroupVerdict = "mismatch"
    category_reading: GroupVerdict = "mismatch"

    @property
    def abstains(self) -> bool:
        """A wrong choice of an abstaining option ("I cannot answer", "I do not know")."""
        return self.kind == "wrong" and self.option is not None and is_abstention(self.option)


class Shown(Protocol):
    """What reading an answer needs of a turn (a `base.Observation` is one): the options of
    each group, which of them are correct now, and their letters as shown."""

    action_options: tuple[str, ...]
    correct_actions: tuple[str, ...]
    categories: tuple[str, ...]
    correct_categories: tuple[str, ...]

    def letters(self) -> tuple[list[str], list[str]]: ...


def read_choice(obs: Shown, answer: str) -> Choice:
    """The MCQA reading of docs/protocol.md §4: the categories first, then the interventions."""
    action_letters, category_letters = obs.letters()
    by_action = read_group(answer, obs.action_options, obs.correct_actions, letters=action_letters)
    by_category = read_group(
        answer, obs.categories, obs.correct_categories, letters=category_letters
    )
    readings = {"action_reading": by_action.verdict, "category_reading": by_category.verdict}
    if by_category.verdict == "correct":
        return Choice("category", by_category.chosen, **readings)
    if by_action.verdict == "correct":
        return Choice("action", by_action.chosen, **readings)
    if "wrong" in (by_action.verdict, by_category.verdict):
        return Choice("wrong", by_category.chosen or by_action.chosen, **readings)
    return Choice("unreadable", None, **readings)
