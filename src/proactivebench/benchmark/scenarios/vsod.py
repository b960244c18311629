"""VSOD (OcclusionDataSet-MM20): a video frame with something in front of the object."""

from __future__ import annotations

from collections.abc import Iterator

from proactivebench.benchmark.protocol import fixed_action_space
from proactivebench.benchmark.records import VSODRecord
from proactivebench.benchmark.scenarios.base import Episode, Halt


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
