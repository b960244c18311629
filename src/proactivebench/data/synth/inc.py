"""IN-C: a photo of an object damaged by one of eight corruptions at severities 1..5.

Files are `<level>.png` with level 0 the clean image (the reference). The episode starts at
level 5 and each use of the matching enhancement lowers the level by one. The options list all
eight enhancements, so the model has to recognise which kind of damage it is looking at.
"""

from __future__ import annotations

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
from proactivebench.data.synth.corruptions import CORRUPTIONS, corrupt_levels

SHORT = "IN-C"
SIZE = 224
PROMPTS = ("What is the object in the image?", "What object is shown in this photo?")
NAMES: tuple[str, ...] = tuple(CORRUPTIONS)


def make_sample(rng: np.random.Generator, index: int, slot: int) -> Sample:
    answer, categories = choose_categories(rng)
    # Cycling over the data set keeps the eight corruptions equally frequent.
    name = NAMES[slot % len(NAMES)]
    horizon = int(rng.integers(130, 160))
    clean_image = scene.room_with_table(SIZE, SIZE, horizon, rng)
    side = int(rng.integers(118, 146))
    shapes = objects.build(answer, rng)
    top = horizon + 20 - side * objects.extent(shapes)[3]
    box = (SIZE / 2 - side / 2 + int(rng.integers(-14, 15)), top, side)
    objects.render(shapes, ImageDraw.Draw(clean_image), box)
    clean = np.asarray(clean_image)
    levels = corrupt_levels(clean, name, int(rng.integers(2**62)))

    folder = sample_dir(SHORT, index)
    images: dict[str, Image.Image] = {f"{folder}/0.png": clean_image}
    for level, array in enumerate(levels, start=1):
        images[f"{folder}/{level}.png"] = Image.fromarray(array)
    quality = CORRUPTIONS[name].option
    rec = make_record(
        index,
        f"{folder}/{{level}}.png",
        5,
        5,
        0,
        choice(rng, PROMPTS),
        make_options(rng, [c.option for c in CORRUPTIONS.values()]),
        categories,
        answer,
        quality_answer=quality,
    )
    truth = {"corruption": name, "object_mask": object_mask(shapes, (SIZE, SIZE), box)}
    return Sample(rec, images, truth)
