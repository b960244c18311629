"""run.json records what a run selected (issue 45 item 3), so that readers without the data
(report, merge, judge, push) tell a run's lines from lines of episodes it never chose: pasted
sample ids, or a shard's lines of another shard's slice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.report.runs import load_run
from proactivebench.run.rundir import merge_runs, read_results
from proactivebench.run.selection_record import id_ranges, parse_id_ranges
from resultlines import flipped


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def play(data: Path, run: Path, capsys, *extra: str) -> None:
    code, text = run_cli(eval_args(data, run, "--no-report", *extra), capsys)
    assert code == 0, text


def selection(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())["selection"]


def append(run: Path, lines: list[dict]) -> None:
    with (run / "results.jsonl").open("a") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


@pytest.mark.parametrize(
    ("ids", "text"),
    [([0, 1, 2, 5, 7, 8], "0-2,5,7-8"), ([], ""), ([3], "3"), ([-3, -2, -1, 4], "-3--1,4")],
)
def test_ids_as_ranges_read_back(ids: list[int], text: str) -> None:
    assert id_ranges(reversed(ids)) == text
    assert parse_id_ranges(text) == set(ids)


def test_run_json_records_what_every_invocation_selected(
    data: Path, tmp_path: Path, capsys
) -> None:
    """The hand-made data holds ROD samples 0 and 1, VSOD 6 and 9, QD 0 and 2."""
    run = tmp_path / "run"
    play(data, run, capsys, "--scenarios", "ROD,VSOD", "--limit", "1")
    assert selection(run) == {
        "scenarios": {
            "ROD": {"available": 2, "selected": 1, "ids": "0"},
            "VSOD": {"available": 2, "selected": 1, "ids": "6"},
        },
        "shard": None,
        "synthetic": False,
    }
    play(data, run, capsys, "--scenarios", "QD,ROD")  # more of ROD, and QD
    assert selection(run)["scenarios"] == {
        "ROD": {"available": 2, "selected": 2, "ids": "0-1"},
        "VSOD": {"available": 2, "selected": 1, "ids": "6"},
        "QD": {"available": 2, "selected": 2, "ids": "0,2"},
    }
    assert len(load_run(run).lines) == 5 and not load_run(run).rejected


def test_pasted_lines_of_episodes_never_selected_are_named_not_counted(
    data: Path, tmp_path: Path, capsys
) -> None:
    """Six lines of ROD samples 900-905 pasted into a run of ROD's two samples: report and
    merge count the two, and name the six."""
    run = tmp_path / "run"
    play(data, run, capsys, "--scenarios", "ROD")
    first = read_results(run / "results.jsonl")[0]
    append(run, [{**first, "sample_id": i} for i in range(900, 906)])
    loaded = load_run(run)
    assert len(loaded.by_scenario["ROD"]) == 2 and len(loaded.rejected) == 6
    assert "results.jsonl:3: ROD sample 900 was not selected by this run" in loaded.rejected[0]
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 0 and "ROD sample 905 was not selected" in " ".join(text.split())
    summary = merge_runs([run], tmp_path / "merged")
    assert summary.scenarios["ROD"].n == 2


def test_merge_names_a_shards_line_of_another_shards_slice(
    data: Path, tmp_path: Path, capsys, caplog
) -> None:
    """The oracle is right on every episode (accuracy 100 %); shard 1's ROD sample 1, pasted
    into shard 0 as a wrong answer, would have been merged in its place (50 %)."""
    shards = [tmp_path / "s0", tmp_path / "s1"]
    for index, run in enumerate(shards):
        play(data, run, capsys, "--scenarios", "ROD", "--shard", f"{index}/2")
    assert selection(shards[0])["scenarios"]["ROD"]["ids"] == "0"
    assert selection(shards[0])["shard"] == [0, 2]
    other = read_results(shards[1] / "results.jsonl")[0]
    assert other["sample_id"] == 1 and other["correct"] is True
    append(shards[0], [flipped(other)])
    summary = merge_runs(shards, tmp_path / "merged")
    assert (summary.scenarios["ROD"].n, summary.scenarios["ROD"].accuracy) == (2, 100.0)
    assert "ROD sample 1 was not selected by this run" in caplog.text
    assert selection(tmp_path / "merged") == {
        "scenarios": {"ROD": {"available": 2, "selected": 2, "ids": "0-1"}},
        "shard": None,
        "synthetic": False,
    }
    assert len(load_run(tmp_path / "merged").lines) == 2


def test_a_merge_into_a_folder_with_a_run_json_records_the_shards_selection(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A folder holding run.json but no results (its results moved out as the error told,
    a merge killed between run.json and its results, an `eval --limit 1` emptied): the merge
    kept that run.json's selection of one sample, printed n 2 and every reader counted 1."""
    merged = tmp_path / "merged"
    play(data, merged, capsys, "--scenarios", "ROD", "--limit", "1")
    (merged / "results.jsonl").unlink()
    (merged / "summary.json").unlink()
    shards = [tmp_path / "s0", tmp_path / "s1"]
    for index, run in enumerate(shards):
        play(data, run, capsys, "--scenarios", "ROD", "--shard", f"{index}/2")
    summary = merge_runs(shards, merged)
    assert summary.scenarios["ROD"].n == 2
    assert selection(merged)["scenarios"]["ROD"]["ids"] == "0-1"
    assert len(load_run(merged).lines) == 2


def test_a_run_that_scored_fewer_episodes_than_it_selected_says_so_wherever_shown(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A run killed midway: its table read like a whole run's (an average of the scenarios it
    reached), with no word that most of its selection was never played."""
    run = tmp_path / "run"
    play(data, run, capsys, "--scenarios", "ROD,QD")
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    kept = [x for x in lines if json.loads(x)["scenario"] == "ROD"][:1]
    (run / "results.jsonl").write_text("".join(kept))  # as a kill after the first episode
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "rep")], capsys)
    said = "1 of the 4 episodes it selected hold a score (ROD 1 of 2; QD 0 of 2)"
    assert code == 0 and f"{run}: {said}" in " ".join(text.split())
    top = (tmp_path / "rep" / "report.md").read_text().split("## Warnings\n")[1]
    assert said in top.split("\n## ")[0]


def without_selection(run: Path) -> None:
    """run.json as versions before the selection was recorded wrote it."""
    config = json.loads((run / "run.json").read_text())
    del config["selection"]
    (run / "run.json").write_text(json.dumps(config, indent=2))
    (run / ".finished.json").unlink(missing_ok=True)


def test_a_run_json_without_selection_reads_as_before_and_a_rerun_keeps_its_lines(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    play(data, run, capsys, "--scenarios", "ROD")
    without_selection(run)
    first = read_results(run / "results.jsonl")[0]
    append(run, [{**first, "sample_id": 900}])
    assert len(load_run(run).lines) == 3  # nothing to tell it by, as before
    (run / "results.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in read_results(run / "results.jsonl")[:2])
    )
    play(data, run, capsys, "--scenarios", "VSOD")  # the rerun records the ROD lines too
    assert selection(run)["scenarios"] == {
        "ROD": {"available": None, "selected": 2, "ids": "0-1"},
        "VSOD": {"available": 2, "selected": 2, "ids": "6,9"},
    }
    assert len(load_run(run).lines) == 4 and not load_run(run).rejected


def test_a_damaged_selection_is_named(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    play(data, run, capsys, "--scenarios", "ROD")
    config = json.loads((run / "run.json").read_text())
    config["selection"]["scenarios"]["ROD"]["ids"] = "0-x"
    (run / "run.json").write_text(json.dumps(config))
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 1 and "Traceback" not in text
    assert "run.json is damaged: its selection cannot be read ('0-x' is not" in text


def test_a_selection_of_more_ids_than_the_data_offered_is_named(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A selection that contradicts itself (5 ids of 4 available: sample 900 added by hand,
    with its line pasted in) was trusted by report and push, which counted the pasted line
    (ROD n 5 of 4) where eval's resume, asking the data, refused it: named as damaged now,
    by the one parser every reader uses."""
    run = tmp_path / "run"
    play(data, run, capsys, "--scenarios", "ROD")
    config = json.loads((run / "run.json").read_text())
    rod = config["selection"]["scenarios"]["ROD"]
    available = rod["available"]
    ids = sorted(parse_id_ranges(rod["ids"]))
    rod.update(selected=len(ids) + 1, ids=id_ranges([*ids, 900]))
    (run / "run.json").write_text(json.dumps(config))
    append(run, [{**read_results(run / "results.jsonl")[0], "sample_id": 900}])
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 1 and "Traceback" not in text
    said = f"ROD: {len(ids) + 1} ids selected of {available} available"
    assert said in " ".join(text.split()), text


def test_eval_refuses_to_resume_over_a_line_its_selection_never_chose(
    data: Path, tmp_path: Path, capsys
) -> None:
    """ROD sample 1 is in the data, but the run chose only sample 0 (--limit 1): a line of
    it pasted in would be counted by eval's table (n 2) and left out by report (n 1)."""
    run = tmp_path / "run"
    play(data, run, capsys, "--scenarios", "ROD", "--limit", "1")
    first = read_results(run / "results.jsonl")[0]
    append(run, [{**first, "sample_id": 1}])
    (run / ".finished.json").unlink(missing_ok=True)
    code, text = run_cli(
        eval_args(data, run, "--no-report", "--scenarios", "ROD", "--limit", "1"), capsys
    )
    assert code == 1 and "Traceback" not in text
    assert "results.jsonl:2: ROD sample 1 was not selected by this run" in " ".join(text.split())
    assert [x["sample_id"] for x in load_run(run).lines] == [0]
