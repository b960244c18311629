"""The synthetic benchmark as a benchmark: valid, solvable, not guessable, every rule reached."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from clirun import run_cli
from proactivebench.benchmark.registry import make_episode, paper_scenarios
from proactivebench.core.paths import cache_root
from proactivebench.data.directory import load_dataset
from proactivebench.data.synth import GENERATOR_VERSION, generate
from proactivebench.data.validate import validate_dataset
from proactivebench.jobs.demo import DEMO_BASELINES
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.run.rundir import read_results

PER_SCENARIO = 40


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    generate(root, per_scenario=PER_SCENARIO, seed=11)
    return root


def test_generated_set_passes_validation(data: Path, capsys) -> None:
    check = validate_dataset(data)
    assert (check.records, check.problems, check.warnings) == (7 * PER_SCENARIO, [], [])
    code, text = run_cli(["data", "validate", str(data)], capsys)
    assert code == 0 and "is valid" in text


def test_oracle_perfect_and_reactive_near_chance(data: Path, tmp_path: Path) -> None:
    oracle = evaluate(data, load_model("baseline:oracle"), tmp_path / "oracle").summary
    assert all(s.accuracy == 100.0 and s.n == PER_SCENARIO for s in oracle.scenarios.values())
    reactive = evaluate(data, load_model("baseline:reactive"), tmp_path / "reactive").summary
    # ROD hides the object on the first turn: answering at once always fails.
    assert reactive.scenarios["ROD"].accuracy == 0.0
    # Elsewhere a category picked uniformly among four is right a quarter of the time:
    # pooled over 6 x 40 episodes, 25 % +- 3.5 standard deviations (2.8 points each).
    pooled = [s.accuracy for k, s in reactive.scenarios.items() if k != "ROD"]
    assert 15.0 <= sum(pooled) / len(pooled) <= 35.0
    assert all(s.ps_rate == 0.0 for s in reactive.scenarios.values())


def _act_while_possible(episode) -> list:
    """Ask for every intervention the episode accepts, answer only when nothing is left."""
    trace = []
    while not episode.done:
        obs = episode.observation
        answer = obs.correct_actions[0] if obs.correct_actions else obs.correct_categories[0]
        trace.append((obs, episode.step(answer)))
    return trace


def test_every_scenario_rule_is_reached(data: Path) -> None:
    dataset = load_dataset(data)
    seen: Counter[str] = Counter()
    for short in paper_scenarios():
        for record in dataset.records[short]:
            trace = _act_while_possible(make_episode(record))
            first_obs = trace[0][0]
            last_obs, last_step = trace[-1]
            if short in ("ROD", "VSOD", "CIT"):
                # Moves stay acceptable on every turn: only the step limit ends the episode.
                assert len(trace) == make_episode(record).max_steps and not last_step.correct
                seen[f"{short} step limit"] += 1
            else:
                assert last_step.correct, (short, record.id)
            if short == "ROD":
                assert first_obs.correct_categories == ()  # the first-turn rule
                seen["rod first turn"] += 1
            if short in ("MVP-N", "IN-C", "QD"):
                # Acting until the last turn, where only the category is correct.
                assert len(trace) == record.num_images and last_obs.correct_actions == ()
                seen[f"{short} last turn"] += 1
            if short == "CIT":
                shown = first_obs.action_options
                seen["cit rewind pruned"] += "Rewind the video." not in shown
                seen["cit wait pruned"] += not any("Wait for the" in o for o in shown)
            if short == "COCO":
                seen[f"coco {record.direction}"] += 1
                # Moves run out by pruning (the crop reached its limit), then the category.
                assert last_obs.correct_actions == () and len(trace) >= 2
    rules = ("rod first turn", "MVP-N last turn", "IN-C last turn", "QD last turn")
    rules += ("ROD step limit", "VSOD step limit", "CIT step limit")
    for rule in rules:
        assert seen[rule] == PER_SCENARIO, rule
    assert seen["cit rewind pruned"] and seen["cit wait pruned"]
    directions = {k.removeprefix("coco ") for k in seen if k.startswith("coco ")}
    moves = set().union(*(d.split("_") for d in directions))
    assert "zoom" in directions and moves >= {"up", "down", "left", "right"}
    assert any("_" in d for d in directions)  # diagonal moves too


def test_demo_command_runs_offline_and_reuses_its_data(capsys, tmp_path: Path) -> None:
    code, text = run_cli(["demo", "--per-scenario", "4"], capsys)
    assert code == 0
    assert all(name in text for name in ("oracle", "proactive", "reactive", "average"))
    assert "100.0" in text and "runs/demo-seed0-n4/<baseline>/results.jsonl" in text
    # The baselines side by side in one report, plots included (matplotlib is a dependency).
    report = cache_root() / "runs" / "demo-seed0-n4" / "report"
    assert f"report:  {report / 'report.html'}" in text
    page = (report / "report.html").read_text()
    assert all(f"baseline:{name}" in page for name in DEMO_BASELINES)
    assert (report / "plots" / "scenarios.png").read_bytes().startswith(b"\x89PNG")
    assert "ps: proactive suggestions per episode, on average (a count, not a %)" in text
    # It ends with one short episode of the proactive baseline: asking, then answering.
    shown = text.split("One episode of baseline:proactive (proactivebench show ", 1)[1]
    assert "turn 1" in shown and "verdict: proactive · action carried out:" in shown
    assert "ended after" in shown and "the model chose the correct category" in shown
    manifest = cache_root() / f"synth-test-v{GENERATOR_VERSION}-seed0-n4" / "synth_manifest.json"
    made = manifest.stat().st_mtime_ns
    code, again = run_cli(["demo", "--per-scenario", "4"], capsys)
    assert code == 0 and again.split("data:")[0] == text.split("data:")[0]
    assert manifest.stat().st_mtime_ns == made  # the data set was reused, not generated again


def test_demo_results_are_real_runs(capsys) -> None:
    run_cli(["demo", "--per-scenario", "3"], capsys)
    oracle = cache_root() / "runs" / "demo-seed0-n3" / "oracle" / "results.jsonl"
    results = read_results(oracle)
    assert len(results) == 21 and all(r["correct"] for r in results)
