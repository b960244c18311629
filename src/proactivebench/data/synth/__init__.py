"""A procedural, offline and deterministic ProactiveBench: all seven scenarios, any size.

One module per scenario draws a sample (`rod.make_sample`, ...: each scenario's `REGISTRATION`,
at the end of `benchmark/scenarios/<scenario>.py`, names its own); this one writes a data
directory of them.

`generate` writes a data directory in the official layout (`<stem>_preprocessed.jsonl` plus
images) and `synth_manifest.json`, whose presence tells the loader that the official id
filter does not apply. Every sample is drawn from its own RNG stream, derived from
(seed, split, scenario, index) with a NumPy `SeedSequence`, so

* the same arguments give byte-identical files, in any order of generation, with the same
  NumPy and Pillow (other versions or platforms may round a pixel or encode a file
  differently),
* the train split never repeats a test sample for the same seed, and
* a data set of N samples is a prefix of the one of N + 1 samples.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from proactivebench.benchmark.records import Source, parse_record
from proactivebench.benchmark.registry import make_episode, scenario, scenario_names, scenario_rank
from proactivebench.core.paths import staged_folder, write_whole
from proactivebench.core.texts import dumps
from proactivebench.data.synth.common import Sample

GENERATOR = "proactivebench-synth"
#: 2: one keyword per action option (QD, MVP-N wording); VSOD marked strongly occluded.
VERSION = 2
#: The name other modules use for it (e.g. the demo's cache key).
GENERATOR_VERSION = VERSION
MANIFEST_NAME = "synth_manifest.json"
SPLITS: tuple[str, ...] = ("test", "train")

# Stream purposes, so that a sample's stream never coincides with a data set's stream.
_SAMPLE, _DATASET = 0, 1
#: PNG compression: level 1 is several times faster than the default and files stay small.
PNG_COMPRESS_LEVEL = 1


def _stream(seed: int, split: str, short: str, purpose: int, index: int) -> np.random.Generator:
    words = [VERSION, seed, SPLITS.index(split), scenario_rank(short), purpose, index]
    return np.random.default_rng(np.random.SeedSequence(words))


def _check(seed: int, split: str, shorts: Sequence[str]) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    unknown = [s for s in shorts if s not in generatable()]
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; choose from {', '.join(generatable())}")


def generatable() -> tuple[str, ...]:
    """The registered scenarios that have a generator, in their order."""
    return tuple(s for s in scenario_names() if scenario(s).generate is not None)


def make_sample(short: str, index: int, *, seed: int = 0, split: str = "test") -> Sample:
    """Sample `index` of scenario `short`, exactly as `generate` writes it (images in memory).

    Also returns the ground truth (masks, boxes) that the files do not contain.
    """
    _check(seed, split, [short])
    # A per-data-set offset into the balanced cycles (COCO directions, CIT starts, IN-C
    # corruptions): every kind occurs once every few samples, at seed-dependent positions.
    offset = int(_stream(seed, split, short, _DATASET, 0).integers(1 << 16))
    rng = _stream(seed, split, short, _SAMPLE, index)
    build = scenario(short).generator()
    assert build is not None  # _check refused the others
    sample: Sample = build(rng, index, offset + index)
    _refuse_unseen_images(short, index, sample)
    return sample


def _refuse_unseen_images(short: str, index: int, sample: Sample) -> None:
    """Refuse a generator whose images are not those its scenario's episode shows: the image
    names are the record's template filled by the episode (`Episode.image_paths`, in play and
    in reference mode), and a generator that names them otherwise made data on which every
    episode failed with "image not found", found only when played."""
    info = scenario(short)
    record = parse_record(info.record_type, sample.record, Source(f"<{short} generator>", index))
    for reference in (False, True):
        shown = make_episode(record, reference=reference).image_paths()
        missing = next((path for path in shown if path not in sample.images), None)
        if missing is not None:
            made = ", ".join(sorted(sample.images)[:3])
            raise ValueError(
                f"the {short} generator's sample {index} has no image {missing!r}, which its "
                f"episode shows{' in reference mode' if reference else ''} (the record's "
                f"image_template filled by the episode); it made {made}"
                f"{', ...' if len(sample.images) > 3 else ''}"
            )


def save_png(image: Image.Image, path: Path) -> None:
    """PNG without metadata, so that equal pixels give equal bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    write_whole(path, buffer.getvalue())


def generate(
    out_dir: Path,
    per_scenario: int = 20,
    seed: int = 0,
    split: str = "test",
    scenarios: Sequence[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write `per_scenario` samples of each scenario under `out_dir`; return the manifest.

    `scenarios` are short names (default: every registered one with a generator, the
    paper's seven first). `progress`, if
    given, is called with the number of samples just finished (1 after each sample), e.g.
    `lambda n: bar.update(task, advance=n)`. Files of an earlier run in `out_dir` are
    overwritten; nothing else is deleted. The files are made in a stage beside `out_dir` and
    moved in at the end (`paths.staged_folder`): an interrupted generation (Ctrl-C, a full
    disk) adds nothing, rather than leaving a data set of its first scenarios that a run
    would take for the whole.
    """
    out = Path(out_dir)
    shorts = list(generatable() if scenarios is None else dict.fromkeys(scenarios))
    _check(seed, split, shorts)
    if isinstance(per_scenario, bool) or not isinstance(per_scenario, int) or per_scenario < 0:
        raise ValueError(f"per_scenario must be a non-negative integer, got {per_scenario!r}")
    counts: dict[str, int] = {}
    with staged_folder(out) as stage:
        for short in shorts:
            lines = []
            for index in range(per_scenario):
                sample = make_sample(short, index, seed=seed, split=split)
                for relative, image in sample.images.items():
                    save_png(image, stage / relative)
                lines.append(dumps(sample.record, ensure_ascii=False) + "\n")
                if progress is not None:
                    progress(1)
            write_whole(stage / scenario(short).strings.dataset_file, "".join(lines))
            counts[short] = per_scenario
        manifest: dict[str, Any] = {
            "generator": GENERATOR,
            "version": VERSION,
            "seed": seed,
            "split": split,
            "counts": counts,
        }
        write_whole(stage / MANIFEST_NAME, dumps(manifest, indent=2) + "\n")
    return manifest


__all__ = [
    "GENERATOR",
    "MANIFEST_NAME",
    "SPLITS",
    "VERSION",
    "Sample",
    "generatable",
    "generate",
    "make_sample",
]
