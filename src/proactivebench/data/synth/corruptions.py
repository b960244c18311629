"""The eight IN-C corruptions, each at five severities that lower image quality strictly.

A corruption is a function of a clean image and a continuous strength (larger is worse).
`corrupt_levels` evaluates the five nominal strengths and, should a level fail to lower the
PSNR against the clean image (JPEG and pixelation are not monotone for every picture), raises
that level's strength until it does: the data set promises that severity 5 really is the
worst image and every enhancement step really helps.

Random parts (the noise field, the artefact list) are drawn once per image and shared by all
levels, so level k+1 is level k with more of the same damage, not a new random pattern.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFilter


@dataclass(frozen=True)
class Corruption:
    """One corruption: its enhancement option (exactly one protocol keyword) and strengths."""

    name: str
    option: str
    action: str
    strengths: tuple[float, float, float, float, float]
    apply: Callable[[np.ndarray, float, int], np.ndarray]


def _u8(array: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(array), 0, 255).astype(np.uint8)


def _brightness(img: np.ndarray, s: float, _: int) -> np.ndarray:
    return _u8(img.astype(np.float32) + s * 255.0)


def _contrast(img: np.ndarray, s: float, _: int) -> np.ndarray:
    x = img.astype(np.float32)
    mean = x.mean(axis=(0, 1), keepdims=True)
    return _u8(mean + (x - mean) * math.exp(-s))


def _saturation(img: np.ndarray, s: float, _: int) -> np.ndarray:
    x = img.astype(np.float32)
    grey = (x @ np.asarray([0.299, 0.587, 0.114], dtype=np.float32))[..., None]
    return _u8(grey + (x - grey) * math.exp(-s))


def _blur(img: np.ndarray, s: float, _: int) -> np.ndarray:
    return np.asarray(Image.fromarray(img).filter(ImageFilter.GaussianBlur(radius=s)))


def _noise(img: np.ndarray, s: float, seed: int) -> np.ndarray:
    # The same standard-normal field at every level: it is regenerated from one seed.
    field = np.random.default_rng(seed).standard_normal(img.shape, dtype=np.float32)
    return _u8(img.astype(np.float32) + field * (s * 255.0))


def _jpeg(img: np.ndarray, s: float, _: int) -> np.ndarray:
    quality = max(1, round(100 * math.exp(-s)))
    buffer = io.BytesIO()
    Image.fromarray(img).save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    with Image.open(buffer) as decoded:
        return np.asarray(decoded.convert("RGB"))


def _pixelate(img: np.ndarray, s: float, _: int) -> np.ndarray:
    h, w = img.shape[:2]
    factor = math.exp(-s)
    small = Image.fromarray(img).resize(
        (max(2, round(w * factor)), max(2, round(h * factor))), Image.Resampling.BOX
    )
    return np.asarray(small.resize((w, h), Image.Resampling.NEAREST))


def _artifacts(img: np.ndarray, s: float, seed: int) -> np.ndarray:
    """Digital glitches: coloured blocks and horizontally torn bands; `s` is how many.

    The glitch list comes from `seed`, so a stronger level repeats the weaker one's glitches
    and adds more.
    """
    ops = np.random.default_rng(seed)
    out = img.copy()
    h, w = img.shape[:2]
    for _ in range(max(1, round(s))):
        if ops.random() < 0.6:
            bw, bh = (int(v) for v in ops.integers(6, 28, size=2))
            x, y = int(ops.integers(0, w - bw)), int(ops.integers(0, h - bh))
            out[y : y + bh, x : x + bw] = ops.integers(0, 256, size=3, dtype=np.uint8)
        else:
            bh = int(ops.integers(3, 12))
            y = int(ops.integers(0, h - bh))
            out[y : y + bh] = np.roll(out[y : y + bh], int(ops.integers(12, 60)), axis=1)
    return out


CORRUPTIONS: dict[str, Corruption] = {
    c.name: c
    for c in (
        Corruption(
            "brightness",
            "Adjust the brightness.",
            "BRIGHTNESS",
            (0.12, 0.22, 0.32, 0.42, 0.52),
            _brightness,
        ),
        Corruption(
            "contrast", "Increase the contrast.", "CONTRAST", (0.5, 0.85, 1.25, 1.7, 2.3), _contrast
        ),
        Corruption(
            "saturation",
            "Increase the color saturation.",
            "SATURATE",
            (0.45, 0.8, 1.2, 1.7, 2.6),
            _saturation,
        ),
        Corruption("blur", "Deblur the image.", "BLUR", (1.0, 1.8, 2.8, 4.0, 5.5), _blur),
        Corruption("noise", "Denoise the image.", "NOISE", (0.06, 0.1, 0.15, 0.22, 0.32), _noise),
        Corruption(
            "jpeg",
            "Reduce the JPEG compression.",
            "JPEG_COMPRESSION",
            (1.4, 1.9, 2.4, 2.9, 3.6),
            _jpeg,
        ),
        Corruption(
            "pixelate",
            "Increase the resolution.",
            "PIXELATE",
            (0.8, 1.15, 1.5, 1.9, 2.3),
            _pixelate,
        ),
        Corruption(
            "artifacts", "Remove the artifacts.", "ARTIFACTS", (6, 12, 20, 30, 44), _artifacts
        ),
    )
}


def psnr(reference: np.ndarray, image: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB (inf for identical images)."""
    mse = float(np.mean((reference.astype(np.float64) - image.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10.0 * math.log10(255.0**2 / mse)


def corrupt_levels(clean: np.ndarray, name: str, seed: int) -> list[np.ndarray]:
    """Severities 1..5 of `name` applied to `clean` (uint8 HxWx3), PSNR strictly falling.

    `seed` fixes the random parts (noise field, glitches) shared by all levels.
    """
    corruption = CORRUPTIONS[name]
    levels: list[np.ndarray] = []
    previous = math.inf
    for strength in corruption.strengths:
        image = corruption.apply(clean, strength, seed)
        quality = psnr(clean, image)
        attempts = 0
        while quality >= previous:
            attempts += 1
            if attempts > 40:
                raise RuntimeError(f"{name}: cannot make a worse level than PSNR {previous:.2f}")
            strength = strength * 1.1 + 0.02
            image = corruption.apply(clean, strength, seed)
            quality = psnr(clean, image)
        levels.append(image)
        previous = quality
    return levels
