"""benchmarks/versions.py compares exactly what it says: lines and summaries by one rule (a
later version may add fields, at any depth, never change or drop one), each difference shown
where it is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "versions.py"


def _versions():
    spec = importlib.util.spec_from_file_location("bench_versions", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


versions = _versions()


def line(sample: int, **turn_extra: object) -> dict:
    return {
        "scenario": "ROD",
        "sample_id": sample,
        "correct": True,
        "trace": [
            {"turn": 0, "verdict": "proactive"},
            {"turn": 1, "verdict": "correct", **turn_extra},
        ],
    }


SUMMARY = {"scenarios": {"ROD": {"accuracy": 100.0}}, "average": {"accuracy": 100.0}}


def test_equal_lines_and_summaries_are_identical() -> None:
    assert versions.compared([line(0), line(1)], [line(0), line(1)], SUMMARY, SUMMARY) == (
        True,
        "identical",
    )


def test_a_field_added_to_every_turn_is_named_not_a_difference() -> None:
    new = [line(0, reason="ROD accepts no category yet"), line(1, reason="x")]
    summary = {
        "scenarios": {"ROD": {"accuracy": 100.0, "blind_asking": 0.0}},
        "average": {"accuracy": 100.0, "blind_asking": 0.0},
    }
    equal, verdict = versions.compared([line(0), line(1)], new, SUMMARY, summary)
    assert equal
    assert verdict == (
        "identical (the new version adds: results.jsonl trace[].reason; summary.json blind_asking)"
    )


def test_a_changed_value_is_shown_with_its_episode_and_path() -> None:
    changed = line(1)
    changed["trace"][1]["verdict"] = "wrong"
    equal, verdict = versions.compared([line(0), line(1)], [line(0), changed], SUMMARY, SUMMARY)
    assert not equal
    assert verdict == (
        'DIFFERENT (results.jsonl, ROD sample 1: trace[1].verdict: "correct" before, "wrong" now)'
    )


def test_a_dropped_field_a_changed_type_and_a_missing_line_are_differences() -> None:
    dropped = line(0)
    del dropped["correct"]
    assert versions.compared([line(0)], [dropped], SUMMARY, SUMMARY) == (
        False,
        "DIFFERENT (results.jsonl, ROD sample 0: correct dropped)",
    )
    as_float = {"scenarios": {"ROD": {"accuracy": 100}}, "average": {"accuracy": 100.0}}
    assert versions.compared([line(0)], [line(0)], as_float, SUMMARY) == (
        False,
        "DIFFERENT (summary.json: scenarios.ROD.accuracy: 100 before, 100.0 now)",
    )
    assert versions.compared([line(0), line(1)], [line(0)], SUMMARY, SUMMARY) == (
        False,
        "DIFFERENT (results.jsonl: 2 lines before, 1 now)",
    )
