"""`report --paper`: the paper's published rows beside a user's runs (issue 32, items 1, 4).

Every expected number here is read from paper_results.json or worked out by hand; the
acceptance test rebuilds published rows from the paper's own counts."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from clirun import run_cli
from paperruns import episodes_per_scenario, lines_for_row, mcqa_line, sample_ids, write_run
from proactivebench.benchmark.metrics import metric
from proactivebench.benchmark.paper_results import (
    FIGURE_SUBSETS,
    figure_mean,
    figure_models,
    paper_model_named,
    paper_models,
    paper_results,
    paper_table,
    recognise_model,
)
from proactivebench.core.stats import Interval
from proactivebench.report import write_report
from proactivebench.report.published import inside, rank
from proactivebench.run.selection_record import id_ranges

#: Realistic model specs (Hub ids, served or loaded) for each of the paper's 22 models.
HUB_IDS = {
    "hf:llava-hf/llava-1.5-7b-hf": "LLaVA-1.5 7B",
    "openai:llava-hf/llava-v1.6-mistral-7b-hf@http://gpu:8000/v1": "LLaVA-NeXT Mistral-7B",
    "hf:llava-hf/llava-v1.6-vicuna-7b-hf": "LLaVA-NeXT Vicuna-7B",
    "hf:llava-hf/llava-onevision-qwen2-0.5b-ov-hf": "LLaVA-OV 0.5B",
    "openai:lmms-lab/llava-onevision-qwen2-7b-ov@http://localhost:8000/v1": "LLaVA-OV 7B",
    "hf:llava-hf/llava-onevision-qwen2-72b-ov-hf": "LLaVA-OV 72B",
    "hf:HuggingFaceTB/SmolVLM2-2.2B-Instruct": "SmolVLM2 2.2B",
    "hf:HuggingFaceM4/Idefics3-8B-Llama3": "Idefics3 8B",
    "hf:Salesforce/instructblip-vicuna-7b": "InstructBLIP 7B",
    "hf:Qwen/Qwen2.5-VL-3B-Instruct": "Qwen-2.5-VL 3B",
    "openai:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:8000/v1": "Qwen-2.5-VL 7B",
    "hf:Qwen/Qwen2.5-VL-32B-Instruct": "Qwen-2.5-VL 32B",
    "openai:Qwen/Qwen2.5-VL-72B-Instruct-AWQ@http://h:1/v1": "Qwen-2.5-VL 72B",
    "hf:OpenGVLab/InternVL3-1B": "InternVL3 1B",
    "hf:OpenGVLab/InternVL3-2B-hf": "InternVL3 2B",
    "hf:OpenGVLab/InternVL3-8B": "InternVL3 8B",
    "openai:OpenGVLab/InternVL3-38B@http://h:1/v1": "InternVL3 38B",
    "hf:OpenGVLab/InternVL3-78B": "InternVL3 78B",
    "hf:microsoft/Phi-4-multimodal-instruct": "Phi-4-Multimodal 6B",
    "openai:o4-mini": "o4-mini",
    "openai:gpt-4.1-2025-04-14": "GPT-4.1",
    "openai:gpt-5.2": "GPT-5.2",
}
#: Neighbours of the paper's models that are none of them (another size, version or variant),
#: and names that say nothing.
NOT_PAPER_MODELS = [
    "hf:OpenGVLab/InternVL3_5-8B",
    "hf:OpenGVLab/InternVL3-14B",
    "hf:Qwen/Qwen2-VL-7B-Instruct",
    "hf:liuhaotian/llava-v1.5-13b",
    "hf:llava-hf/llava-v1.6-34b-hf",
    "openai:gpt-4.1-mini",
    "openai:gpt-4o",
    "hf:HuggingFaceTB/SmolVLM2-500M-Video-Instruct",
    "fake",
    "baseline:oracle",
    # Names two models at once: LLaVA-OV and Qwen2.5-VL, both 7B.
    "hf:someone/llava-onevision-qwen2.5-vl-7b",
]


def test_the_22_models_with_family_and_size() -> None:
    models = paper_models()
    assert len(models) == 22
    sizes = {m.name: m.params_b for m in models}
    assert sizes["SmolVLM2 2.2B"] == 2.2 and sizes["LLaVA-OV 0.5B"] == 0.5
    assert [m.name for m in models if m.api] == ["o4-mini", "GPT-4.1", "GPT-5.2"]
    assert all(sizes[m.name] is None for m in models if m.api)


def test_every_paper_model_is_recognised_from_its_hub_id() -> None:
    assert sorted(HUB_IDS.values()) == sorted(m.name for m in paper_models())
    found = {spec: getattr(recognise_model(spec), "name", None) for spec in HUB_IDS}
    assert found == HUB_IDS


@pytest.mark.parametrize("spec", NOT_PAPER_MODELS)
def test_a_spec_of_no_or_two_paper_models_matches_none(spec: str) -> None:
    assert recognise_model(spec) is None


def test_paper_model_named_takes_the_paper_s_spellings() -> None:
    assert paper_model_named("Qwen2.5-VL-7B").name == "Qwen-2.5-VL 7B"
    assert paper_model_named("qwen-2.5-vl 7b").name == "Qwen-2.5-VL 7B"
    assert paper_model_named("Phi-4-Multimodal").name == "Phi-4-Multimodal 6B"


# ----- figure averages ----------------------------------------------------------------------

#: (figure, its row's config, the table averaged, the paper's metric): each printed figure
#: value is that table's column mean over the figure's models (PAPER_AUDIT.md §2).
FIGURE_SOURCES = [
    ("fig3_reference_vs_benchmark", "reference", "table6_oracle", "acc"),
    ("fig3_reference_vs_benchmark", "ProactiveBench", "table1_mcqa", "acc"),
    ("fig6_hint", "(a) MCQA acc, hint", "table7_hint", "acc"),
    ("fig6_hint", "(a) MCQA acc, zero-shot", "table1_mcqa", "acc"),
    ("fig6_hint", "(b) MCQA psr, hint", "table7_hint", "psr"),
    ("fig6_hint", "(c) OEG ps, hint", "table9_oeg_hint", "ps"),
    ("fig6_hint", "(c) OEG ps, zero-shot", "table2_oeg", "ps"),
    ("fig8_history", "(a) acc, zero-shot", "table1_mcqa", "acc"),
    ("fig8_history", "(b) psr, zero-shot", "table1_mcqa", "psr"),
    ("fig9_icl", "(a) 1 sample, zero-shot", "table1_mcqa", "acc"),
    ("fig9_icl", "(a) 1 sample, zero-shot", "table1_mcqa", "psr"),
]


def _printed(figure: str, config: str, metric_key: str) -> dict[str, float]:
    row = next(r for r in paper_table(figure)["rows"] if r["config"] == config)
    return {
        column: cells[metric_key]
        for column, cells in row["cells"].items()
        if cells.get(metric_key) is not None and column != "avg"
    }


@pytest.mark.parametrize(("figure", "config", "table", "key"), FIGURE_SOURCES)
def test_figure_subsets_reproduce_the_printed_values(
    figure: str, config: str, table: str, key: str
) -> None:
    printed = _printed(figure, config, key)
    assert printed
    for column, value in printed.items():
        # The figure rounds the true mean to one decimal, and the table's cells are rounded
        # too: the mean of printed cells is within 0.05 + 0.05 of the printed figure value.
        assert abs(figure_mean(figure, table, column, key) - value) <= 0.1, column


def test_fig11_post_filtering_multi_turn_accuracy_is_the_fig3_mean() -> None:
    row = paper_table("fig11_filtering_accuracy")["rows"][0]["cells"]
    for column in ("ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT", "COCO"):
        mean = figure_mean("fig11_filtering_accuracy", "table1_mcqa", column, "acc")
        assert abs(mean - row[column]["multi_turn_post"]) <= 0.1


def test_the_subsets_matter() -> None:
    """Averaging every model instead misses printed values: the subsets are no decoration."""
    assert len(figure_models("fig3_reference_vs_benchmark", "table1_mcqa")) == 21
    assert len(figure_models("fig8_history", "table1_mcqa")) == 10
    assert FIGURE_SUBSETS["fig9_icl"] == FIGURE_SUBSETS["fig8_history"]
    rows = paper_table("table1_mcqa")["rows"]
    every = sum(r["cells"]["ROD"]["acc"] for r in rows) / len(rows)
    assert abs(every - 8.2) > 0.1  # Fig. 3 prints 8.2 for ROD
    assert abs(figure_mean("fig3_reference_vs_benchmark", "table1_mcqa", "ROD", "acc") - 8.2) < 0.1
    ten = figure_mean("fig8_history", "table1_mcqa", "ROD", "acc")
    assert abs(ten - 14.0) <= 0.1


# ----- rank and the interval check by hand -------------------------------------------------


def test_rank_by_the_metric_s_direction() -> None:
    assert rank(metric("accuracy"), 50.0, [61.4, 50.0, 44.3, 0.0]) == 2  # ties share place 2
    assert rank(metric("accuracy"), 70.0, [61.4, 50.0]) == 1
    # Unreadable answers: lower is better.
    assert rank(metric("unreadable"), 5.0, [1.0, 5.0, 10.0]) == 2


def test_the_paper_value_inside_or_outside_our_interval() -> None:
    ours = Interval(12.0, 10.0, 15.0)
    assert inside(12.5, ours) and inside(10.0, ours) and inside(15.0, ours)
    assert inside(15.05, ours)  # the paper rounds to one decimal
    assert not inside(15.2, ours) and not inside(9.9, ours)


def _made_up(root: Path) -> Path:
    """ROD: 1 of 2 right (50 %), VSOD: 0 of 1 (0 %): average 25 %; no suggestion."""
    rod, vsod = sample_ids("ROD", 2), sample_ids("VSOD", 1)
    lines = [mcqa_line("ROD", rod[0], True, 0), mcqa_line("ROD", rod[1], False, 0)]
    lines.append(mcqa_line("VSOD", vsod[0], False, 0))
    return write_run(root, "mine", lines, "openai:my-own-model@http://h:1/v1")


#: `_seven`'s right answers of 4 per scenario: 50, 0, then 25 % five times: average 25.0.
SEVEN_RIGHT = {"ROD": 2, "VSOD": 0, "MVP-N": 1, "IN-C": 1, "QD": 1, "CIT": 1, "COCO": 1}


def _seven(
    root: Path,
    name: str = "seven",
    model: str = "openai:my-own-model@http://h:1/v1",
    right: dict[str, int] | None = None,
) -> Path:
    """A run of the paper's seven scenarios, 4 episodes each, `right` of them right."""
    right = SEVEN_RIGHT if right is None else right
    lines = [
        mcqa_line(scenario, sample, i < right[scenario], 0)
        for scenario in SEVEN_RIGHT
        for i, sample in enumerate(sample_ids(scenario, 4))
    ]
    return write_run(root, name, lines, model)


def data_as_the_papers_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a few handmade records stand for the paper's test set, as far as a test of other
    things is concerned: a selection is then not measured against its 7,557 samples
    (`comparable.paper_test_counts`, tested on its own)."""
    monkeypatch.setattr("proactivebench.report.comparable.paper_test_counts", dict)


def _report(tmp_path: Path, *runs: Path, out: str = "rep", **options) -> dict:
    write_report(list(runs), tmp_path / out, n_resamples=200, thumb_cache=None, **options)
    return json.loads((tmp_path / out / "report.json").read_text())


def _csv(tmp_path: Path, key: str, out: str = "rep") -> list[dict[str, str]]:
    text = (tmp_path / out / "tables" / f"{key}.csv").read_text()
    return list(csv.DictReader(io.StringIO(text)))


def test_rank_of_a_made_up_run_computed_by_hand(tmp_path: Path) -> None:
    report = _report(tmp_path, _seven(tmp_path), paper=True)
    [placed] = report["paper"]["paper-table1-acc"]["runs"]
    assert placed["paper_model"] is None
    assert placed["not_comparable"] == [] and placed["average_not_comparable"] is None
    cells = placed["cells"]
    # Table 1 ROD acc: only InternVL3 1B (61.4) is above 50.0.
    assert (cells["ROD"]["rank"], cells["ROD"]["of"]) == (2, 23)
    # VSOD: 18 of the 22 published values are above 0.0 (four are 0.0 too).
    assert cells["VSOD"]["rank"] == 19
    # Average (50 + 0 + 5 x 25) / 7 = 25.0: o4-mini 34.0, GPT-4.1 30.9, InternVL3 1B 27.1
    # are above it.
    assert cells["avg"]["value"] == 25.0 and cells["avg"]["rank"] == 4
    assert "paper" not in cells["ROD"]  # not a model of the paper: nothing to check
    rows = _csv(tmp_path, "paper-table1-acc")
    # Sorted by average, best first: the run's row is fourth, its rank row under it.
    assert [r["model"] for r in rows[:5]] == [
        "o4-mini",
        "GPT-4.1",
        "InternVL3 1B",
        "openai:my-own-model@http://h:1/v1",
        "openai:my-own-model@http://h:1/v1: rank",
    ]
    assert rows[3]["source"] == "yours" and float(rows[4]["ROD"]) == 2


def test_published_rows_exactly_as_in_paper_results(tmp_path: Path) -> None:
    report = _report(tmp_path, _made_up(tmp_path), paper=True)
    assert set(report["paper"]) == {"paper-table1-acc", "paper-table1-psr"}
    for key, theirs in (("paper-table1-acc", "acc"), ("paper-table1-psr", "psr")):
        entry = report["paper"][key]
        assert entry["source"] == "published: De Min et al. 2026, Table 1"
        rows = paper_table("table1_mcqa")["rows"]
        expected = {r["model"]: {c: v[theirs] for c, v in r["cells"].items()} for r in rows}
        assert {p["model"]: p["cells"] for p in entry["published"]} == expected
        from_csv = {
            r["model"]: r for r in _csv(tmp_path, key) if r["source"].startswith("published")
        }
        assert set(from_csv) == set(expected)
        for model, cells in expected.items():
            for column, value in cells.items():
                heading = "average" if column == "avg" else column
                assert float(from_csv[model][heading]) == value, (model, column)
    tex = (tmp_path / "rep" / "tables" / "paper-table1-acc.tex").read_text()
    assert "published: De Min et al. 2026, Table 1" in tex and "\\textbf{" in tex
    markdown = (tmp_path / "rep" / "report.md").read_text()
    assert "| **openai:my-own-model@http://h:1/v1** | **yours** |" in markdown


def test_a_blind_asker_is_not_ranked_first_by_its_ps_rate(tmp_path: Path) -> None:
    """Issue 47: a ps rate ranked "higher is better" put a model that asks blindly first. A run
    that asks 5 times and is never right: its ps rate (5.00, above every published row) is
    shown highest first but without a rank, with a note saying how to read it; its accuracy
    (0.0) is still ranked: 23/23 on the average, below every published model."""
    lines = [
        mcqa_line(scenario, sample, False, 5)
        for scenario in SEVEN_RIGHT
        for sample in sample_ids(scenario, 4)
    ]
    run = write_run(tmp_path, "blind", lines, "openai:blind@http://h:1/v1")
    report = _report(tmp_path, run, paper=True)
    [psr] = report["paper"]["paper-table1-psr"]["runs"]
    assert psr["cells"]["avg"]["value"] == 5.0
    assert all("rank" not in cell and "of" not in cell for cell in psr["cells"].values())
    [acc] = report["paper"]["paper-table1-acc"]["runs"]
    assert acc["cells"]["avg"]["rank"] == 23 and acc["cells"]["avg"]["of"] == 23
    rows = _csv(tmp_path, "paper-table1-psr")
    assert rows[0]["source"] == "yours"  # highest first: a sort, not a ranking
    assert not any(r["source"] == "yours: rank" for r in rows)
    assert any(r["source"] == "yours: rank" for r in _csv(tmp_path, "paper-table1-acc"))
    markdown = " ".join((tmp_path / "rep" / "report.md").read_text().split())
    assert "ps rate has no rank: more is not better in itself" in markdown
    assert "Rows sorted by average (highest first, not a ranking)" in markdown
    assert report["metric_info"]["ps_rate"]["higher_is_better"] is None


def test_html_sets_the_user_rows_apart(tmp_path: Path) -> None:
    _report(tmp_path, _made_up(tmp_path), paper=True)
    page = (tmp_path / "rep" / "report.html").read_text()
    assert page.count('<tr class="yours">') == 2  # acc and psr tables
    assert page.count('<tr class="published">') == 44
    assert "tr.yours td" in page  # the style that shows it


def test_the_interval_check_in_the_report(tmp_path: Path) -> None:
    """LLaVA-1.5 7B's ROD: 12.5 % (11 of 88) printed. Our 44 of 88 = 50 % puts it outside."""
    lines = [mcqa_line("ROD", s, i < 44, 0) for i, s in enumerate(sample_ids("ROD", 88))]
    run = write_run(tmp_path, "llava", lines, "hf:llava-hf/llava-1.5-7b-hf")
    report = _report(tmp_path, run, paper=True)
    [placed] = report["paper"]["paper-table1-acc"]["runs"]
    assert placed["paper_model"] == "LLaVA-1.5 7B"
    rod = placed["cells"]["ROD"]
    assert rod["paper"] == 12.5 and rod["inside"] is False
    assert rod["low"] > 12.5
    rows = _csv(tmp_path, "paper-table1-acc")
    check = next(r for r in rows if r["source"].startswith("yours vs"))
    assert float(check["ROD"]) == 12.5


def test_paper_model_names_the_model_and_an_unknown_name_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _made_up(tmp_path)
    report = _report(tmp_path, run, paper_model="InternVL3-1B")
    [placed] = report["paper"]["paper-table1-acc"]["runs"]
    assert placed["paper_model"] == "InternVL3 1B"
    # InternVL3 1B printed 61.4 for ROD: inside the wide interval of 1 right of 2.
    assert placed["cells"]["ROD"]["paper"] == 61.4 and placed["cells"]["ROD"]["inside"]
    code, text = run_cli(["report", str(run), "--paper-model", "GPT-9"], capsys)
    assert code != 0 and "Traceback" not in text
    assert "GPT-9" in text and "LLaVA-1.5 7B" in text and "Phi-4-Multimodal 6B" in text


def test_without_paper_the_report_has_no_published_rows(tmp_path: Path) -> None:
    report = _report(tmp_path, _made_up(tmp_path))
    assert "paper" not in report
    assert not list((tmp_path / "rep" / "tables").glob("paper-*"))


def test_a_run_with_no_counterpart_is_said(tmp_path: Path) -> None:
    lines = [mcqa_line("ROD", 0, True, 0)]
    run = write_run(tmp_path, "h", lines, "m", {"cot": True})
    report = _report(tmp_path, run, paper=True)
    assert "paper" not in report
    assert any("has no counterpart in the paper" in n for n in report["notes"])


# ----- acceptance: published rows rebuilt from the paper's counts ---------------------------

#: One published row per table, and the settings of the run that reproduces it.
ROWS = [
    ("table1_mcqa", {}, "paper-table1"),
    # run.json does not record --all-samples: the samples the filter drops say it.
    ("table4_unfiltered", {}, "paper-table4"),
    ("table6_oracle", {"reference": True}, "paper-table6"),
    ("table7_hint", {"hint": True}, "paper-table7"),
    ("table2_oeg", {"mode": "oeg"}, "paper-table2"),
    ("table9_oeg_hint", {"mode": "oeg", "hint": True}, "paper-table9"),
    ("table10_multiturn_oeg", {"mode": "oeg-multiturn"}, "paper-table10"),
]


@pytest.mark.parametrize(("table", "settings", "prefix"), ROWS)
def test_a_published_row_rebuilt_from_counts_prints_the_paper_s_average(
    tmp_path: Path, table: str, settings: dict, prefix: str
) -> None:
    model = "LLaVA-1.5 7B"
    lines = lines_for_row(table, model)
    assert len(lines) == sum(episodes_per_scenario(table).values())
    if table == "table1_mcqa":  # the issue's example: 11 of 88 ROD episodes right
        rod = [x for x in lines if x["scenario"] == "ROD"]
        assert len(rod) == 88 and sum(x["correct"] for x in rod) == 11
    run = write_run(tmp_path, "run", lines, "hf:llava-hf/llava-1.5-7b-hf", settings)
    report = _report(tmp_path, run, paper=True)
    published = next(r for r in paper_table(table)["rows"] if r["model"] == model)
    keys = [k for k in report["paper"] if k.startswith(prefix + "-")]
    assert len(keys) == len(paper_table(table)["metrics"])
    for key in keys:
        theirs = report["paper"][key]["paper_metric"]
        [placed] = report["paper"][key]["runs"]
        assert placed["paper_model"] == model
        for column, cells in published["cells"].items():
            ours = placed["cells"][column]
            # Every scenario's count reproduces the printed cell; the average is the mean of
            # the printed cells (±0.1, the paper's rounding) and lies in our interval.
            tolerance = 0.1 if column == "avg" else 0.05 + 1e-9
            assert abs(ours["value"] - cells[theirs]) <= tolerance, (key, column)
            assert ours["paper"] == cells[theirs] and ours["inside"], (key, column)
        # What the report prints: the CSV's average of the run's row, at the paper's precision.
        [mine] = [r for r in _csv(tmp_path, key) if r["source"] == "yours"]
        assert abs(round(float(mine["average"]), 1) - published["cells"]["avg"][theirs]) <= 0.1


# ----- item 4: the published models in the size plot and Spearman's rho --------------------


def test_size_correlation_and_plot_take_the_published_models(tmp_path: Path) -> None:
    from proactivebench.core.stats import spearman_rho

    run = _seven(tmp_path)  # no size in its name: give one in run.json
    config = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**config, "params": "7B"}))
    report = _report(tmp_path, run, paper=True)
    published = report["size_correlation"]["with_published"]
    # 22 models less the three API models, whose size is not published.
    assert published["accuracy"]["published_points"] == 19
    rows = paper_table("table1_mcqa")["rows"]
    sizes = {m.name: m.params_b for m in paper_models()}
    points = [(7.0, 25.0)] + [
        (sizes[r["model"]], r["cells"]["avg"]["acc"]) for r in rows if sizes[r["model"]]
    ]
    expected = spearman_rho([p[0] for p in points], [p[1] for p in points])
    assert published["accuracy"]["rho"] == pytest.approx(expected)
    assert "accuracy" not in report["size_correlation"]  # one run alone has no rho
    assert (tmp_path / "rep" / "plots" / "size.png").is_file()
    without = tmp_path / "without"
    write_report([run], without, n_resamples=200, thumb_cache=None)
    assert not (without / "plots" / "size.png").exists()  # one run: no size plot without it


def test_an_average_of_fewer_scenarios_is_neither_ranked_nor_checked(tmp_path: Path) -> None:
    """A run of fewer scenarios than the table's (here ROD and VSOD; a `--scenarios ROD` run,
    data without VSOD and MVP-N) averages other terms than the paper's average: its scenario
    columns are ranked (like with like), its average is not, and the table says why."""
    run = _made_up(tmp_path)
    config = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**config, "params": "7B"}))
    report = _report(tmp_path, run, paper_model="Qwen-2.5-VL 7B")
    [placed] = report["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == []
    # Said where the terminal and the report's top say what --paper did.
    said = (
        "its average is not ranked nor checked against the paper's; its scenario columns are "
        "ranked and checked"
    )
    assert any(said in n for n in report["notes"]), report["notes"]  # whole, not cut off
    # Nor does its average join a rho with the published models' averages.
    label = "openai:my-own-model@http://h:1/v1"
    assert report["size_correlation"]["not_with_published"] == [label]
    assert placed["average_not_comparable"] == (
        "average of other scenarios: the run's covers ROD, VSOD; the paper's covers all 7 "
        "(ROD, VSOD, MVP-N, IN-C, QD, CIT, COCO)"
    )
    cells = placed["cells"]
    # Table 1 acc, Qwen-2.5-VL 7B: ROD 0.0 is outside Wilson's [9.5, 90.5] of 1 of 2 right;
    # VSOD's 0.0 inside [0, 79.3] of 0 of 1. Only InternVL3 1B (61.4) is above 50.0.
    assert cells["ROD"]["rank"] == 2 and cells["ROD"]["inside"] is False
    assert cells["VSOD"]["inside"] is True
    assert cells["VSOD"]["rank"] == 19
    avg = cells["avg"]
    assert avg["value"] == 25.0 and "rank" not in avg and "inside" not in avg and "paper" in avg
    rows = _csv(tmp_path, "paper-table1-acc")
    # Not placed among the published averages (22 rows and Fig. 3's mean): after them all,
    # its rank row's average empty.
    assert all(not r["source"].startswith("yours") for r in rows[:23])
    mine, ranks, check = rows[23:26]
    assert mine["source"] == "yours" and ranks["ROD"] == "2" and ranks["average"] == ""
    assert check["source"] == "yours vs published, Table 1" and float(check["average"]) == 9.9
    text = " ".join((tmp_path / "rep" / "report.md").read_text().split())
    assert "| 0.0 outside | 0.0 inside | — | — | — | — | — | 9.9 not compared |" in text
    assert (
        "openai:my-own-model@http://h:1/v1: average of other scenarios: the run's covers ROD, "
        "VSOD; the paper's covers all 7 (ROD, VSOD, MVP-N, IN-C, QD, CIT, COCO): its average "
        "is not ranked nor checked against the paper's; its scenario columns are ranked and "
        "checked" in text
    )


def test_report_paper_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs `eval` wrote (the oracle, plain and with --hint): Table 1 and Table 7. The
    handmade data stands for the paper's whole test set (`data_as_the_papers_whole`)."""
    from clirun import eval_args
    from handmade import full_dataset

    data_as_the_papers_whole(monkeypatch)

    data = full_dataset(tmp_path / "data")
    for name, extra in (("plain", []), ("hint", ["--hint"])):
        code, text = run_cli([*eval_args(data, tmp_path / name, *extra), "--no-report"], capsys)
        assert code == 0, text
    out = tmp_path / "rep"
    args = ["report", str(tmp_path / "plain"), str(tmp_path / "hint"), "--out", str(out)]
    code, text = run_cli([*args, "--paper"], capsys)
    assert code == 0, text
    assert "among the paper's models" in text
    report = json.loads((out / "report.json").read_text())
    assert list(report["paper"]) == [
        "paper-table1-acc",
        "paper-table1-psr",
        "paper-table7-acc",
        "paper-table7-psr",
    ]
    # The oracle is right every time: first of 23 in every column of Table 1.
    [oracle] = report["paper"]["paper-table1-acc"]["runs"]
    assert {c["rank"] for c in oracle["cells"].values()} == {1}
    assert (out / "tables" / "paper-table7-acc.tex").is_file()


def test_accuracy_vs_ps_plot_draws_the_published_averages(tmp_path: Path) -> None:
    from proactivebench.report.measures import measure_run
    from proactivebench.report.plots import accuracy_vs_ps_figure
    from proactivebench.report.runs import load_run

    measures = [measure_run(load_run(_made_up(tmp_path)), n_resamples=50)]

    def legend_texts(figure) -> list[str]:
        return [t.get_text() for legend in figure.legends for t in legend.get_texts()]

    def points(figure) -> int:
        return sum(len(c.get_offsets()) for c in figure.axes[0].collections)

    plain, paper = accuracy_vs_ps_figure(measures), accuracy_vs_ps_figure(measures, True)
    assert not any("published" in t for t in legend_texts(plain))
    assert "published, Table 1 (De Min et al. 2026): 22 models' averages" in legend_texts(paper)
    assert points(paper) - points(plain) == 22


def test_a_paper_model_takes_the_paper_s_size(tmp_path: Path) -> None:
    """A spec whose name says no size (a server's own name for the model) is 7B with
    --paper-model naming the paper's Qwen2.5-VL 7B: the paper's size of that model."""
    run = _seven(tmp_path)
    config = json.loads((run / "run.json").read_text())
    spec = "openai:served-model@http://localhost:8000/v1"
    (run / "run.json").write_text(json.dumps({**config, "model": spec}))
    report = _report(tmp_path, run, paper_model="Qwen-2.5-VL 7B")
    assert report["runs"][0]["params_b"] == 7.0
    assert report["size_correlation"]["with_published"]["accuracy"]["published_points"] == 19
    assert _report(tmp_path / "plain", run)["runs"][0]["params_b"] is None


def test_every_figure_average_the_report_shows_is_checked_above() -> None:
    from proactivebench.benchmark.paper_results import FIGURE_AVERAGES

    checked = {(figure, table, key) for figure, _, table, key in FIGURE_SOURCES}
    for (table, key), figure in FIGURE_AVERAGES.items():
        assert (figure, table, key) in checked


def test_the_figure_mean_row_is_what_fig3_prints(tmp_path: Path) -> None:
    report = _report(tmp_path, _made_up(tmp_path), paper=True)
    mean = report["paper"]["paper-table1-acc"]["figure_mean"]
    assert mean["figure"] == "fig3_reference_vs_benchmark"
    assert len(mean["models"]) == 21 and "GPT-5.2" not in mean["models"]
    printed = _printed("fig3_reference_vs_benchmark", "ProactiveBench", "acc")
    [row] = [r for r in _csv(tmp_path, "paper-table1-acc") if r["source"].startswith("mean of")]
    assert row["model"] == "mean of 21 models" and row["source"] == "mean of published, Fig. 3"
    for column, value in printed.items():
        assert abs(float(row[column]) - value) <= 0.1, column
    assert report["paper"]["paper-table1-psr"]["figure_mean"] is None  # no figure prints it


# ----- Figs. 8 and 9: history and ICL runs beside the paper's averages ----------------------


def test_history_and_icl_runs_beside_figs_8_and_9(tmp_path: Path) -> None:
    rod, mvpn = sample_ids("ROD", 4), sample_ids("MVP-N", 2)
    lines = [mcqa_line("ROD", s, i == 0, 1) for i, s in enumerate(rod)]  # 25 %, psr 1.00
    lines += [mcqa_line("MVP-N", s, True, 0) for s in mvpn]  # 100 %
    history = write_run(
        tmp_path, "history", lines, "m", {"history": True, "resize_short_edge": 224}
    )
    icl = write_run(tmp_path, "icl", lines, "m", {"icl": 3})
    report = _report(tmp_path, history, icl, paper=True, out="x")["paper"]
    assert list(report) == [
        "paper-fig8-acc",
        "paper-fig8-psr",
        "paper-fig9b-acc",
        "paper-fig9b-psr",
    ]
    fig8 = report["paper-fig8-acc"]
    assert fig8["published"] == [
        {"config": r["config"], "cells": {c: v.get("acc") for c, v in r["cells"].items()}}
        for r in paper_table("fig8_history")["rows"]
        if r["config"].startswith("(a)")
    ]
    assert fig8["published"][1]["cells"]["avg"] == 10.2  # history: only its average printed
    assert len(fig8["zero_shot_mean"]["models"]) == 10
    assert [r["label"] for r in fig8["runs"]] == ["m +history +224px"]
    assert fig8["runs"][0]["cells"]["ROD"]["value"] == 25.0
    fig9 = report["paper-fig9b-psr"]
    # Fig. 9 (b), 3 samples: ICL psr ROD 2.2, MVP-N 0.6; zero-shot 0.6 / 0.1 printed, and
    # Table 1's mean over the ten models gives them.
    assert [p["cells"] for p in fig9["published"]] == [
        {"ROD": 2.2, "MVP-N": 0.6},
        {"ROD": 0.6, "MVP-N": 0.1},
    ]
    zero = fig9["zero_shot_mean"]["cells"]
    assert abs(zero["ROD"] - 0.6) <= 0.1 and abs(zero["MVP-N"] - 0.1) <= 0.1
    assert fig9["runs"][0]["cells"]["ROD"]["value"] == 1.0
    rows = _csv(tmp_path, "paper-fig9b-psr", out="x")
    assert [r["source"] for r in rows] == [
        "published, Fig. 9",
        "published, Fig. 9",
        "mean of published, Table 1",
        "yours",
    ]
    # Fig. 8's average is of all seven scenarios, the history run's of ROD and MVP-N: said;
    # Fig. 9 prints no average: nothing to say of the ICL run's.
    text = " ".join((tmp_path / "x" / "report.md").read_text().split())
    assert (
        "m +history +224px: not comparable with the published averages (average of other "
        "scenarios: the run's covers ROD, MVP-N; the paper's covers all 7" in text
    )
    assert "m +ICL-3: not comparable" not in text and "m +ICL-3" in text
    # ... and its average cell says so too, as the tables' do (it was a plain number).
    markdown = (tmp_path / "x" / "report.md").read_text().splitlines()
    rows = [r for r in markdown if r.startswith("| **m +history +224px** | **yours** |")]
    assert len(rows) == 2 and all(r.endswith(" not compared** |") for r in rows), rows


def test_the_scatter_numbers_the_published_models_and_names_them_in_a_key(
    tmp_path: Path,
) -> None:
    """Issue 47, item 4: the published models' marks in the scatter carried no names (where is
    Qwen-2.5-VL 7B?). Each is numbered beside its mark, the key under the plot names the
    numbers: here Table 1's 22 models, each number at its model's printed averages (psr, acc)
    in paper_results.json (Qwen-2.5-VL 7B: 0.2 and 9.9)."""
    from matplotlib.text import Annotation

    from proactivebench.report import plots
    from proactivebench.report.measures import measure_run
    from proactivebench.report.runs import load_run

    figure = plots.accuracy_vs_ps_figure(
        [measure_run(load_run(_seven(tmp_path)), n_resamples=50)], True
    )
    texts = "\n".join(t.get_text() for t in figure.texts)
    key = texts.split("Grey marks, numbered: the published models' averages: ")[1]
    names = dict(entry.split(" ", 1) for entry in " ".join(key.split()).rstrip(".").split(", "))
    rows = paper_table("table1_mcqa")["rows"]
    assert sorted(names.values()) == sorted(r["model"] for r in rows)
    labels = [a for a in figure.axes[0].texts if isinstance(a, Annotation)]
    placed: dict[str, tuple[float, float]] = {}
    for label in labels:  # models at one place share a label: "3 = 7"
        for number in label.get_text().split(" = "):
            placed[names[number]] = tuple(label.xy)
    assert placed == {
        r["model"]: (r["cells"]["avg"]["psr"], r["cells"]["avg"]["acc"]) for r in rows
    }
    assert placed["Qwen-2.5-VL 7B"] == (0.2, 9.9)


def test_each_published_table_in_the_scatter_has_a_mark_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`paper`'s report places runs in four tables that print acc and psr (Tables 1, 7, 4,
    10): each table's published averages get their own hollow shape, in the plot and its
    legend. Before, three shapes went round: Table 10's stars were Table 1's. Checked for as
    many tables as a run can have counterparts (`COUNTERPARTS`), none a scenario's shape."""
    from proactivebench.benchmark.registry import paper_scenarios
    from proactivebench.report import plots
    from proactivebench.report.comparable import COUNTERPARTS
    from proactivebench.report.measures import measure_run
    from proactivebench.report.runs import load_run

    tables = sorted(set(COUNTERPARTS.values()))
    groups = [(f"published, {key}", [(0.1 * i, 10.0 * i, "m")]) for i, key in enumerate(tables)]
    monkeypatch.setattr(plots, "published_averages", lambda *args: groups)
    figure = plots.accuracy_vs_ps_figure(
        [measure_run(load_run(_made_up(tmp_path)), n_resamples=50)], True
    )
    marks = {}
    for legend in figure.legends:
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if text.get_text().startswith("published, "):
                marks[text.get_text()] = handle.get_marker()
    assert len(marks) == len(tables)
    assert len(set(marks.values())) == len(tables), marks
    assert not set(marks.values()) & {plots.scenario_marker(s) for s in paper_scenarios()}


def test_a_history_run_of_a_filter_of_its_own_stands_beside_no_figure(tmp_path: Path) -> None:
    """run.json records `--filter` as the digest of its ids under `filter`: a history run of a
    test set of one's own is no run of Fig. 8's set (the check read only `filter_digest`,
    and so placed it there), as a plain one of its own is beside no table."""
    lines = [mcqa_line("ROD", s, True, 0) for s in sample_ids("ROD", 2)]
    digest = "sha256:" + "0" * 64
    run = write_run(tmp_path, "h", lines, "m", {"history": True, "filter": digest})
    report = _report(tmp_path, run, paper=True)
    assert "paper" not in report
    assert any("has no counterpart in the paper" in n for n in report["notes"])


def test_a_run_placed_by_a_table_its_settings_contradict_is_not_ranked_there(
    tmp_path: Path,
) -> None:
    """A suite.json naming Table 1 (zero-shot) for a hint run: the run is ranked in no table
    and a note says why; named Table 4 (every sample), a plain run is placed there, as
    run.json does not record --all-samples."""
    from proactivebench.report.paper_layout import Layout

    lines = [mcqa_line("ROD", s, True, 0) for s in sample_ids("ROD", 2)]
    hint = write_run(tmp_path, "hint", lines, "m", {"hint": True})
    plain = write_run(tmp_path, "plain", lines, "m")
    layout = Layout.of({hint: "table1_mcqa", plain: "table4_unfiltered"})
    report = _report(tmp_path, hint, plain, paper=True, layout=layout)
    placed = {
        key: [row["label"] for row in table["runs"]] for key, table in report["paper"].items()
    }
    assert placed == {"paper-table4-acc": ["m"], "paper-table4-psr": ["m"]}
    assert any(
        "m +hint is left out of the paper's tables" in n and "named for Table 1" in n
        for n in report["notes"]
    )


# ----- issue 45, item 4: a run that is not comparable is said so, and not ranked ----------


def _llava_at_half(root: Path, name: str = "llava", **config: object) -> Path:
    """LLaVA-1.5 7B, ROD 44 of 88 (50 %; the paper prints 12.5): ranked and checked when it
    is comparable (`test_the_interval_check_in_the_report`)."""
    lines = [mcqa_line("ROD", s, i < 44, 0) for i, s in enumerate(sample_ids("ROD", 88))]
    run = write_run(root, name, lines, "hf:llava-hf/llava-1.5-7b-hf")
    if config:
        recorded = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**recorded, **config}))
    return run


def _not_ranked(report: dict, tmp_path: Path, out: str = "rep") -> tuple[dict, list[str]]:
    """The run's entry in Table 1 (acc), after checking it has no rank and no verdict, sorts
    after every published row and says why; returns it and the table's notes."""
    entry = report["paper"]["paper-table1-acc"]
    [placed] = entry["runs"]
    assert placed["not_comparable"], placed
    for column, cell in placed["cells"].items():
        assert "rank" not in cell and "inside" not in cell, column
    rod = placed["cells"]["ROD"]
    assert rod["value"] == 50.0 and rod["paper"] == 12.5  # shown, the paper's beside it
    rows = _csv(tmp_path, "paper-table1-acc", out=out)
    # The run's rows last, after the 22 published and the mean of Fig. 3's models.
    assert all("published" in r["source"] for r in rows[:23])
    assert rows[23]["source"] == "yours"
    assert rows[24]["model"].endswith(": not ranked") and rows[24]["ROD"] == ""  # CSV: empty
    markdown = (tmp_path / out / "report.md").read_text()
    assert "12.5 not compared" in markdown and "12.5 outside" not in markdown
    section = markdown.split("### accuracy % among the paper's models")[1].split("###")[0]
    notes = [n for n in report["notes"] if "not comparable" in n]
    assert notes and "not comparable with the published rows" in section
    return placed, notes


def test_a_run_decoded_otherwise_than_the_paper_is_not_ranked(tmp_path: Path) -> None:
    """Round-4 tryout: a run sampled at temperature 0.7 (or truncated at 5 tokens) was ranked
    1/23 among the paper's greedy, 50-token rows, with inside/outside verdicts; the protocol's
    decoding (run.json's settings, as eval records it) keeps its rank."""
    lines = [mcqa_line("ROD", s, i < 44, 0) for i, s in enumerate(sample_ids("ROD", 88))]
    for name, decoding in (
        ("sampled", {"max_tokens": 50, "temperature": 0.7}),
        ("short", {"max_tokens": 5, "temperature": 0.0}),
    ):
        run = write_run(
            tmp_path, name, lines, "hf:llava-hf/llava-1.5-7b-hf", {"decoding": decoding}
        )
        placed, _ = _not_ranked(_report(tmp_path, run, paper=True, out=name), tmp_path, name)
        [reason] = placed["not_comparable"]
        assert reason.startswith("settings the table does not have: decoding {"), reason
        assert 'protocol decodes {"max_tokens": 50, "temperature": 0.0}' in reason, reason
    greedy = {"decoding": {"max_tokens": 50, "temperature": 0.0}}
    run = write_run(tmp_path, "greedy", lines, "hf:llava-hf/llava-1.5-7b-hf", greedy)
    [placed] = _report(tmp_path, run, paper=True, out="greedy")["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == [] and placed["cells"]["ROD"]["rank"] == 2


def test_a_run_on_generated_data_is_not_ranked(tmp_path: Path) -> None:
    """Before: a synthetic run was ranked among the published models and its values checked
    against its model's, and "synthetic" appeared nowhere in the report."""
    run = _llava_at_half(tmp_path)
    (tmp_path / "no-data").mkdir(exist_ok=True)
    (tmp_path / "no-data" / "synth_manifest.json").write_text("{}")  # what data synth writes
    placed, notes = _not_ranked(_report(tmp_path, run, paper=True), tmp_path)
    assert placed["not_comparable"] == ["generated data (data synth), not the paper's"]
    assert "generated data" in notes[0]
    assert "generated data" in (tmp_path / "rep" / "report.md").read_text()


def test_the_selection_recorded_in_run_json_says_partial(tmp_path: Path) -> None:
    """run.json's `selection` (what the run selected): fewer samples selected than the data
    offers (--limit), fewer episodes scored than selected (stopped), one shard of several;
    `synthetic` as recorded, with no data directory at hand."""
    played = sample_ids("ROD", 88)
    ids = id_ranges(played)
    more = id_ranges([*played, *range(max(played) + 1, max(played) + 13)])  # 12 not played
    full = {"ROD": {"available": 88, "selected": 88, "ids": ids}}
    cases = {
        "limited": (
            {"scenarios": {"ROD": {"available": 120, "selected": 88, "ids": ids}}, "shard": None},
            "partial: ROD 88 of 120 samples selected",
        ),
        "stopped": (
            {"scenarios": {"ROD": {"available": 100, "selected": 100, "ids": more}}, "shard": None},
            "partial: ROD 88 of 100 selected episodes scored",
        ),
        "shard": ({"scenarios": full, "shard": [1, 4]}, "partial: one shard (1 of 4)"),
        "synthetic": (
            {"scenarios": full, "shard": None, "synthetic": True},
            "generated data (data synth), not the paper's",
        ),
    }
    for name, (selection, reason) in cases.items():
        run = _llava_at_half(tmp_path, name, selection=selection)
        placed, _ = _not_ranked(_report(tmp_path, run, paper=True, out=name), tmp_path, name)
        assert [r[: len(reason)] for r in placed["not_comparable"]] == [reason], name
    # The whole selection scored, on the paper's data: ranked and checked as before.
    run = _llava_at_half(tmp_path, "whole", selection={"scenarios": full, "shard": None})
    [placed] = _report(tmp_path, run, paper=True, out="whole")["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == []
    assert placed["cells"]["ROD"]["inside"] is False and placed["cells"]["ROD"]["rank"] == 2


def test_an_imported_run_whose_offer_is_unknown_is_not_ranked(tmp_path: Path) -> None:
    """An imported run's selection holds the episodes its log selected, what the data offered
    unknown (`available` null): whole or partial cannot be told, so it is not ranked nor
    checked (before: a log of 2 of 7 samples ranked 8/23 with "inside" verdicts)."""
    ids = id_ranges(sample_ids("ROD", 88))
    selection = {"scenarios": {"ROD": {"available": None, "selected": 88, "ids": ids}}}
    run = _llava_at_half(tmp_path, "imported", selection=selection, inspect_log="x.eval")
    placed, notes = _not_ranked(_report(tmp_path, run, paper=True), tmp_path)
    assert placed["not_comparable"] == [
        "comparability unknown: what the data offered is not recorded for ROD (imported: the "
        "log does not say what the data offered)"
    ]
    assert "comparability unknown" in notes[0]


def test_a_table_the_settings_contradict_places_no_run(tmp_path: Path) -> None:
    """A suite's experiment named `published = "table1_mcqa"` with `hint = true` (its
    suite.json, written before the suite file was checked for it): the run is not ranked
    among Table 1's zero-shot models; a line says why."""
    from proactivebench.report.paper_layout import Layout

    lines = [mcqa_line("ROD", s, i < 44, 0) for i, s in enumerate(sample_ids("ROD", 88))]
    run = write_run(tmp_path, "hinted", lines, "m", {"hint": True})
    layout = Layout.of({run: "table1_mcqa"})
    report = _report(tmp_path, run, paper=True, layout=layout)
    assert "paper" not in report  # in no table: Table 7 is not what its caller named
    [note] = [n for n in report["notes"] if "left out" in n]
    assert "named for Table 1" in note and "Table 7's" in note and "hint" in note
    # Table 4 named for a plain run (--all-samples is not recorded): its settings agree.
    plain = write_run(tmp_path, "plain", lines, "m")
    report = _report(
        tmp_path, plain, paper=True, layout=Layout.of({plain: "table4_unfiltered"}), out="p"
    )
    assert report["paper"]["paper-table4-acc"]["runs"][0]["not_comparable"] == []


def test_a_table_named_for_settings_no_table_has_places_no_run(tmp_path: Path) -> None:
    """A run whose settings the paper tabulates nowhere (`history = true`) named for Table 1
    is not ranked among its zero-shot models: it was, as if settings of no table agreed with
    every table named."""
    from proactivebench.report.paper_layout import Layout

    lines = [mcqa_line("ROD", s, i < 44, 0) for i, s in enumerate(sample_ids("ROD", 88))]
    run = write_run(tmp_path, "history", lines, "m", {"history": True})
    report = _report(tmp_path, run, paper=True, layout=Layout.of({run: "table1_mcqa"}))
    assert "paper" not in report
    [note] = [n for n in report["notes"] if "left out" in n]
    assert "named for Table 1" in note and "no table's of the paper" in note


def test_a_run_not_comparable_joins_no_rho_with_the_published_models(tmp_path: Path) -> None:
    """The size correlation with the paper's models (`size_correlation.with_published`, the
    size plot's rho) is a number made of the run and the published rows: a run on generated
    data is named apart, in none of it."""
    from proactivebench.core.stats import spearman_rho

    run = _made_up(tmp_path)
    config = json.loads((run / "run.json").read_text())
    selection = {"scenarios": {}, "shard": None, "synthetic": True}
    (run / "run.json").write_text(json.dumps({**config, "params": "7B", "selection": selection}))
    report = _report(tmp_path, run, paper=True)
    correlation = report["size_correlation"]
    assert correlation["not_with_published"] == ["openai:my-own-model@http://h:1/v1"]
    assert correlation["with_published"] == {}  # no run left to set beside them
    assert (tmp_path / "rep" / "plots" / "size.png").is_file()  # drawn, named apart
    # Beside a comparable run of another size, the rho with the published models is its own.
    other = _seven(tmp_path, "other", "hf:x/other-3B", dict.fromkeys(SEVEN_RIGHT, 4))
    published = _report(tmp_path, run, other, paper=True, out="two")["size_correlation"]
    rows = paper_table("table1_mcqa")["rows"]
    sizes = {m.name: m.params_b for m in paper_models()}
    points = [(3.0, 100.0)] + [
        (sizes[r["model"]], r["cells"]["avg"]["acc"]) for r in rows if sizes[r["model"]]
    ]
    expected = spearman_rho([p[0] for p in points], [p[1] for p in points])
    assert published["with_published"]["accuracy"]["rho"] == pytest.approx(expected)


def test_a_run_whose_last_invocation_stopped_is_partial(tmp_path: Path) -> None:
    """A run recorded before run.json kept its selection, whose last invocation was stopped
    (a suite's later extension, Ctrl-C, or killed: no end time), holds fewer episodes than
    it was asked for: not ranked. One whose last invocation ended is."""
    stops = {
        "interrupted": {"started": "t", "ended": "t", "stopped_by": "interrupted"},
        "killed": {"started": "t", "ended": None},
    }
    for name, last in stops.items():
        run = _llava_at_half(tmp_path, name, provenance=[{"started": "t", "ended": "t"}, last])
        placed, _ = _not_ranked(_report(tmp_path, run, paper=True, out=name), tmp_path, name)
        assert placed["not_comparable"][0].startswith("partial: its last invocation stopped")
    run = _llava_at_half(tmp_path, "ended", provenance=[{"started": "t", "ended": "t"}])
    [placed] = _report(tmp_path, run, paper=True, out="ended")["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == [] and placed["cells"]["ROD"]["rank"] == 2


def test_a_figure_the_settings_contradict_places_no_run_and_says_so(tmp_path: Path) -> None:
    """A suite's experiment named `published = "fig8_history"` without history (hint
    instead): in no table or figure, and a line says why (it was left out without a word)."""
    from proactivebench.report.paper_layout import Layout

    lines = [mcqa_line("ROD", s, i < 2, 0) for i, s in enumerate(sample_ids("ROD", 4))]
    run = write_run(tmp_path, "hinted", lines, "m", {"hint": True})
    report = _report(tmp_path, run, paper=True, layout=Layout.of({run: "fig8_history"}))
    assert "paper" not in report
    [note] = [n for n in report["notes"] if "left out" in n]
    assert "named for fig8_history" in note


def test_an_open_ended_run_of_the_paper_s_100_per_scenario_is_whole(tmp_path: Path) -> None:
    """The paper's open-ended tables scored 100 samples per scenario (§3.1): an OEG run that
    selected 100 of the 2591 MVP-N samples is whole; 50 of them is partial."""
    from paperruns import oeg_line

    ids = sample_ids("MVP-N", 100)
    lines = [oeg_line("MVP-N", s, i < 30, i < 60, i < 60) for i, s in enumerate(ids)]
    for name, selected in (("whole", 100), ("half", 50)):
        run = write_run(tmp_path, name, lines[:selected], "m", {"mode": "oeg"})
        scenarios = {"MVP-N": {"available": 2591, "ids": id_ranges(ids[:selected])}}
        config = json.loads((run / "run.json").read_text())
        config["selection"] = {"scenarios": scenarios, "shard": None, "synthetic": False}
        (run / "run.json").write_text(json.dumps(config))
        [placed] = _report(tmp_path, run, paper=True, out=name)["paper"]["paper-table2-cc"]["runs"]
        expected = [] if selected == 100 else ["partial: MVP-N 50 of 100 samples selected"]
        assert placed["not_comparable"] == expected, name


def test_a_selection_of_the_wrong_shape_is_named_never_ranked_wrongly(
    tmp_path: Path, capsys
) -> None:
    """run.json's `selection` edited by hand: not an object, or counts that are no counts, is
    one error naming the file and the key (the readers' one rule, `selected.selection_of`),
    never a traceback nor a run ranked by a misread selection; a shard of one is whole."""
    run = _llava_at_half(tmp_path, "text", selection="all")
    code, text = run_cli(["report", str(run), "--paper"], capsys)
    assert code == 1 and "Traceback" not in text
    assert f"{run / 'run.json'} is damaged: 'selection' must be an object" in " ".join(text.split())
    odd = {"ROD": {"available": "88", "selected": 88, "ids": id_ranges(sample_ids("ROD", 88))}}
    run = _llava_at_half(tmp_path, "odd", selection={"scenarios": odd, "shard": None})
    code, text = run_cli(["report", str(run), "--paper"], capsys)
    assert code == 1 and "Traceback" not in text and "available must be" in text
    whole = {"ROD": {"available": 88, "ids": id_ranges(sample_ids("ROD", 88))}}
    run = _llava_at_half(tmp_path, "one", selection={"scenarios": whole, "shard": [0, 1]})
    [placed] = _report(tmp_path, run, paper=True, out="one")["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == [] and placed["cells"]["ROD"]["rank"] == 2


def test_the_scatter_names_a_run_not_comparable_beside_the_published_averages(
    tmp_path: Path,
) -> None:
    """The accuracy-against-ps plot draws the published models' averages beside the runs: a
    run on generated data is named under it, with why."""
    from matplotlib.text import Text

    from proactivebench.report.measures import measure_run
    from proactivebench.report.plots import accuracy_vs_ps_figure
    from proactivebench.report.runs import load_runs

    run = _made_up(tmp_path)
    (tmp_path / "no-data").mkdir(exist_ok=True)
    (tmp_path / "no-data" / "synth_manifest.json").write_text("{}")
    measures = [measure_run(r, n_resamples=50) for r in load_runs([run])]
    figure = accuracy_vs_ps_figure(measures, with_paper=True)
    text = " ".join(" ".join(t.get_text() for t in figure.findobj(Text)).split())
    assert (
        "Not comparable with the published models: openai:my-own-model@http://h:1/v1 "
        "(generated data (data synth), not the paper's; average of other scenarios: the "
        "run's covers ROD, VSOD; the paper's covers all 7 (ROD, VSOD, MVP-N, IN-C, QD, CIT, "
        "COCO))." in text
    )
    without = accuracy_vs_ps_figure(measures)  # no published marks: nothing to say
    assert "Not comparable" not in " ".join(t.get_text() for t in without.findobj(Text))


def test_the_scatter_tells_a_reason_shared_by_several_runs_once(tmp_path: Path) -> None:
    """Runs not comparable for the same reasons (a suite's runs on generated data) are named
    together under the scatter, the reasons told once, not once per run."""
    from matplotlib.text import Text

    from proactivebench.report.measures import measure_run
    from proactivebench.report.plots import accuracy_vs_ps_figure
    from proactivebench.report.runs import load_runs

    runs = [_seven(tmp_path, "a"), _seven(tmp_path, "b", "openai:other-model@http://h:1/v1")]
    (tmp_path / "no-data" / "synth_manifest.json").write_text("{}")
    measures = [measure_run(r, n_resamples=50) for r in load_runs(runs)]
    figure = accuracy_vs_ps_figure(measures, with_paper=True)
    text = " ".join(" ".join(t.get_text() for t in figure.findobj(Text)).split())
    assert (
        "Not comparable with the published models: openai:my-own-model@http://h:1/v1, "
        "openai:other-model@http://h:1/v1 (generated data (data synth), not the paper's)." in text
    )
    assert text.count("generated data (data synth)") == 1


def test_runs_not_comparable_for_the_same_reasons_share_one_note(tmp_path: Path) -> None:
    """Six runs on generated data told the same reason six times at the page's head: the runs
    not comparable for the same reasons are named in one note."""
    runs = [_seven(tmp_path, "a"), _seven(tmp_path, "b", "openai:other-model@http://h:1/v1")]
    (tmp_path / "no-data" / "synth_manifest.json").write_text("{}")
    notes = [n for n in _report(tmp_path, *runs, paper=True)["notes"] if "not comparable" in n]
    assert notes == [
        "--paper: openai:my-own-model@http://h:1/v1, openai:other-model@http://h:1/v1: not "
        "comparable with the published rows (generated data (data synth), not the paper's): "
        "shown last, without a rank or an inside/outside verdict"
    ]


def test_the_size_plot_gives_no_rho_with_the_published_models_of_none_comparable(
    tmp_path: Path,
) -> None:
    """A run not comparable with the paper's rows joins no rho with them
    (report.json's `with_published` is then empty): its size plot does not title the published
    models' own rho "with the published models", and names the run as drawn, not as not
    shown."""
    from matplotlib.text import Text

    from proactivebench.report.measures import measure_run
    from proactivebench.report.plots import size_figure
    from proactivebench.report.runs import load_runs

    run = _seven(tmp_path)
    (tmp_path / "no-data" / "synth_manifest.json").write_text("{}")
    [loaded] = load_runs([run])
    loaded.params_b = 7.0
    figure = size_figure([measure_run(loaded, n_resamples=50)], with_paper=True)
    assert figure is not None
    titles = [ax.get_title() for ax in figure.axes]
    assert titles and all("n/a: needs 3 runs with a size, has 1" in t for t in titles), titles
    assert not any("with the published models" in t for t in titles), titles
    text = " ".join(" ".join(t.get_text() for t in figure.findobj(Text)).split())
    assert "Not shown" not in text
    assert (
        "Drawn, in no rho with the published models (not comparable with them): "
        "openai:my-own-model@http://h:1/v1" in text
    )


def test_a_run_scored_by_two_judges_is_not_ranked(tmp_path: Path) -> None:
    """`judge RUN_DIR` with a judge that fails on some prompts keeps the earlier judge's
    verdict there (`judge_error`): the rates mix two judges, so the run stands beside the
    paper's rows with the reason, without a rank or an inside/outside verdict."""
    lines = lines_for_row("table2_oeg", "Qwen-2.5-VL 7B")
    rod = [i for i, line in enumerate(lines) if line["scenario"] == "ROD"]
    for i in rod[:2]:
        lines[i] = {**lines[i], "judge_error": "RuntimeError: no verdict"}
    run = write_run(tmp_path, "oeg", lines, "hf:Qwen/Qwen2.5-VL-7B-Instruct", {"mode": "oeg"})
    report = _report(tmp_path, run, paper=True)
    for key in ("paper-table2-cc", "paper-table2-ps", "paper-table8-agg"):
        [placed] = report["paper"][key]["runs"]
        assert placed["not_comparable"] == [
            "verdicts of two judges: 2 line(s) keep an earlier judge's verdict"
        ], key
        assert not any("rank" in c or "inside" in c for c in placed["cells"].values()), key
    # The same lines, every verdict the named judge's: ranked.
    for line in lines:
        line.pop("judge_error", None)
    again = write_run(tmp_path, "again", lines, "hf:Qwen/Qwen2.5-VL-7B-Instruct", {"mode": "oeg"})
    [placed] = _report(tmp_path, again, paper=True, out="r2")["paper"]["paper-table2-cc"]["runs"]
    assert placed["not_comparable"] == [] and placed["cells"]["avg"]["inside"] is True


def test_a_run_without_a_selection_whose_data_is_gone_is_not_ranked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run.json of before `selection` tells generated data from the paper's only through its
    data directory (`data synth`'s manifest): when that is gone, nothing can tell, and the run
    is not ranked."""
    data_as_the_papers_whole(monkeypatch)  # its 4 samples a scenario stand for the paper's
    run = _seven(tmp_path)
    [placed] = _report(tmp_path, run, paper=True)["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == [] and placed["cells"]["avg"]["rank"] == 4
    (tmp_path / "no-data").rmdir()  # moved away
    [placed] = _report(tmp_path, run, paper=True, out="gone")["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == [
        "comparability unknown: run.json records no selection and its data directory is not "
        "at hand (generated data cannot be told apart)"
    ]
    assert not any("rank" in c for c in placed["cells"].values())
    # Its selection recorded (the paper's data, not generated): comparable without the data.
    config = json.loads((run / "run.json").read_text())
    scenarios = {s: {"available": 4, "ids": id_ranges(sample_ids(s, 4))} for s in SEVEN_RIGHT}
    selection = {"scenarios": scenarios, "shard": None, "synthetic": False}
    (run / "run.json").write_text(json.dumps({**config, "selection": selection}))
    [placed] = _report(tmp_path, run, paper=True, out="told")["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == [] and placed["cells"]["avg"]["rank"] == 4


def test_a_selection_saying_not_generated_does_not_outweigh_the_datas_manifest(
    tmp_path: Path,
) -> None:
    """Round-4 tryout: run.json's selection edited to say `synthetic: false` (or without the
    key) ranked a run on generated data 1/22 though its data directory, at hand, holds
    `data synth`'s manifest: either saying so makes the run not comparable."""
    lines = [mcqa_line("ROD", s, i < 44, 0) for i, s in enumerate(sample_ids("ROD", 88))]
    run = write_run(tmp_path, "edited", lines, "hf:llava-hf/llava-1.5-7b-hf")
    (tmp_path / "no-data" / "synth_manifest.json").write_text("{}")  # what data synth writes
    config = json.loads((run / "run.json").read_text())
    scenarios = {"ROD": {"available": 88, "ids": id_ranges(sample_ids("ROD", 88))}}
    selection = {"scenarios": scenarios, "shard": None, "synthetic": False}
    (run / "run.json").write_text(json.dumps({**config, "selection": selection}))
    placed, _ = _not_ranked(_report(tmp_path, run, paper=True), tmp_path)
    assert placed["not_comparable"] == ["generated data (data synth), not the paper's"]


def test_generated_data_recorded_in_the_selection_stands_beside_table_1(tmp_path: Path) -> None:
    """Generated data's sample ids are in no official list; which table a run of it stands
    beside is read from what run.json records (`selection.synthetic`), not from a data
    directory that may be gone: Table 1, not Table 4 (the unfiltered samples)."""
    ids = [20_000_001, 20_000_002]
    lines = [mcqa_line("ROD", i, True, 0) for i in ids]
    run = write_run(tmp_path, "synth", lines, "m")
    (tmp_path / "no-data").rmdir()  # the generated data, deleted since
    config = json.loads((run / "run.json").read_text())
    scenarios = {"ROD": {"available": 2, "ids": id_ranges(ids)}}
    selection = {"scenarios": scenarios, "shard": None, "synthetic": True}
    (run / "run.json").write_text(json.dumps({**config, "selection": selection}))
    report = _report(tmp_path, run, paper=True)
    assert set(report["paper"]) == {"paper-table1-acc", "paper-table1-psr"}
    [placed] = report["paper"]["paper-table1-acc"]["runs"]
    assert placed["not_comparable"] == ["generated data (data synth), not the paper's"]


def test_a_run_without_a_selection_played_with_a_suites_limit_is_partial(tmp_path: Path) -> None:
    """A run recorded before run.json kept its selection says nothing of `--limit`: the limit
    a suite says its experiment was played with (`Run.limit`, from suite.json) makes it
    partial, as its selection would have."""
    from proactivebench.report.comparable import not_comparable
    from proactivebench.report.runs import load_run

    run = load_run(_llava_at_half(tmp_path))
    assert not_comparable(run) == []
    run.limit = 88
    assert not_comparable(run) == ["partial: played with --limit 88"]


def test_an_open_ended_run_of_other_samples_than_the_paper_s_subset_is_not_ranked(
    tmp_path: Path,
) -> None:
    """Table 2 scored the 100-sample subset per scenario `--subset 100` draws (§3.1). A run of
    every sample (QD 112) was ranked as if it were that subset, and so was one of the first
    100 (`--limit 100`): other samples."""
    from proactivebench.report.comparable import subset_apart
    from proactivebench.report.runs import load_run

    lines = lines_for_row("table2_oeg", "LLaVA-1.5 7B")
    run = write_run(tmp_path, "oeg", lines, "m", {"mode": "oeg"})
    counts = paper_results()["filtering"]["counts_after"]
    by_scenario: dict[str, list[int]] = {}
    for line in lines:
        by_scenario.setdefault(line["scenario"], []).append(line["sample_id"])

    def recorded(selected_by: dict, extra: int = 0) -> str | None:
        config = json.loads((run / "run.json").read_text())
        scenarios = {}
        for s, ids in by_scenario.items():
            chosen = [*ids, *range(max(ids) + 1, max(ids) + 1 + extra)]
            available = max(counts[s], len(chosen))
            scenarios[s] = {
                "available": available,
                "selected": len(chosen),
                "ids": id_ranges(chosen),
            }
        config["selection"] = {"scenarios": scenarios, "shard": None, "synthetic": False}
        config["provenance"] = [{"started": "t", "ended": "t", "selected_by": selected_by}]
        (run / "run.json").write_text(json.dumps(config))
        return subset_apart(load_run(run))

    assert recorded({"subset": 100}) is None
    more = [s for s in by_scenario if counts[s] > 100]
    assert more  # the paper's data offers more than 100 of some scenarios
    assert recorded({"limit": 100}) == (
        f"settings the table does not have: {', '.join(more)} chosen otherwise than the "
        "paper's subset of 100 (--subset 100)"
    )
    assert "samples, not the paper's subset of 100 per scenario" in (recorded({}, extra=12) or "")


def test_only_a_history_run_at_224_px_stands_beside_fig_8(tmp_path: Path) -> None:
    """Fig. 8's runs were all played at a 224 px short edge (App. E): a history run at full
    size, or at 64 px, was set beside its averages with no note; a suite naming fig8_history
    for one was accepted."""
    from proactivebench.core.errors import SuiteFileError
    from proactivebench.jobs.suite import read_suite
    from proactivebench.report.published_figures import figure_of

    assert figure_of({"history": True, "resize_short_edge": 224}, all_samples=False) == (
        "fig8_history",
        "",
    )
    assert figure_of({"history": True}, all_samples=False) is None
    assert figure_of({"history": True, "resize_short_edge": 64}, all_samples=False) is None
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[[experiment]]\nid = "h"\nhistory = true\nresize_short_edge = 64\n'
        'published = "fig8_history"\n'
    )
    with pytest.raises(SuiteFileError, match="stand beside no table or figure of the paper"):
        read_suite(suite)


def test_a_suite_may_name_table_8_for_an_open_ended_experiment(tmp_path: Path) -> None:
    """Table 8 prints the aggregate that Table 2's runs also give (the report shows both for
    such a run): a suite naming table8_oeg_agg for an open-ended experiment was refused as
    'stand beside table2_oeg'."""
    from proactivebench.jobs.suite import read_suite

    suite = tmp_path / "s.toml"
    suite.write_text('[[experiment]]\nid = "o"\nmode = "oeg"\npublished = "table8_oeg_agg"\n')
    (experiment,) = read_suite(suite).experiments
    assert experiment.published == "table8_oeg_agg"


def test_the_page_shows_the_source_once_and_no_not_compared_in_a_cell(tmp_path: Path) -> None:
    """Issue 47, item 2: the page's Table 1 gave its width to a source column repeating
    "published, Table 1" 22 times, and printed "9.9 not compared" in the average cell. The
    page shows "published" (the caption names the table; the full text is the tooltip) and
    the paper's 9.9 alone (the notes say why it is not compared); the files keep the texts."""
    run = _made_up(tmp_path)
    _report(tmp_path, run, paper_model="Qwen-2.5-VL 7B")
    page = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    table = page.split('data-table="paper-table1-acc"')[1].split("</figure>")[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table)
    assert cells.count('<span title="published, Table 1">published</span>') == 22
    assert "not compared" not in re.sub(r"<[^>]+>", "", " ".join(cells))  # the shown text
    assert '<span title="9.9 not compared">9.9</span>' in cells
    assert "among the paper&#x27;s models (published: De Min et al. 2026, Table 1)" in table
    rows = _csv(tmp_path, "paper-table1-acc")
    assert sum(r["source"] == "published, Table 1" for r in rows) == 22
    assert "9.9 not compared" in (tmp_path / "rep" / "report.md").read_text()


def test_data_holding_part_of_the_papers_test_set_is_partial(tmp_path: Path) -> None:
    """Hostile tryout: a data directory holding part of the official set (a download cut
    short, a copy of a few records) was taken as whole, so runs on it were ranked among the
    paper's models. A selection is measured against the paper's test set per scenario (Fig.
    10's post-filtering counts, read here from paper_results.json), an open-ended one against
    the 100 samples the paper scored (all of a smaller scenario)."""
    from proactivebench.report.comparable import not_comparable
    from proactivebench.report.runs import load_run

    counts = json.loads(
        (
            Path(__file__).resolve().parents[1] / "src/proactivebench/spec/paper_results.json"
        ).read_text()
    )["filtering"]["counts_after"]

    def reasons(available: dict[str, int], mode: str = "mcqa") -> list[str]:
        lines = [mcqa_line(s, i, True, 0) for s in available for i in sample_ids(s, 2)]
        if mode != "mcqa":
            lines = [{**x, "mode": mode} for x in lines]
        name = f"{mode}-{len(list(tmp_path.iterdir()))}"
        run = write_run(tmp_path, name, lines, "m", {"mode": mode} if mode != "mcqa" else {})
        scenarios = {
            s: {"available": n, "ids": id_ranges(sample_ids(s, 2))} for s, n in available.items()
        }
        config = json.loads((run / "run.json").read_text())
        selection = {"scenarios": scenarios, "shard": None, "synthetic": False}
        (run / "run.json").write_text(json.dumps({**config, "selection": selection}))
        parts = (p for r in not_comparable(load_run(run)) for p in r.split(", "))
        return [p.removeprefix("partial: ") for p in parts if "of the paper's" in p]

    assert reasons({"ROD": 10, "VSOD": counts["VSOD"]}) == [
        f"ROD 10 of the paper's {counts['ROD']} samples in the data"
    ]
    whole = {s: counts[s] for s in ("ROD", "VSOD", "MVP-N")}
    assert reasons(whole) == []
    # Open-ended: the paper scored 100 a scenario, all 42 of VSOD's.
    assert reasons({"VSOD": 42, "MVP-N": 100}, mode="oeg") == []
    assert reasons({"MVP-N": 99}, mode="oeg") == ["MVP-N 99 of the paper's 100 samples in the data"]
