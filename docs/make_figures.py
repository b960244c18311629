"""Draw `docs/scenarios/<short>.png`: one strip per scenario of the synthetic benchmark.

Each strip plays one generated sample through its real episode (`make_episode`), taking the
proactive action that helps at every turn, and shows the image of each turn in order - from
the uninformative first image to the one that answers the question - with a caption naming
the action that led there. Run from the repository root:

    python docs/make_figures.py [--seed 0] [--out docs/scenarios]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image, ImageDraw

from proactivebench.benchmark import registry
from proactivebench.benchmark.records import Source, parse_record
from proactivebench.benchmark.registry import make_episode, paper_scenarios
from proactivebench.benchmark.scenarios.actions import action_of
from proactivebench.data.synth import make_sample

THUMB_HEIGHT = 150
CAPTION = 18
TITLE = 22
GAP = 6
#: The sample of each scenario shown (chosen for a clear example; any index works).
SHOWN = {"ROD": 0, "VSOD": 0, "MVP-N": 1, "IN-C": 0, "QD": 0, "CIT": 5, "COCO": 4}
#: Upper bound on the moves shown, so that cyclic scenarios stop once the object is visible.
MAX_MOVES = {"ROD": 2, "VSOD": 2}


def _preferred(short: str, truth: dict[str, object]) -> str | None:
    """The action to take when several help (CIT: the direction the object is in)."""
    if short == "CIT":
        return "FORWARD" if truth["arrives"] else "REWIND"
    if short in ("ROD", "VSOD"):
        return "LEFT" if short == "ROD" else "FORWARD"
    return None


def episode_frames(short: str, index: int, seed: int) -> tuple[str, list[tuple[Image.Image, str]]]:
    """(prompt, [(image, caption), ...]) of one proactive play-through of a sample."""
    sample = make_sample(short, index, seed=seed)
    record = parse_record(
        registry.scenario(short).record_type, sample.record, Source("<synth>", index + 1)
    )
    episode = make_episode(record)
    obs = episode.reset()
    frames: list[tuple[Image.Image, str]] = []
    caption = "first image"
    moves = 0
    while True:
        image = sample.images[obs.view.image]
        if obs.view.crop is not None:
            image = image.crop(tuple(round(v) for v in obs.view.crop))
        frames.append((image, caption))
        wanted = _preferred(short, sample.truth)
        options = [
            o
            for o in obs.correct_actions
            if wanted is None or action_of(o, episode.action_space())[0] == wanted
        ]
        arrived = short == "CIT" and sample.truth["progress"][int(episode.image_id)] == 1.0
        if not options or arrived or moves >= MAX_MOVES.get(short, 99):
            break
        step = episode.step(options[0])
        moves += 1
        caption = f"{moves}. {step.info['action']}"
        if step.done or step.observation is None:
            break
        obs = step.observation
    if short in ("IN-C", "COCO"):
        reference = episode.__class__(record, reference=True).observation.view.image
        frames.append((sample.images[reference], "clean" if short == "IN-C" else "full image"))
    return f"{short}: {record.prompt}  (answer: {record.answer})", frames


def strip(title: str, frames: list[tuple[Image.Image, str]]) -> Image.Image:
    thumbs = []
    for image, caption in frames:
        scale = THUMB_HEIGHT / image.height
        thumb = image.convert("RGB").resize((max(1, round(image.width * scale)), THUMB_HEIGHT))
        thumbs.append((thumb, caption))
    width = sum(t.width for t, _ in thumbs) + GAP * (len(thumbs) + 1)
    canvas = Image.new("RGB", (width, TITLE + THUMB_HEIGHT + CAPTION + GAP), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    draw.text((GAP, 5), title, fill=(20, 20, 20))
    x = GAP
    for thumb, caption in thumbs:
        canvas.paste(thumb, (x, TITLE))
        draw.text((x + 2, TITLE + THUMB_HEIGHT + 3), caption, fill=(60, 60, 60))
        x += thumb.width + GAP
    return canvas


def figure(short: str, seed: int = 0) -> Image.Image:
    """The committed strip of one scenario, as `main` saves it (tests/test_synth.py checks that
    the committed files are what this draws with the current generator)."""
    title, frames = episode_frames(short, SHOWN[short], seed)
    return strip(title, frames).quantize(colors=192, method=Image.Quantize.MEDIANCUT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "scenarios")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for short in paper_scenarios():
        path = args.out / f"{short}.png"
        figure(short, args.seed).save(path, format="PNG", optimize=True)
        print(f"{path}  {path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
