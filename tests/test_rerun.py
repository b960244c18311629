"""A rerun of a finished run costs nothing (issue 20, item 3): it asks no model, says the run is
complete, and leaves an up-to-date report alone; any change to what the run or its report was
made from (more lines, a merge again, a deleted report file, another report format, an edited
record file) takes the full way, with every check of before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.report import build
from proactivebench.run.rundir import FINISHED, merge_runs
from proactivebench.testing.server import FakeOpenAI

EPISODES = 15  # the hand-made data set: every scenario


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return full_dataset(tmp_path / "data")


def stamp(path: Path) -> tuple[int, int]:
    """What changes when a file is written again (its inode: reports are renamed into place)."""
    info = os.stat(path)
    return info.st_ino, info.st_mtime_ns


def test_a_finished_run_asks_nothing_and_keeps_its_report(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with FakeOpenAI() as server:
        args = eval_args(data, run, "--no-cache")
        args[args.index("baseline:oracle")] = f"openai:m@{server.url}"
        code, text = run_cli(args, capsys)
        assert code == 0, text
        asked = len(server.requests)
        assert asked >= EPISODES
        report = run / "report" / "report.html"
        before = {p.name: stamp(p) for p in (report, run / "results.jsonl", run / "run.json")}
        summary = (run / "summary.json").read_text()
        code, again = run_cli(args, capsys)
        assert len(server.requests) == asked  # not a request, not even the check of the server
    assert code == 0, again
    assert f"all {EPISODES} episodes already done" in again
    assert "up to date" in again and str(report) in again
    after = {p.name: stamp(p) for p in (report, run / "results.jsonl", run / "run.json")}
    assert after == before
    assert (run / "summary.json").read_text() == summary
    # The table printed is the run's, as the first invocation printed it.
    assert text.split("results:")[0].split("\n", 1)[1] in again


def test_more_lines_rewrite_the_report(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--limit", "1"), capsys)[0] == 0
    report = run / "report" / "report.html"
    first = stamp(report)
    code, text = run_cli(eval_args(data, run, "--limit", "1"), capsys)
    assert code == 0 and "up to date" in text and stamp(report) == first, text
    code, text = run_cli(eval_args(data, run), capsys)  # a larger selection: more episodes
    assert code == 0, text
    assert "already done" not in text and "up to date" not in text
    assert stamp(report) != first
    lines = (run / "results.jsonl").read_text().splitlines()
    assert len(lines) == EPISODES
    shown = json.loads((run / "report" / "report.json").read_text())
    assert sum(s["n"] for s in shown["runs"][0]["scenarios"].values()) == EPISODES


def test_a_deleted_report_file_or_another_format_rewrites_it(
    data: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run), capsys)[0] == 0
    report = run / "report" / "report.html"
    report.unlink()
    code, text = run_cli(eval_args(data, run), capsys)
    assert code == 0 and "already done" in text and "up to date" not in text, text
    assert report.is_file()
    kept = {p: stamp(p) for p in (report, run / "report" / "report.md")}
    monkeypatch.setattr(build, "REPORT_FORMAT", build.REPORT_FORMAT + 1)
    code, text = run_cli(eval_args(data, run), capsys)
    assert code == 0 and "up to date" not in text, text
    assert all(stamp(p) != old for p, old in kept.items())


def test_merging_again_rewrites_the_report(data: Path, tmp_path: Path, capsys) -> None:
    """A launched run merges its shards again into the same directory (`replace`)."""
    shards = [tmp_path / "s0", tmp_path / "s1"]
    for index, shard in enumerate(shards):
        code, text = run_cli(
            [*eval_args(data, shard, "--no-report"), "--shard", f"{index}/2"], capsys
        )
        assert code == 0, text
    merged = tmp_path / "merged"
    merge_runs(shards, merged)
    assert run_cli(eval_args(data, merged), capsys)[0] == 0
    report = merged / "report" / "report.html"
    first = stamp(report)
    assert "up to date" in run_cli(eval_args(data, merged), capsys)[1]
    merge_runs(shards, merged, replace=True)
    code, text = run_cli(eval_args(data, merged), capsys)
    assert code == 0 and "up to date" not in text, text
    assert stamp(report) != first


def test_an_edited_record_file_is_checked_again(data: Path, tmp_path: Path, capsys) -> None:
    """The check that protects a run from bad data (every image an episode may show exists)
    still runs when a record file changed since the run, although every episode is done."""
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--no-report"), capsys)[0] == 0
    assert (run / FINISHED).is_file()
    records = next(data.glob("*_preprocessed.jsonl"))
    lines = records.read_text().splitlines()
    first = json.loads(lines[0])
    text = json.dumps(first)
    image = next(v for v in _strings(first) if v.endswith((".png", ".jpg", ".jpeg")))
    lines[0] = text.replace(json.dumps(image), json.dumps("missing/nowhere.png"), 1)
    records.write_text("\n".join(lines) + "\n")
    code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 1 and "Traceback" not in text, text
    assert "missing/nowhere.png" in text


def test_a_changed_results_file_is_read_again(data: Path, tmp_path: Path, capsys) -> None:
    """The note of a complete run holds only while results.jsonl is as it was: an episode's
    line removed by hand is played again."""
    run = tmp_path / "run"
    assert run_cli(eval_args(data, run, "--no-report"), capsys)[0] == 0
    results = run / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[1:]))
    code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0 and "already done" not in text, text
    assert len(results.read_text().splitlines()) == EPISODES


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
