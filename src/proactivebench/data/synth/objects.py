"""Everyday objects drawn procedurally: one declarative description serves three renderings.

Each category is a function returning a list of `Shape`s (polygons and polylines in a unit box,
y pointing down). From that single description we get

* the coloured drawing (`render`), used by every photo-like scenario,
* the exact object mask (`render_mask`), used to place occluders and by the tests to measure
  what is covered, and
* a line sketch (`sketch_strokes`), used by QD: every shape marked `sketch` is one pen stroke,
  in drawing order, so a partially drawn sketch is simply a prefix of the list.

Colours and small pose changes come from the caller's RNG, so a sample is reproducible from
its seed alone. Shapes are kept coarse on purpose: drawing at the final size with Pillow is
fast and the silhouettes stay recognisable at 60-120 px.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image, ImageDraw

RGB = tuple[int, int, int]
#: Where an object is drawn: left, top and side of a square box, in pixels.
Box = tuple[float, float, float]


@dataclass(frozen=True)
class Shape:
    """One part of an object in unit-box coordinates.

    A closed shape is a filled polygon with a darker outline; an open one is a polyline of
    `width` (a fraction of the box side). `sketch` says whether the part is a pen stroke of the
    line drawing (small details such as highlights are not).
    """

    points: np.ndarray
    closed: bool = True
    fill: RGB | None = None
    width: float = 0.0
    sketch: bool = True


# ----- colours ------------------------------------------------------------------------------

RED: RGB = (205, 38, 42)
ORANGE: RGB = (240, 135, 30)
YELLOW: RGB = (245, 205, 45)
GREEN: RGB = (70, 165, 65)
DARK_GREEN: RGB = (40, 115, 50)
BLUE: RGB = (45, 105, 205)
SKY: RGB = (150, 200, 235)
PURPLE: RGB = (135, 70, 180)
PINK: RGB = (235, 120, 165)
TEAL: RGB = (30, 155, 155)
BROWN: RGB = (135, 85, 45)
WOOD: RGB = (190, 140, 85)
GREY: RGB = (150, 150, 158)
SILVER: RGB = (195, 198, 205)
CREAM: RGB = (245, 235, 205)
WHITE: RGB = (250, 250, 250)
BLACK: RGB = (40, 40, 48)
VIVID: tuple[RGB, ...] = (RED, ORANGE, YELLOW, GREEN, BLUE, PURPLE, PINK, TEAL)


def tone(rgb: RGB, rng: np.random.Generator, spread: int = 18) -> RGB:
    """`rgb` with a small random shift, so two apples are never exactly the same red."""
    shift = rng.integers(-spread, spread + 1, size=3)
    return tuple(int(np.clip(c + s, 0, 255)) for c, s in zip(rgb, shift, strict=True))  # type: ignore[return-value]


def darker(rgb: RGB, factor: float = 0.62) -> RGB:
    return tuple(int(c * factor) for c in rgb)  # type: ignore[return-value]


def lighter(rgb: RGB, amount: float = 0.45) -> RGB:
    return tuple(int(c + (255 - c) * amount) for c in rgb)  # type: ignore[return-value]


def pick(rng: np.random.Generator, colours: Sequence[RGB]) -> RGB:
    return tone(colours[int(rng.integers(len(colours)))], rng)


# ----- geometry in the unit box -------------------------------------------------------------


def pts(*xy: float) -> np.ndarray:
    """Points from a flat coordinate list: pts(x0, y0, x1, y1, ...)."""
    return np.asarray(xy, dtype=np.float64).reshape(-1, 2)


def arc(
    cx: float, cy: float, rx: float, ry: float, start: float = 0.0, end: float = 360.0, n: int = 32
) -> np.ndarray:
    """Points of an elliptic arc; angles in degrees, 90 is straight down (y grows downwards)."""
    full = abs(end - start) >= 360.0
    t = np.radians(np.linspace(start, end, n, endpoint=not full))
    return np.stack([cx + rx * np.cos(t), cy + ry * np.sin(t)], axis=1)


def rect(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    return pts(x0, y0, x1, y0, x1, y1, x0, y1)


def rounded(x0: float, y0: float, x1: float, y1: float, r: float) -> np.ndarray:
    """A rectangle with round corners of radius `r`."""
    corners = (
        arc(x1 - r, y0 + r, r, r, 270, 360, 5),
        arc(x1 - r, y1 - r, r, r, 0, 90, 5),
        arc(x0 + r, y1 - r, r, r, 90, 180, 5),
        arc(x0 + r, y0 + r, r, r, 180, 270, 5),
    )
    return np.concatenate(corners)


def rotate(points: np.ndarray, degrees: float, cx: float = 0.5, cy: float = 0.5) -> np.ndarray:
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    d = points - (cx, cy)
    return np.stack([cx + c * d[:, 0] - s * d[:, 1], cy + s * d[:, 0] + c * d[:, 1]], axis=1)


def part(points: np.ndarray, fill: RGB, *, sketch: bool = True) -> Shape:
    return Shape(points, closed=True, fill=fill, sketch=sketch)


def line(points: np.ndarray, colour: RGB, width: float = 0.03, *, sketch: bool = True) -> Shape:
    return Shape(points, closed=False, fill=colour, width=width, sketch=sketch)


def ring(
    cx: float, cy: float, r: float, colour: RGB, width: float = 0.04, *, sketch: bool = True
) -> Shape:
    """A circle drawn as a thick line, so that its hole stays see-through (key bow, wheel)."""
    loop = arc(cx, cy, r, r, 0, 360, 36)
    return line(np.concatenate([loop, loop[:1]]), colour, width, sketch=sketch)


# ----- the categories -----------------------------------------------------------------------

Builder = Callable[[np.random.Generator], list[Shape]]
_BUILDERS: dict[str, Builder] = {}


def _category(name: str) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        _BUILDERS[name] = fn
        return fn

    return register


@_category("apple")
def _apple(rng: np.random.Generator) -> list[Shape]:
    colour = pick(rng, (RED, RED, GREEN, YELLOW))
    t = np.radians(np.linspace(0, 360, 40, endpoint=False))
    x = 0.5 + 0.37 * np.cos(t)
    y = 0.57 + 0.34 * np.sin(t)
    top = np.exp(-(((t - 1.5 * math.pi) / 0.38) ** 2))
    bottom = np.exp(-(((t - 0.5 * math.pi) / 0.3) ** 2))
    body = np.stack([x, y + 0.09 * top - 0.03 * bottom], axis=1)
    return [
        part(body, colour),
        line(pts(0.5, 0.33, 0.52, 0.22, 0.55, 0.13), BROWN, 0.035),
        part(rotate(arc(0.64, 0.18, 0.11, 0.045), -28, 0.64, 0.18), tone(GREEN, rng)),
        part(arc(0.36, 0.48, 0.05, 0.09), lighter(colour, 0.5), sketch=False),
    ]


@_category("banana")
def _banana(rng: np.random.Generator) -> list[Shape]:
    colour = tone(YELLOW, rng)
    outer = arc(0.5, 0.12, 0.6, 0.62, 38, 142, 24)
    inner = arc(0.5, 0.08, 0.52, 0.52, 136, 44, 20)
    return [
        part(np.concatenate([outer, inner]), colour),
        line(arc(0.5, 0.1, 0.56, 0.575, 52, 128, 14), darker(colour, 0.8), 0.015),
        line(pts(0.93, 0.5, 0.98, 0.4), BROWN, 0.04),
        part(arc(0.06, 0.51, 0.035, 0.03), BROWN, sketch=False),
    ]


@_category("cup")
def _cup(rng: np.random.Generator) -> list[Shape]:
    colour = pick(rng, (*VIVID, WHITE))
    return [
        part(arc(0.47, 0.8, 0.38, 0.06), lighter(colour, 0.3)),
        line(arc(0.72, 0.5, 0.11, 0.12, -80, 80, 14), darker(colour, 0.8), 0.045),
        part(arc(0.47, 0.36, 0.27, 0.42, 0, 180, 24), colour),
        part(arc(0.47, 0.36, 0.27, 0.055), BROWN),
        line(arc(0.47, 0.4, 0.25, 0.3, 30, 150, 12), lighter(colour), 0.025, sketch=False),
    ]


@_category("bottle")
def _bottle(rng: np.random.Generator) -> list[Shape]:
    glass = pick(rng, (GREEN, BLUE, BROWN, TEAL))
    return [
        part(np.concatenate([pts(0.33, 0.42, 0.42, 0.27, 0.58, 0.27, 0.67, 0.42)]), glass),
        part(rounded(0.33, 0.38, 0.67, 0.92, 0.06), glass),
        part(rect(0.43, 0.12, 0.57, 0.3), glass),
        part(rect(0.41, 0.05, 0.59, 0.13), pick(rng, (RED, YELLOW, SILVER, WHITE))),
        part(rect(0.33, 0.52, 0.67, 0.74), pick(rng, (CREAM, WHITE, YELLOW, ORANGE))),
        line(pts(0.4, 0.63, 0.6, 0.63), BLACK, 0.02, sketch=False),
    ]


@_category("chair")
def _chair(rng: np.random.Generator) -> list[Shape]:
    wood = pick(rng, (WOOD, BROWN, RED, BLUE, GREEN))
    dark = darker(wood, 0.75)
    return [
        line(pts(0.35, 0.6, 0.36, 0.86), dark, 0.04),
        line(pts(0.65, 0.6, 0.64, 0.86), dark, 0.04),
        part(rect(0.27, 0.12, 0.33, 0.58), wood),
        part(rect(0.67, 0.12, 0.73, 0.58), wood),
        part(rounded(0.24, 0.08, 0.76, 0.2, 0.04), wood),
        part(rect(0.33, 0.3, 0.67, 0.36), wood),
        part(pts(0.26, 0.55, 0.74, 0.55, 0.79, 0.63, 0.21, 0.63), lighter(wood, 0.15)),
        line(pts(0.25, 0.63, 0.23, 0.94), wood, 0.045),
        line(pts(0.75, 0.63, 0.77, 0.94), wood, 0.045),
    ]


@_category("table lamp")
def _lamp(rng: np.random.Generator) -> list[Shape]:
    shade = pick(rng, (CREAM, YELLOW, PINK, TEAL, ORANGE, WHITE))
    metal = pick(rng, (SILVER, BROWN, BLACK))
    return [
        part(arc(0.5, 0.88, 0.22, 0.06), metal),
        part(rect(0.47, 0.42, 0.53, 0.87), metal),
        part(pts(0.31, 0.08, 0.69, 0.08, 0.84, 0.44, 0.16, 0.44), shade),
        line(pts(0.64, 0.44, 0.64, 0.58), BLACK, 0.012),
        part(arc(0.64, 0.6, 0.02, 0.025), metal, sketch=False),
        line(pts(0.2, 0.38, 0.8, 0.38), darker(shade, 0.85), 0.015, sketch=False),
    ]


@_category("clock")
def _clock(rng: np.random.Generator) -> list[Shape]:
    rim = pick(rng, (*VIVID, BLACK, BROWN))
    hour = float(rng.uniform(0, 360))
    minute = float(rng.uniform(0, 360))
    shapes = [part(arc(0.5, 0.5, 0.43, 0.43, n=40), rim), part(arc(0.5, 0.5, 0.36, 0.36), CREAM)]
    for k in range(12):
        a = math.radians(k * 30)
        r0 = 0.27 if k % 3 == 0 else 0.31
        tick = pts(0.5 + r0 * math.cos(a), 0.5 + r0 * math.sin(a), *_polar(0.34, a))
        shapes.append(line(tick, BLACK, 0.025 if k % 3 == 0 else 0.012, sketch=k % 3 == 0))
    shapes += [
        line(pts(0.5, 0.5, *_polar(0.18, math.radians(hour))), BLACK, 0.04),
        line(pts(0.5, 0.5, *_polar(0.28, math.radians(minute))), BLACK, 0.025),
        part(arc(0.5, 0.5, 0.03, 0.03), RED, sketch=False),
    ]
    return shapes


def _polar(r: float, angle: float) -> tuple[float, float]:
    return 0.5 + r * math.cos(angle), 0.5 + r * math.sin(angle)


@_category("key")
def _key(rng: np.random.Generator) -> list[Shape]:
    metal = pick(rng, (YELLOW, SILVER, ORANGE))
    return [
        ring(0.24, 0.5, 0.14, metal, 0.08),
        part(rect(0.37, 0.46, 0.9, 0.54), metal),
        line(pts(0.4, 0.485, 0.86, 0.485), lighter(metal, 0.5), 0.015, sketch=False),
        part(pts(0.66, 0.54, 0.71, 0.54, 0.71, 0.66, 0.66, 0.66), metal),
        part(pts(0.76, 0.54, 0.81, 0.54, 0.81, 0.62, 0.76, 0.62), metal),
        part(pts(0.9, 0.46, 0.94, 0.5, 0.9, 0.54), metal, sketch=False),
    ]


@_category("umbrella")
def _umbrella(rng: np.random.Generator) -> list[Shape]:
    canopy_colour = pick(rng, VIVID)
    top = arc(0.5, 0.47, 0.43, 0.35, 180, 360, 24)
    scallops = [
        arc(0.5 + 0.43 - 0.1075 * (2 * k + 1), 0.48, 0.1075, 0.05, 0, -180, 8) for k in range(4)
    ]
    canopy = np.concatenate([top, *scallops])
    ribs = [
        line(pts(0.5, 0.12, x, 0.48), darker(canopy_colour), 0.012) for x in (0.285, 0.5, 0.715)
    ]
    return [
        line(pts(0.5, 0.45, 0.5, 0.85), BLACK, 0.03),
        line(arc(0.44, 0.85, 0.06, 0.06, 0, 180, 10), BLACK, 0.03),
        part(canopy, canopy_colour),
        *ribs,
        line(pts(0.5, 0.13, 0.5, 0.06), BLACK, 0.025, sketch=False),
    ]


@_category("car")
def _car(rng: np.random.Generator) -> list[Shape]:
    paint = pick(rng, (RED, BLUE, YELLOW, GREEN, ORANGE, PURPLE, SILVER))
    glass = tone(SKY, rng, 10)
    body = pts(
        0.04, 0.64, 0.07, 0.5, 0.25, 0.46, 0.35, 0.31, 0.68, 0.31, 0.8, 0.46, 0.95, 0.5, 0.96, 0.65
    )
    return [
        part(body, paint),
        part(pts(0.37, 0.35, 0.5, 0.35, 0.5, 0.46, 0.28, 0.46), glass),
        part(pts(0.53, 0.35, 0.66, 0.35, 0.76, 0.46, 0.53, 0.46), glass),
        part(arc(0.27, 0.66, 0.1, 0.1), BLACK),
        part(arc(0.75, 0.66, 0.1, 0.1), BLACK),
        part(arc(0.27, 0.66, 0.045, 0.045), SILVER, sketch=False),
        part(arc(0.75, 0.66, 0.045, 0.045), SILVER, sketch=False),
        part(arc(0.93, 0.54, 0.025, 0.02), YELLOW, sketch=False),
        line(pts(0.515, 0.47, 0.515, 0.62), darker(paint), 0.012, sketch=False),
    ]


@_category("bicycle")
def _bicycle(rng: np.random.Generator) -> list[Shape]:
    frame = pick(rng, VIVID)
    spokes = [
        line(
            pts(
                cx - 0.18 * math.cos(a),
                0.64 - 0.18 * math.sin(a),
                cx + 0.18 * math.cos(a),
                0.64 + 0.18 * math.sin(a),
            ),
            GREY,
            0.006,
            sketch=False,
        )
        for cx in (0.23, 0.77)
        for a in (0.0, math.pi / 3, 2 * math.pi / 3)
    ]
    return [
        *spokes,
        ring(0.23, 0.64, 0.19, BLACK, 0.03),
        ring(0.77, 0.64, 0.19, BLACK, 0.03),
        line(pts(0.23, 0.64, 0.46, 0.64, 0.65, 0.38, 0.4, 0.38, 0.23, 0.64), frame, 0.03),
        line(pts(0.46, 0.64, 0.37, 0.3), frame, 0.03),
        line(pts(0.65, 0.38, 0.77, 0.64), frame, 0.03),
        line(pts(0.65, 0.38, 0.62, 0.25, 0.71, 0.23), BLACK, 0.03),
        part(pts(0.29, 0.27, 0.43, 0.27, 0.41, 0.31, 0.31, 0.31), BLACK),
    ]


@_category("house")
def _house(rng: np.random.Generator) -> list[Shape]:
    wall = pick(rng, (CREAM, YELLOW, PINK, SKY, WHITE, ORANGE))
    roof = pick(rng, (RED, BROWN, BLUE, DARK_GREEN))
    window = tone(SKY, rng, 10)
    return [
        part(rect(0.66, 0.16, 0.75, 0.38), darker(roof, 0.8)),
        part(rect(0.18, 0.45, 0.82, 0.9), wall),
        part(pts(0.08, 0.48, 0.5, 0.1, 0.92, 0.48), roof),
        part(rect(0.44, 0.64, 0.57, 0.9), pick(rng, (BROWN, RED, BLUE))),
        part(rect(0.25, 0.55, 0.37, 0.67), window),
        part(rect(0.64, 0.55, 0.76, 0.67), window),
        line(pts(0.31, 0.55, 0.31, 0.67), WHITE, 0.012, sketch=False),
        line(pts(0.7, 0.55, 0.7, 0.67), WHITE, 0.012, sketch=False),
    ]


@_category("tree")
def _tree(rng: np.random.Generator) -> list[Shape]:
    leaves = pick(rng, (GREEN, DARK_GREEN, GREEN, ORANGE))
    return [
        part(pts(0.44, 0.92, 0.46, 0.55, 0.54, 0.55, 0.56, 0.92), tone(BROWN, rng)),
        part(arc(0.32, 0.5, 0.2, 0.16), darker(leaves, 0.85)),
        part(arc(0.68, 0.5, 0.2, 0.16), darker(leaves, 0.85)),
        part(arc(0.5, 0.34, 0.3, 0.25), leaves),
        part(arc(0.42, 0.27, 0.07, 0.05), lighter(leaves, 0.3), sketch=False),
    ]


@_category("fish")
def _fish(rng: np.random.Generator) -> list[Shape]:
    scales = pick(rng, (ORANGE, BLUE, YELLOW, TEAL, RED, PURPLE))
    return [
        part(pts(0.4, 0.34, 0.55, 0.19, 0.62, 0.34), darker(scales, 0.8)),
        part(pts(0.73, 0.5, 0.95, 0.3, 0.9, 0.5, 0.95, 0.7), darker(scales, 0.85)),
        part(arc(0.44, 0.5, 0.33, 0.2, n=36), scales),
        line(arc(0.33, 0.5, 0.08, 0.14, -60, 60, 8), darker(scales), 0.015),
        part(arc(0.24, 0.45, 0.045, 0.045), WHITE),
        part(arc(0.235, 0.45, 0.02, 0.02), BLACK, sketch=False),
        line(pts(0.5, 0.42, 0.56, 0.5, 0.5, 0.58), lighter(scales), 0.012, sketch=False),
    ]


@_category("bird")
def _bird(rng: np.random.Generator) -> list[Shape]:
    feathers = pick(rng, (BLUE, RED, YELLOW, GREEN, ORANGE, TEAL))
    return [
        line(pts(0.47, 0.7, 0.45, 0.88), ORANGE, 0.02),
        line(pts(0.56, 0.7, 0.57, 0.88), ORANGE, 0.02),
        part(pts(0.3, 0.52, 0.07, 0.4, 0.1, 0.6), darker(feathers, 0.8)),
        part(arc(0.49, 0.56, 0.26, 0.18), feathers),
        part(arc(0.73, 0.38, 0.14, 0.14), feathers),
        part(pts(0.85, 0.34, 0.98, 0.39, 0.85, 0.43), ORANGE),
        part(rotate(arc(0.45, 0.53, 0.17, 0.08), -15, 0.45, 0.53), darker(feathers, 0.78)),
        part(arc(0.77, 0.35, 0.025, 0.025), BLACK, sketch=False),
    ]


@_category("cat")
def _cat(rng: np.random.Generator) -> list[Shape]:
    fur = pick(rng, (ORANGE, GREY, BROWN, CREAM, BLACK))
    eyes = pick(rng, (GREEN, YELLOW, BLUE))
    shapes = [
        part(pts(0.17, 0.42, 0.22, 0.08, 0.44, 0.3), fur),
        part(pts(0.83, 0.42, 0.78, 0.08, 0.56, 0.3), fur),
        part(pts(0.23, 0.34, 0.25, 0.16, 0.37, 0.28), PINK, sketch=False),
        part(pts(0.77, 0.34, 0.75, 0.16, 0.63, 0.28), PINK, sketch=False),
        part(arc(0.5, 0.56, 0.35, 0.3, n=36), fur),
        part(arc(0.37, 0.5, 0.06, 0.05), eyes),
        part(arc(0.63, 0.5, 0.06, 0.05), eyes),
        part(arc(0.37, 0.5, 0.018, 0.045), BLACK, sketch=False),
        part(arc(0.63, 0.5, 0.018, 0.045), BLACK, sketch=False),
        part(pts(0.46, 0.61, 0.54, 0.61, 0.5, 0.66), PINK),
        line(pts(0.42, 0.72, 0.5, 0.67, 0.58, 0.72), BLACK, 0.015),
    ]
    for side in (-1, 1):
        for dy in (-0.03, 0.03):
            whisker = pts(0.5 + side * 0.13, 0.66 + dy, 0.5 + side * 0.42, 0.63 + 2.2 * dy)
            shapes.append(line(whisker, BLACK, 0.01, sketch=dy < 0))
    return shapes


@_category("book")
def _book(rng: np.random.Generator) -> list[Shape]:
    cover = pick(rng, (RED, BLUE, GREEN, PURPLE, TEAL, ORANGE))
    return [
        part(pts(0.78, 0.14, 0.83, 0.17, 0.83, 0.91, 0.78, 0.88), CREAM),
        part(rect(0.25, 0.12, 0.78, 0.88), cover),
        part(rect(0.19, 0.12, 0.27, 0.88), darker(cover, 0.7)),
        part(rect(0.36, 0.26, 0.7, 0.4), lighter(cover, 0.6)),
        line(pts(0.4, 0.33, 0.66, 0.33), darker(cover), 0.015, sketch=False),
        line(pts(0.42, 0.7, 0.64, 0.7), lighter(cover, 0.6), 0.012, sketch=False),
    ]


@_category("pencil")
def _pencil(rng: np.random.Generator) -> list[Shape]:
    paint = pick(rng, (YELLOW, YELLOW, RED, BLUE, GREEN))
    angle = float(rng.choice((-35.0, 35.0)))
    shapes = [
        part(rect(0.15, 0.44, 0.72, 0.56), paint),
        part(rect(0.09, 0.44, 0.16, 0.56), SILVER),
        part(rounded(0.03, 0.44, 0.1, 0.56, 0.02), tone(PINK, rng)),
        part(pts(0.72, 0.44, 0.9, 0.5, 0.72, 0.56), WOOD),
        part(pts(0.84, 0.48, 0.9, 0.5, 0.84, 0.52), BLACK, sketch=False),
        line(pts(0.16, 0.5, 0.71, 0.5), darker(paint, 0.8), 0.01, sketch=False),
    ]
    return [replace(s, points=rotate(s.points, angle)) for s in shapes]


@_category("scissors")
def _scissors(rng: np.random.Generator) -> list[Shape]:
    grip = pick(rng, (RED, BLUE, BLACK, ORANGE, GREEN))
    return [
        part(pts(0.44, 0.53, 0.92, 0.2, 0.96, 0.25, 0.53, 0.58), SILVER),
        part(pts(0.44, 0.47, 0.92, 0.8, 0.96, 0.75, 0.53, 0.42), SILVER),
        line(pts(0.34, 0.38, 0.48, 0.5), grip, 0.05),
        line(pts(0.34, 0.62, 0.48, 0.5), grip, 0.05),
        ring(0.24, 0.31, 0.12, grip, 0.05),
        ring(0.24, 0.69, 0.12, grip, 0.05),
        part(arc(0.485, 0.5, 0.02, 0.02), BLACK, sketch=False),
    ]


@_category("light bulb")
def _bulb(rng: np.random.Generator) -> list[Shape]:
    glass = tone((252, 240, 160), rng, 8)
    globe = arc(0.5, 0.37, 0.27, 0.28, 125, 415, 32)
    bulb = np.concatenate([globe, pts(0.6, 0.72, 0.4, 0.72)])
    return [
        part(bulb, glass),
        part(rect(0.4, 0.72, 0.6, 0.86), GREY),
        line(pts(0.4, 0.77, 0.6, 0.77), darker(GREY), 0.015),
        line(pts(0.4, 0.81, 0.6, 0.81), darker(GREY), 0.015),
        part(pts(0.45, 0.86, 0.55, 0.86, 0.5, 0.93), BLACK),
        line(pts(0.44, 0.6, 0.46, 0.4, 0.5, 0.46, 0.54, 0.4, 0.56, 0.6), ORANGE, 0.015),
    ]


@_category("hat")
def _hat(rng: np.random.Generator) -> list[Shape]:
    felt = pick(rng, (BLACK, BROWN, BLUE, RED, PURPLE))
    band = pick(rng, (RED, YELLOW, WHITE, GREEN))
    return [
        part(arc(0.5, 0.76, 0.44, 0.09), darker(felt, 0.85)),
        part(
            np.concatenate(
                [pts(0.28, 0.2), arc(0.5, 0.76, 0.22, 0.05, 180, 0, 10), pts(0.72, 0.2)]
            ),
            felt,
        ),
        part(arc(0.5, 0.2, 0.22, 0.05), lighter(felt, 0.2)),
        part(rect(0.28, 0.6, 0.72, 0.69), band),
    ]


@_category("shoe")
def _shoe(rng: np.random.Generator) -> list[Shape]:
    upper = pick(rng, (RED, BLUE, WHITE, GREEN, ORANGE, PURPLE, BLACK))
    upper_pts = pts(0.06, 0.78, 0.1, 0.5, 0.38, 0.45, 0.5, 0.56, 0.8, 0.61, 0.94, 0.69, 0.95, 0.78)
    return [
        part(upper_pts, upper),
        part(pts(0.04, 0.77, 0.96, 0.77, 0.96, 0.87, 0.07, 0.87), WHITE),
        part(arc(0.24, 0.48, 0.14, 0.035), BLACK),
        line(pts(0.42, 0.5, 0.5, 0.6), WHITE, 0.018),
        line(pts(0.48, 0.52, 0.57, 0.61), WHITE, 0.018),
        line(pts(0.55, 0.55, 0.63, 0.63), WHITE, 0.018, sketch=False),
        line(arc(0.86, 0.77, 0.1, 0.1, 250, 330, 6), darker(upper), 0.012, sketch=False),
    ]


@_category("guitar")
def _guitar(rng: np.random.Generator) -> list[Shape]:
    wood = pick(rng, (WOOD, ORANGE, RED, BROWN))
    angle = float(rng.uniform(-25, 25))
    shapes = [
        part(arc(0.5, 0.72, 0.22, 0.2), wood),
        part(arc(0.5, 0.48, 0.17, 0.15), wood),
        part(arc(0.5, 0.58, 0.06, 0.06), BLACK),
        part(rect(0.47, 0.08, 0.53, 0.45), BROWN),
        part(rounded(0.44, 0.01, 0.56, 0.1, 0.02), darker(BROWN, 0.8)),
        part(rect(0.43, 0.79, 0.57, 0.82), BLACK),
        line(pts(0.49, 0.08, 0.49, 0.8), SILVER, 0.006, sketch=False),
        line(pts(0.51, 0.08, 0.51, 0.8), SILVER, 0.006, sketch=False),
    ]
    return [replace(s, points=rotate(s.points, angle)) for s in shapes]


@_category("star")
def _star(rng: np.random.Generator) -> list[Shape]:
    gold = pick(rng, (YELLOW, ORANGE, YELLOW))
    a = np.radians(np.arange(10) * 36 - 90)
    r = np.where(np.arange(10) % 2 == 0, 0.46, 0.19)
    outer = np.stack([0.5 + r * np.cos(a), 0.53 + r * np.sin(a)], axis=1)
    inner = np.stack([0.5 + 0.55 * r * np.cos(a), 0.53 + 0.55 * r * np.sin(a)], axis=1)
    return [part(outer, gold), part(inner, lighter(gold, 0.4), sketch=False)]


@_category("flower")
def _flower(rng: np.random.Generator) -> list[Shape]:
    petal = pick(rng, (PINK, RED, PURPLE, YELLOW, ORANGE, WHITE))
    count = int(rng.integers(6, 9))
    shapes = [
        line(pts(0.5, 0.45, 0.52, 0.96), GREEN, 0.04),
        part(rotate(arc(0.64, 0.75, 0.12, 0.045), -30, 0.64, 0.75), tone(GREEN, rng)),
    ]
    for k in range(count):
        angle = 360 * k / count
        cx, cy = (
            0.5 + 0.17 * math.cos(math.radians(angle)),
            0.34 + 0.17 * math.sin(math.radians(angle)),
        )
        shapes.append(part(rotate(arc(cx, cy, 0.14, 0.07), angle, cx, cy), petal))
    shapes.append(part(arc(0.5, 0.34, 0.09, 0.09), pick(rng, (YELLOW, BROWN, ORANGE))))
    return shapes


@_category("mushroom")
def _mushroom(rng: np.random.Generator) -> list[Shape]:
    cap = pick(rng, (RED, RED, BROWN, ORANGE))
    cap_pts = np.concatenate(
        [arc(0.5, 0.54, 0.42, 0.38, 180, 360, 24), pts(0.92, 0.56, 0.08, 0.56)]
    )
    return [
        part(rounded(0.4, 0.48, 0.6, 0.9, 0.05), CREAM),
        part(cap_pts, cap),
        part(arc(0.36, 0.36, 0.05, 0.04), WHITE),
        part(arc(0.58, 0.27, 0.06, 0.045), WHITE),
        part(arc(0.7, 0.45, 0.04, 0.035), WHITE, sketch=False),
        line(pts(0.44, 0.65, 0.56, 0.65), darker(CREAM, 0.85), 0.012, sketch=False),
    ]


@_category("sailboat")
def _sailboat(rng: np.random.Generator) -> list[Shape]:
    hull = pick(rng, (RED, BLUE, BROWN, BLACK, GREEN))
    sail = pick(rng, (WHITE, CREAM, YELLOW, ORANGE))
    return [
        line(pts(0.5, 0.08, 0.5, 0.72), BROWN, 0.025),
        part(pts(0.53, 0.12, 0.53, 0.67, 0.86, 0.67), sail),
        part(pts(0.47, 0.22, 0.47, 0.67, 0.2, 0.67), lighter(sail, 0.3)),
        part(pts(0.1, 0.7, 0.9, 0.7, 0.76, 0.86, 0.24, 0.86), hull),
        part(pts(0.5, 0.08, 0.62, 0.11, 0.5, 0.14), RED, sketch=False),
    ]


@_category("candle")
def _candle(rng: np.random.Generator) -> list[Shape]:
    wax = pick(rng, (WHITE, RED, CREAM, PINK, BLUE, PURPLE))
    flame = np.concatenate([arc(0.5, 0.2, 0.055, 0.06, 0, 180, 10), pts(0.5, 0.04)])
    return [
        part(rect(0.38, 0.36, 0.62, 0.92), wax),
        part(arc(0.5, 0.36, 0.12, 0.035), lighter(wax, 0.3)),
        line(pts(0.5, 0.35, 0.5, 0.27), BLACK, 0.015),
        part(flame, ORANGE),
        part(
            np.concatenate([arc(0.5, 0.21, 0.028, 0.035, 0, 180, 8), pts(0.5, 0.11)]),
            YELLOW,
            sketch=False,
        ),
        part(
            pts(0.56, 0.36, 0.6, 0.36, 0.6, 0.5, 0.58, 0.52, 0.56, 0.5),
            lighter(wax, 0.2),
            sketch=False,
        ),
    ]


#: Every category name, in a fixed order (sample RNGs index into it).
CATEGORIES: tuple[str, ...] = tuple(_BUILDERS)


def build(category: str, rng: np.random.Generator, *, pose: bool = True) -> list[Shape]:
    """The shapes of one instance of `category`: its colours, plus a slight random tilt."""
    shapes = _BUILDERS[category](rng)
    if pose:
        tilt = float(rng.uniform(-6, 6))
        shapes = [replace(s, points=rotate(s.points, tilt)) for s in shapes]
    return shapes


def extent(shapes: Sequence[Shape]) -> tuple[float, float, float, float]:
    """The drawing's bounds in the unit box (x0, y0, x1, y1), to stand it on a surface."""
    allpts = np.concatenate([s.points for s in shapes])
    (x0, y0), (x1, y1) = allpts.min(axis=0), allpts.max(axis=0)
    return float(x0), float(y0), float(x1), float(y1)


def luminance(shapes: Sequence[Shape], size: int = 48) -> float:
    """Mean brightness (0-255) of the drawn object, to pick a backdrop it stands out from."""
    image = Image.new("RGB", (size, size), (0, 0, 0))
    mask = Image.new("L", (size, size), 0)
    render(shapes, ImageDraw.Draw(image), (0, 0, size))
    render_mask(shapes, ImageDraw.Draw(mask), (0, 0, size))
    inside = np.asarray(mask) > 0
    return float(np.asarray(image.convert("L"))[inside].mean()) if inside.any() else 128.0


def _xy(points: np.ndarray, box: Box) -> list[tuple[float, float]]:
    x0, y0, side = box
    return [(x0 + x * side, y0 + y * side) for x, y in points.tolist()]


def _pixels(width: float, side: float) -> int:
    return max(1, round(width * side))


def render(shapes: Sequence[Shape], draw: ImageDraw.ImageDraw, box: Box) -> None:
    """Draw the coloured object into `box` of the image behind `draw`."""
    side = box[2]
    outline = max(1, round(side / 90))
    for s in shapes:
        xy = _xy(s.points, box)
        if s.closed:
            draw.polygon(xy, fill=s.fill, outline=darker(s.fill or BLACK, 0.55), width=outline)
        else:
            draw.line(xy, fill=s.fill, width=_pixels(s.width, side), joint="curve")


def render_mask(
    shapes: Sequence[Shape], draw: ImageDraw.ImageDraw, box: Box, value: int = 255
) -> None:
    """Draw the object's footprint (same pixels as `render`) in one value, e.g. on an "L" mask."""
    side = box[2]
    for s in shapes:
        xy = _xy(s.points, box)
        if s.closed:
            draw.polygon(xy, fill=value, outline=value, width=max(1, round(side / 90)))
        else:
            draw.line(xy, fill=value, width=_pixels(s.width, side), joint="curve")


def sketch_strokes(
    shapes: Sequence[Shape], rng: np.random.Generator, *, wobble: float = 0.008
) -> list[np.ndarray]:
    """The pen strokes of the line drawing, in drawing order, with a hand-drawn wobble.

    Closed shapes become closed loops. A drawing of fewer than four strokes has its longest
    stroke split in two, so that every sketch can be shown in at least four stages.
    """
    strokes: list[np.ndarray] = []
    for s in shapes:
        if not s.sketch:
            continue
        p = np.concatenate([s.points, s.points[:1]]) if s.closed else s.points
        strokes.append(p + _smooth_noise(rng, len(p), wobble))
    while len(strokes) < 4:
        longest = max(range(len(strokes)), key=lambda i: len(strokes[i]))
        stroke = strokes.pop(longest)
        if len(stroke) < 4:  # too short to split: densify it first
            stroke = np.repeat(stroke, 2, axis=0)
        half = len(stroke) // 2
        strokes[longest:longest] = [stroke[: half + 1], stroke[half:]]
    return strokes


def _smooth_noise(rng: np.random.Generator, n: int, scale: float) -> np.ndarray:
    """A slow drift plus a per-stroke offset: a hand's wobble, not pixel jitter."""
    raw = rng.normal(0.0, scale, size=(n + 4, 2))
    kernel = np.ones(5) / 5.0
    drift = np.stack([np.convolve(raw[:, k], kernel, mode="valid") for k in range(2)], axis=1)
    return drift * 2.0 + rng.normal(0.0, scale, size=(1, 2))


def draw_strokes(
    strokes: Sequence[np.ndarray],
    draw: ImageDraw.ImageDraw,
    box: Box,
    colour: int | RGB,
    width: int,
) -> None:
    for stroke in strokes:
        draw.line(_xy(stroke, box), fill=colour, width=width, joint="curve")
