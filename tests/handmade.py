"""Hand-written records in the official layout, small enough to compute episodes by hand.

Ids are taken from the official filter so that the default (filtered) loading keeps them.
`write_dataset` writes the JSONL files and a tiny PNG for every image an episode may show.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image

from proactivebench.benchmark import registry
from proactivebench.benchmark.protocol import scenario_strings
from proactivebench.benchmark.records import Source, parse_record
from proactivebench.benchmark.registry import make_episode

ABSTAIN = ["I cannot answer.", "I do not know."]
CATS = ["apple", "banana", "cup", "dog"]


def rod(id: int = 0, **kw: Any) -> dict[str, Any]:
    return {
        "id": id,
        "image_template": f"ROD/{id}/{{image}}.png",
        "first_image": 2,
        "num_images": 4,
        "reference_image": "ref",
        "prompt": "What object is behind the blocks?",
        "options": ["Move the blocks to the left.", "Move the blocks to the right.", *ABSTAIN],
        "categories": CATS,
        "answer": "cup",
        **kw,
    }


def vsod(id: int = 6, **kw: Any) -> dict[str, Any]:
    return {
        "id": id,
        "image_template": f"VSOD/{id}/{{image}}.png",
        "first_image": 0,
        "num_images": 3,
        "reference_image": 2,
        "prompt": "What is the object?",
        "options": ["Wait for the occlusion to disappear.", "Rewind the video.", *ABSTAIN],
        "categories": CATS,
        "answer": "dog",
        "strong_occlusions": True,
        **kw,
    }


def mvpn(id: int = 5, **kw: Any) -> dict[str, Any]:
    return {
        "id": id,
        "image_template": f"MVP-N/{id}/{{informative}}_{{image}}.png",
        "first_image": 7,
        "num_images": 3,
        "valid_images": [7, 3, 9, 1],
        "reference_image": 9,
        "prompt": "Which object is this?",
        "options": ["Rotate the object.", *ABSTAIN],
        "categories": CATS,
        "answer": "apple",
        **kw,
    }


INC_OPTIONS = [
    "Increase the brightness.",
    "Increase the contrast.",
    "Increase the saturation.",
    "Deblur the image.",
    "Denoise the image.",
    "Remove the compression.",
    "Increase the resolution.",
    "Remove the artifacts.",
]


def inc(id: int = 2, **kw: Any) -> dict[str, Any]:
    return {
        "id": id,
        "image_template": f"IN-C/{id}/{{level}}.png",
        "first_image": 5,
        "num_images": 5,
        "reference_image": 0,
        "prompt": "What is in the image?",
        "options": [*INC_OPTIONS, *ABSTAIN],
        "categories": CATS,
        "answer": "banana",
        "quality_answer": "Deblur the image.",
        **kw,
    }


def qd(id: int = 0, **kw: Any) -> dict[str, Any]:
    return {
        "id": id,
        "image_template": f"QD/{id}/{{image}}.png",
        "first_image": 0,
        "num_images": 3,
        "reference_image": 2,
        "prompt": "What does the drawing show?",
        "options": ["Add more details.", *ABSTAIN],
        "categories": CATS,
        "answer": "dog",
        **kw,
    }


def cit(id: int = 0, **kw: Any) -> dict[str, Any]:
    return {
        "id": id,
        "image_template": f"CIT/{id}/{{image}}.png",
        "first_image": 1,
        "num_images": 10,
        "reference_image": 5,
        "step_size": 3,
        "max_steps": 4,
        "prompt": "What object is being used?",
        "options": ["Rewind the video.", "Wait for the object to appear.", *ABSTAIN],
        "categories": CATS,
        "answer": "cup",
        **kw,
    }


def coco(id: int = 0, direction: str = "left", **kw: Any) -> dict[str, Any]:
    moves = {
        "left": "Move the camera to the left.",
        "right": "Move the camera to the right.",
        "up": "Move the camera up.",
        "down": "Move the camera down.",
        "zoom": "Move farther from the object.",
    }
    options = [moves[m] for m in direction.split("_") if m in moves]
    return {
        "id": id,
        "image_template": f"COCO/{id}.png",
        "first_image": 0,
        "num_images": 1,
        "reference_image": 0,
        "prompt": "What is the main object?",
        "options": [*options, *ABSTAIN],
        "categories": CATS,
        "answer": "apple",
        "direction": direction,
        "granularity": 2,
        "horizontal_step": 10.5,
        "vertical_step": 4.25,
        "crop": {"top": 40.0, "left": 60.0, "height": 90.0, "width": 120.0},
        **kw,
    }


BUILDERS = {
    "ROD": rod,
    "VSOD": vsod,
    "MVP-N": mvpn,
    "IN-C": inc,
    "QD": qd,
    "CIT": cit,
    "COCO": coco,
}


def record(short: str, **kw: Any):
    """A parsed record of the scenario, for episode tests."""
    return parse_record(
        registry.scenario(short).record_type, BUILDERS[short](**kw), Source("handmade.jsonl", 1)
    )


def write_dataset(
    root: Path, records: dict[str, list[dict[str, Any]]], *, images: bool = True
) -> Path:
    """Write the JSONL files and a blank image for every path the records may show."""
    root.mkdir(parents=True, exist_ok=True)
    blank = Image.new("RGB", (200, 160), (128, 128, 128))
    for short, objs in records.items():
        path = root / scenario_strings(short).dataset_file
        path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
        if not images:
            continue
        for n, obj in enumerate(objs, start=1):
            rec = parse_record(registry.scenario(short).record_type, obj, Source(str(path), n))
            paths = set(make_episode(rec).reachable_images())
            paths.update(make_episode(rec, reference=True).image_paths())
            for rel in paths:
                target = root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                blank.save(target)
    return root


def full_dataset(root: Path) -> Path:
    """One or two records of every scenario, every COCO direction kind included."""
    return write_dataset(
        root,
        {
            "ROD": [rod(0), rod(1, first_image=0)],
            "VSOD": [vsod(6), vsod(9, first_image=1)],
            "MVP-N": [mvpn(5), mvpn(8)],
            "IN-C": [inc(2), inc(3, quality_answer="Increase the brightness.")],
            "QD": [qd(0), qd(2)],
            "CIT": [cit(0), cit(1, first_image=8)],
            "COCO": [coco(0, "left"), coco(1, "up_right"), coco(2, "zoom")],
        },
    )
