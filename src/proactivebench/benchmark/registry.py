"""The scenarios, each registered once: everything else reads its tables from here.

A registration (`ScenarioInfo`) names what a scenario brings: its episode class (its rules,
and through it its short name, record type and protocol strings), its synthetic generator,
its plot marker, how training recognises its official rows, and whether the official test
filter applies. Each of the paper's seven declares its own at the end of its module
(`benchmark/scenarios/*.py`); they are registered below, in the paper's order. A scenario
of one's own is registered from outside the package with `register_scenario` and is then
loaded, played, generated, reported and trained on like them.

Tables derived from here, and nowhere else: the known names (`scenario_names`), their one
order (`scenario_rank`, `scenario_order`), the file each is read from (`by_stem`), the
episode of a record (`make_episode`), the texts the random-suggestions ablation draws from
(`foreign_interventions`), and the paper's set an unqualified average covers
(`paper_scenarios`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from proactivebench.benchmark.records import Record
from proactivebench.benchmark.scenarios import cit, coco, inc, mvpn, qd, rod, vsod
from proactivebench.benchmark.scenarios.base import Episode
from proactivebench.benchmark.scenarios.registration import Builder, OptionCues, ScenarioInfo

__all__ = [
    "Builder",
    "OptionCues",
    "ScenarioInfo",
    "by_stem",
    "foreign_interventions",
    "lookup",
    "make_episode",
    "paper_scenarios",
    "recognise",
    "register_scenario",
    "scenario",
    "scenario_names",
    "scenario_order",
    "scenario_rank",
    "unregister_scenario",
]

_REGISTRY: dict[str, ScenarioInfo] = {}


def register_scenario(info: ScenarioInfo) -> ScenarioInfo:
    """Add a scenario (after those already known, in order); refuses a short name, a file
    stem or a data file that is taken, so that no two scenarios read one file."""
    taken = next((s for s in _REGISTRY.values() if _clashes(s, info)), None)
    if taken is not None:
        raise ValueError(
            f"cannot register {info.short!r}: {taken.short!r} already has its name or data file"
        )
    _REGISTRY[info.short] = info
    return info


def _clashes(a: ScenarioInfo, b: ScenarioInfo) -> bool:
    if a.short.upper() == b.short.upper():
        return True
    sa, sb = a.strings, b.strings
    return sa.stem == sb.stem or sa.dataset_file == sb.dataset_file


def unregister_scenario(short: str) -> None:
    """Remove a scenario registered from outside the package (the paper's seven stay)."""
    info = _REGISTRY.get(short)
    if info is None:
        raise KeyError(short)
    if info.in_paper:
        raise ValueError(f"{short} is one of the paper's scenarios and stays registered")
    del _REGISTRY[short]


def scenario(short: str) -> ScenarioInfo:
    """The registration of `short` (exact spelling); KeyError for one not registered."""
    return _REGISTRY[short]


def scenario_names() -> tuple[str, ...]:
    """Every registered scenario: the paper's seven in its order, then the others."""
    return tuple(_REGISTRY)


def paper_scenarios() -> tuple[str, ...]:
    """The paper's seven, in its order."""
    return tuple(s for s, info in _REGISTRY.items() if info.in_paper)


def lookup(name: str) -> str | None:
    """The registered short name `name` spells, in any case (`mvp-n` → `MVP-N`), or None."""
    return next((s for s in _REGISTRY if s.upper() == name.upper()), None)


def by_stem() -> dict[str, str]:
    """Data file stems (e.g. ``coco2014``) to short names (``COCO``)."""
    return {info.strings.stem: s for s, info in _REGISTRY.items()}


def scenario_rank(short: str) -> int:
    """Where a scenario comes: registration order (the paper's first); an unknown name after
    every registered one (tables, summaries and result files sort by this one rule)."""
    names = scenario_names()
    return names.index(short) if short in names else len(names)


def scenario_order(names: Iterable[str]) -> list[str]:
    """Scenario names, each once, in registration order; unknown ones last, by name."""
    return sorted(set(names), key=lambda s: (scenario_rank(s), s))


def make_episode(record: Record, **options: Any) -> Episode:
    """The episode of `record`'s scenario; options as for `Episode`. With
    `random_suggestions` the episode is handed the other scenarios' interventions to draw
    from (`foreign_interventions`), unless the caller gives its own `suggestion_pool`."""
    if options.get("random_suggestions") and "suggestion_pool" not in options:
        options["suggestion_pool"] = foreign_interventions(record.scenario)
    return _REGISTRY[record.scenario].episode(record, **options)


def foreign_interventions(short: str) -> tuple[str, ...]:
    """The intervention texts of every registered scenario but `short` (`Episode.interventions`),
    in registration order, each once: what the random-suggestions ablation shows in `short`'s
    episodes instead of their own (docs/protocol.md §5). No data file is read."""
    texts = (t for s, info in _REGISTRY.items() if s != short for t in info.episode.interventions)
    return tuple(dict.fromkeys(texts))


def recognise(options: Iterable[str], prompt: str = "") -> str | None:
    """The scenario whose interventions the options offer, or None."""
    keywords = tuple(k for info in _REGISTRY.values() for k in info.episode.keywords)
    cues = OptionCues.of(options, prompt, keywords)
    for info in sorted(_REGISTRY.values(), key=lambda info: info.recognise_rank):
        if info.recognise is not None and info.recognise(cues):
            return info.short
    return None


# The paper's seven, in its order. Their markers are seven shapes a reader tells apart in
# print and in grey (a scenario of one's own gets a hexagon unless it names one).
for _module in (rod, vsod, mvpn, inc, qd, cit, coco):
    register_scenario(_module.REGISTRATION)
