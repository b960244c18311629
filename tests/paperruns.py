"""Runs made by hand from the paper's own counts: result lines whose rates are a published
row's printed values (n episodes per scenario as the paper had them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from proactivebench.benchmark.paper_results import paper_results, paper_table
from proactivebench.benchmark.protocol import official_filter_ids
from proactivebench.benchmark.registry import by_stem

SCENARIOS = ("ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT", "COCO")
#: OEG and multi-turn OEG: 100 samples per scenario, capped at the filtered set (paper §3.1).
OEG_SAMPLES = 100


def episodes_per_scenario(table: str) -> dict[str, int]:
    """How many episodes the paper scored per scenario in `table`."""
    filtering = paper_results()["filtering"]
    counts = filtering["counts_before" if table == "table4_unfiltered" else "counts_after"]
    if table in ("table2_oeg", "table9_oeg_hint", "table10_multiturn_oeg"):
        return {s: min(OEG_SAMPLES, counts[s]) for s in SCENARIOS}
    return {s: counts[s] for s in SCENARIOS}


def mcqa_line(scenario: str, sample: int, correct: bool, suggestions: int) -> dict[str, Any]:
    """One MCQA episode: `suggestions` accepted proactive turns, then a category."""
    trace = [
        {"turn": t + 1, "options": ["Move.", "cat"], "answer": "A", "verdict": "proactive"}
        for t in range(suggestions)
    ]
    last = {"turn": suggestions + 1, "options": ["Move.", "cat"], "answer": "B"}
    trace.append({**last, "verdict": "correct" if correct else "wrong"})
    return {
        "scenario": scenario,
        "sample_id": sample,
        "correct": correct,
        "num_turns": suggestions + 1,
        "proactive_suggestions": suggestions,
        "trace": trace,
        "end_reason": "correct" if correct else "wrong",
        "correct_category": "cat",
    }


def oeg_line(scenario: str, sample: int, cc: bool, ps: bool, agg: bool) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "sample_id": sample,
        "prompt": "What is it?",
        "answer": "an answer",
        "category_prediction": int(cc),
        "proactive_suggestion": int(ps),
        "aggregate": int(agg),
    }


def sample_ids(scenario: str, n: int, filtered: bool = True) -> list[int]:
    """`n` sample ids the official test filter keeps (as a filtered run plays them), or, not
    `filtered`, every filtered id then ids it drops (an `--all-samples` run)."""
    stem = {short: stem for stem, short in by_stem().items()}[scenario]
    kept = sorted(official_filter_ids(stem))
    if filtered:
        assert len(kept) >= n, (scenario, len(kept), n)
        return kept[:n]
    known = set(kept)
    dropped = (i for i in range(10**7) if i not in known)
    return [*kept, *(next(dropped) for _ in range(n - len(kept)))][:n]


def _count(percent: float, n: int) -> int:
    return round(percent / 100 * n)


def lines_for_row(table: str, model: str) -> list[dict[str, Any]]:
    """Result lines whose per-scenario rates are `model`'s printed row in `table`."""
    row = next(r for r in paper_table(table)["rows"] if r["model"] == model)
    lines: list[dict[str, Any]] = []
    for scenario, n in episodes_per_scenario(table).items():
        cells = row["cells"][scenario]
        ids = sample_ids(scenario, n, filtered=table != "table4_unfiltered")
        if "cc" in cells:  # open-ended: category / suggestion / either per answer
            cc, ps = _count(cells["cc"], n), _count(cells["ps"], n)
            agg = _count(cells["agg"], n) if "agg" in cells else max(cc, ps)
            both = cc + ps - agg
            flags = [(i < cc, i < both or cc <= i < cc + ps - both) for i in range(n)]
            lines += [oeg_line(scenario, ids[i], c, p, c or p) for i, (c, p) in enumerate(flags)]
            continue
        right = _count(cells["acc"], n)
        total = round(cells.get("psr", 0.0) * n)
        for i in range(n):
            suggestions = total // n + (1 if i < total % n else 0)
            lines.append(mcqa_line(scenario, ids[i], i < right, suggestions))
    return lines


def write_run(
    root: Path,
    name: str,
    lines: list[dict[str, Any]],
    model: str,
    settings: dict[str, Any] | None = None,
) -> Path:
    """A run directory as `eval` left it before run.json recorded a selection: run.json and
    results.jsonl, its data directory at hand (empty: the paper's data, as far as anything
    tells; without it the run's comparability is unknown, `comparable.unknown`)."""
    run = root / name
    run.mkdir(parents=True)
    (root / "no-data").mkdir(parents=True, exist_ok=True)
    config = {"data_dir": str(root / "no-data"), "model": model, "settings": settings or {}}
    (run / "run.json").write_text(json.dumps(config))
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run
