"""ROD (Realistic Occlusion Dataset): an object hidden behind blocks that can be moved."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from proactivebench.benchmark.protocol import fixed_action_space
from proactivebench.benchmark.records import Fields, Record, check_frame
from proactivebench.benchmark.scenarios.base import Episode, Halt
from proactivebench.benchmark.scenarios.registration import ScenarioInfo

#: An image of the official data that is broken; the reference swaps in its neighbours.
_BROKEN = "natural_bluebl_greenr-banana-s6"


@dataclass(frozen=True)
class RODRecord(Record):
    scenario: ClassVar[str] = "ROD"

    @classmethod
    def check_first_image(cls, fields: Fields, first: int, num_images: int) -> None:
        check_frame(fields, first, num_images)


class RODEpisode(Episode):
    """LEFT/RIGHT move through the frames cyclically; nothing is visible on the first turn."""

    scenario = "ROD"
    record_type = RODRecord
    interventions = ("Move the blocks to the left.", "Move the blocks to the right.")

    def action_space(self) -> tuple[str, ...]:
        return fixed_action_space("ROD")

    def _image_path(self, image_id: int | str) -> str:
        path = super()._image_path(image_id)
        if _BROKEN in path and not self.reference:  # the reference swaps in play only
            twin = "s5" if self.last_action == "LEFT" else "s7"
            path = path.replace("s6", twin)
        return path

    def _category_allowed(self) -> bool:
        # On the first turn the object cannot be seen: only a move is a correct answer.
        return self.num_turns > 0

    def _category_refusal(self) -> str:
        return (
            "ROD accepts no category on the first turn, even the right one: the object is "
            "still hidden behind the blocks, so only a move is correct (protocol §5)"
        )

    def _transition(self, action: str) -> Halt | None:
        delta = -1 if action == "LEFT" else 1
        self.image_id = (int(self.image_id) + delta) % self.record.num_images
        return None

    def reachable_images(self) -> Iterator[str]:
        for frame in range(self.record.num_images):
            path = self.record.image_template.format(image=frame)
            if _BROKEN in path:
                yield path.replace("s6", "s5")
                yield path.replace("s6", "s7")
            else:
                yield path


# An official row is ROD's when an option names the blocks.
REGISTRATION = ScenarioInfo.paper(
    RODEpisode, marker="o", rank=1, recognise=lambda cues: cues.mention("block")
)
