"""What a scenario declares to be registered (`ScenarioInfo`), beside its episode.

Each scenario module ends with its own registration, so that a scenario is read in one
file; `benchmark.registry` only lists them in the paper's order. This module knows no
scenario: the registry imports the scenarios, and they import this.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proactivebench.benchmark.protocol import (
    ScenarioStrings,
    action_keywords,
    fixed_action_space,
    official_filter_ids,
)
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.scenarios.actions import Keywords, is_abstention
from proactivebench.benchmark.scenarios.base import Episode

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
    def of(cls, options: Iterable[str], prompt: str = "", keywords: Keywords = ()) -> OptionCues:
        """Read with the protocol's keyword table and `keywords` (those scenarios add)."""
        texts = tuple(o.lower() for o in options if not is_abstention(o))
        table = (*action_keywords(), *keywords)
        actions = frozenset(a for o in texts for keyword, a in table if keyword in o)
        return cls(texts, actions, prompt.lower())

    def mention(self, word: str) -> bool:
        """Whether an option's text holds `word` (lower case)."""
        return any(word in text for text in self.texts)

    def offer(self, *actions: str) -> bool:
        """Whether the options name one of `actions`."""
        return not self.actions.isdisjoint(actions)


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

    @classmethod
    def paper(
        cls,
        episode: type[Episode],
        *,
        marker: str,
        rank: int,
        recognise: Callable[[OptionCues], bool] | None = None,
    ) -> ScenarioInfo:
        """One of the paper's seven, registered alike: its generator is `make_sample` of the
        `data/synth` module named as its own, the authors' test filter applies, the
        unqualified average covers it, and an official row is its own, unless `recognise`
        says otherwise, when an option names an action of its fixed action space."""
        module = episode.__module__.rsplit(".", 1)[-1]
        short = episode.scenario
        return cls(
            episode,
            generate=f"proactivebench.data.synth.{module}:make_sample",
            marker=marker,
            recognise=recognise or (lambda cues: cues.offer(*fixed_action_space(short))),
            recognise_rank=rank,
            filter_ids=official_filter_ids,
            in_paper=True,
        )

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
