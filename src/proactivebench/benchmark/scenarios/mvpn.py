"""MVP-N: views of an object of which only the last is informative."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from proactivebench.benchmark.protocol import fixed_action_space
from proactivebench.benchmark.records import Fields, Record
from proactivebench.benchmark.scenarios.base import Episode, Halt, View
from proactivebench.benchmark.scenarios.registration import ScenarioInfo
from proactivebench.core.errors import DataError


@dataclass(frozen=True)
class MVPNRecord(Record):
    scenario: ClassVar[str] = "MVP-N"
    template_fields: ClassVar[frozenset[str]] = frozenset({"image", "informative"})
    valid_images: tuple[int, ...] = ()

    @classmethod
    def read_extra(cls, fields: Fields) -> dict[str, Any]:
        valid = fields.int_list("valid_images")
        if any(view < 0 for view in valid):
            raise fields.error("valid_images", f"image ids must be >= 0, got {min(valid)}")
        return {"valid_images": valid}

    def own_warnings(self, warning: Callable[[str, str], DataError]) -> list[DataError]:
        if len(self.valid_images) >= self.num_images:
            return []
        return [
            warning(
                "valid_images",
                f"{len(self.valid_images)} entries for num_images={self.num_images}: an "
                f"episode that rotates to turn {len(self.valid_images) + 1} ends there, failed",
            )
        ]


class MVPNEpisode(Episode):
    """ROTATE shows the next valid view; on the last turn only the category is correct."""

    scenario = "MVP-N"
    record_type = MVPNRecord
    interventions = ("Rotate the object.", "Look at the object from another angle.")
    record: MVPNRecord

    def action_space(self) -> tuple[str, ...]:
        return fixed_action_space("MVP-N")

    def _path(self, image_id: int | str, informative: bool) -> str:
        return self.record.image_template.format(
            informative=int(informative), image=str(image_id).zfill(4)
        )

    def _view(self) -> View:
        # The informative view is the one shown on the last allowed turn.
        return View(self._path(self.image_id, self.num_turns + 1 == self.record.num_images))

    def _reference_view(self) -> View:
        return View(self._path(self.record.reference_image, True))

    def _actions_allowed(self) -> bool:
        return not self.is_last_turn

    def _transition(self, action: str) -> Halt | None:
        views = self.record.valid_images
        if self.num_turns >= len(views):
            return Halt("no_view", f"valid_images has no view for turn {self.num_turns + 1}")
        self.image_id = views[self.num_turns]
        return None

    def reachable_images(self) -> list[str]:
        record = self.record
        n = record.num_images
        paths = {self._path(record.first_image, n == 1)}
        views = record.valid_images[:n]  # a short list ends the episode at its end instead
        paths.update(self._path(views[t], t == n - 1) for t in range(1, len(views)))
        return sorted(paths)


# An official row is MVP-N's when an option asks for a rotation.
REGISTRATION = ScenarioInfo.paper(MVPNEpisode, marker="^", rank=3)
