"""`train compare` finds the tuned model's train_run.json from any directory, compares only
the episodes both runs played, and says so when the runs differ."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("datasets")

from clirun import run_cli
from proactivebench.core.errors import RunMismatchError
from proactivebench.data.synth import generate
from proactivebench.train.compare import compare_runs
from resultlines import flipped


@pytest.fixture(scope="module")
def test_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth-test")
    generate(root, per_scenario=2, seed=3, split="test")
    return root


def eval_run(data: Path, out: Path, model: str, capsys, *extra: str) -> Path:
    code, text = run_cli(
        ["eval", "--data", str(data), "--model", model, "--out", str(out), *extra], capsys
    )
    assert code == 0, text
    return out


def as_tuned(run: Path, model_dir: str) -> None:
    """Make `run` look like an eval of `hf:MODEL_DIR` (a relative path, as a user types it),
    a directory `train grpo` left with its train_run.json."""
    config = json.loads((run / "run.json").read_text())
    config["model"] = f"hf:{model_dir}"
    (run / "run.json").write_text(json.dumps(config))


def test_the_tuned_model_is_found_from_another_directory(
    test_data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = tmp_path / "project"
    (project / "tuned").mkdir(parents=True)
    record = {"trained_on": ["ROD", "VSOD", "IN-C", "QD", "CIT", "COCO"], "held_out": ["MVP-N"]}
    (project / "tuned" / "train_run.json").write_text(json.dumps(record))
    monkeypatch.chdir(project)
    base = eval_run(test_data, Path("runs/base"), "baseline:abstain", capsys)
    tuned = eval_run(test_data, Path("runs/tuned"), "baseline:oracle", capsys)
    as_tuned(tuned, "tuned")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    comparison = compare_runs(project / base, project / tuned)
    assert {r.scenario for r in comparison.rows if not r.seen} == {"MVP-N"}
    assert comparison.split_source == str(project / "tuned" / "train_run.json")
    assert not comparison.notes


def test_only_shared_episodes_are_compared_and_differences_are_warned(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = eval_run(test_data, tmp_path / "base", "baseline:abstain", capsys, "--limit", "1")
    tuned = eval_run(
        test_data, tmp_path / "tuned", "baseline:oracle", capsys, "--scenarios", "ROD,QD"
    )
    comparison = compare_runs(base, tuned, holdout="QD")
    # base: 1 sample of each scenario; tuned: 2 of ROD and QD; shared: sample 0 of ROD and QD
    assert [(r.scenario, r.base.n, r.tuned.n) for r in comparison.rows] == [
        ("ROD", 1, 1),
        ("QD", 1, 1),
    ]
    notes = " | ".join(comparison.notes)
    assert f"5 episode(s) of {base}" in notes and f"2 episode(s) of {tuned} (QD, ROD)" in notes
    code, text = run_cli(["train", "compare", str(base), str(tuned), "--holdout", "QD"], capsys)
    assert code == 0 and text.count("warning:") == 2


def test_an_episode_that_failed_in_either_run_is_left_out_of_both(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed episode has no score: paired all the same, it was left out of one run's
    rates and counted in the other's (QD: n 0 beside a base of 50.0; VSOD n 2 with a base of
    25.0), so the gain was over other episodes than the ones named."""
    args = ("--scenarios", "ROD,QD")
    base = eval_run(test_data, tmp_path / "base", "baseline:oracle", capsys, *args)
    tuned = eval_run(test_data, tmp_path / "tuned", "baseline:oracle", capsys, *args)
    path = tuned / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    failed = next(i for i, line in enumerate(lines) if line["scenario"] == "ROD")
    lines[failed] = {
        "scenario": "ROD",
        "sample_id": lines[failed]["sample_id"],
        "error": "TimeoutError",
        "trace": [],
        "settings": lines[failed]["settings"],
    }
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    comparison = compare_runs(base, tuned, holdout="QD")
    rows = {r.scenario: (r.base.n, r.tuned.n) for r in comparison.rows}
    assert rows == {"ROD": (1, 1), "QD": (2, 2)}
    (note,) = comparison.notes
    assert note == (
        "1 episode(s) ended in an error in one run or both (ROD) and are left out of both"
    )


def test_runs_on_other_data_are_refused_not_paired(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sample 0 of another generated set is another sample: gains over such pairs would be
    made up. A moved copy of the same data is the same data, compared."""
    other = tmp_path / "other-data"
    generate(other, per_scenario=1, seed=3, split="test")
    base = eval_run(other, tmp_path / "base", "baseline:abstain", capsys, "--scenarios", "ROD")
    tuned = eval_run(test_data, tmp_path / "tuned", "baseline:oracle", capsys, "--scenarios", "ROD")
    with pytest.raises(RunMismatchError, match=r"played on other data \(the ROD records differ\)"):
        compare_runs(base, tuned, holdout="ROD")
    code, text = run_cli(["train", "compare", str(base), str(tuned), "--holdout", "ROD"], capsys)
    assert code != 0 and "played on other data" in text and "Traceback" not in text
    moved = shutil.copytree(test_data, tmp_path / "moved")
    again = eval_run(moved, tmp_path / "again", "baseline:abstain", capsys, "--scenarios", "ROD")
    assert compare_runs(again, tuned, holdout="ROD").rows


def test_different_settings_are_named(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = eval_run(test_data, tmp_path / "base", "baseline:abstain", capsys, "--scenarios", "QD")
    tuned = eval_run(
        test_data, tmp_path / "tuned", "baseline:oracle", capsys, "--scenarios", "QD", "--hint"
    )
    (note,) = compare_runs(base, tuned, holdout="QD").notes
    assert note == "the runs used different eval settings (hint: false → true)"


def test_a_damaged_run_is_named_with_compare_wording(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = eval_run(test_data, tmp_path / "run", "baseline:oracle", capsys)
    (run / "run.json").write_text("{not json")
    code, text = run_cli(["train", "compare", str(run), str(run), "--holdout", "QD"], capsys)
    assert code == 1 and "damaged" in text and "cannot compare" in text
    assert "afresh" not in text and "Traceback" not in text


def test_compare_counts_the_lines_report_counts_and_says_when_table_3_is_not_comparable(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45, items 1 and 4: a line pasted into the tuned run (a sample it never selected,
    its result flipped) was counted by `train compare` (its own reading of results.jsonl)
    where `report` leaves it out: now the same lines, the pasted one named; and `--paper` sets
    runs on generated data beside Table 3 with a note saying they are not comparable."""
    base = eval_run(test_data, tmp_path / "base", "baseline:abstain", capsys, "--scenarios", "QD")
    tuned = eval_run(test_data, tmp_path / "tuned", "baseline:oracle", capsys, "--scenarios", "QD")
    lines = (base / "results.jsonl").read_text().splitlines()
    pasted = {**flipped(json.loads(lines[0])), "sample_id": 900}
    (tuned / "results.jsonl").write_text((tuned / "results.jsonl").read_text() + "\n")
    with (tuned / "results.jsonl").open("a") as out:
        out.write(json.dumps(pasted) + "\n")
    comparison = compare_runs(base, tuned, holdout="QD")
    assert [(r.scenario, r.base.n, r.tuned.n) for r in comparison.rows] == [("QD", 2, 2)]
    assert any("QD sample 900 was not selected" in note for note in comparison.notes)
    args = ["train", "compare", str(base), str(tuned), "--holdout", "QD", "--paper"]
    code, text = run_cli(args, capsys)
    flat = " ".join(text.split())
    assert code == 0, text
    for role, run in (("base", base), ("tuned", tuned)):
        said = f"note: {role} run {run} is not comparable with Table 3's rows: generated data"
        assert said in flat, text
    # Rows of QD alone: their avg is no average of Table 3's seven (round-2 tryout).
    assert "note: the runs' avg covers QD; Table 3's covers all 7" in flat, text
    assert "rows are over the episodes both runs played" not in flat  # both played the same


def test_table_3_rows_over_part_of_a_run_say_so(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Round-2 tryout: a tuned run of 1 sample a scenario beside a base run of 2: Table 3's
    base row was computed over the shared episodes only, with no word under --paper."""
    base = eval_run(test_data, tmp_path / "base", "baseline:reactive", capsys)
    tuned = eval_run(test_data, tmp_path / "tuned", "baseline:oracle", capsys, "--limit", "1")
    args = ["train", "compare", str(base), str(tuned), "--holdout", "ROD,MVP-N", "--paper"]
    code, text = run_cli(args, capsys)
    flat = " ".join(text.split())
    assert code == 0, text
    said = "the base and tuned rows are over the episodes both runs played (7 episode(s)"
    assert said in flat, text
    assert "avg covers" not in flat  # all seven scenarios


def test_runs_of_settings_table_3_does_not_have_are_said_not_comparable(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Table 3 evaluates as Table 1 does (plain multiple choice, the official test set): runs
    with a hint (Table 7's), shuffled options or ICL (no table's) were set in its columns
    with no note; only generated data, partial runs and decoding were said."""
    from proactivebench.train.compare import not_comparable_notes

    base = tmp_path / "base"
    tuned = tmp_path / "tuned"
    eval_run(test_data, base, "baseline:random", capsys, "--scenarios", "QD", "--hint")
    shuffled = ("--option-order", "shuffled")
    eval_run(test_data, tuned, "baseline:random", capsys, "--scenarios", "QD", *shuffled)
    notes = " | ".join(not_comparable_notes(compare_runs(base, tuned, holdout="QD")))
    assert f"base run {base} is not comparable with Table 3's rows:" in notes
    assert "its settings are Table 7's, where Table 3 evaluates as Table 1 does" in notes
    assert f"tuned run {tuned} is not comparable with Table 3's rows:" in notes
    assert "its settings are no table's of the paper" in notes


def test_the_training_finding_is_the_comparisons_gains_paired(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The paper's finding (v) on `train compare`'s runs: on the seen and on the held-out
    scenarios, the paired differences' estimates are the comparison's mean gains (computed
    from each run's summary of the shared episodes, another path), and the abstainer turned
    oracle gains 100 points on every episode."""
    from proactivebench.train.compare import training_finding

    base = eval_run(test_data, tmp_path / "base", "baseline:abstain", capsys)
    tuned = eval_run(test_data, tmp_path / "tuned", "baseline:oracle", capsys)
    comparison = compare_runs(base, tuned, holdout="QD,MVP-N")
    finding = training_finding(comparison)
    assert finding is not None and finding.id == "training"
    values = {s.name: s for s in finding.statistics}
    for seen, group in ((True, "seen"), (False, "held out")):
        gains = comparison.mean_gain(seen)
        assert gains is not None
        accuracy, ps = values[f"accuracy ({group})"], values[f"ps rate ({group})"]
        assert accuracy.value is not None and ps.value is not None
        assert accuracy.value.estimate == pytest.approx(gains[0]) == 100.0
        assert ps.value.estimate == pytest.approx(gains[1])
        assert accuracy.compared == ("tuned", "base")
    assert values["accuracy (held out)"].scenarios == ("MVP-N", "QD")
    assert values["accuracy (held out)"].episodes == 4
    assert finding.not_comparable[0] == "base: generated data (data synth), not the paper's"
    # `train compare` ends with it, as a suite's report states its findings.
    from proactivebench.report.findings import finding_line

    args = ["train", "compare", str(base), str(tuned), "--holdout", "QD,MVP-N"]
    code, text = run_cli(args, capsys)
    assert code == 0, text
    said = [line for line in text.splitlines() if line.startswith("finding: ")]
    assert said == [f"finding: {finding_line(finding)}"]
    assert "(v) RL fine-tuning teaches proactiveness" in said[0]


def test_the_training_finding_says_other_settings_and_stands_beside_the_trained_rp(
    test_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hostile tryout: runs of other settings (the tuned one with --hint) were compared as
    training alone, said only by the warning above the table; and the finding stood beside
    Table 3's rp = 0.5 row whatever rp the model was trained with (train_run.json's recipe)."""
    from proactivebench.report.findings import table3_config
    from proactivebench.train.compare import training_finding

    base = eval_run(test_data, tmp_path / "base", "baseline:abstain", capsys, "--scenarios", "QD")
    hinted = ("--scenarios", "QD", "--hint")
    tuned = eval_run(test_data, tmp_path / "tuned", "baseline:oracle", capsys, *hinted)
    (tmp_path / "model").mkdir()
    record = {"trained_on": ["QD"], "held_out": [], "recipe": {"proactive_reward": 1.0}}
    (tmp_path / "model" / "train_run.json").write_text(json.dumps(record))
    as_tuned(tuned, str(tmp_path / "model"))
    finding = training_finding(compare_runs(base, tuned))
    assert finding is not None
    assert "tuned: other settings than base's (hint: false → true)" in finding.not_comparable
    assert "other settings than base's (tuned)" in finding.sentence
    assert table3_config(1.0) == "rp = 1.0"  # as the table prints it
    assert all(s.paper is not None and "rp = 1.0 -" in s.paper.source for s in finding.statistics)
