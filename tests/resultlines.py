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
