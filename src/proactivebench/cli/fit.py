"""Tables narrowed to the terminal's width without breaking a value in two.

rich fits a table too wide for the terminal by shrinking its widest columns evenly: a model
name or a spec is cut mid-token (`InternVL3 1B` as `Intern…`), a rate's interval folds under
it, and a caption runs past the edge. A researcher reads these tables to compare numbers and
copies specs out of them, so here a table wider than the terminal is, instead:

- `column_blocks` (the report's tables): split into blocks of its columns, its first column
  (the model, the scenario) repeated in each, as the paper prints its widest tables (Tables 8
  and 9) in two blocks; a block's numbers stay whole, the first column may wrap between words;
- `wrapped_cells` (`list`): kept as one table whose cells wrap between words, a column never
  narrower than its longest word;
- `entry_blocks` (`list`, where even that does not fit): one block of lines per row.

Off a terminal the consoles are `UNBOUNDED_WIDTH` wide, so files and pipes keep every table
whole; a table, title and caption that fit are printed as they are.
"""

from __future__ import annotations

import copy
import dataclasses
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

#: A column of `list` wraps to no fewer columns than this (or its longest word, if longer), so
#: that prose does not shrink to a word a line before `entry_blocks` is preferred.
PROSE_FLOOR = 20
#: In `entry_blocks`, fields whose values and heading are all at most this wide share a line
#: (`eval: yes   judge: no   extra: -`).
SHORT_FIELD = 12


@dataclass(frozen=True)
class ColumnSize:
    """A column's natural width (its widest line, heading included) and its longest word:
    the narrowest it can wrap to without cutting a word."""

    natural: int
    word: int


def plain(console: Console, renderable: RenderableType | None) -> str:
    """The text a header, cell, title or caption shows (a string is markup, as rich reads it)."""
    if renderable is None:
        return ""
    if isinstance(renderable, Text):
        return renderable.plain
    if isinstance(renderable, str):
        return console.render_str(renderable).plain
    return str(renderable)


def sizes(console: Console, table: Table) -> list[ColumnSize]:
    """Each column's `ColumnSize`, from its heading and its cells."""
    found = []
    for column in table.columns:
        texts = [plain(console, column.header), *(plain(console, c) for c in column._cells)]
        lines = [line for text in texts for line in text.splitlines()] or [""]
        words = [word for line in lines for word in line.split()] or [""]
        found.append(ColumnSize(max(map(cell_len, lines)), max(map(cell_len, words))))
    return found


def table_width(table: Table, widths: Sequence[int]) -> int:
    """How wide `table` is drawn with these column widths: each column's padding, and the box's
    edges and separators."""
    left, right = table.padding[3], table.padding[1]
    edges = (2 if table.show_edge else 0) + len(widths) - 1 if table.box else 0
    return sum(widths) + len(widths) * (left + right) + edges


def natural_width(console: Console, table: Table) -> int:
    """The width rich draws `table` at on an unbounded console."""
    return table_width(table, [s.natural for s in sizes(console, table)])


def fits(console: Console, table: Table, width: int) -> bool:
    """Whether the table, its title and its caption all fit `width` as they are."""
    annotations = [plain(console, table.title), plain(console, table.caption)]
    lines = [line for text in annotations for line in text.splitlines()]
    return natural_width(console, table) <= width and all(cell_len(x) <= width for x in lines)


def wrapped(text: str, width: int, indent: str = "", first: str = "") -> list[str]:
    """`text` wrapped between words to `width` (a word longer than the line stays whole)."""
    return textwrap.wrap(
        text,
        width=max(width, 1),
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def annotation(
    console: Console, renderable: RenderableType | None, width: int, style: str
) -> Text | None:
    """A table's title or caption as lines of their own, wrapped between words to `width`."""
    text = plain(console, renderable)
    if not text:
        return None
    lines = [line for paragraph in text.splitlines() for line in wrapped(paragraph, width)]
    return Text("\n".join(lines), style=style)


def _block(table: Table, picks: Sequence[tuple[int, int | None]]) -> Table:
    """A copy of `table` (its box, rows and their styles) holding only the picked columns,
    (index, width) each, untitled: the title and caption are printed once, around the blocks."""
    block = copy.copy(table)
    block.title = block.caption = None
    block.columns = [
        dataclasses.replace(
            table.columns[index], width=width, _index=n, _cells=list(table.columns[index]._cells)
        )
        for n, (index, width) in enumerate(picks)
    ]
    return block


def framed(
    console: Console, table: Table, width: int, blocks: Sequence[RenderableType]
) -> list[RenderableType]:
    """The title, the blocks, the caption."""
    title = annotation(console, table.title, width, "table.title")
    caption = annotation(console, table.caption, width, "table.caption")
    return [x for x in (title, *blocks, caption) if x is not None]


def column_blocks(console: Console, table: Table, width: int) -> list[RenderableType]:
    """`table` as blocks of its columns that each fit `width`, the first column in each (as the
    paper's Tables 8 and 9), as few blocks as fit and as even as they can be; the other
    columns' cells are never wrapped, the first column's only between words, and only where
    that saves a block. A table that fits is returned as it is."""
    if fits(console, table, width):
        return [table]
    found = sizes(console, table)
    key, rest = found[0], list(range(1, len(found)))
    if not rest:
        return framed(console, table, width, [_block(table, [(0, None)])])

    def block_width(columns: Sequence[int], key_width: int) -> int:
        return table_width(table, [key_width, *(found[i].natural for i in columns)])

    def blocks_needed(key_width: int) -> int:
        """Greedily, each block as many columns as fit (a column too wide to fit even alone
        gets a block of its own, which rich narrows as it can)."""
        count, current = 0, []
        for index in rest:
            if current and block_width([*current, index], key_width) > width:
                count, current = count + 1, []
            current.append(index)
        return count + 1

    fewest = blocks_needed(key.word)
    # The first column as wide as it can be (its widest cell at most) in that many blocks, the
    # same in each; then the split whose widest block is narrowest.
    key_width = next(w for w in range(key.natural, key.word - 1, -1) if blocks_needed(w) <= fewest)
    blocks = []
    for chunk in _even_split(rest, fewest, lambda columns: block_width(columns, key_width)):
        if block_width(chunk, key_width) > width:
            blocks.append(_block(table, [(0, None), *((i, None) for i in chunk)]))
        else:
            picks = [(0, key_width), *((i, found[i].natural) for i in chunk)]
            blocks.append(_block(table, picks))
    return framed(console, table, width, blocks)


def _even_split(items: list[int], count: int, cost: Callable[[list[int]], int]) -> list[list[int]]:
    """`items` in `count` runs (in order), the costliest run as cheap as can be: a small
    dynamic programme over where each run starts (a table has a few dozen columns at most)."""
    n = len(items)
    count = min(count, n)
    best: dict[tuple[int, int], tuple[int, list[list[int]]]] = {}

    def split(start: int, runs: int) -> tuple[int, list[list[int]]]:
        if (start, runs) in best:
            return best[start, runs]
        if runs == 1:
            run = items[start:]
            best[start, runs] = (cost(run), [run])
            return best[start, runs]
        options = []
        for end in range(start + 1, n - runs + 2):
            head = items[start:end]
            worst, tail = split(end, runs - 1)
            options.append((max(cost(head), worst), [head, *tail]))
        best[start, runs] = min(options, key=lambda option: option[0])
        return best[start, runs]

    return split(0, count)[1]


def wrapped_cells(
    console: Console, table: Table, width: int, floor: int = PROSE_FLOOR
) -> Table | None:
    """`table` as one table whose cells wrap between words to fit `width`, each column at
    least as wide as its longest word (and `floor`, or its natural width if narrower), the
    room left given a column at a time to the one that lacks the most (prose, mostly); None
    if it cannot fit so. Untitled, as a block: `framed` prints the title and caption."""
    found = sizes(console, table)
    least = [max(s.word, min(s.natural, floor)) for s in found]
    spare = width - table_width(table, least)
    if spare < 0:
        return None
    widths = list(least)
    for _ in range(spare):  # a column at a time, to the one that lacks the most
        lack, index = max(
            (s.natural - w, i) for i, (s, w) in enumerate(zip(found, widths, strict=True))
        )
        if lack <= 0:
            break
        widths[index] += 1
    return _block(table, list(enumerate(widths)))


def entry_blocks(console: Console, table: Table, width: int) -> list[Text]:
    """Each row of `table` as a block of lines: `heading: value` of its first cell, then of
    each other column, indented and wrapped between words under the value; short fields
    share a line."""
    found = sizes(console, table)
    headings = [plain(console, c.header) for c in table.columns]
    short = [s.natural <= SHORT_FIELD for s in found]
    long_labels = [h for i, h in enumerate(headings) if i and not short[i]]
    label_width = max((cell_len(h) for h in long_labels), default=0) + 1
    blocks = []
    for row in range(table.row_count):
        cells = [plain(console, c._cells[row]) for c in table.columns]
        lines = [Text(f"{headings[0]}: {cells[0]}", style="bold")]
        pending: list[str] = []
        for index in range(1, len(cells)):
            if short[index]:
                pending.append(f"{headings[index]}: {cells[index]}")
                continue
            if pending:
                lines.append(Text("  " + "   ".join(pending)))
                pending = []
            label = f"  {headings[index] + ':':<{label_width}} "
            indent = " " * len(label)
            lines += [Text(line) for line in wrapped(cells[index], width, indent, label)]
        if pending:
            lines.append(Text("  " + "   ".join(pending)))
        blocks.append(Text("\n").join(lines))
    return blocks
