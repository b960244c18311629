"""`proactivebench list`: each section against the one place that declares it (the scenario
registry, `models.SPEC_KINDS` and `BASELINES`, `suite.paper_suite()`, the package's metadata),
the counts of a data directory, and the JSON's shape."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import as_terminal, run_cli, shown_tokens
from proactivebench.benchmark.protocol import official_filter_ids
from proactivebench.benchmark.registry import scenario, scenario_names
from proactivebench.cli.output import out
from proactivebench.core.errors import ModelSpecError
from proactivebench.data.directory import MANIFEST
from proactivebench.data.synth import generate
from proactivebench.jobs import catalog as catalog_module
from proactivebench.jobs.catalog import catalog, extra_entries
from proactivebench.jobs.suite import paper_suite
from proactivebench.models import SPEC_KINDS, load_model
from proactivebench.models.baselines import BASELINES


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, text = run_cli(["list", "--json", *args], capsys)
    assert code == 0, text
    return json.loads(text)


def test_the_json_has_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    shown = listed(capsys)
    assert set(shown) == {
        "scenarios",
        "baselines",
        "model_kinds",
        "experiments",
        "extras",
        "data",
        "synthetic",
    }
    assert shown["data"] is None and shown["synthetic"] is None
    assert set(shown["scenarios"][0]) == {
        "short",
        "stem",
        "file",
        "in_paper",
        "records",
        "official",
    }
    assert set(shown["extras"][0]) == {"name", "installed", "missing"}


def test_scenarios_are_the_registrys(capsys: pytest.CaptureFixture[str]) -> None:
    shown = listed(capsys)["scenarios"]
    assert [(s["short"], s["stem"]) for s in shown] == [
        (s, scenario(s).strings.stem) for s in scenario_names()
    ]
    # By hand: the paper's seven, in its order, and two of their files.
    assert [s["short"] for s in shown][:7] == ["ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT", "COCO"]
    assert shown[0]["file"] == "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    assert shown[6]["stem"] == "coco2014"
    assert all(s["records"] is None and s["official"] is None for s in shown)


def test_model_kinds_are_the_table_load_model_reads(capsys: pytest.CaptureFixture[str]) -> None:
    shown = listed(capsys)["model_kinds"]
    assert [k["kind"] for k in shown] == [k.kind for k in SPEC_KINDS]
    assert {k["kind"] for k in shown} == {
        "baseline",
        "replay",
        "openai",
        "anthropic",
        "hf",
        "python",
        "human",
    }
    # The table is what load_model knows: a kind outside it is refused, naming the table's.
    with pytest.raises(ModelSpecError, match=r"unknown model kind 'nosuch'.*openai:MODEL"):
        load_model("nosuch:x")
    assert {k["kind"] for k in shown if not k["eval"]} == {"human"}
    with pytest.raises(ModelSpecError, match="is a person"):
        load_model("human:ann")
    assert {k["kind"] for k in shown if k["judge"]} == {"openai", "anthropic", "hf", "python"}


def test_baselines_are_those_load_model_builds(capsys: pytest.CaptureFixture[str]) -> None:
    shown = listed(capsys)["baselines"]
    specs = [b["spec"] for b in shown]
    assert specs == [f"baseline:{name}" for name in BASELINES]
    assert set(specs) >= {"baseline:oracle", "baseline:random", "baseline:abstain"}
    for spec in specs:
        assert load_model(spec).name == spec
    assert all(b["doc"] for b in shown)


def test_experiments_are_the_shipped_suites(capsys: pytest.CaptureFixture[str]) -> None:
    shown = {e["id"]: e for e in listed(capsys)["experiments"]}
    suite = paper_suite().experiments
    assert list(shown) == [e.id for e in suite]
    assert [e["paper"] for e in shown.values()] == [e.paper for e in suite]
    # The settings each changes from eval's defaults, as suites/paper.toml declares them.
    assert shown["mcqa"]["settings"] == {}
    assert shown["reference"]["settings"] == {"reference": True}
    assert shown["icl1"]["settings"] == {"scenarios": ["ROD", "MVP-N"], "icl": 1}
    assert shown["oeg"]["settings"] == {"mode": "oeg", "subset": 100}


def test_an_extra_is_installed_when_each_requirement_can_be_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extras = importlib.metadata.metadata("proactivebench").get_all("Provides-Extra")
    real = importlib.util.find_spec
    asked: list[str] = []

    def find_spec(name: str, *args: object) -> object:
        asked.append(name)
        return None if name == "torch" else real(name, *args)

    monkeypatch.setattr(catalog_module.importlib.util, "find_spec", find_spec)
    shown = {e.name: e for e in extra_entries()}
    assert list(shown) == extras
    # hf needs torch; train needs proactivebench[hf], so torch too; report needs nothing.
    assert not shown["hf"].installed and "torch" in shown["hf"].missing
    assert not shown["train"].installed and "torch" in shown["train"].missing
    assert shown["report"].installed and shown["report"].missing == ()
    assert shown["inspect"].installed
    assert {"inspect_ai", "verifiers", "trl", "yaml"} <= set(asked)  # pyyaml is `yaml`

    monkeypatch.setattr(catalog_module.importlib.util, "find_spec", lambda name, *a: None)
    assert not extra_entries()[extras.index("inspect")].installed


def test_finding_the_extras_imports_none_of_them() -> None:
    code = (
        "import sys; from proactivebench.jobs.catalog import extra_entries; extra_entries(); "
        "print(sorted({'torch', 'transformers', 'inspect_ai', 'verifiers'} & set(sys.modules)))"
    )
    src = str(Path(catalog_module.__file__).parents[1])
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "PATH": ""},
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_data_counts_records_and_the_official_filters_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generate(tmp_path, per_scenario=3, seed=0, scenarios=["ROD", "QD"])
    shown = listed(capsys, "--data", str(tmp_path))
    counts = {s["short"]: (s["records"], s["official"]) for s in shown["scenarios"]}
    assert counts["ROD"][0] == 3 and counts["QD"][0] == 3
    assert counts["COCO"] == (None, None)  # no file for it there
    assert shown["synthetic"] is True and shown["data"] == str(tmp_path)

    # As published data: two of ROD's three ids on the official list, one not.
    official = sorted(official_filter_ids("Realistic-Occlusion-Dataset"))
    not_kept = max(official) + 1
    path = tmp_path / "Realistic-Occlusion-Dataset_preprocessed.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line, ident in zip(lines, [official[0], not_kept, official[1]], strict=True):
        line["id"] = ident
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / MANIFEST).unlink()
    shown = listed(capsys, "--data", str(tmp_path))
    counts = {s["short"]: (s["records"], s["official"]) for s in shown["scenarios"]}
    assert counts["ROD"] == (3, 2)
    assert shown["synthetic"] is False
    assert catalog(tmp_path).scenarios[0].official == 2  # the library says the same


def test_a_bad_data_directory_is_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nosuch_preprocessed.jsonl").write_text("")
    code, text = run_cli(["list", "--data", str(tmp_path)], capsys)
    assert code == 1 and "unknown scenario file stem 'nosuch'" in text
    assert "Traceback" not in text


@pytest.mark.parametrize("as_json", [False, True])
def test_a_folder_without_records_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """A folder that holds no record file (an image folder, the folder above the data) is not
    counted as seven scenarios of no file: one line names it and what a data directory holds."""
    (tmp_path / "images").mkdir()
    (tmp_path / "notes.txt").write_text("not a record file")
    code, text = run_cli(
        ["list", "--data", str(tmp_path), *(["--json"] if as_json else [])], capsys
    )
    assert code == 1 and "Traceback" not in text
    assert f"{tmp_path}: no record file here" in text
    assert "'<stem>_preprocessed.jsonl' per scenario" in " ".join(text.split())
    assert "scenarios" not in text  # no table, no JSON


@pytest.mark.parametrize("width", [100, 80])
def test_a_narrow_terminal_gets_every_word_and_no_longer_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """Issue 47, item 7: `list` was 225 columns wide (it kept every row on one line). At 100 or
    80 columns no line is longer; every word the wide tables show is still shown, and every
    spec, scenario and experiment whole (as the JSON lists them, never broken mid-word)."""
    as_terminal(monkeypatch, 250)
    code, wide = run_cli(["list"], capsys)
    assert code == 0, wide
    as_terminal(monkeypatch, width)
    code, text = run_cli(["list"], capsys)
    assert code == 0, text
    assert max(map(len, text.splitlines())) <= width
    assert shown_tokens(wide) <= shown_tokens(text)
    found = catalog(None).to_json()
    whole = [s["short"] for s in found["scenarios"]] + [s["stem"] for s in found["scenarios"]]
    whole += [b["spec"] for b in found["baselines"]] + [e["id"] for e in found["experiments"]]
    whole += [word for k in found["model_kinds"] for word in k["form"].split()]
    assert "baseline:oracle|proactive|random|reactive|abstain" in whole
    assert set(whole) <= shown_tokens(text)
    for title in ("scenarios", "built-in baselines", "model spec kinds", "optional extras"):
        assert title in text.splitlines()
    assert f"narrowed to {width} columns: `proactivebench list --json` gives every field" in text
    assert out.width == width  # as it was


def test_a_wide_terminal_gets_the_tables_as_in_a_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 250 columns every table fits: the same output as off a terminal, each row one line
    (a spec and its description side by side)."""
    code, piped = run_cli(["list"], capsys)
    as_terminal(monkeypatch, 250)
    code, text = run_cli(["list"], capsys)
    assert code == 0 and text == piped
    assert "narrowed" not in text
    lines = text.splitlines()
    python = next(line for line in lines if "python:MODULE:FUNCTION" in line)
    assert "python:FILE.py:FUNCTION" in python and "your own Python function" in python
    icl = next(line for line in lines if line.startswith("│ icl1"))
    assert "scenarios=ROD,MVP-N icl=1" in icl


def test_an_empty_scenario_file_is_named_by_list_and_refused_by_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hostile tryout of issue 45, round 3, finding 6: an empty QuickDraw_preprocessed.jsonl
    was "0 records checked, every image present: ... is valid" (exit 0) and `list --data`
    showed QD 0 / 0 without a word (eval then found nothing to play)."""
    path = tmp_path / "QuickDraw_preprocessed.jsonl"
    path.write_text("")
    code, text = run_cli(["data", "validate", str(tmp_path)], capsys)
    assert code == 1 and "Traceback" not in text and "is valid" not in text
    assert f"{path}: holds no records" in " ".join(text.split())
    code, text = run_cli(["list", "--data", str(tmp_path)], capsys)
    assert code == 0 and "QuickDraw_preprocessed.jsonl holds no records" in text, text
