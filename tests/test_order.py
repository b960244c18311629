"""The one rule for ordering scenarios (`registry.scenario_order`, `scenario_rank`) and for
telling an open-ended line from an MCQA one (`results.is_oeg_line`), which every table,
summary, result file and reader uses."""

from __future__ import annotations

from proactivebench.benchmark.metrics import summarize
from proactivebench.benchmark.registry import paper_scenarios, scenario_order, scenario_rank
from proactivebench.benchmark.results import is_oeg_line, result_order


def test_the_papers_order_then_unknown_names_by_name() -> None:
    names = ["TOY", "COCO", "ROD", "AAA", "QD", "ROD", "VSOD"]
    assert scenario_order(names) == ["ROD", "VSOD", "QD", "COCO", "AAA", "TOY"]
    assert [scenario_rank(s) for s in paper_scenarios()] == list(range(7))
    assert scenario_rank("TOY") == scenario_rank("AAA") == 7
    lines = [{"scenario": "COCO", "sample_id": 1}, {"scenario": "ROD", "sample_id": 9}]
    lines.append({"scenario": "ROD", "sample_id": 2})
    assert [(r["scenario"], r["sample_id"]) for r in sorted(lines, key=result_order)] == [
        ("ROD", 2),
        ("ROD", 9),
        ("COCO", 1),
    ]


def test_a_summary_lists_scenarios_in_that_order() -> None:
    lines = [
        {"scenario": s, "sample_id": 0, "correct": True, "num_turns": 1, "trace": []}
        for s in ("COCO", "QD", "ROD")
    ]
    assert list(summarize(lines).scenarios) == ["ROD", "QD", "COCO"]


def test_what_makes_a_line_open_ended() -> None:
    assert is_oeg_line({"prompt": "p", "generation": "g"})
    assert is_oeg_line({"aggregate": None, "error": "the judge failed"})  # no prompt kept
    assert not is_oeg_line({"trace": [], "correct": False})
    assert not is_oeg_line({"trace": [], "prompt": "p"})  # a trace makes it MCQA
