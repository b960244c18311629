"""The benchmark's fixed strings and constants, read from the package data.

`spec/protocol.json` and `spec/official_filter_ids.json` are the authors' data (see NOTICE);
they are loaded here once and exposed as typed, read-only values so that no other module ever
retypes a hint, a keyword or a filter id. Which scenarios exist, and their order, is the
registry's (`proactivebench.benchmark.registry`); each episode (`Episode.strings()`) reads the
paper's seven's strings from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any


@cache
def _load(name: str) -> dict[str, Any]:
    with resources.files("proactivebench.spec").joinpath(name).open(encoding="utf-8") as f:
        return json.load(f)


def spec_json(name: str) -> dict[str, Any]:
    """A parsed JSON file of the package's `spec/` folder, read once (do not mutate)."""
    return _load(name)


def raw_protocol() -> dict[str, Any]:
    """The parsed `protocol.json` (do not mutate)."""
    return _load("protocol.json")


@dataclass(frozen=True)
class ScenarioStrings:
    """Per-scenario protocol strings of `protocol.json`."""

    short: str
    stem: str
    dataset_file: str
    pre_prompt: str | None
    hint_prompt: str | dict[str, str]
    reference_prompt: str | None
    cot_prompt: str | None
    oeg_proactive_count: int
    #: The valid answers an open-ended judge looks for (`{categories}` to fill), for the
    #: scenarios whose list is fixed; the others build theirs (`Episode.oeg_answers`).
    oeg_answers: str | None = None


@cache
def scenario_strings(short: str) -> ScenarioStrings:
    """Strings of one scenario; raises KeyError for an unknown short name."""
    entry = raw_protocol()["scenarios"][short]
    return ScenarioStrings(
        short=short,
        stem=entry["dataset_name"],
        dataset_file=entry["dataset_file"],
        pre_prompt=entry["pre_prompt"],
        hint_prompt=entry["hint_prompt"],
        reference_prompt=entry["reference_prompt"],
        cot_prompt=entry["cot_prompt"],
        oeg_proactive_count=entry["oeg_proactive_count"],
        oeg_answers=raw_protocol()["oeg_fixed_answers"].get(short),
    )


@cache
def action_keywords() -> tuple[tuple[str, str], ...]:
    """(keyword, ACTION) pairs in the order the protocol checks them."""
    return tuple((kw, action) for kw, action in raw_protocol()["action_keywords"])


@cache
def fixed_action_space(short: str) -> tuple[str, ...]:
    """The action space of a scenario whose actions do not depend on the record (not COCO)."""
    space = raw_protocol()["action_spaces"][short]
    if not isinstance(space, list):
        raise ValueError(f"{short} has a per-record action space")
    return tuple(space)


@cache
def abstain_markers() -> tuple[str, ...]:
    return tuple(raw_protocol()["abstain_markers"])


@cache
def mcqa_strings() -> dict[str, Any]:
    return dict(raw_protocol()["mcqa"])


@cache
def official_filter_ids(stem: str) -> frozenset[int]:
    """Sample ids of the official test filter for one data file stem."""
    return filter_ids(_load("official_filter_ids.json")).get(stem, frozenset())


#: The key of a test filter document that holds the kept ids, by data file stem.
FILTER_IDS = "ids"


def filter_ids(document: Any) -> dict[str, frozenset[int]]:
    """The sample ids a test filter keeps, by data file stem, from a document of the official
    list's shape (`{"ids": {stem: [id, ...]}}`; any other key is a note, never read). The one
    reader of both the official list and the files `data filter` writes, so that both mean
    the same; `ValueError` says what is wrong with a document of another shape."""
    ids = document.get(FILTER_IDS) if isinstance(document, dict) else None
    if not isinstance(ids, dict):
        raise ValueError(f'expected a JSON object with "{FILTER_IDS}": {{file stem: [id, ...]}}')
    kept: dict[str, frozenset[int]] = {}
    for stem, listed in ids.items():
        if not isinstance(listed, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in listed
        ):
            raise ValueError(
                f'"{FILTER_IDS}"."{stem}" must be a list of sample ids (integers >= 0)'
            )
        kept[stem] = frozenset(listed)
    return kept


@cache
def oeg_strings() -> dict[str, str]:
    """Open-ended generation: the hint suffix and the judge's system prompt and user template."""
    return {k: v for k, v in raw_protocol()["oeg"].items() if isinstance(v, str)}
