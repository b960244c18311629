"""Mapping an accepted option's text to an action with the protocol's keyword table (and the
keywords a scenario of one's own adds)."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from proactivebench.benchmark.protocol import abstain_markers, action_keywords


@functools.lru_cache(maxsize=4096)
def is_abstention(option: str) -> bool:
    """Options containing "cannot" or "do not" abstain; they are never a correct move.
    Remembered by text: every episode of a run asks it of the same few options."""
    lowered = option.lower()
    return any(marker in lowered for marker in abstain_markers())


#: (keyword, ACTION) pairs a scenario adds to the protocol's table (`Episode.keywords`).
Keywords = tuple[tuple[str, str], ...]


def names_action(option: str, action_space: Iterable[str], keywords: Keywords = ()) -> bool:
    """Whether the keyword table (the protocol's, and the scenario's own `keywords`) reads
    `option` as asking for an action of `action_space` (one keyword of it is enough): such a
    text is no invalid suggestion there."""
    space = set(action_space)
    lowered = option.lower()
    table = (*action_keywords(), *keywords)
    return any(action in space and keyword in lowered for keyword, action in table)


def action_of(
    option: str, action_space: Iterable[str], keywords: Keywords = ()
) -> tuple[str | None, str]:
    """The action `option` asks for, restricted to `action_space`, or None and the reason;
    read with the protocol's keyword table and the scenario's own `keywords`.

    Keywords that all name one action give that action (the reference package instead crashes
    on, e.g., "details" together with "drawing"); no keyword, or keywords of different actions,
    give None so that the turn fails as a mismatch and the run goes on (docs/protocol.md §8).
    """
    space = set(action_space)
    lowered = option.lower()
    table = (*action_keywords(), *keywords)
    found = {action for keyword, action in table if action in space and keyword in lowered}
    if len(found) == 1:
        return next(iter(found)), ""
    if not found:
        return None, f"option {option!r} names no action of {sorted(space)}"
    return None, f"option {option!r} names several actions: {sorted(found)}"
