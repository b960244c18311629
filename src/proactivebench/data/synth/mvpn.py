"""MVP-N: an object on a turntable, photographed from several viewpoints; only one helps.

The uninformative views show the object from the top (its grey footprint), edge-on from the
back (a thin uniform-grey silhouette) or still in its plain grey packaging: nothing there
tells the category. The last view of `valid_images` - the one the protocol shows with
`informative=1` on the last turn - shows the object itself, in colour.
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

SHORT = "MVP-N"
SIZE = 224
PROACTIVE_CHOICES = ("Rotate the object.", "Look at the object from another angle.")
PROMPTS = ("What is the object on the turntable?", "What object is this?", "Which object is shown?")
VIEW_KINDS = ("top", "back", "box")
#: Height of the turntable's top surface where objects stand.
SURFACE = 190


def _grey(rng: np.random.Generator) -> objects.RGB:
    g = int(rng.integers(95, 150))
    return (g, g, g + 4)


def _uninformative(
    rng: np.random.Generator,
    shapes: list[objects.Shape],
    box: objects.Box,
    kind: str,
    dark: bool,
) -> Image.Image:
    """One view that shows shape and size at most, never colour or detail."""
    side = int(box[2])
    image = scene.studio(SIZE, SIZE, rng, brightness=float(rng.uniform(0.94, 1.04)), dark=dark)
    draw = ImageDraw.Draw(image)
    cx, base = SIZE / 2, 186
    scene.turntable(draw, cx, base, 84, 16)
    grey = _grey(rng)
    if kind == "top":
        rx = side * float(rng.uniform(0.3, 0.45))
        draw.ellipse(
            (cx - rx, base - 24, cx + rx, base + 4), fill=grey, outline=objects.darker(grey)
        )
        draw.ellipse(
            (cx - rx * 0.6, base - 19, cx + rx * 0.6, base - 3), fill=objects.lighter(grey, 0.15)
        )
    elif kind == "back":
        silhouette = Image.new("L", (side, side), 0)
        objects.render_mask(shapes, ImageDraw.Draw(silhouette), (0, 0, side))
        thin = max(6, int(side * float(rng.uniform(0.1, 0.2))))
        silhouette = silhouette.resize((thin, side), Image.Resampling.BILINEAR)
        image.paste(grey, (int(cx - thin / 2), int(box[1])), silhouette)
    else:
        w = side * float(rng.uniform(0.55, 0.75))
        h = side * float(rng.uniform(0.6, 0.85))
        d = side * float(rng.uniform(0.08, 0.3))
        x0, y1 = cx - w / 2 - d / 2, base + 2
        draw.polygon(
            [
                (x0, y1 - h),
                (x0 + d, y1 - h - d * 0.6),
                (x0 + d + w, y1 - h - d * 0.6),
                (x0 + w, y1 - h),
            ],
            fill=objects.lighter(grey, 0.25),
        )
        draw.polygon(
            [
                (x0 + w, y1 - h),
                (x0 + w + d, y1 - h - d * 0.6),
                (x0 + w + d, y1 - d * 0.6),
                (x0 + w, y1),
            ],
            fill=objects.darker(grey, 0.8),
        )
        draw.rectangle((x0, y1 - h, x0 + w, y1), fill=grey, outline=objects.darker(grey, 0.7))
    return image


def make_sample(rng: np.random.Generator, index: int, slot: int) -> Sample:
    answer, categories = choose_categories(rng)
    n = int(rng.integers(3, 6))
    views = sorted(int(v) for v in rng.choice(36, size=n, replace=False))
    side = int(rng.integers(108, 128))
    shapes = objects.build(answer, rng)
    # Stand the drawing on the plate, in front of a backdrop it stands out from.
    box = (SIZE / 2 - side / 2, SURFACE - side * objects.extent(shapes)[3], side)
    dark = objects.luminance(shapes) > 150

    folder = sample_dir(SHORT, index)
    images: dict[str, Image.Image] = {}
    for t, view in enumerate(views[:-1]):
        kind = VIEW_KINDS[int(rng.integers(len(VIEW_KINDS)))] if t else "back"
        images[f"{folder}/0_{view:04d}.png"] = _uninformative(rng, shapes, box, kind, dark)
    informative = scene.studio(SIZE, SIZE, rng, dark=dark)
    draw = ImageDraw.Draw(informative)
    scene.turntable(draw, SIZE / 2, 186, 84, 16)
    objects.render(shapes, draw, box)
    images[f"{folder}/1_{views[-1]:04d}.png"] = informative

    proactive = [choice(rng, PROACTIVE_CHOICES)]
    rec = make_record(
        index,
        f"{folder}/{{informative}}_{{image}}.png",
        views[0],
        n,
        views[-1],
        choice(rng, PROMPTS),
        make_options(rng, proactive),
        categories,
        answer,
        valid_images=views,
    )
    truth = {"object_mask": object_mask(shapes, (SIZE, SIZE), box)}
    return Sample(rec, images, truth)
