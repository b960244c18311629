"""The ProactiveBench scenarios: one module each, holding its record type, its episode state
machine (a `base.Episode` subclass) and its registration (`registration.ScenarioInfo`).

Which scenarios exist, and the episode of a record (`make_episode`), is the registry's to
say: `proactivebench.benchmark.registry`.
"""

from __future__ import annotations

from proactivebench.benchmark.scenarios.base import (
    VERDICTS,
    Episode,
    Observation,
    StepResult,
    Verdict,
    View,
)

__all__ = ["VERDICTS", "Episode", "Observation", "StepResult", "Verdict", "View"]
