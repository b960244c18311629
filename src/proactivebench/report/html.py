"""The report as one self-contained HTML file: the tables, the plots and an episode viewer.

Self-contained: styles, script, plots and thumbnails are inside the file, and its Content
Security Policy lets it load nothing else. Safe with hostile text: every string from a model
or a data set is escaped here (`html.escape`) or, in the viewer, set as `textContent` by the
script from JSON blocks whose `<` are written as `\\u003c` (so no answer can close its
`<script>` block). Light: episodes are JSON, one block per run and scenario, parsed and drawn
only when their section is shown, with thumbnails shared by every turn and run that shows
the same view.
"""

from __future__ import annotations

import base64
import functools
import html
import math
import typing
from collections.abc import Sequence
from importlib import resources
from typing import Any

from proactivebench.benchmark.metrics import Metric
from proactivebench.benchmark.registry import scenario_order
from proactivebench.benchmark.scenarios.answers import read_group
from proactivebench.benchmark.scenarios.base import EndReason
from proactivebench.core.texts import NotJSONError, dumps
from proactivebench.report.inert import visible
from proactivebench.report.measures import Comparison, RunMeasures, metrics_of
from proactivebench.report.plots import describe
from proactivebench.report.runs import Run
from proactivebench.report.tables import Table, to_html
from proactivebench.report.thumbs import Thumbnails, prefetch_all, view_key

if typing.TYPE_CHECKING:
    from proactivebench.report.findings import Finding

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def _asset(name: str) -> str:
    return resources.files("proactivebench.report").joinpath("assets", name).read_text("utf-8")


def finite_or_none(value: Any) -> Any:
    """`value` with every NaN or infinity (from hand-edited run.json or result lines) as
    None: report.json and the page's data stay strict JSON (JavaScript reads no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def finite_json(value: Any, **options: Any) -> str:
    """`value` as JSON (`texts.dumps` with `options`), every NaN or infinity as null
    (`finite_or_none`). A value holding none, the common case, is written as it is: walking
    every value of the viewer's data in Python first cost more than writing it."""
    try:
        return dumps(value, **options)
    except NotJSONError:
        return dumps(finite_or_none(value), **options)


def json_block(element_id: str, data: Any) -> str:
    """A JSON data block that no string inside can end early."""
    text = finite_json(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{html.escape(element_id)}">{text}</script>'


def outcome_of(line: dict[str, Any]) -> str:
    """What the viewer filters on: how the episode ended, or "error"."""
    if line.get("error"):
        return "error"
    if line.get("end_reason"):
        return str(line["end_reason"])
    if "aggregate" in line:
        return "aggregate" if line.get("aggregate") else "no aggregate"
    return "correct" if line.get("correct") else "wrong"


class _Section:
    """One run's episodes of one scenario, with repeated strings stored once."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.texts: list[str] = []
        self._text_ids: dict[str, int] = {}
        self.options: list[list[int]] = []
        self._option_ids: dict[tuple[int, ...], int] = {}
        self.episodes: list[dict[str, Any]] = []

    def text(self, value: str) -> int:
        found = self._text_ids.get(value)
        if found is None:
            found = self._text_ids[value] = len(self.texts)
            self.texts.append(value)
        return found

    def option_list(self, options: Sequence[str]) -> int:
        key = tuple(self.text(str(o)) for o in options)
        found = self._option_ids.get(key)
        if found is None:
            found = self._option_ids[key] = len(self.options)
            self.options.append(list(key))
        return found

    def as_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "texts": self.texts,
            "options": self.options,
            "episodes": self.episodes,
        }


class _Images:
    """The thumbnails of one scenario, across runs: view -> index into a list of URLs."""

    def __init__(self, thumbs: Thumbnails | None) -> None:
        self.thumbs = thumbs
        self._ids: dict[Any, int] = {}

    def add(self, turn: dict[str, Any]) -> int | None:
        if self.thumbs is None or not turn.get("image"):
            return None
        key = view_key(turn)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found

    def keys(self) -> list[Any]:
        return list(self._ids)

    def urls(self) -> list[str | None]:
        if self.thumbs is None:
            return []
        return [self.thumbs.url(key) for key in self._ids]


@functools.lru_cache(maxsize=4096)
def _chosen(answer: str, options: tuple[str, ...]) -> int:
    """The shown option the answer designates (protocol §4 reading over the whole list), -1
    for none. Remembered: a run gives the same answers to the same options again and again
    (a baseline always), and reading them was a quarter of the viewer's data."""
    reading = read_group(answer, list(options), [])
    if reading.chosen is None:
        return -1
    return options.index(reading.chosen)


def unjudged(turn: dict[str, Any]) -> bool:
    """Whether a multi-turn open-ended turn was never judged: its judge call failed, which
    ended the episode in an error after the answer was recorded. Such a turn keeps the
    placeholder verdict "mismatch" (`oeg_multiturn._turn`), which would read as the judge
    having found the answer wrong."""
    return (
        "valid_answers_text" in turn
        and turn.get("proactive_suggestion") is None
        and not turn.get("judge_outputs")
    )


def shown_verdict(turn: dict[str, Any], default: str) -> str:
    """A turn's verdict as the viewer and `show` print it ("not judged": `unjudged`)."""
    return "not judged" if unjudged(turn) else str(turn.get("verdict", default))


def _turn(section: _Section, images: _Images, turn: dict[str, Any], number: int) -> list[Any]:
    options = [str(o) for o in turn.get("options") or []]
    answer = str(turn.get("answer", ""))
    read_as = turn.get("read_as")
    return [
        images.add(turn),
        section.text(str(turn.get("prompt", ""))),
        section.option_list(options),
        _chosen(read_as if isinstance(read_as, str) else answer, tuple(options)),
        answer,
        str(read_as) if read_as is not None else None,
        shown_verdict(turn, "demonstration"),
        turn.get("action") and str(turn["action"]),
        _reason(turn),
        turn.get("turn", number),
    ]


def _judged(record: dict[str, Any]) -> str:
    """What the judge found in an open-ended answer (a line, or a multi-turn line's turn)."""
    judged = ", ".join(
        name
        for name, key in (("ps", "proactive_suggestion"), ("cp", "category_prediction"))
        if record.get(key)
    )
    return f"judge: {judged or 'neither'}; valid: {record.get('valid_answers_text') or ''}"


def _reason(turn: dict[str, Any]) -> str | None:
    """A turn's note: why it failed in a special way and, for a judged turn (--mode
    oeg-multiturn), the judge's finding and whether the action was drawn at random."""
    notes = []
    if "valid_answers_text" in turn:
        notes.append(_judged(turn))
        if turn.get("random_mapping"):
            notes.append("action drawn at random (the suggestion named no offered action)")
    if turn.get("reason"):
        notes.append(str(turn["reason"]))
    return "; ".join(notes) or None


def _oeg_turn(section: _Section, images: _Images, line: dict[str, Any]) -> list[Any]:
    verdict = "aggregate" if line.get("aggregate") else ("error" if line.get("error") else "none")
    return [
        images.add(line),
        section.text(str(line.get("prompt", ""))),
        section.option_list([]),
        -1,
        str(line.get("generation") or ""),
        None,
        verdict,
        None,
        _judged(line),
        1,
    ]


def viewer_data(runs: Sequence[Run], thumbs: dict[str, Thumbnails | None]) -> str:
    """The viewer's JSON blocks: an index, one block per run and scenario, one image block per
    scenario."""
    scenarios = scenario_order([s for run in runs for s in run.by_scenario])
    images = {s: _Images(thumbs.get(s)) for s in scenarios}
    blocks: list[str] = []
    index: dict[str, Any] = {"runs": [], "scenarios": scenarios, "outcomes": []}
    outcomes: set[str] = set()
    for run_index, run in enumerate(runs):
        entry: dict[str, Any] = {
            "label": run.label,
            "history": bool(run.settings.get("history")),
            "sections": [],
        }
        for scenario in scenario_order(list(run.by_scenario)):
            section = _Section(scenario)
            pictures = images[scenario]
            for line in run.by_scenario[scenario]:
                outcome = outcome_of(line)
                outcomes.add(outcome)
                if "trace" in line:
                    turns = [
                        _turn(section, pictures, t, n)
                        for n, t in enumerate(line.get("trace") or [], 1)
                    ]
                else:
                    turns = [_oeg_turn(section, pictures, line)]
                demos = [
                    {
                        "s": demo.get("sample_id"),
                        "t": [
                            _turn(section, pictures, t, n)
                            for n, t in enumerate(demo.get("turns") or [], 1)
                        ],
                    }
                    for demo in line.get("demonstrations") or []
                ]
                section.episodes.append(
                    {
                        "s": line["sample_id"],
                        "o": outcome,
                        "c": line.get("correct_category"),
                        "e": line.get("error"),
                        "t": turns,
                        "d": demos,
                    }
                )
            block_id = f"ep-{run_index}-{scenarios.index(scenario)}"
            blocks.append(json_block(block_id, section.as_json()))
            entry["sections"].append(
                {
                    "scenario": scenario,
                    "block": block_id,
                    "images": scenarios.index(scenario),
                    "count": len(section.episodes),
                }
            )
        index["runs"].append(entry)
    order = list(typing.get_args(EndReason))  # the endings first, in their declared order
    index["outcomes"] = sorted(outcomes, key=lambda o: (order.index(o) if o in order else 99, o))
    prefetch_all((pictures.thumbs, pictures.keys()) for pictures in images.values())
    for position, scenario in enumerate(scenarios):
        blocks.append(json_block(f"img-{position}", images[scenario].urls()))
    blocks.insert(0, json_block("viewer-index", index))
    return "\n".join(blocks)


def legend_html(metrics: Sequence[Metric]) -> str:
    """The columns' definitions, folded: a page opened with them showed some sixteen lines of
    words before its first number (issue 47); one click unfolds them."""
    items = "".join(
        f"<dt>{html.escape(m.heading)}</dt><dd>{html.escape(m.doc)}</dd>" for m in metrics
    )
    return (
        f'<details class="legend"><summary>What the columns mean ({len(metrics)} terms)'
        f'</summary><dl class="legend">{items}</dl></details>'
    )


def reference_html(comparisons: Sequence[Comparison]) -> str:
    """The `--vs` reference, named at the page's head, and how many samples each run shares
    with it per scenario (scored in both: the Δ tables' pairs), runs of the same counts on one
    line."""
    if not comparisons:
        return ""
    base = comparisons[0].base
    lines: dict[str, list[str]] = {}
    for comparison in comparisons:
        order = scenario_order(list(comparison.scenarios))
        counts = " · ".join(f"{s} {comparison.scenarios[s].shared}" for s in order)
        lines.setdefault(counts or "none", []).append(comparison.run.label)
    several = len(comparisons) > 1
    paired = ""
    for counts, labels in lines.items():
        whose = html.escape(visible(", ".join(labels)))
        whose = f' <span class="muted">({whose})</span>' if several else ""
        paired += f"<li>{html.escape(visible(counts))}{whose}</li>"
    return (
        f'<p class="reference">Compared with (--vs): <strong>{html.escape(visible(base.label))}'
        f'</strong> <span class="muted">{html.escape(visible(str(base.run_dir)))}</span></p>'
        f'<p class="muted">Paired samples (scored by both runs) per scenario:</p>'
        f'<ul class="paired">{paired}</ul>'
    )


#: More runs, or notes, than these in a page's head are folded (`render_html`).
FOLDED_BEYOND = 3
NOTES_FOLDED_BEYOND = 2


def findings_html(findings: Sequence[Finding]) -> str:
    """The paper's findings as this model's runs answer them, first on the page: the claim,
    the sentence, and what a reader must know beside it (not comparable, notes)."""
    if not findings:
        return ""
    items = ""
    for finding in findings:
        aside = "".join(f'<p class="muted">{html.escape(visible(t))}</p>' for t in finding.notes)
        if finding.not_comparable:  # the sentence names each kind; here is each in full
            why = "".join(f"<li>{html.escape(visible(t))}</li>" for t in finding.not_comparable)
            aside += (
                '<details class="notes"><summary>why not comparable</summary>'
                f'<ul class="muted">{why}</ul></details>'
            )
        items += (
            f'<li data-finding="{html.escape(finding.id)}"><strong>({html.escape(finding.number)}'
            f") {html.escape(visible(finding.claim))}.</strong> "
            f"{html.escape(visible(finding.sentence))}{aside}</li>"
        )
    return (
        '<section id="findings"><h2>Findings</h2><p class="muted">The paper\'s questions, '
        "answered by this model's experiments: each difference paired over the episodes both "
        "runs scored, with its 95 % interval, beside the paper's figure (docs/paper.md, "
        f'"The findings").</p><ul class="findings">{items}</ul></section>'
    )


def _side_by_side_first(tables: Sequence[Table]) -> list[Table]:
    """With several runs, the tables that set them side by side come first: they are what a
    reader compares; each run's own table follows (the files keep their order)."""
    return sorted(tables, key=lambda table: not table.key.startswith(("cross-", "vs-")))


def render_html(
    title: str,
    runs: Sequence[Run],
    all_measures: Sequence[RunMeasures],
    tables: Sequence[Table],
    plots: dict[str, bytes],
    notes: Sequence[str],
    thumbs: dict[str, Thumbnails | None],
    keep_order: bool = False,
    warnings: Sequence[str] = (),
    comparisons: Sequence[Comparison] = (),
    findings: Sequence[Finding] = (),
) -> str:
    """The whole page; the tables side by side first unless `keep_order` (a report laid out
    as the paper, `report.paper_layout`); the `warnings` (`measures.run_warnings`) at its top,
    before any number, as eval prints them; the `--vs` reference and its pairs
    (`comparisons`) in the head; a suite's `findings` first of all sections."""

    def e(text: str) -> str:
        return html.escape(visible(text))

    run_items = "".join(
        f'<li><strong>{e(run.label)}</strong> <span class="muted">{e(str(run.run_dir))}'
        f"{' · ' + e(f'{run.params_b:g}B parameters') if run.params_b else ''}</span></li>"
        for run in runs
    )
    metrics: list[Metric] = []
    for measures in all_measures:
        for metric in metrics_of(measures.run):
            if metric not in metrics:
                metrics.append(metric)
    # Each plot links its file (plots/NAME.png, beside the page): on a phone the page shrinks
    # it to the window, and a tap opens it at full size.
    figures = "".join(
        f'<a class="plot" href="plots/{e(name)}.png" title="open the full-size image">'
        f'<img class="plot" data-plot="{e(name)}" alt="{e(describe(name, all_measures))}" '
        f'src="data:image/png;base64,'
        f'{base64.b64encode(png).decode("ascii")}"></a>'
        for name, png in plots.items()
    )
    note_html = "".join(f'<p class="note">{e(n)}</p>' for n in notes)
    warning_html = "".join(
        f'<p class="warning" role="alert"><strong>warning:</strong> {e(w)}</p>' for w in warnings
    )
    viewer_blocks = viewer_data(runs, thumbs)
    findings_link = '<a href="#findings">Findings</a>' if findings else ""
    # A head of many runs (a suite's eleven) and their notes filled the first screen before
    # any number: beyond a few, they are folded, each summary saying what it holds.
    runs_html = f"<ul>{run_items}</ul>{reference_html(comparisons)}"
    if len(runs) > FOLDED_BEYOND:
        against = f", compared with {e(comparisons[0].base.label)}" if comparisons else ""
        runs_html = (
            f'<details class="runs"><summary>{len(runs)} runs{against}</summary>'
            f"{runs_html}</details>"
        )
    if len(notes) > NOTES_FOLDED_BEYOND:
        note_html = (
            f'<details class="notes"><summary>{len(notes)} notes</summary>{note_html}</details>'
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title><style>{_asset("report.css")}</style></head>
<body><header><h1>{e(title)}</h1>{warning_html}
<nav>{findings_link}<a href="#tables">Tables</a><a href="#plots">Plots</a>
<a href="#episodes">Episodes</a></nav>
{runs_html}{note_html}</header>
<main>{findings_html(findings)}<section id="tables"><h2>Tables</h2>{legend_html(metrics)}
{"".join(to_html(t) for t in (tables if keep_order else _side_by_side_first(tables)))}</section>
<section id="plots"><h2>Plots</h2>{figures or '<p class="note">No plots.</p>'}</section>
<section id="episodes"><h2>Episodes</h2>
<div class="controls"><label>run <select id="viewer-run"></select></label>
<label>scenario <select id="viewer-scenario"><option value="all">all</option></select></label>
<label>outcome <select id="viewer-outcome"><option value="all">all</option></select></label>
<span class="muted">each strip is one episode: the views shown, the prompt, the options (the
chosen one marked, the answer key ✓), the raw answer and the verdict of every turn</span></div>
<div id="viewer-episodes"></div></section></main>
{viewer_blocks}
<script>{_asset("viewer.js")}</script></body></html>
"""
