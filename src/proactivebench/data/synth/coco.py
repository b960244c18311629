"""COCO: a wide room photo seen through a crop that misses the object; move or zoom out.

The crop is built backwards from the protocol's crop formula (`COCOEpisode.crop_box`):

* a moving edge k steps out sits at `start -/+ k * step`, and the first turn is already one
  step out;
* for a plain direction the record's `width`/`height` are the right/bottom *coordinates*; for
  zoom they are the crop's size and both edges move;
* a single direction allows `granularity - 1` moves (the last turn shows `granularity` steps),
  two directions as many on each axis, and zoom `granularity` moves.

Each axis is solved on its own so that the first crop is separated from the object's box by a
gap on every moving axis (zoom: on one axis), the crop after the last allowed move contains
the box, and no crop leaves the image. Steps are multiples of 1/4, so the protocol's float
update `h / n * (n + 1)` is exact and its `==` test for zoom behaves as intended.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from proactivebench.data.synth import objects, scene
from proactivebench.data.synth.common import (
    Sample,
    choice,
    choose_categories,
    object_mask,
    sample_dir,
)
from proactivebench.data.synth.common import options as make_options
from proactivebench.data.synth.common import record as make_record

SHORT = "COCO"
WIDTH, HEIGHT = 448, 336
DIRECTIONS: tuple[str, ...] = (
    "left",
    "right",
    "up",
    "down",
    "up_left",
    "up_right",
    "down_left",
    "down_right",
    "zoom",
)
MOVE_OPTIONS = {
    "left": "Move the camera to the left.",
    "right": "Move the camera to the right.",
    "up": "Move the camera up.",
    "down": "Move the camera down.",
    "zoom": "Move farther from the object.",
}
PROMPTS = ("What object is in the image?", "What is the object in this room?")
QUANTUM = 0.25
MIN_SIDE = 52


def _quantize_up(value: float) -> float:
    return math.ceil(value / QUANTUM) * QUANTUM


@dataclass(frozen=True)
class Axis:
    """One axis of the solution: the object's extent and the record's crop terms for it.

    `low`/`high` are the record's crop values (left/top and width/height in record terms),
    `step` the record's horizontal/vertical step.
    """

    object_low: int
    low: float
    high: float
    step: float


def _still(rng: np.random.Generator, size: int, extent: int) -> Axis:
    """An axis that does not move: the crop spans the object with some margin."""
    before, after = (int(v) for v in rng.integers(6, 40, size=2))
    start = int(rng.integers(before, size - extent - after + 1))
    return Axis(start, start - before, start + extent + after, 0.0)


def _growing_low(rng: np.random.Generator, size: int, extent: int, granularity: int) -> Axis:
    """A moving low edge (left/up): edge after k steps = low - k * step, k = 1..granularity."""
    margin, gap = int(rng.integers(3, 12)), int(rng.integers(8, 30))
    step = _quantize_up((extent + margin + gap) / (granularity - 1))
    travel = (granularity - 1) * step
    first_extent = min(int(rng.integers(90, 170)), int(size - travel))
    final_low = int(rng.integers(0, int(size - travel - first_extent) + 1))
    return Axis(
        final_low + margin, final_low + granularity * step, final_low + travel + first_extent, step
    )


def _growing_high(rng: np.random.Generator, size: int, extent: int, granularity: int) -> Axis:
    """A moving high edge (right/down): the mirror image of `_growing_low`."""
    m = _growing_low(rng, size, extent, granularity)
    return Axis(size - m.object_low - extent, size - m.high, size - m.low, m.step)


def _zoom_limit(size: int, granularity: int, half: int = 18, slack: int = 12) -> int:
    """The largest object extent a zoom axis can separate, with the smallest crop and gaps."""
    return int(granularity * ((size / 2 - half) / (granularity + 1)) - slack)


def _zoom_separated(rng: np.random.Generator, size: int, extent: int, granularity: int) -> Axis:
    """A zoom axis on which the object lies beside the first crop, inside the last one."""
    half, margin, gap = 18, 3, 6
    # One pixel more than needed, so that rounding the object to whole pixels always fits.
    step = _quantize_up((extent + margin + gap + 1) / granularity)
    while half + 1 + (granularity + 1) * step <= size / 2 and rng.random() < 0.7:
        half += int(rng.integers(1, 8))
    half = min(half, int(size / 2 - (granularity + 1) * step))
    reach = half + (granularity + 1) * step
    centre = int(rng.integers(math.ceil(reach), int(size - reach) + 1))
    first_edge = centre + half + step
    lo, hi = math.ceil(first_edge + gap), math.floor(centre + reach - margin - extent)
    start = int(rng.integers(lo, hi + 1))
    if rng.random() < 0.5:  # mirror: the object on the low side
        start = 2 * centre - start - extent
    return Axis(start, centre - half, 2 * half, step)


def _zoom_spanning(rng: np.random.Generator, size: int, extent: int, granularity: int) -> Axis:
    """The other zoom axis: only the last crop has to contain the object."""
    half = int(rng.integers(14, 40))
    margin = 4
    least = max(4.0, (extent / 2 + margin + 1 - half) / (granularity + 1))
    most = (size / 2 - half) / (granularity + 1)
    step = math.floor(float(rng.uniform(least, max(least, most))) / QUANTUM) * QUANTUM
    step = max(step, _quantize_up(least))
    reach = half + (granularity + 1) * step
    centre = int(rng.integers(math.ceil(reach), int(size - reach) + 1))
    lo, hi = math.ceil(centre - reach + margin), math.floor(centre + reach - margin - extent)
    return Axis(int(rng.integers(lo, hi + 1)), centre - half, 2 * half, step)


def solve(
    rng: np.random.Generator, direction: str, granularity: int, extent: int
) -> tuple[Axis, Axis]:
    """Crop terms for the x and y axes of an object of side `extent`."""
    if direction == "zoom":
        if extent <= _zoom_limit(WIDTH, granularity) and (
            extent > _zoom_limit(HEIGHT, granularity) or rng.random() < 0.5
        ):
            return _zoom_separated(rng, WIDTH, extent, granularity), _zoom_spanning(
                rng, HEIGHT, extent, granularity
            )
        return _zoom_spanning(rng, WIDTH, extent, granularity), _zoom_separated(
            rng, HEIGHT, extent, granularity
        )
    moves = set(direction.split("_"))

    def axis(size: int, low: str, high: str) -> Axis:
        if low in moves:
            return _growing_low(rng, size, extent, granularity)
        if high in moves:
            return _growing_high(rng, size, extent, granularity)
        return _still(rng, size, extent)

    return axis(WIDTH, "left", "right"), axis(HEIGHT, "up", "down")


def _number(value: float) -> int | float:
    """Whole numbers as JSON integers, the rest as floats (both are valid record numbers)."""
    return int(value) if float(value).is_integer() else float(value)


def make_sample(rng: np.random.Generator, index: int, slot: int) -> Sample:
    answer, categories = choose_categories(rng)
    direction = DIRECTIONS[slot % len(DIRECTIONS)]
    zoom = direction == "zoom"
    # A plain direction needs two stages at least: the first crop misses, the last contains.
    granularity = int(rng.integers(1, 4)) if zoom else int(rng.integers(2, 4))
    top = (
        min(88, max(_zoom_limit(WIDTH, granularity), _zoom_limit(HEIGHT, granularity)))
        if zoom
        else 88
    )
    extent = int(rng.integers(MIN_SIDE, top + 1))
    x, y = solve(rng, direction, granularity, extent)
    # An unused step still gets a plausible value; the protocol never applies it.
    h_step = x.step or _quantize_up(y.step * WIDTH / HEIGHT)
    v_step = y.step or _quantize_up(x.step * HEIGHT / WIDTH)

    image = scene.living_room(WIDTH, HEIGHT, int(rng.integers(222, 246)), rng)
    draw = ImageDraw.Draw(image)
    shapes = objects.build(answer, rng)
    shelf = objects.tone(objects.WOOD, rng)
    bottom = y.object_low + extent * objects.extent(shapes)[3]  # the shelf it stands on
    draw.rectangle(
        (x.object_low - 8, bottom - 2, x.object_low + extent + 8, bottom + 5),
        fill=shelf,
        outline=objects.darker(shelf),
    )
    box = (x.object_low, y.object_low, extent)
    objects.render(shapes, draw, box)

    folder = sample_dir(SHORT, index)
    path = f"{folder}/scene.png"
    moves = ("zoom",) if zoom else tuple(direction.split("_"))
    rec = make_record(
        index,
        path,
        0,
        1,
        0,
        choice(rng, PROMPTS),
        make_options(rng, [MOVE_OPTIONS[m] for m in moves]),
        categories,
        answer,
        direction=direction,
        granularity=granularity,
        horizontal_step=float(h_step),
        vertical_step=float(v_step),
        crop={
            "top": _number(y.low),
            "left": _number(x.low),
            "height": _number(y.high),
            "width": _number(x.high),
        },
    )
    object_box = (x.object_low, y.object_low, x.object_low + extent, y.object_low + extent)
    truth = {"object_box": object_box, "object_mask": object_mask(shapes, (WIDTH, HEIGHT), box)}
    images: dict[str, Image.Image] = {path: image}
    return Sample(rec, images, truth)
