"""The test filter of the paper's §3.3 (`data filter`) and playing a filter (`eval --filter`).

A pool of hand-written runs whose first turns are chosen so that each sample is answered right
at turn 1 by a known number of runs; the ids kept for each threshold are counted by hand below.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from clirun import eval_args, run_cli
from proactivebench.benchmark.protocol import filter_ids, official_filter_ids
from proactivebench.core.errors import (
    DataError,
    NothingToDoError,
    RunMismatchError,
    SettingsError,
)
from proactivebench.data.directory import load_dataset
from proactivebench.data.sample_filter import read_sample_filter
from proactivebench.data.synth import generate
from proactivebench.jobs.evaluate import evaluate
from proactivebench.jobs.filtering import compute_filter, models_needed, write_filter
from proactivebench.models import load_model
from proactivebench.run.settings import EvalSettings

PLAIN = EvalSettings().identity()
DATA = "/data/pool"

#: How many of the four runs (A, B, C, D) answer each sample right at the first turn, and
#: which: sample -> the runs that do.
RIGHT_FIRST: dict[tuple[str, int], str] = {
    ("QD", 0): "",
    ("QD", 1): "A",
    ("QD", 2): "AB",
    ("QD", 3): "ABC",
    ("QD", 4): "ABCD",
    ("ROD", 7): "D",
    ("ROD", 8): "CD",
}


def _line(scenario: str, sample_id: int, verdicts: list[str], settings: dict) -> dict[str, Any]:
    turns = [{"turn": n, "answer": "x", "verdict": v} for n, v in enumerate(verdicts, 1)]
    return {
        "scenario": scenario,
        "sample_id": sample_id,
        "correct": verdicts[-1] == "correct",
        "num_turns": len(verdicts),
        "proactive_suggestions": verdicts.count("proactive"),
        "trace": turns,
        "end_reason": verdicts[-1],
        "correct_category": "cat",  # what every writer records (the action distribution reads it)
        "settings": settings,
    }


def write_run(
    run_dir: Path,
    model: str,
    lines: list[dict[str, Any]] | None = None,
    *,
    settings: dict | None = None,
    data_dir: str = DATA,
) -> Path:
    """A run directory by hand: its run.json and one results line per episode. Without
    `lines`: the pool's first turns for run `model` (a right first turn ends the episode; a
    wrong one is a proactive step, then the category: right, but not at the first turn)."""
    settings = PLAIN if settings is None else settings
    if lines is None:
        lines = [
            _line(s, i, ["correct"] if model in runs else ["proactive", "correct"], settings)
            for (s, i), runs in RIGHT_FIRST.items()
        ]
    run_dir.mkdir(parents=True)
    config = {"data_dir": data_dir, "model": model, "settings": settings}
    (run_dir / "run.json").write_text(json.dumps(config), encoding="utf-8")
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (run_dir / "results.jsonl").write_text(text, encoding="utf-8")
    return run_dir


@pytest.fixture
def pool(tmp_path: Path) -> list[Path]:
    return [write_run(tmp_path / f"run-{m}", m) for m in "ABCD"]


def test_the_number_of_models_needed_is_the_fraction_rounded_up() -> None:
    assert models_needed(0.25, 22) == 6  # the paper: 5.5 -> 6 of 22
    assert models_needed(0.25, 4) == 1
    assert models_needed(0.28, 25) == 7  # not 8: 0.28 * 25 is 7.000000000000001 in floats
    assert models_needed(0.07, 100) == 7
    assert models_needed(1, 7) == 7
    for bad in (0, -0.1, 1.5, float("nan"), True):
        with pytest.raises(SettingsError, match="fraction in"):
            models_needed(bad, 4)


@pytest.mark.parametrize(
    ("at_least", "needed", "kept_qd", "kept_rod"),
    [
        # 1 of 4: every sample any run answered right at turn 1 goes.
        (0.25, 1, [0], []),
        # 0.3 * 4 = 1.2 -> 2: QD 1 and ROD 7 (one run each) stay.
        (0.3, 2, [0, 1], [7]),
        (0.5, 2, [0, 1], [7]),
        # 0.6 * 4 = 2.4 -> 3: only QD 3 and 4 go.
        (0.6, 3, [0, 1, 2], [7, 8]),
        # every run: only QD 4 goes.
        (1.0, 4, [0, 1, 2, 3], [7, 8]),
    ],
)
def test_the_kept_ids_are_those_fewer_runs_answered_right_at_the_first_turn(
    pool: list[Path], tmp_path: Path, at_least: float, needed: int, kept_qd: list, kept_rod: list
) -> None:
    out = tmp_path / "filter.json"
    computed = write_filter(pool, out, at_least)
    assert computed.needed == needed
    document = json.loads(out.read_text(encoding="utf-8"))
    # The official list's reader reads it, keyed by data file stem as the official list is.
    assert filter_ids(document) == {
        "Realistic-Occlusion-Dataset": frozenset(kept_rod),
        "QuickDraw": frozenset(kept_qd),
    }
    assert document["ids"]["QuickDraw"] == kept_qd  # sorted
    assert read_sample_filter(out).ids["QuickDraw"] == frozenset(kept_qd)
    provenance = document["provenance"]
    assert provenance["counts"] == {
        "ROD": {"before": 2, "removed": 2 - len(kept_rod), "kept": len(kept_rod)},
        "QD": {"before": 5, "removed": 5 - len(kept_qd), "kept": len(kept_qd)},
    }
    assert [r["model"] for r in provenance["runs"]] == ["A", "B", "C", "D"]
    assert provenance["models_needed"] == needed and provenance["data_dir"] == DATA


def test_the_same_runs_write_the_same_bytes(pool: list[Path], tmp_path: Path) -> None:
    write_filter(pool, tmp_path / "one.json")
    write_filter(pool, tmp_path / "two.json")
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()


def test_the_official_list_still_reads_through_the_shared_reader() -> None:
    assert 0 in official_filter_ids("Realistic-Occlusion-Dataset")
    assert official_filter_ids("no such stem") == frozenset()


def test_a_run_of_other_settings_is_refused_by_name(pool: list[Path], tmp_path: Path) -> None:
    hinted = write_run(tmp_path / "hinted", "E", settings={**PLAIN, "hint": True})
    with pytest.raises(RunMismatchError, match=r"hinted is not a plain MCQA run \(hint: true\)"):
        compute_filter([*pool, hinted])
    history = write_run(tmp_path / "hist", "F", settings={**PLAIN, "history": True, "icl": 2})
    with pytest.raises(RunMismatchError, match=r"hist is not a plain MCQA run.*history.*icl: 2"):
        compute_filter([*pool, history])
    oeg = write_run(tmp_path / "oeg", "G", settings={**PLAIN, "mode": "oeg"})
    with pytest.raises(RunMismatchError, match=r"oeg is not a plain MCQA run \(mode: \"oeg\"\)"):
        compute_filter([*pool, oeg])
    # A model's own seed and decoding are its own: counted with the others, a decoding other
    # than the protocol's said (its first turns are not those the paper's filter counted).
    own = {**PLAIN, "seed": 3, "decoding": {"max_tokens": 8, "temperature": 0.7}}
    computed = compute_filter([*pool, write_run(tmp_path / "own", "H", settings=own)])
    assert len(computed.runs) == 5
    (warning,) = computed.warnings
    assert warning.startswith(f"{tmp_path / 'own'} was decoded otherwise than the protocol (")
    assert compute_filter(pool).warnings == []


def test_a_run_on_other_data_is_refused_by_name(pool: list[Path], tmp_path: Path) -> None:
    other = write_run(tmp_path / "elsewhere", "E", data_dir="/data/other")
    with pytest.raises(RunMismatchError, match=r"elsewhere was played on other data.*/data/other"):
        compute_filter([*pool, other])


def test_runs_of_different_samples_are_refused_with_what_each_lacks(
    pool: list[Path], tmp_path: Path
) -> None:
    lines = [_line(s, i, ["wrong"], PLAIN) for (s, i) in RIGHT_FIRST if (s, i) != ("QD", 4)]
    errored = {**_line("QD", 4, ["wrong"], PLAIN), "error": "timeout", "correct": None}
    short = write_run(tmp_path / "short", "E", [*lines, errored])
    with pytest.raises(
        RunMismatchError,
        match=r"different samples: .*short has no finished first turn for 1 of the 7 samples "
        r"\(QD 4\)",
    ):
        compute_filter([*pool, short])


def test_a_model_counts_once(pool: list[Path], tmp_path: Path) -> None:
    again = shutil.copytree(pool[0], tmp_path / "again")
    with pytest.raises(RunMismatchError, match=r"again and .*run-A are runs of one model \(A\)"):
        compute_filter([*pool, again])


def test_nothing_written_when_a_run_is_refused(
    pool: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = write_run(tmp_path / "elsewhere", "E", data_dir="/data/other")
    target = tmp_path / "f.json"
    code, output = run_cli(
        ["data", "filter", *map(str, pool), str(other), "--out", str(target)], capsys
    )
    assert code != 0 and "elsewhere was played on other data" in output
    assert "Traceback" not in output and not target.exists()
    with pytest.raises(NothingToDoError):
        compute_filter([write_run(tmp_path / "empty", "E", [])])


def test_out_is_written_only_over_an_earlier_filter_file(
    pool: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out` naming a run's results.jsonl (a slip of the shell's completion) must not turn
    the run's results into a filter: refused, the file left byte for byte; a filter file
    written before is written again."""
    results = pool[0] / "results.jsonl"
    before = results.read_bytes()
    args = ["data", "filter", *map(str, pool), "--out"]
    code, output = run_cli([*args, str(results)], capsys)
    assert code == 1 and "Traceback" not in output
    assert f"{results}: not a filter file: not JSON" in output
    assert "written only over an earlier filter file; name a new file" in " ".join(output.split())
    assert results.read_bytes() == before
    target = tmp_path / "f.json"
    for _ in range(2):
        code, output = run_cli([*args, str(target)], capsys)
        assert code == 0, output
    write_filter(pool, tmp_path / "g.json")
    assert target.read_bytes() == (tmp_path / "g.json").read_bytes()


# ----- eval --filter ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our generator's data: four samples of every scenario, never filtered by the official
    list."""
    root = tmp_path_factory.mktemp("synth-filter")
    generate(root, per_scenario=4, seed=5, split="test")
    return root


def _played(run_dir: Path) -> set[tuple[str, int]]:
    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return {(json.loads(x)["scenario"], json.loads(x)["sample_id"]) for x in lines}


def _filter_file(path: Path, ids: dict[str, list[int]], note: str = "") -> Path:
    path.write_text(json.dumps({"_source": note, "ids": ids}), encoding="utf-8")
    return path


def test_eval_filter_plays_exactly_the_kept_ids_of_synthetic_data(
    synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(load_dataset(synth, ["QD"]).records["QD"]) == 4  # no official filter here
    chosen = _filter_file(tmp_path / "f.json", {"QuickDraw": [0, 3], "ImageNet-C": [2]})
    out = tmp_path / "run"
    code, output = run_cli(
        eval_args(synth, out, "--scenarios", "QD,IN-C", "--filter", str(chosen)), capsys
    )
    assert code == 0, output
    assert _played(out) == {("QD", 0), ("QD", 3), ("IN-C", 2)}


def test_a_filter_computed_from_played_runs_is_played(
    synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole way: baselines played on fresh synthetic data, their filter, a run of it."""
    runs = []
    for model in ("oracle", "abstain", "random", "reactive"):
        out = tmp_path / model
        args = eval_args(synth, out, "--scenarios", "QD,COCO")
        args[args.index("baseline:oracle")] = f"baseline:{model}"
        assert run_cli(args, capsys)[0] == 0
        runs.append(out)
    target = tmp_path / "pool.json"
    code, output = run_cli(
        ["data", "filter", *map(str, runs), "--out", str(target), "--at-least", "0.5"], capsys
    )
    assert code == 0, output
    assert "of 4 runs" in output and f"wrote {target}" in output.replace("\n", "")
    # Counted from the lines themselves: removed when 2 of the 4 runs were right at turn 1.
    right: dict[tuple[str, int], int] = {}
    for run in runs:
        for raw in (run / "results.jsonl").read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            key = (line["scenario"], line["sample_id"])
            right[key] = right.get(key, 0) + (line["trace"][0]["verdict"] == "correct")
    kept = {key for key, n in right.items() if n < 2}
    assert kept != set(right)  # the oracle and a lucky random removed something
    out = tmp_path / "filtered"
    filtered = eval_args(synth, out, "--scenarios", "QD,COCO", "--filter", str(target))
    assert run_cli(filtered, capsys)[0] == 0
    assert _played(out) == kept


def test_a_run_resumes_only_with_the_same_filter(
    synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _filter_file(tmp_path / "first.json", {"QuickDraw": [1, 2]})
    same_ids = _filter_file(tmp_path / "moved.json", {"QuickDraw": [2, 1]}, note="another note")
    other = _filter_file(tmp_path / "other.json", {"QuickDraw": [1]})
    out = tmp_path / "run"
    base = eval_args(synth, out, "--scenarios", "QD")
    assert run_cli([*base, "--filter", str(first)], capsys)[0] == 0
    recorded = json.loads((out / "run.json").read_text(encoding="utf-8"))["settings"]["filter"]
    assert recorded == read_sample_filter(first).digest and recorded.startswith("sha256:")
    # The same ids from another file are the same test set.
    code, output = run_cli([*base, "--filter", str(same_ids)], capsys)
    assert code == 0, output
    for refused in (["--filter", str(other)], [], ["--all-samples"]):
        code, output = run_cli([*base, *refused], capsys)
        assert code != 0 and "holds a run with other settings" in output, refused
        assert "settings.filter" in output


def test_the_default_identity_has_no_filter() -> None:
    assert "filter" not in EvalSettings().identity()
    assert "filter" not in EvalSettings(all_samples=True).identity()


def test_filter_with_all_samples_is_refused(
    synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = _filter_file(tmp_path / "f.json", {"QuickDraw": [0]})
    code, output = run_cli(
        eval_args(synth, tmp_path / "run", "--filter", str(chosen), "--all-samples"), capsys
    )
    assert code != 0 and "--filter FILE plays the samples FILE keeps" in output
    with pytest.raises(SettingsError, match="give one"):
        EvalSettings(filter=str(chosen), all_samples=True)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "filter file not found"),
        ("{not json", "not a filter file: not JSON"),
        ('{"QuickDraw": [1]}', 'expected a JSON object with "ids"'),
        ('{"ids": {"QuickDraw": [1, "2"]}}', r'"ids"\."QuickDraw" must be a list of sample ids'),
        ('{"ids": {"QuickDraw": [-1]}}', "integers >= 0"),
        (
            '{"ids": {"QuickDraw": [1]}, "provenance": {"records": ["sha256:0"]}}',
            r'"provenance"\."records" must map file stems to digests',
        ),
        # Applied on any data without a word: a provenance that is not data filter's object
        # skipped the check of the data it was computed on; an unknown key was ignored.
        ('{"ids": {"QuickDraw": [1]}, "provenance": "garbage"}', '"provenance" must be an object'),
        (
            '{"ids": {"QuickDraw": [1], "NotAScenario": [1]}}',
            '"ids" has keys that are no scenario\'s data file stem: NotAScenario \\(the stems: '
            "Realistic-Occlusion-Dataset,",
        ),
    ],
)
def test_a_bad_filter_file_is_one_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as caught:
        EvalSettings(filter=str(path))
    assert str(caught.value).startswith(str(path))
    code, output = run_cli(eval_args(tmp_path, tmp_path / "run", "--filter", str(path)), capsys)
    assert code != 0 and str(path) in output and "Traceback" not in output


def test_a_scenario_the_filter_does_not_cover_is_refused_by_name(
    synth: Path, tmp_path: Path
) -> None:
    chosen = _filter_file(tmp_path / "f.json", {"QuickDraw": [0]})
    settings = EvalSettings(filter=str(chosen))
    with pytest.raises(DataError, match=r"f.json: the filter has no ids for ROD; .*--scenarios QD"):
        load_dataset(synth, ["ROD", "QD"], sample_filter=settings.sample_filter)


def test_a_filter_of_no_scenario_played_names_its_stems(synth: Path, tmp_path: Path) -> None:
    # (A key that is no scenario's stem is refused when the file is read: the bad-file cases.)
    chosen = _filter_file(tmp_path / "f.json", {})
    settings = EvalSettings(filter=str(chosen))
    with pytest.raises(DataError, match=r"covers none of the scenarios played .*: none; ROD's"):
        load_dataset(synth, ["ROD", "QD"], sample_filter=settings.sample_filter)


def test_a_scenario_the_filter_empties_is_named(synth: Path, tmp_path: Path, caplog) -> None:
    chosen = _filter_file(tmp_path / "f.json", {"QuickDraw": [0], "ChangeIt": []})
    outcome = evaluate(
        synth,
        load_model("baseline:oracle"),
        tmp_path / "run",
        EvalSettings(filter=str(chosen), scenarios=("QD", "CIT")),
    )
    assert list(outcome.summary.scenarios) == ["QD"]
    assert "f.json keeps no sample of CIT: left out of the run" in caplog.text


def test_the_adapters_play_the_filter(synth: Path, tmp_path: Path) -> None:
    chosen = _filter_file(tmp_path / "f.json", {"QuickDraw": [1, 3]})
    inspect_task = pytest.importorskip("proactivebench.adapters.inspect_task")
    task = inspect_task.proactivebench(data=str(synth), scenarios="QD", filter=str(chosen))
    assert sorted(s.metadata["sample_id"] for s in task.dataset) == [1, 3]
    assert task.metadata["settings"]["filter"] == read_sample_filter(chosen).digest
    verifiers_env = pytest.importorskip("proactivebench.adapters.verifiers_env")
    config = verifiers_env.ProactiveTasksetConfig(
        id="proactivebench", data=str(synth), scenarios=("QD",), filter=str(chosen)
    )
    tasks = list(verifiers_env.ProactiveTaskset(config))
    assert sorted(t.data.sample_id for t in tasks) == [1, 3]


# ----- a filter and the data it is played on ----------------------------------------------------


def _pool(data: Path, root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[Path]:
    """Two baselines played on `data` (QD and COCO) into `root`, as a pool."""
    runs = []
    for model in ("oracle", "reactive"):
        out = root / model
        args = eval_args(data, out, "--scenarios", "QD,COCO", "--no-report", *extra)
        args[args.index("baseline:oracle")] = f"baseline:{model}"
        code, output = run_cli(args, capsys)
        assert code == 0, output
        runs.append(out)
    return runs


def test_eval_names_the_filter_ids_the_data_lacks(
    synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog
) -> None:
    """Ids the data does not hold (a filter of a larger set, pasted ids) are played without,
    said per scenario with the count; a scenario whose ids are all there says nothing."""
    chosen = _filter_file(
        tmp_path / "f.json", {"QuickDraw": [0, 3, 900, 901], "ImageNet-C": [1, 2]}
    )
    out = tmp_path / "run"
    code, output = run_cli(
        eval_args(synth, out, "--scenarios", "QD,IN-C", "--filter", str(chosen)), capsys
    )
    assert code == 0, output
    assert _played(out) == {("QD", 0), ("QD", 3), ("IN-C", 1), ("IN-C", 2)}
    said = caplog.text
    assert (
        f"{chosen}: 2 of the 4 QD ids it keeps are not in the data (900, 901): QD plays the 2 "
        "it holds" in said
    )
    assert "IN-C ids it keeps" not in said


def test_a_filter_of_other_data_is_refused_and_of_the_same_data_moved_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Generated sets of one size share their ids, so a filter computed on one would choose
    other samples of another, silently: refused, naming both; the same data in another folder
    (a copy, the same generator run) is the same data."""
    made_on, other = tmp_path / "made-on", tmp_path / "other"
    generate(made_on, per_scenario=4, seed=5, split="test")
    generate(other, per_scenario=4, seed=6, split="test")
    target = tmp_path / "pool.json"
    runs = _pool(made_on, tmp_path / "pool", capsys)
    code, output = run_cli(
        ["data", "filter", *map(str, runs), "--out", str(target), "--at-least", "1"], capsys
    )
    assert code == 0, output
    assert read_sample_filter(target).ids["QuickDraw"]  # the reactive baseline missed some
    assert "note:" not in output and "no run played" not in output
    refused = eval_args(other, tmp_path / "run", "--scenarios", "QD", "--filter", str(target))
    code, output = run_cli(refused, capsys)
    said = " ".join(output.split())
    assert code == 1 and "Traceback" not in output, output
    assert f"{target}: the filter was computed on other data: QD's records in {made_on}" in said
    assert f"differ from {other / 'QuickDraw_preprocessed.jsonl'}" in said
    assert not (tmp_path / "run" / "results.jsonl").exists()
    moved = shutil.copytree(made_on, tmp_path / "moved")
    kept = set(read_sample_filter(target).ids["QuickDraw"])
    out = tmp_path / "moved-run"
    code, output = run_cli(
        eval_args(moved, out, "--scenarios", "QD", "--filter", str(target)), capsys
    )
    assert code == 0 and "computed on" not in output, output
    assert _played(out) == {("QD", i) for i in kept}


def test_a_filter_without_digests_of_another_folder_is_named(
    synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog
) -> None:
    """A filter that names the data it came from but cannot be compared with it (written
    before digests were recorded) is played, with a line saying so."""
    document = {"ids": {"QuickDraw": [1]}, "provenance": {"data_dir": "/data/elsewhere"}}
    chosen = tmp_path / "old.json"
    chosen.write_text(json.dumps(document), encoding="utf-8")
    code, output = run_cli(
        eval_args(synth, tmp_path / "run", "--scenarios", "QD", "--filter", str(chosen)), capsys
    )
    assert code == 0, output
    assert f"{chosen} was computed on runs of /data/elsewhere, not of {synth}" in caplog.text


def test_data_filter_names_the_samples_no_run_played(
    synth: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog
) -> None:
    """A pool played with --limit 3 covers 3 of each scenario's 4 samples: the fourth is in
    no run, so not in the filter; said per scenario, noted in the file and by eval."""
    runs = _pool(synth, tmp_path / "pool", capsys, "--limit", "3")
    target = tmp_path / "pool.json"
    code, output = run_cli(
        ["data", "filter", *map(str, runs), "--out", str(target), "--at-least", "1"], capsys
    )
    assert code == 0, output
    said = " ".join(output.split())
    for name in ("QD", "COCO"):
        assert re.search(
            rf"{name}: 3 samples, \d removed \(.*?\), \d kept; 1 sample of the data no run "
            r"played \(e\.g\. --limit\) is left out of the filter",
            said,
        ), said
    counts = json.loads(target.read_text(encoding="utf-8"))["provenance"]["counts"]
    assert counts["QD"]["not_played"] == 1 and counts["COCO"]["not_played"] == 1
    assert read_sample_filter(target).not_played == {"QD": 1, "COCO": 1}
    code, output = run_cli(
        eval_args(synth, tmp_path / "run", "--scenarios", "QD", "--filter", str(target)), capsys
    )
    assert code == 0, output
    assert (
        f"{target}: 1 QD sample of the data it was computed on was played by no run" in caplog.text
    )
    assert "COCO sample" not in caplog.text  # not played here


def test_data_filter_counts_against_the_official_test_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On published data the pool plays the official test set: the records it leaves out are
    no run's to play, not "not played"; a pool of every record (--all-samples) is counted
    against every record."""
    data = tmp_path / "published"
    generate(data, per_scenario=4, seed=5, split="test")
    (data / "synth_manifest.json").unlink()
    path = data / "QuickDraw_preprocessed.jsonl"
    official = sorted(official_filter_ids("QuickDraw"))
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    for line, ident in zip(lines, [*official[:3], max(official) + 1], strict=True):
        line["id"] = ident  # three of the official test set, one outside it
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    for extra, played in (([], 3), (["--all-samples"], 4)):
        root = tmp_path / f"pool{len(extra)}"
        runs = []
        for model in ("oracle", "reactive"):
            args = eval_args(data, root / model, "--scenarios", "QD", "--no-report", *extra)
            args[args.index("baseline:oracle")] = f"baseline:{model}"
            assert run_cli(args, capsys)[0] == 0
            runs.append(root / model)
        computed = compute_filter(runs)
        assert computed.counts["QD"].before == played
        assert computed.not_played == {"QD": 0}
        assert "not_played" not in computed.document()["provenance"]["counts"]["QD"]
    runs = []
    for model in ("oracle", "reactive"):
        args = eval_args(data, tmp_path / "limited" / model, "--scenarios", "QD", "--limit", "2")
        args[args.index("baseline:oracle")] = f"baseline:{model}"
        assert run_cli(args, capsys)[0] == 0
        runs.append(tmp_path / "limited" / model)
    assert compute_filter(runs).not_played == {"QD": 1}  # 2 of the official 3


def test_a_path_with_a_line_feed_is_one_line_in_errors_and_the_tables_line(
    synth: Path, tmp_path: Path, capsys
) -> None:
    """Tryout: a folder named with a line feed was printed raw by `data filter`'s error (an
    error's message, at `main`) and by `report`'s "tables:" line, cutting the path in two,
    while "report:" showed it escaped. Every error's line, and that line, show it as `\\n`."""
    odd = tmp_path / "ru\nn"
    code, text = run_cli(["data", "filter", str(odd / "x"), "--out", str(tmp_path / "f")], capsys)
    assert code == 1 and "ru\\nn" in text and "ru\nn" not in text, text
    assert text.startswith("error: ") and text.count("\n") == 1, text
    code, text = run_cli([*eval_args(synth, odd / "run", "--limit", "1", "--no-report")], capsys)
    assert code == 0, text
    code, text = run_cli(["report", str(odd / "run"), "--no-thumb-cache"], capsys)
    assert code == 0 and "ru\nn" not in text, text
    assert [line for line in text.splitlines() if line.startswith("tables: ")], text
    # An error listing its items keeps a line each, each one line.
    from proactivebench.cli import _fail
    from proactivebench.core.errors import DataError, DataErrors

    with pytest.raises(SystemExit):
        _fail(DataErrors([DataError(f"{odd / 'a.json'}: bad"), DataError("b.json: bad")]))
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert text.splitlines()[1:] == [f"  {tmp_path}/ru\\nn/a.json: bad", "  b.json: bad"], text
