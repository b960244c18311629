"""Benchmark metrics of docs/protocol.md §4 and §6, each declared once (`Metric`).

MCQA, per scenario: accuracy = mean(correct) x 100 and ps rate = mean(turns - 1), the mean
number of proactive suggestions per episode (a count, not a percentage). Each rate is the mean
of one episode score (`accuracy_score`, `ps_rate_score`, ...), defined here only. Open-ended
generation, per scenario: the rates (mean x 100) of episodes whose judged answer holds a
proactive suggestion (ps), a correct category (cp), or either (aggregate), the judges'
agreement (none with a single vote: one vote agrees with itself, which says nothing), the share
of judge votes that held no readable verdict (unparsed) and how many lines the latest judge
could not judge (unjudged). MCQA's action distribution (Figs. 4, 19 of the paper): the share of
the turns whose choice was a category, a proactive option, an abstention or unreadable
(`choice_kind`, over all turns and at the first turn), and the share of episodes that asked
until the step limit ended them (docs/protocol.md §9); open-ended lines have no choices.
Episodes that ended in an error are counted apart and never scored as wrong; a scenario with
none scored has no rates (None). The average row is the unweighted
mean over the scenarios that have rates, as the paper reports.

Every table reads these declarations and values: `summarize` (summary.json: the headline
rates and the action distribution; the terminal table: the headline rates), the report
(`report.measures` adds intervals and the explanatory metrics, from the same
`values_by_metric`, `rate_of` and `average_rate`), its HTML and plots, and the Inspect adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from proactivebench.benchmark.registry import paper_scenarios, scenario_order
from proactivebench.benchmark.results import chosen_option, is_oeg_line
from proactivebench.benchmark.scenarios.actions import is_abstention

# ----- the score of one episode ----------------------------------------------------------------
#
# A score is on the scale shown: 100 or 0 for a percentage, a count for the ps rate. A line
# without a field its metric reads (`Metric.reads`) is not scored by that metric, never as 0.

Line = Mapping[str, Any]


def accuracy_score(line: Line) -> float:
    """MCQA accuracy (%): 100 for an episode that ended on the correct category, else 0."""
    return 100.0 if line.get("correct") else 0.0


def ps_rate_score(line: Line) -> float:
    """MCQA ps rate: the episode's proactive suggestions (accepted interventions), turns - 1."""
    return float(line.get("num_turns", 0) - 1)


def ps_score(line: Line) -> float:
    """OEG ps (%): 100 when the judge found a proactive suggestion in the answer, else 0."""
    return 100.0 * float(line.get("proactive_suggestion") or 0)


def cp_score(line: Line) -> float:
    """OEG cp (%): 100 when the judge found the correct category in the answer, else 0."""
    return 100.0 * float(line.get("category_prediction") or 0)


def aggregate_score(line: Line) -> float:
    """OEG aggregate (%): 100 when the answer holds either, else 0."""
    return 100.0 * float(line.get("aggregate") or 0)


def agreement_score(line: Line) -> float | None:
    """OEG judges' agreement (%): the share of votes that agreed with the majority; None (the
    line does not count) when no agreement was recorded or the line had a single vote (its
    agreement with itself, 100 %, would read as a finding)."""
    if "judge_agreement" not in line or len(line.get("judge_outputs") or ()) < 2:
        return None
    return 100.0 * line["judge_agreement"]


def unparsed_score(line: Line) -> float | None:
    """OEG unparsed (%): the share of the line's judge votes whose output held no readable
    verdict (`judge_parsed`); None for a line that does not record it."""
    parsed = line.get("judge_parsed")
    if not isinstance(parsed, list) or not parsed:
        return None
    return 100.0 * sum(p is not True for p in parsed) / len(parsed)


def is_unjudged(line: Line) -> bool:
    """Whether the latest judge could not judge the line: its call failed, and the line kept
    an earlier verdict (`judge_error`) or has none (an error of the judge)."""
    error = line.get("error")
    return bool(line.get("judge_error")) or (isinstance(error, str) and error.startswith("judge: "))


def _asked(line: Line) -> bool:
    return any(turn.get("verdict") == "proactive" for turn in line.get("trace", []))


def _first_correct(line: Line) -> bool:
    trace = line.get("trace") or []
    return bool(trace) and trace[0].get("verdict") == "correct"


# ----- the action distribution: what each turn chose --------------------------------------------

#: The kinds of choice a turn can make (docs/protocol.md §9), in the order tables and plots
#: show them: the paper's "predict target", "proactive" and "abstain", and what could not be
#: read as any shown option.
CHOICE_KINDS = ("category", "proactive", "abstain", "unreadable")


def choice_kind(turn: Line, line: Line) -> str:
    """What kind of option a turn of `line` chose, from what the line records (docs/protocol.md
    §9): the verdict, the option the answer designates among those shown, the turn's `reason`
    and the episode's `end_reason` and `correct_category`.

    A wrong choice is an abstention when the option abstains (`is_abstention`); otherwise it
    is an intervention the state refused (the episode recorded why: the last turn of MVP-N,
    IN-C and QD, IN-C's other enhancements, CIT's end of video) unless it is the right
    category (ROD refuses it on its first turn, and says so too); else a wrong category. A
    judged turn (multi-turn open-ended generation) is read from its verdict and `reason`."""
    verdict = turn.get("verdict")
    if verdict == "correct":
        return "category"
    if verdict == "proactive":
        return "proactive"
    if verdict == "mismatch":
        # An accepted intervention whose text names no action (§8) is a proactive choice.
        return "proactive" if line.get("end_reason") == "no_action" else "unreadable"
    if verdict == "wrong" and "valid_answers_text" in turn:
        # A judged turn of multi-turn open-ended generation: a free answer designates no
        # option; the judge found a suggestion the state could not carry out (`reason`) or
        # nothing it accepts, which is a wrong category (§9).
        return "proactive" if turn.get("reason") else "category"
    chosen = chosen_option(turn) if verdict == "wrong" else None
    if chosen is None:
        return "unreadable"
    if is_abstention(chosen):
        return "abstain"
    if turn.get("reason") and chosen != line.get("correct_category"):
        return "proactive"
    return "category"


def choices(line: Line) -> list[Line]:
    """One item per turn of an MCQA line: its `choice` (`choice_kind`); none for an
    open-ended line, which has no turns of choices."""
    if is_oeg_line(line):
        return []
    trace = line.get("trace") or []
    return [{"choice": choice_kind(turn, line)} for turn in trace if isinstance(turn, Mapping)]


def first_choice(line: Line) -> list[Line]:
    """The first turn's item of `choices`, alone (none for a line without turns)."""
    return choices(line)[:1]


def _episode(line: Line) -> list[Line]:
    return [line]


def _chose(kind: str) -> Callable[[Line], float]:
    return lambda item: 100.0 * (item["choice"] == kind)


def relative_change(base: float | None, value: float | None) -> float | None:
    """The change from `base` to `value` in percent of `base`, as the paper's Figs. 5, 7, 20
    and 21 print it (a proactive share of 37 % becoming 41 % is +10.8 %); None when either is
    missing or `base` is 0 (no share to be a percentage of)."""
    if base is None or value is None or base == 0:
        return None
    return 100.0 * (value - base) / base


# ----- the metrics, declared once ---------------------------------------------------------------


def _mean(values: Sequence[float]) -> float:
    """The plain mean (summed in order: the figures of every earlier summary.json)."""
    return sum(values) / len(values)


@dataclass(frozen=True)
class Metric:
    """One per-episode quantity: its name, heading, the score of one episode, how scores
    combine, and which way is better."""

    key: str
    heading: str
    #: The value of one scored episode on the scale shown (0 or 100 for a percentage), or
    #: None when the episode does not count (e.g. accuracy after asking counts only episodes
    #: that asked).
    value: Callable[[Line], float | None]
    #: Shown as a percentage (one decimal) or as is (ps rate, suggestions per episode: two).
    percent: bool = True
    #: How values combine: a scenario's episodes into its rate, then the scenarios' rates into
    #: the average (each scenario counts once, whatever its size, as the paper reports).
    combine: Callable[[Sequence[float]], float] = _mean
    #: True: more is better; False: less is; None: neither (a behaviour, not a score).
    higher_is_better: bool | None = True
    #: One of the benchmark's rates: in summary.json and the terminal table (the others
    #: explain behaviour, in the report only).
    headline: bool = False
    #: Whether the report gives its 95 % interval: Wilson's for a `proportion`, else the
    #: bootstrap's (`report.measures.rate_interval`).
    interval: bool = False
    #: Each episode's value is 0 or 100: the rate is a proportion (its interval, Wilson's).
    proportion: bool = False
    #: An axis label, where the heading is too terse for a plot.
    axis_label: str = ""
    doc: str = ""
    #: What one value is of: the scored episode itself (default), or items drawn from it
    #: (`choices`: one per turn, so that a rate is the share of the scenario's turns, every
    #: episode's turns pooled).
    over: Callable[[Line], Sequence[Line]] = _episode
    #: In summary.json beside the headline rates, though not in the terminal table.
    summarized: bool = False
    #: The report table that shows it: "run" (the run's table) or "actions" (the action
    #: distribution's own tables).
    table: str = "run"
    #: The fields of a scored line its value reads: a line without one of them is not
    #: counted by it (never as 0), and a reader names such a line (`unread_fields`).
    reads: tuple[str, ...] = ()
    #: The same for each judged turn of a multi-turn open-ended line (one with the state's
    #: `valid_answers_text`): a finished line with a judged turn without them is named.
    turn_reads: tuple[str, ...] = ()

    def text(self, value: float) -> str:
        """A value as every table shows it."""
        return number_text(value, self.percent)

    @property
    def label(self) -> str:
        return self.axis_label or self.heading

    def describe(self) -> dict[str, Any]:
        """The declaration as report.json gives it, for readers that rank or colour runs."""
        return {
            "heading": self.heading,
            "percent": self.percent,
            "higher_is_better": self.higher_is_better,
            "headline": self.headline,
            "doc": self.doc,
            "interval": self.interval_method,
        }

    @property
    def interval_method(self) -> str | None:
        """How the report's interval of the rate is drawn: "wilson" (a proportion),
        "bootstrap" (a mean of counts) or None (no interval)."""
        if not self.interval:
            return None
        return "wilson" if self.proportion else "bootstrap"


def number_text(value: float, percent: bool) -> str:
    """A rate as every table shows it: one decimal for a percentage, two for a count."""
    return f"{value:.1f}" if percent else f"{value:.2f}"


#: The rates' intervals in words, for every table's note (`report.measures.rate_interval`).
INTERVAL_NAME = "95 % interval (Wilson's for a %, percentile bootstrap for the ps rate)"


MCQA_METRICS = (
    Metric(
        "accuracy",
        "accuracy %",
        accuracy_score,
        headline=True,
        interval=True,
        proportion=True,
        reads=("correct",),
        doc="episodes that ended on the correct category",
    ),
    Metric(
        "ps_rate",
        "ps rate",
        ps_rate_score,
        percent=False,
        # Neither more nor less is better: a model that asks whenever it can (blind asking)
        # has the most. It reads between baseline:oracle's (the fewest suggestions that reach
        # the answer) and baseline:proactive's (every one it can), beside accuracy.
        higher_is_better=None,
        headline=True,
        interval=True,
        axis_label="ps rate (suggestions / episode)",
        reads=("num_turns",),
        doc="mean number of proactive suggestions (accepted interventions) per episode; "
        "a count, not a percentage",
    ),
    Metric(
        "first_turn_accuracy",
        "first-turn acc %",
        lambda x: 100.0 * _first_correct(x),
        reads=("trace",),
        doc="episodes answered correctly at the first turn, without asking",
    ),
    Metric(
        "accuracy_after_asking",
        "acc after asking %",
        lambda x: accuracy_score(x) if _asked(x) else None,
        reads=("trace", "correct"),
        doc="accuracy among the episodes with at least one request",
    ),
    Metric(
        "asked",
        "asked %",
        lambda x: 100.0 * _asked(x),
        higher_is_better=None,
        reads=("trace",),
        doc="episodes with at least one proactive request",
    ),
    Metric(
        "abstained",
        "abstained %",
        lambda x: 100.0 * (x.get("end_reason") == "abstained"),
        higher_is_better=None,
        reads=("end_reason",),
        doc='episodes that ended on an abstaining option ("I cannot tell")',
    ),
    Metric(
        "unreadable",
        "unreadable %",
        lambda x: 100.0 * (x.get("end_reason") == "unreadable"),
        higher_is_better=False,
        reads=("end_reason",),
        doc="episodes that ended on an answer designating no shown option: a format the "
        "protocol cannot read",
    ),
    *(
        Metric(
            f"{prefix}{kind}",
            f"{kind} % ({where})",
            _chose(kind),
            higher_is_better=None,
            over=over,
            summarized=True,
            table="actions",
            reads=("trace", "end_reason", "correct_category"),
            doc=f"{what} whose answer chose {meaning} (docs/protocol.md §9)",
        )
        for prefix, where, over, what in (
            ("choice_", "turns", choices, "turns (every episode's turns pooled)"),
            ("first_choice_", "1st turn", first_choice, "first turns"),
        )
        for kind, meaning in (
            ("category", "a category, right or wrong"),
            ("proactive", "a proactive option (an intervention), accepted or refused"),
            ("abstain", 'an abstaining option ("I do not know")'),
            ("unreadable", "no shown option (an answer the protocol cannot read)"),
        )
    ),
    Metric(
        "blind_asking",
        "asked to step limit %",
        lambda x: 100.0 * (x.get("end_reason") == "step_limit"),
        higher_is_better=None,
        summarized=True,
        table="actions",
        reads=("end_reason",),
        doc="episodes that kept choosing proactive options until the step limit ended them "
        "(end_reason step_limit; the paper's blind asking, §4.3)",
    ),
)

OEG_METRICS = (
    Metric(
        "ps",
        "ps %",
        ps_score,
        headline=True,
        interval=True,
        proportion=True,
        reads=("proactive_suggestion",),
        doc="answers the judge found to hold a proactive suggestion",
    ),
    Metric(
        "cp",
        "cp %",
        cp_score,
        headline=True,
        interval=True,
        proportion=True,
        reads=("category_prediction",),
        doc="answers the judge found to name the correct category",
    ),
    Metric(
        "aggregate",
        "aggregate %",
        aggregate_score,
        headline=True,
        interval=True,
        proportion=True,
        reads=("aggregate",),
        doc="answers with either",
    ),
    Metric(
        "agreement",
        "judges agree %",
        agreement_score,
        headline=True,
        doc="mean share of judge votes that agreed with the majority verdict (an unparsed vote "
        "agrees with none; not shown with one vote)",
    ),
    Metric(
        "unparsed",
        "unparsed %",
        unparsed_score,
        higher_is_better=False,
        headline=True,
        reads=("judge_parsed",),
        doc="judge votes whose output held no readable verdict (no 0/1 run of the right "
        "length after the reasoning): scored 0, as the reference scores them",
    ),
)


def _judged_turns(line: Line) -> list[Mapping[str, Any]]:
    """The turns of a multi-turn open-ended line the judge gave a verdict on."""
    trace = line.get("trace") or []
    return [t for t in trace if isinstance(t, Mapping) and "proactive_suggestion" in t]


def _turn_share(key: str) -> Callable[[Line], float | None]:
    """The share (%) of an episode's judged turns whose verdict `key` is 1; None without
    judged turns."""

    def share(line: Line) -> float | None:
        turns = _judged_turns(line)
        if not turns:
            return None
        return 100.0 * sum(bool(t.get(key)) for t in turns) / len(turns)

    return share


def _first_turn(key: str) -> Callable[[Line], float | None]:
    """100 when the judge's verdict `key` at the first turn is 1, else 0 (None: no judged
    first turn)."""

    def first(line: Line) -> float | None:
        turns = _judged_turns(line)
        return 100.0 * bool(turns[0].get(key)) if turns else None

    return first


def _unparsed_turns(line: Line) -> float | None:
    """The share (%) of the judge votes over every turn of the line with no readable verdict."""
    parsed = [p for t in _judged_turns(line) for p in t.get("judge_parsed") or []]
    return 100.0 * sum(p is not True for p in parsed) / len(parsed) if parsed else None


#: Multi-turn open-ended generation (`--mode oeg-multiturn`): MCQA's rates (accuracy, ps rate
#: = turns - 1; paper Table 10) and, explaining them, the OEG measures per turn.
OEG_MULTITURN_METRICS = (
    *MCQA_METRICS,
    Metric(
        "first_turn_ps",
        "first-turn ps %",
        _first_turn("proactive_suggestion"),
        higher_is_better=None,
        turn_reads=("proactive_suggestion",),
        doc="first answers the judge found to hold a proactive suggestion (OEG's ps, asked "
        "at the first turn)",
    ),
    Metric(
        "first_turn_cp",
        "first-turn cp %",
        _first_turn("category_prediction"),
        turn_reads=("category_prediction",),
        doc="first answers the judge found to name the correct category (OEG's cp)",
    ),
    Metric(
        "turn_ps",
        "turns with ps %",
        _turn_share("proactive_suggestion"),
        higher_is_better=None,
        turn_reads=("proactive_suggestion",),
        doc="per episode, the share of its judged turns holding a proactive suggestion; "
        "averaged over episodes",
    ),
    Metric(
        "turn_cp",
        "turns with cp %",
        _turn_share("category_prediction"),
        turn_reads=("category_prediction",),
        doc="per episode, the share of its judged turns naming the correct category; averaged "
        "over episodes",
    ),
    Metric(
        "turn_unparsed",
        "unparsed %",
        _unparsed_turns,
        higher_is_better=False,
        doc="per episode, the share of judge votes over its turns whose output held no "
        "readable verdict (the turn then ends the episode as unreadable)",
    ),
)


def metrics_for(oeg: bool, multiturn: bool = False) -> tuple[Metric, ...]:
    """Every metric of a run of that mode, headline rates first (a multi-turn open-ended
    run, `multiturn`, has MCQA's headline rates)."""
    if multiturn:
        return OEG_MULTITURN_METRICS
    return OEG_METRICS if oeg else MCQA_METRICS


def headline_metrics(oeg: bool) -> tuple[Metric, ...]:
    """The benchmark's rates of a run of that mode: summary.json's and the terminal's."""
    return tuple(m for m in metrics_for(oeg) if m.headline)


def summary_metrics(oeg: bool) -> tuple[Metric, ...]:
    """The rates summary.json holds: the headline rates and, for MCQA, the action
    distribution (`Metric.summarized`)."""
    return tuple(m for m in metrics_for(oeg) if m.headline or m.summarized)


def table_metrics(oeg: bool, table: str, multiturn: bool = False) -> tuple[Metric, ...]:
    """The metrics of a run of that mode that the report's `table` ("run", "actions") shows
    (a multi-turn open-ended run's "run" table adds OEG's measures per turn)."""
    return tuple(m for m in metrics_for(oeg, multiturn) if m.table == table)


def metric(key: str) -> Metric:
    """The metric named `key`; KeyError for none."""
    return {m.key: m for m in (*OEG_MULTITURN_METRICS, *OEG_METRICS)}[key]


def values_by_metric(metrics: Iterable[Metric], lines: Sequence[Line]) -> dict[str, list[float]]:
    """Each of `metrics`' values (by key) over `lines` (a scenario's scored episodes): the
    value of each line, or of each item it counts in them (`Metric.over`: their turns), that
    counts. The items of each `over` are drawn once for all the metrics that count them: the
    rates over turns' choices read each turn's answer once, not once per rate (summary.json
    has eight such rates, computed at the end of every run)."""
    drawn: dict[tuple[Callable[[Line], Sequence[Line]], tuple[str, ...]], list[Line]] = {}
    values = {}
    for metric in metrics:
        items = drawn.get((metric.over, metric.reads))
        if items is None:
            items = drawn[metric.over, metric.reads] = [
                item for line in lines if _holds(line, metric.reads) for item in metric.over(line)
            ]
        values[metric.key] = [v for v in map(metric.value, items) if v is not None]
    return values


def _holds(line: Line, fields: tuple[str, ...]) -> bool:
    return all(key in line for key in fields)


#: Fields a metric reads that writers recording `settings` did not always write (a version
#: of 2026-11-29 judged open-ended lines without `judge_parsed`): a line without one is not
#: counted by the metrics that read it, and is named (`unrecorded_votes`), but its other
#: rates count.
RECORDED_LATER = ("judge_parsed",)


def _metrics_of(line: Line) -> tuple[Metric, ...]:
    """The metrics that read a scored line: the open-ended ones, or for a multiple-choice or
    multi-turn line the multi-turn ones (the multiple-choice metrics with the per-turn rates,
    whose `turn_reads` apply to judged turns only)."""
    return OEG_METRICS if is_oeg_line(line) else OEG_MULTITURN_METRICS


def _fields_read(metrics: tuple[Metric, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields `metrics` read of every line (but `RECORDED_LATER`) and of each judged turn,
    each once, in order."""
    wanted = dict.fromkeys(key for m in metrics for key in m.reads if key not in RECORDED_LATER)
    per_turn = dict.fromkeys(key for m in metrics for key in m.turn_reads)
    return tuple(wanted), tuple(per_turn)


#: `_fields_read` of the metrics of an open-ended line (True) and of another (False), worked
#: out once: every reader that counts asks it of every line (`rundir.run_lines`).
_FIELDS_READ = {True: _fields_read(OEG_METRICS), False: _fields_read(OEG_MULTITURN_METRICS)}


def unread_fields(line: Line) -> list[str]:
    """The fields the metrics of a scored line's kind read (`Metric.reads`) that it lacks:
    such a line would score 0 where it says nothing. Lines that record their `settings`
    come from writers that always wrote every one of them (but `RECORDED_LATER`); an older
    line (no `settings`) is taken as it is, each metric counting it only where it has the
    fields."""
    if line.get("error") is not None or "settings" not in line:
        return []
    wanted, per_turn = _FIELDS_READ[is_oeg_line(line)]
    missing = [key for key in wanted if key not in line]
    trace = line.get("trace")
    for number, turn in enumerate(trace if isinstance(trace, list) else [], 1):
        if isinstance(turn, Mapping) and "valid_answers_text" in turn:
            missing += [f"turn {number}'s {key}" for key in per_turn if key not in turn]
    return missing


def unrecorded_votes(line: Line) -> bool:
    """Whether a judged open-ended line (its judge outputs recorded, no error) lacks
    `judge_parsed`: which of its votes held a verdict cannot be told, so unparsed % leaves it
    out, and its ps, cp and aggregate may be votes without a verdict scored 0."""
    return (
        is_oeg_line(line)
        and line.get("error") is None
        and bool(line.get("judge_outputs"))
        and "judge_parsed" not in line
    )


def unread_problem(line: Line) -> str | None:
    """`unread_fields` as a reader names them: which fields, and which rates read them."""
    missing = unread_fields(line)
    if not missing:
        return None
    reading = [
        m
        for m in _metrics_of(line)
        if set(m.reads) & set(missing)
        or any(name.endswith(f"'s {key}") for key in m.turn_reads for name in missing)
    ]
    readers = [m.heading for m in reading if m.table == "run"]
    if any(m.table == "actions" for m in reading):
        readers.append("the action distribution")
    return f"lacks {', '.join(missing)}, which {', '.join(readers)} read"


def rate_of(metric: Metric, values: Sequence[float]) -> float | None:
    """`metric`'s rate of a scenario's `values`. None for no values: a scenario whose
    episodes all ended in errors has no rate (shown as "—"), never 0."""
    return metric.combine(values) if values else None


def average_rate(metric: Metric, rates: Iterable[float | None]) -> float | None:
    """The average row's value: the scenarios' rates combined, those without one left out."""
    kept = [r for r in rates if r is not None]
    return metric.combine(kept) if kept else None


def summary_keys() -> tuple[str, ...]:
    """The rates summary.json may hold, of either mode, in their declared order: read when
    asked, so that a metric declared (or added to the declarations) is one of them."""
    keys = [m.key for oeg in (False, True) for m in summary_metrics(oeg)]
    return tuple(dict.fromkeys(keys))


class ScenarioScore:
    """One scenario's (or the average's) scores as summary.json holds them: `n` scored
    episodes, `errors`, the open-ended `unjudged` lines (those the latest judge could not
    judge: kept from an earlier judge or left with none, also in `errors`), and a rate per
    declared metric that summary.json holds (`summary_metrics`), read as an attribute
    (`score.accuracy`, `score.ps`); None for a rate of the other mode or not measured.
    Derived from the declarations, so a new metric needs no field here."""

    __slots__ = ("errors", "n", "rates", "unjudged")

    def __init__(
        self, n: int, errors: int = 0, unjudged: int | None = None, **rates: float | None
    ) -> None:
        known = summary_keys()
        unknown = sorted(set(rates) - set(known))
        if unknown:
            raise TypeError(f"ScenarioScore: no declared summary metric {', '.join(unknown)}")
        self.n, self.errors, self.unjudged = n, errors, unjudged
        self.rates: dict[str, float | None] = {k: rates[k] for k in known if k in rates}

    def __getattr__(self, name: str) -> float | None:
        # Only names not found otherwise: the declared rates, None when not measured.
        if name in summary_keys():
            return self.rates.get(name)
        raise AttributeError(f"ScenarioScore has no {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScenarioScore) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"ScenarioScore({', '.join(f'{k}={v!r}' for k, v in self.as_dict().items())})"

    def as_dict(self) -> dict[str, Any]:
        counts = {"n": self.n, "errors": self.errors, "unjudged": self.unjudged}
        return {k: v for k, v in {**counts, **self.rates}.items() if v is not None}


#: The key of the average over scenarios beside the scenarios' own: in summary.json, in a
#: report's measures and in the intervals a terminal table shows as ±.
AVERAGE = "average"


@dataclass
class Summary:
    model: str
    scenarios: dict[str, ScenarioScore] = field(default_factory=dict)

    @property
    def oeg(self) -> bool:
        """An open-ended run's summary, even when no line of it was scored."""
        return any(
            s.aggregate is not None or s.unjudged is not None for s in self.scenarios.values()
        )

    @property
    def unjudged(self) -> int:
        """Lines the latest judge could not judge, over every scenario."""
        return sum(s.unjudged or 0 for s in self.scenarios.values())

    @property
    def average(self) -> ScenarioScore | None:
        scored = [s for s in self.scenarios.values() if s.n]
        if not scored:
            return None
        means = {
            m.key: average_rate(m, (getattr(s, m.key) for s in scored))
            for m in summary_metrics(self.oeg)
        }
        return ScenarioScore(
            n=sum(s.n for s in scored),
            errors=sum(s.errors for s in self.scenarios.values()),
            unjudged=self.unjudged if self.oeg else None,
            **means,  # type: ignore[arg-type]
        )

    @property
    def covered(self) -> list[str]:
        """The scenarios the average covers: those with at least one scored episode."""
        return [name for name, score in self.scenarios.items() if score.n]

    @property
    def average_label(self) -> str:
        """The average row's name: which scenarios it covers, unless all seven."""
        missing = [name for name, score in self.scenarios.items() if not score.n]
        return average_label(self.covered, missing)

    def as_dict(self) -> dict[str, Any]:
        average = self.average
        return {
            "model": self.model,
            "scenarios": {k: v.as_dict() for k, v in self.scenarios.items()},
            AVERAGE: average.as_dict() if average else None,
        }


def average_label(covers: Sequence[str], missing: Sequence[str] = ()) -> str:
    """ "average" over all seven scenarios; otherwise which scenarios the average covers
    (and those that had no value), so that averages over different sets are never read as
    alike."""
    if not missing and sorted(covers) == sorted(paper_scenarios()):
        return "average"
    shown = f"average of {len(covers)} ({', '.join(covers) or 'none'}"
    return shown + (f"; no {', '.join(missing)})" if missing else ")")


def episode_scores(line: Line, oeg: bool = False, *, fractions: bool = False) -> dict[str, float]:
    """Every headline score of one scored episode (a line without an error), by rate name:
    accuracy and ps_rate for MCQA; ps, cp, aggregate and, when recorded, agreement and
    unparsed for OEG. With `fractions`, a percentage is on the 0-1 scale instead (as
    Inspect's own metrics are read: 1 for a correct episode, not 100); a count (ps rate)
    stays a count. Our tables and summary.json keep percentages."""
    scores = {m.key: (m, m.value(line)) for m in headline_metrics(oeg)}
    return {
        key: value / 100 if fractions and metric.percent else value
        for key, (metric, value) in scores.items()
        if value is not None
    }


def summarize(results: Iterable[dict[str, Any]], model: str = "") -> Summary:
    """Score result lines (as in `results.jsonl`) per scenario, in the paper's order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r["scenario"], []).append(r)
    summary = Summary(model=model)
    for short in scenario_order(groups):
        lines = groups[short]
        ok = [r for r in lines if not r.get("error")]
        # Open-ended generation, judged: an OEG line says so even when it holds only an error.
        oeg = any(map(is_oeg_line, lines))
        metrics = summary_metrics(oeg)
        values = values_by_metric(metrics, ok)
        rates = {m.key: rate_of(m, values[m.key]) for m in metrics}
        summary.scenarios[short] = ScenarioScore(
            n=len(ok),
            errors=len(lines) - len(ok),
            unjudged=sum(map(is_unjudged, lines)) if oeg else None,
            **rates,
        )
    return summary
