"""Agreement between annotators in the report of human runs, against hand-computed kappas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proactivebench.report import write_report
from proactivebench.report.agreement import agreement_table
from proactivebench.report.runs import load_runs
from test_report import make_run, turn


def lines(choices: list[str], odd_image: int | None = None) -> list[dict[str, Any]]:
    """One-turn ROD episodes, sample i answered choices[i]; `odd_image` is shown another
    image, so it is no shared turn."""
    found = []
    for sample, letter in enumerate(choices):
        image = {"image": "img/9.png"} if sample == odd_image else {}
        found.append(
            {
                "scenario": "ROD",
                "sample_id": sample,
                "num_turns": 1,
                "correct": False,
                "end_reason": "wrong",
                "trace": [{**turn(1, letter, "wrong"), **image}],
            }
        )
    return found


def test_two_annotators_get_cohens_kappa_over_the_turns_shown_alike(tmp_path: Path) -> None:
    # Shared turns 0-3: A/A, A/B, B/B, C/C. p_o = 3/4; the first chose A 2, B 1, C 1 times,
    # the second A 1, B 2, C 1: p_e = (2 + 2 + 1) / 16 = 5/16; kappa = (12 - 5) / 11 = 7/11.
    # Sample 4 showed the second annotator another image: not compared.
    first = make_run(tmp_path, "ann", lines(["A", "A", "B", "C", "A"]), model="human:ann")
    second = make_run(tmp_path, "bob", lines(["A", "B", "B", "C", "B"], 4), model="human:bob")
    model = make_run(tmp_path, "model", lines(["C"] * 5), model="baseline:oracle")
    table = agreement_table(load_runs([first, second, model]))
    assert table is not None and "Cohen's" in table.title and "ann, bob" in table.title
    rod, everything = table.rows
    assert [c.text for c in rod[:2]] == ["ROD", "4"]
    assert rod[2].value == pytest.approx(7 / 11)
    assert everything[2].value == pytest.approx(7 / 11)
    outcome = write_report([first, second, model], tmp_path / "report")
    assert (tmp_path / "report" / "tables" / "agreement.csv").is_file()
    assert any(t.key == "agreement" for t in outcome.headline)


def test_three_annotators_get_fleiss_kappa_and_one_gets_none(tmp_path: Path) -> None:
    # Items [A,A,A], [A,A,B], [B,B,C] by sample: kappa = 10/46 (tests/test_stats.py).
    runs = [
        make_run(tmp_path, name, lines(choices), model=f"human:{name}")
        for name, choices in (("a", ["A", "A", "B"]), ("b", ["A", "A", "B"]), ("c", list("ABC")))
    ]
    table = agreement_table(load_runs(runs))
    assert table is not None and "Fleiss'" in table.title
    assert table.rows[0][2].value == pytest.approx(10 / 46)
    assert agreement_table(load_runs(runs[:1])) is None
