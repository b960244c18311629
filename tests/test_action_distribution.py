"""The action distribution (docs/protocol.md §9), counted by hand on made-up result lines: the
share of turns whose answer chose a category, a proactive option, an abstention or nothing
readable, over all turns and at the first turn; the share of episodes that asked until the step
limit; the relative change between two runs; the same numbers in summary.json and report.json.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from handmade import BUILDERS, record
from proactivebench.benchmark.metrics import (
    CHOICE_KINDS,
    choice_kind,
    choices,
    relative_change,
    summarize,
)
from proactivebench.benchmark.registry import make_episode
from proactivebench.models.base import Completion
from proactivebench.report import write_report
from proactivebench.report.measures import action_changes, measure_run
from proactivebench.report.runs import load_run, load_runs
from proactivebench.run.play_episode import _turn_record

ROD_OPTIONS = ["Move the blocks to the right.", "I do not know.", "hat", "tree"]
MVPN_OPTIONS = ["Rotate the object.", "I do not know.", "hat", "tree"]
LAST_TURN = "MVP-N accepts only the category on the last turn: no further view is left to show"
ROD_FIRST = "ROD accepts no category on the first turn, even the right one"


def turn(options: list[str], answer: str, verdict: str, **extra: Any) -> dict[str, Any]:
    return {
        "turn": 1,
        "image": "x.png",
        "crop": None,
        "prompt": "?",
        "options": options,
        "answer": answer,
        "verdict": verdict,
        **extra,
    }


def line(scenario: str, sample: int, turns: list[dict[str, Any]], end: str) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "sample_id": sample,
        "correct": end == "correct",
        "num_turns": len(turns),
        "proactive_suggestions": len(turns) - 1,
        "trace": [{**t, "turn": n} for n, t in enumerate(turns, start=1)],
        "end_reason": end,
        "correct_category": "hat",
    }


def rod(*answers: tuple[str, str], end: str, sample: int, **extra: Any) -> dict[str, Any]:
    return line("ROD", sample, [turn(ROD_OPTIONS, a, v, **extra) for a, v in answers], end)


ASK = ("A", "proactive")


def base_lines() -> list[dict[str, Any]]:
    """ROD: 9 turns (3 category, 4 proactive, 1 abstention, 1 unreadable); MVP-N: 4 turns (1
    category, 3 proactive), and an error line that counts nowhere."""
    return [
        rod(ASK, ("hat", "correct"), end="correct", sample=0),  # proactive, category
        rod(("B", "wrong"), end="abstained", sample=1),  # B = "I do not know."
        rod(("maybe a hat?", "mismatch"), end="unreadable", sample=2),
        rod(ASK, ASK, ASK, end="step_limit", sample=3),  # asked until the step limit
        rod(("D", "wrong"), end="wrong", sample=4),  # a wrong category: "tree"
        # The right category, refused on ROD's first turn: a category all the same.
        rod(("C", "wrong"), end="wrong", sample=5, reason=ROD_FIRST),
        line(
            "MVP-N",
            0,
            [
                turn(MVPN_OPTIONS, "A", "proactive", action="ROTATE"),
                turn(MVPN_OPTIONS, "A", "wrong", reason=LAST_TURN),
            ],  # refused: still proactive
            "wrong",
        ),
        line("MVP-N", 1, [turn(MVPN_OPTIONS, "C", "correct")], "correct"),
        # An accepted option naming no action (protocol §8): a proactive choice.
        line(
            "MVP-N", 2, [turn(MVPN_OPTIONS, "A", "mismatch", reason="names no action")], "no_action"
        ),
        {
            "scenario": "MVP-N",
            "sample_id": 3,
            "error": "TimeoutError",
            "num_turns": 1,
            "trace": [turn(MVPN_OPTIONS, "B", "wrong")],
        },
    ]


def hint_lines() -> list[dict[str, Any]]:
    """A second run of ROD only: 6 turns, 4 proactive, 1 category, 1 abstention."""
    return [
        rod(ASK, ASK, ASK, end="step_limit", sample=3),
        rod(ASK, ("hat", "correct"), end="correct", sample=0),
        rod(("B", "wrong"), end="abstained", sample=1),
    ]


def make_run(root: Path, name: str, lines: list[dict[str, Any]]) -> Path:
    run = root / name
    run.mkdir(parents=True)
    identity = {"data_dir": str(root / "no-data"), "model": name, "settings": {}}
    (run / "run.json").write_text(json.dumps(identity))
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def shares(values: dict[str, Any], prefix: str = "choice_") -> dict[str, float]:
    return {kind: values[prefix + kind] for kind in CHOICE_KINDS}


# ----- each turn's kind --------------------------------------------------------------------------


def test_each_turn_is_counted_by_hand() -> None:
    kinds = [[t["choice"] for t in choices(x)] for x in base_lines()]
    assert kinds == [
        ["proactive", "category"],
        ["abstain"],
        ["unreadable"],
        ["proactive", "proactive", "proactive"],
        ["category"],
        ["category"],
        ["proactive", "proactive"],
        ["category"],
        ["proactive"],
        ["abstain"],  # the error line's turn (summaries leave the line out)
    ]


def test_a_wrong_intervention_without_a_recorded_refusal_would_be_a_category() -> None:
    """The rule reads the refusal the episode recorded: without it, a wrong pick of a
    non-abstaining option is a wrong category (this is what breaks if the rule ignores it)."""
    refused = base_lines()[6]
    assert choice_kind(refused["trace"][1], refused) == "proactive"
    bare = {k: v for k, v in refused["trace"][1].items() if k != "reason"}
    assert choice_kind(bare, refused) == "category"


def test_lenient_reading_decides_the_option_chosen() -> None:
    """With --answer-extraction lenient the line keeps the raw answer and what was read."""
    x = rod(("**(B)**", "wrong"), end="abstained", sample=9)
    assert choice_kind(x["trace"][0], x) == "unreadable"  # the raw text names no option
    x["trace"][0]["read_as"] = "B. I do not know."
    assert choice_kind(x["trace"][0], x) == "abstain"


def test_open_ended_lines_have_no_choices() -> None:
    oeg = {"scenario": "ROD", "sample_id": 0, "prompt": "?", "aggregate": 1}
    assert choices(oeg) == []
    scores = summarize([{**oeg, "proactive_suggestion": 1, "category_prediction": 0}])
    assert "choice_proactive" not in scores.as_dict()["scenarios"]["ROD"]
    assert "blind_asking" not in scores.as_dict()["average"]


@pytest.mark.parametrize("order", ["record", "shuffled"])
def test_the_kind_read_back_from_a_line_is_the_kind_chosen_in_play(order: str) -> None:
    """Random answers played through every hand-made scenario's real episode: the kind read
    back from the recorded turn is the kind of the option the episode read at play time (a
    category, an intervention accepted or refused, an abstention, none)."""
    rng = random.Random(7)
    seen: set[str] = set()
    for short in BUILDERS:
        for sample in range(40):
            rec = record(short)
            episode = make_episode(rec, option_order=order, seed=sample)
            trace, expected = [], []
            end = None
            while not episode.done:
                obs = episode.observation
                pick = rng.randrange(len(obs.options) + 1)
                if pick == len(obs.options):
                    answer = "no idea"
                else:  # the letter as shown, the option's text, or both
                    letter, text = chr(65 + pick), obs.options[pick]
                    answer = rng.choice([f"{letter}.", text, f"{letter}. {text}"])
                choice = episode.read(answer)
                option = choice.option
                if option is None:
                    kind = "unreadable"
                elif option in obs.categories:
                    kind = "category"
                elif choice.abstains:
                    kind = "abstain"
                else:
                    kind = "proactive"
                step = episode.apply(choice)
                trace.append(_turn_record(obs, answer, step, Completion(answer)).to_json())
                expected.append(kind)
                end = step.end
            played = {
                "scenario": short,
                "sample_id": sample,
                "trace": trace,
                "end_reason": end,
                "correct_category": rec.answer,
            }
            assert [t["choice"] for t in choices(played)] == expected, (short, trace)
            seen.update(expected)
    assert seen == set(CHOICE_KINDS)


# ----- a run's shares ------------------------------------------------------------------------


def test_shares_over_all_turns_and_at_the_first_turn(tmp_path: Path) -> None:
    measures = measure_run(load_run(make_run(tmp_path, "base", base_lines())))

    def values(found: Any) -> dict[str, float]:
        return {k: v.estimate for k, v in found.values.items() if v is not None}

    rod, mvpn, average = (
        values(measures.scenarios["ROD"]),
        values(measures.scenarios["MVP-N"]),
        values(measures.average),
    )
    # ROD's 9 turns pooled (not a mean of each episode's shares, which would give 25 %
    # proactive): 3 category, 4 proactive, 1 abstention, 1 unreadable.
    assert shares(rod) == pytest.approx(
        {"category": 300 / 9, "proactive": 400 / 9, "abstain": 100 / 9, "unreadable": 100 / 9}
    )
    # First turns of ROD's 6 episodes: proactive, abstain, unreadable, proactive, category x2.
    assert shares(rod, "first_choice_") == pytest.approx(
        {"category": 200 / 6, "proactive": 200 / 6, "abstain": 100 / 6, "unreadable": 100 / 6}
    )
    assert rod["blind_asking"] == pytest.approx(100 / 6)  # one of six episodes
    # MVP-N: the error line is left out; 4 turns: 1 category, 3 proactive.
    assert measures.scenarios["MVP-N"].n == 3
    assert shares(mvpn) == {"category": 25.0, "proactive": 75.0, "abstain": 0.0, "unreadable": 0.0}
    assert shares(mvpn, "first_choice_") == pytest.approx(
        {"category": 100 / 3, "proactive": 200 / 3, "abstain": 0.0, "unreadable": 0.0}
    )
    # MVP-N's episode that asked on every turn ended wrong on the last (refused) turn: not the
    # step limit (protocol §9).
    assert mvpn["blind_asking"] == 0.0
    # The average: each scenario counts once.
    assert shares(average) == pytest.approx(
        {"category": 700 / 24, "proactive": 4300 / 72, "abstain": 50 / 9, "unreadable": 50 / 9}
    )
    assert average["blind_asking"] == pytest.approx(100 / 12)
    for found in (rod, mvpn, average):
        for prefix in ("choice_", "first_choice_"):
            assert sum(shares(found, prefix).values()) == pytest.approx(100.0)


def test_relative_change_as_the_paper_prints_it() -> None:
    assert relative_change(37.0, 41.0) == pytest.approx(100 * 4 / 37)  # +10.8 %
    assert relative_change(50.0, 25.0) == -50.0
    assert relative_change(0.0, 10.0) is None  # no share to be a percentage of
    assert relative_change(None, 10.0) is None and relative_change(10.0, None) is None


def test_the_change_between_two_runs(tmp_path: Path) -> None:
    base = measure_run(load_run(make_run(tmp_path, "base", base_lines())))
    hint = measure_run(load_run(make_run(tmp_path, "hint", hint_lines())))
    changes, both = action_changes(hint, base)
    assert set(changes) == {"ROD", "average"} and both == ["ROD"]  # the hint run's scenarios
    # ROD: 44.4 % proactive becomes 4 of 6 turns, 66.7 %: +50 %; category 33.3 → 16.7: -50 %.
    assert shares(changes["ROD"]) == pytest.approx(
        {"category": -50.0, "proactive": 50.0, "abstain": 50.0, "unreadable": -100.0}
    )
    # The averages are over the scenarios both runs scored, ROD: its change. Over each run's
    # own, 43/72 proactive (ROD and MVP-N) would become 48/72 (ROD alone): +5/43, a change
    # no scenario made.
    assert changes["average"] == changes["ROD"]
    # No scenario in common: no average to change.
    mvpn_only = measure_run(load_run(make_run(tmp_path, "m", base_lines()[6:9])))
    apart, none = action_changes(hint, mvpn_only)
    assert none == [] and set(apart["average"].values()) == {None}
    # Blind asking: 1 of 6 episodes becomes 1 of 3: +100 %.
    assert changes["ROD"]["blind_asking"] == pytest.approx(100.0)


def test_report_vs_shows_the_changes_in_every_format(tmp_path: Path) -> None:
    base = make_run(tmp_path, "base", base_lines())
    hint = make_run(tmp_path, "hint", hint_lines())
    out = write_report([hint], tmp_path / "report", vs=base, thumb_cache=None)
    report = json.loads((out.out_dir / "report.json").read_text())
    (comparison,) = report["comparisons"]
    assert comparison["action_changes"]["ROD"]["choice_proactive"] == pytest.approx(50.0)
    csv_text = (out.out_dir / "tables" / "actions-vs.csv").read_text()
    assert csv_text.splitlines()[1].startswith("hint,ROD,-50.0,50.0,50.0,-100.0")
    # The average over the one scenario both runs scored says so, and is that scenario's.
    assert csv_text.splitlines()[2].startswith("hint,average of 1 (ROD),-50.0,50.0,50.0,-100.0")
    assert comparison["action_changes_average_covers"] == ["ROD"]
    markdown = (out.out_dir / "report.md").read_text()
    assert "+50.0 %" in markdown and "-100.0 %" in markdown
    assert r"+50.0 \%" in (out.out_dir / "tables" / "actions-vs.tex").read_text()
    assert 'data-table="actions-vs"' in (out.out_dir / "report.html").read_text()


# ----- summary.json, report.json, the tables and the plot ---------------------------------------

ACTION_KEYS = [f"{p}{k}" for p in ("choice_", "first_choice_") for k in CHOICE_KINDS]


def test_summary_json_and_report_json_hold_the_same_numbers(tmp_path: Path) -> None:
    run = make_run(tmp_path, "base", base_lines())
    summary = summarize(base_lines()).as_dict()
    out = write_report([run], thumb_cache=None)
    (measured,) = json.loads((out.out_dir / "report.json").read_text())["runs"]
    assert summary["scenarios"]["ROD"]["choice_proactive"] == pytest.approx(400 / 9)
    assert summary["average"]["blind_asking"] == pytest.approx(100 / 12)
    for name in ("ROD", "MVP-N", "average"):
        mine = summary["average"] if name == "average" else summary["scenarios"][name]
        theirs = measured["average"] if name == "average" else measured["scenarios"][name]
        for key in [*ACTION_KEYS, "blind_asking"]:
            assert mine[key] == theirs[key]["value"], (name, key)
    # The run's actions table, a row per scenario and the average.
    rows = (out.out_dir / "tables" / "actions-base.csv").read_text().splitlines()
    assert rows[0].split(",")[:4] == ["scenario", "n", "errors", "category % (turns)"]
    assert rows[1].startswith("ROD,6,0,33.333333,44.444444,11.111111,11.111111,")
    # The run's own table keeps its columns: the distribution has its own.
    assert "category % (turns)" not in (out.out_dir / "tables" / "run-base.csv").read_text()
    assert (out.out_dir / "plots" / "actions.png").is_file()


def test_the_plot_takes_one_two_and_six_runs(tmp_path: Path) -> None:
    from proactivebench.report.plots import action_bars, action_bars_figure

    lines = [base_lines(), hint_lines(), base_lines()[:3], base_lines()[3:], hint_lines()[:1]]
    runs = [make_run(tmp_path, f"run {i}", x) for i, x in enumerate([*lines, base_lines()])]
    measured = [measure_run(r, n_resamples=10) for r in load_runs(runs)]
    for count in (1, 2, 6):
        figure = action_bars_figure(measured[:count])
        assert figure is not None
        figure.canvas.draw()
        left, right = figure.axes[:2]
        assert len(left.patches) == 4 * count and len(right.patches) == 4 * count
        assert [t.get_text() for t in left.get_yticklabels()] == [f"run {i}" for i in range(count)]
        assert action_bars(measured[:count])[:4] == b"\x89PNG"
    # The first run's bar over all turns: its average shares, stacked in the kinds' order.
    widths = [p.get_width() for p in action_bars_figure(measured[:1]).axes[0].patches]
    assert widths == pytest.approx([700 / 24, 4300 / 72, 50 / 9, 50 / 9])


def test_the_rates_over_turns_read_each_turn_once_with_the_values_of_each() -> None:
    """summary.json's eight rates over choices draw the turns' choices once per line (they
    were drawn once per rate), and each rate still has its own values: ROD's 9 turns by
    hand (3 category, 4 proactive, 1 abstention, 1 unreadable; first turns: 3, 2, 1, 1)."""
    from dataclasses import replace

    from proactivebench.benchmark.metrics import metric, values_by_metric

    drawn: list[str] = []

    def counted(x: dict[str, Any]) -> list[dict[str, Any]]:
        drawn.append(f"{x['scenario']} {x['sample_id']}")
        return choices(x)

    keys = [f"choice_{kind}" for kind in CHOICE_KINDS]
    metrics = [replace(metric(key), over=counted) for key in keys]
    ok = [x for x in base_lines() if x["scenario"] == "ROD"]
    values = values_by_metric([*metrics, metric("first_choice_proactive")], ok)
    assert drawn == [f"ROD {n}" for n in range(6)]  # once per line, not once per rate
    assert [sum(values[k]) / 100 for k in keys] == [3, 4, 1, 1]  # 100 per turn of that kind
    assert [len(values[k]) for k in keys] == [9, 9, 9, 9]
    assert values["first_choice_proactive"] == [100.0, 0.0, 0.0, 100.0, 0.0, 0.0]
