"""Text from models, servers and files made inert before it is shown: control characters
written as their escapes (`\\x1b`, `\\n`, `\\u202e`), so that no answer, model name or server
message can recolour, move or rewrite a terminal, reorder or hide what is shown, or break a
line of a table or a report.

What is escaped: C0 and C1 controls and DEL; Unicode's format characters (category Cf: the
bidirectional embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069, the marks
U+200E/U+200F/U+061C, zero-width characters such as U+200B and U+FEFF, the soft hyphen);
and the line and paragraph separators U+2028 / U+2029 (Zl, Zp), which break a line as a line
feed does. A bidi override in a model's answer could otherwise show `A` where the text says
`B`, and a zero-width character makes two different names look alike.

One rule for every place that shows such text: the terminal (`cli`), and the report formats
(`report.inert`, which escapes each format's own markup on top of it).
"""

from __future__ import annotations

import re
import unicodedata

#: Unicode categories escaped beyond the C0 / C1 controls: format characters, line and
#: paragraph separators.
_INERT_CATEGORIES = frozenset({"Cf", "Zl", "Zp"})

#: Every character that may need escaping: C0 controls, DEL, and everything past ASCII (each
#: such match is looked up: a C1 control, or one of `_INERT_CATEGORIES`).
_CANDIDATE = re.compile(r"[\x00-\x1f\x7f-\U0010ffff]")

#: What `keep_lines` leaves as it is.
_LINES = frozenset("\n\t")


def _escaped(char: str) -> str:
    """`char`'s escape as Python writes it (`\\x1b`, `\\u202e`): every character escaped here
    is one that `repr` escapes."""
    return repr(char)[1:-1]


def _is_inert(char: str) -> bool:
    """Whether `char` must be shown as its escape."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F or unicodedata.category(char) in _INERT_CATEGORIES


def visible(text: str, *, keep_lines: bool = False) -> str:
    """`text` with every control, format and line-separator character written as its escape.
    `keep_lines` leaves line feeds and tabs as they are, for multi-line text (a transcript, a
    traceback); without it the text is one line (a name in a title, a table cell)."""

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        if (keep_lines and char in _LINES) or not _is_inert(char):
            return char
        return _escaped(char)

    return _CANDIDATE.sub(replace, text)
