"""What a report says about a run: the benchmark's rates with intervals, the metrics that
explain behaviour, token usage and latency, and paired comparisons between runs.

Every rate is a mean over a scenario's scored episodes (episodes that ended in an error are
counted apart, never scored as wrong). A scenario with no scored episode has no value (None,
shown as "—"), and the average row is the unweighted mean over the scenarios that have one,
as the paper reports, naming which those are.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.benchmark.metrics import (
    AVERAGE,
    Metric,
    accuracy_score,
    average_rate,
    metrics_for,
    ps_rate_score,
    rate_of,
    relative_change,
    table_metrics,
    values_by_metric,
)
from proactivebench.benchmark.paper_results import published_sizes
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.core.stats import (
    Interval,
    bootstrap_mean,
    bootstrap_mean_of_means,
    mcnemar_p,
    paired_bootstrap_difference,
    percentile,
    spearman_rho,
    wilson_interval,
    wilson_mean_of_proportions,
)
from proactivebench.report.comparable import average_not_comparable, unscored
from proactivebench.report.runs import (
    Run,
    earlier_verdicts,
    is_plain,
    load_runs,
    unrecorded_verdicts,
)
from proactivebench.run.rundir import JUDGED_SO_FAR, FinishedRun, RunLock

Line = dict[str, Any]


def metrics_of(run: Run) -> tuple[Metric, ...]:
    """Every metric of `run`'s mode (`metrics.metrics_for`)."""
    return metrics_for(run.oeg, run.multiturn)


@dataclass
class ScenarioMeasures:
    """One scenario's (or the average's) values; None where nothing was scored."""

    scenario: str
    n: int
    errors: int
    values: dict[str, Interval | None] = field(default_factory=dict)
    #: The average row only: the scenarios it covers and those it leaves out (no episode
    #: scored).
    covers: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: The metrics whose `low`/`high` are interval bounds (`rate_interval`); the others are
    #: plain means, and report.json gives them no bounds rather than a zero-width interval.
    bootstrapped: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "errors": self.errors}
        for key, value in self.values.items():
            if value is None:
                out[key] = None
            elif key in self.bootstrapped:
                out[key] = {"value": value.estimate, "low": value.low, "high": value.high}
            else:
                out[key] = {"value": value.estimate}
        if self.covers or self.missing:
            out["covers"] = self.covers
            out["missing"] = self.missing
        return out


@dataclass
class RunMeasures:
    run: Run
    scenarios: dict[str, ScenarioMeasures]
    average: ScenarioMeasures
    usage: dict[str, Any]


#: Each rate's 95 % interval (`rate_interval`), `[low, high]`, per scenario and for the average
#: (under `AVERAGE`): what a terminal table shows as ±, kept as plain JSON data so that a
#: report left alone as up to date, or a finished run, can tell it without reading a line.
Intervals = dict[str, dict[str, list[float]]]


def intervals_of(measures: RunMeasures) -> Intervals:
    """The `Intervals` of one run's measures."""

    def of(found: ScenarioMeasures) -> dict[str, list[float]]:
        return {
            name: [value.low, value.high]
            for name, value in found.values.items()
            if value is not None and name in found.bootstrapped
        }

    intervals = {name: of(found) for name, found in measures.scenarios.items()}
    intervals[AVERAGE] = of(measures.average)
    return intervals


def checked_intervals(value: Any) -> Intervals | None:
    """`value` (read back from a note) when it has the shape of `Intervals`, else None."""

    def bounds(pair: Any) -> bool:
        return (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair)
        )

    if not isinstance(value, dict) or AVERAGE not in value:
        return None
    for rates in value.values():
        if not isinstance(rates, dict) or not all(bounds(pair) for pair in rates.values()):
            return None
    return value


def _scored(lines: Sequence[Line]) -> list[Line]:
    return [x for x in lines if not x.get("error")]


def episode_values(run: Run, keys: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """Per scenario, each scored episode's value of the metrics named `keys` (those
    `measure_run` averages and gives intervals), for callers that pool several runs themselves,
    e.g. seeds of one experiment."""
    metrics = [m for m in metrics_of(run) if m.key in keys]
    return {
        name: values_by_metric(metrics, _scored(lines)) for name, lines in run.by_scenario.items()
    }


def measure_run(run: Run, *, seed: int = 0, n_resamples: int = 2000) -> RunMeasures:
    """Every metric of every scenario of `run`, and their average over scenarios.

    The values are the metrics' own (`rate_of` their `values_by_metric`, `average_rate`: what
    summary.json and the terminal show); `rate_interval` and `average_interval` add the bounds
    of those that have an interval."""
    metrics = metrics_of(run)
    scenarios: dict[str, ScenarioMeasures] = {}
    per_metric: dict[str, list[list[float]]] = {m.key: [] for m in metrics}
    for index, (name, lines) in enumerate(run.by_scenario.items()):
        scored = _scored(lines)
        measures = ScenarioMeasures(name, n=len(scored), errors=len(lines) - len(scored))
        by_metric = values_by_metric(metrics, scored)
        for metric in metrics:
            values = by_metric[metric.key]
            per_metric[metric.key].append(values)
            estimate = rate_of(metric, values)
            if metric.interval:
                bounds = rate_interval(metric, values, seed=seed + index, n_resamples=n_resamples)
                measures.values[metric.key] = _with(estimate, bounds)
                measures.bootstrapped.add(metric.key)
            else:
                measures.values[metric.key] = _with(estimate, None)
        scenarios[name] = measures
    covers = [s for s, m in scenarios.items() if m.n]
    average = ScenarioMeasures(
        "average",
        n=sum(m.n for m in scenarios.values()),
        errors=sum(m.errors for m in scenarios.values()),
        covers=covers,
        missing=[s for s in scenarios if s not in covers],
    )
    for metric in metrics:
        rates = [_estimate(scenarios[s].values.get(metric.key)) for s in covers]
        estimate = average_rate(metric, rates)
        if metric.interval:
            bounds = average_interval(
                metric, per_metric[metric.key], seed=seed, n_resamples=n_resamples
            )
            average.values[metric.key] = _with(estimate, bounds)
            average.bootstrapped.add(metric.key)
        else:
            average.values[metric.key] = _with(estimate, None)
    return RunMeasures(run, scenarios, average, usage_stats(run))


def rate_interval(
    metric: Metric, values: Sequence[float], *, seed: int = 0, n_resamples: int = 2000
) -> Interval | None:
    """A scenario's rate with its 95 % interval, the one every table, report.json and the
    terminal's ± give: Wilson's for a proportion (`Metric.proportion`, values 0 or 100; no
    resampling, and 0 of 4 is [0, 49.0], not a certain [0, 0]), the percentile bootstrap's
    for a mean of counts (the ps rate). None for no values."""
    if metric.proportion:
        if not values:
            return None
        bounds = wilson_interval(sum(values) / 100.0, len(values))
        assert bounds is not None
        return Interval(sum(values) / len(values), 100.0 * bounds[0], 100.0 * bounds[1])
    return bootstrap_mean(values, seed=seed, n_resamples=n_resamples)


def average_interval(
    metric: Metric, groups: Sequence[Sequence[float]], *, seed: int = 0, n_resamples: int = 2000
) -> Interval | None:
    """The unweighted mean of the scenarios' rates with its 95 % interval: Wilson's at Kish's
    effective size for a proportion (`stats.wilson_mean_of_proportions`), the stratified
    bootstrap's for a mean of counts. Empty groups are left out."""
    if metric.proportion:
        found = wilson_mean_of_proportions(
            [(sum(g) / len(g) / 100.0, len(g)) for g in groups if len(g)]
        )
        if found is None:
            return None
        return Interval(100.0 * found.estimate, 100.0 * found.low, 100.0 * found.high)
    return bootstrap_mean_of_means(groups, seed=seed, n_resamples=n_resamples)


#: What report.json's "intervals" says of them (`rate_interval`, `average_interval`,
#: `compare_runs`).
INTERVAL_METHODS = (
    "95 %: Wilson score interval for a proportion (accuracy, ps, cp, aggregate; averages: "
    "Wilson at Kish's effective size, K^2 / sum(1/n_i)), percentile bootstrap for the ps rate "
    "(averages: stratified by scenario); comparisons: paired bootstrap over shared samples and "
    "McNemar's test"
)


def _with(estimate: float | None, bounds: Interval | None) -> Interval | None:
    """The metric's value with its interval's bounds (none: a plain mean, low = high)."""
    if estimate is None:
        return None
    if bounds is None:
        return Interval(estimate, estimate, estimate)
    return Interval(estimate, bounds.low, bounds.high)


def _estimate(value: Interval | None) -> float | None:
    return None if value is None else value.estimate


# ----- usage and latency ----------------------------------------------------------------------


def _requests(run: Run) -> list[Line]:
    """Every answered request of the run: the turns of MCQA episodes, the OEG lines."""
    if run.oeg:
        return [x for x in run.lines if x.get("generation") is not None]
    return [turn for line in run.lines for turn in line.get("trace", [])]


def _finite(value: Any) -> bool:
    """A number a sum can take: result lines are JSON, which Python reads with NaN and
    Infinity."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def usage_stats(run: Run) -> dict[str, Any]:
    """Token counts (sum and mean per request, per kind the backend reported) and model
    latency (sum, mean, p50, p95 over requests the model answered, not the cache)."""
    requests = _requests(run)
    cached = sum(1 for r in requests if r.get("cached"))
    tokens: dict[str, list[int]] = {}
    for request in requests:
        for kind, count in (request.get("usage") or {}).items():
            if _finite(count):
                tokens.setdefault(kind, []).append(int(count))
    latencies = [
        float(r["latency_s"])
        for r in requests
        if _finite(r.get("latency_s")) and not r.get("cached")
    ]
    return {
        "requests": len(requests),
        "cached": cached,
        "tokens": {
            kind: {
                "sum": sum(counts),
                "mean": sum(counts) / len(counts),
                "p50": percentile(counts, 50),
                "p95": percentile(counts, 95),
                "requests": len(counts),
            }
            for kind, counts in tokens.items()
        },
        "latency_s": {
            "requests": len(latencies),
            "sum": sum(latencies),
            "mean": sum(latencies) / len(latencies) if latencies else None,
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
        },
    }


# ----- paired comparisons ---------------------------------------------------------------------


@dataclass
class Difference:
    """`run` minus `base` over the samples both scored."""

    shared: int
    accuracy: Interval | None
    ps_rate: Interval | None
    #: McNemar's p-value of the accuracies over the shared samples.
    p_value: float | None
    only_run: int = 0
    only_base: int = 0

    def as_dict(self) -> dict[str, Any]:
        def interval(value: Interval | None) -> dict[str, float] | None:
            if value is None:
                return None
            return {"value": value.estimate, "low": value.low, "high": value.high}

        return {
            "shared": self.shared,
            "accuracy": interval(self.accuracy),
            "ps_rate": interval(self.ps_rate),
            "mcnemar_p": self.p_value,
            "only_run_correct": self.only_run,
            "only_base_correct": self.only_base,
        }


#: Per scenario (and `AVERAGE`), each action-distribution metric's change from the `--vs` run
#: in percent of its value there (`metrics.relative_change`); None where either has no value
#: or the `--vs` run's is 0.
ActionChanges = dict[str, dict[str, float | None]]


@dataclass
class Comparison:
    run: Run
    base: Run
    scenarios: dict[str, Difference]
    average: Difference
    covers: list[str]
    #: The action distribution's relative changes (`action_changes`), set by the report,
    #: which measures both runs, and the scenarios their average is over (both runs').
    actions: ActionChanges = field(default_factory=dict)
    actions_cover: list[str] = field(default_factory=list)


def action_changes(measures: RunMeasures, base: RunMeasures) -> tuple[ActionChanges, list[str]]:
    """How `measures`' action distribution (docs/protocol.md §9) changed from `base`'s, per
    scenario of `measures` and for the averages: each share's relative change, as the
    paper's Figs. 5, 7, 20 and 21 print it. Each run's own shares are compared (those its
    table shows), so the change can be recomputed from the two runs' tables. The averages
    are both over the scenarios both runs scored (returned beside the changes): an average
    over 2 scenarios set against one over 7 changed where no scenario did."""
    metrics = table_metrics(False, "actions")
    keys = [m.key for m in metrics]

    def change(found: ScenarioMeasures, was: ScenarioMeasures | None) -> dict[str, float | None]:
        return {
            key: relative_change(
                _estimate(was.values.get(key)) if was else None,
                _estimate(found.values.get(key)),
            )
            for key in keys
        }

    changes = {
        name: change(found, base.scenarios.get(name)) for name, found in measures.scenarios.items()
    }
    both = [s for s in measures.average.covers if s in base.average.covers]

    def average_over(run: RunMeasures) -> ScenarioMeasures:
        averaged = ScenarioMeasures("average", n=sum(run.scenarios[s].n for s in both), errors=0)
        for metric in metrics:
            rates = [_estimate(run.scenarios[s].values.get(metric.key)) for s in both]
            averaged.values[metric.key] = _with(average_rate(metric, rates), None)
        return averaged

    changes[AVERAGE] = change(average_over(measures), average_over(base))
    return changes, both


def _paired(run_lines: Sequence[Line], base_lines: Sequence[Line]) -> list[tuple[Line, Line]]:
    base = {x["sample_id"]: x for x in _scored(base_lines)}
    return [(x, base[x["sample_id"]]) for x in _scored(run_lines) if x["sample_id"] in base]


def compare_runs(run: Run, base: Run, *, seed: int = 0, n_resamples: int = 2000) -> Comparison:
    """Accuracy and ps rate of `run` minus `base`, scenario by scenario over the samples both
    scored (paired bootstrap intervals, McNemar p-values), and over the scenarios' average.

    Only MCQA runs compare: an OEG run has no accuracy.
    """
    scenarios: dict[str, Difference] = {}
    acc_groups: list[list[float]] = []
    ps_groups: list[list[float]] = []
    total_only_run = total_only_base = 0
    for index, name in enumerate(run.by_scenario):
        pairs = _paired(run.by_scenario[name], base.by_scenario.get(name, []))
        correct = [(bool(a.get("correct")), bool(b.get("correct"))) for a, b in pairs]
        acc_a = [accuracy_score(a) for a, _ in pairs]
        acc_b = [accuracy_score(b) for _, b in pairs]
        ps_a = [ps_rate_score(a) for a, _ in pairs]
        ps_b = [ps_rate_score(b) for _, b in pairs]
        only_run = sum(1 for a, b in correct if a and not b)
        only_base = sum(1 for a, b in correct if b and not a)
        total_only_run += only_run
        total_only_base += only_base
        acc_groups.append([a - b for a, b in zip(acc_a, acc_b, strict=True)])
        ps_groups.append([a - b for a, b in zip(ps_a, ps_b, strict=True)])
        scenarios[name] = Difference(
            shared=len(pairs),
            accuracy=paired_bootstrap_difference(
                acc_a, acc_b, seed=seed + index, n_resamples=n_resamples
            ),
            ps_rate=paired_bootstrap_difference(
                ps_a, ps_b, seed=seed + index, n_resamples=n_resamples
            ),
            p_value=mcnemar_p(only_run, only_base) if pairs else None,
            only_run=only_run,
            only_base=only_base,
        )
    covers = [name for name, diff in scenarios.items() if diff.shared]
    average = Difference(
        shared=sum(d.shared for d in scenarios.values()),
        accuracy=bootstrap_mean_of_means(acc_groups, seed=seed, n_resamples=n_resamples),
        ps_rate=bootstrap_mean_of_means(ps_groups, seed=seed, n_resamples=n_resamples),
        p_value=mcnemar_p(total_only_run, total_only_base) if covers else None,
        only_run=total_only_run,
        only_base=total_only_base,
    )
    return Comparison(run, base, scenarios, average, covers)


def sized_models(
    all_measures: Sequence[RunMeasures],
) -> tuple[list[RunMeasures], list[RunMeasures]]:
    """The runs of known size that stand for their model, one per model (its plain-setting
    run, or its first run when none is plain), and the other sized runs, left out: a model's
    `+hint` or `+history` run has the model's size but is no second model, so counting it would
    make Spearman's rho rank one model twice. A model is its spec (run.json's `model`)."""
    chosen: dict[str, RunMeasures] = {}
    for measures in all_measures:
        run = measures.run
        if run.params_b is None:
            continue
        model = run.model or str(run.run_dir)
        if model not in chosen or (is_plain(run) and not is_plain(chosen[model].run)):
            chosen[model] = measures
    ids = {id(m) for m in chosen.values()}
    kept = [m for m in all_measures if id(m) in ids]
    left = [m for m in all_measures if m.run.params_b is not None and id(m) not in ids]
    return kept, left


def size_correlations(
    all_measures: Sequence[RunMeasures], with_paper: bool = False
) -> dict[str, Any] | None:
    """Spearman's rho between parameter count and each average rate, one point per model
    (`sized_models`); None with fewer than two models of known size. With `with_paper`
    (`report --paper`), `with_published` adds each rate's rho over the runs and the paper's
    models of published size (`paper_results.published_sizes`), and it needs one run only."""
    sized, _ = sized_models(all_measures)
    if len(sized) < (1 if with_paper else 2):
        return None
    keys = {k for m in sized for k, v in m.average.values.items() if v is not None}
    result: dict[str, Any] = {"runs": len(sized)}
    published: dict[str, Any] = {}
    # A run whose average is not comparable with the paper's (`comparable`) joins no rho
    # with them.
    apart = [m for m in sized if with_paper and average_not_comparable(m.run)]
    if apart:
        result["not_with_published"] = [m.run.label for m in apart]
    for key in sorted(keys):
        pairs = [
            (m.run.params_b, m.average.values[key].estimate)  # type: ignore[union-attr]
            for m in sized
            if m.average.values.get(key) is not None
        ]
        if len(sized) > 1:
            result[key] = spearman_rho([p[0] for p in pairs], [p[1] for p in pairs])
        paper = [(size, value) for size, value, _ in published_sizes(key)] if with_paper else []
        ours = [
            (m.run.params_b, m.average.values[key].estimate)  # type: ignore[union-attr]
            for m in sized
            if m.average.values.get(key) is not None and m not in apart
        ]
        if paper and ours:
            both = [*ours, *paper]
            published[key] = {
                "rho": spearman_rho([p[0] for p in both], [p[1] for p in both]),
                "published_points": len(paper),
            }
    if with_paper:
        result["with_published"] = published
    return result


# ----- warnings -------------------------------------------------------------------------------

#: Above this share of unreadable answers in a scenario, `eval` warns: its accuracy says more
#: about the answer format than about the model.
UNREADABLE_WARNING = 10.0


#: The rates a warning watches: what passing the threshold means (what is counted, what it
#: skews, and what to do about it).
_WARNED = {
    "unreadable": (
        "answers that designate no shown option (protocol §4)",
        "accuracy reflects",
        "the answer format more than the model; try --answer-extraction lenient, and "
        "`proactivebench show` to see one",
    ),
    "unparsed": (
        "judge outputs that hold no readable verdict (protocol §6: no 0/1 run of the right "
        "length after the reasoning; they score 0)",
        "rates reflect",
        "the judge's format more than the answers; see judge_outputs and judge_parsed in "
        "results.jsonl, or try another judge or a larger --judge-max-tokens",
    ),
}


#: In a multi-turn open-ended run an episode ends unreadable when no judge vote of a turn held
#: a verdict: the judge's format, not the model's (the answers are free text).
_WARNED_MULTITURN = {
    **_WARNED,
    "unreadable": (
        "episodes ended by a turn whose judge votes held no readable verdict (protocol §6)",
        "accuracy reflects",
        "the judge's format more than the answers; see each turn's judge_outputs with "
        "`proactivebench show`, or try another judge or a larger --judge-max-tokens",
    ),
}


def unreadable_warnings(measures: RunMeasures) -> list[str]:
    """A warning naming the scenarios whose unreadable-answer rate passes
    `UNREADABLE_WARNING` %, one for the judge outputs that held no readable verdict
    (unparsed) past the same share, one for lines scored by an earlier judge's verdict
    (`earlier_verdicts_warning`) and one for judged lines that do not record which votes held
    a verdict (`unrecorded_verdicts_warning`); or none."""
    verdicts = (earlier_verdicts_warning(measures.run), unrecorded_verdicts_warning(measures.run))
    warnings = [w for w in verdicts if w]
    watched = _WARNED_MULTITURN if measures.run.multiturn else _WARNED
    for key, (what, skewed, advice) in watched.items():
        high = []
        for name, scenario in measures.scenarios.items():
            value = scenario.values.get(key)
            if value is not None and value.estimate > UNREADABLE_WARNING:
                high.append(f"{name} ({value.estimate:.1f} %)")
        if high:
            its = f"its {skewed}" if len(high) == 1 else f"their {skewed}"
            warnings.append(
                f"{what} pass {UNREADABLE_WARNING:.0f} % in {', '.join(high)}: {its} {advice}"
            )
    return warnings


def run_warnings(measures: RunMeasures, named: bool = False) -> list[str]:
    """Every warning a run's lines give, the same wherever the run is shown or shared (eval's
    terminal, `report`, a suite's output, report.html and report.md, the Hub card): an empty
    run, the lines of results.jsonl no count holds (`Run.rejected`), lines scored by an
    earlier judge, and the unreadable answers and verdicts (`unreadable_warnings`). `named`
    (beside other runs): those that name no file of the run start with its label."""
    run = measures.run
    warnings = []
    if not run.lines:
        why = run.left_out() or "results.jsonl is empty"
        warnings.append(f"{run.run_dir} holds no episodes ({why}): its row is all —")
    warnings += run.rejected
    short = unscored(run) if run.lines else None
    if short is not None:
        warnings.append(short)
    waiting = run.run_dir / JUDGED_SO_FAR
    if waiting.is_file():
        warnings.append(
            f"{waiting}: a judging of this run was stopped before its end; the lines it judged "
            "wait there, not counted: the rates are those of the judge run.json names, and the "
            "same judge command finishes it"
        )
    prefix = f"{run.label}: " if named else ""
    return warnings + [prefix + w for w in unreadable_warnings(measures)]


def earlier_verdicts_warning(run: Run) -> str | None:
    """A warning naming the scenarios where lines are scored by an earlier judge's verdict:
    `judge RUN_DIR` keeps a verdict its judge could not replace (`judge_error`), while
    run.json names the new judge; a `judge` killed after writing run.json and before the
    results leaves every line so (each line's settings name its judge). Any such line makes
    the rates a mix of two judges, which the table alone cannot show; or None."""
    return _per_scenario_warning(
        earlier_verdicts(run),
        "line(s) keep an earlier judge's verdict, not the verdict of the judge run.json names "
        "(it could not replace them: see judge_error in results.jsonl; or a judging stopped "
        "before writing its results)",
        "their rates mix two judges; rerun `proactivebench judge` with the same --judge to "
        "retry those lines",
    )


def unrecorded_verdicts_warning(run: Run) -> str | None:
    """A warning naming the scenarios whose judged lines do not record which judge votes held
    a verdict (`judge_parsed`: removed, or written before it was recorded): unparsed % leaves
    them out, so a judge without a verdict would pass unseen behind their 0 scores; or None."""
    return _per_scenario_warning(
        unrecorded_verdicts(run),
        "judged line(s) do not record which judge votes held a verdict (judge_parsed)",
        "unparsed % leaves them out, and their ps, cp and aggregate may be votes without a "
        "verdict scored 0; see their judge_outputs in results.jsonl; judging the run with "
        "another --judge records it",
    )


def _per_scenario_warning(counts: Mapping[str, int], what: str, consequence: str) -> str | None:
    """`N what, in SCENARIO (n), ...: consequence` over the scenarios of `counts` with any
    such line; None when none has."""
    found = [f"{name} ({count})" for name, count in counts.items() if count]
    if not found:
        return None
    return f"{sum(counts.values())} {what}, in {', '.join(found)}: {consequence}"


def run_warnings_and_intervals(
    run_dir: Path, run: Run | None = None
) -> tuple[list[str], Intervals]:
    """What `eval --no-report` (and `paper`/`suite --no-report`, and `push`'s card) tells of a
    run besides its scores: its warnings (`run_warnings`) and each rate's interval,
    remembered in the note of a complete run (`rundir.FinishedRun`), so that a rerun of it
    reads no line and resamples nothing. `run`: the run directory as its caller already read
    it (`load_runs`), not read again."""
    # A judging stopped midway left its lines beside the results the note was written of.
    note = None if (run_dir / JUDGED_SO_FAR).is_file() else FinishedRun.read(run_dir)
    if note is not None:
        warnings = note.outcome.get("warnings")
        intervals = checked_intervals(note.outcome.get("intervals"))
        # Intervals remembered by an earlier version, of other methods, are drawn again.
        same = note.outcome.get("interval_methods") == INTERVAL_METHODS
        told = isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)
        if told and intervals and same:
            return warnings, intervals
    measures = measure_run(run if run is not None else load_runs([run_dir])[0])
    warnings, intervals = run_warnings(measures), intervals_of(measures)
    if note is not None:
        with contextlib.suppress(ProactiveBenchError), RunLock(run_dir):  # held: not remembered
            note.remember(run_dir, "warnings", warnings)
            note.remember(run_dir, "intervals", intervals)
            note.remember(run_dir, "interval_methods", INTERVAL_METHODS)
    return warnings, intervals
