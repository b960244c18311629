"""The report's tables, built once as plain rows and written as Markdown, CSV, LaTeX and
HTML, so that every format shows the same numbers.

A cell keeps its numbers (value, interval bounds) beside its text: CSV gets the numbers in
columns of their own, the other formats the text. Missing values (a scenario whose episodes
all ended in errors) are "—", never 0.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field

from proactivebench.benchmark.metrics import (
    INTERVAL_NAME,
    Metric,
    average_label,
    number_text,
    table_metrics,
)
from proactivebench.benchmark.registry import paper_scenarios, scenario_order
from proactivebench.core.stats import Interval
from proactivebench.report import inert as text_formats
from proactivebench.report.measures import (
    AVERAGE,
    Comparison,
    Difference,
    RunMeasures,
)

MISSING = "—"


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    #: A McNemar p-value shown with a difference.
    p: float | None = None
    #: A link, relative to the report (an experiment's own report): HTML and Markdown show
    #: the text as a link to it.
    href: str | None = None
    #: What HTML shows in place of `text` (which becomes its tooltip): where the full text
    #: repeats down a column ("published, Table 1" 22 times) and the caption says it once, or
    #: a verdict ("not compared") the table's notes give. The other formats keep `text`.
    short: str | None = None


@dataclass
class Table:
    """A titled grid; `key` names its files (tables/<key>.csv, .tex)."""

    key: str
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    notes: list[str] = field(default_factory=list)
    #: The last row is the average (set apart in every format).
    average_last: bool = True
    #: Per row, what it is where a table mixes sources (`report --paper`: "published",
    #: "yours", "rank", "check"): the HTML row's class; "yours" rows are bold in Markdown and
    #: LaTeX. Empty: rows of one kind.
    row_kinds: list[str] = field(default_factory=list)
    #: Columns of words, aligned as text (the first column always is): every other column is
    #: aligned as numbers.
    text_columns: tuple[int, ...] = ()


def interval_cell(value: Interval | None, percent: bool, with_interval: bool) -> Cell:
    if value is None:
        return Cell(MISSING)
    text = number_text(value.estimate, percent)
    if with_interval:
        text += f" [{number_text(value.low, percent)}, {number_text(value.high, percent)}]"
        return Cell(text, value.estimate, value.low, value.high)
    return Cell(text, value.estimate)


def difference_cell(value: Interval | None, percent: bool, p: float | None = None) -> Cell:
    if value is None:
        return Cell(MISSING)
    sign = "+" if value.estimate > 0 else ""
    text = (
        f"{sign}{number_text(value.estimate, percent)} "
        f"[{number_text(value.low, percent)}, {number_text(value.high, percent)}]"
    )
    if p is not None:
        text += f" p={p:.3g}"
    return Cell(text, value.estimate, value.low, value.high, p)


def _covers_differ(coverages: Sequence[Sequence[str]]) -> bool:
    """Whether the rows' averages cover different scenarios, or other than the paper's seven."""
    return any(sorted(c) != sorted(paper_scenarios()) for c in coverages)


#: What the action distribution's tables say of themselves.
ACTIONS_NOTE = (
    "Action distribution (docs/protocol.md §9): the share of turns (every episode's turns "
    "pooled, or the first turns) whose answer chose each kind of option; the four kinds sum "
    "to 100 %. Single-turn open-ended runs have no choices and no such table; a multi-turn one "
    "counts its judged verdicts (a free answer never abstains)."
)


def run_table(measures: RunMeasures, table: str = "run") -> Table:
    """One run: a row per scenario and the average; n, errors and every metric that `table`
    shows ("run": the run's table; "actions": its action distribution, MCQA only)."""
    metrics = table_metrics(measures.run.oeg, table, measures.run.multiturn)
    columns = ["scenario", "n", "errors", *(m.heading for m in metrics)]
    rows = []
    for scenario in [*measures.scenarios.values(), measures.average]:
        name = (
            average_label(scenario.covers, scenario.missing)
            if scenario is measures.average
            else scenario.scenario
        )
        cells = [Cell(name), Cell(str(scenario.n), scenario.n), Cell(str(scenario.errors))]
        cells += [interval_cell(scenario.values.get(m.key), m.percent, m.interval) for m in metrics]
        rows.append(cells)
    errors = "episodes that ended in an error are left out of every rate."
    if table == "run":
        title = measures.run.label
        notes = [
            f"Intervals: {INTERVAL_NAME}, over episodes (the average: Wilson's at Kish's "
            f"effective size, the bootstrap stratified by scenario); {errors}"
        ]
    else:
        title, notes = f"{measures.run.label}: actions", [ACTIONS_NOTE, errors.capitalize()]
    return Table(f"{table}-{slug(measures.run.label)}", title, columns, rows, notes)


def actions_table(all_measures: Sequence[RunMeasures]) -> Table:
    """Several MCQA runs' action distributions side by side: a row per run, its averages
    over scenarios (the paper's Figs. 4 and 19 average them alike)."""
    metrics = table_metrics(False, "actions")
    columns = ["run", *(m.heading for m in metrics), "average of"]
    rows = []
    for measures in all_measures:
        average = measures.average
        row = [Cell(measures.run.label)]
        row += [interval_cell(average.values.get(m.key), m.percent, False) for m in metrics]
        rows.append([*row, Cell(average_label(average.covers, average.missing))])
    return Table(
        "actions",
        "Action distribution, average over scenarios",
        columns,
        rows,
        [ACTIONS_NOTE],
        average_last=False,
    )


def change_cell(value: float | None) -> Cell:
    """A relative change in %, signed ("+10.8 %"); "—" where there is none."""
    if value is None:
        return Cell(MISSING)
    return Cell(f"{'+' if value > 0 else ''}{value:.1f} %", value)


def actions_change_table(comparisons: Sequence[Comparison]) -> Table:
    """The action distribution's relative changes from the `--vs` run: a row per run and
    scenario (and its average), a column per share."""
    metrics = table_metrics(False, "actions")
    base = comparisons[0].base.label if comparisons else ""
    rows = []
    for comparison in comparisons:
        for scenario, changes in comparison.actions.items():
            name = average_label(comparison.actions_cover) if scenario == AVERAGE else scenario
            row = [Cell(comparison.run.label), Cell(name)]
            rows.append(row + [change_cell(changes.get(m.key)) for m in metrics])
    notes = [
        f"Change from {base} in percent of its share, (run − {base}) / {base} × 100, as the "
        "paper's Figs. 5, 7, 20 and 21 print it (37 % → 41 % is +10.8 %); each run's own "
        "shares (its actions table), averages over the scenarios both runs scored; — where the "
        f"{base} share is 0 or missing.",
    ]
    columns = ["run", "scenario", *(m.heading for m in metrics)]
    return Table(
        "actions-vs",
        f"Δ action distribution vs {base} (relative, %)",
        columns,
        rows,
        notes,
        average_last=False,
        text_columns=(1,),
    )


def cross_table(all_measures: Sequence[RunMeasures], metric: Metric) -> Table:
    """The paper's layout for one metric: a row per run, a column per scenario + average."""
    scenarios = scenario_order([s for m in all_measures for s in m.scenarios])
    label_covers = _covers_differ([m.average.covers for m in all_measures])
    columns = ["run", *scenarios, "average", *(["average covers"] if label_covers else [])]
    rows = []
    notes = []
    for measures in all_measures:
        row = [Cell(measures.run.label)]
        for scenario in scenarios:
            found = measures.scenarios.get(scenario)
            value = found.values.get(metric.key) if found else None
            row.append(interval_cell(value, metric.percent, metric.interval))
        row.append(interval_cell(measures.average.values.get(metric.key), metric.percent, True))
        if label_covers:
            average = measures.average
            row.append(Cell(average_label(average.covers, average.missing)))
        rows.append(row)
        if measures.average.missing:
            notes.append(
                f"{measures.run.label}: the average covers "
                f"{', '.join(measures.average.covers) or 'no scenario'} "
                f"(no scored episode in {', '.join(measures.average.missing)})"
            )
    title = f"{metric.heading} by scenario"
    return Table(f"cross-{metric.key}", title, columns, rows, notes, average_last=False)


def comparison_table(comparisons: Sequence[Comparison], key: str) -> Table:
    """Differences to the `--vs` run: accuracy (with McNemar p) or ps rate."""
    percent = key == "accuracy"
    base = comparisons[0].base.label if comparisons else ""
    scenarios = scenario_order([s for c in comparisons for s in c.scenarios])
    label_covers = _covers_differ([c.covers for c in comparisons])
    columns = ["run", *scenarios, "average", *(["average covers"] if label_covers else [])]
    rows = []
    for comparison in comparisons:
        row = [Cell(comparison.run.label)]
        diffs: list[Difference | None] = [comparison.scenarios.get(s) for s in scenarios]
        for diff in [*diffs, comparison.average]:
            if diff is None or not diff.shared:
                row.append(Cell(MISSING))
                continue
            value = diff.accuracy if percent else diff.ps_rate
            row.append(difference_cell(value, percent, diff.p_value if percent else None))
        if label_covers:
            row.append(Cell(average_label(comparison.covers)))
        rows.append(row)
    heading = "accuracy (points)" if percent else "ps rate"
    notes = [
        f"Run minus {base}, over the samples both runs scored; 95 % paired bootstrap "
        "intervals"
        + (
            "; p: McNemar's test (exact below 25 discordant pairs; the average "
            "pools the scenarios' pairs)"
            if percent
            else ""
        )
    ]
    return Table(f"vs-{key}", f"Δ {heading} vs {base}", columns, rows, notes, average_last=False)


def usage_table(all_measures: Sequence[RunMeasures]) -> Table:
    """Token counts and model latency per run."""
    kinds = sorted({k for m in all_measures for k in m.usage["tokens"]})
    columns = ["run", "requests", "cached"]
    for kind in kinds:
        columns += [f"{kind} sum", f"{kind} mean"]
    columns += ["latency sum s", "mean s", "p50 s", "p95 s"]
    rows = []
    for measures in all_measures:
        usage = measures.usage
        row = [
            Cell(measures.run.label),
            Cell(str(usage["requests"]), usage["requests"]),
            Cell(str(usage["cached"]), usage["cached"]),
        ]
        for kind in kinds:
            tokens = usage["tokens"].get(kind)
            if tokens is None:
                row += [Cell(MISSING), Cell(MISSING)]
            else:
                row += [
                    Cell(f"{tokens['sum']:,}", tokens["sum"]),
                    Cell(f"{tokens['mean']:.1f}", tokens["mean"]),
                ]
        latency = usage["latency_s"]
        for name in ("sum", "mean", "p50", "p95"):
            value = latency[name] if latency["requests"] else None
            row.append(Cell(MISSING) if value is None else Cell(f"{value:.3f}", value))
        rows.append(row)
    notes = [
        "Latency: requests the model answered (cache hits left out), as the backend timed them."
    ]
    return Table("usage", "Tokens and latency", columns, rows, notes, average_last=False)


def slug(text: str) -> str:
    kept = "".join(c if c.isalnum() else "-" for c in text.lower())
    return "-".join(part for part in kept.split("-") if part)[:60] or "run"


# ----- formats --------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    return text_formats.markdown(text)


def _md_cell(cell: Cell) -> str:
    """Numbers are ours and shown as they are; text (run names) is escaped."""
    text = cell.text if cell.value is not None else _md_escape(cell.text)
    if cell.href is not None:
        return f"[{text}](<{cell.href.replace('>', '%3E')}>)"
    return text


def to_markdown(table: Table) -> str:
    lines = [f"### {_md_escape(table.title)}", ""]
    lines.append("| " + " | ".join(_md_escape(c) for c in table.columns) + " |")
    aligns = [
        "---" if i == 0 or i in table.text_columns else "---:" for i in range(len(table.columns))
    ]
    lines.append("|" + "|".join(aligns) + "|")
    for index, row in enumerate(table.rows):
        cells = [_md_cell(c) for c in row]
        if (table.average_last and index == len(table.rows) - 1) or _yours(table, index):
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *(f"_{_md_escape(n)}_" for n in table.notes)]
    return "\n".join(lines).rstrip() + "\n"


def _yours(table: Table, index: int) -> bool:
    """Whether row `index` is one of the report's own runs among published rows."""
    return bool(table.row_kinds) and table.row_kinds[index] == "yours"


def _csvnumber_text(part: str, number: float) -> float | str:
    """Values and bounds to 6 decimals; p-values to 3 significant digits, so that a tiny
    p-value stays a number (5.66e-15), not 0; a count (n) as the whole number it is (2, not
    2.0)."""
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    return f"{number:.3g}" if part == "p" else round(float(number), 6)


def _csv_parts(table: Table) -> list[list[str]]:
    """Per column, the CSV columns it gives (`value`, `low`, `high`, `p`), or none for a text
    column. A column of numbers none of whose rows has one (every cell "—": a scenario no run
    scored) is still a column of numbers, with the parts of the table's other number columns
    and empty cells, so that one table's files have one rule for a missing number (it was
    written as a "—" text column without its low/high/p). Only the first column and the
    declared `text_columns` hold words whatever their cells."""
    widths: list[list[str] | None] = []
    for column in range(len(table.columns)):
        cells = [row[column] for row in table.rows]
        parts = ["value"]
        if any(c.low is not None for c in cells):
            parts += ["low", "high"]
        if any(c.p is not None for c in cells):
            parts.append("p")
        if any(c.value is not None for c in cells):
            widths.append(parts)
        elif column and column not in table.text_columns and _all_missing(cells):
            widths.append(None)  # a number column of no number: decided below
        else:
            widths.append([])
    shared = ["value"]
    for part in ("low", "high", "p"):
        if any(part in w for w in widths if w):
            shared.append(part)
    return [shared if w is None else w for w in widths]


def _all_missing(cells: Sequence[Cell]) -> bool:
    """Every cell is a missing number ("—"), in a table with at least one row."""
    return bool(cells) and all(c.value is None and c.text == MISSING for c in cells)


def to_csv(table: Table) -> str:
    """Numbers in columns: each metric column gives `value`, `low`, `high` (and `p`) columns
    when any of its cells has them; missing values are empty."""
    widths = _csv_parts(table)
    header = []
    for name, parts in zip(table.columns, widths, strict=True):
        header += [f"{name} {p}" if p != "value" else name for p in parts] if parts else [name]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([text_formats.csv_cell(h) for h in header])
    for row in table.rows:
        out: list[object] = []
        for cell, parts in zip(row, widths, strict=True):
            if not parts:
                out.append(text_formats.csv_cell(cell.text))
                continue
            for part in parts:
                number = getattr(cell, part)
                out.append("" if number is None else _csvnumber_text(part, number))
        writer.writerow(out)
    return buffer.getvalue()


def latex_escape(text: str) -> str:
    return text_formats.latex(text)


def to_latex(table: Table) -> str:
    """A booktabs tabular inside a table float (needs \\usepackage{booktabs})."""
    spec = "".join(
        "l" if i == 0 or i in table.text_columns else "r" for i in range(len(table.columns))
    )
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{latex_escape(table.title)}}}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(c) for c in table.columns) + " \\\\",
        "\\midrule",
    ]
    for index, row in enumerate(table.rows):
        if table.average_last and index == len(table.rows) - 1:
            lines.append("\\midrule")
        texts = [latex_escape(c.text) for c in row]
        if _yours(table, index):
            texts = [f"\\textbf{{{t}}}" for t in texts]
        lines.append(" & ".join(texts) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def _numeric(table: Table, index: int) -> bool:
    """Whether column `index` holds numbers (aligned right, heading included)."""
    return index > 0 and index not in table.text_columns


def to_html(table: Table) -> str:
    """A <table>; every string escaped (model names and settings come from files).

    The first column (the run or model) is pinned at the left of the table's scrolling box
    (report.css), so that a wide table scrolled sideways still says whose each row is; an
    interval is a span of its own that wraps under its value when the columns need room."""

    def e(text: str) -> str:
        return html.escape(text_formats.visible(text))

    def shown(cell: Cell) -> str:
        words = cell.text if cell.short is None else cell.short
        text = e(words)
        if cell.low is not None and " [" in words:
            value, interval = words.split(" [", 1)
            interval, _, p = interval.partition("] p=")
            text = f'<span class="v">{e(value)}</span> <span class="ci">[{e(interval)}'
            text += f'] </span><span class="ci">p={e(p)}</span>' if p else "</span>"
        if cell.short is not None:
            text = f'<span title="{e(cell.text)}">{text}</span>'
        if cell.href is None:
            return text
        return f'<a href="{html.escape(cell.href)}">{text}</a>'

    def classes(index: int, column: str) -> str:
        names = ["num"] if _numeric(table, index) else []
        names += ["average-col"] if column == "average" else []
        return f' class="{" ".join(names)}"' if names else ""

    marks = [classes(i, c) for i, c in enumerate(table.columns)]
    head = "".join(f"<th{mark}>{e(c)}</th>" for c, mark in zip(table.columns, marks, strict=True))
    body = []
    for index, row in enumerate(table.rows):
        average = table.average_last and index == len(table.rows) - 1
        cells = "".join(f"<td{mark}>{shown(c)}</td>" for c, mark in zip(row, marks, strict=True))
        kind = table.row_kinds[index] if table.row_kinds else ""
        if average:
            body.append(f'<tr class="average">{cells}</tr>')
        elif kind:
            body.append(f'<tr class="{e(kind)}">{cells}</tr>')
        else:
            body.append(f"<tr>{cells}</tr>")
    notes = "".join(f'<p class="note">{e(n)}</p>' for n in table.notes)
    # The cue says the table scrolls: hidden until the page's script finds the table wider
    # than its box (report.css: `figure.table.scrolls`).
    cue = '<p class="scroll-cue">wider than the window: scroll sideways for every column →</p>'
    return (
        f'<figure class="table" data-table="{e(table.key)}"><figcaption>{e(table.title)}'
        f'</figcaption>{cue}<div class="scroller"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{notes}</figure>"
    )
