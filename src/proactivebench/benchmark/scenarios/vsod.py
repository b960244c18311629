"""VSOD (OcclusionDataSet-MM20): a video frame with something in front of the object."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from proactivebench.benchmark.protocol import fixed_action_space
from proactivebench.benchmark.records import Fields, Record, check_frame
from proactivebench.benchmark.scenarios.base import Episode, Halt
from proactivebench.benchmark.scenarios.registration import OptionCues, ScenarioInfo


@dataclass(frozen=True)
class VSODRecord(Record):
    scenario: ClassVar[str] = "VSOD"
    #: True for the samples that need a rewind; the official filter drops those marked false.
    #: None when the record lacks the field (such records are kept).
    strong_occlusions: bool | None = None

    @classmethod
    def read_extra(cls, fields: Fields) -> dict[str, Any]:
        if "strong_occlusions" not in fields.obj:
            return {}
        return {"strong_occlusions": fields.bool("strong_occlusions")}

    @classmethod
    def check_first_image(cls, fields: Fields, first: int, num_images: int) -> None:
        check_frame(fields, first, num_images)

    def in_official_test(self) -> bool:
        """The reference keeps VSOD's strongly occluded samples (those a rewind helps) and a
        record without the field."""
        return self.strong_occlusions is not False


class VSODEpisode(Episode):
    """REWIND/FORWARD move one frame, cyclically; actions and category always correct."""

    scenario = "VSOD"
    record_type = VSODRecord
    interventions = ("Wait for the occlusion to disappear.", "Rewind the video.")

    def action_space(self) -> tuple[str, ...]:
        return fixed_action_space("VSOD")

    def _image_path(self, image_id: int | str) -> str:
        return self.record.image_template.format(image=str(image_id).zfill(4))

    def _transition(self, action: str) -> Halt | None:
        delta = -1 if action == "REWIND" else 1
        self.image_id = (int(self.image_id) + delta) % self.record.num_images
        return None

    def reachable_images(self) -> Iterator[str]:
        return map(self._image_path, range(self.record.num_images))


def _recognise(cues: OptionCues) -> bool:
    """A rewind or a wait, with the occlusion named (else the row is CIT's, ranked after)."""
    named = cues.mention("occlu") or "occlu" in cues.prompt
    return cues.offer(*fixed_action_space("VSOD")) and named


REGISTRATION = ScenarioInfo.paper(VSODEpisode, marker="s", rank=6, recognise=_recognise)
