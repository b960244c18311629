"""A test filter given by the user (`eval --filter FILE`): the sample ids a run plays, in place
of the official list.

The file has the official list's shape (`spec/official_filter_ids.json`: `{"ids": {file stem:
[id, ...]}}`), read by the same reader (`protocol.filter_ids`); `proactivebench data filter`
writes one from a pool of runs (`proactivebench.jobs.filtering`). Unlike the official list it
applies to a data set our generator made too: that is how a filtered benchmark is built from a
fresh synthetic set.

What `data filter` notes of where the filter came from (`provenance`) is read too, since ids
mean samples of one data set only: the data it was computed on (`data_dir`, and the digest of
each record file there: another data set's ids name other samples, refused by
`refuse_other_data`) and the samples no run of its pool played (`counts.*.not_played`), which
`eval` names.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.benchmark.protocol import filter_ids
from proactivebench.benchmark.registry import by_stem
from proactivebench.core.errors import DataError
from proactivebench.core.paths import read_file
from proactivebench.core.texts import dumps, loads


@dataclass(frozen=True)
class SampleFilter:
    """The ids a filter file keeps, by data file stem, read once."""

    #: The file, as given (for messages).
    path: str
    ids: Mapping[str, frozenset[int]]
    #: The data set the filter was computed on, as its provenance names it (None: unsaid).
    made_on: str | None = None
    #: The digest of each record file there, by stem (`record_file_digest`; empty: unsaid).
    records: Mapping[str, str] = field(default_factory=dict)
    #: Per scenario (short name): samples of the data that no run of the pool played.
    not_played: Mapping[str, int] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """What a run records of the filter (its identity): a hash of the kept ids, not of the
        path (a file moved or rewritten with the same ids is the same filter) nor of the file's
        bytes (its notes may differ)."""
        canonical = dumps({stem: sorted(ids) for stem, ids in sorted(self.ids.items())})
        return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def kept(self, stem: str, short: str, covered: list[str]) -> frozenset[int]:
        """The ids kept of one scenario's file, or one error naming the filter file and the
        scenarios it `covered` (short names): a scenario the filter does not cover would
        otherwise play nothing, unsaid."""
        if not covered:
            named = ", ".join(sorted(self.ids)) or "none"
            raise DataError(
                f"the filter covers none of the scenarios played (the file stems it names: "
                f"{named}; {short}'s is {stem})",
                path=self.path,
            )
        if stem not in self.ids:
            raise DataError(
                f"the filter has no ids for {short}; choose the scenarios it covers with "
                f"--scenarios {','.join(covered)}, or build it from runs of {short} too",
                path=self.path,
            )
        return self.ids[stem]

    def refuse_other_data(self, file: Path, stem: str, short: str) -> None:
        """Refuse the filter on a record file other than the one it was computed on: its ids
        would choose other samples, unsaid (generated sets of one size share their ids). A
        filter that recorded no digest (written by hand, or by an older version) passes."""
        recorded = self.records.get(stem)
        if recorded is None:
            return
        try:
            found = record_file_digest(file)
        except OSError:
            return  # the record file's own reader says what is wrong with it
        if found != recorded:
            raise DataError(
                f"the filter was computed on other data: {short}'s records in "
                f"{self.made_on or 'the data of its runs'} differ from {file}, so its ids would "
                "choose other samples here; compute the filter from runs on this data "
                '(`proactivebench data filter`), or remove its "provenance" to play its ids '
                "on this data all the same",
                path=self.path,
            )


def record_file_digest(path: str | os.PathLike[str]) -> str:
    """What a filter records of a record file it was computed on: the hash of its bytes."""
    return "sha256:" + hashlib.sha256(read_file(path)).hexdigest()


def read_sample_filter(path: str | os.PathLike[str]) -> SampleFilter:
    """The filter in `path`, or one `DataError` naming the file: missing, unreadable, not JSON,
    or not of the official list's shape."""
    where = os.fspath(path)
    try:
        document = loads(read_file(path).decode("utf-8"))
    except FileNotFoundError:
        raise DataError("filter file not found", path=where) from None
    except OSError as exc:
        raise DataError(f"cannot read the filter file: {exc.strerror}", path=where) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"not a filter file: not JSON ({exc})", path=where) from None
    try:
        ids = filter_ids(document)
    except ValueError as exc:
        raise DataError(f"not a filter file: {exc}", path=where) from None
    _refuse_unknown_stems(ids, where)
    provenance = document.get("provenance")
    if provenance is None:
        return SampleFilter(where, ids)
    if not isinstance(provenance, dict):
        # What data filter writes is an object; anything else would skip the check of the
        # data it was computed on, unsaid.
        raise DataError(
            'not a filter file: "provenance" must be an object (as `data filter` writes it); '
            "remove it to play the filter's ids without its checks",
            path=where,
        )
    made_on = provenance.get("data_dir")
    return SampleFilter(
        where,
        ids,
        made_on if isinstance(made_on, str) else None,
        _recorded_digests(provenance.get("records"), where),
        _not_played(provenance.get("counts")),
    )


def _refuse_unknown_stems(ids: Mapping[str, frozenset[int]], where: str) -> None:
    """Refuse ids under a key that names no scenario's data file: they would be ignored, unsaid
    (a typo, a short name where the file's stem is meant)."""
    stems = by_stem()
    unknown = sorted(stem for stem in ids if stem not in stems)
    if unknown:
        raise DataError(
            f'not a filter file: "ids" has keys that are no scenario\'s data file stem: '
            f"{', '.join(unknown)} (the stems: {', '.join(stems)})",
            path=where,
        )


def _recorded_digests(value: Any, where: str) -> dict[str, str]:
    """`provenance.records`: {stem: digest}; any other shape is refused (the check it carries
    would be skipped unsaid)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise DataError(
            'not a filter file: "provenance"."records" must map file stems to digests',
            path=where,
        )
    return dict(value)


def _not_played(counts: Any) -> dict[str, int]:
    """The samples no run played, per scenario, from `provenance.counts` (a note: read where
    it has the shape `data filter` writes, else none)."""
    if not isinstance(counts, dict):
        return {}
    found = {}
    for short, count in counts.items():
        value = count.get("not_played") if isinstance(count, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            found[str(short)] = value
    return found
