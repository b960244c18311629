"""A test filter given by the user (`eval --filter FILE`): the sample ids a run plays, in place
of the official list.

The file has the official list's shape (`spec/official_filter_ids.json`: `{"ids": {file stem:
[id, ...]}}`), read by the same reader (`protocol.filter_ids`); `proactivebench data filter`
writes one from a pool of runs (`proactivebench.filtering`). Unlike the official list it
applies to a data set our generator made too: that is how a filtered benchmark is built from a
fresh synthetic set.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from proactivebench.errors import DataError
from proactivebench.paths import read_file
from proactivebench.protocol import filter_ids
from proactivebench.texts import dumps, loads


@dataclass(frozen=True)
class SampleFilter:
    """The ids a filter file keeps, by data file stem, read once."""

    #: The file, as given (for messages).
    path: str
    ids: Mapping[str, frozenset[int]]

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
    return SampleFilter(where, ids)
