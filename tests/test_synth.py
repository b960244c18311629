"""The synthetic generator: protocol validity, determinism, and the visual property per scenario.

The visual checks measure pixels of the written files against ground truth recomputed with
`make_sample` (object masks, clean frames), so a generator that wrote the right JSON but the
wrong pictures fails here.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from clirun import run_cli
from proactivebench.benchmark import registry
from proactivebench.benchmark.protocol import action_keywords, fixed_action_space, scenario_strings
from proactivebench.benchmark.records import Record, Source, parse_record
from proactivebench.benchmark.registry import make_episode, paper_scenarios
from proactivebench.benchmark.scenarios import Episode
from proactivebench.benchmark.scenarios.actions import action_of, is_abstention
from proactivebench.data.synth import MANIFEST_NAME, generate, make_sample, objects
from proactivebench.data.synth.common import Sample
from proactivebench.data.synth.corruptions import CORRUPTIONS, corrupt_levels, psnr

PER_SCENARIO = 30
SEED = 7

Loader = Callable[[str], np.ndarray]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    generate(out, per_scenario=PER_SCENARIO, seed=SEED)
    return out


def load_records(root: Path, short: str) -> list[Record]:
    path = root / scenario_strings(short).dataset_file
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        parse_record(registry.scenario(short).record_type, json.loads(x), Source(str(path), i + 1))
        for i, x in enumerate(lines)
    ]


def disk(root: Path) -> Loader:
    return lambda rel: np.asarray(Image.open(root / rel))


def truth(short: str, record: Record) -> Sample:
    return make_sample(short, record.id, seed=SEED)


def play_actions(episode: Episode, pick: Callable[[list[str]], str | None]) -> list:
    """Views of every turn while `pick` chooses among the correct action options."""
    obs = episode.reset()
    views = [obs.view]
    while True:
        choice = pick(list(obs.correct_actions))
        if choice is None:
            return views
        step = episode.step(choice)
        if step.done or step.observation is None:
            return views
        obs = step.observation
        views.append(obs.view)


# ----- files, manifest, records ---------------------------------------------------------------


def test_manifest_and_loader(data: Path) -> None:
    manifest = json.loads((data / MANIFEST_NAME).read_text())
    assert manifest == {
        "generator": "proactivebench-synth",
        "version": 2,
        "seed": SEED,
        "split": "test",
        "counts": {s: PER_SCENARIO for s in paper_scenarios()},
    }
    from proactivebench.data.directory import MANIFEST, is_synthetic, load_dataset

    assert MANIFEST == MANIFEST_NAME and is_synthetic(data)
    dataset = load_dataset(data)  # no official id filter: every sample is kept
    assert {s: len(r) for s, r in dataset.records.items()} == manifest["counts"]


def test_generate_returns_manifest_and_subset(tmp_path: Path) -> None:
    manifest = generate(tmp_path, per_scenario=2, seed=1, split="train", scenarios=["QD", "COCO"])
    assert manifest["counts"] == {"QD": 2, "COCO": 2} and manifest["split"] == "train"
    assert json.loads((tmp_path / MANIFEST_NAME).read_text()) == manifest
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [
        "QuickDraw_preprocessed.jsonl",
        "coco2014_preprocessed.jsonl",
    ]


@pytest.mark.parametrize(
    "kwargs", [{"split": "dev"}, {"seed": -1}, {"scenarios": ["ROD", "XYZ"]}, {"per_scenario": -2}]
)
def test_bad_arguments_are_refused(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        generate(tmp_path, **kwargs)


@pytest.mark.parametrize("short", paper_scenarios())
def test_records_parse_and_images_exist(data: Path, short: str) -> None:
    records = load_records(data, short)
    assert [r.id for r in records] == list(range(PER_SCENARIO))
    for r in records:
        assert not r.image_template.startswith("/") and ".." not in r.image_template.split("/")
        assert r.image_template.startswith(scenario_strings(short).stem + "/")
        assert len(set(r.categories)) == 4 and r.answer in r.categories
        assert sum(is_abstention(o) for o in r.options) >= 1
        for path in make_episode(r).reachable_images():
            assert (data / path).is_file(), path
    if short == "VSOD":
        # Every synthetic VSOD sample needs a rewind: the official filter would keep them all.
        assert all(r.strong_occlusions for r in records)  # type: ignore[attr-defined]


@pytest.mark.parametrize("short", paper_scenarios())
def test_oracle_succeeds_in_minimal_turns(data: Path, short: str) -> None:
    for r in load_records(data, short):
        episode = make_episode(r)
        turns = 0
        while True:
            step = episode.step(episode.oracle_answer())
            turns += 1
            if step.done:
                break
        assert step.correct and turns == (2 if short == "ROD" else 1), (short, r.id)


@pytest.mark.parametrize("short", paper_scenarios())
def test_every_proactive_option_names_exactly_one_action(data: Path, short: str) -> None:
    for r in load_records(data, short):
        space = make_episode(r).action_space()
        actions = []
        for option in r.options:
            if is_abstention(option):
                assert "cannot" in option.lower() or "do not" in option.lower()
                continue
            action, reason = action_of(option, space)
            assert action is not None, reason
            actions.append(action)
        if short == "IN-C":  # eight enhancements, each its own action
            assert sorted(actions) == sorted(fixed_action_space("IN-C"))
        if short == "COCO":
            assert sorted(actions) == sorted(space)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("short", paper_scenarios())
def test_every_action_option_holds_exactly_one_keyword(short: str, seed: int) -> None:
    """The reference maps an option to its action by keyword and rejects an option holding two
    (even of one action, as "details" and "drawing"): ours must never write one."""
    keywords = action_keywords()
    for index in range(12):
        raw = make_sample(short, index, seed=seed).record
        record = parse_record(registry.scenario(short).record_type, raw, Source("synth", index + 1))
        space = make_episode(record).action_space()
        for option in record.options:
            if is_abstention(option):
                continue
            found = [(k, a) for k, a in keywords if k in option.lower()]
            assert len(found) == 1, f"{option!r} holds {found}"
            assert found[0][1] in space, f"{option!r} names {found[0][1]}, not one of {space}"


def test_same_arguments_give_identical_bytes_and_train_differs(tmp_path: Path) -> None:
    def tree(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    first, second, train = tmp_path / "a", tmp_path / "b", tmp_path / "train"
    generate(first, per_scenario=3, seed=3)
    generate(second, per_scenario=3, seed=3)
    generate(train, per_scenario=3, seed=3, split="train")
    a, b, t = tree(first), tree(second), tree(train)
    assert a.keys() == b.keys() and len(a) > 7 * 3
    assert all(a[k] == b[k] for k in a)
    for short in paper_scenarios():
        name = scenario_strings(short).dataset_file
        assert a[name] != t[name], short
        test_records = [json.loads(x) for x in a[name].decode().splitlines()]
        train_records = [json.loads(x) for x in t[name].decode().splitlines()]
        assert test_records != train_records
    shared = [k for k in a if k in t and k.endswith(".png")]
    assert sum(a[k] != t[k] for k in shared) > 0.8 * len(shared)
    # A smaller data set is a prefix of a larger one: samples do not depend on the count.
    generate(tmp_path / "small", per_scenario=2, seed=3)
    small = tree(tmp_path / "small")
    for key, content in small.items():
        if key.endswith(".jsonl"):
            assert a[key].startswith(content) and a[key] != content
        elif key != MANIFEST_NAME:
            assert a[key] == content, key


# ----- the visual property of each scenario -----------------------------------------------------


def visible_fraction(frame: np.ndarray, clean: np.ndarray, mask: np.ndarray) -> float:
    """Share of the object's pixels that show exactly what the unoccluded scene shows."""
    return float(np.all(frame[mask] == clean[mask], axis=-1).mean())


def check_rod(record: Record, load: Loader, sample: Sample) -> None:
    mask = sample.truth["object_mask"]
    reference = load(record.image_template.format(image=record.reference_image))
    first = load(record.image_template.format(image=record.first_image))
    drawn = ~np.all(reference[mask] == sample.truth["background"][mask], axis=-1)
    assert drawn.mean() > 0.9  # the reference shows the object
    assert visible_fraction(first, reference, mask) <= 0.1  # >= 90 % covered
    frames = [load(record.image_template.format(image=k)) for k in range(record.num_images)]
    assert max(visible_fraction(f, reference, mask) for f in frames) > 0.9
    left = frames[(record.first_image - 1) % record.num_images]
    right = frames[(record.first_image + 1) % record.num_images]
    assert min(visible_fraction(f, reference, mask) for f in (left, right)) > 0.3


def check_vsod(record: Record, load: Loader, sample: Sample) -> None:
    mask, clean = sample.truth["object_mask"], sample.truth["clean"]
    frames = {
        k: load(record.image_template.format(image=f"{k:04d}")) for k in range(record.num_images)
    }
    assert visible_fraction(frames[record.first_image], clean, mask) <= 0.15
    assert visible_fraction(frames[int(record.reference_image)], clean, mask) == 1.0
    others = [
        visible_fraction(f, clean, mask) for k, f in frames.items() if k != record.first_image
    ]
    assert max(others) == 1.0


def check_mvpn(record: Record, load: Loader, sample: Sample) -> None:
    episode = make_episode(record)
    views = play_actions(episode, lambda options: options[0] if options else None)
    assert len(views) == record.num_images
    assert [Path(v.image).name[0] for v in views] == ["0"] * (record.num_images - 1) + ["1"]
    mask = sample.truth["object_mask"]  # where the informative view draws the object
    last = load(views[-1].image).astype(np.int16)
    for view in views[:-1]:
        other = load(view.image).astype(np.int16)
        difference = np.abs(last - other).max(axis=-1)
        assert difference[mask].mean() > 25, view.image
        assert (difference > 40).sum() > 300, view.image


def check_inc(record: Record, load: Loader, sample: Sample) -> None:
    clean = load(record.image_template.format(level=record.reference_image))
    scores = [psnr(clean, load(record.image_template.format(level=k))) for k in range(1, 6)]
    assert all(a > b for a, b in pairwise(scores)), scores
    assert scores[0] < 60  # level 1 is damaged too


def check_qd(record: Record, load: Loader, sample: Sample) -> None:
    ink = [
        int((load(record.image_template.format(image=f"{k:04d}")) < 128).sum())
        for k in range(record.num_images)
    ]
    assert record.num_images >= 2 and all(a < b for a, b in pairwise(ink)), ink
    assert ink[0] < 0.6 * ink[-1]  # the first stage is far from the complete drawing
    assert record.reference_image == record.num_images - 1


def check_cit(record: Record, load: Loader, sample: Sample) -> None:
    progress = sample.truth["progress"]
    wanted = "FORWARD" if sample.truth["arrives"] else "REWIND"
    first = load(record.image_template.format(image=record.first_image))
    assert np.array_equal(first, sample.truth["background"])  # nothing there yet / any more
    episode = make_episode(record)

    def helpful(options: list[str]) -> str | None:
        frame = int(episode.image_id)
        if progress[frame] == 1.0:
            return None
        good = [o for o in options if action_of(o, episode.action_space())[0] == wanted]
        return good[0] if good else None

    views = play_actions(episode, helpful)
    final = int(Path(views[-1].image).stem)
    assert progress[final] == 1.0 and len(views) <= record.max_steps  # its turn can answer
    shown, mask = load(views[-1].image), sample.truth["object_mask"]
    assert (~np.all(shown[mask] == sample.truth["background"][mask], axis=-1)).mean() > 0.9


def check_coco(record: Record, load: Loader, sample: Sample) -> None:
    height, width = load(record.image_template).shape[:2]
    ys, xs = np.nonzero(sample.truth["object_mask"])
    obj = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
    episode = make_episode(record)
    views = play_actions(episode, lambda options: options[0] if options else None)
    # The protocol pruned every move on the last turn (for zoom: its float `==` test held).
    assert not episode.done and all(is_abstention(o) for o in episode.observation.action_options)
    for v in views:
        left, top, right, bottom = v.crop
        assert 0 <= left < right <= width and 0 <= top < bottom <= height, v.crop
    l0, t0, r0, b0 = views[0].crop
    assert r0 <= obj[0] or obj[2] <= l0 or b0 <= obj[1] or obj[3] <= t0  # no overlap at all
    lf, tf, rf, bf = views[-1].crop
    assert lf <= obj[0] and tf <= obj[1] and obj[2] <= rf and obj[3] <= bf
    assert len(views) >= 2


CHECKS = {
    "ROD": check_rod,
    "VSOD": check_vsod,
    "MVP-N": check_mvpn,
    "IN-C": check_inc,
    "QD": check_qd,
    "CIT": check_cit,
    "COCO": check_coco,
}


@pytest.mark.parametrize("short", paper_scenarios())
def test_visual_property_on_written_files(data: Path, short: str) -> None:
    for record in load_records(data, short):
        CHECKS[short](record, disk(data), truth(short, record))


def test_coco_directions_and_cit_prunings_all_occur(data: Path) -> None:
    directions = {r.direction for r in load_records(data, "COCO")}  # type: ignore[attr-defined]
    assert directions == {
        "left",
        "right",
        "up",
        "down",
        "up_left",
        "up_right",
        "down_left",
        "down_right",
        "zoom",
    }
    first_options = [make_episode(r).observation.action_options for r in load_records(data, "CIT")]
    assert any("Rewind the video." not in o for o in first_options)
    assert any(not any("Wait for the" in x for x in o) for o in first_options)
    assert any(
        len(o) == len(r.options)
        for o, r in zip(first_options, load_records(data, "CIT"), strict=True)
    )
    corruptions = {r.quality_answer for r in load_records(data, "IN-C")}  # type: ignore[attr-defined]
    assert corruptions == {c.option for c in CORRUPTIONS.values()}


# ----- building blocks ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_every_corruption_lowers_quality_with_severity(name: str) -> None:
    for index in range(3):
        clean = np.asarray(
            make_sample("IN-C", index, seed=11).images[f"ImageNet-C/{index:06d}/0.png"]
        )
        scores = [psnr(clean, level) for level in corrupt_levels(clean, name, seed=index)]
        assert all(a > b for a, b in pairwise(scores)), (name, scores)


def test_object_library_is_rich_and_drawable() -> None:
    assert len(objects.CATEGORIES) >= 20
    from PIL import ImageDraw

    rng = np.random.default_rng(0)
    for name in objects.CATEGORIES:
        shapes = objects.build(name, rng)
        mask = Image.new("L", (96, 96), 0)
        objects.render_mask(shapes, ImageDraw.Draw(mask), (0, 0, 96))
        coverage = (np.asarray(mask) > 0).mean()
        assert 0.08 < coverage < 0.8, (name, coverage)
        image = Image.new("RGB", (96, 96), (255, 255, 255))
        objects.render(shapes, ImageDraw.Draw(image), (0, 0, 96))
        colours = {tuple(c) for c in np.asarray(image).reshape(-1, 3)[::7]}
        assert len(colours) >= 4, name  # colour and detail, not a flat blob
        assert len(objects.sketch_strokes(shapes, rng)) >= 4


DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("short", paper_scenarios())
def test_committed_scenario_figures_are_what_make_figures_draws(short: str) -> None:
    # docs/measured.md shows docs/scenarios/*.png; a generator change must come with new figures.
    spec = importlib.util.spec_from_file_location("make_figures", DOCS / "make_figures.py")
    make_figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_figures)
    drawn = np.asarray(make_figures.figure(short).convert("RGB"), dtype=float)
    committed = np.asarray(Image.open(DOCS / "scenarios" / f"{short}.png").convert("RGB"))
    stale = f"docs/scenarios/{short}.png is out of date: run python docs/make_figures.py"
    assert drawn.shape == committed.shape, stale
    # Equal but for text antialiasing, should another Pillow draw the captions a bit apart.
    assert np.abs(drawn - committed).mean() < 1.0, stale


@pytest.mark.parametrize("command", [["data", "synth", "--out", "OUT"], ["demo"]])
def test_a_negative_seed_is_a_usage_error_not_a_traceback(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The generator takes seeds >= 0: `--seed -1` is refused where it enters, naming the flag,
    before anything is generated."""
    args = [str(tmp_path / "out") if a == "OUT" else a for a in command]
    code, text = run_cli([*args, "--seed", "-1"], capsys)
    assert code == 2
    assert "Invalid value for '--seed': -1 is not in the range x>=0" in text
    assert "Traceback" not in text and not (tmp_path / "out").exists()


def test_an_interrupted_generation_adds_nothing(tmp_path: Path) -> None:
    """Ctrl-C after the first scenarios: neither a new folder nor an earlier data set gains a
    half of a set (a run would take ROD alone for the whole); no stage is left beside."""

    def stop_after(samples: int) -> Callable[[int], None]:
        done = [0]

        def progress(n: int) -> None:
            done[0] += n
            if done[0] == samples:
                raise KeyboardInterrupt

        return progress

    new = tmp_path / "new"
    with pytest.raises(KeyboardInterrupt):
        generate(new, per_scenario=2, progress=stop_after(5))
    assert not new.exists()
    old = tmp_path / "old"
    generate(old, per_scenario=1, scenarios=["QD"])
    before = {p: p.read_bytes() for p in old.rglob("*") if p.is_file()}
    with pytest.raises(KeyboardInterrupt):
        generate(old, per_scenario=2, seed=3, progress=stop_after(5))
    assert {p: p.read_bytes() for p in old.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]
