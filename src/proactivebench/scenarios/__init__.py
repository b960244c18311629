"""The seven ProactiveBench scenarios as episode state machines."""

from __future__ import annotations

from typing import Any

from proactivebench.records import Record
from proactivebench.scenarios.base import VERDICTS, Episode, Observation, StepResult, Verdict, View
from proactivebench.scenarios.cit import CITEpisode
from proactivebench.scenarios.coco import COCOEpisode
from proactivebench.scenarios.inc import INCEpisode
from proactivebench.scenarios.mvpn import MVPNEpisode
from proactivebench.scenarios.qd import QDEpisode
from proactivebench.scenarios.rod import RODEpisode
from proactivebench.scenarios.vsod import VSODEpisode

EPISODES: dict[str, type[Episode]] = {
    cls.scenario: cls
    for cls in (
        RODEpisode,
        VSODEpisode,
        MVPNEpisode,
        INCEpisode,
        QDEpisode,
        CITEpisode,
        COCOEpisode,
    )
}


def make_episode(record: Record, **options: Any) -> Episode:
    """The episode of `record`'s scenario; options as for `Episode`."""
    return EPISODES[record.scenario](record, **options)


__all__ = [
    "EPISODES",
    "VERDICTS",
    "Episode",
    "Observation",
    "StepResult",
    "Verdict",
    "View",
    "make_episode",
]
