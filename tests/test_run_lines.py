"""A run directory counts only its own lines (issue 29): lines of other settings, of episodes
the data does not hold, contradicting finished lines, malformed fields and a results file
without run.json are refused by eval and named and left out by report and merge; and an eval
with a smaller --limit never turns the whole run's summary into a subset's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.errors import ProactiveBenchError
from proactivebench.report.runs import load_run
from proactivebench.rundir import merge_runs, read_results


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def abstain_run(data: Path, run: Path, capsys, *extra: str) -> list[dict]:
    """A plain run of the abstaining baseline on ROD (accuracy 0: nothing is correct)."""
    args = eval_args(data, run, "--scenarios", "ROD", "--no-report", *extra)
    args[args.index("baseline:oracle")] = "baseline:abstain"
    code, _ = run_cli(args, capsys)
    assert code == 0
    return read_results(run / "results.jsonl")


def append(run: Path, *lines: dict | str) -> int:
    """Append lines; the number of the first appended one."""
    path = run / "results.jsonl"
    before = len(path.read_text().splitlines())
    with path.open("a") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return before + 1


def resume(data: Path, run: Path, capsys) -> tuple[int, str]:
    args = eval_args(data, run, "--scenarios", "ROD", "--no-report")
    args[args.index("baseline:oracle")] = "baseline:abstain"
    return run_cli(args, capsys)


def test_a_line_of_other_settings_is_refused_by_eval_and_left_out_by_report(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    pasted = {**first, "correct": True, "settings": {**first["settings"], "hint": True}}
    number = append(run, pasted)
    code, text = resume(data, run, capsys)
    assert code == 1 and "Traceback" not in text
    assert f"results.jsonl:{number}:" in text and "hint: True (run.json: False)" in text
    loaded = load_run(run)
    assert [x.get("correct") for x in loaded.lines] == [False, False]  # ROD stays at 0 %
    assert (
        len(loaded.rejected) == 1
        and f":{number}: played with other settings" in (loaded.rejected[0])
    )


def test_lines_of_episodes_the_data_does_not_hold_are_refused(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    number = append(run, {**first, "sample_id": 900}, {**first, "scenario": "FOO"})
    code, text = resume(data, run, capsys)
    assert code == 1
    assert f"results.jsonl:{number}: the data holds no ROD sample 900" in text
    assert f"results.jsonl:{number + 1}: scenario 'FOO' is not one of" in text
    loaded = load_run(run)  # the report cannot read the data's ids, but knows the scenarios
    assert loaded.scenarios == ["ROD"]
    assert any(f":{number + 1}: scenario 'FOO'" in r for r in loaded.rejected)


def test_contradicting_finished_lines_count_neither(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    first, second = abstain_run(data, run, capsys)
    number = append(run, {**first, "correct": True}, dict(second))  # a same copy is harmless
    code, text = resume(data, run, capsys)
    assert code == 1 and f"results.jsonl:1, {number}: different finished results for ROD" in text
    loaded = load_run(run)
    assert [x["sample_id"] for x in loaded.lines] == [second["sample_id"]]
    out = tmp_path / "merged"
    summary = merge_runs([run], out, partial=True)
    assert summary.scenarios["ROD"].n == 1 and summary.scenarios["ROD"].accuracy == 0.0


def test_results_without_run_json_are_not_adopted(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    abstain_run(data, run, capsys)
    (run / "run.json").unlink()
    (run / ".finished.json").unlink(missing_ok=True)
    code, text = resume(data, run, capsys)
    assert code == 1 and "has no run.json" in text
    assert not (run / "run.json").exists()


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("num_turns", "3", "num_turns must be a whole number"),
        ("num_turns", 10**400, "num_turns must be a whole number"),
        ("trace", "x", "trace must be a list"),
        ("correct", "yes", "correct must be true or false"),
    ],
)
def test_malformed_fields_are_named_errors(
    data: Path, tmp_path: Path, capsys, field: str, value: object, why: str
) -> None:
    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    # Written by hand: json.dumps writes 10**400 as the digits a foreign writer would.
    shown = str(value) if isinstance(value, int) else json.dumps(value)
    line = json.dumps({**first, field: 0}).replace(f'"{field}": 0', f'"{field}": {shown}')
    number = append(run, line)
    with pytest.raises(ProactiveBenchError, match=f"results.jsonl:{number}: .*{why}"):
        read_results(run / "results.jsonl")
    code, text = resume(data, run, capsys)
    assert code == 1 and why in text and "Traceback" not in text
    loaded = load_run(run)
    assert len(loaded.lines) == 2 and sum(bool(x.get("correct")) for x in loaded.lines) == 0
    assert len(loaded.rejected) == 1 and why in loaded.rejected[0]


def test_a_smaller_limit_never_makes_the_summary_a_subsets(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    abstain_run(data, run, capsys)
    whole = json.loads((run / "summary.json").read_text())
    assert whole["scenarios"]["ROD"]["n"] == 2
    args = eval_args(data, run, "--scenarios", "ROD", "--limit", "1", "--no-report")
    args[args.index("baseline:oracle")] = "baseline:abstain"
    code, text = run_cli(args, capsys)
    assert code == 0
    assert json.loads((run / "summary.json").read_text()) == whole
    assert "this selection chose 1 of the run's 2 episodes" in text
    rod_row = next(row for row in text.splitlines() if row.strip("│┃ ").startswith("ROD"))
    assert rod_row.split("│")[2].strip() == "2"  # the table's n: the whole run, as summary.json


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("usage", "x", "usage must be an object of token counts, not 'x'"),
        ("image", 5, "image must be a path (text), not 5"),
        ("crop", "zz", "crop must be four numbers (left, top, right, bottom), not 'zz'"),
        ("crop", [1, 2], "crop must be four numbers"),
        ("crop", [1, 2, 3, True], "crop must be four numbers"),
        ("resize_short_edge", 0, "resize_short_edge must be a whole number >= 1, not 0"),
    ],
)
def test_a_turn_field_the_report_reads_of_the_wrong_shape_is_named_not_a_traceback(
    data: Path, tmp_path: Path, capsys, field: str, value: object, why: str
) -> None:
    """A turn's token counts or view fields of a shape no writer gives them (a hand edit)
    make a line the report leaves out and names; they were an AttributeError while summing
    token counts, a TypeError while making a thumbnail."""
    from proactivebench.results import shape_problem

    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    turn = {**first["trace"][0], field: value}
    number = append(run, {**first, "trace": [turn]})
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 0 and "Traceback" not in text
    assert f"results.jsonl:{number}: not a result line (turn 1: {why}" in " ".join(text.split())
    # The open-ended line is its own turn; a demonstration's turns are turns too.
    oeg = {"scenario": "QD", "sample_id": 0, "prompt": "What?", field: value}
    assert (shape_problem(oeg) or "").startswith(why)
    shown = {**first, "demonstrations": [{"sample_id": 3, "turns": [turn]}]}
    assert (shape_problem(shown) or "").startswith(f"demonstration 1: {why}")
    assert shape_problem({**first, "demonstrations": [5]}) == (
        "demonstrations must be a list of objects, not [5]"
    )
    assert shape_problem({**first, "demonstrations": [{"turns": first["trace"]}]}) is None
