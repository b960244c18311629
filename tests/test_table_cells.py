"""Every figure a person reads is the same figure: the terminal table's cells, summary.json and
report.json hold one computed value per metric, and the average is the unweighted mean of
the scenarios' rates (each scenario counts once, as the paper reports).

One MCQA run (the random baseline) and one judged open-ended run (a scripted model and a
three-vote judge that disagrees with itself), on scenarios of unequal size, through the command
line as a user runs them; the terminal table is read back cell by cell.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest

from clirun import run_cli
from proactivebench.data.synth import generate

#: Scenarios of unequal size, so that an average weighted by size differs from the paper's.
SIZES = {"ROD": 9, "QD": 3, "CIT": 5}

ANSWERS = """
def answer(messages, observation):
    # Names the category for even samples, asks for the intervention for odd ones.
    if observation.sample_id % 2:
        return "I would ask to " + observation.scenario + " change the view."
    return "It looks like a " + ("cat" if observation.sample_id % 3 else "dog") + "."
"""

JUDGE = """
import ast, itertools
VOTES = itertools.count()

def judge(messages, observation):
    user = messages[1]["content"]
    entries = ast.literal_eval(user.split("### Correct Answers (List):\\n")[1].split("\\n###")[0])
    vote = next(VOTES)
    if vote % 7 == 3:
        return "no verdict here"  # an unparsed vote
    return ", ".join("1" if (i + vote) % 3 == 0 else "0" for i in range(len(entries)))
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    for short, size in SIZES.items():
        generate(root, per_scenario=size, scenarios=[short], seed=2)
    return root


def table_rows(text: str) -> dict[str, list[str]]:
    """The terminal table's body rows, by their first cell (rich's box characters)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
    return rows


def headings(text: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith("┃"))
    return [c.strip() for c in line.strip("┃").split("┃")]


def expected_cell(value: dict[str, float] | None, percent: bool) -> str:
    """A cell written out from report.json: the estimate, and ± half its interval's width."""
    if value is None:
        return "—"
    decimals = 1 if percent else 2
    text = f"{value['value']:.{decimals}f}"
    if "low" in value:
        text += f" ± {(value['high'] - value['low']) / 2:.{decimals}f}"
    return text


def check_run(run: Path, text: str, columns: dict[str, bool]) -> dict[str, Any]:
    """Every cell of the terminal table against report.json, and summary.json's values; the
    columns are the headline rates, heading → percent."""
    report = json.loads((run / "report" / "report.json").read_text())
    (measured,) = report["runs"]
    keys = {h: k for k, h in _headings(report).items() if h in columns}
    assert headings(text) == ["scenario", "n", *columns, "errors"]
    rows = table_rows(text)
    assert list(rows) == [*SIZES, measured["average"]["label"]]
    summary = json.loads((run / "summary.json").read_text())
    for name, row in rows.items():
        found = measured["average"] if name == measured["average"]["label"] else None
        found = found or measured["scenarios"][name]
        assert row[0] == str(found["n"]) and row[-1] == str(found["errors"])
        for heading, cell in zip(columns, row[1:-1], strict=True):
            assert cell == expected_cell(found[keys[heading]], columns[heading]), (name, heading)
        score = summary["average"] if found is measured["average"] else summary["scenarios"][name]
        for key in keys.values():
            value = found[key]["value"] if found[key] is not None else None
            assert score.get(key) == value, (name, key)
        # The rates summary.json holds besides the terminal's (the action distribution) are
        # report.json's too.
        for key, value in score.items():
            if key not in ("n", "errors", "unjudged"):
                assert found[key] is not None and found[key]["value"] == value, (name, key)
    for key in keys.values():
        rates = [s[key]["value"] for s in measured["scenarios"].values() if s[key] is not None]
        assert measured["average"][key]["value"] == pytest.approx(fmean(rates), abs=1e-12)
    return measured


def _headings(report: dict[str, Any]) -> dict[str, str]:
    """Each metric's heading, as report.json declares it."""
    return {key: info["heading"] for key, info in report["metric_info"].items()}


def test_an_mcqa_runs_table_is_report_json(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", "baseline:random", "--seed", "4"]
    code, text = run_cli([*args, "--out", str(run)], capsys)
    assert code == 0, text
    measured = check_run(run, text, {"accuracy %": True, "ps rate": False})
    summary = json.loads((run / "summary.json").read_text())
    assert "choice_proactive" in summary["average"]  # the action distribution, not in the table
    # Unequal sizes and unequal rates: an average weighted by size would read otherwise.
    scenarios = measured["scenarios"]
    accuracies = [scenarios[s]["accuracy"]["value"] for s in SIZES]
    assert len(set(accuracies)) > 1 or len({scenarios[s]["ps_rate"]["value"] for s in SIZES}) > 1


def test_an_open_ended_runs_table_is_report_json(data: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "agent.py").write_text(ANSWERS)
    (tmp_path / "judging.py").write_text(JUDGE)
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", f"python:{tmp_path / 'agent.py'}:answer"]
    args += ["--mode", "oeg", "--judge", f"python:{tmp_path / 'judging.py'}:judge"]
    args += ["--judge-votes", "3", "--no-cache", "--out", str(run)]
    code, text = run_cli(args, capsys)
    assert code == 0, text
    columns = {"ps %": True, "cp %": True, "aggregate %": True}
    columns |= {"judges agree %": True, "unparsed %": True}
    measured = check_run(run, text, columns)
    average = measured["average"]
    assert 0 < average["agreement"]["value"] < 100 and 0 < average["unparsed"]["value"] < 100


def test_a_multiturn_open_ended_runs_table_is_report_json(
    data: Path, tmp_path: Path, capsys
) -> None:
    """--mode oeg-multiturn: MCQA's headline rates (accuracy, ps rate; paper Table 10) from
    judged turns, and the report's note that the comparison is approximate."""
    (tmp_path / "agent.py").write_text(ANSWERS)
    (tmp_path / "judging.py").write_text(JUDGE)
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", f"python:{tmp_path / 'agent.py'}:answer"]
    args += ["--mode", "oeg-multiturn", "--judge", f"python:{tmp_path / 'judging.py'}:judge"]
    args += ["--judge-votes", "3", "--no-cache", "--out", str(run)]
    code, text = run_cli(args, capsys)
    assert code == 0, text
    measured = check_run(run, text, {"accuracy %": True, "ps rate": False})
    assert measured["average"]["ps_rate"]["value"] > 0
    assert "first_turn_cp" in measured["average"]
    report = (run / "report" / "report.md").read_text()
    assert "approximate comparison" in report and "Table 10" in report
    # The viewer shows what the judge found at each turn.
    assert "judge: ps; valid: " in (run / "report" / "report.html").read_text()


def test_every_metric_is_declared_with_its_direction(data: Path, tmp_path: Path) -> None:
    from proactivebench import EvalSettings, evaluate, load_model, write_report

    run = tmp_path / "run"
    evaluate(data, load_model("baseline:oracle"), run, EvalSettings())
    report = json.loads((write_report([run], run / "report").out_dir / "report.json").read_text())
    info = report["metric_info"]
    assert set(info) == set(report["metrics"])  # every metric described is declared
    assert info["accuracy"] == {
        "heading": "accuracy %",
        "percent": True,
        "higher_is_better": True,
        "headline": True,
        "doc": report["metrics"]["accuracy"],
        "interval": "wilson",
    }
    assert info["unreadable"]["higher_is_better"] is False
    assert info["asked"]["higher_is_better"] is None
    assert info["ps_rate"]["heading"] == "ps rate" and info["ps_rate"]["percent"] is False
    assert info["ps_rate"]["interval"] == "bootstrap" and info["asked"]["interval"] is None


def test_a_declared_metric_is_in_summary_json_without_a_field_added_by_hand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ScenarioScore` follows the declarations (issue 46 item 2): a new headline metric,
    declared in `MCQA_METRICS` alone, reached `summarize` as a keyword the score had no field
    for (a TypeError at the end of eval)."""
    from dataclasses import replace

    from proactivebench.benchmark import metrics

    accuracy = metrics.metric("accuracy")
    turns = replace(
        accuracy, key="turns_used", heading="turns used", value=lambda x: x["num_turns"], reads=()
    )
    monkeypatch.setattr(metrics, "MCQA_METRICS", (*metrics.MCQA_METRICS, turns))
    lines = [
        {"scenario": "ROD", "sample_id": i, "correct": True, "num_turns": i + 1, "trace": []}
        for i in range(2)
    ]
    score = metrics.summarize(lines).scenarios["ROD"]
    assert score.turns_used == 1.5 and score.as_dict()["turns_used"] == 1.5
    with pytest.raises(TypeError, match="no declared summary metric undeclared"):
        metrics.ScenarioScore(n=1, undeclared=1.0)


def test_a_terminal_cell_keeps_what_follows_its_interval() -> None:
    """`report --paper` printed a Fig. 8 average of other scenarios than the paper's as a
    plain "20.0 ± 20.0" (its "not compared" dropped with the bracket), and one without an
    interval as "0.0 not compared ± 0.00000000000000"; report.md and the page said it."""
    from proactivebench.cli.output import _terminal_text
    from proactivebench.report.tables import Cell

    marked = Cell("20.0 [0.0, 40.0] not compared", 20.0, 0.0, 40.0)
    assert _terminal_text(marked) == "20.0 ± 20.0 not compared"
    assert _terminal_text(Cell("0.0 not compared", 0.0, 0.0, 0.0)) == "0.0 not compared"
    assert _terminal_text(Cell("50.0 [0.0, 100.0]", 50.0, 0.0, 100.0)) == "50.0 ± 50.0"
    assert _terminal_text(Cell("—")) == "—"
