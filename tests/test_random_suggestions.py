"""The paper's random-suggestions ablation (§4.3, Figs. 5 and 20; docs/protocol.md §5): every
shown intervention is replaced by one of another scenario's, drawn by the run's seed per sample
and turn; choosing one ends the episode, failed, as a proactive choice the environment cannot
carry out. `--random-actions` (the reference code's ablation) is tested in test_scenarios.py
and stays as it was."""

from __future__ import annotations

import json
import random
import typing
from pathlib import Path
from typing import Any

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset, record
from proactivebench.benchmark.demonstrations import DemoSettings
from proactivebench.benchmark.demonstrations import play as play_demonstration
from proactivebench.benchmark.registry import (
    ScenarioInfo,
    foreign_interventions,
    make_episode,
    register_scenario,
    scenario,
    unregister_scenario,
)
from proactivebench.benchmark.scenarios.actions import is_abstention, names_action
from proactivebench.benchmark.scenarios.answers import normalize_full
from proactivebench.benchmark.scenarios.base import EndReason
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.report.transcript import END_REASONS
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings

#: Every scenario's intervention texts as `Episode.interventions` declares them, written out.
ROD = ("Move the blocks to the left.", "Move the blocks to the right.")
VSOD = ("Wait for the occlusion to disappear.", "Rewind the video.")
MVPN = ("Rotate the object.", "Look at the object from another angle.")
INC = (
    "Adjust the brightness.",
    "Increase the contrast.",
    "Increase the color saturation.",
    "Deblur the image.",
    "Denoise the image.",
    "Reduce the JPEG compression.",
    "Increase the resolution.",
    "Remove the artifacts.",
)
QD = ("Add more details.", "Show more strokes of the sketch.")
CIT = ("Rewind the video.", "Wait for the object to appear.")
COCO = (
    "Move the camera to the left.",
    "Move the camera to the right.",
    "Move the camera up.",
    "Move the camera down.",
    "Move farther from the object.",
)

#: The handmade records of every scenario: each COCO direction kind, and CIT at both ends of
#: its video (the rewind pruned at the start, the wait at the end).
CASES = [
    ("ROD", {}),
    ("VSOD", {}),
    ("MVP-N", {}),
    ("IN-C", {}),
    ("QD", {}),
    ("CIT", {}),
    ("CIT", {"first_image": 8}),
    ("CIT", {"first_image": 4}),
    ("COCO", {"direction": "left"}),
    ("COCO", {"direction": "up_right"}),
    ("COCO", {"direction": "zoom"}),
]


def suggested(short: str, seed: int = 0, **kw: object):
    return make_episode(record(short, **kw), random_suggestions=True, seed=seed)


def test_the_pool_is_the_other_scenarios_interventions() -> None:
    """In registration order, each text once: CIT's rewind is VSOD's too, so QD's pool holds
    it once; a scenario's own texts are never in its pool."""
    assert foreign_interventions("QD") == (*ROD, *VSOD, *MVPN, *INC, CIT[1], *COCO)
    assert foreign_interventions("ROD") == (*VSOD, *MVPN, *INC, *QD, CIT[1], *COCO)
    # CIT's pool still holds VSOD's "Rewind the video.": the episode takes it out (below).
    assert "Rewind the video." in foreign_interventions("CIT")


def test_an_episode_draws_from_what_cannot_be_read_as_its_own() -> None:
    """Hand-computed pools: ROD loses its own moves and the camera's left and right (the
    keyword table reads "to the left" as ROD's LEFT); CIT loses the rewind (its own text) and
    VSOD's wait (the keyword "wait for the" is CIT's FORWARD); VSOD likewise CIT's wait."""
    ep = suggested("ROD")
    assert ep._foreign == (*VSOD, *MVPN, *INC, *QD, CIT[1], *COCO[2:])
    assert suggested("CIT")._foreign == (*ROD, *MVPN, *INC, *QD, *COCO)
    assert suggested("VSOD")._foreign == (*ROD, *MVPN, *INC, *QD, *COCO)


def test_the_records_own_options_and_categories_are_never_drawn() -> None:
    """A record that words its options its own way (here a QD record that also offers MVP-N's
    angle) or names a category like an intervention: neither text is drawn, so that every
    shown text reads as one option only."""
    rec = record(
        "QD",
        options=["Add more details.", MVPN[1], "I do not know."],
        categories=["apple", MVPN[0], "cup", "dog"],
    )
    assert make_episode(rec, random_suggestions=True)._foreign == (*ROD, *VSOD, *INC, CIT[1], *COCO)


def test_too_small_a_pool_is_refused_by_name() -> None:
    with pytest.raises(ProactiveBenchError, match="IN-C sample 2 shows 8 interventions, but"):
        make_episode(record("IN-C"), random_suggestions=True, suggestion_pool=COCO)


@pytest.mark.parametrize(("short", "kw"), CASES)
def test_shown_suggestions_come_from_other_scenarios_never_the_played_one(
    short: str, kw: dict
) -> None:
    rec = record(short, **kw)
    own = {normalize_full(t) for t in (*scenario(short).episode.interventions, *rec.options)}
    pool = set(foreign_interventions(short))
    for seed in range(25):
        plain = make_episode(rec, seed=seed).observation
        ep = make_episode(rec, random_suggestions=True, seed=seed)
        obs = ep.observation
        # Same length, abstentions and categories where they were, every intervention replaced.
        assert len(obs.action_options) == len(plain.action_options)
        assert obs.categories == plain.categories and obs.options[-4:] == plain.options[-4:]
        slots = [i for i, o in enumerate(plain.action_options) if not is_abstention(o)]
        assert [o for o in obs.action_options if is_abstention(o)] == [
            o for o in plain.action_options if is_abstention(o)
        ]
        shown = tuple(obs.action_options[i] for i in slots)
        assert ep.suggestions == shown and len(shown) == len(slots) > 0
        assert len(set(shown)) == len(shown)  # no text twice in a turn
        for text in shown:
            assert text in pool  # another scenario's
            assert normalize_full(text) not in own  # never the played scenario's
            assert not names_action(text, ep.action_space())
            assert not is_abstention(text)
        # Nothing shown can be carried out: only the category is correct.
        assert obs.correct_actions == ()
        assert obs.correct_categories == plain.correct_categories


def test_the_draw_is_seeded_per_sample_and_turn() -> None:
    """The rule of docs/protocol.md §5: `random.Random("suggest:SEED:SCENARIO:ID:TURNS")`
    samples as many distinct texts as there are interventions, from the episode's pool in
    registration order; nothing else drawn in the run moves it."""
    ep = suggested("ROD", seed=4)
    pool = (*VSOD, *MVPN, *INC, *QD, CIT[1], *COCO[2:])
    assert ep.suggestions == tuple(random.Random("suggest:4:ROD:0:0").sample(pool, 2))
    first = suggested("IN-C", seed=0).suggestions
    for other in ("ROD", "QD", "COCO"):  # other episodes in between change nothing
        suggested(other, seed=0).step("A")
    assert suggested("IN-C", seed=0).suggestions == first
    draws = {suggested("IN-C", seed=seed).suggestions for seed in range(6)}
    assert len(draws) == 6  # another seed, other texts
    assert suggested("IN-C", seed=0, id=3).suggestions != first  # another sample too


def test_choosing_a_suggestion_ends_the_episode_as_an_invalid_proactive_choice() -> None:
    for answer in ("A", "B."):
        ep = suggested("ROD")
        chosen = ep.suggestions["AB".index(answer[0])]
        step = ep.step(answer)
        assert (step.verdict, step.done, step.correct, step.end) == (
            "proactive",
            True,
            False,
            "invalid_suggestion",
        )
        assert "action" not in step.info and step.info["chosen"] == chosen
        assert "random suggestion of another scenario" in step.info["reason"]
        assert ep.num_turns == 1 and step.observation is None
    by_text = suggested("QD")
    assert by_text.step(by_text.suggestions[0]).end == "invalid_suggestion"


def test_categories_and_abstentions_keep_their_rules() -> None:
    vsod = suggested("VSOD")  # the category is correct on every VSOD turn
    step = vsod.step("dog")
    assert (step.verdict, step.correct, step.end) == ("correct", True, "correct")
    wrong = suggested("VSOD").step("apple")
    assert (wrong.verdict, wrong.correct, wrong.end) == ("wrong", False, "wrong")
    rod = suggested("ROD").step("cup")  # ROD refuses the category on its first turn
    assert (rod.verdict, rod.end) == ("wrong", "wrong") and not rod.correct
    assert suggested("QD").step("I do not know.").end == "abstained"
    # The replaced intervention is no longer shown: its text designates nothing.
    assert suggested("QD").step("Add more details.").end == "unreadable"


def test_every_end_reason_has_a_transcript_sentence() -> None:
    assert set(typing.get_args(EndReason)) == set(END_REASONS)


def test_demonstrations_show_their_own_interventions() -> None:
    """ICL demonstrations are correct examples: they ignore the episode's ablation."""
    demo = play_demonstration(
        record("VSOD"),
        DemoSettings(1),
        seed=0,
        episode_options=EvalSettings(random_suggestions=True).episode_options(),
    )
    assert demo.turns[0].observation.action_options[:2] == VSOD


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def test_the_result_line_records_the_suggestions_shown(data: Path, tmp_path: Path) -> None:
    script = tmp_path / "answers.jsonl"
    rows = [
        {"scenario": "ROD", "sample_id": 0, "answers": ["A"]},
        {"scenario": "VSOD", "sample_id": 6, "answers": ["dog"]},
        {"scenario": "QD", "sample_id": 0, "answers": ["I cannot answer."]},
    ]
    script.write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = EvalSettings(scenarios=("ROD", "VSOD", "QD"), random_suggestions=True, seed=2)
    evaluate(data, load_model(f"replay:{script}"), tmp_path / "run", settings)
    lines = {
        (x["scenario"], x["sample_id"]): x for x in read_results(tmp_path / "run" / "results.jsonl")
    }
    ends = {key: (x["end_reason"], x["correct"]) for key, x in lines.items()}
    assert ends[("ROD", 0)] == ("invalid_suggestion", False)
    assert ends[("VSOD", 6)] == ("correct", True)
    assert ends[("QD", 0)] == ("abstained", False)
    for (short, sample_id), line in lines.items():
        assert line["settings"]["random_suggestions"] is True
        ep = suggested(short, seed=2, id=sample_id)  # the same draw, made apart
        turn = line["trace"][0]
        assert turn["random_suggestions"] == list(ep.suggestions)
        assert turn["options"] == list(ep.observation.options)
    assert lines[("ROD", 0)]["trace"][0]["verdict"] == "proactive"
    assert "action" not in lines[("ROD", 0)]["trace"][0]


def test_a_run_without_the_setting_records_nothing_of_it(data: Path, tmp_path: Path) -> None:
    """Absent at its default: the lines and identity of every existing mode are as before."""
    evaluate(data, load_model("baseline:random"), tmp_path / "plain", EvalSettings(seed=1))
    lines = read_results(tmp_path / "plain" / "results.jsonl")
    assert all("random_suggestions" not in turn for x in lines for turn in x["trace"])
    assert all("random_suggestions" not in x["settings"] for x in lines)
    run_json = json.loads((tmp_path / "plain" / "run.json").read_text())
    assert "random_suggestions" not in json.dumps(run_json)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--random-actions"], "two different ablations"),
        (["--reference"], "reference mode shows none"),
    ],
)
def test_what_cannot_go_with_it_is_refused_by_name(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list, message: str
) -> None:
    code, out = run_cli(eval_args(data, tmp_path / "run", "--random-suggestions", *extra), capsys)
    assert code != 0 and message in out and "Traceback" not in out
    with pytest.raises(ProactiveBenchError, match="--mode oeg shows none"):
        EvalSettings(random_suggestions=True, mode="oeg")


def test_the_cli_runs_it(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The oracle answers the category where it is correct; on ROD's first turn nothing shown
    is correct, so no episode there can be won."""
    args = eval_args(data, tmp_path / "run", "--random-suggestions", "--scenarios", "ROD,QD")
    code, out = run_cli(args, capsys)
    assert code == 0, out
    lines = read_results(tmp_path / "run" / "results.jsonl")
    assert {(x["scenario"], x["correct"], x["num_turns"]) for x in lines} == {
        ("ROD", False, 1),
        ("QD", True, 1),
    }


def test_verifiers_pays_no_intervention_reward_for_a_suggestion(data: Path) -> None:
    """An invalid suggestion is a proactive choice, but not an intervention carried out: the
    verifiers reward pays `intervention_reward` only for those (the paper's valid rp)."""
    pytest.importorskip("verifiers.v1")
    from proactivebench.adapters.verifiers_env import PlaySettings, ProactiveData, episode_outcome

    def outcome(replies: list[str], **play: Any):
        task = ProactiveData(
            data_dir=str(data), scenario="ROD", sample_id=0, play=PlaySettings(**play)
        )
        return episode_outcome(task, replies)

    invalid = outcome(["A"], random_suggestions=True)
    assert (invalid.interventions, invalid.turns, invalid.correct) == (0, 1, False)
    plain = outcome(["A", "cup"])  # the same letter, the scenario's own move
    assert (plain.interventions, plain.turns, plain.correct) == (1, 2, True)


def test_a_scenario_registered_from_outside_offers_its_own_texts() -> None:
    """Its `interventions` join the other scenarios' pools, and the keyword rule applies to
    them too: the toy's lamp "brightness" is IN-C's BRIGHTNESS, so IN-C never shows it."""
    from test_own_scenario import DimEpisode

    LAMP = "Turn up the brightness of the lamp."

    class LitEpisode(DimEpisode):
        interventions = (LAMP,)

    register_scenario(ScenarioInfo(LitEpisode))
    try:
        assert foreign_interventions("QD")[-1] == LAMP
        assert LAMP in suggested("QD")._foreign
        assert LAMP not in suggested("IN-C")._foreign
        assert LAMP not in foreign_interventions(LitEpisode.scenario)
    finally:
        unregister_scenario(LitEpisode.scenario)
