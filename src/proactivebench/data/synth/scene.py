"""Backgrounds: rooms, tables and studio backdrops, built with NumPy in one vectorised pass.

Backgrounds carry soft colour gradients and a little structure (wood grain, window, skirting)
so that corruptions such as blur or pixelation have edges to destroy, but they never contain
anything that looks like one of the object categories: whatever the model should name is
always the drawn object.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from proactivebench.data.synth.objects import RGB, darker, lighter

_WALLS: tuple[RGB, ...] = (
    (222, 214, 196),
    (200, 216, 226),
    (226, 206, 200),
    (212, 224, 204),
    (230, 224, 210),
    (205, 200, 220),
)
_WOODS: tuple[RGB, ...] = ((176, 128, 82), (150, 104, 66), (196, 160, 112), (120, 90, 70))
_FLOORS: tuple[RGB, ...] = ((170, 150, 130), (140, 135, 130), (186, 170, 150), (120, 110, 100))


def _pick(rng: np.random.Generator, colours: tuple[RGB, ...]) -> np.ndarray:
    base = np.asarray(colours[int(rng.integers(len(colours)))], dtype=np.float32)
    return np.clip(base + rng.uniform(-12, 12, size=3), 0, 255)


def _gradient(height: int, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    t = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None, None]
    return (1 - t) * top + t * bottom


def room_with_table(width: int, height: int, horizon: int, rng: np.random.Generator) -> Image.Image:
    """A wall down to `horizon`, a wooden table top below it with grain and a front edge."""
    wall = _pick(rng, _WALLS)
    wood = _pick(rng, _WOODS)
    canvas = np.empty((height, width, 3), dtype=np.float32)
    canvas[:horizon] = _gradient(horizon, wall * 1.02, wall * 0.9)
    rows = height - horizon
    table = _gradient(rows, wood * 1.08, wood * 0.82)
    x = np.arange(width, dtype=np.float32)[None, :, None]
    y = np.arange(rows, dtype=np.float32)[:, None, None]
    phase = float(rng.uniform(0, 6.3))
    grain = 7.0 * np.sin(0.11 * y + 0.9 * np.sin(0.021 * x + phase))
    canvas[horizon:] = table + grain
    canvas[horizon : horizon + 2] *= 0.72  # the table's back edge
    image = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    _wall_decor(ImageDraw.Draw(image), width, horizon, rng)
    return image


def _wall_decor(
    draw: ImageDraw.ImageDraw, width: int, horizon: int, rng: np.random.Generator
) -> None:
    """A window or a plain frame high on the wall, away from the centre where objects stand."""
    if horizon < 60:
        return
    w = int(rng.integers(34, 56))
    h = int(rng.integers(26, min(48, horizon - 20)))
    x0 = int(rng.choice((rng.integers(6, 30), width - w - int(rng.integers(6, 30)))))
    y0 = int(rng.integers(6, max(7, horizon - h - 14)))
    frame: RGB = (240, 240, 236) if rng.random() < 0.5 else (110, 80, 60)
    sky = tuple(int(v) for v in (150 + rng.integers(0, 40), 190 + rng.integers(0, 30), 230))
    draw.rectangle((x0, y0, x0 + w, y0 + h), fill=sky, outline=frame, width=3)  # type: ignore[arg-type]
    draw.line((x0 + w // 2, y0, x0 + w // 2, y0 + h), fill=frame, width=2)


def studio(
    width: int,
    height: int,
    rng: np.random.Generator,
    brightness: float = 1.0,
    *,
    dark: bool = False,
) -> Image.Image:
    """A seamless photo backdrop, light or dark grey, brighter in the middle.

    A photographer picks the backdrop the object stands out from: `dark` for light objects.
    """
    low, high = (62.0, 92.0) if dark else (200.0, 232.0)
    base = np.asarray(rng.uniform(low, high, size=1).repeat(3), dtype=np.float32)
    tint = rng.uniform(-6, 6, size=3).astype(np.float32)
    canvas = _gradient(height, base + tint + 10, base + tint - 28)
    x = np.linspace(-1, 1, width, dtype=np.float32)[None, :, None]
    canvas = canvas * (1.0 - 0.08 * x**2) * brightness
    return Image.fromarray(
        np.clip(np.broadcast_to(canvas, (height, width, 3)), 0, 255).astype(np.uint8)
    )


def turntable(draw: ImageDraw.ImageDraw, cx: float, cy: float, rx: float, ry: float) -> None:
    """The rotating plate the MVP-N objects stand on."""
    draw.rectangle((cx - rx, cy, cx + rx, cy + 10), fill=(70, 70, 76))
    draw.ellipse((cx - rx, cy + 10 - ry, cx + rx, cy + 10 + ry), fill=(70, 70, 76))
    draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), fill=(118, 118, 126), outline=(60, 60, 66))


def living_room(width: int, height: int, horizon: int, rng: np.random.Generator) -> Image.Image:
    """A wide room for COCO: wall, skirting, floor with a rug, a window and a door."""
    wall = _pick(rng, _WALLS)
    floor = _pick(rng, _FLOORS)
    canvas = np.empty((height, width, 3), dtype=np.float32)
    canvas[:horizon] = _gradient(horizon, wall * 1.03, wall * 0.88)
    rows = height - horizon
    x = np.arange(width, dtype=np.float32)[None, :, None]
    planks = 6.0 * (((x // 37) % 2) - 0.5)
    canvas[horizon:] = _gradient(rows, floor * 0.85, floor * 1.05) + planks
    image = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    skirting = tuple(int(v) for v in lighter(tuple(int(c) for c in wall), 0.5))  # type: ignore[arg-type]
    draw.rectangle((0, horizon - 6, width, horizon), fill=skirting, outline=darker(skirting, 0.8))  # type: ignore[arg-type]
    rug = tuple(int(v) for v in rng.integers(90, 200, size=3))
    rx = int(rng.integers(width // 5, width // 3))
    cx = int(rng.integers(rx, width - rx))
    draw.ellipse(
        (cx - rx, horizon + rows * 0.35, cx + rx, height - 4),
        fill=rug,  # type: ignore[arg-type]
        outline=darker(rug, 0.7),  # type: ignore[arg-type]
        width=3,
    )
    # A window on one side and a door on the other.
    left_window = bool(rng.random() < 0.5)
    wx = int(rng.integers(14, 60)) if left_window else width - int(rng.integers(100, 150))
    wy = int(rng.integers(16, 40))
    draw.rectangle(
        (wx, wy, wx + 86, wy + 70), fill=(168, 204, 236), outline=(245, 245, 240), width=4
    )
    draw.line((wx + 43, wy, wx + 43, wy + 70), fill=(245, 245, 240), width=3)
    draw.line((wx, wy + 35, wx + 86, wy + 35), fill=(245, 245, 240), width=3)
    door = tuple(int(v) for v in _pick(rng, _WOODS))
    dx = width - int(rng.integers(70, 110)) if left_window else int(rng.integers(10, 40))
    draw.rectangle(
        (dx, horizon - 150, dx + 58, horizon - 6), fill=door, outline=darker(door, 0.7), width=2
    )  # type: ignore[arg-type]
    draw.ellipse((dx + 46, horizon - 82, dx + 52, horizon - 76), fill=(220, 200, 90))
    return image
