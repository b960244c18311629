"""Reports of hostile or malformed runs (a tryout's findings): names that look like markup,
damaged run.json files, impossible sizes, runs given twice, stale files, empty runs."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import run_cli
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.core.stats import bootstrap_mean
from proactivebench.report import inert as text_formats
from proactivebench.report import plots, write_report
from test_report import episode, make_run, oeg_line

SEVEN = ("ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT", "COCO")


def seven(kind: str = "first") -> list[dict]:
    return [episode(s, i, kind) for s in SEVEN for i in range(2)]


def test_dollar_signs_in_names_are_drawn_as_text(tmp_path: Path) -> None:
    runs = [
        make_run(tmp_path, "a", seven(), model="python:evil/m$\\foo{$x.py:answer"),
        make_run(tmp_path, "b", seven("wrong"), model="a$x$b"),
    ]
    outcome = write_report(runs, tmp_path / "out", params={"a": 1.0, "b": 2.0})
    assert not [n for n in outcome.notes if "not drawn" in n]
    for name in ("scenarios", "accuracy_vs_ps", "size"):
        assert (tmp_path / "out" / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")


def test_a_name_a_spreadsheet_would_run_as_a_formula_stays_text_in_the_csv(
    tmp_path: Path,
) -> None:
    """A model named `=HYPERLINK(...)` (a run.json from elsewhere) is a formula to a
    spreadsheet opening the CSV: its cell starts with `'`, so it shows as text; numbers that
    start with '-' (a difference) stay numbers."""
    evil = '=HYPERLINK("http://x.example","click")'
    runs = [
        make_run(tmp_path, "a", seven(), model=evil),
        make_run(tmp_path, "b", seven("wrong"), model="@SUM(A1)"),
    ]
    write_report(runs, tmp_path / "out", vs=runs[1])
    rows = list(csv.reader(io.StringIO((tmp_path / "out/tables/cross-accuracy.csv").read_text())))
    assert [row[0] for row in rows[1:]] == [f"'{evil}", "'@SUM(A1)"]
    vs = list(csv.reader(io.StringIO((tmp_path / "out/tables/vs-accuracy.csv").read_text())))
    assert vs[1][0] == f"'{evil}" and float(vs[1][1]) == 100.0
    assert text_formats.csv_cell("-0.5") == "-0.5" and text_formats.csv_cell("-x") == "'-x"
    assert text_formats.csv_cell("+hint") == "'+hint" and text_formats.csv_cell("a=b") == "a=b"


def test_a_failing_plot_costs_only_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: object) -> bytes:
        raise ValueError("no room")

    monkeypatch.setattr(plots, "scenario_bars", broken)
    run = make_run(tmp_path, "run", seven())
    outcome = write_report([run])
    assert "plot scenarios not drawn: ValueError: no room" in outcome.notes
    out = run / "report"
    assert (out / "plots" / "accuracy_vs_ps.png").is_file()
    assert not (out / "plots" / "scenarios.png").exists()
    assert (out / "tables" / "run-m.csv").is_file() and (out / "report.html").is_file()
    assert "plot scenarios not drawn" in (out / "report.md").read_text()


def test_seed_must_not_be_negative_and_any_int_seeds_the_bootstrap(tmp_path: Path, capsys) -> None:
    run = make_run(tmp_path, "run", seven())
    code, text = run_cli(["report", str(run), "--seed", "-5"], capsys)
    assert code == 2 and "--seed" in text and "Traceback" not in text
    assert bootstrap_mean([0.0, 1.0, 1.0], seed=-5).estimate == pytest.approx(2 / 3)


def test_runs_of_one_model_in_like_named_folders_stay_apart(tmp_path: Path, capsys) -> None:
    first = make_run(tmp_path / "a", "run", seven(), model="baseline:random")
    second = make_run(tmp_path / "b", "run", seven("wrong"), model="baseline:random")
    write_report([first, second], tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [r["label"] for r in data["runs"]] == [
        "baseline:random (a/run)",
        "baseline:random (b/run)",
    ]
    tables = sorted(p.name for p in (tmp_path / "out" / "tables").glob("run-*.csv"))
    assert tables == ["run-baseline-random-a-run.csv", "run-baseline-random-b-run.csv"]
    code, text = run_cli(["report", str(first), str(first), "--out", str(tmp_path / "x")], capsys)
    assert code == 1 and "is given twice" in text and "Traceback" not in text


def test_run_json_of_the_wrong_shape_is_named(tmp_path: Path, capsys) -> None:
    cases = {
        "settings": ("not settings", "'settings' must be an object"),
        "model": (7, "'model' must be a string, not 7"),
        "data_dir": (5, "'data_dir' must be a string, not 5"),
    }
    for key, (value, message) in cases.items():
        run = make_run(tmp_path, key, seven(), **{key: value})
        code, text = run_cli(["report", str(run)], capsys)
        assert code == 1 and message in text and "Traceback" not in text
        assert str(run / "run.json") in text.replace("\n", "")


def test_a_file_is_not_a_run_directory(tmp_path: Path, capsys) -> None:
    (tmp_path / "afile").write_text("x")
    code, text = run_cli(["report", str(tmp_path / "afile")], capsys)
    assert code == 1 and "afile is not a run directory" in text and "damaged" not in text


def test_markup_and_control_characters_in_names_are_inert(tmp_path: Path) -> None:
    model = "python:evil/x\"><img src=x onerror=alert('fn')>\x1b[31m*bold*_u_\nnext.py:answer"
    run = make_run(tmp_path, "run", seven(), model=model)
    out = tmp_path / "out"
    with _no_glyph_warning():
        write_report([run], out)
    markdown = (out / "report.md").read_text()
    assert "<img" not in markdown and "\x1b" not in markdown and "*bold*" not in markdown
    # Markdown source that renders as `\x1b[31m*bold*_u_\nnext`: one line, controls as escapes.
    assert "&lt;img src=x" in markdown and "\\\\x1b\\[31m\\*bold\\*\\_u\\_\\\\nnext" in markdown
    for path in out.rglob("*"):
        if path.suffix in (".md", ".csv", ".tex", ".html", ".json"):
            text = path.read_text()
            assert "\x1b" not in text and "x\nnext" not in text, path
    latex = (out / "tables" / "usage.tex").read_text()
    assert (
        "\\textless{}img" in latex
        and "\\textbackslash{}x1b{[}31m*bold*\\_u\\_\\textbackslash{}nnext" in latex
    )


class _no_glyph_warning:
    """Fails when matplotlib warns of a missing glyph (a raw control character drawn)."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings(record=True)
        self._seen = self._catch.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc: object) -> None:
        self._catch.__exit__(*exc)
        assert not [w for w in self._seen if "Glyph" in str(w.message)]


def test_impossible_parameter_counts_are_refused(tmp_path: Path, capsys) -> None:
    run = make_run(tmp_path, "run", seven())
    for count in ("1e400B", "0B", "0"):
        code, text = run_cli(["report", str(run), "--params", f"m={count}"], capsys)
        assert code == 2 and "finite number above zero" in text and "Traceback" not in text
    (run / "run.json").write_text('{"model": "m", "settings": {}, "params": Infinity}')
    write_report([run])
    document = (run / "report" / "report.json").read_text()
    assert "Infinity" not in document and json.loads(document)["runs"][0]["params_b"] is None


def test_a_new_report_removes_what_the_previous_one_wrote_and_only_that(tmp_path: Path) -> None:
    runs = [
        make_run(tmp_path, "a", seven(), model="org/A-1B"),
        make_run(tmp_path, "b", seven("wrong"), model="org/B-7B"),
    ]
    out = tmp_path / "out"
    write_report(runs, out)
    assert (out / "plots" / "size.png").is_file() and (
        out / "tables" / "cross-accuracy.tex"
    ).is_file()
    (out / "tables" / "mine.txt").write_text("keep")
    (out / "notes.md").write_text("keep")
    write_report(runs[:1], out)
    tables = sorted(p.name for p in (out / "tables").iterdir())
    assert tables == [
        "actions-org-a-1b.csv",
        "actions-org-a-1b.tex",
        "mine.txt",
        "run-org-a-1b.csv",
        "run-org-a-1b.tex",
        "usage.csv",
        "usage.tex",
    ]
    assert sorted(p.name for p in (out / "plots").iterdir()) == [
        "accuracy_vs_ps.png",
        "actions.png",
        "scenarios.png",
    ]
    assert (out / "notes.md").read_text() == "keep"


def test_averages_over_different_scenarios_say_which(tmp_path: Path) -> None:
    full = make_run(tmp_path, "full", seven(), model="full")
    part = make_run(tmp_path, "part", [episode(s, 0, "first") for s in ("ROD", "QD")], model="part")
    out = tmp_path / "out"
    write_report([full, part], out)
    cross = list(csv.DictReader(io.StringIO((out / "tables" / "cross-accuracy.csv").read_text())))
    assert [r["average covers"] for r in cross] == ["average", "average of 2 (ROD, QD)"]
    per_run = (out / "tables" / "run-part.csv").read_text().splitlines()
    assert per_run[-1].startswith('"average of 2 (ROD, QD)"')
    assert (out / "tables" / "run-full.csv").read_text().splitlines()[-1].startswith("average,")
    assert "average of 2 (ROD, QD)" in (out / "tables" / "cross-accuracy.tex").read_text()
    assert "average of 2 (ROD, QD)" in (out / "report.html").read_text()
    data = json.loads((out / "report.json").read_text())
    assert [r["average"]["label"] for r in data["runs"]] == ["average", "average of 2 (ROD, QD)"]


def test_json_gives_bounds_only_for_bootstrapped_metrics(tmp_path: Path) -> None:
    run = make_run(tmp_path, "run", seven())
    write_report([run])
    data = json.loads((run / "report" / "report.json").read_text())["runs"][0]
    for row in (data["scenarios"]["ROD"], data["average"]):
        assert set(row["accuracy"]) == {"value", "low", "high"}
        assert set(row["ps_rate"]) == {"value", "low", "high"}
        for key in ("first_turn_accuracy", "asked", "abstained", "unreadable"):
            assert set(row[key]) == {"value"}


def test_csv_keeps_small_p_values(tmp_path: Path) -> None:
    base = [episode("QD", i, "wrong") for i in range(80)]
    better = [episode("QD", i, "first") for i in range(80)]
    base_dir = make_run(tmp_path, "base", base, model="base")
    run_dir = make_run(tmp_path, "better", better, model="better")
    write_report([run_dir], tmp_path / "out", vs=base_dir)
    p = json.loads((tmp_path / "out" / "report.json").read_text())["comparisons"][0]["average"][
        "mcnemar_p"
    ]
    assert 0 < p < 1e-9
    row = next(
        csv.DictReader(io.StringIO((tmp_path / "out" / "tables" / "vs-accuracy.csv").read_text()))
    )
    assert float(row["average p"]) == pytest.approx(p, rel=1e-2, abs=0)


def test_empty_runs_are_said_to_be_empty(tmp_path: Path, capsys) -> None:
    empty = make_run(tmp_path, "empty", [])
    full = make_run(tmp_path, "full", seven(), model="full")
    code, text = run_cli(["report", str(empty)], capsys)
    assert code == 1 and "no episode in" in text and "results.jsonl is empty" in text
    code, text = run_cli(["report", str(empty), str(full), "--out", str(tmp_path / "o")], capsys)
    assert code == 0 and "warning:" in text and "holds no episodes" in text
    outcome = write_report([empty])  # as `eval` writes its run's report
    assert outcome.warnings == [
        f"{empty} holds no episodes (results.jsonl is empty): its row is all —"
    ]


def test_a_run_whose_every_line_is_left_out_is_not_said_to_be_empty(tmp_path: Path, capsys) -> None:
    """run.json edited by hand (hint: true over plain lines): every line is left out, and the
    message says so, naming the first, instead of calling a file of three lines empty."""
    lines = [{**episode("QD", i, "first"), "settings": {"hint": False}} for i in range(3)]
    edited = make_run(tmp_path, "edited", lines, settings={"hint": False})
    config = json.loads((edited / "run.json").read_text())
    (edited / "run.json").write_text(json.dumps({**config, "settings": {"hint": True}}))
    why = (
        f"(3 lines of results.jsonl are left out, the first as {edited / 'results.jsonl'}:1:"
        " played with other settings than the run's: hint: False (run.json: True)"
    )
    code, text = run_cli(["report", str(edited)], capsys)
    assert code == 1 and "is empty" not in text
    assert f"error: nothing to report: no episode in {edited} {why}" in " ".join(text.split())
    full = make_run(tmp_path, "full", seven(), model="full")
    outcome = write_report([edited, full], tmp_path / "o")
    assert any(w.startswith(f"{edited} holds no episodes {why}") for w in outcome.warnings)
    # `show` of an episode whose line was left out says so, not only that there is none.
    code, text = run_cli(["show", str(edited), "QD", "0"], capsys)
    told = f"error: {edited} has no episode of scenario 'QD' (none); {why[1:]}"
    assert code == 1 and told in " ".join(text.split())


def test_show_of_an_open_ended_episode_gives_its_image_and_judge_outputs(
    tmp_path: Path, capsys
) -> None:
    line = oeg_line(0, 1, 0, judge_outputs=["Proactive: yes", "Proactive: \x1b[2Jyes"])
    run = make_run(tmp_path, "oeg", [line], settings={"mode": "oeg"})
    code, text = run_cli(["show", str(run), "QD", "0"], capsys)
    assert code == 0 and "image: QuickDraw/0.png" in text
    assert "judge output 1: Proactive: yes" in text and "\\x1b[2Jyes" in text


def test_report_errors_are_library_errors(tmp_path: Path) -> None:
    run = make_run(tmp_path, "run", seven())
    with pytest.raises(ProactiveBenchError, match="is given twice"):
        write_report([run, tmp_path / "." / "run"], tmp_path / "out")


def test_a_reader_that_stops_early_is_no_failure(tmp_path: Path) -> None:
    """`proactivebench report RUN | head -1`: stdout is a pipe whose reader has gone."""
    run = make_run(tmp_path, "run", seven())
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to the pipe now fails with EPIPE, deterministically
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from proactivebench.cli import main; main()",
                "report",
                str(run),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)
    # Exit 0; what goes to stderr (the report's notes) still reaches the user.
    assert done.returncode == 0 and "Traceback" not in done.stderr and "error" not in done.stderr
    assert (run / "report" / "report.html").is_file()


def test_every_plot_axis_is_labelled_and_rates_start_at_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = []
    monkeypatch.setattr(plots, "_png", lambda figure: figures.append(figure) or b"png")
    runs = [
        make_run(tmp_path, "a", seven("wrong"), model="org/A-1B"),
        make_run(tmp_path, "b", seven("wrong"), model="org/B-7B$"),
    ]
    write_report(runs, tmp_path / "out")
    assert len(figures) == 4  # per scenario, the scatter, the action distribution, the size
    for figure in figures:
        for ax in figure.axes:
            # An axis beside one whose y it shares (the action distribution's first-turn bars
            # beside the all-turn bars, both a bar per run) is labelled there.
            shared_beside = any(
                other is not ax and other.get_ylabel() and ax.get_shared_y_axes().joined(ax, other)
                for other in figure.axes
            )
            assert ax.get_ylabel() or shared_beside, figure
            shared_below = (
                ax.get_subplotspec().rowspan.stop < ax.get_subplotspec().get_gridspec().nrows
            )
            assert ax.get_xlabel() or shared_below
    bars = figures[0].axes
    assert [ax.get_ylim()[0] for ax in bars] == [0.0, 0.0]
    # Accuracy: 0 of 2 per scenario, whose Wilson interval reaches z^2 / (2 + z^2) = 65.8 %,
    # drawn; the ps rate, all 0 with no spread, shows 0..1.
    assert bars[1].get_xlabel() == "scenario" and 65.8 <= bars[0].get_ylim()[1] <= 100.0
    assert bars[1].get_ylim()[1] == 1.0
    labels = [t.get_text() for t in figures[3].axes[0].texts]
    assert "org/B-7B$" in labels  # the name as written, not TeX


def test_report_json_stays_strict_json_whatever_the_files_hold(tmp_path: Path) -> None:
    lines = seven()
    lines[0]["trace"][0]["latency_s"] = float("nan")
    lines[1]["trace"][0]["usage"] = {"prompt_tokens": float("inf")}
    run = make_run(tmp_path, "run", lines, settings={"temperature": float("nan")})
    write_report([run])
    document = (run / "report" / "report.json").read_text()
    data = json.loads(document, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert data["runs"][0]["settings"] == {"temperature": None}
    assert data["runs"][0]["usage"]["latency_s"]["requests"] == 0
    page = (run / "report" / "report.html").read_text()
    blocks = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page)
    assert blocks and "NaN" not in "".join(blocks)


def test_finite_json_writes_nan_as_null_and_anything_else_as_dumps_does() -> None:
    """The viewer's data and report.json: a value without a NaN is written as `dumps` writes
    it (no walk first); one holding NaN or an infinity, at any depth, gets null there."""
    from proactivebench.core.texts import dumps
    from proactivebench.report.html import finite_json

    plain = {"s": 1, "t": [(0.5, "a<b", None), {"x": -2.0}], "é": True}
    assert finite_json(plain, ensure_ascii=False) == dumps(plain, ensure_ascii=False)
    assert finite_json(plain, indent=2) == dumps(plain, indent=2)
    odd = {"s": 1, "t": [(float("nan"), "a"), {"x": float("-inf")}], "u": float("inf")}
    assert finite_json(odd, separators=(",", ":")) == '{"s":1,"t":[[null,"a"],{"x":null}],"u":null}'


def test_the_viewer_reads_each_answer_to_its_options_once_and_right() -> None:
    """The option an answer designates, as the viewer shows it (§4 over the whole list),
    remembered per answer and options: the same answer to other options is read again."""
    from proactivebench.report.html import _chosen

    _chosen.cache_clear()
    options = ("Move the blocks.", "I do not know.", "hat", "tree")
    assert [_chosen(a, options) for a in ("C", "C", "tree", "maybe", "C")] == [2, 2, 3, -1, 2]
    assert _chosen("C", ("hat", "tree", "cup")) == 2  # C of another list: read again
    assert _chosen("A", ("hat", "tree")) == 0
    info = _chosen.cache_info()
    assert (info.hits, info.misses) == (2, 5)


def test_out_may_be_the_current_folder_or_its_parent(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report RUN --out .` (and `..`, `./`): the report is built beside the folder the path
    leads to and moved in, as for any --out; `--out /` is one error. Never a traceback."""
    run = make_run(tmp_path, "run", seven())
    here = tmp_path / "here" / "deeper"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    for out, folder in ((".", here), ("./", here), ("..", here.parent)):
        code, text = run_cli(["report", str(run), "--out", out], capsys)
        assert code == 0, text
        assert (folder / "report.html").is_file() and (folder / "tables").is_dir()
    assert not [p for p in tmp_path.rglob(".*partial*")]
    code, text = run_cli(["report", str(run), "--out", "/"], capsys)
    assert code == 1 and "error: cannot write /" in text and "Traceback" not in text
    # A file on the way is named (mkdir said "File exists" of a folder that did not).
    (here / "afile").write_text("x")
    for out in ("afile", "afile/sub"):
        code, text = run_cli(["report", str(run), "--out", out], capsys)
        told = f"error: cannot write {out}: {here / 'afile'} is a file, not a folder"
        assert code == 1 and told in " ".join(text.split()), text


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_results_file_that_is_no_file_is_named_not_said_missing(
    tmp_path: Path, capsys, kind: str
) -> None:
    """A folder or FIFO where results.jsonl should be: `report`, `show` and `push` say it is
    not a regular file (never open it: a FIFO waits forever), not "no results.jsonl yet"."""
    from proactivebench.jobs.publish import plan_push

    run = make_run(tmp_path, "run", seven())
    results = run / "results.jsonl"
    results.unlink()
    results.mkdir() if kind == "folder" else os.mkfifo(results)
    told = f"error: cannot read {results}: not a regular file (a FIFO, device or folder)"
    for args in (["report", str(run)], ["show", str(run), "QD", "0"]):
        code, text = run_cli(args, capsys)
        assert code == 1 and told in text and "yet" not in text, text
    with pytest.raises(ProactiveBenchError, match="not a regular file"):
        plan_push([run])


@pytest.mark.parametrize(
    ("settings", "told"),
    [
        ({"mode": 5}, "setting 'mode' must be a text, not 5"),
        ({"icl": "3"}, "setting 'icl' must be a whole number, not \"3\""),
        ({"icl": True}, "setting 'icl' must be a whole number, not true"),
        ({"hint": 1}, "setting 'hint' must be true or false, not 1"),
    ],
)
def test_a_run_setting_of_the_wrong_type_in_run_json_is_named(
    tmp_path: Path, capsys, settings: dict, told: str
) -> None:
    """run.json edited by hand with a setting of another type than its declaration's: one
    error naming the file and the setting (`mode: 5` was an AttributeError while labelling)."""
    run = make_run(tmp_path, "run", seven(), settings=settings)
    code, text = run_cli(["report", str(run)], capsys)
    assert code == 1 and "Traceback" not in text
    assert f"error: {run / 'run.json'} is damaged: {told}" in text
    fine = make_run(tmp_path, "fine", seven(), settings={"icl": 3, "resize_short_edge": None})
    assert write_report([fine]).out_dir == fine / "report"


def test_lines_left_out_are_counted_as_lines_not_messages(tmp_path: Path, capsys) -> None:
    """Hostile tryout of issue 45, round 3, finding 5: a line contradicting another of the same
    episode leaves both out under one message (`FILE:1, 3: ...`), and `show` said "1 line of
    results.jsonl is left out". Every sentence counts lines (`rundir.RunLines.left_out`)."""
    lines = [episode("QD", 0, "first"), episode("QD", 1, "first"), episode("QD", 0, "wrong")]
    run = make_run(tmp_path, "contradicted", lines)
    code, text = run_cli(["show", str(run), "QD", "0"], capsys)
    told = f"2 lines of results.jsonl are left out, the first as {run / 'results.jsonl'}:1, 3:"
    assert code == 1 and told in " ".join(text.split()), text


@pytest.mark.parametrize("provenance", ["garbage", [{"command": "eval"}, 3]])
def test_a_damaged_provenance_in_run_json_is_named(tmp_path: Path, capsys, provenance) -> None:
    """Hostile tryout of issue 45, round 3, finding 8: run.json's "provenance": "garbage" was
    read as no invocation at all (how the run stopped went unsaid), without a word. Every
    reader of run.json (`read_run_config`) names it as damaged."""
    run = make_run(tmp_path, "run", seven())
    config = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**config, "provenance": provenance}))
    code, text = run_cli(["show", str(run), "QD", "0"], capsys)
    assert code == 1 and "Traceback" not in text
    told = f"{run / 'run.json'} is damaged ('provenance' is not a list of objects"
    assert told in " ".join(text.split()), text


def test_a_scenario_no_run_scored_is_an_empty_number_in_every_csv(tmp_path: Path) -> None:
    """Hostile tryout of issue 45, round 3, finding 8: a vs-*.csv column whose every cell was
    "—" (CIT: each episode an error) was written as a text column holding "—", without its
    low/high/p columns, where cross-*.csv writes empty cells of the same columns. A number
    column none of whose rows has a number keeps its parts, empty."""
    import csv

    lines = [
        x if x["scenario"] != "CIT" else episode("CIT", x["sample_id"], "error") for x in seven()
    ]
    run = make_run(tmp_path, "run", lines, model="a")
    base = make_run(tmp_path, "base", seven("wrong"), model="b")
    write_report([run], tmp_path / "o", vs=base)
    tables = tmp_path / "o" / "tables"
    [row] = list(csv.DictReader((tables / "vs-accuracy.csv").open()))
    assert [row[f"CIT{part}"] for part in ("", " low", " high", " p")] == ["", "", "", ""], row
    assert row["ROD p"] != "" and "—" not in row.values()


def test_the_vs_run_of_a_compared_runs_label_is_named_by_its_folder(tmp_path: Path) -> None:
    """Hostile tryout of issue 45, round 3, finding 8: `report runs/random --vs runs/r2` (one
    model both sides) titled "vs baseline:random (--vs)" over a row "baseline:random": which
    run was the reference could not be told. Its label is told apart by its folder."""
    run = make_run(tmp_path, "random", seven(), model="baseline:random")
    base = make_run(tmp_path, "r2", seven("wrong"), model="baseline:random")
    outcome = write_report([run], tmp_path / "o", vs=base)
    titles = [t.title for t in outcome.headline if t.key.startswith("vs-")]
    assert titles and all(t.endswith("vs baseline:random (r2) (--vs)") for t in titles), titles
    [row] = next(t for t in outcome.headline if t.key == "vs-accuracy").rows
    assert row[0].text == "baseline:random"
