"""QD: a line sketch shown stroke by stroke, like a QuickDraw drawing in progress.

Frame 0 holds only half of the first stroke (part of an outline that could be anything);
each DETAILS action shows a frame with more strokes, and the last frame is the complete
drawing. Frames whose new strokes would add no ink are merged into the next one, so ink grows
strictly.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw

from proactivebench.data.synth import objects
from proactivebench.data.synth.common import Sample, choice, choose_categories, sample_dir
from proactivebench.data.synth.common import options as make_options
from proactivebench.data.synth.common import record as make_record

SHORT = "QD"
SIZE = 256
PROACTIVE_CHOICES = ("Add more details.", "Show more strokes of the sketch.")
PROMPTS = ("What does this sketch show?", "What is being drawn?", "What object is in the drawing?")


def stroke_counts(total: int, frames: int) -> list[int]:
    """How many strokes each frame shows: one first, then evenly up to `total`, strictly rising."""
    frames = max(2, min(frames, total))
    return [1] + [1 + math.ceil((total - 1) * k / (frames - 1)) for k in range(1, frames)]


def make_sample(rng: np.random.Generator, index: int, slot: int) -> Sample:
    answer, categories = choose_categories(rng)
    shapes = objects.build(answer, rng)
    strokes = objects.sketch_strokes(shapes, rng)
    # The first stage shows half of the first outline only: a partial arc or corner says little.
    head = strokes[0]
    if len(head) >= 4:
        half = len(head) // 2
        strokes[:1] = [head[: half + 1], head[half:]]
    counts = stroke_counts(len(strokes), int(rng.integers(4, 7)))
    side = int(rng.integers(196, 236))
    box = (int(rng.integers(4, SIZE - side - 3)), int(rng.integers(4, SIZE - side - 3)), side)
    width = int(rng.integers(3, 5))

    frames: list[Image.Image] = []
    ink: list[int] = []
    for count in counts:
        frame = Image.new("L", (SIZE, SIZE), 255)
        objects.draw_strokes(strokes[:count], ImageDraw.Draw(frame), box, 0, width)
        dark = int((np.asarray(frame) < 128).sum())
        if ink and dark <= ink[-1]:
            # No visible progress: these strokes are shown with the next ones, or, for the
            # complete drawing, in place of the previous stage (drawing never removes ink).
            if count == counts[-1]:
                frames[-1] = frame
            continue
        frames.append(frame)
        ink.append(dark)

    folder = sample_dir(SHORT, index)
    images = {f"{folder}/{k:04d}.png": frame for k, frame in enumerate(frames)}
    n = len(frames)
    rec = make_record(
        index,
        f"{folder}/{{image}}.png",
        0,
        n,
        n - 1,
        choice(rng, PROMPTS),
        make_options(rng, [choice(rng, PROACTIVE_CHOICES)]),
        categories,
        answer,
    )
    return Sample(rec, images, {"ink": ink})
