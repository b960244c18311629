"""Turning observations into chat messages (docs/protocol.md §3).

Messages use the OpenAI chat shape. An image part is `{"type": "image", "view": View}`: it
points at a view instead of carrying bytes, so each backend encodes images the way it needs
(data URLs over HTTP, PIL images for `transformers`) through the shared image cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proactivebench.protocol import mcqa_strings
from proactivebench.scenarios import Observation
from proactivebench.scenarios.answers import option_letter

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
    return {
        "role": "user",
        "content": [
            {"type": "image", "view": obs.view},
            {"type": "text", "text": mcqa_text(obs.prompt, obs.options)},
        ],
    }


def turn_messages(obs: Observation) -> list[Message]:
    """The messages of one turn without conversation history (the paper's default)."""
    return [user_turn(obs)]
