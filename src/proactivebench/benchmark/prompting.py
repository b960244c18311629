"""Turning observations into chat messages (docs/protocol.md §3, §7).

Messages use the OpenAI chat shape. An image part is `{"type": "image", "view": View}`: it
points at a view instead of carrying bytes, so each backend encodes images the way it needs
(data URLs over HTTP, PIL images for `transformers`) through the shared image cache.

A `Conversation` decides what each request of one episode holds: the turn alone (the paper's
default), or every earlier turn too (history), after any demonstrations (in-context examples).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from proactivebench.benchmark.protocol import mcqa_strings
from proactivebench.benchmark.scenarios import Observation, View
from proactivebench.benchmark.scenarios.answers import option_letter

Message = dict[str, Any]


def mcqa_text(prompt: str, options: Sequence[str]) -> str:
    """Question, the lettered options block, then the short-answer instruction."""
    strings = mcqa_strings()
    lines = "".join(
        strings["option_line"].format(letter=option_letter(i), option=option)
        for i, option in enumerate(options)
    )
    return prompt + strings["options_header"] + lines + strings["short_answer_suffix"]


def user_turn(obs: Observation) -> Message:
    """The user message of one MCQA turn: the image, then the question with its options."""
    return mcqa_message(obs.view, obs.prompt, obs.options)


def mcqa_message(view: View, prompt: str, options: Sequence[str]) -> Message:
    """The user message that shows `view` and asks `prompt` with lettered `options`."""
    return {
        "role": "user",
        "content": [
            {"type": "image", "view": view},
            {"type": "text", "text": mcqa_text(prompt, options)},
        ],
    }


def oeg_message(view: View, prompt: str) -> Message:
    """The user message of an open-ended turn (docs/protocol.md §6): the image, then the
    question, no options."""
    return {
        "role": "user",
        "content": [{"type": "image", "view": view}, {"type": "text", "text": prompt}],
    }


def assistant_turn(answer: str) -> Message:
    return {"role": "assistant", "content": answer}


class Conversation:
    """The messages of one episode's requests.

    `prefix` comes first in every request (demonstrations, as earlier user and assistant
    turns). With `history`, each request then carries every earlier turn of the episode, its
    images and the model's answers, as one multi-turn chat; without, the current turn alone.
    """

    def __init__(self, *, history: bool = False, prefix: Sequence[Message] = ()) -> None:
        self.history = history
        self.prefix = list(prefix)
        self.past: list[Message] = []
        self._asked: Message | None = None

    def request(self, obs: Observation) -> list[Message]:
        """The messages to send for the turn `obs` shows."""
        self._asked = user_turn(obs)
        return [*self.prefix, *self.past, self._asked]

    def answered(self, answer: str) -> None:
        """The model's answer to the last request (kept when the conversation has history)."""
        if self.history and self._asked is not None:
            self.past += [self._asked, assistant_turn(answer)]
        self._asked = None


# ----- rebuilt from a result line -----------------------------------------------------------


def request_messages(line: dict[str, Any], turn: int) -> list[Message]:
    """The exact messages of the request of `turn` (1-based), rebuilt from a result line: the
    demonstrations, then (with history) the earlier turns and their answers, then the turn.

    A line stores what each turn added to the conversation, never a conversation whole, so
    that a history run's file grows with its turns, not with their square.
    """
    prefix: list[Message] = []
    for demo in line.get("demonstrations") or []:
        for shown in demo["turns"]:
            prefix += [_user_message(shown), assistant_turn(shown["answer"])]
    trace = line["trace"]
    past: list[Message] = []
    if (line.get("settings") or {}).get("history"):
        for shown in trace[: turn - 1]:
            past += [_user_message(shown), assistant_turn(shown["answer"])]
    return [*prefix, *past, _user_message(trace[turn - 1])]


def _user_message(shown: dict[str, Any]) -> Message:
    """The user message a trace (or demonstration) turn stands for: a judged turn of a
    multi-turn open-ended episode (it records its valid answers) asked without options."""
    crop = tuple(shown["crop"]) if shown.get("crop") is not None else None
    view = View(shown["image"], crop, shown.get("resize_short_edge"))
    if "valid_answers_text" in shown:
        return oeg_message(view, shown["prompt"])
    return mcqa_message(view, shown["prompt"], shown["options"])


# ----- image parts ------------------------------------------------------------------------------


def is_image_part(part: Any) -> bool:
    """Whether a message part is an image given by a view (`{"type": "image", "view": View}`)."""
    return isinstance(part, dict) and part.get("type") == "image" and "view" in part


def image_views(messages: Iterable[Message]) -> list[View]:
    """The views of every image part, in the order a model sees them."""
    return [
        part["view"]
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if is_image_part(part)
    ]


def map_image_parts(messages: Iterable[Message], convert: Callable[[View], Any]) -> list[Message]:
    """Copies of `messages` with each image part replaced by `convert(view)`.

    The one walker of image parts: each backend turns views into what it sends (a data URL, a
    placeholder beside a PIL image, a decoded image), the cache key into content hashes. The
    messages themselves are never changed, so a conversation can be sent again.
    """
    converted = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [convert(p["view"]) if is_image_part(p) else p for p in content]
        converted.append({**message, "content": content})
    return converted
