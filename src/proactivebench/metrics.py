"""Benchmark metrics of docs/protocol.md §4: accuracy and proactive-suggestion (ps) rate.

Per scenario: accuracy = mean(correct) x 100 and ps rate = mean(turns - 1), over the episodes
that ran; episodes that ended in an error are counted apart and never scored as wrong. The
average row is the unweighted mean over scenarios, as the paper reports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from proactivebench.protocol import SCENARIOS


@dataclass(frozen=True)
class ScenarioScore:
    n: int
    accuracy: float
    ps_rate: float
    errors: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Summary:
    model: str
    scenarios: dict[str, ScenarioScore] = field(default_factory=dict)

    @property
    def average(self) -> ScenarioScore | None:
        scored = [s for s in self.scenarios.values() if s.n]
        if not scored:
            return None
        return ScenarioScore(
            n=sum(s.n for s in scored),
            accuracy=sum(s.accuracy for s in scored) / len(scored),
            ps_rate=sum(s.ps_rate for s in scored) / len(scored),
            errors=sum(s.errors for s in self.scenarios.values()),
        )

    def as_dict(self) -> dict[str, Any]:
        average = self.average
        return {
            "model": self.model,
            "scenarios": {k: v.as_dict() for k, v in self.scenarios.items()},
            "average": average.as_dict() if average else None,
        }


def summarize(results: Iterable[dict[str, Any]], model: str = "") -> Summary:
    """Score result lines (as in `results.jsonl`) per scenario, in the paper's order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r["scenario"], []).append(r)
    summary = Summary(model=model)
    for short in sorted(groups, key=lambda s: SCENARIOS.index(s) if s in SCENARIOS else 99):
        lines = groups[short]
        ok = [r for r in lines if not r.get("error")]
        n = len(ok)
        summary.scenarios[short] = ScenarioScore(
            n=n,
            accuracy=100.0 * sum(bool(r["correct"]) for r in ok) / n if n else 0.0,
            ps_rate=sum(r["num_turns"] - 1 for r in ok) / n if n else 0.0,
            errors=len(lines) - n,
        )
    return summary
