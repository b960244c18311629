"""Text from models, servers and files made inert before it is shown: control characters
written as their escapes (`\\x1b`, `\\n`), so that no answer, model name or server message can
recolour, move or rewrite a terminal, or break a line of a table or a report.

One rule for every place that shows such text: the terminal (`cli`), and the report formats
(`report.text`, which escapes each format's own markup on top of it).
"""

from __future__ import annotations

import re

#: C0 controls, DEL and C1 controls; and the same without line feed and tab.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str, *, keep_lines: bool = False) -> str:
    """`text` with every control character written as its escape. `keep_lines` leaves line
    feeds and tabs as they are, for multi-line text (a transcript, a traceback); without it
    the text is one line (a name in a title, a table cell)."""
    pattern = _CONTROL_BUT_LINES if keep_lines else _CONTROL
    return pattern.sub(lambda m: repr(m.group())[1:-1], text)
