"""The lines of a JSONL file a user gives (a scenario's records, a `replay:` script), each read
by one rule: the file through `paths.open_to_read` (a FIFO or folder in its place is refused,
never waited on), each line as UTF-8 (the byte that is not, and where; a byte order mark
before the first line dropped), then as JSON (the column where it breaks), so that every
such file's problems name the file, the line and why.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterator
from typing import Any

from proactivebench.core.errors import DataError
from proactivebench.core.paths import open_to_read
from proactivebench.core.texts import json_problem, loads


def json_lines(
    path: str | os.PathLike[str], cannot_read: str = "cannot read"
) -> Iterator[tuple[int, Any | DataError]]:
    """(line number, its JSON value or the `DataError` that names why not) for each line that
    is not blank. A file that cannot be opened raises one `DataError`: `cannot_read` and the
    system's reason."""
    where = os.fspath(path)
    try:
        handle = open_to_read(path)
    except OSError as exc:
        raise DataError(f"{cannot_read}: {exc.strerror or exc}", path=where) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:  # "UTF-8 with BOM" (Windows editors): no character of a record
                raw = raw.removeprefix(codecs.BOM_UTF8)
            if not raw.strip():
                continue
            try:
                value = loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                message = f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at {exc.start})"
                yield number, DataError(message, path=where, line=number)
            except json.JSONDecodeError as exc:
                message = f"invalid JSON: {json_problem(exc)}"
                yield number, DataError(message, path=where, line=number)
            else:
                yield number, value
