"""`report` checks image files as `eval` does (issue 29, item 7): a FIFO (or device, folder)
in an image's place is refused as not a file where images are opened, so the report says the
view is missing instead of waiting forever for a writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from proactivebench.core.errors import ImageError
from proactivebench.data.images import open_image_file
from proactivebench.data.synth import generate
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model


def test_an_image_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "0.png"
    os.mkfifo(fifo)
    with pytest.raises(ImageError, match=r"ROD/0\.png is not a file"):
        open_image_file(fifo, "ROD/0.png", None)
    with pytest.raises(ImageError, match="is not a file"):
        open_image_file(tmp_path, "a folder", None)


def test_report_shows_fifo_images_as_missing_and_ends(tmp_path: Path) -> None:
    data, run = tmp_path / "data", tmp_path / "run"
    generate(data, per_scenario=1, seed=3)
    evaluate(data, load_model("baseline:proactive"), run)
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    (rod,) = [line for line in lines if line["scenario"] == "ROD"]
    assert all(turn["crop"] is None for turn in rod["trace"])
    swapped = sorted({turn["image"] for turn in rod["trace"]})  # one view each
    for name in swapped:  # after eval checked them: as if swapped in since
        (data / name).unlink()
        os.mkfifo(data / name)
    command = [sys.executable, "-m", "proactivebench", "report", str(run), "--no-thumb-cache"]
    # The timeout only turns the hang this guards against into a failure; nothing is timed.
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    said = done.stdout + done.stderr
    assert f"{len(swapped)} episode image(s) could not be read; shown as missing" in said, said
    assert (run / "report" / "report.html").is_file()


@pytest.mark.parametrize(("name", "command"), [("results.jsonl", "eval"), ("run.json", "report")])
def test_a_fifo_in_place_of_a_run_file_is_named_not_waited_on(
    tmp_path: Path, name: str, command: str
) -> None:
    data, run = tmp_path / "data", tmp_path / "run"
    generate(data, per_scenario=1, seed=3)
    evaluate(data, load_model("baseline:oracle"), run)
    (run / name).unlink()
    os.mkfifo(run / name)
    args = {
        "eval": ["eval", "--data", str(data), "--model", "baseline:oracle", "--out", str(run)],
        "report": ["report", str(run), "--no-thumb-cache"],
    }[command]
    # The timeout only turns the hang this guards against into a failure; nothing is timed.
    done = subprocess.run(
        [sys.executable, "-m", "proactivebench", *args], capture_output=True, text=True, timeout=300
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in said, said
    assert str(run / name) in said and "not a regular file" in said, said


@pytest.mark.parametrize(
    ("command", "kind"), [("validate", "fifo"), ("eval", "fifo"), ("eval", "broken link")]
)
def test_a_fifo_in_place_of_a_scenario_file_is_named_not_waited_on(
    tmp_path: Path, command: str, kind: str
) -> None:
    """A FIFO as a data set's `*_preprocessed.jsonl` is a data problem named with its path: not
    a scenario left out unsaid, nor a read that waits for a writer (the records are read
    through `paths.open_to_read`, in case one is swapped in after that look)."""
    data = tmp_path / "data"
    generate(data, per_scenario=1, seed=3)
    records = data / "QuickDraw_preprocessed.jsonl"
    records.unlink()
    if kind == "fifo":
        os.mkfifo(records)
    else:
        records.symlink_to(tmp_path / "nowhere")
    args = {
        "validate": ["data", "validate", str(data)],
        "eval": [
            "eval",
            "--data",
            str(data),
            "--model",
            "baseline:oracle",
            "--out",
            str(tmp_path / "run"),
        ],
    }[command]
    # The timeout only turns the hang this guards against into a failure; nothing is timed.
    done = subprocess.run(
        [sys.executable, "-m", "proactivebench", *args], capture_output=True, text=True, timeout=300
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in said, said
    assert f"{records}: not a regular file (a FIFO, device, folder or broken link)" in said, said
