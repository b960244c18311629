"""The scenarios, each registered once: everything else reads its tables from here.

A registration (`ScenarioInfo`) names what a scenario brings: its episode class (its rules,
and through it its short name, record type and protocol strings), its synthetic generator,
its plot marker, how training recognises its official rows, and whether the official test
filter applies. The paper's seven are registered below, in the paper's order; a scenario of
one's own is registered from outside the package with `register_scenario` and is then
loaded, played, generated, reported and trained on like them.

Tables derived from here, and nowhere else: the known names (`scenario_names`), their one
order (`scenario_rank`, `scenario_order`), the file each is read from (`by_stem`), the
episode of a record (`make_episode`), the texts the random-suggestions ablation draws from
(`foreign_interventions`), and the paper's set an unqualified average covers
(`paper_scenarios`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proactivebench.benchmark.protocol import ScenarioStrings, action_keywords, official_filter_ids
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.scenarios.actions import is_abstention
from proactivebench.benchmark.scenarios.base import Episode
from proactivebench.benchmark.scenarios.cit import CITEpisode
from proactivebench.benchmark.scenarios.coco import COCOEpisode
from proactivebench.benchmark.scenarios.inc import INCEpisode
from proactivebench.benchmark.scenarios.mvpn import MVPNEpisode
from proactivebench.benchmark.scenarios.qd import QDEpisode
from proactivebench.benchmark.scenarios.rod import RODEpisode
from proactivebench.benchmark.scenarios.vsod import VSODEpisode

if TYPE_CHECKING:
    import numpy as np

#: A synthetic sample builder: (its own random stream, sample index, balanced-cycle slot) →
#: a `data.synth.common.Sample` (the record's JSON object and its images; the generator
#: builds on the registry, not the other way round).
Builder = Callable[["np.random.Generator", int, int], Any]


@dataclass(frozen=True)
class OptionCues:
    """What an official training row shows of its scenario: the options' texts (lower case,
    abstentions left out), the actions their keywords name, and the prompt (lower case)."""

    texts: tuple[str, ...]
    actions: frozenset[str]
    prompt: str

    @classmethod
    def of(cls, options: Iterable[str], prompt: str = "") -> OptionCues:
        texts = tuple(o.lower() for o in options if not is_abstention(o))
        table = (*action_keywords(), *(k for i in _REGISTRY.values() for k in i.episode.keywords))
        actions = frozenset(a for o in texts for keyword, a in table if keyword in o)
        return cls(texts, actions, prompt.lower())

    def mention(self, word: str) -> bool:
        return any(word in text for text in self.texts)


@dataclass(frozen=True)
class ScenarioInfo:
    """One scenario's registration.

    `recognise` tells training which scenario an official row without a scenario column
    belongs to; registrations are asked in `recognise_rank` order (lower first), since the
    cues overlap (a rewind is VSOD's when the occlusion is named, else CIT's).
    `filter_ids` gives, from the file's stem, the ids the official test set keeps (None:
    every record is kept); a directory our generator made is never filtered.
    """

    episode: type[Episode]
    #: The synthetic generator: a function, or where one is ("package.module:function",
    #: imported when first used, so that knowing the scenarios costs no NumPy or Pillow).
    generate: Builder | str | None = None
    #: A matplotlib marker for the scenario's points in the report's scatter.
    marker: str = "h"
    recognise: Callable[[OptionCues], bool] | None = None
    recognise_rank: int = 100
    filter_ids: Callable[[str], frozenset[int]] | None = None
    #: One of the paper's seven: the unqualified "average" covers exactly these.
    in_paper: bool = False
    #: Derived, not given.
    short: str = field(init=False)
    record_type: type[Record] = field(init=False)

    def __post_init__(self) -> None:
        short, record_type = self.episode.scenario, self.episode.record_type
        if not short or record_type is Record:
            raise ValueError(
                f"{self.episode.__name__} must set `scenario` and `record_type` to register"
            )
        if record_type.scenario != short:
            raise ValueError(
                f"{self.episode.__name__} plays {short!r} but its record type "
                f"{record_type.__name__} is {record_type.scenario!r}'s"
            )
        object.__setattr__(self, "short", short)
        object.__setattr__(self, "record_type", record_type)

    @property
    def strings(self) -> ScenarioStrings:
        return self.episode.strings()

    def generator(self) -> Builder | None:
        """The synthetic generator, imported if the registration names where it is."""
        if not isinstance(self.generate, str):
            return self.generate
        module, _, name = self.generate.partition(":")
        builder: Builder = getattr(importlib.import_module(module), name)
        return builder


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
    cues = OptionCues.of(options, prompt)
    for info in sorted(_REGISTRY.values(), key=lambda info: info.recognise_rank):
        if info.recognise is not None and info.recognise(cues):
            return info.short
    return None


# ----- the paper's seven ------------------------------------------------------------------------
#
# How their official rows are told apart (the protocol's keyword table and the wordings of
# docs/protocol.md §6): blocks → ROD, camera or "farther" → COCO, a rotation → MVP-N, an
# enhancement → IN-C, more details → QD, a rewind or a wait → VSOD when the occlusion is named,
# else CIT.

_INC_ACTIONS = frozenset(
    {
        "BRIGHTNESS",
        "CONTRAST",
        "SATURATE",
        "BLUR",
        "NOISE",
        "JPEG_COMPRESSION",
        "PIXELATE",
        "ARTIFACTS",
    }
)


def _moves_in_time(cues: OptionCues) -> bool:
    return bool(cues.actions & {"REWIND", "FORWARD"})


def _names_occlusion(cues: OptionCues) -> bool:
    return cues.mention("occlu") or "occlu" in cues.prompt


def _paper(
    episode: type[Episode],
    synth: str,
    marker: str,
    recognise: Callable[[OptionCues], bool],
    rank: int,
) -> ScenarioInfo:
    return ScenarioInfo(
        episode,
        generate=f"proactivebench.data.synth.{synth}:make_sample",
        marker=marker,
        recognise=recognise,
        recognise_rank=rank,
        filter_ids=official_filter_ids,
        in_paper=True,
    )


# Markers: seven shapes a reader tells apart in print and in grey (a scenario of one's own
# gets a hexagon unless it names one).
for _info in (
    _paper(RODEpisode, "rod", "o", lambda c: c.mention("block"), 1),
    _paper(
        VSODEpisode,
        "vsod",
        "s",
        lambda c: _moves_in_time(c) and _names_occlusion(c),
        6,
    ),
    _paper(MVPNEpisode, "mvpn", "^", lambda c: "ROTATE" in c.actions, 3),
    _paper(INCEpisode, "inc", "D", lambda c: bool(c.actions & _INC_ACTIONS), 4),
    _paper(QDEpisode, "qd", "v", lambda c: "DETAILS" in c.actions, 5),
    _paper(CITEpisode, "cit", "P", _moves_in_time, 7),
    _paper(
        COCOEpisode,
        "coco",
        "X",
        lambda c: c.mention("camera") or "ZOOM" in c.actions,
        2,
    ),
):
    register_scenario(_info)
