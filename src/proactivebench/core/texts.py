"""Text that comes from outside the program (model answers, judge outputs, server bodies,
data files, a run's own files), made storable where it enters, by one rule.

- **Storable**: every text can be written as UTF-8. A lone UTF-16 surrogate (`"\\ud800"` is
  valid JSON, and `json.loads` turns it into one) cannot, and would crash whatever writes or
  prints it later; it becomes U+FFFD, the replacement character, as undecodable bytes do.
  A surrogate pair that stands for one character becomes that character.
- **Capped when stored**: a text written to `results.jsonl` keeps at most `STORED_TEXT_LIMIT`
  characters: its beginning and its end (where a reasoning model puts its answer), with a
  marker between them that says how long the text was.

`loads` and `decode` apply the rule to JSON and bytes, so that every reader of outside data
goes through them; `storable` is the rule itself. `dumps` is the one JSON writer: it refuses
NaN and infinities, which JSON cannot hold.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
from typing import Any

#: Characters of one text (an answer, a judge output, an error) kept in `results.jsonl`.
STORED_TEXT_LIMIT = 65536
#: How deeply JSON from outside may nest (arrays and objects): far beyond any file or body of
#: ours (a result line nests 4 deep), and far below where Python's recursive walkers (`json`'s
#: encoder, the report's) exceed the interpreter's recursion limit, at about 1,000.
MAX_JSON_DEPTH = 100
#: What may turn into a surrogate when parsed: a `\ud800`-`\udfff` escape, or one as such.
_SURROGATE_SOURCE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")


def storable(text: str) -> str:
    """`text`, every lone surrogate replaced by U+FFFD (pairs joined into their character)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def decode(data: bytes, charset: str | None = None) -> str:
    """Bytes as text: the declared `charset` if Python knows it, else UTF-8; a leading byte
    order mark dropped, and bytes that do not decode replaced by U+FFFD."""
    encoding = "utf-8"
    if charset:
        with contextlib.suppress(LookupError):
            encoding = codecs.lookup(charset).name
    if encoding == "utf-8":
        encoding = "utf-8-sig"
    return data.decode(encoding, errors="replace")


def loads(data: str | bytes) -> Any:
    """`json.loads`, every string in the result (keys too) `storable`.

    Raises `json.JSONDecodeError` for what is not JSON, and for JSON nested deeper than
    `MAX_JSON_DEPTH` (which `json.loads` may parse, or report as RecursionError): accepted, it
    would crash whatever later walks it recursively (the report's `json.dumps`, a `str`).
    """
    text = decode(data) if isinstance(data, bytes) else data
    try:
        value = json.loads(text)
    except RecursionError:
        raise RefusedJSON(f"nested deeper than {MAX_JSON_DEPTH} levels", text, 0) from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(value) > MAX_JSON_DEPTH:
        raise RefusedJSON(f"nested deeper than {MAX_JSON_DEPTH} levels", text, 0)
    if _SURROGATE_SOURCE.search(text) is None:
        return value
    return storable_json(value)


def loads_body(data: bytes, charset: str | None) -> Any:
    """The JSON of a request body sent to us, with the `charset` it declares: as `loads`, and
    a charset Python does not know is refused (`json.JSONDecodeError`) rather than guessed, so
    that the server answers 400 to every malformed body."""
    if charset:
        try:
            codecs.lookup(charset)
        except LookupError:
            raise RefusedJSON(f"unknown charset {charset[:40]!r}", "", 0) from None
    return loads(decode(data, charset))


class RefusedJSON(json.JSONDecodeError):
    """JSON that parses but is refused as a whole (too deep, an unknown charset): no place in
    the text is to blame."""


def json_problem(exc: json.JSONDecodeError) -> str:
    """Why a line is not JSON, with the column where it breaks (`json`'s own message ends
    on "starting at" or names line 1 of the line): "Expecting ',' delimiter: column 51"."""
    if isinstance(exc, RefusedJSON):
        return exc.msg
    message = exc.msg.removesuffix(" (decode using utf-8-sig)")  # advice to programmers
    if exc.lineno == 1:
        return f"{message}: column {exc.colno}"
    return f"{message}: line {exc.lineno} column {exc.colno}"


def _depth(value: Any) -> int:
    """How deeply `value` nests lists and dicts, walked without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        if level <= MAX_JSON_DEPTH:  # deeper is deep enough to refuse
            stack.extend((child, level + 1) for child in item)
    return deepest


class NotJSONError(ValueError):
    """A value `dumps` refuses: a NaN or an infinity, which JSON has no way to write (Python
    would write `NaN`, which no other JSON reader takes). Every input is checked where it
    enters, so this means a value slipped past those checks: nothing is written."""


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` that refuses non-finite numbers: the one way the package writes JSON
    (run files, result lines, report data, request bodies, cache keys), so that nothing it
    writes holds `NaN` or `Infinity` (tests/test_options.py checks no other writer exists)."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        if "not JSON compliant" not in str(exc):
            raise
        raise NotJSONError(
            "a NaN or infinite number cannot be written as JSON; nothing was written"
        ) from None


def shown_json(value: Any) -> str:
    """`value` as JSON for a message (never a file): a value read from a hand-edited file may
    hold a NaN, which a message shows as it was read."""
    return json.dumps(value)


def storable_json(value: Any) -> Any:
    """`value` with every string storable, walked without recursion (any depth)."""
    if isinstance(value, str):
        return storable(value)
    if not isinstance(value, (list, dict)):
        return value
    root: list[Any] = [value]
    stack: list[list[Any] | dict[str, Any]] = [root]
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            items = list(container.items())
            container.clear()
            for key, item in items:
                container[storable(key)] = item
            keys: Any = list(container)
        else:
            keys = range(len(container))
        for key in keys:
            item = container[key]
            if isinstance(item, str):
                container[key] = storable(item)
            elif isinstance(item, (list, dict)):
                stack.append(item)
    return root[0]


def capped(text: str, limit: int = STORED_TEXT_LIMIT) -> str:
    """`text` if it has at most `limit` characters; else its beginning and end around a
    marker that gives the original length, `limit` characters in all (about)."""
    if len(text) <= limit:
        return text
    marker = f"\n[… cut by proactivebench: {len(text):,} characters in all, {limit:,} kept …]\n"
    head = (limit - len(marker)) // 2
    tail = max(0, limit - len(marker) - head)
    return text[:head] + marker + (text[-tail:] if tail else "")
