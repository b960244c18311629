"""Reports of hand-made runs, whose every number is computed here by hand."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.core.stats import mcnemar_p
from proactivebench.report import write_report
from proactivebench.report.measures import episode_values, intervals_of, measure_run
from proactivebench.report.runs import load_run, params_from_config, parse_param_count
from proactivebench.report.thumbs import Thumbnails

OPTIONS = ["I do not know.", "Move the blocks to the right.", "hat", "tree"]
XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def turn(number: int, answer: str, verdict: str, **extra: Any) -> dict[str, Any]:
    return {
        "turn": number,
        "image": f"img/{number}.png",
        "crop": None,
        "prompt": "What object is hidden?",
        "options": OPTIONS,
        "answer": answer,
        "verdict": verdict,
        **extra,
    }


def episode(scenario: str, sample: int, kind: str) -> dict[str, Any]:
    """A result line of one of five hand-made kinds of episode."""
    if kind == "error":
        return {"scenario": scenario, "sample_id": sample, "error": "TimeoutError", "trace": []}
    traces = {
        "first": ([turn(1, "C", "correct")], True, "correct"),
        "asked": (
            [
                turn(1, "B", "proactive", action="RIGHT", usage={"prompt_tokens": 10}),
                turn(2, "hat", "correct", usage={"prompt_tokens": 30}),
            ],
            True,
            "correct",
        ),
        "abstained": ([turn(1, "A", "wrong")], False, "abstained"),
        "unreadable": ([turn(1, XSS, "mismatch")], False, "unreadable"),
        "wrong": ([turn(1, "D", "wrong")], False, "wrong"),
    }
    trace, correct, end = traces[kind]
    return {
        "scenario": scenario,
        "sample_id": sample,
        "correct": correct,
        "num_turns": len(trace),
        "proactive_suggestions": len(trace) - 1,
        "trace": trace,
        "end_reason": end,
        "correct_category": "hat",
    }


def make_run(
    root: Path, name: str, lines: list[dict[str, Any]], model: str = "m", **config: Any
) -> Path:
    run = root / name
    run.mkdir(parents=True)
    identity = {"data_dir": str(root / "no-data"), "model": model, "settings": {}, **config}
    (run / "run.json").write_text(json.dumps(identity))
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """ROD: one episode of each kind; VSOD: every episode ended in an error."""
    kinds = ["first", "asked", "abstained", "unreadable"]
    lines = [episode("ROD", i, k) for i, k in enumerate(kinds)]
    lines += [episode("VSOD", i, "error") for i in range(2)]
    return make_run(tmp_path, "run", lines)


def test_behaviour_metrics_by_hand(run: Path) -> None:
    measures = measure_run(load_run(run))
    rod = {k: v.estimate if v else None for k, v in measures.scenarios["ROD"].values.items()}
    assert rod == {
        "accuracy": 50.0,  # first and asked
        "ps_rate": 0.25,  # one suggestion in four episodes
        "first_turn_accuracy": 25.0,
        "accuracy_after_asking": 100.0,  # the one that asked got it right
        "asked": 25.0,
        "abstained": 25.0,
        "unreadable": 25.0,
        # The action distribution: 5 turns (C; B then hat; A = abstain; unreadable) ...
        "choice_category": 40.0,
        "choice_proactive": 20.0,
        "choice_abstain": 20.0,
        "choice_unreadable": 20.0,
        # ... and 4 first turns, one of each kind; no episode reached the step limit.
        "first_choice_category": 25.0,
        "first_choice_proactive": 25.0,
        "first_choice_abstain": 25.0,
        "first_choice_unreadable": 25.0,
        "blind_asking": 0.0,
    }
    vsod = measures.scenarios["VSOD"]
    assert vsod.n == 0 and vsod.errors == 2
    assert all(value is None for value in vsod.values.values())
    assert measures.average.covers == ["ROD"] and measures.average.missing == ["VSOD"]
    assert measures.average.values["accuracy"].estimate == 50.0
    usage = measures.usage
    assert usage["requests"] == 5
    assert usage["tokens"]["prompt_tokens"] == {
        "sum": 40,
        "mean": 20.0,
        "p50": 20.0,
        "p95": 29.0,  # 10 + 0.95 * (30 - 10)
        "requests": 2,
    }


def test_episode_values_are_what_the_measures_average(run: Path) -> None:
    values = episode_values(load_run(run), ["accuracy", "ps_rate", "asked"])
    # ROD's episodes in order: first, asked, abstained, unreadable; VSOD's two are errors
    assert values["ROD"] == {
        "accuracy": [100.0, 100.0, 0.0, 0.0],
        "ps_rate": [0.0, 1.0, 0.0, 0.0],
        "asked": [0.0, 100.0, 0.0, 0.0],
    }
    assert values["VSOD"] == {"accuracy": [], "ps_rate": [], "asked": []}
    assert episode_values(load_run(run), ["no such metric"])["ROD"] == {}


def test_report_files_show_dashes_and_what_the_average_covers(run: Path) -> None:
    outcome = write_report([run])
    out = run / "report"
    assert outcome.out_dir == out
    markdown = (out / "report.md").read_text()
    vsod_row = next(x for x in markdown.splitlines() if x.startswith("| VSOD"))
    assert vsod_row.count("—") == 7 and "0.0" not in vsod_row
    assert "average of 1 (ROD; no VSOD)" in markdown
    assert "a count, not a percentage" in markdown
    rows = list(csv.DictReader(io.StringIO((out / "tables" / "run-m.csv").read_text())))
    rod = rows[0]
    assert rod["scenario"] == "ROD" and float(rod["accuracy %"]) == 50.0
    assert rod["n"].isdigit()  # a count is written as one (2, not 2.0)
    assert float(rod["accuracy % low"]) <= 50.0 <= float(rod["accuracy % high"])
    assert rows[1]["accuracy %"] == ""  # VSOD: no value, not 0
    latex = (out / "tables" / "run-m.tex").read_text()
    assert "accuracy \\%" in latex and "\\toprule" in latex and "---" in latex
    data = json.loads((out / "report.json").read_text())
    assert data["runs"][0]["scenarios"]["VSOD"]["accuracy"] is None
    assert data["runs"][0]["average"]["covers"] == ["ROD"]
    assert outcome.warnings == [
        "answers that designate no shown option (protocol §4) pass 10 % in ROD (25.0 %): "
        "its accuracy reflects the answer format more than the model; try "
        "--answer-extraction lenient, and `proactivebench show` to see one"
    ]
    assert (out / "plots" / "scenarios.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "plots" / "accuracy_vs_ps.png").is_file()


def test_a_report_outcome_prints_in_one_short_line(run: Path, tmp_path: Path) -> None:
    """`print(write_report(...))` in a notebook: where, from which runs, which files, in one
    line (it printed every measure and table, ~135k characters); nothing is taken away."""
    other = make_run(tmp_path, "other", [episode("ROD", 0, "first")], model="n")
    outcome = write_report([run, other], tmp_path / "both")
    printed = repr(outcome)
    assert "\n" not in printed and len(printed) < 400, printed
    top = sorted(p.name for p in (tmp_path / "both").iterdir() if p.is_file() and p.name[0] != ".")
    inside = [p for p in outcome.files if p.parent != outcome.out_dir]
    assert sorted(["report.html", "report.md", "report.json"]) == top
    assert printed == (
        f"ReportOutcome(out_dir={str(tmp_path / 'both')!r}, runs={[str(run), str(other)]!r}, "
        f"files=['report.html', 'report.json', 'report.md', '+{len(inside)} in plots/ tables/'], "
        f"notes={len(outcome.notes)}, warnings=1, unchanged=False)"
    )
    # Every field is still there: the measures and tables a script reads.
    assert [m.run.run_dir for m in outcome.measures] == [run, other]
    assert outcome.headline and outcome.intervals and outcome.html.is_file()
    again = write_report([run, other], tmp_path / "both", if_changed=True)
    assert again.unchanged and repr(again).endswith("unchanged=True)")
    assert again.runs == [run, other]


def test_interval_of_a_report_is_reproducible_by_seed(run: Path, tmp_path: Path) -> None:
    write_report([run], tmp_path / "a", seed=3)
    write_report([run], tmp_path / "b", seed=3)
    first = (tmp_path / "a" / "report.json").read_text()
    assert first == (tmp_path / "b" / "report.json").read_text()


def test_html_escapes_a_hostile_answer(run: Path) -> None:
    page = write_report([run]).html.read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "Content-Security-Policy\" content=\"default-src 'none'" in page
    # The answer is in the viewer's data, as text.
    blocks = [
        json.loads(text)
        for text in re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page)
    ]
    answers = [
        t[4] for b in blocks if isinstance(b, dict) for e in b.get("episodes", []) for t in e["t"]
    ]
    assert XSS in answers


def test_html_escapes_a_hostile_model_name_and_category(tmp_path: Path) -> None:
    line = episode("ROD", 0, "first")
    line["correct_category"] = XSS
    run = make_run(tmp_path, "run", [line], model=XSS)
    page = write_report([run]).html.read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert" in page  # the label in the tables, as text


def test_vs_gives_paired_differences_and_mcnemar(tmp_path: Path) -> None:
    # 30 samples; the base is right on 0-9, the run on 0-9 and 10-21: 12 discordant pairs, all
    # for the run: +40 points, McNemar exact p = 2 / 2^12.
    base = [episode("QD", i, "first" if i < 10 else "wrong") for i in range(30)]
    better = [episode("QD", i, "first" if i < 22 else "wrong") for i in range(30)]
    base_dir = make_run(tmp_path, "base", base, model="base")
    run_dir = make_run(tmp_path, "better", better, model="better")
    write_report([run_dir], tmp_path / "out", vs=base_dir)
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    diff = data["comparisons"][0]["scenarios"]["QD"]
    assert diff["shared"] == 30 and diff["accuracy"]["value"] == pytest.approx(40.0)
    assert diff["accuracy"]["low"] > 0  # every resample favours the run
    assert diff["mcnemar_p"] == pytest.approx(mcnemar_p(12, 0)) == pytest.approx(2 / 4096)
    table = (tmp_path / "out" / "report.md").read_text()
    assert "+40.0 [" in table and "p=0.000488" in table


def test_size_plot_and_spearman_from_params_and_names(tmp_path: Path) -> None:
    runs = []
    for i, (model, correct) in enumerate([("org/Tiny-1B", 2), ("org/Mid-7B", 4), ("big", 6)]):
        lines = [episode("QD", s, "first" if s < correct else "wrong") for s in range(8)]
        runs.append(make_run(tmp_path, f"r{i}", lines, model=model))
    write_report(runs, tmp_path / "out", params={"big": 70.0})
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [r["params_b"] for r in data["runs"]] == [1.0, 7.0, 70.0]
    assert data["size_correlation"]["accuracy"] == pytest.approx(1.0)
    assert (tmp_path / "out" / "plots" / "size.png").is_file()
    assert (tmp_path / "out" / "tables" / "cross-accuracy.csv").is_file()


def test_the_first_column_of_every_table_is_pinned_and_no_other(tmp_path: Path) -> None:
    """A wide table scrolls inside its box with its first column (the run or model) pinned at
    the left (report.css), so that a row scrolled sideways still says whose it is; no other
    column is pinned, so that none covers another (issue 47: the average column, pinned at
    the right, covered COCO). The average column is set apart, not pinned."""
    runs = [
        make_run(tmp_path, name, [episode(s, 0, "first") for s in ("ROD", "QD")], model=name)
        for name in ("a", "b")
    ]
    write_report(runs, tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    cross = re.search(r'data-table="cross-accuracy".*?</figure>', page, re.S)
    assert cross is not None
    marked = re.findall(r"<t[hd][^>]*average-col[^>]*>(.*?)</t[hd]>", cross.group(0))
    assert marked[0] == "average" and len(marked) == 1 + len(runs)
    assert all(cell.startswith('<span class="v">100.0</span>') for cell in marked[1:])
    rules = dict(re.findall(r"\n([^{}\n]+?) \{([^}]*)\}", page))
    pinned = [selector for selector, body in rules.items() if "position: sticky" in body]
    assert pinned == [":where(figure.table) tr > :first-child", ".controls"], pinned
    assert "left: 0" in rules[pinned[0]]


def test_parameter_counts() -> None:
    assert parse_param_count("7B") == 7.0 and parse_param_count("500M") == 0.5
    assert parse_param_count("1.5b") == 1.5 and parse_param_count("7e9") == 7.0
    assert params_from_config({"model": "openai:Qwen2.5-VL-72B-Instruct"}) == 72.0
    assert params_from_config({"model": "hf:HuggingFaceTB/SmolVLM-256M-Instruct"}) == 0.256
    assert params_from_config({"model": "baseline:oracle"}) is None
    # The endpoint is not the name (its last part, "v1", used to be read as the name).
    spec = "openai:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:8000/v1"
    assert params_from_config({"model": spec}) == 7.0
    assert params_from_config({"model": "x", "params": 3e9}) == 3.0


def test_without_matplotlib_tables_are_written_and_plots_skipped(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    outcome = write_report([run])
    assert not (run / "report" / "plots").exists()
    assert (run / "report" / "report.html").is_file()
    assert (run / "report" / "tables" / "run-m.csv").is_file()
    assert any("matplotlib is not installed" in n for n in outcome.notes)
    assert "matplotlib is not installed" in (run / "report" / "report.md").read_text()


def test_thumbnail_applies_the_crop(tmp_path: Path) -> None:
    image = Image.new("RGB", (200, 100), (255, 0, 0))
    image.paste((0, 0, 255), (100, 0, 200, 100))  # right half blue
    (tmp_path / "img").mkdir()
    image.save(tmp_path / "img" / "a.png")
    thumbs = Thumbnails(tmp_path)
    whole = thumbs.url(("img/a.png", None, None))
    right = thumbs.url(("img/a.png", (120.0, 10.0, 190.0, 90.0), None))
    assert thumbs.url(("../outside.png", None, None)) is None  # never leaves the data dir

    def decode(url: str | None) -> Image.Image:
        assert url is not None
        return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")

    assert decode(whole).size == (112, 56)  # shrunk to the thumbnail edge; never enlarged
    red, _, blue = decode(right).resize((1, 1)).getpixel((0, 0))
    assert blue > 200 and red < 60 and decode(right).size == (70, 80)


def test_report_and_show_commands(run: Path, tmp_path: Path, capsys) -> None:
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 0 and "ROD" in text and "average" in text and "report.html" in text
    # The table and where the files are, not the whole Markdown report.
    assert str(tmp_path / "r" / "report.md") in text and "## What the columns mean" not in text
    run2 = make_run(tmp_path, "other", [episode("ROD", 0, "first")])
    code, text = run_cli(["report", str(run), str(run2), "--out", str(tmp_path / "r2")], capsys)
    assert code == 0 and "accuracy % by scenario" in text and "ps rate by scenario" in text
    assert "What the columns mean" not in text and "Tokens and latency" not in text
    assert "warning:" in text and "designate no shown option" in text
    code, text = run_cli(["show", str(run), "ROD", "1"], capsys)
    assert code == 0
    assert "turn 1" in text and "turn 2" in text and "B. Move the blocks to the right." in text
    assert "action carried out: RIGHT" in text and "verdict: correct" in text
    assert "the model chose the correct category" in text
    code, text = run_cli(["show", str(run), "ROD", "3"], capsys)
    assert XSS in text  # printed as written (no markup, no HTML)
    # A person's run (`proactivebench play`): the person chose, not "the model".
    person = make_run(tmp_path, "person", [episode("ROD", 1, "abstained")], model="human:ann")
    code, text = run_cli(["show", str(person), "ROD", "1"], capsys)
    assert code == 0 and "the person chose an abstaining option" in text, text
    assert "the model" not in text
    code, text = run_cli(["show", str(run), "ROD", "99"], capsys)
    assert code == 1 and "no ROD episode with sample id 99" in text and "Traceback" not in text
    code, text = run_cli(["show", str(run), "XX", "1"], capsys)
    assert code == 1 and "no episode of scenario 'XX'" in text
    code, text = run_cli(["report", str(run), "--params", "nobody=7B"], capsys)
    assert code == 1 and "no run of that name" in text


def test_show_makes_control_characters_visible(tmp_path: Path, capsys) -> None:
    line = episode("ROD", 0, "wrong")
    line["trace"][0]["answer"] = "\x1b[31m[red]x[/red] :x:"
    run = make_run(tmp_path, "run", [line])
    code, text = run_cli(["show", str(run), "ROD", "0"], capsys)
    assert code == 0 and "\\x1b[31m[red]x[/red] :x:" in text and "\x1b[31m" not in text


def test_eval_writes_the_report_unless_told_not_to(tmp_path: Path, capsys) -> None:
    data = full_dataset(tmp_path / "data")
    code, text = run_cli(eval_args(data, tmp_path / "a"), capsys)
    assert code == 0 and (tmp_path / "a" / "report" / "report.html").is_file()
    assert "report: " in text
    page = (tmp_path / "a" / "report" / "report.html").read_text()
    assert page.count("data:image/") > 10  # thumbnails of the views
    code, text = run_cli([*eval_args(data, tmp_path / "b"), "--no-report"], capsys)
    assert code == 0 and not (tmp_path / "b" / "report").exists() and "report: " not in text


def oeg_line(sample: int, ps: int, cp: int, **extra: Any) -> dict[str, Any]:
    return {
        "scenario": "QD",
        "sample_id": sample,
        "image": "QuickDraw/0.png",
        "prompt": "What is drawn?",
        "generation": "Could you add more strokes?",
        "valid_answers_text": "cat",
        "proactive_suggestion": ps,
        "category_prediction": cp,
        "aggregate": int(bool(ps or cp)),
        "judge_outputs": ["1", "1"],
        "judge_parsed": [True, True],
        "judge_agreement": 1.0,
        **extra,
    }


def test_open_ended_run_reports_judged_rates(tmp_path: Path) -> None:
    lines = [oeg_line(0, 1, 0), oeg_line(1, 0, 1), oeg_line(2, 0, 0), oeg_line(3, 1, 1)]
    run = make_run(tmp_path, "oeg", lines, settings={"mode": "oeg"})
    outcome = write_report([run])
    rates = json.loads((run / "report" / "report.json").read_text())["runs"][0]["scenarios"]
    assert {k: rates["QD"][k]["value"] for k in ("ps", "cp", "aggregate")} == {
        "ps": 50.0,
        "cp": 50.0,
        "aggregate": 75.0,
    }
    assert "aggregate %" in (run / "report" / "report.md").read_text()
    assert outcome.html.is_file() and "Could you add more strokes?" in outcome.html.read_text()
    with pytest.raises(Exception, match="--vs compares MCQA runs"):
        write_report([run], tmp_path / "x", vs=run)


def test_summary_and_report_give_the_same_rates(tmp_path: Path) -> None:
    """summary.json (metrics.summarize) and report.json (report.measures) average the same
    episode scores (metrics.*_score), so that their numbers never differ."""
    from proactivebench.benchmark.metrics import episode_scores, summarize

    assert episode_scores(episode("ROD", 0, "asked")) == {"accuracy": 100.0, "ps_rate": 1.0}
    # Inspect's scale (adapters/inspect_task.py): a percentage on 0-1, a count as it is.
    asked = episode("ROD", 0, "asked")
    assert episode_scores(asked, fractions=True) == {"accuracy": 1.0, "ps_rate": 1.0}
    assert episode_scores(oeg_line(1, 0, 1), oeg=True, fractions=True)["cp"] == 1.0
    assert episode_scores(oeg_line(0, 1, 0), oeg=True) == {
        "ps": 100.0,
        "cp": 0.0,
        "aggregate": 100.0,
        "agreement": 100.0,
        "unparsed": 0.0,
    }
    # One vote agrees with itself: no agreement; a vote without a readable verdict: unparsed.
    single = oeg_line(0, 0, 0, judge_outputs=["sí"], judge_parsed=[False])
    assert episode_scores(single, oeg=True) == {
        "ps": 0.0,
        "cp": 0.0,
        "aggregate": 0.0,
        "unparsed": 100.0,
    }
    kinds = ["first", "asked", "abstained", "unreadable", "wrong", "error"]
    mcqa = [episode("ROD", i, k) for i, k in enumerate(kinds)]
    oeg = [
        oeg_line(0, 1, 0),
        oeg_line(1, 0, 1, judge_outputs=["1, 0"], judge_parsed=[False]),
        oeg_line(2, 0, 0, judge_agreement=2 / 3, judge_parsed=[True, False, True]),
    ]
    for name, lines, settings in (("mcqa", mcqa, {}), ("oeg", oeg, {"mode": "oeg"})):
        run = load_run(make_run(tmp_path, name, lines, settings=settings))
        summary = summarize(run.lines).as_dict()["scenarios"]
        measures = measure_run(run).scenarios
        for scenario, rates in summary.items():
            keys = [k for k in rates if k not in ("n", "errors", "unjudged")]
            assert keys and measures[scenario].n == rates["n"]
            for key in keys:
                assert measures[scenario].values[key].estimate == rates[key], (name, key)


def test_report_refuses_what_it_cannot_read(run: Path, tmp_path: Path, capsys) -> None:
    code, text = run_cli(["report", str(tmp_path / "nowhere")], capsys)
    assert code == 1 and "is not a run directory" in text
    code, text = run_cli(["report", str(run), str(run)], capsys)
    assert code == 1 and "several runs: say where the report goes with --out" in text
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "run.json").write_text("{}")
    code, text = run_cli(["report", str(tmp_path / "empty")], capsys)
    assert code == 1 and "has no results.jsonl yet" in text
    code, text = run_cli(["report", str(run), "--params", "m=lots"], capsys)
    assert code == 2 and "cannot read a parameter count from 'lots'" in text


def test_two_runs_of_one_model_get_distinct_labels(tmp_path: Path) -> None:
    lines = [episode("QD", 0, "first")]
    first = make_run(tmp_path, "plain", lines)
    hint = make_run(tmp_path, "hint", lines, settings={"hint": True, "history": True})
    again = make_run(tmp_path, "again", lines)
    write_report([first, hint, again], tmp_path / "out")
    labels = [
        r["label"] for r in json.loads((tmp_path / "out" / "report.json").read_text())["runs"]
    ]
    assert labels == ["m (plain)", "m +hint +history", "m (again)"]


def test_terminal_table_shows_dashes_and_what_the_average_covers(run: Path) -> None:
    from rich.console import Console

    from proactivebench.benchmark.metrics import summarize
    from proactivebench.cli.output import summary_table

    summary = summarize(load_run(run).lines, model="m")
    assert summary.scenarios["VSOD"].accuracy is None and summary.covered == ["ROD"]
    assert summary.as_dict()["scenarios"]["VSOD"] == {"n": 0, "errors": 2}
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(summary_table(summary))
    text = console.export_text()
    vsod = next(x for x in text.splitlines() if "VSOD" in x)
    assert "—" in vsod and "0.0" not in vsod
    assert "average of 1 (ROD; no VSOD)" in text


def test_eval_warns_when_answers_are_unreadable(tmp_path: Path, capsys) -> None:
    data = full_dataset(tmp_path / "data")
    agent = tmp_path / "agent.py"
    agent.write_text("def answer(messages, observation):\n    return '**The answer is (B)**'\n")
    for extra in ((), ("--no-report",)):
        out = tmp_path / f"run{len(extra)}"
        code, text = run_cli(
            [
                "eval",
                "--data",
                str(data),
                "--model",
                f"python:{agent}:answer",
                "--out",
                str(out),
                *extra,
            ],
            capsys,
        )
        assert code == 0
        assert "warning: answers that designate no shown option (protocol §4) pass 10 %" in text
        assert "ROD (100.0 %)" in text and "--answer-extraction lenient" in text
        # A rerun (nothing played, the report up to date) warns the same, twice over: the
        # first rerun works the warnings out, the second tells them from the run's notes.
        args = ["eval", "--data", str(data), "--model", f"python:{agent}:answer"]
        for _ in range(2):
            code, again = run_cli([*args, "--out", str(out), *extra], capsys)
            assert code == 0 and "already done" in again, again
            assert "ROD (100.0 %)" in again and "--answer-extraction lenient" in again
            # The table, intervals included, told again from the notes.
            rows = [x for x in again.splitlines() if x.startswith("│ ")]
            assert rows and rows == [x for x in text.splitlines() if x.startswith("│ ")]
            assert "±" in rows[0]


def test_show_and_the_viewer_name_the_rule_behind_a_surprising_verdict(
    tmp_path: Path, capsys
) -> None:
    # A model that answers the hand-made ROD record's answer key at once: on ROD's first turn
    # even that is wrong (protocol §5), which the transcript and the viewer must say.
    data = full_dataset(tmp_path / "data")
    model = tmp_path / "answers_cup.py"
    model.write_text("def answer(messages, observation):\n    return 'cup'\n")
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", f"python:{model}:answer", "--out", str(run)]
    assert run_cli([*args, "--scenarios", "ROD"], capsys)[0] == 0
    line = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    assert line["correct_category"] == "cup"
    first = line["trace"][0]
    rule = "ROD accepts no category on the first turn, even the right one"
    assert first["verdict"] == "wrong" and rule in first["reason"]
    code, text = run_cli(["show", str(run), "ROD", str(line["sample_id"])], capsys)
    assert code == 0 and f"verdict: wrong · {rule}" in text
    assert rule in (run / "report" / "report.html").read_text()


def test_terminal_tables_give_the_half_width_of_the_95_interval(tmp_path: Path, capsys) -> None:
    """Accuracy, a proportion, has Wilson's interval (z = 1.959964, z^2 = 3.841459): QD, 1 of
    2 right: (0.5 + z^2/4 ± z sqrt(1/8 + z^2/16)) / (1 + z^2/2) = [0.0945, 0.9055], ± 40.5;
    ROD, 2 of 2: [1 / (1 + z^2/2), 1] = [0.3424, 1], ± 32.9 (not a certain ± 0.0). The
    average, 75.0, at Kish's effective size 2^2 / (1/2 + 1/2) = 4 outcomes, 3 of 4:
    [0.3006, 0.9544], ± 32.7. The ps rate, a mean of counts, keeps the percentile bootstrap:
    QD's two episodes, 1 and 0 suggestions, resample to 0, 0.5 or 1 (1/4, 1/2, 1/4), so the
    2.5th and 97.5th percentiles of 2000 resamples are 0 and 1: ± 0.50; ROD's are all 0."""
    from rich.console import Console

    from proactivebench.benchmark.metrics import summarize
    from proactivebench.cli.output import summary_table

    lines = [episode("QD", 0, "asked"), episode("QD", 1, "wrong")]
    lines += [episode("ROD", 2, "first"), episode("ROD", 3, "first")]
    run = make_run(tmp_path, "run", lines)
    expected = {
        "QD": "50.0 ± 40.5 │ 0.50 ± 0.50",
        "ROD": "100.0 ± 32.9 │ 0.00 ± 0.00",
        "average": "75.0 ± 32.7 │ 0.25 ± 0.25",
    }
    console = Console(width=200, record=True, file=io.StringIO())
    loaded = load_run(run)
    intervals = intervals_of(measure_run(loaded))
    console.print(summary_table(summarize(loaded.lines, "m"), intervals=intervals))
    eval_text = console.export_text()
    code, report_text = run_cli(["report", str(run)], capsys)
    assert code == 0
    for text in (eval_text, report_text):  # eval's table, and report's run table
        for scenario, cells in expected.items():
            row = next(x for x in text.splitlines() if x.startswith(f"│ {scenario} "))
            assert cells in row, (scenario, row)
        assert "±: half the width of the 95 % interval (Wilson's for a %" in text
    # Differences to a --vs run keep their bounds: whether they hold 0 is their point (a copy
    # of the run: the run itself is not compared with itself).
    import shutil

    twin = Path(shutil.copytree(run, tmp_path / "twin"))
    code, text = run_cli(
        ["report", str(run), "--vs", str(twin), "--out", str(tmp_path / "v")], capsys
    )
    assert code == 0 and "+0.0 [0.0, 0.0]" not in text and "0.0 [0.0, 0.0] p=1" in text


def test_no_success_in_four_episodes_is_not_a_certain_zero(tmp_path: Path, capsys) -> None:
    """Issue 47: 4 wrong episodes printed [0.0, 0.0]. Wilson's interval of 0 of 4 at
    z = 1.959964 is [0, z^2 / (4 + z^2)] = [0, 3.8415 / 7.8415] = [0, 48.99] %, ± 24.5 in the
    terminal; the average of this one scenario is the same (Kish: 1 / (1/4) = 4 outcomes)."""
    run = make_run(tmp_path, "run", [episode("QD", i, "wrong") for i in range(4)])
    code, text = run_cli(["report", str(run)], capsys)
    assert code == 0
    report = json.loads((run / "report" / "report.json").read_text())
    [measured] = report["runs"]
    for found in (measured["scenarios"]["QD"]["accuracy"], measured["average"]["accuracy"]):
        assert found == {"value": 0.0, "low": 0.0, "high": pytest.approx(48.99, abs=0.005)}
    row = next(x for x in text.splitlines() if x.startswith("│ QD "))
    assert "0.0 ± 24.5" in row
    assert "Wilson" in report["intervals"] and measured["scenarios"]["QD"]["n"] == 4


def test_intervals_remembered_by_an_earlier_method_are_drawn_again(tmp_path: Path, capsys) -> None:
    """A finished run's note keeps its intervals for `eval --no-report` to tell again: those
    an earlier version remembered (bootstrap, no `interval_methods`) are not told as today's."""
    from proactivebench.data.synth import generate
    from proactivebench.report.measures import run_warnings_and_intervals

    data = tmp_path / "data"
    generate(data, per_scenario=4, seed=0)
    out = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", "baseline:random", "--out", str(out)]
    assert run_cli([*args, "--no-report", "--no-cache"], capsys)[0] == 0
    today = intervals_of(measure_run(load_run(out)))
    assert run_warnings_and_intervals(out)[1] == today
    note_path = out / ".finished.json"
    note = json.loads(note_path.read_text())
    assert note["outcome"]["intervals"] == today
    note["outcome"].pop("interval_methods")
    note["outcome"]["intervals"] = {k: {"accuracy": [0.0, 0.0]} for k in today}
    note_path.write_text(json.dumps(note))
    assert run_warnings_and_intervals(out)[1] == today


def test_eval_prints_the_reports_intervals(tmp_path: Path, capsys) -> None:
    """The ± that eval prints, with or without the report, is the report's own interval."""
    from proactivebench.data.synth import generate

    data = tmp_path / "data"
    generate(data, per_scenario=4, seed=0)
    for extra in ((), ("--no-report",)):
        out = tmp_path / f"run{len(extra)}"
        args = ["eval", "--data", str(data), "--model", "baseline:random", "--out", str(out)]
        code, text = run_cli([*args, *extra, "--no-cache"], capsys)
        assert code == 0
        write_report([out], tmp_path / f"report{len(extra)}")
        average = json.loads((tmp_path / f"report{len(extra)}" / "report.json").read_text())
        accuracy = average["runs"][0]["average"]["accuracy"]
        half = (accuracy["high"] - accuracy["low"]) / 2
        row = next(x for x in text.splitlines() if x.startswith("│ average"))
        assert half > 0 and f"{accuracy['value']:.1f} ± {half:.1f}" in row


# ----- plots -------------------------------------------------------------------------------------


def measured(tmp_path: Path, runs: dict[str, list[dict[str, Any]]], **params: float) -> list[Any]:
    """RunMeasures of hand-made runs (directory = model name), with parameter counts."""
    from proactivebench.report.runs import load_runs

    dirs = [make_run(tmp_path, name, lines, model=name) for name, lines in runs.items()]
    return [measure_run(r, n_resamples=50) for r in load_runs(dirs, params)]


def every_scenario(kind: str, correct: int = 1) -> list[dict[str, Any]]:
    """One episode of `kind` per scenario, the first `correct` of them `first` (right)."""
    from proactivebench.benchmark.registry import paper_scenarios

    return [
        episode(s, i, "first" if i < correct else kind) for i, s in enumerate(paper_scenarios())
    ]


def texts_of(figure: Any) -> str:
    """Every text a figure shows: titles, notes, annotations, legends."""
    from matplotlib.text import Text

    return "\n".join(t.get_text() for t in figure.findobj(Text))


def test_size_plot_says_why_rho_is_missing() -> None:
    from proactivebench.report.plots import rho_text

    assert rho_text([1, 7, 70], [10.0, 20.0, 30.0], "ps rate") == "Spearman ρ = +1.00"
    assert rho_text([1, 7], [10.0, 20.0], "ps rate") == (
        "Spearman ρ = n/a: needs 3 runs with a size, has 2"
    )
    assert rho_text([7, 7, 7, 7, 7], [1.0, 2.0, 3.0, 4.0, 5.0], "ps rate") == (
        "Spearman ρ = n/a: every run has the same size (7B)"
    )
    assert rho_text([1, 7, 70], [0.0, 0.0, 0.0], "ps rate") == (
        "Spearman ρ = n/a: every run has the same ps rate (0)"
    )


def test_size_plot_titles_name_the_cause_and_the_runs_left_out(tmp_path: Path) -> None:
    from proactivebench.report.plots import size_figure

    runs = {
        "a": every_scenario("wrong", correct=1),
        "b": every_scenario("wrong", correct=3),
        "c": every_scenario("wrong", correct=5),
        "unsized": every_scenario("wrong"),
    }
    # Three sized runs of one size: rho has no ranking of sizes.
    figure = size_figure(measured(tmp_path / "tied", runs, a=7, b=7, c=7))
    assert figure is not None
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == [
        "ps rate vs size\nSpearman ρ = n/a: every run has the same size (7B)",
        "accuracy % vs size\nSpearman ρ = n/a: every run has the same size (7B)",
    ]
    shown = texts_of(figure)
    assert "no parameter count (give one with --params NAME=7B): unsized" in shown
    # Three sizes; nobody asks: the ps rate is constant, accuracy ranks with size.
    figure = size_figure(measured(tmp_path / "sizes", runs, a=1, b=7, c=70))
    assert figure is not None
    assert [ax.get_title().split("\n")[1] for ax in figure.axes] == [
        "Spearman ρ = n/a: every run has the same ps rate (0)",
        "Spearman ρ = +1.00",
    ]
    # Two sized runs: too few.
    figure = size_figure(measured(tmp_path / "two", runs, a=1, b=7))
    assert figure is not None
    assert figure.axes[0].get_title().endswith("needs 3 runs with a size, has 2")
    assert "no parameter count (give one with --params NAME=7B): c, unsized" in texts_of(figure)
    # Runs at one place share a label.
    same = {"x": every_scenario("wrong"), "y": every_scenario("wrong"), "z": runs["c"]}
    figure = size_figure(measured(tmp_path / "same", same, x=7, y=7, z=70))
    assert figure is not None and "x = y" in texts_of(figure)


def test_scatter_names_every_scenario_and_shows_identical_runs(tmp_path: Path) -> None:
    from matplotlib.collections import PathCollection

    from proactivebench.benchmark.registry import paper_scenarios
    from proactivebench.report.plots import accuracy_vs_ps_figure, describe

    # a and b: identical (ROD and VSOD right at once, the others right after one suggestion);
    # c: all wrong at once.
    runs = {"a": every_scenario("asked", 2), "b": every_scenario("asked", 2)}
    runs["c"] = every_scenario("wrong", 0)
    all_measures = measured(tmp_path, runs)
    figure = accuracy_vs_ps_figure(all_measures)
    ax = figure.axes[0]
    legend_texts = [
        t.get_text() for legend in (*figure.legends, ax.get_legend()) for t in legend.get_texts()
    ]
    assert sorted(legend_texts) == sorted([*paper_scenarios(), "a", "b", "c"])
    shown = texts_of(figure)
    assert "Identical results: a = b." in shown and "set side by side" in shown
    # The marks at 100 %: a's and b's ROD and VSOD at ps rate 0 (four marks, two shapes), their
    # five other scenarios at 1 (ten marks): each group set side by side, 1.5 % of the x span
    # (1) apart, centred on the true x, so that no mark hides another, of its scenario or of
    # another (issue 47: a run's ROD and VSOD at one point showed one mark).
    marks = [c for c in ax.collections if isinstance(c, PathCollection)]
    at_100 = sorted(float(x) for c in marks for x, y in c.get_offsets() if y == 100.0)
    expected = [(r - 1.5) * 0.015 for r in range(4)] + [1 + (r - 4.5) * 0.015 for r in range(10)]
    assert at_100 == pytest.approx(expected)
    alt = describe("accuracy_vs_ps", all_measures)
    assert all(scenario in alt for scenario in paper_scenarios())


def test_scatter_legend_names_only_the_runs_it_shows(tmp_path: Path) -> None:
    """A run with no mark in the scatter (every episode failed; or an open-ended run among
    multiple-choice ones) is not in its legend, as if drawn: a note names it."""
    from matplotlib.colors import to_hex

    from proactivebench.benchmark.registry import paper_scenarios
    from proactivebench.report.plots import accuracy_vs_ps_figure

    # The undrawn run first: each legend entry keeps its own run's colour, not the colour of
    # its place among the drawn runs (the same while the undrawn run came last).
    runs = {"failed": [episode(s, i, "error") for i, s in enumerate(paper_scenarios())]}
    runs |= {"a": every_scenario("asked", 2), "b": every_scenario("wrong", 5)}
    figure = accuracy_vs_ps_figure(measured(tmp_path, runs))
    (runs_legend,) = figure.legends
    assert [t.get_text() for t in runs_legend.get_texts()] == ["a", "b"]
    assert "Not in this plot (no value on these axes): failed." in texts_of(figure)
    legend = [to_hex(h.get_color()) for h in runs_legend.legend_handles]
    # Each run's average is one large mark (an errorbar's line): its colour is the legend's.
    (ax,) = [a for a in figure.axes if a.lines]
    averages = [to_hex(line.get_color()) for line in ax.lines if line.get_marker() == "o"]
    assert averages == legend and len(set(legend)) == 2


def test_bar_plot_legend_stays_inside_the_figure(tmp_path: Path) -> None:
    from proactivebench.report.plots import scenario_bars_figure

    name = "openai:Qwen/Qwen2.5-VL-72B-Instruct-AWQ@http://gpu-node-17.cluster.internal:8000/v1"
    runs = {f"{name}-{i}": every_scenario("wrong", i) for i in range(6)}
    figure = scenario_bars_figure(measured(tmp_path, runs))
    renderer = figure.canvas.get_renderer()
    inside = figure.bbox
    (legend,) = figure.legends
    box = legend.get_window_extent(renderer)
    assert len(legend.get_texts()) == 6
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and box.y1 <= inside.y1
    top_of_plots = max(ax.get_window_extent(renderer).y1 for ax in figure.axes)
    assert box.y0 >= top_of_plots  # above the plots, over no bar


#: Characters that reorder, hide or break what a terminal shows: a bidi override, isolates,
#: a zero-width space, the line and paragraph separators, a byte order mark.
HIDDEN = "\u202e\u2066\u2069\u200b\u2028\u2029\ufeff"


def shows_none_raw(text: str) -> bool:
    """No character of Unicode's format (Cf) or separator (Zl, Zp) categories in `text`."""
    return not any(unicodedata.category(c) in ("Cf", "Zl", "Zp") for c in text)


def test_show_makes_bidi_and_zero_width_characters_visible(tmp_path: Path, capsys) -> None:
    line = episode("ROD", 0, "wrong")
    line["trace"][0]["answer"] = "B\u202eA"
    line["trace"][0]["prompt"] = "Which\u200b one?\u2028Pick."
    line["correct_category"] = "cup\u2066x\u2069"
    run = make_run(tmp_path, f"run{HIDDEN}", [line])
    code, text = run_cli(["show", str(run), "ROD", "0"], capsys)
    assert code == 0 and shows_none_raw(text)
    assert "B\\u202eA" in text and "Which\\u200b one?\\u2028Pick." in text
    assert "cup\\u2066x\\u2069" in text
    # A file name from outside, in an error message.
    code, text = run_cli(["show", str(tmp_path / f"gone{HIDDEN}"), "ROD", "0"], capsys)
    assert code != 0 and shows_none_raw(text) and "gone\\u202e\\u2066" in text


def test_eval_table_and_errors_show_hidden_characters_escaped(tmp_path: Path, capsys) -> None:
    data = full_dataset(tmp_path / "data")
    agent = tmp_path / f"agent{HIDDEN}.py"
    agent.write_text(
        f"def answer(messages, observation):\n    raise ValueError({'no' + HIDDEN + 'idea'!r})\n"
    )
    args = eval_args(data, tmp_path / f"out{HIDDEN}", "--no-report", "--no-cache")
    args[args.index("baseline:oracle")] = f"python:{agent}:answer"
    code, text = run_cli(args, capsys)
    escaped = "\\u202e\\u2066\\u2069\\u200b\\u2028\\u2029\\ufeff"
    assert code == 3 and shows_none_raw(text)
    assert f"agent{escaped}.py" in text  # the model's name: the table's title, the progress
    assert f"ValueError: no{escaped}idea" in text  # the most common error, and the warning
    assert f"out{escaped}" in text  # where the results are
    # A usage error quoting the user's value (click's own message).
    code, text = run_cli(["eval", "--data", str(data), "--max-tokens", f"9{HIDDEN}"], capsys)
    assert code == 2 and shows_none_raw(text) and "9\\u202e" in text


def test_size_rho_counts_each_model_once_by_its_plain_run(tmp_path: Path) -> None:
    """A `+hint` run of the 1B model (given first, most accurate) is no fourth point: by the
    three plain runs accuracy rises with size (rho = +1); with the hint run as a point it would
    not (ranks 1.5, 1.5, 3, 4 against 4, 1, 2, 3)."""
    from proactivebench.report.plots import size_figure
    from proactivebench.report.runs import load_runs

    def qd(correct: int) -> list[dict[str, Any]]:
        return [episode("QD", s, "first" if s < correct else "wrong") for s in range(8)]

    runs = [make_run(tmp_path, "hint", qd(7), model="org/Tiny-1B", settings={"hint": True})]
    for name, model, correct in (("r1", "org/Tiny-1B", 2), ("r7", "org/Mid-7B", 4)):
        runs.append(make_run(tmp_path, name, qd(correct), model=model))
    runs.append(make_run(tmp_path, "r70", qd(6), model="org/Big-70B"))
    write_report(runs, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["size_correlation"]["runs"] == 3
    assert data["size_correlation"]["accuracy"] == pytest.approx(1.0)
    figure = size_figure([measure_run(r, n_resamples=50) for r in load_runs(runs)])
    assert figure is not None
    assert figure.axes[1].get_title().endswith("Spearman ρ = +1.00")
    assert "one point per model (its plain-setting run): org/Tiny-1B +hint" in texts_of(figure)


def test_vs_does_not_compare_the_reference_with_itself(tmp_path: Path) -> None:
    base = [episode("QD", i, "first" if i < 3 else "wrong") for i in range(6)]
    better = [episode("QD", i, "first" if i < 5 else "wrong") for i in range(6)]
    base_dir = make_run(tmp_path, "base", base, model="base")
    run_dir = make_run(tmp_path, "better", better, model="better")
    write_report([base_dir, run_dir], tmp_path / "out", vs=base_dir)
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [c["run"] for c in data["comparisons"]] == ["better"]
    assert f"--vs {base_dir}: not compared with itself" in data["notes"]
    vs_table = (tmp_path / "out" / "tables" / "vs-accuracy.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in vs_table[1:]] == ["better"]


def test_a_report_of_baselines_says_nothing_of_the_size_plot(tmp_path: Path) -> None:
    """Baselines have no size: no notice of a size plot they could never have; runs of
    models without a size still get it (it says how to give one)."""
    lines = every_scenario("wrong")
    one = make_run(tmp_path / "b", "oracle", lines, model="baseline:oracle")
    two = make_run(tmp_path / "b", "random", lines, model="baseline:random")
    outcome = write_report([one, two], tmp_path / "b" / "out")
    assert not any("size plot" in n for n in outcome.notes), outcome.notes
    assert "size plot" not in (tmp_path / "b" / "out" / "report.html").read_text()
    # People (`play`'s runs) have no size either: annotators and baselines, told nothing.
    alice = make_run(tmp_path / "h", "alice", lines, model="human:alice")
    outcome = write_report([alice, one], tmp_path / "h" / "out")
    assert not any("size plot" in n for n in outcome.notes), outcome.notes
    one = make_run(tmp_path / "m", "a", lines, model="org/a")
    two = make_run(tmp_path / "m", "b", lines, model="org/b")
    outcome = write_report([one, two], tmp_path / "m" / "out")
    assert any(n.startswith("size plot skipped") for n in outcome.notes)
    outcome = write_report([alice, one, two], tmp_path / "m" / "out2")
    assert any(n.startswith("size plot skipped") for n in outcome.notes)
    # Runs of one model (a suite's experiments: plain, hint...) are one point: nothing said.
    hint = make_run(tmp_path / "m", "a-hint", lines, model="org/a", settings={"hint": True})
    outcome = write_report([one, hint], tmp_path / "m" / "out3")
    assert not any("size plot" in n for n in outcome.notes), outcome.notes


def test_every_run_of_a_papers_report_has_a_colour_of_its_own(tmp_path: Path) -> None:
    """`paper` makes eleven runs; the plots coloured runs from a cycle of ten, so the eleventh
    (oeg-multiturn) took the first's colour (mcqa) in the scatter and the bars. Each run's
    colour is its own, at eleven and at more than twenty runs."""
    from matplotlib.colors import to_hex

    from proactivebench.report.plots import accuracy_vs_ps_figure, run_colours, scenario_bars_figure

    for count in (1, 2, 10, 11, 20, 25):
        colours = [to_hex(c) for c in run_colours(count)]
        assert len(colours) == count and len(set(colours)) == count, count
    runs = {f"r{i:02d}": every_scenario("wrong", i % 7) for i in range(11)}
    all_measures = measured(tmp_path, runs)

    def legend_colours(figure: Any, colour_of: str) -> dict[str, str]:
        """Each legend entry's text and its mark's colour (`colour_of`: the handle's getter)."""
        return {
            text.get_text(): to_hex(getattr(handle, colour_of)())
            for legend in figure.legends
            for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True)
        }

    handles = legend_colours(accuracy_vs_ps_figure(all_measures), "get_color")
    assert len({handles[name] for name in runs}) == 11
    bar_colours = legend_colours(scenario_bars_figure(all_measures), "get_facecolor")
    assert len({bar_colours[name] for name in runs}) == 11


def test_warnings_stand_at_the_top_of_report_html_and_md(tmp_path: Path, capsys) -> None:
    """What eval warns in the terminal (here: every answer designates no option, and a line
    of results.jsonl no count holds) stands at the top of report.html and report.md, before
    any table (issue 45, item 5: report.html showed none, report.md only at its end)."""
    data = full_dataset(tmp_path / "data")
    agent = tmp_path / "agent.py"
    agent.write_text("def answer(messages, observation):\n    return '**The answer is (B)**'\n")
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", f"python:{agent}:answer", "--out", str(run)]
    code, text = run_cli([*args, "--no-report"], capsys)
    assert code == 0 and "designate no shown option" in text
    with (run / "results.jsonl").open("a") as f:
        f.write('{"not": "a result line"}\n')  # left out of every count: warned
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "rep")], capsys)
    assert code == 0, text
    told = [x.removeprefix("warning: ") for x in text.splitlines() if x.startswith("warning: ")]
    assert len(told) == 2 and "results.jsonl:" in told[0] and "designate no shown" in told[1]
    markdown = (tmp_path / "rep" / "report.md").read_text()
    top = markdown.split("## Warnings\n")[1].split("\n## ")[0]
    assert markdown.index("## Warnings") < markdown.index("## Tables")
    assert "results.jsonl:" in top and "designate no shown option" in top
    assert markdown.count("designate no shown option") == 1  # at the top, not again below
    page = (tmp_path / "rep" / "report.html").read_text()
    header = page.split("<header>")[1].split("</header>")[0]
    warned = re.findall(r'<p class="warning" role="alert">(.*?)</p>', header)
    assert len(warned) == 2 and "designate no shown option" in warned[1]
    assert "results.jsonl:" in warned[0]


def test_a_vs_report_names_its_reference_and_the_paired_samples_at_its_head(
    tmp_path: Path,
) -> None:
    """Issue 47, item 3: the head of a `--vs` report names the reference run and how many
    samples each run shares with it per scenario (the Δ tables' pairs). By hand: the runs
    play samples 0-3 of ROD and 0-1 of QD; the reference 1-3 of ROD (and 5, which no run
    plays) and 0-1 of QD; so 3 ROD pairs and 2 QD pairs, for each of the two runs."""
    base_lines = [episode("ROD", s, "first") for s in (1, 2, 3, 5)]
    base_lines += [episode("QD", s, "wrong") for s in (0, 1)]
    base = make_run(tmp_path, "reference", base_lines, model="the-reference-model")
    mine = [episode("ROD", s, "first") for s in range(4)]
    mine += [episode("QD", s, "first") for s in range(2)]
    runs = [make_run(tmp_path, name, mine, model=name) for name in ("a", "b")]
    write_report(runs, tmp_path / "out", vs=base, thumb_cache=None, n_resamples=100)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    head = page.split("<header>")[1].split("</header>")[0]
    text = " ".join(re.sub(r"<[^>]+>", " ", head).split())
    assert f"Compared with (--vs): the-reference-model (--vs) {base}" in text, text
    assert "Paired samples (scored by both runs) per scenario: ROD 3 · QD 2 (a, b)" in text
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    shared = {
        c["run"]: {s: v["shared"] for s, v in c["scenarios"].items()} for c in data["comparisons"]
    }
    assert shared == {"a": {"ROD": 3, "QD": 2}, "b": {"ROD": 3, "QD": 2}}


def test_bar_plot_legend_names_only_the_runs_it_draws_in_their_colours(tmp_path: Path) -> None:
    """Issue 47, item 4: an open-ended run among multiple-choice ones has no accuracy and no
    ps rate, so no bar; it was in the legend all the same (in the first run's colour). The
    legend names the two drawn runs, each entry in the colour of that run's bars; a note names
    the undrawn one; the drawn runs share the places beside each scenario."""
    from matplotlib.colors import to_hex
    from matplotlib.patches import Rectangle

    from paperruns import oeg_line
    from proactivebench.report.plots import run_colours, scenario_bars_figure

    runs = {"open": [oeg_line(s, i, True, False, True) for i, s in enumerate(("ROD", "QD"))]}
    runs |= {"a": every_scenario("asked", 2), "b": every_scenario("wrong", 5)}
    all_measures = measured(tmp_path, runs)
    assert all_measures[0].run.oeg and not all_measures[1].run.oeg
    figure = scenario_bars_figure(all_measures)
    (legend,) = figure.legends
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b"]
    entries = [to_hex(h.get_facecolor()) for h in legend.legend_handles]
    # The runs keep the colours of their place among all runs (a: C1, b: C2), as elsewhere.
    assert entries == [to_hex(c) for c in run_colours(3)[1:]]
    top = figure.axes[0]
    bars = [p for p in top.patches if isinstance(p, Rectangle)]
    by_colour: dict[str, list[float]] = {}
    for bar in bars:
        by_colour.setdefault(to_hex(bar.get_facecolor()), []).append(bar.get_x())
    assert sorted(by_colour) == sorted(entries)
    # Two runs, two places per scenario (width 0.4 each): a left of the tick, b right of it.
    assert min(by_colour[entries[0]]) == pytest.approx(-0.4)
    assert min(by_colour[entries[1]]) == pytest.approx(0.0)
    assert "Not in this plot (no value on these axes): open." in texts_of(figure)


def test_the_default_title_names_three_runs_and_counts_the_others() -> None:
    """A title of every label (23 runs) filled the first screen before any number."""
    from proactivebench.report.build import default_title

    assert default_title(["a", "b"]) == "Report: a, b"
    assert default_title(["a", "b", "c"]) == "Report: a, b, c"
    assert default_title([str(i) for i in range(23)]) == "Report: 0, 1, 2 and 20 more"
