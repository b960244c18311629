"""COCO (coco2014): a crop of a wider scene that misses the object; move or zoom the camera."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from proactivebench.benchmark.records import Crop, Fields, Record
from proactivebench.benchmark.scenarios.base import Episode, Halt, View
from proactivebench.benchmark.scenarios.registration import ScenarioInfo

ZOOM_OPTION = "Move farther from the object."
HORIZONTAL_OPTIONS = ("Move the camera to the left.", "Move the camera to the right.")
VERTICAL_OPTIONS = ("Move the camera up.", "Move the camera down.")


_COCO_DIRECTIONS = frozenset({"up", "down", "left", "right"})


@dataclass(frozen=True)
class COCORecord(Record):
    scenario: ClassVar[str] = "COCO"
    template_fields: ClassVar[frozenset[str]] = frozenset()
    direction: str = "zoom"
    granularity: int = 1
    horizontal_step: float = 0.0
    vertical_step: float = 0.0
    crop: Crop = Crop(0.0, 0.0, 0.0, 0.0)  # noqa: RUF009 - frozen: one shared value is safe

    @property
    def moves(self) -> frozenset[str]:
        """The direction's parts: ``{"zoom"}`` or a subset of up/down/left/right."""
        return frozenset(self.direction.split("_"))

    @classmethod
    def read_extra(cls, fields: Fields) -> dict[str, Any]:
        direction = fields.str("direction")
        parts = direction.split("_")
        if direction != "zoom" and (
            not set(parts) <= _COCO_DIRECTIONS or len(set(parts)) != len(parts)
        ):
            raise fields.error(
                "direction",
                f"expected 'zoom' or up/down/left/right joined by '_', got {direction!r}",
            )
        crop = fields.get("crop")
        if not isinstance(crop, dict):
            raise fields.error("crop", "expected an object {top, left, height, width}")
        for key in ("top", "left", "height", "width"):
            if key not in crop:
                raise fields.error(f"crop.{key}", "missing")
        return dict(
            direction=direction,
            granularity=fields.int("granularity", minimum=1),
            horizontal_step=fields.number("horizontal_step"),
            vertical_step=fields.number("vertical_step"),
            crop=Crop(
                **{k: fields.number(f"crop.{k}", crop) for k in ("top", "left", "height", "width")}
            ),
        )

    @classmethod
    def check_first_image(cls, fields: Fields, first: int, num_images: int) -> None:
        """COCO does not use it."""

    @classmethod
    def reads_reference(cls) -> bool:
        return False


class COCOEpisode(Episode):
    """The crop widens by one step per move; float arithmetic kept exactly as the protocol's."""

    scenario = "COCO"
    record_type = COCORecord
    interventions = (*HORIZONTAL_OPTIONS, *VERTICAL_OPTIONS, ZOOM_OPTION)
    record: COCORecord

    def __init__(self, record: COCORecord, **kwargs: object) -> None:
        kwargs["resize_short_edge"] = None  # never resized: the crop is the point
        super().__init__(record, **kwargs)  # type: ignore[arg-type]

    @property
    def zoom(self) -> bool:
        return "zoom" in self.record.moves

    def _reset_state(self) -> None:
        self.h = self.record.horizontal_step
        self.v = self.record.vertical_step
        self.moves_h = 0
        self.moves_v = 0

    def _max_steps(self) -> int:
        granularity = self.record.granularity
        if self.zoom:
            return granularity + 1
        return granularity * 2 if "_" in self.record.direction else granularity

    def _limits(self) -> tuple[float, float]:
        record, moves = self.record, self.record.moves
        if self.zoom:
            steps = self._max_steps()
            return record.horizontal_step * steps, record.vertical_step * steps
        max_h = record.horizontal_step * record.granularity if moves & {"left", "right"} else 0
        max_v = record.vertical_step * record.granularity if moves & {"up", "down"} else 0
        return max_h, max_v

    def action_space(self) -> tuple[str, ...]:
        if self.zoom:
            return ("ZOOM",)
        return tuple(m.upper() for m in ("up", "down", "left", "right") if m in self.record.moves)

    def hint_text(self) -> str:
        hints = self.strings().hint_prompt
        assert isinstance(hints, dict)
        return hints["zoom" if self.zoom else "move"]

    def _valid_options(self) -> list[str]:
        options = list(self.record.options)
        if self.random_actions:
            return options
        max_h, max_v = self._limits()
        if self.zoom:
            pruned: tuple[str, ...] = (ZOOM_OPTION,) if self.h == max_h else ()
        else:
            pruned = (HORIZONTAL_OPTIONS if self.h >= max_h else ()) + (
                VERTICAL_OPTIONS if self.v >= max_v else ()
            )
        return [o for o in options if o not in pruned]

    def _transition(self, action: str) -> Halt | None:
        # h <- h / n * (n + 1): kept in this form because the zoom pruning compares with ==.
        if action in ("LEFT", "RIGHT", "ZOOM"):
            self.moves_h += 1
            self.h = self.h / self.moves_h * (self.moves_h + 1)
        if action in ("UP", "DOWN", "ZOOM"):
            self.moves_v += 1
            self.v = self.v / self.moves_v * (self.moves_v + 1)
        return None

    def crop_box(self) -> tuple[float, float, float, float]:
        """The PIL box (left, top, right, bottom) of the current state."""
        crop, moves, zoom = self.record.crop, self.record.moves, self.zoom
        left = crop.left - self.h if zoom or "left" in moves else crop.left
        top = crop.top - self.v if zoom or "up" in moves else crop.top
        right = crop.width + self.h if zoom or "right" in moves else crop.width
        bottom = crop.height + self.v if zoom or "down" in moves else crop.height
        if zoom:
            right += crop.left
            bottom += crop.top
        return (left, top, right, bottom)

    def _view(self) -> View:
        return View(self.record.image_template, crop=self.crop_box())

    def _reference_view(self) -> View:
        return View(self.record.image_template)

    def reachable_images(self) -> list[str]:
        return [self.record.image_template]


# An official row is COCO's when an option moves the camera or steps farther.
REGISTRATION = ScenarioInfo.paper(
    COCOEpisode,
    marker="X",
    rank=2,
    recognise=lambda cues: cues.mention("camera") or cues.offer("ZOOM"),
)
