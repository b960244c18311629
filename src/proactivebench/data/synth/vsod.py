"""VSOD: a short video in which a person walks in front of an object standing on a stand.

The person is closer to the camera than the object, so in the first frame their torso hides
most of it; REWIND and FORWARD (one frame, cyclic) move the person away. The person moves at
least half the combined width per frame, so two frames away the object is fully visible.
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

SHORT = "VSOD"
WIDTH, HEIGHT = 256, 192
MIN_OCCLUSION = 0.85
PROACTIVE = ("Wait for the occlusion to disappear.", "Rewind the video.")
PROMPTS = (
    "What object is on the stand?",
    "What is the object behind the person?",
    "Which object is shown in the room?",
)
_SKIN: tuple[objects.RGB, ...] = ((241, 200, 170), (205, 150, 110), (150, 100, 70), (100, 70, 50))
_TROUSERS: tuple[objects.RGB, ...] = ((40, 50, 90), (50, 50, 55), (90, 70, 50), (70, 80, 60))


def draw_person(
    draw: ImageDraw.ImageDraw,
    cx: float,
    torso: tuple[float, float, float],
    stride: int,
    colours: tuple[objects.RGB, objects.RGB, objects.RGB] | None,
) -> None:
    """A walking person: head, torso, arms and legs; `colours=None` draws the mask (255).

    `torso` is (top, bottom, width). Legs alternate with `stride` so the walk is visible.
    """
    top, bottom, tw = torso
    shirt, trousers, skin = colours if colours else (255, 255, 255)  # type: ignore[assignment]
    head_r = tw * 0.23
    arm = tw * 0.2
    leg = tw * 0.42
    swing = 6 * (1 if stride % 2 else -1)
    draw.ellipse((cx - head_r, top - 2 * head_r - 2, cx + head_r, top - 2), fill=skin)
    draw.rectangle((cx - head_r * 0.4, top - 4, cx + head_r * 0.4, top + 2), fill=skin)
    for sign in (-1, 1):
        ax = cx + sign * (tw / 2 + arm / 2 + 1)
        draw.rounded_rectangle(
            (ax - arm / 2, top + 2, ax + arm / 2, bottom - 6), radius=arm / 2, fill=shirt
        )
        lx = cx + sign * (tw * 0.25)
        foot = lx + sign * swing
        draw.polygon(
            [
                (lx - leg / 2, bottom - 2),
                (lx + leg / 2, bottom - 2),
                (foot + leg / 2.5, 200),
                (foot - leg / 2.5, 200),
            ],
            fill=trousers,
        )
    draw.rounded_rectangle((cx - tw / 2, top, cx + tw / 2, bottom), radius=tw * 0.15, fill=shirt)
    if colours:
        draw.line((cx, top + 6, cx, bottom - 6), fill=objects.darker(shirt, 0.8), width=2)  # type: ignore[arg-type]


def make_sample(rng: np.random.Generator, index: int, slot: int) -> Sample:
    answer, categories = choose_categories(rng)
    n = int(rng.integers(8, 13))
    first = int(rng.integers(1, n - 1))
    horizon = int(rng.integers(150, 166))
    background = scene.room_with_table(WIDTH, HEIGHT, horizon, rng)

    side = int(rng.integers(60, 76))
    ocx = int(rng.integers(100, 157))
    oy = int(rng.integers(64, 79))
    shapes = objects.build(answer, rng)
    top = round(oy + side * objects.extent(shapes)[3])  # the stand's top, under the object
    stand = objects.tone(objects.BROWN, rng)
    draw = ImageDraw.Draw(background)
    draw.rectangle((ocx - side // 2 - 6, top - 1, ocx + side // 2 + 6, top + 7), fill=stand)
    draw.rectangle((ocx - 5, top + 7, ocx + 5, horizon + 10), fill=objects.darker(stand))
    clean = background.copy()
    box = (ocx - side / 2, oy, side)
    objects.render(shapes, ImageDraw.Draw(clean), box)
    obj = object_mask(shapes, (WIDTH, HEIGHT), box)

    colours = (
        objects.pick(rng, objects.VIVID),
        objects.tone(choice_rgb(rng, _TROUSERS), rng, 8),
        objects.tone(choice_rgb(rng, _SKIN), rng, 8),
    )
    tw = side * float(rng.uniform(1.2, 1.45))
    torso_top = oy - int(rng.integers(10, 18))
    torso_bottom = oy + side + int(rng.integers(10, 18))
    for _ in range(40):  # broaden the person until they hide enough of the object
        person = Image.new("L", (WIDTH, HEIGHT), 0)
        draw_person(ImageDraw.Draw(person), ocx, (torso_top, torso_bottom, tw), first, None)
        occlusion = float((np.asarray(person) > 0)[obj].mean())
        if occlusion >= MIN_OCCLUSION:
            break
        tw += 4
    else:
        raise RuntimeError(f"VSOD sample {index}: the person cannot hide the object")
    full_width = tw * 1.4 + 4  # torso plus both arms
    speed = (full_width + side) / 2 * float(rng.uniform(0.56, 0.72))
    heading = 1 if rng.random() < 0.5 else -1

    folder = sample_dir(SHORT, index)
    images: dict[str, Image.Image] = {}
    for k in range(n):
        frame = clean.copy()
        px = ocx + heading * (k - first) * speed
        draw_person(ImageDraw.Draw(frame), px, (torso_top, torso_bottom, tw), k, colours)
        images[f"{folder}/{k:04d}.png"] = frame
    # Two frames away the person has left the object (speed > half the combined width).
    reference = (first + 2) % n

    rec = make_record(
        index,
        f"{folder}/{{image}}.png",
        first,
        n,
        reference,
        choice(rng, PROMPTS),
        make_options(rng, PROACTIVE),
        categories,
        answer,
        strong_occlusions=True,  # the first frame hides the object: a rewind helps
    )
    truth = {"object_mask": obj, "clean": np.asarray(clean), "first_occlusion": occlusion}
    return Sample(rec, images, truth)


def choice_rgb(rng: np.random.Generator, colours: tuple[objects.RGB, ...]) -> objects.RGB:
    return colours[int(rng.integers(len(colours)))]
