"""IN-C (ImageNet-C): a corrupted image and the one enhancement that undoes the corruption."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from proactivebench.benchmark.protocol import fixed_action_space
from proactivebench.benchmark.records import Fields, Record
from proactivebench.benchmark.scenarios.actions import is_abstention
from proactivebench.benchmark.scenarios.base import Episode, Halt
from proactivebench.benchmark.scenarios.registration import ScenarioInfo
from proactivebench.core.errors import DataError

#: The corruption levels ImageNet-C has: severities 1 to 5 (docs/protocol.md §5, IN-C).
INC_LEVELS = range(1, 6)
#: The mildest corruption: an enhancement from it has no image to show (docs/protocol.md §2).
LOWEST_LEVEL = INC_LEVELS.start


@dataclass(frozen=True)
class INCRecord(Record):
    scenario: ClassVar[str] = "IN-C"
    template_fields: ClassVar[frozenset[str]] = frozenset({"level"})
    quality_answer: str = ""

    @classmethod
    def read_extra(cls, fields: Fields) -> dict[str, Any]:
        return {"quality_answer": fields.str("quality_answer")}

    @classmethod
    def check_first_image(cls, fields: Fields, first: int, num_images: int) -> None:
        """IN-C starts at a corruption level."""
        if first not in INC_LEVELS:
            raise fields.error(
                "first_image",
                f"must be a corruption level {INC_LEVELS.start}..{INC_LEVELS[-1]}, got {first}",
            )

    def own_warnings(self, warning: Callable[[str, str], DataError]) -> list[DataError]:
        if self.first_image - self.num_images >= 0:
            return []
        return [
            warning(
                "num_images",
                f"{self.num_images} turns from level {self.first_image} would go below "
                f"level {INC_LEVELS.start}: an episode that gets there ends, failed",
            )
        ]


class INCEpisode(Episode):
    """Each enhancement lowers the severity level by one; only `quality_answer` is correct."""

    scenario = "IN-C"
    record_type = INCRecord
    interventions = (
        "Adjust the brightness.",
        "Increase the contrast.",
        "Increase the color saturation.",
        "Deblur the image.",
        "Denoise the image.",
        "Reduce the JPEG compression.",
        "Increase the resolution.",
        "Remove the artifacts.",
    )
    record: INCRecord

    def action_space(self) -> tuple[str, ...]:
        return fixed_action_space("IN-C")

    def _image_path(self, image_id: int | str) -> str:
        return self.record.image_template.format(level=image_id)

    def _actions_allowed(self) -> bool:
        return not self.is_last_turn

    def _correct_options(self, valid: list[str]) -> list[str]:
        if not self._actions_allowed():
            return []
        quality = self.record.quality_answer
        if quality in valid:
            return [quality]
        # Random-action ablation on a record whose options lack its quality answer.
        return [o for o in valid if not is_abstention(o)] if self.random_actions else []

    def _action_refusal(self, option: str) -> str | None:
        if self._actions_allowed():
            return (
                "IN-C accepts only the enhancement that undoes this corruption, "
                f"{self.record.quality_answer!r} (protocol §5)"
            )
        return super()._action_refusal(option)

    def oeg_answers(self) -> str:
        """The correct enhancement, then the categories (docs/protocol.md §6)."""
        obs = self.observation
        return (
            ", ".join(a.replace(".", "") for a in (*obs.correct_actions, *obs.correct_categories))
            + "."
        )

    def _transition(self, action: str) -> Halt | None:
        level = int(self.image_id) - 1
        if level < LOWEST_LEVEL:
            return Halt("no_view", f"the record has no corruption level below {LOWEST_LEVEL}")
        self.image_id = level
        return None

    def reachable_images(self) -> list[str]:
        record = self.record
        lowest = max(LOWEST_LEVEL, record.first_image - record.num_images + 1)
        return [self._image_path(level) for level in range(record.first_image, lowest - 1, -1)]


# An official row is IN-C's when an option asks for an enhancement.
REGISTRATION = ScenarioInfo.paper(INCEpisode, marker="D", rank=4)
