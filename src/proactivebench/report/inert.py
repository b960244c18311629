"""Names and other strings from files (model names, run directories, settings) made inert
for each output format: control characters shown as escapes (`\\x1b`, `\\n`), the
characters that Markdown, HTML inside Markdown and LaTeX would read as markup escaped, and a
CSV cell a spreadsheet would read as a formula kept as text.

A model's name is data; no report format may let it format, link or run anything.
"""

from __future__ import annotations

import re

from proactivebench.core.escapes import visible

__all__ = ["csv_cell", "latex", "markdown", "visible"]


#: Characters Markdown may read as emphasis, code, links, headings, lists or tables.
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")
_HTML_IN_MARKDOWN = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown(text: str) -> str:
    """One line of Markdown that shows `text` literally: controls visible, markup escaped,
    and `<>&` as entities (Markdown passes raw HTML through)."""
    text = "".join(_HTML_IN_MARKDOWN.get(c, c) for c in visible(text))
    return _MARKDOWN.sub(r"\\\1", text)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # A row that starts with "[" would be read as the optional argument of the "\\" before it.
    "[": "{[}",
    "]": "{]}",
    "—": "---",
    "Δ": r"$\Delta$",
}


def latex(text: str) -> str:
    """`text` as LaTeX that typesets it literally (controls shown as escapes first)."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in visible(text))


#: What a spreadsheet takes as the start of a formula in a CSV cell (controls are already
#: shown as escapes by `visible`, so a tab or carriage return cannot start one).
_FORMULA_START = ("=", "+", "-", "@")


def csv_cell(text: str) -> str:
    """A CSV text cell that a spreadsheet shows as text: controls visible, and a text that
    would start a formula (a model named `=HYPERLINK(...)`, `@SUM(...)`) given a leading `'`,
    which spreadsheets read as "this is text"; a number (`-0.5`) is left as it is."""
    shown = visible(text)
    if shown.startswith(_FORMULA_START):
        try:
            float(shown)
        except ValueError:
            return "'" + shown
    return shown
