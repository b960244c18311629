"""What every scenario builder shares: the sample container, category and option choices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from proactivebench.benchmark.registry import scenario
from proactivebench.data.synth import objects

#: Abstaining options: each contains "cannot" or "do not", so the protocol never accepts one.
ABSTENTIONS: tuple[str, ...] = (
    "I cannot answer.",
    "I do not know.",
    "I cannot tell from this image.",
    "I do not have enough information.",
)


@dataclass
class Sample:
    """One generated sample: its JSON record, its images, and ground truth for checks.

    `images` maps paths relative to the output dir to images; `truth` holds what the
    generator knows but does not write (object masks and boxes), so tests can measure the
    intended visual property on the pixels instead of trusting the record.
    """

    record: dict[str, Any]
    images: dict[str, Image.Image]
    truth: dict[str, Any] = field(default_factory=dict)


def sample_dir(short: str, index: int) -> str:
    """The folder of one sample's images, relative to the output dir."""
    return f"{scenario(short).strings.stem}/{index:06d}"


def choose_categories(rng: np.random.Generator) -> tuple[str, list[str]]:
    """The drawn category and the four shown ones (it plus three distractors), shuffled."""
    picked = rng.choice(len(objects.CATEGORIES), size=4, replace=False)
    names = [objects.CATEGORIES[int(i)] for i in picked]
    answer = names[0]
    return answer, shuffled(rng, names)


def shuffled(rng: np.random.Generator, items: Sequence[str]) -> list[str]:
    order = rng.permutation(len(items))
    return [items[int(i)] for i in order]


def options(rng: np.random.Generator, proactive: Sequence[str], abstentions: int = 2) -> list[str]:
    """Proactive options plus `abstentions` abstaining ones, in a random order.

    The order is shuffled so that a model trained on synthetic data cannot learn a position.
    """
    picked = rng.choice(len(ABSTENTIONS), size=abstentions, replace=False)
    return shuffled(rng, [*proactive, *(ABSTENTIONS[int(i)] for i in picked)])


def record(
    index: int,
    template: str,
    first_image: int,
    num_images: int,
    reference_image: int | str,
    prompt: str,
    option_texts: Sequence[str],
    categories: Sequence[str],
    answer: str,
    **extra: Any,
) -> dict[str, Any]:
    """A record with the official field order (docs/protocol.md §2), then the scenario's extras."""
    return {
        "id": index,
        "image_template": template,
        "first_image": first_image,
        "num_images": num_images,
        "reference_image": reference_image,
        "prompt": prompt,
        "options": list(option_texts),
        "categories": list(categories),
        "answer": answer,
        **extra,
    }


def object_mask(
    shapes: Sequence[objects.Shape], size: tuple[int, int], box: objects.Box
) -> np.ndarray:
    """Boolean footprint of an object drawn at `box` on an image of `size` (width, height)."""
    mask = Image.new("L", size, 0)
    objects.render_mask(shapes, ImageDraw.Draw(mask), box)
    return np.asarray(mask) > 0


def choice(rng: np.random.Generator, items: Sequence[str]) -> str:
    return items[int(rng.integers(len(items)))]
