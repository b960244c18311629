"""CIT: a kitchen clip in which a hand brings the object in late, or takes it away early.

The first frame shows the empty counter, so the model must wait (the object arrives later) or
rewind (it was there earlier), `step_size` frames per action. The data set cycles through four
kinds of start so that both prunings of the protocol occur: an arrival with the first frame
closer to the start than one step (no rewind shown), a departure with the first frame closer
to the end than one step (no wait shown), and one of each with the start anywhere.
"""

from __future__ import annotations

import math

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

SHORT = "CIT"
WIDTH, HEIGHT = 256, 192
PROACTIVE = ("Rewind the video.", "Wait for the object to appear.")
PROMPTS = ("What object is placed on the counter?", "What object is shown in the video?")
#: (the object arrives: True / leaves: False, first frame pinned to the clip's edge)
KINDS: tuple[tuple[bool, bool], ...] = ((True, True), (False, True), (True, False), (False, False))
#: Frames an arrival takes: off-screen, 1/3 in, 2/3 in, then at rest.
_ENTRY = 3


def _arrival_plan(
    rng: np.random.Generator, frames: int, step: int, pinned: bool
) -> tuple[int, int, int]:
    """(first frame, frame of arrival start, moves needed) for an object that arrives.

    Frames before `start` are empty; from `start + _ENTRY - 1` on the object is at rest.
    """
    first = int(rng.integers(0, step)) if pinned else int(rng.integers(0, frames - 5))
    start = int(rng.integers(first + 1, frames - _ENTRY + 1))
    # An earlier arrival needs fewer moves; at start = first + 1 it always fits the clip.
    for candidate in range(start, first, -1):
        moves = math.ceil((candidate + _ENTRY - 1 - first) / step)
        if first + moves * step <= frames - 1:
            return first, candidate, moves
    raise RuntimeError(f"no arrival fits a clip of {frames} frames with step {step}")


def make_sample(rng: np.random.Generator, index: int, slot: int) -> Sample:
    answer, categories = choose_categories(rng)
    arrives, pinned = KINDS[slot % len(KINDS)]
    frames = int(rng.integers(10, 17))
    step = int(rng.integers(1, 4))
    first, start, moves = _arrival_plan(rng, frames, step, pinned)
    # progress(k): 0 off-screen .. 1 at rest, for an arrival; a departure is its mirror in time.
    progress = [min(1.0, max(0.0, (k - start + 1) / _ENTRY)) for k in range(frames)]
    if not arrives:
        progress = progress[::-1]
        first = frames - 1 - first
    max_steps = moves + 1 + int(rng.integers(0, 3))

    horizon = int(rng.integers(100, 120))
    background = scene.room_with_table(WIDTH, HEIGHT, horizon, rng)
    side = int(rng.integers(66, 86))
    rest_x = int(rng.integers(WIDTH // 2 - 40, WIDTH // 2 + 41)) - side // 2
    shapes = objects.build(answer, rng)
    oy = round(horizon + 14 - side * objects.extent(shapes)[3])  # standing on the counter
    from_left = bool(rng.random() < 0.5)
    off_x = -side - 6 if from_left else WIDTH + 6
    skin = objects.tone((228, 182, 150), rng, 20)
    sleeve = objects.pick(rng, objects.VIVID)

    folder = sample_dir(SHORT, index)
    images: dict[str, Image.Image] = {}
    for k, p in enumerate(progress):
        frame = background.copy()
        if p > 0:
            draw = ImageDraw.Draw(frame)
            x = off_x + (rest_x - off_x) * p
            if p < 1:  # the hand carrying it
                hy = oy + side * 0.55
                near = x + side * 0.2 if from_left else x + side * 0.8
                edge = -4 if from_left else WIDTH + 4
                draw.line((edge, hy + 16, near, hy), fill=sleeve, width=16)
                draw.ellipse((near - 10, hy - 10, near + 10, hy + 10), fill=skin)
            objects.render(shapes, draw, (x, oy, side))
        images[f"{folder}/{k}.png"] = frame
    reference = progress.index(1.0) if arrives else len(progress) - 1 - progress[::-1].index(1.0)

    rec = make_record(
        index,
        f"{folder}/{{image}}.png",
        first,
        frames,
        reference,
        choice(rng, PROMPTS),
        make_options(rng, PROACTIVE),
        categories,
        answer,
        step_size=step,
        max_steps=max_steps,
    )
    truth = {
        "progress": progress,
        "background": np.asarray(background),
        "arrives": arrives,
        "object_mask": object_mask(shapes, (WIDTH, HEIGHT), (rest_x, oy, side)),
    }
    return Sample(rec, images, truth)
