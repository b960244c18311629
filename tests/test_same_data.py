"""What data a run played (run.json's `data_records`) and the one rule that says whether two
runs played the same data (`datarecords.other_data`): a resume on other records is refused,
a paired comparison never pairs other samples under the same ids, and a moved copy of the
data is the same data (issue 45, round-3 tryout findings 1-3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clirun import run_cli
from proactivebench.data.sample_filter import record_file_digest
from proactivebench.data.synth import generate
from proactivebench.jobs.filtering import compute_filter
from proactivebench.run.datarecords import DATA_RECORDS
from proactivebench.run.rundir import FINISHED, RESULTS, RUN_CONFIG, _run_files


def _eval(data: Path, out: Path, model: str, capsys, *extra: str) -> tuple[int, str]:
    args = ["eval", "--data", str(data), "--model", model, "--out", str(out)]
    return run_cli([*args, "--scenarios", "ROD", "--no-report", "--no-cache", *extra], capsys)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two generated sets of one size: the same sample ids, other samples."""
    root = tmp_path_factory.mktemp("sets")
    generate(root / "data", per_scenario=4, seed=0)
    generate(root / "data2", per_scenario=4, seed=7)
    return root / "data", root / "data2"


def test_run_json_records_the_digest_of_each_record_file_played(
    datasets: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    data, _ = datasets
    assert _eval(data, tmp_path / "r", "baseline:random", capsys)[0] == 0
    config = json.loads((tmp_path / "r" / RUN_CONFIG).read_text())
    assert config[DATA_RECORDS] == {"ROD": record_file_digest(_rod_file(data))}


def _rod_file(data: Path) -> Path:
    from proactivebench.data.directory import scenario_file

    return scenario_file(data, "ROD")


def test_vs_refuses_to_pair_runs_played_on_other_data(
    datasets: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    data, data2 = datasets
    assert _eval(data, tmp_path / "random", "baseline:random", capsys)[0] == 0
    assert _eval(data2, tmp_path / "pro", "baseline:proactive", capsys)[0] == 0
    args = ["report", str(tmp_path / "pro"), "--vs", str(tmp_path / "random")]
    code, text = run_cli([*args, "--out", str(tmp_path / "vs")], capsys)
    assert code != 0 and "Traceback" not in text
    assert "was played on other data (the ROD records differ)" in text
    assert not (tmp_path / "vs").exists()
    # A moved copy of the data is the same data: paired (its path differs, its records not).
    moved = Path(shutil.copytree(data, tmp_path / "moved"))
    assert _eval(moved, tmp_path / "pro-moved", "baseline:proactive", capsys)[0] == 0
    args = ["report", str(tmp_path / "pro-moved"), "--vs", str(tmp_path / "random")]
    code, text = run_cli([*args, "--out", str(tmp_path / "vs2")], capsys)
    assert code == 0 and "p=" in text


def test_runs_without_digests_are_told_by_their_data_folder(
    datasets: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    """Runs recorded before run.json held digests: `data_dir` decides, as before."""
    data, data2 = datasets
    runs = []
    for name, where, model in (("a", data, "baseline:random"), ("b", data2, "baseline:oracle")):
        assert _eval(where, tmp_path / name, model, capsys)[0] == 0
        path = tmp_path / name / RUN_CONFIG
        config = json.loads(path.read_text())
        del config[DATA_RECORDS]
        path.write_text(json.dumps(config))
        runs.append(tmp_path / name)
    code, text = run_cli(["report", str(runs[1]), "--vs", str(runs[0])], capsys)
    assert code != 0 and "was played on other data (data " in text


def test_runs_that_record_no_data_are_told_by_their_samples_answers(
    datasets: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    """Two imported runs whose logs name no data (run.json: data null, no digests) were taken
    for runs of the same data (null = null) and paired, sample 0 of one set beside sample 0 of
    another; one beside a run of its own data was refused as "null vs PATH". Their lines say:
    a sample both played with another answer is another sample."""
    data, data2 = datasets
    for name, where in (("a", data), ("b", data2), ("c", data)):
        assert _eval(where, tmp_path / name, "baseline:random", capsys)[0] == 0
    for name in ("a", "b"):  # as an importer writes them: no data at all
        path = tmp_path / name / RUN_CONFIG
        config = json.loads(path.read_text())
        del config[DATA_RECORDS]
        config["data_dir"] = None
        path.write_text(json.dumps(config))
    code, text = run_cli(["report", str(tmp_path / "b"), "--vs", str(tmp_path / "a")], capsys)
    assert code != 0 and "was played on other data (" in text
    assert "sample(s) both played have another answer (the first: ROD sample" in text
    args = ["train", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--holdout", "ROD"]
    code, text = run_cli(args, capsys)
    assert code != 0 and "have another answer" in text
    args = ["data", "filter", str(tmp_path / "a"), str(tmp_path / "b")]
    code, text = run_cli([*args, "--out", str(tmp_path / "f.json")], capsys)
    assert code != 0 and "have another answer" in text  # a pool of one data set
    # Beside a run of the same data that records it: paired, its samples' answers agree.
    args = ["report", str(tmp_path / "a"), "--vs", str(tmp_path / "c")]
    code, text = run_cli([*args, "--out", str(tmp_path / "vs")], capsys)
    assert code == 0 and "p=" in text, text


def test_data_filter_takes_runs_on_a_moved_copy_of_the_data(
    datasets: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    data, data2 = datasets
    moved = Path(shutil.copytree(data, tmp_path / "moved"))
    assert _eval(data, tmp_path / "a", "baseline:random", capsys)[0] == 0
    assert _eval(moved, tmp_path / "b", "baseline:oracle", capsys)[0] == 0
    assert len(compute_filter([tmp_path / "a", tmp_path / "b"], 0.5).runs) == 2
    assert _eval(data2, tmp_path / "c", "baseline:proactive", capsys)[0] == 0
    args = ["data", "filter", str(tmp_path / "a"), str(tmp_path / "c")]
    code, text = run_cli([*args, "--out", str(tmp_path / "f.json")], capsys)
    assert code != 0 and "c was played on other data than" in text
    assert "(the ROD records differ)" in text


def test_a_resume_on_changed_records_is_refused(tmp_path: Path, capsys) -> None:
    data, out = tmp_path / "data3", tmp_path / "mix"
    generate(data, per_scenario=4, seed=0)
    assert _eval(data, out, "baseline:random", capsys, "--limit", "2")[0] == 0
    before = (out / RESULTS).read_bytes()
    shutil.rmtree(data)
    generate(data, per_scenario=4, seed=7)
    code, text = _eval(data, out, "baseline:random", capsys)
    assert code != 0 and "Traceback" not in text
    assert f"cannot resume {out}: the records it played changed since" in text
    assert "ROD" in text and "another --out" in text
    assert (out / RESULTS).read_bytes() == before


def test_a_run_without_digests_resumes_and_records_them(tmp_path: Path, capsys) -> None:
    """An older run.json (no digests, no selection) resumes as before; a resume that plays
    nothing records both (finding 3), and results lines are not touched."""
    data, out = tmp_path / "data", tmp_path / "old"
    generate(data, per_scenario=4, seed=0)
    assert _eval(data, out, "baseline:random", capsys, "--limit", "2")[0] == 0
    path = out / RUN_CONFIG
    config = json.loads(path.read_text())
    del config[DATA_RECORDS], config["selection"]
    path.write_text(json.dumps(config))
    # As an older version left it: its note of a finished run holds for the files as they are.
    note = json.loads((out / FINISHED).read_text())
    (out / FINISHED).write_text(json.dumps({**note, "files": _run_files(out)}))
    lines = (out / RESULTS).read_bytes()
    assert _eval(data, out, "baseline:random", capsys, "--limit", "2")[0] == 0
    config = json.loads(path.read_text())
    assert config[DATA_RECORDS] == {"ROD": record_file_digest(_rod_file(data))}
    assert config["selection"]["scenarios"]["ROD"]["ids"] == "0-1"
    assert (out / RESULTS).read_bytes() == lines
    # Recorded already: a rerun that plays nothing writes nothing (run.json is written whole,
    # by a rename: another inode), whether its note of a finished run answers or not.
    stamp = (path.stat().st_ino, path.stat().st_mtime_ns)
    assert _eval(data, out, "baseline:random", capsys, "--limit", "2")[0] == 0
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == stamp
    (out / FINISHED).unlink()
    assert _eval(data, out, "baseline:random", capsys, "--limit", "2")[0] == 0
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == stamp


def test_a_suites_report_leaves_the_comparison_out_with_a_warning() -> None:
    """In a suite's report (no refusal: its other experiments are reported) an experiment on
    other data than the plain run gets no Δ, and a warning says why."""
    from types import SimpleNamespace

    from proactivebench.report.build import _on_same_data

    def run(name: str, digest: str) -> SimpleNamespace:
        return SimpleNamespace(run_dir=Path(name), config={DATA_RECORDS: {"ROD": digest}}, lines=[])

    base, same, other = run("plain", "sha256:a"), run("hint", "sha256:a"), run("icl", "sha256:b")
    outcome = SimpleNamespace(warnings=[])
    kept = _on_same_data([same, other], base, outcome, refuse=False)  # type: ignore[arg-type]
    assert kept == [same]
    assert outcome.warnings == [
        "--vs plain: icl was played on other data (the ROD records differ), so its samples are "
        "not the reference's under the same ids: not paired"
    ]


def test_merge_refuses_shards_played_on_other_records(tmp_path: Path, capsys) -> None:
    """Shards of one data folder generated again between them: one merged run would hold two
    data sets' samples under one set of ids."""
    data = tmp_path / "data"
    generate(data, per_scenario=4, seed=0)
    assert _eval(data, tmp_path / "s0", "baseline:random", capsys, "--shard", "0/2")[0] == 0
    shutil.rmtree(data)
    generate(data, per_scenario=4, seed=7)
    assert _eval(data, tmp_path / "s1", "baseline:random", capsys, "--shard", "1/2")[0] == 0
    args = ["merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "m")]
    code, text = run_cli(args, capsys)
    assert code != 0 and "Traceback" not in text
    assert "s1 was played on other data than" in text and "(the ROD records differ)" in text
    assert not (tmp_path / "m" / RESULTS).exists()


def test_vs_a_reference_of_other_episodes_says_what_each_delta_is_over(
    datasets: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    """A partial reference (`--limit 1`) beside a whole run: the Δ accuracy and ps are over
    the pairs, the Δ action distribution over each run's own episodes, and nothing said so."""
    data, _ = datasets
    assert _eval(data, tmp_path / "one", "baseline:random", capsys, "--limit", "1")[0] == 0
    assert _eval(data, tmp_path / "all", "baseline:random", capsys, "--hint")[0] == 0
    args = ["report", str(tmp_path / "all"), "--vs", str(tmp_path / "one")]
    code, text = run_cli([*args, "--out", str(tmp_path / "vs")], capsys)
    told = " ".join(text.split())
    said = "scored 4 episodes and the reference (baseline:random (--vs)) 1 in the same 1 "
    assert code == 0 and said + "scenario(s), 1 of them both" in told
    report = json.loads((tmp_path / "vs" / "report.json").read_text())
    assert any("of them both" in w for w in report["warnings"])
    # The same episodes: nothing to say.
    assert (
        _eval(data, tmp_path / "same", "baseline:random", capsys, "--limit", "1", "--hint")[0] == 0
    )
    args = ["report", str(tmp_path / "same"), "--vs", str(tmp_path / "one")]
    code, text = run_cli([*args, "--out", str(tmp_path / "vs2")], capsys)
    assert code == 0 and "of them both" not in text
