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
from proactivebench.benchmark.metrics import episode_scores
from proactivebench.benchmark.results import result_order
from resultlines import flipped


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


def refused_import(out: Path, capsys: Any, *logs: Path) -> str:
    """`import-lmms-eval LOGS --out OUT` refused: exit 1, no traceback, "nothing imported",
    OUT not made; what it said, on one line."""
    code, text = run_cli(["import-lmms-eval", *map(str, logs), "--out", str(out)], capsys)
    flat = " ".join(text.split())
    assert code == 1 and "Traceback" not in text, text
    assert "nothing imported" in flat and not out.exists(), text
    return flat


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in (run / "results.jsonl").read_text().splitlines()]


def _of_one_scenario(run: Path, count: int) -> list[dict[str, Any]]:
    """`count` lines of one scenario (a samples log holds one scenario's episodes): the run's
    first line under other sample ids (the data has one sample per scenario)."""
    line = _lines(run)[0]
    return [{**line, "sample_id": line["sample_id"] + number} for number in range(count)]


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


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sample_id": [1]}, "needs a scenario and a sample_id"),
        ({"sample_id": None}, "needs a scenario and a sample_id"),
        ({"num_turns": "x"}, "num_turns must be"),
        ({"scenario": "NOPE"}, "scenario 'NOPE' is not one of"),
    ],
    ids=["list-id", "no-id", "bad-turns", "unknown-scenario"],
)
def test_a_line_no_reader_could_count_is_refused_before_anything_is_written(
    oracle_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    message: str,
) -> None:
    """The lines are copied, not rebuilt: one that `report` or `show` would refuse (or a
    sample_id a set cannot hold) was a traceback, or a run directory half written (results
    but no summary) that a fixed log could not be imported into. Now it is one line naming
    the log's file and line, and nothing is written."""
    first, second = _lines(oracle_run)[:2]
    damaged = {**second, **change}
    log = tmp_path / "x_samples_proactivebench_mixed.jsonl"
    rows = [{"doc_id": n, "accuracy": {"result": line}} for n, line in enumerate([first, damaged])]
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    flat = refused_import(tmp_path / "imported", capsys, log)
    assert f"{log}:2: " in flat and message in flat, flat


def test_logs_of_two_runs_with_other_settings_are_refused(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One log per scenario: two logs of runs with different settings (one with --hint) would
    have been one run whose run.json claims the first's settings for every episode."""
    lines = _lines(oracle_run)
    plain = next(line for line in lines if line["scenario"] == "ROD")
    hinted = next(line for line in lines if line["scenario"] == "QD")
    hinted = {**hinted, "settings": {**hinted["settings"], "hint": True}}
    logs = [
        str(_samples_log(tmp_path / "x_samples_proactivebench_ROD.jsonl", [plain])),
        str(_samples_log(tmp_path / "x_samples_proactivebench_QD.jsonl", [hinted])),
    ]
    out = tmp_path / "imported"
    code, text = run_cli(["import-lmms-eval", *logs, "--out", str(out)], capsys)
    assert code == 1 and "Traceback" not in text, text
    assert "QD.jsonl:1: played with other settings than the first line's: hint: True" in text
    assert "(first line: False)" in text and "run.json" not in text, text
    assert not out.exists()


def test_a_log_that_is_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "x_samples_proactivebench_ROD.jsonl"
    log.write_bytes(b"\xff\xfe{}\n")
    code, text = run_cli(["import-lmms-eval", str(log), "--out", str(tmp_path / "r")], capsys)
    assert code == 1 and "Traceback" not in text, text
    assert f"{log}: not a samples log (not UTF-8" in text and len(text.strip().splitlines()) == 1


def test_an_episode_in_two_logs_is_refused_naming_both_places(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Logs of two runs given together hold an episode twice: refused as import-inspect
    refuses it (`adapters.imported`), naming the episode, both `file:line` and whether the
    results contradict (the message said only "an episode twice")."""
    first = _lines(oracle_run)[0]
    changed = flipped(first)
    one = _samples_log(tmp_path / "one.jsonl", [first])
    other = _samples_log(tmp_path / "other.jsonl", [changed])
    flat = refused_import(tmp_path / "imported", capsys, one, other)
    episode = f"{first['scenario']} sample {first['sample_id']}"
    assert f"an episode twice in the samples logs: {episode} at {one}:1 and at {other}:1" in flat
    assert "with different results" in flat, flat


def test_a_row_whose_metrics_hold_different_lines_is_refused_naming_it(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row whose accuracy entry holds a line with correct false and whose ps_rate entry holds
    the same line with correct true was imported without a word (the first taken), though
    docs/lmms-eval.md says contradictions are refused."""
    first, second = _lines(oracle_run)[:2]
    log = _samples_log(tmp_path / "log.jsonl", [first, second])
    rows = [json.loads(t) for t in log.read_text().splitlines()]
    rows[1]["ps_rate"]["result"] = {**second, "correct": not second["correct"]}
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    flat = refused_import(tmp_path / "imported", capsys, log)
    assert f"{log}:2: its metrics hold different result lines (accuracy and ps_rate)" in flat


def test_one_log_given_twice_is_said_so(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same file given twice was refused as "an episode twice ... at X:1 and at X:1 (logs
    of two runs?)": it is one log given twice, under one name or two."""
    log = _samples_log(tmp_path / "log.jsonl", _lines(oracle_run)[:2])
    out = tmp_path / "imported"
    code, text = run_cli(["import-lmms-eval", str(log), str(log), "--out", str(out)], capsys)
    flat = " ".join(text.split())
    assert code == 1 and "Traceback" not in text, text
    assert f"the samples log {log} is given twice; nothing imported" in flat, text
    other_name = tmp_path / "link.jsonl"
    other_name.symlink_to(log)
    code, text = run_cli(["import-lmms-eval", str(log), str(other_name), "--out", str(out)], capsys)
    flat = " ".join(text.split())
    assert code == 1 and f"is given twice (as {log} and {other_name})" in flat, text
    assert "two runs" not in flat and not out.exists()


def test_a_line_of_another_subtask_or_episode_is_refused_naming_it(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A subtask's samples log holds its scenario's episodes only, and a row's document names
    its episode: a QD line in the ROD subtask's log (or in a log of ROD lines), or a line of
    another sample than its document's, was imported as an episode of the run (exit 0)."""
    lines = _lines(oracle_run)
    by_scenario = {line["scenario"]: line for line in lines}
    rod, qd = by_scenario["ROD"], by_scenario["QD"]
    named = _samples_log(tmp_path / "x_samples_proactivebench_rod.jsonl", [qd])
    dashed = _samples_log(tmp_path / "x_samples_proactivebench_IN-C.jsonl", [qd])
    unnamed = _samples_log(tmp_path / "log.jsonl", [rod, qd])
    documented = _samples_log(tmp_path / "doc.jsonl", [rod])
    row = json.loads(documented.read_text())
    row["doc"] = {"scenario": "ROD", "sample_id": rod["sample_id"] + 900, "answer": "x"}
    documented.write_text(json.dumps(row) + "\n")
    cases = [
        (named, f"{named}:1: a QD line in the log of the subtask proactivebench_rod"),
        (dashed, f"{dashed}:1: a QD line in the log of the subtask proactivebench_IN-C"),
        (unnamed, f"{unnamed}:2: a QD line in a log of ROD episodes ({unnamed}:1;"),
        (
            documented,
            f"{documented}:1: its result line is ROD sample {rod['sample_id']}, its document "
            f"ROD sample {rod['sample_id'] + 900}",
        ),
    ]
    for number, (log, message) in enumerate(cases):
        flat = refused_import(tmp_path / f"r{number}", capsys, log)
        assert message in flat, flat


def test_a_score_that_contradicts_its_line_is_refused_naming_both(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """lmms-eval's own score of a row (accuracy 0 where the line is correct) was ignored: the
    run said 100 % where lmms-eval's table said 0. The scores are recomputed from the line
    (`episode_scores`, as the task computes them) and a disagreement refuses the import."""
    line = next(x for x in _lines(oracle_run) if x["correct"])
    log = _samples_log(tmp_path / "log.jsonl", [line])
    row = json.loads(log.read_text())
    row["accuracy"]["score"] = 0.0
    log.write_text(json.dumps(row) + "\n")
    flat = refused_import(tmp_path / "imported", capsys, log)
    assert f"{log}:1: the harness scored accuracy = 0.0, its result line gives 1.0" in flat


def test_a_line_json_cannot_hold_is_refused_naming_its_place_and_field(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line holding `Infinity` failed while writing: run.json was left behind, and the same
    import into that folder was refused afterwards. Refused now before anything is written,
    naming the file:line and the field."""
    first, second = _of_one_scenario(oracle_run, 2)
    log = _samples_log(tmp_path / "log.jsonl", [first, {**second, "bonus": float("inf")}])
    out = tmp_path / "imported"
    flat = refused_import(out, capsys, log)
    assert f"{log}:2: bonus is inf, which JSON cannot hold" in flat, flat
    good = _samples_log(tmp_path / "good.jsonl", [first, second])
    assert run_cli(["import-lmms-eval", str(good), "--out", str(out)], capsys)[0] == 0


def test_a_line_recording_no_settings_is_accepted_wherever_it_is(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line recording no settings agrees with any run (`settings_problem`): second in its
    log it was accepted, first it became the reference and the next line was refused ("other
    settings than the first line's"). The first line that records settings is the reference."""
    lines = _of_one_scenario(oracle_run, 3)
    bare = {k: v for k, v in lines[0].items() if k != "settings"}
    for number, order in enumerate([[bare, *lines[1:]], [lines[1], bare, lines[2]]]):
        log = _samples_log(tmp_path / f"log{number}.jsonl", order)
        out = tmp_path / f"imported{number}"
        code, text = run_cli(["import-lmms-eval", str(log), "--out", str(out)], capsys)
        assert code == 0, text
        settings = json.loads((out / "run.json").read_text())["settings"]
        assert settings == lines[1]["settings"]
    hinted = {**lines[2], "settings": {**lines[2]["settings"], "hint": True}}
    log = _samples_log(tmp_path / "hinted.jsonl", [bare, lines[1], hinted])
    flat = refused_import(tmp_path / "refused", capsys, log)
    assert (
        f"{log}:3: played with other settings than the first line recording settings "
        f"({log}:2): hint: True (that line: False)" in flat
    ), flat


def test_an_empty_log_is_said_and_a_bom_is_read_past(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty samples log was imported without a word, its scenario absent from the run: a
    warning names it. A log beginning with a UTF-8 byte order mark was "not JSON"."""
    first, second = _of_one_scenario(oracle_run, 2)
    log = _samples_log(tmp_path / "log.jsonl", [first, second])
    empty = tmp_path / "x_samples_proactivebench_qd.jsonl"
    empty.write_text("\n")
    out = tmp_path / "imported"
    code, text = run_cli(["import-lmms-eval", str(log), str(empty), "--out", str(out)], capsys)
    flat = " ".join(text.split())
    assert code == 0, text
    assert f"warning: {empty}: the samples log holds no episode" in flat, text
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + log.read_bytes())
    bom = tmp_path / "bom"
    code, text = run_cli(["import-lmms-eval", str(marked), "--out", str(bom)], capsys)
    assert code == 0, text
    assert _lines(bom) == _lines(out)


def test_a_document_naming_its_sample_as_text_is_told_by_type(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A document whose sample_id is the text "0" was refused as "its result line is CIT
    sample 0, its document CIT sample 0": the types that differ are said."""
    line = _lines(oracle_run)[0]
    log = _samples_log(tmp_path / "doc.jsonl", [line])
    row = json.loads(log.read_text())
    row["doc"] = {"scenario": line["scenario"], "sample_id": str(line["sample_id"])}
    log.write_text(json.dumps(row) + "\n")
    flat = refused_import(tmp_path / "imported", capsys, log)
    episode = line["sample_id"]
    assert (
        f"{log}:1: its result line is {line['scenario']} sample {episode} (int), its document "
        f"{line['scenario']} sample {str(episode)!r} (str)" in flat
    ), flat


def test_the_decoding_a_harness_asked_with_is_the_one_recorded() -> None:
    """Inspect's `--temperature` and lmms-eval's `--gen_kwargs` override the task's decoding:
    the imported run recorded the protocol's. One rule for both (`decoded_as_asked`)."""
    from proactivebench.adapters.imported import decoded_as_asked

    protocol = {"max_tokens": 50, "temperature": 0.0}
    lmms = {"max_new_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p"}
    yaml = {"max_new_tokens": 50, "temperature": 0, "do_sample": False, "until": ["\n"]}
    assert decoded_as_asked(protocol, yaml, lmms) == protocol  # 0 is 0.0: as declared
    sampled = decoded_as_asked(protocol, {**yaml, "temperature": 1.0, "top_p": 0.9}, lmms)
    assert sampled == {"max_tokens": 50, "temperature": 1.0, "top_p": 0.9}
    assert decoded_as_asked(protocol, {"temperature": True}, lmms) == protocol  # not a number
