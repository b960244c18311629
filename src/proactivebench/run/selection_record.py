"""What a run selected, as `run.json` records it (`selection`), so that every reader can tell
its lines from pasted or foreign ones without the data at hand.

    "selection": {"scenarios": {"ROD": {"available": 57, "selected": 30, "ids": "0-29,31"}},
                  "shard": [0, 2] or null, "synthetic": false}

Per scenario: `available`, the episodes the data offered under the run's scenario and filter
choice (before `--limit` and sharding; null when not known: a scenario played only before run.json
recorded its selection); `selected`, how many of them the run chose; `ids`, the chosen sample
ids as sorted ranges (`id_ranges`). `shard` is the slice a sharded run plays, `synthetic` whether
the data was generated (`data synth`). A run extended by a rerun (a larger `--limit`, more
scenarios) records what all its invocations selected; a merged run what its shards selected.
It is a record, not the run's identity: a resume never compares it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.benchmark.registry import scenario_rank
from proactivebench.core.errors import DamagedRunError

#: The run.json key.
SELECTION = "selection"

_RANGE = re.compile(r"(-?\d+)(?:-(-?\d+))?")


def id_ranges(ids: Iterable[int]) -> str:
    """Sample ids as sorted ranges: [0, 1, 2, 5, 7, 8] → "0-2,5,7-8" (ids may be negative:
    "-3--1")."""
    parts: list[str] = []
    run: list[int] = []
    for sample_id in sorted(set(ids)):
        if run and sample_id == run[-1] + 1:
            run.append(sample_id)
            continue
        if run:
            parts.append(_range_text(run))
        run = [sample_id]
    if run:
        parts.append(_range_text(run))
    return ",".join(parts)


def _range_text(run: Sequence[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


def parse_id_ranges(text: str) -> frozenset[int]:
    """The ids `id_ranges` wrote; ValueError naming the part that is not a range."""
    ids: set[int] = set()
    for part in filter(None, text.split(",")):
        match = _RANGE.fullmatch(part.strip())
        if match is None:
            raise ValueError(f"{part!r} is not a sample id or a range of them")
        first = int(match[1])
        last = int(match[2]) if match[2] is not None else first
        if last < first:
            raise ValueError(f"{part!r} is a range that ends before it begins")
        ids.update(range(first, last + 1))
    return frozenset(ids)


@dataclass(frozen=True)
class ScenarioSelection:
    """One scenario's entry: what the data offered, and the ids chosen."""

    available: int | None
    ids: frozenset[int] = frozenset()

    @property
    def selected(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class Selection:
    """run.json's `selection` (see the module's docstring)."""

    scenarios: dict[str, ScenarioSelection] = field(default_factory=dict)
    shard: tuple[int, int] | None = None
    synthetic: bool = False

    def holds(self, scenario: str, sample_id: int) -> bool:
        entry = self.scenarios.get(scenario)
        return entry is not None and sample_id in entry.ids

    def joined(self, other: Selection, shard: tuple[int, int] | None) -> Selection:
        """What both selected (a run's earlier invocations and this one, or the shards of a
        merge, whose `shard` is then None); `available` the largest either knew."""
        scenarios = dict(self.scenarios)
        for name, entry in other.scenarios.items():
            mine = scenarios.get(name)
            if mine is None:
                scenarios[name] = entry
                continue
            offers = [a for a in (mine.available, entry.available) if a is not None]
            # The largest offer of any invocation: one that played every sample
            # (--all-samples, which the run's identity does not record) and one resumed on the
            # filtered set are one run, whose ids may outnumber the smaller offer.
            scenarios[name] = ScenarioSelection(max(offers, default=None), mine.ids | entry.ids)
        return Selection(scenarios, shard, self.synthetic or other.synthetic)

    def to_json(self) -> dict[str, Any]:
        names = sorted(self.scenarios, key=lambda name: (scenario_rank(name), name))
        return {
            "scenarios": {
                name: {
                    "available": self.scenarios[name].available,
                    "selected": self.scenarios[name].selected,
                    "ids": id_ranges(self.scenarios[name].ids),
                }
                for name in names
            },
            "shard": list(self.shard) if self.shard is not None else None,
            "synthetic": self.synthetic,
        }


def played_keys(keys: Iterable[tuple[str, int]]) -> Selection:
    """The selection that holds exactly these episodes, what the data offered unknown: what a
    run begun before run.json recorded its selection is known to have chosen (its lines)."""
    ids: dict[str, set[int]] = {}
    for scenario, sample_id in keys:
        ids.setdefault(scenario, set()).add(sample_id)
    return Selection({s: ScenarioSelection(None, frozenset(i)) for s, i in ids.items()})


def selection_of(config: Mapping[str, Any], where: Path | str = "run.json") -> Selection | None:
    """The selection a run.json (`config`) records; None for one written before it was
    recorded. A damaged one is an error naming `where` and the field, never read as none."""
    value = config.get(SELECTION)
    if value is None:
        return None
    try:
        return _parsed(value)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise DamagedRunError(
            f"{where} is damaged: its {SELECTION} cannot be read ({exc})"
        ) from None


def _parsed(value: Any) -> Selection:
    if not isinstance(value, dict) or not isinstance(value.get("scenarios"), dict):
        raise ValueError("not an object with scenarios")
    scenarios = {}
    for name, entry in value["scenarios"].items():
        available = entry["available"]
        if available is not None and (
            isinstance(available, bool) or not isinstance(available, int) or available < 0
        ):
            raise ValueError(f"{name}: available must be a whole number (at least 0) or null")
        if not isinstance(entry["ids"], str):
            raise ValueError(f"{name}: ids must be a text of ranges")
        ids = parse_id_ranges(entry["ids"])
        if entry.get("selected", len(ids)) != len(ids):
            raise ValueError(f"{name}: selected {entry['selected']!r} but {len(ids)} ids")
        if available is not None and len(ids) > available:
            # A record no run writes (`joined` keeps the largest offer): its ids cannot be
            # trusted to tell the run's lines from pasted ones.
            raise ValueError(f"{name}: {len(ids)} ids selected of {available} available")
        scenarios[name] = ScenarioSelection(available, ids)
    shard = value.get("shard")
    if shard is not None:
        index, count = shard
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (index, count)):
            raise ValueError("shard must be [index, count]")
        shard = (index, count)
    return Selection(scenarios, shard, value.get("synthetic") is True)
