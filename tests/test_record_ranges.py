"""Index fields against the ranges the rules give them, and records the reference still plays.

Issue 10, items 1 and 12: a ROD `first_image` of 99 passed validation and the pre-run image
check while the episode showed `.../99.png`; an MVP-N record with a short `valid_images` was
refused with its whole file, although the reference plays it until the missing view.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from clirun import eval_args, run_cli
from handmade import BUILDERS, mvpn, qd, rod, write_dataset
from proactivebench.benchmark import registry
from proactivebench.benchmark.records import Source, parse_record
from proactivebench.benchmark.registry import make_episode, paper_scenarios
from proactivebench.benchmark.scenarios.base import OPTION_ORDERS
from proactivebench.core.errors import DataError
from proactivebench.run.rundir import read_results

OUT_OF_RANGE = [
    ("ROD", {"first_image": 99, "num_images": 6}, "must be a frame 0..num_images-1"),
    ("ROD", {"first_image": -1}, "must be a frame 0..num_images-1"),
    ("VSOD", {"first_image": 3, "num_images": 3}, "must be a frame 0..num_images-1"),
    ("CIT", {"first_image": 10}, "must be a frame 0..num_images-1"),
    ("IN-C", {"first_image": 0}, "must be a corruption level 1..5"),
    ("IN-C", {"first_image": 6}, "must be a corruption level 1..5"),
    ("QD", {"first_image": -1}, "must be >= 0"),
    ("MVP-N", {"first_image": -2}, "must be >= 0"),
    ("MVP-N", {"valid_images": [7, -3, 9, 1]}, "image ids must be >= 0"),
    # Hostile tryout of issue 45, round 3, finding 7: both passed every check.
    ("QD", {"id": -5}, "must be >= 0, got -5"),
    ("COCO", {"categories": ["cup", "cup", "dog"], "answer": "cup"}, "'cup' is given twice"),
]


@pytest.mark.parametrize(("scenario", "fields", "message"), OUT_OF_RANGE)
def test_an_index_out_of_its_range_is_refused_by_name(
    scenario: str, fields: dict, message: str
) -> None:
    obj = BUILDERS[scenario](**fields)
    with pytest.raises(DataError) as info:
        parse_record(registry.scenario(scenario).record_type, obj, Source("x.jsonl", 3))
    field = next(iter(fields))
    assert f"x.jsonl:3: field '{field}'" in str(info.value) and message in str(info.value)


def test_the_reported_rod_record_fails_validation_and_eval_before_any_turn(
    tmp_path: Path, capsys
) -> None:
    data = write_dataset(tmp_path / "data", {"ROD": [rod(0)]})
    path = next(data.glob("Realistic*"))
    path.write_text(json.dumps(rod(0, first_image=99, num_images=6)) + "\n")
    code, text = run_cli(["data", "validate", str(data)], capsys)
    assert code == 1 and ":1: field 'first_image'" in text and "got 99" in text
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code != 0 and "first_image" in text and "Traceback" not in text


def _mvpn_short(tmp_path: Path) -> Path:
    """MVP-N: one full record, one whose `valid_images` runs out after the first rotation."""
    return write_dataset(tmp_path / "data", {"MVP-N": [mvpn(5), mvpn(8, valid_images=[7, 3])]})


def test_a_short_valid_images_list_loads_with_a_warning(tmp_path: Path, capsys) -> None:
    data = _mvpn_short(tmp_path)
    code, text = run_cli(["data", "validate", str(data)], capsys)
    assert code == 0 and "is valid" in text and "1 warning(s)" in text
    assert ":2: field 'valid_images': 2 entries for num_images=3" in text


def test_a_short_valid_images_episode_ends_failed_at_the_missing_view(
    tmp_path: Path, capsys, caplog
) -> None:
    data = _mvpn_short(tmp_path)
    out = tmp_path / "run"
    args = eval_args(data, out)
    args[args.index("baseline:oracle")] = "baseline:proactive"
    code, text = run_cli(args, capsys)
    assert code == 0, text  # both episodes were scored: neither is an error
    assert "1 selected record(s) cannot be played in full" in caplog.text
    lines = {r["sample_id"]: r for r in read_results(out / "results.jsonl")}
    short, full = lines[8], lines[5]
    # Turn 1 shows view 7 and rotates to valid_images[1] = 3; the rotation after turn 2 needs
    # valid_images[2], which the record lacks.
    assert [t["action"] for t in short["trace"]] == ["ROTATE", "ROTATE"]
    assert short["end_reason"] == "no_view" and short["correct"] is False
    assert "valid_images has no view for turn 3" in short["trace"][-1]["reason"]
    assert "error" not in short
    assert full["correct"] is True and full["end_reason"] == "correct"


@pytest.mark.parametrize(("first", "turns"), [(5, 5), (3, 3)])
def test_inc_enhancing_below_level_one_ends_the_episode(first: int, turns: int) -> None:
    from handmade import record

    episode = make_episode(record("IN-C", first_image=first, num_images=6))
    shown = []
    while not episode.done:
        shown.append(episode.observation.view.image)
        step = episode.step("Deblur the image.")
    assert step.end == "no_view" and not step.correct and "below 1" in step.info["reason"]
    assert shown == [f"IN-C/2/{level}.png" for level in range(first, first - turns, -1)]
    assert set(shown) == set(episode.image_paths())


def test_an_answer_outside_the_categories_loads_with_a_warning(tmp_path: Path, capsys) -> None:
    data = write_dataset(tmp_path / "data", {"QD": [qd(0), qd(2, answer="zebra")]})
    code, text = run_cli(["data", "validate", str(data)], capsys)
    assert code == 0 and ":2: field 'answer': 'zebra' is not one of the categories" in text
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code == 0 and "Traceback" not in text
    lines = {r["sample_id"]: r for r in read_results(tmp_path / "run" / "results.jsonl")}
    assert lines[0]["correct"] is True and lines[2]["correct"] is False


# ----- every image an episode shows is among those checked before the run --------------------

_BANANA = "ROD/natural_bluebl_greenr-banana-s6/{image}.png"


@st.composite
def valid_records(draw: st.DrawFn):
    """A record of any scenario with random index fields, kept only when validation accepts it."""
    scenario = draw(st.sampled_from(paper_scenarios()))
    small = st.integers(-2, 12)
    fields = {"first_image": draw(small), "num_images": draw(st.integers(1, 8))}
    if scenario == "MVP-N":
        fields["valid_images"] = draw(st.lists(st.integers(-1, 20), max_size=9))
    if scenario == "CIT":
        fields["step_size"] = draw(st.integers(1, 4))
        fields["max_steps"] = draw(st.integers(1, 6))
    if scenario == "ROD" and draw(st.booleans()):
        fields["image_template"] = _BANANA
    try:
        return parse_record(
            registry.scenario(scenario).record_type,
            BUILDERS[scenario](**fields),
            Source("p.jsonl", 1),
        )
    except DataError:
        assume(False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    record=valid_records(),
    reference=st.booleans(),
    ablation=st.sampled_from(["none", "random_actions", "random_suggestions"]),
    hint=st.booleans(),
    option_order=st.sampled_from(OPTION_ORDERS),
    seed=st.integers(0, 3),
    data=st.data(),
)
def test_every_image_of_any_trace_is_checked_before_the_run(
    record, reference, ablation, hint, option_order, seed, data
) -> None:
    options = dict(
        reference=reference,
        random_actions=ablation == "random_actions",
        random_suggestions=ablation == "random_suggestions",
        hint=hint,
        option_order=option_order,
        seed=seed,
    )
    checked = set(make_episode(record, **options).image_paths())
    episode = make_episode(record, **options)
    while not episode.done:
        obs = episode.observation
        assert obs.view.image in checked, (obs.view.image, sorted(checked))
        actions, categories = obs.letters()
        letters = actions + categories
        answer = data.draw(st.sampled_from([*letters, "garbage"]) if letters else st.just("x"))
        episode.step(answer)


def test_a_damaged_record_is_refused_alike_by_validate_list_and_eval(
    tmp_path: Path, capsys
) -> None:
    """Hostile tryout of issue 45, round 3, finding 7: a duplicate category (both options then
    "correct") and a negative id passed `data validate`; the record's own checks refuse them,
    so every command that reads records names them."""
    data = write_dataset(tmp_path / "data", {"QD": [qd(0)]})
    path = next(data.glob("QuickDraw*"))
    damaged = [qd(0, categories=["cup", "cup", "dog"], answer="cup"), qd(-5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in damaged))
    for args in (["data", "validate", str(data)], ["list", "--data", str(data)]):
        code, text = run_cli(args, capsys)
        assert code == 1 and "Traceback" not in text, text
        assert ":1: field 'categories': 'cup' is given twice" in text
        assert ":2: field 'id': must be >= 0, got -5" in text
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code == 1 and "field 'categories'" in text and "Traceback" not in text
