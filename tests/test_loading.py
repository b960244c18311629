"""Loading the official layout: filter, validation messages, paths that must stay inside."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import coco, full_dataset, rod, vsod, write_dataset
from proactivebench.core.errors import DataError, DataErrors
from proactivebench.data.directory import MANIFEST, load_dataset


def test_official_filter_and_strong_occlusions(tmp_path: Path) -> None:
    no_field = {k: v for k, v in vsod(14).items() if k != "strong_occlusions"}
    write_dataset(
        tmp_path,
        {
            # 6, 9 and 14 are official VSOD ids, 7 is not. As the reference loader does, the
            # samples marked `strong_occlusions: false` (9) are dropped; 6 is strongly occluded
            # (a rewind helps) and kept, and 14 lacks the field and is kept.
            "VSOD": [vsod(6), vsod(7), vsod(9, strong_occlusions=False), no_field],
            "ROD": [rod(0), rod(1000)],  # 1000 is not an official id
        },
    )
    data = load_dataset(tmp_path)
    assert [r.id for r in data.records["VSOD"]] == [6, 14]
    assert [r.id for r in data.records["ROD"]] == [0]
    everything = load_dataset(tmp_path, all_samples=True)
    assert [r.id for r in everything.records["VSOD"]] == [6, 7, 9, 14]
    strong = [r.strong_occlusions for r in everything.records["VSOD"]]  # type: ignore[attr-defined]
    assert strong == [True, True, False, None]
    assert list(everything.records) == ["ROD", "VSOD"]  # paper order, not file order


def test_manifest_turns_the_id_filter_off(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"ROD": [rod(1000)]})
    assert load_dataset(tmp_path).records["ROD"] == []
    (tmp_path / MANIFEST).write_text("{}")
    assert [r.id for r in load_dataset(tmp_path).records["ROD"]] == [1000]


def test_a_scenario_the_official_filter_empties_is_told_not_dropped_unsaid(
    tmp_path: Path, capsys, caplog
) -> None:
    """Data in the official layout without our manifest (made by hand, or a synthetic set
    whose synth_manifest.json was lost) gets the official test filter: a scenario whose ids
    are none of the official ones would leave the run with no word but the table's "average
    of 6". The run says so; a run of that scenario alone says why nothing is played."""
    data = write_dataset(tmp_path / "data", {"ROD": [rod(0)], "VSOD": [vsod(1000)]})
    code, text = run_cli(eval_args(data, tmp_path / "run", "--no-report"), capsys)
    assert code == 0, text
    said = [r.getMessage() for r in caplog.records if "official test filter" in r.getMessage()]
    assert said == [
        "the official test filter keeps no sample of VSOD here (none of its ids is an official "
        "test id): left out of the run; --all-samples plays every sample"
    ], said
    args = eval_args(data, tmp_path / "vsod", "--scenarios", "VSOD", "--no-report")
    code, text = run_cli(args, capsys)
    assert (
        code == 1
        and (
            "nothing to play: the official test filter keeps no sample of VSOD here (none of its "
            "ids is an official test id); --all-samples plays every sample"
        )
        in text
    ), text


def test_scenario_selection(tmp_path: Path) -> None:
    full_dataset(tmp_path)
    assert list(load_dataset(tmp_path, "coco, rod").records) == ["COCO", "ROD"]
    with pytest.raises(DataError, match="unknown scenario 'XYZ'"):
        load_dataset(tmp_path, "XYZ")


def test_a_byte_order_mark_before_the_first_record_is_dropped(tmp_path: Path) -> None:
    """A record file saved "UTF-8 with BOM" (Windows editors) loads as without it, as a
    server's answer does: the mark is no character of the first record. One anywhere else is
    still refused, with where."""
    path = tmp_path / "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    records = [json.dumps(rod(0)), json.dumps(rod(1))]
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(records).encode() + b"\n")
    assert [r.id for r in load_dataset(tmp_path, all_samples=True).records["ROD"]] == [0, 1]
    path.write_bytes(("\n".join(records) + "\n\ufeff" + json.dumps(rod(2)) + "\n").encode())
    with pytest.raises(DataErrors) as info:
        load_dataset(tmp_path, all_samples=True)
    (problem,) = info.value.problems
    assert str(problem).endswith(":3: invalid JSON: Unexpected UTF-8 BOM: column 1"), problem


def _problems(tmp_path: Path, lines: list[str]) -> list[str]:
    path = tmp_path / "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataErrors) as info:
        load_dataset(tmp_path, all_samples=True)
    return [str(p) for p in info.value.problems]


def test_every_malformed_record_is_located(tmp_path: Path) -> None:
    good = rod(0)
    missing = {k: v for k, v in rod(1).items() if k != "answer"}
    problems = _problems(
        tmp_path,
        [
            json.dumps(good),
            "{not json",
            json.dumps(missing),
            json.dumps(rod(2, num_images="four")),
            json.dumps(rod(3, first_image=99)),
            json.dumps([1, 2]),
            json.dumps(rod(0)),
            json.dumps(rod(4, image_template="../outside/{image}.png")),
            json.dumps(rod(5, image_template="/etc/{image}")),
            json.dumps(rod(6, image_template="ROD/{level}.png")),
            json.dumps(rod(7, image_template="")),
        ],
    )
    name = "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    expected = [
        (":2:", "invalid JSON: Expecting property name enclosed in double quotes: column 2"),
        (":3: field 'answer'", "missing"),
        (":4: field 'num_images'", "expected an integer"),
        (":5: field 'first_image'", "must be a frame 0..num_images-1"),
        (":6:", "expected a JSON object"),
        (":7: field 'id'", "duplicate id 0"),
        (":8: field 'image_template'", "must not leave the data dir"),
        (":9: field 'image_template'", "must be relative"),
        (":10: field 'image_template'", "unknown placeholder"),
        (":11: field 'image_template'", "must name image files, got ''"),
    ]
    assert len(problems) == len(expected)
    for problem, (where, what) in zip(problems, expected, strict=True):
        assert name + where in problem and what in problem, problem


def test_coco_fields_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "coco2014_preprocessed.jsonl"
    bad = [coco(0, direction="sideways"), coco(1, crop={"top": 1, "left": 2, "height": 3})]
    path.write_text("".join(json.dumps(o) + "\n" for o in bad))
    with pytest.raises(DataErrors) as info:
        load_dataset(tmp_path, all_samples=True)
    text = str(info.value)
    assert ":1: field 'direction'" in text and ":2: field 'crop.width': missing" in text


def test_cli_reports_malformed_data_without_traceback(tmp_path, capsys) -> None:
    data = tmp_path / "data"
    write_dataset(data, {"ROD": [rod(0)]})
    with (data / "Realistic-Occlusion-Dataset_preprocessed.jsonl").open("a") as f:
        f.write('{"id": 1, "oops": true}\n')
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code != 0
    assert (
        "Realistic-Occlusion-Dataset_preprocessed.jsonl:2: field 'image_template': missing" in text
    )
    assert "Traceback" not in text
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_cli_unknown_scenario_file_and_name(tmp_path, capsys) -> None:
    data = full_dataset(tmp_path / "data")
    code, text = run_cli(eval_args(data, tmp_path / "r1", "--scenarios", "ROD,NOPE"), capsys)
    assert code != 0 and "unknown scenario 'NOPE'" in text
    (data / "Mystery_preprocessed.jsonl").write_text("")
    code, text = run_cli(eval_args(data, tmp_path / "r2"), capsys)
    assert code != 0 and "unknown scenario file stem 'Mystery'" in text


def test_missing_image_is_reported_before_the_run(tmp_path, capsys) -> None:
    data = full_dataset(tmp_path / "data")
    (data / "ROD/1/3.png").unlink()
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code != 0
    assert "Realistic-Occlusion-Dataset_preprocessed.jsonl:2" in text
    assert "image not found: ROD/1/3.png" in text
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_link_leading_out_of_the_data_dir_is_refused(tmp_path, capsys) -> None:
    data = full_dataset(tmp_path / "data")
    secret = tmp_path / "secret.png"
    secret.write_bytes((data / "ROD/0/1.png").read_bytes())
    (data / "ROD/0/1.png").unlink()
    os.symlink(secret, data / "ROD/0/1.png")
    code, text = run_cli(eval_args(data, tmp_path / "run"), capsys)
    assert code != 0 and "leaves the data dir" in text and "ROD/0/1.png" in text


def test_unknown_model_and_missing_dir(tmp_path, capsys) -> None:
    data = full_dataset(tmp_path / "data")
    args = ["eval", "--data", str(data), "--model", "gpt:x", "--out", str(tmp_path / "r")]
    code, text = run_cli(args, capsys)
    assert code != 0 and "unknown model kind 'gpt'" in text
    code, text = run_cli(eval_args(tmp_path / "nowhere", tmp_path / "r"), capsys)
    assert code != 0 and "data directory not found" in text
    # A file given as --data is named for what it is, not as missing.
    (tmp_path / "records.jsonl").write_text("{}\n")
    code, text = run_cli(eval_args(tmp_path / "records.jsonl", tmp_path / "r"), capsys)
    assert code == 1 and "records.jsonl: not a data directory (a file, not a folder)" in text, text
    code, text = run_cli(["data", "validate", str(tmp_path / "records.jsonl")], capsys)
    assert code == 1 and "records.jsonl: not a data directory (a file, not a folder)" in text, text


def test_real_process_exit_code_and_no_traceback(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_dataset(data, {"ROD": [rod(0)]})
    (data / "Realistic-Occlusion-Dataset_preprocessed.jsonl").write_text("[[[\n")
    proc = subprocess.run(
        [sys.executable, "-m", "proactivebench", *eval_args(data, tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and ":1: invalid JSON" in proc.stderr


def test_coco_reference_image_may_be_anything(tmp_path: Path) -> None:
    write_dataset(tmp_path, {"COCO": [coco(0, reference_image=None)], "ROD": [rod(0)]})
    assert load_dataset(tmp_path).records["COCO"][0].id == 0
    path = tmp_path / "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    path.write_text(json.dumps(rod(0, reference_image=None)) + "\n")
    with pytest.raises(DataErrors, match="field 'reference_image': expected an integer"):
        load_dataset(tmp_path)
