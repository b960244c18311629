"""Agreement between annotators: the report of several human runs (`play`) says how often
people chose the same option, beyond chance (Cohen's kappa for two, Fleiss' for more).

The items are turns, and only turns where every annotator was shown the same thing (the same
image, crop and options): after different choices two people's episodes part, and their later
turns are different questions. A choice is the text of the option chosen (the letter read
against the options shown), so a shuffled option order compares what was meant.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from proactivebench.benchmark.registry import scenario_order
from proactivebench.core.stats import cohen_kappa, fleiss_kappa
from proactivebench.report.runs import Run
from proactivebench.report.tables import MISSING, Cell, Table

HUMAN = "human:"


def _chosen(turn: dict[str, Any]) -> str:
    """The option a turn's answer chose, as text (the answer itself if it names none)."""
    answer = str(turn.get("answer") or "").strip()
    options = turn.get("options") or []
    index = ord(answer) - 65 if len(answer) == 1 and answer.isupper() else -1
    return str(options[index]) if 0 <= index < len(options) else answer


def _shown(turn: dict[str, Any]) -> Hashable:
    return (turn.get("turn"), turn.get("image"), str(turn.get("crop")), str(turn.get("options")))


def shared_turns(runs: Sequence[Run], scenario: str) -> list[list[str]]:
    """Per turn shown alike to every run: each run's choice."""
    per_run = []
    for run in runs:
        turns: dict[Hashable, str] = {}
        for line in run.by_scenario.get(scenario, []):
            for turn in line.get("trace") or []:
                turns[line["sample_id"], _shown(turn)] = _chosen(turn)
        per_run.append(turns)
    common = set.intersection(*(set(t) for t in per_run)) if per_run else set()
    return [[turns[key] for turns in per_run] for key in sorted(common, key=str)]


def kappa(items: Sequence[Sequence[str]], raters: int) -> float | None:
    if raters == 2:
        return cohen_kappa([i[0] for i in items], [i[1] for i in items])
    return fleiss_kappa(items)


def agreement_table(runs: Sequence[Run]) -> Table | None:
    """The agreement of the human runs among `runs`, by scenario; None with fewer than two."""
    people = [r for r in runs if r.model.startswith(HUMAN)]
    if len(people) < 2:
        return None
    statistic = "Cohen's" if len(people) == 2 else "Fleiss'"
    scenarios = scenario_order(sorted({s for r in people for s in r.scenarios}))
    rows: list[list[Cell]] = []
    pooled: list[list[str]] = []
    for scenario in scenarios:
        items = shared_turns(people, scenario)
        pooled += items
        rows.append(_row(scenario, items, len(people)))
    rows.append(_row("all", pooled, len(people)))
    names = ", ".join(r.model.removeprefix(HUMAN) for r in people)
    return Table(
        key="agreement",
        title=f"Agreement between annotators ({names}): {statistic} kappa on the option "
        "chosen per turn",
        columns=["scenario", "turns compared", "kappa"],
        rows=rows,
        notes=[
            "Turns compared: those every annotator was shown alike (same image and options); "
            "episodes part after different choices. 1 is full agreement, 0 what chance gives."
        ],
    )


def _row(name: str, items: Sequence[Sequence[str]], raters: int) -> list[Cell]:
    value = kappa(items, raters) if items else None
    shown = Cell(MISSING) if value is None else Cell(f"{value:.2f}", value)
    return [Cell(name), Cell(str(len(items)), float(len(items))), shown]
