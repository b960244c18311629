"""The additions docs/architecture.md says where to make, each made as a newcomer would: in a
copy of the package, touching only the files the architecture names, then `eval` and `report`
run end to end on the copy (issue 46's acceptance). A scenario of one's own is added from
outside the package altogether: tests/test_own_scenario.py.

- a metric: one `Metric(...)` in benchmark/metrics.py's `MCQA_METRICS`;
- a backend: a `Model` subclass in models/ and one `SpecKind` in `SPEC_KINDS`;
- an episode setting: one field of `EvalSettings` in run/settings.py (no label declared: the
  report labels it "name=value", and it is never placed among Table 1's rows);
- an execution option: one field of `RunOptions` in run/settings.py, read in run/engine.py;
- a suite experiment: one `[[experiment]]` of a suite file, with the new setting.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proactivebench.data.synth import MANIFEST_NAME, generate

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "proactivebench"


def patched(path: Path, anchor: str, addition: str, *, before: bool = False) -> None:
    """Insert `addition` after (or before) the one place `anchor` is in `path`: a change
    where the architecture says it goes; an anchor gone fails the test, not silently."""
    text = path.read_text(encoding="utf-8")
    assert text.count(anchor) == 1, f"{anchor!r} in {path}"
    new = addition + anchor if before else anchor + addition
    path.write_text(text.replace(anchor, new), encoding="utf-8")


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package with the five additions; its parent goes first on the path."""
    root = tmp_path_factory.mktemp("extended")
    package = root / "proactivebench"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    metrics = package / "benchmark" / "metrics.py"
    patched(
        metrics,
        "MCQA_METRICS = (\n",
        '    Metric("turns_used", "turns used", lambda line: line["num_turns"], percent=False,'
        ' higher_is_better=None, headline=True, reads=("num_turns",),'
        ' doc="turns an episode took"),\n',
    )
    (package / "models" / "letter.py").write_text(
        '"""A backend that answers every request with one letter."""\n\n'
        "from proactivebench.models.base import Completion, Model\n\n\n"
        "class Letter(Model):\n"
        "    cacheable = False\n\n"
        "    def __init__(self, letter: str) -> None:\n"
        '        self.letter, self.name = letter, f"letter:{letter}"\n\n'
        "    async def generate(self, requests):\n"
        "        return [Completion(self.letter) for _ in requests]\n",
        encoding="utf-8",
    )
    patched(
        package / "models" / "__init__.py",
        "SPEC_KINDS: tuple[SpecKind, ...] = (\n",
        '    SpecKind("letter", "letter:X", "answers every request with the letter X",'
        " lambda rest, seed, options: __import__("
        '"proactivebench.models.letter", fromlist=["Letter"]).Letter(rest), options=False),\n',
    )
    settings = package / "run" / "settings.py"
    patched(
        settings,
        "    hint: bool = setting(\n",
        '    glare: bool = setting(False, kind="episode", help="Play under a glare (a new'
        ' setting).")\n',
        before=True,
    )
    patched(
        settings,
        "    concurrency: int = setting(\n",
        '    lanes: int = setting(1, kind="execution", bounds=Range(1, integer=True),'
        ' help="Lanes (a new option).")\n',
        before=True,
    )
    patched(
        package / "run" / "engine.py",
        "        self.options = options or RunOptions()\n",
        '        if self.options.lanes > 1:\n            print(f"engine: {self.options.lanes}'
        ' lanes", file=sys.stderr)\n',
    )
    patched(package / "run" / "engine.py", "from __future__ import annotations\n", "import sys\n")
    return root


def run(extended: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line of the extended copy (its package first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(extended), "PROACTIVEBENCH_CACHE": str(extended)}
    return subprocess.run(
        [sys.executable, "-m", "proactivebench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated data without its manifest: runs on it are ranked beside the paper's."""
    root = tmp_path_factory.mktemp("data")
    generate(root, per_scenario=2, seed=0)
    (root / MANIFEST_NAME).unlink()
    return root


def test_a_metric_a_backend_a_setting_and_an_option_run_eval_and_report(
    extended: Path, data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", "letter:A", "--out", str(out)]
    done = run(extended, *args, "--glare", "--lanes", "3", "--all-samples")
    assert done.returncode in (0, 3), done.stdout + done.stderr
    assert "engine: 3 lanes" in done.stderr  # the option reached the engine
    config = json.loads((out / "run.json").read_text())
    assert config["model"] == "letter:A" and config["settings"]["glare"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert all("turns_used" in score for score in summary["scenarios"].values())
    turns = [json.loads(x)["num_turns"] for x in (out / "results.jsonl").read_text().splitlines()]
    assert summary["average"]["n"] == len(turns)
    done = run(extended, "report", str(out), "--paper", "--out", str(tmp_path / "rep"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    (measured,) = report["runs"]
    assert measured["label"] == "letter:A +glare=True"
    assert "turns_used" in report["metric_info"]
    # Not a zero-shot run: placed in no table of the paper.
    assert any("letter:A +glare=True" in n and "no counterpart" in n for n in report["notes"])
    tables = list((tmp_path / "rep" / "tables").glob("paper-table1*"))
    assert all("glare" not in t.read_text() for t in tables)


def test_a_suite_experiment_of_the_new_setting(extended: Path, data: Path, tmp_path: Path) -> None:
    suite = tmp_path / "mine.toml"
    suite.write_text('[[experiment]]\nid = "glare"\nglare = true\nscenarios = ["ROD", "QD"]\n')
    out = tmp_path / "suite"
    done = run(
        extended, "suite", str(suite), "--data", str(data), "--model", "letter:B", "--out", str(out)
    )
    assert done.returncode in (0, 3), done.stdout + done.stderr
    recorded = json.loads((out / "glare" / "run.json").read_text())
    assert recorded["settings"]["glare"] is True
    markdown = (out / "report" / "report.md").read_text()
    assert "letter:B +glare=True" in markdown
