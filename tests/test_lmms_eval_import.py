"""`proactivebench import-lmms-eval`: lmms-eval's samples logs of the proactivebench task as a
run. Needs no lmms-eval: the logs are written here in lmms-eval's shape (one JSON object per
document, each metric's entry holding the episode's line), from a run our own loop played;
tests/test_lmms_eval.py imports real ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from proactivebench.metrics import episode_scores
from proactivebench.results import result_order


def _samples_log(path: Path, lines: list[dict[str, Any]]) -> Path:
    """A samples log as lmms-eval writes it for `lines` (its other fields abridged)."""
    rows = []
    for number, line in enumerate(lines):
        scores = episode_scores(line, fractions=True)
        row: dict[str, Any] = {"doc_id": number, "resps": [["('...',)"]]}
        for key in ("accuracy", "ps_rate"):
            row[key] = {"score": scores[key], "result": line}
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory, synth_test: Path) -> Path:
    from click.testing import CliRunner

    from proactivebench.cli import cli

    out = tmp_path_factory.mktemp("oracle")
    args = ["eval", "--data", str(synth_test), "--model", "baseline:oracle", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--no-report"])
    assert result.exit_code == 0, result.output
    return out


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in (run / "results.jsonl").read_text().splitlines()]


def test_the_import_gives_the_played_runs_summary(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _lines(oracle_run)
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_scenario.setdefault(line["scenario"], []).append(line)
    logs = [
        str(_samples_log(tmp_path / f"x_samples_proactivebench_{short}.jsonl", group))
        for short, group in by_scenario.items()
    ]
    out = tmp_path / "imported"
    code, text = run_cli(["import-lmms-eval", *logs, "--out", str(out), "--model", "m"], capsys)
    assert code == 0, text
    assert _lines(out) == sorted(lines, key=result_order)  # copied, in our order
    played = json.loads((oracle_run / "summary.json").read_text())["scenarios"]
    imported = json.loads((out / "summary.json").read_text())["scenarios"]
    assert imported == played
    assert json.loads((out / "run.json").read_text())["model"] == "m"


def test_bad_logs_are_one_clear_line(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _lines(oracle_run)[0]
    good = _samples_log(tmp_path / "good.jsonl", [line])
    twice = _samples_log(tmp_path / "twice.jsonl", [line, line])
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n")
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(json.dumps({"doc_id": 0, "exact_match": 1.0}) + "\n")
    done = tmp_path / "done"
    assert run_cli(["import-lmms-eval", str(good), "--out", str(done)], capsys)[0] == 0
    cases = [
        ([str(tmp_path / "missing.jsonl")], "no lmms-eval samples log"),
        ([str(garbage)], "not JSON"),
        ([str(foreign)], "not a sample of the proactivebench"),
        ([str(twice)], "an episode twice"),
    ]
    for number, (logs, message) in enumerate(cases):
        out = tmp_path / f"r{number}"
        code, text = run_cli(["import-lmms-eval", *logs, "--out", str(out)], capsys)
        assert code == 1 and message in text and "Traceback" not in text, text
    code, text = run_cli(["import-lmms-eval", str(good), "--out", str(done)], capsys)
    assert code == 1 and "exists" in text
