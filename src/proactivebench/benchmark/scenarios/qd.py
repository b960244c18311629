"""QD (QuickDraw): a sketch drawn stroke by stroke."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from proactivebench.benchmark.protocol import fixed_action_space
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.scenarios.base import Episode, Halt
from proactivebench.benchmark.scenarios.registration import ScenarioInfo


@dataclass(frozen=True)
class QDRecord(Record):
    scenario: ClassVar[str] = "QD"


class QDEpisode(Episode):
    """DETAILS shows the next, more complete drawing; last turn: only the category."""

    scenario = "QD"
    record_type = QDRecord
    interventions = ("Add more details.", "Show more strokes of the sketch.")

    def action_space(self) -> tuple[str, ...]:
        return fixed_action_space("QD")

    def _image_path(self, image_id: int | str) -> str:
        return self.record.image_template.format(image=str(image_id).zfill(4))

    def _actions_allowed(self) -> bool:
        return not self.is_last_turn

    def _transition(self, action: str) -> Halt | None:
        self.image_id = int(self.image_id) + 1
        return None

    def reachable_images(self) -> Iterator[str]:
        first = self.record.first_image
        return map(self._image_path, range(first, first + self.record.num_images))


# An official row is QD's when an option asks for more details.
REGISTRATION = ScenarioInfo.paper(QDEpisode, marker="v", rank=5)
