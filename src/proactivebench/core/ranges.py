"""Where a number must lie: one type for every range the project checks (a run setting, a
backend option, a decoding value, a GRPO or LoRA field), so that each says its bounds in the
same words and checks them by the same rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Range:
    """`low <= value <= high` (each bound only when given; `low_open`/`high_open` make it
    strict). `integer`: a whole number is wanted (said in `describe`; the type check is the
    caller's). `also`: values allowed outside the range (a sentinel such as max_steps -1).
    `note`: why, said after the bounds."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    also: tuple[Any, ...] = ()
    note: str = ""

    def holds(self, value: float) -> bool:
        if value in self.also:
            return True
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def bounds(self) -> str:
        """The bounds alone: ">= 0 and <= 100", "> 0"."""
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return " and ".join(parts)

    def describe(self) -> str:
        """What a value must be, in words: "a positive integer", "a number >= 0 and < 1"."""
        kind = "integer" if self.integer else "number"
        positive = self.high is None and (
            (self.low == 0 and self.low_open) or (self.integer and self.low == 1)
        )
        if positive:
            text = f"a positive {kind}"
        else:
            text = f"{'an' if self.integer else 'a'} {kind} {self.bounds()}".rstrip()
        return f"{text} ({self.note})" if self.note else text

    def problem(self, value: Any) -> str | None:
        """Why `value` is out of range, or None (also for a value of another type: the type
        check names that)."""
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        return None if self.holds(value) else f"expected {self.describe()}, not {value!r}"
