"""Comparing result lines of different runs: per-turn timing and cache provenance differ from
one run to the next by nature, everything else must not."""

from __future__ import annotations

from typing import Any

#: Trace fields that describe how an answer was obtained, not what it was.
VOLATILE = ("latency_s", "cached")


def comparable(line: dict[str, Any]) -> dict[str, Any]:
    """The line without its volatile trace fields."""
    trace = [{k: v for k, v in turn.items() if k not in VOLATILE} for turn in line["trace"]]
    return {**line, "trace": trace}


def flipped(line: dict[str, Any]) -> dict[str, Any]:
    """The line with the other outcome, told consistently (correct, end_reason and the last
    turn's verdict, as a writer writes them): a contradicting line another run could have
    written, not one the readers refuse for contradicting itself."""
    correct = not line["correct"]
    end = "correct" if correct else "wrong"
    trace = [*line["trace"][:-1], {**line["trace"][-1], "verdict": end}]
    return {**line, "correct": correct, "end_reason": end, "trace": trace}
