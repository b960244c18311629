"""The paper's findings, tested on one model: each experiment of a suite set against the one it
changes, paired over the same episodes, beside the paper's own figure (issue 48).

The paper (De Min et al. 2026) draws five conclusions from its 22 models: (i) MLLMs lack
proactiveness; (ii) proactiveness does not follow model size; (iii) hints give marginal gains;
(iv) conversation history and in-context examples bias models the wrong way; (v) RL
fine-tuning teaches proactiveness, and it transfers to unseen scenarios. A finding here is the
statistic of one model's runs that speaks to one of them, with its 95 % interval, the paper's
figure computed from `paper_results.json` (never retyped), this model's rank among the
paper's models where the paper prints a row per model, and one sentence worded by the data:
an interval that holds zero is said to leave the question open, never called an effect.

How each statistic is computed is told in docs/paper.md ("The findings"). Differences are
`measures.compare_runs`'s: over the samples both runs scored, scenario by scenario, averaged
over the scenarios (the paper's unweighted mean), with a stratified paired bootstrap. Whether a
run stands beside the paper's figure is `comparable.not_comparable`'s rule: a run that is not
comparable says why in its finding and gets no rank.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from proactivebench.benchmark.metrics import metric, ps_rate_score, values_by_metric
from proactivebench.benchmark.paper_results import (
    PAPER_SOURCE,
    figure_models,
    paper_results,
    paper_table,
    published_sizes,
)
from proactivebench.benchmark.registry import make_episode, paper_scenarios, scenario_order
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.core.stats import (
    DEFAULT_RESAMPLES,
    Interval,
    bootstrap_mean_of_means,
    spearman_permutation_p,
    spearman_rho,
)
from proactivebench.core.texts import shown_json
from proactivebench.data.directory import load_dataset
from proactivebench.models.baselines import Proactive
from proactivebench.report.comparable import average_apart, not_comparable
from proactivebench.report.measures import RunMeasures, compare_runs, sized_models
from proactivebench.report.published import ranks
from proactivebench.report.runs import Run
from proactivebench.run.datarecords import changed_since, data_records, other_data
from proactivebench.run.rundir import identity_differences
from proactivebench.run.settings import EvalSettings, declared

Line = dict[str, Any]

# ----- what a finding holds ---------------------------------------------------------------------


@dataclass(frozen=True)
class PaperFigure:
    """The paper's number for one statistic: a mean over its models (or its printed average
    where a figure prints no row per model), and this model's place among them."""

    value: float
    #: How many of the paper's models the value averages (0: a figure's printed average).
    models: int
    #: Where it comes from, e.g. "Table 7 - Table 1, per model".
    source: str
    #: (place, out of): this model among the paper's models by the statistic, highest first
    #: (ties share the better place); None where the paper prints no row per model or the
    #: run is not comparable with them.
    rank: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        rank = None if self.rank is None else {"place": self.rank[0], "of": self.rank[1]}
        return {"value": self.value, "models": self.models, "source": self.source, "rank": rank}


@dataclass(frozen=True)
class Statistic:
    """One number of a finding: the model's, with its interval, over named runs and
    episodes, and the paper's beside it."""

    #: What is measured: "accuracy", "ps rate", "proactive share", "rho(size, ps rate)".
    name: str
    #: How its value is written: "points" (accuracy, percentage points), "" (ps rate:
    #: suggestions per episode), "%" (a relative change), "rho".
    unit: str
    value: Interval | None
    #: The experiments (run labels) compared, (changed, base); one id for a run's own value.
    compared: tuple[str, ...]
    scenarios: tuple[str, ...]
    #: Episodes the value is over: paired episodes for a difference (models for a rho).
    episodes: int
    paper: PaperFigure | None = None
    #: A difference (written with its sign) or a level.
    signed: bool = True
    #: A test's two-sided p-value, where it, not the interval, says whether the sign is
    #: known (a rho over a few models: `core.stats.spearman_permutation_p`).
    p_value: float | None = None

    def open_sign(self) -> bool | None:
        """Whether the statistic leaves its sign open (None for a level, which has none):
        by its p-value where it has one (at 0.05), else by its interval holding zero."""
        if not self.signed or self.value is None:
            return None
        if self.p_value is not None:
            return self.p_value >= 0.05
        return undecided(self.value)

    def as_dict(self) -> dict[str, Any]:
        value = self.value
        return {
            "name": self.name,
            "unit": self.unit,
            "value": None
            if value is None
            else {"value": value.estimate, "low": value.low, "high": value.high},
            "compared": list(self.compared),
            "scenarios": list(self.scenarios),
            "episodes": self.episodes,
            "paper": None if self.paper is None else self.paper.as_dict(),
            "p_value": self.p_value,
            "undecided": self.open_sign(),
        }


@dataclass(frozen=True)
class Finding:
    """One of the paper's findings as this model's runs speak to it."""

    #: Which comparison: "proactive", "hint", "history", "icl1", "icl3", "ablation",
    #: "multiturn", "size", "training".
    id: str
    #: The paper's finding, numbered as in its introduction: "i" ... "v".
    number: str
    #: The paper's claim, in a few words.
    claim: str
    statistics: tuple[Statistic, ...]
    #: One quotable sentence worded by the data.
    sentence: str
    #: Why the runs do not stand beside the paper's figures (`comparable.not_comparable`),
    #: each naming its run; empty when they do.
    not_comparable: tuple[str, ...] = ()
    #: What else a reader must know (a statistic that could not be computed, and why).
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "finding": self.number,
            "claim": self.claim,
            "sentence": self.sentence,
            "statistics": [s.as_dict() for s in self.statistics],
            "not_comparable": list(self.not_comparable),
            "notes": list(self.notes),
        }


# ----- wording ----------------------------------------------------------------------------------


def undecided(value: Interval) -> bool:
    """Whether the interval leaves the sign open: it holds zero (a difference the run cannot
    tell from none)."""
    return value.low <= 0.0 <= value.high


def _digits(unit: str) -> int:
    return 2 if unit in ("", "rho") else 1


def shown(value: float, unit: str, signed: bool = True) -> str:
    """A value as a sentence writes it: accuracy to 0.1 point, ps rate and rho to 0.01; a
    value that rounds to zero without a sign."""
    digits = _digits(unit)
    if round(value, digits) == 0:
        return f"{0:.{digits}f}"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _unit(unit: str) -> str:
    return {"points": " points", "%": " %"}.get(unit, "")


def stated(stat: Statistic) -> str:
    """'accuracy +3.1 points [0.4, 5.8]', and where the interval holds zero, that the run
    cannot tell it from no change."""
    value = stat.value
    if value is None:
        return f"{stat.name}: not computed"
    digits = _digits(stat.unit)
    bounds = f"[{value.low:.{digits}f}, {value.high:.{digits}f}]"
    text = f"{stat.name} {shown(value.estimate, stat.unit, stat.signed)}{_unit(stat.unit)} {bounds}"
    if stat.p_value is not None:
        text += f" (permutation p = {stat.p_value:.2f})"
        if stat.open_sign():
            return text + ", which these models cannot tell from no correlation"
        return text
    if stat.open_sign():
        if value.low == value.high == 0.0:
            return text + " (no change on any episode)"
        return text + ", which this run cannot tell from no change"
    return text


def _paper_clause(stats: Sequence[Statistic], verb: str) -> str:
    """'the paper's models gained accuracy +8.3 points, ps rate +1.87 on average (Table 7 -
    Table 1, per model, 21 models; this model ranks 4th of 22 on accuracy, highest first)',
    one part per source; '' when no statistic has a paper figure."""
    groups: dict[tuple[str, int], list[Statistic]] = {}
    for s in stats:
        if s.paper is not None:
            groups.setdefault((s.paper.source, s.paper.models), []).append(s)
    parts = []
    for (source, models), group in groups.items():
        values = ", ".join(
            f"{s.name} {shown(s.paper.value, s.unit, s.signed)}{_unit(s.unit)}"  # type: ignore[union-attr]
            for s in group
        )
        ranks = [
            f"{_ordinal(s.paper.rank[0])} of {s.paper.rank[1]} on {s.name}"  # type: ignore[union-attr]
            for s in group
            if s.paper.rank is not None  # type: ignore[union-attr]
        ]
        many = f"{models} models, " if models else ""
        ranked = f"; this model ranks {', '.join(ranks)}, highest first" if ranks else ""
        parts.append(f"{values} on average ({many}{source}{ranked})")
    return f"the paper's models {verb} {'; '.join(parts)}" if parts else ""


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _episodes(count: int) -> str:
    return f"{count:,} episode{'s' if count != 1 else ''}"


def _apart(reasons: Sequence[str], ranks: bool = True) -> str:
    """' Not comparable with the paper's figures: generated data (hint, mcqa); so no rank.':
    each kind of reason once, with the runs it holds for (`reasons` are 'run: reason'; the
    whole reasons, e.g. which scenarios are partial, are the finding's `not_comparable`)."""
    if not reasons:
        return ""
    runs: dict[str, list[str]] = {}
    for reason in reasons:
        run, _, why = reason.partition(": ")
        kind = why.split(":")[0].split(" (")[0]
        if run not in runs.setdefault(kind, []):
            runs[kind].append(run)
    said = "; ".join(f"{kind} ({', '.join(names)})" for kind, names in runs.items())
    return f" Not comparable with the paper's figures: {said}" + ("; so no rank." if ranks else ".")


def difference_sentence(
    lead: str,
    stats: Sequence[Statistic],
    reasons: Sequence[str],
    verb: str = "changed by",
    also: Sequence[str] = (),
) -> str:
    """The sentence of paired differences: 'With the hint, accuracy +3.1 points [0.4, 5.8],
    ps rate +0.41 [0.12, 0.70] on the same 1,260 episodes; the paper's models ...', the
    episodes named after each run of statistics over the same ones."""
    groups: list[list[Statistic]] = []
    for s in stats:
        if s.value is None:
            continue  # said by `also`
        if groups and groups[-1][0].episodes == s.episodes:
            groups[-1].append(s)
        else:
            groups.append([s])
    said = "; ".join(
        ", ".join(stated(s) for s in group) + f" on the same {_episodes(group[0].episodes)}"
        for group in groups
    )
    paper = _paper_clause(stats, verb)
    told = "".join(f"; {text}" for text in also)
    return f"{lead}, {said}{told}" + (f"; {paper}" if paper else "") + "." + _apart(reasons)


# ----- the paper's figures ----------------------------------------------------------------------


def _rows(table: str) -> dict[str, dict[str, Any]]:
    return {row["model"]: row["cells"] for row in paper_table(table)["rows"] if row["model"]}


def _mean_over(cells: Mapping[str, Any], metric_name: str, scenarios: Sequence[str]) -> float:
    """One model's mean of `metric_name` over `scenarios` (NaN where a cell is missing)."""
    values = [cells.get(s, {}).get(metric_name) for s in scenarios]
    if not values or any(v is None for v in values):
        return math.nan
    return sum(values) / len(values)


def _table_name(key: str) -> str:
    head = key.split("_", 1)[0]
    return ("Table " + head.removeprefix("table")) if head.startswith("table") else key


def per_model_differences(
    table: str, base: str | None, metric_name: str, scenarios: Sequence[str], figure: str | None
) -> dict[str, float]:
    """Each paper model's `table` minus `base` (None: `table`'s value itself) on
    `metric_name`, each its mean over `scenarios`; over the models the figure that prints
    the comparison averages (`paper_results.FIGURE_SUBSETS`), or every model both tables
    hold. A model missing a cell is left out."""
    rows, base_rows = _rows(table), _rows(base) if base else None
    models = figure_models(figure, table) if figure else list(rows)
    found = {}
    for model in models:
        if model not in rows or (base_rows is not None and model not in base_rows):
            continue
        value = _mean_over(rows[model], metric_name, scenarios)
        if base_rows is not None:
            value -= _mean_over(base_rows[model], metric_name, scenarios)
        if not math.isnan(value):
            found[model] = value
    return found


def rank_among(value: float, others: Sequence[float]) -> tuple[int, int]:
    """(place, out of) of `value` among `others` and itself, highest first: one plus the
    number of others above it (a tie shares the better place)."""
    return 1 + sum(1 for other in others if other > value), len(others) + 1


#: The metric each of the paper's columns holds (its key in `benchmark.metrics`).
COLUMN_METRICS = {"acc": "accuracy", "psr": "ps_rate"}


def table_figure(
    table: str,
    base: str | None,
    metric_name: str,
    scenarios: Sequence[str],
    figure: str | None,
    ours: Interval | None,
    ranked: bool,
) -> PaperFigure | None:
    """The paper's mean of `per_model_differences`, and this model's place among them
    (`ranked`: the run is comparable with the paper's), where its metric ranks at all: the
    ps rate, or a change of it, has no better direction (`published.ranks`: a blind asker
    has the most), so it is set beside the paper's mean without a place."""
    found = per_model_differences(table, base, metric_name, scenarios, figure)
    if not found:
        return None
    values = list(found.values())
    source = _table_name(table) + (f" - {_table_name(base)}" if base else "") + " per model"
    if figure:
        source += f", as {_figure_name(figure)} averages them"
    ranked = ranked and ranks(metric(COLUMN_METRICS[metric_name]))
    rank = rank_among(ours.estimate, values) if ranked and ours is not None else None
    return PaperFigure(sum(values) / len(values), len(values), source, rank)


def _figure_name(key: str) -> str:
    head = key.split("_", 1)[0]
    return "Fig. " + head.removeprefix("fig")


def _figure_row(figure: str, config: str) -> dict[str, Any]:
    return next(r["cells"] for r in paper_table(figure)["rows"] if r["config"] == config)


def history_figures() -> dict[str, float]:
    """Fig. 8's change with the conversation's history, over the paper's ten multi-image
    models and all seven scenarios (it prints averages only): accuracy, history's printed
    average minus zero-shot's; ps rate, history's printed average minus the zero-shot ps rate
    the text of §4.3 gives (the figure prints no zero-shot average)."""
    acc = _figure_row("fig8_history", "(a) acc, history")["avg"]["acc"]
    acc0 = _figure_row("fig8_history", "(a) acc, zero-shot")["avg"]["acc"]
    psr = _figure_row("fig8_history", "(b) psr, history")["avg"]["psr"]
    text = next(t for t in paper_results()["text_numbers"] if "psr_zero_shot" in t["values"])
    return {"accuracy": acc - acc0, "ps rate": psr - text["values"]["psr_zero_shot"]}


def icl_figures(shots: int, scenarios: Sequence[str]) -> dict[str, float] | None:
    """Fig. 9's change with `shots` in-context examples (1 or 3) over the paper's ten
    multi-image models, its mean over `scenarios` (of ROD and MVP-N, the two it shows);
    None for none of them."""
    panel = {1: "(a) 1 sample", 3: "(b) 3 samples"}[shots]
    icl, zero = (
        _figure_row("fig9_icl", f"{panel}, icl"),
        _figure_row("fig9_icl", f"{panel}, zero-shot"),
    )
    shown_in = [s for s in scenarios if s in icl]
    if not shown_in:
        return None
    return {
        name: sum(icl[s][key] - zero[s][key] for s in shown_in) / len(shown_in)
        for name, key in (("accuracy", "acc"), ("ps rate", "psr"))
    }


def ablation_figures() -> dict[str, float]:
    """Fig. 20's relative change of the proactive share with random suggestions, per model
    (14 models)."""
    return {
        row["model"]: float(row["cells"]["all"]["proactive"])
        for row in paper_table("fig20_random_actions_all")["rows"]
    }


# ----- the runs' statistics ---------------------------------------------------------------------


def _scored(lines: Sequence[Line]) -> list[Line]:
    return [x for x in lines if not x.get("error")]


def own_ps_rate(run: Run, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES) -> Interval | None:
    """The run's ps rate: the mean over scenarios of their mean suggestions per scored
    episode, with the stratified bootstrap's interval (as `measures.measure_run`'s average)."""
    groups = [[ps_rate_score(x) for x in _scored(lines)] for lines in run.by_scenario.values()]
    return bootstrap_mean_of_means(groups, seed=seed, n_resamples=n_resamples)


def allowed_suggestions(run: Run) -> tuple[dict[tuple[str, int], int], str | None]:
    """What each scored episode of `run` allows: the proactive suggestions the proactive
    baseline (`models.baselines.Proactive`: every correct intervention while a later turn
    remains) makes in the same episode, played again from the run's data directory with the
    run's episode settings; and why none could be computed (no data at hand, records
    missing), or None. Result lines do not record what an episode offers."""
    data = run.data_dir
    if data is None or not data.is_dir():
        return {}, f"the data directory of {run.label or run.run_dir} is not at hand"
    settings = run.settings
    builds = (spec.name for spec in declared(EvalSettings) if spec.info.builds_episode)
    options = {key: settings[key] for key in builds if key in settings}
    changed = changed_since(run.config, data_records(data, list(run.by_scenario)))
    if changed:  # the episodes would be other episodes than those played
        return {}, (
            f"the data at {data} is not what {run.label or run.run_dir} played (the "
            f"{', '.join(changed)} records differ)"
        )
    try:
        dataset = load_dataset(data, list(run.by_scenario), all_samples=True)
    except (OSError, ProactiveBenchError) as exc:
        return {}, f"the data of {run.label or run.run_dir} could not be read ({exc})"
    records = {(s, r.id): r for s, found in dataset.records.items() for r in found}
    player = Proactive()
    allowed: dict[tuple[str, int], int] = {}
    missing = 0
    for name, lines in run.by_scenario.items():
        for line in _scored(lines):
            record = records.get((name, line["sample_id"]))
            if record is None:
                missing += 1
                continue
            episode = make_episode(record, **options)
            while not episode.done:
                episode.step(player.answer(episode.observation))
            allowed[name, line["sample_id"]] = episode.num_turns - 1
    if missing:
        return {}, f"{missing} episode(s) of {run.label or run.run_dir} have no record in {data}"
    return allowed, None


def proactive_share_change(
    run: Run, base: Run, *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> tuple[Interval | None, int]:
    """The relative change (%) of the share of turns whose answer chose a proactive option
    (`choice_proactive`, docs/protocol.md §9), from `base` to `run`, as Figs. 5 and 20 print
    it: each run's share over the turns of the samples both scored, per scenario, averaged
    over scenarios; the interval resamples those samples, paired and within each scenario.
    None where `base` chose none (no share to be a percentage of)."""
    chose = metric("choice_proactive")
    groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    shared = 0
    for name, lines in run.by_scenario.items():
        theirs = {x["sample_id"]: x for x in _scored(base.by_scenario.get(name, []))}
        pairs = [(x, theirs[x["sample_id"]]) for x in _scored(lines) if x["sample_id"] in theirs]
        if not pairs:
            continue
        shared += len(pairs)
        counts = []
        for ours, other in pairs:
            a = values_by_metric([chose], [ours])[chose.key]
            b = values_by_metric([chose], [other])[chose.key]
            counts.append((sum(a) / 100.0, len(a), sum(b) / 100.0, len(b)))
        array = np.asarray(counts, dtype=float)
        groups.append((array[:, 0], array[:, 1], array[:, 2], array[:, 3]))
    if not groups:
        return None, 0

    def change(picks: Sequence[np.ndarray | None]) -> float | None:
        mine, theirs = [], []
        for (a, na, b, nb), index in zip(groups, picks, strict=True):
            if index is not None:
                a, na, b, nb = a[index], na[index], b[index], nb[index]
            if na.sum() == 0 or nb.sum() == 0:
                return None
            mine.append(a.sum() / na.sum())
            theirs.append(b.sum() / nb.sum())
        before = sum(theirs) / len(theirs)
        return None if before == 0 else 100.0 * (sum(mine) / len(mine) - before) / before

    estimate = change([None] * len(groups))
    if estimate is None:
        return None, shared
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_resamples):
        picks = [rng.integers(0, len(g[0]), size=len(g[0])) for g in groups]
        found = change(picks)
        if found is not None:
            draws.append(found)
    if not draws:
        return Interval(estimate, estimate, estimate), shared
    low, high = np.quantile(np.asarray(draws), [0.025, 0.975])
    return Interval(estimate, float(low), float(high)), shared


def _restricted(run: Run, scenarios: Sequence[str]) -> Run:
    """`run` with only the lines of `scenarios`."""
    kept = {s: lines for s, lines in run.by_scenario.items() if s in scenarios}
    return replace(run, lines=[x for lines in kept.values() for x in lines], by_scenario=kept)


def _reasons(runs: Mapping[str, Run], average: Sequence[str] = ()) -> tuple[str, ...]:
    """Why each of `runs` (by the name a finding gives it) does not stand beside the paper's
    figures; `average`: those whose figure is an average over the paper's seven scenarios,
    asked `average_apart` too."""
    found = []
    for name, run in runs.items():
        reasons = list(not_comparable(run))
        if name in average:
            apart = average_apart(run)
            if apart:
                reasons.append(apart)
        found += [f"{name}: {reason}" for reason in reasons]
    return tuple(found)


# ----- a suite's findings -----------------------------------------------------------------------


def unpaired(
    run: tuple[str, Run | None], base: tuple[str, Run], requires: Mapping[str, Any]
) -> str | None:
    """Why an experiment's run cannot be set against its base episode by episode, or None:
    it was played on other data (`datarecords.other_data`, the rule `report --vs` refuses
    by: the same ids name other samples), or it lacks a setting its experiment is named for
    (a run put in its folder by hand speaks to another question)."""
    (name, found), (base_name, plain) = run, base
    if found is None:
        return None
    lacking = [
        f"{key} = {shown_json(value)}"
        for key, value in requires.items()
        if found.settings.get(key) != value
    ]
    if lacking:
        return f"{name} does not have the setting it is named for ({', '.join(lacking)})"
    other = other_data(found.config, plain.config, (found.lines, plain.lines))
    if other is not None:
        return f"{name} and {base_name} were played on other data ({other}): not paired"
    return None


def left_out(ident: str, number: str, claim: str, why: str) -> Finding:
    """A finding its runs cannot speak to, saying why (no statistic)."""
    return Finding(ident, number, claim, (), f"Not computed: {why}.", notes=(why,))


@dataclass(frozen=True)
class Paired:
    """One experiment set against the one it changes, and where the paper shows the change."""

    id: str
    run: str
    base: str
    number: str
    claim: str
    #: How the sentence opens.
    lead: str
    #: The paper's table of the experiment and of its base, and the figure that averages
    #: them; None where a figure prints averages only (`figures`).
    tables: tuple[str, str, str | None] | None = None
    #: The paper's figures by statistic for the scenarios compared, where it prints no row
    #: per model.
    figures: Callable[[Sequence[str]], Mapping[str, float] | None] | None = None
    figure_source: str = ""
    #: The figure is an average over the paper's seven scenarios whatever the run covers.
    whole_average: bool = False
    verb: str = "changed by"
    #: The settings (run.json's names) the experiment's run must have to be what it is named
    #: for: a run in its place without them speaks to another question.
    requires: Mapping[str, Any] = field(default_factory=dict)


PAIRED: tuple[Paired, ...] = (
    Paired(
        "hint",
        "hint",
        "mcqa",
        "iii",
        "hints give marginal gains",
        "With the hint",
        tables=("table7_hint", "table1_mcqa", "fig6_hint"),
        verb="gained",
        requires={"hint": True},
    ),
    Paired(
        "history",
        "history",
        "mcqa",
        "iv",
        "conversation history biases models the wrong way",
        "With the conversation's history",
        figures=lambda _: history_figures(),
        figure_source="Fig. 8's printed averages, 10 multi-image models, all seven scenarios",
        whole_average=True,
        requires={"history": True},
    ),
    *(
        Paired(
            f"icl{shots}",
            f"icl{shots}",
            "mcqa",
            "iv",
            "in-context examples bias models the wrong way",
            f"With {words} in-context example{'s' if shots > 1 else ''}",
            figures=lambda scenarios, shots=shots: icl_figures(shots, scenarios),
            figure_source="Fig. 9's printed averages, 10 multi-image models",
            requires={"icl": shots},
        )
        for shots, words in ((1, "one"), (3, "three"))
    ),
    Paired(
        "multiturn",
        "oeg-multiturn",
        "mcqa",
        "i",
        "without options to choose from, models are even less proactive and less accurate",
        "In multi-turn open-ended generation against multiple choice",
        tables=("table10_multiturn_oeg", "table1_mcqa", None),
        requires={"mode": "oeg-multiturn"},
    ),
)


def suite_findings(
    runs: Mapping[str, Run], *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> list[Finding]:
    """The findings a suite's experiments (by their ids in suites/paper.toml) speak to: (i)
    the plain run's ps rate against what its episodes allow and its accuracy against the
    reference run's; (iii) hint - mcqa; (iv) history, icl1 and icl3 - mcqa; (i) the
    random-suggestions ablation and multi-turn open-ended generation - mcqa. A finding whose
    experiments were not played, or share no scored episode, is left out."""
    base = runs.get("mcqa")
    if base is None or base.oeg or not any(map(_scored, base.by_scenario.values())):
        return []  # nothing scored in multiple choice to set the others against
    found = [proactive_finding(base, runs.get("reference"), seed, n_resamples)]
    by_id: dict[str, Finding | None] = {}
    for paired in PAIRED:
        run = runs.get(paired.run)
        if run is not None:
            by_id[paired.id] = paired_finding(paired, run, base, seed, n_resamples)
    if "ablation" in runs:
        by_id["ablation"] = ablation_finding(runs["ablation"], base, seed, n_resamples)
    return found + [f for key in SUITE_ORDER if (f := by_id.get(key)) is not None]


#: The order of a suite's paired findings: the paper's (iii), (iv), then its evidence for (i).
SUITE_ORDER = ("hint", "history", "icl1", "icl3", "ablation", "multiturn")


def _covered(comparison_covers: Sequence[str]) -> tuple[str, ...]:
    return tuple(scenario_order(comparison_covers))


def paired_finding(
    paired: Paired, run: Run, base: Run, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> Finding | None:
    """`paired.run` minus `paired.base` in accuracy and ps rate, paired, beside the paper's
    mean change; None when they share no scored episode; a finding that says why when they
    cannot be paired (`unpaired`)."""
    why = unpaired((paired.run, run), (paired.base, base), paired.requires)
    if why is not None:
        return left_out(paired.id, paired.number, paired.claim, why)
    comparison = compare_runs(run, base, seed=seed, n_resamples=n_resamples)
    if not comparison.covers:
        return None
    scenarios = _covered(comparison.covers)
    reasons = _reasons(
        {paired.run: run, paired.base: base},
        average=(paired.run, paired.base) if paired.whole_average else (),
    )
    figures = paired.figures(scenarios) if paired.figures else None
    stats = []
    for name, key, value in (
        ("accuracy", "acc", comparison.average.accuracy),
        ("ps rate", "psr", comparison.average.ps_rate),
    ):
        paper = None
        if paired.tables is not None:
            table, under, figure = paired.tables
            paper = table_figure(table, under, key, scenarios, figure, value, not reasons)
        elif figures is not None:
            paper = PaperFigure(figures[name], 0, paired.figure_source)
        stats.append(
            Statistic(
                name,
                "points" if key == "acc" else "",
                value,
                (paired.run, paired.base),
                scenarios,
                comparison.average.shared,
                paper,
            )
        )
    notes = ()
    if paired.whole_average and sorted(scenarios) != sorted(paper_scenarios()):
        notes = (
            f"the paper's figure averages all seven scenarios; this run's covers "
            f"{', '.join(scenarios)}",
        )
    sentence = difference_sentence(paired.lead, stats, reasons, paired.verb)
    return Finding(paired.id, paired.number, paired.claim, tuple(stats), sentence, reasons, notes)


PROACTIVE_CLAIM = (
    "MLLMs lack proactiveness: they rarely ask for the interventions an episode offers, and "
    "their accuracy collapses where the answer needs one"
)


def proactive_finding(
    mcqa: Run,
    reference: Run | None,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> Finding:
    """(i): the plain run's ps rate, beside what its episodes allow (the proactive baseline's
    suggestions in the same episodes) and Table 1's mean; its accuracy minus the reference
    run's over the samples both scored, beside Fig. 3 (Table 1 - Table 6 per model)."""
    notes: list[str] = []
    scenarios = _covered([s for s, lines in mcqa.by_scenario.items() if _scored(lines)])
    reasons = _reasons({"mcqa": mcqa, **({"reference": reference} if reference else {})})
    ps = own_ps_rate(mcqa, seed, n_resamples)
    episodes = sum(len(_scored(lines)) for lines in mcqa.by_scenario.values())
    stats = [
        Statistic(
            "ps rate",
            "",
            ps,
            ("mcqa",),
            scenarios,
            episodes,
            table_figure("table1_mcqa", None, "psr", scenarios, None, ps, not reasons),
            signed=False,
        )
    ]
    allowed, why = allowed_suggestions(mcqa)
    allowed_mean: float | None = None
    if why is not None:
        notes.append(f"what the episodes allow is not computed: {why}")
    else:
        groups = [
            [ps_rate_score(x) - allowed[s, x["sample_id"]] for x in _scored(lines)]
            for s, lines in mcqa.by_scenario.items()
        ]
        short = bootstrap_mean_of_means(groups, seed=seed, n_resamples=n_resamples)
        allowed_mean = _mean_of_means(
            [
                [float(allowed[s, x["sample_id"]]) for x in _scored(lines)]
                for s, lines in mcqa.by_scenario.items()
            ]
        )
        stats.append(
            Statistic(
                "ps rate - allowed", "", short, ("mcqa", "baseline:proactive"), scenarios, episodes
            )
        )
    apart = unpaired(("reference", reference), ("mcqa", mcqa), {"reference": True})
    if reference is not None and apart is not None:
        notes.append(f"accuracy - reference is not computed: {apart}")
    elif reference is not None:
        comparison = compare_runs(mcqa, reference, seed=seed, n_resamples=n_resamples)
        if comparison.covers:
            covered = _covered(comparison.covers)
            value = comparison.average.accuracy
            stats.append(
                Statistic(
                    "accuracy - reference",
                    "points",
                    value,
                    ("mcqa", "reference"),
                    covered,
                    comparison.average.shared,
                    table_figure(
                        "table1_mcqa",
                        "table6_oracle",
                        "acc",
                        covered,
                        "fig3_reference_vs_benchmark",
                        value,
                        not reasons,
                    ),
                )
            )
    return Finding(
        "proactive",
        "i",
        PROACTIVE_CLAIM,
        tuple(stats),
        _proactive_sentence(stats, allowed_mean, reasons),
        reasons,
        tuple(notes),
    )


def _mean_of_means(groups: Sequence[Sequence[float]]) -> float:
    kept = [sum(g) / len(g) for g in groups if g]
    return sum(kept) / len(kept)


def _proactive_sentence(
    stats: Sequence[Statistic], allowed: float | None, reasons: Sequence[str]
) -> str:
    """'The plain run's ps rate is 0.12 [0.05, 0.20] on 1,260 episodes, which allow 3.40
    (the proactive baseline's): ps rate - allowed -3.28 [...]; accuracy - reference ...'."""
    ps = stats[0]
    parts = [f"The plain run's {stated(ps)} on {_episodes(ps.episodes)}"]
    if allowed is not None:
        parts[0] += f", which allow {allowed:.2f} (the proactive baseline's suggestions)"
    more = [stated(s) + f" on the same {_episodes(s.episodes)}" for s in stats[1:]]
    text = "; ".join(parts + more)
    papers = []
    for s in (ps, *stats[1:]):
        if s.paper is not None:
            rank = (
                f", this model {_ordinal(s.paper.rank[0])} of {s.paper.rank[1]}"
                if s.paper.rank
                else ""
            )
            papers.append(
                f"{s.name} {shown(s.paper.value, s.unit, s.signed)}{_unit(s.unit)} "
                f"({s.paper.models} models, {s.paper.source}{rank})"
            )
    if papers:
        text += "; the paper's models: " + ", ".join(papers) + " on average"
    return text + "." + _apart(reasons)


ABLATION_CLAIM = (
    "models that keep choosing suggestions when they are random ones are not being proactive: "
    "they avoid abstaining"
)


#: Why the ablation's proactive share has no relative change.
NO_SHARE = "the plain run chose no proactive option, so its proactive share has no relative change"


def ablation_finding(
    run: Run, base: Run, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> Finding | None:
    """The random-suggestions ablation minus the plain run: accuracy and ps rate (paired),
    and the relative change of the proactive share beside Fig. 20's per-model changes."""
    why = unpaired(("ablation", run), ("mcqa", base), {"random_suggestions": True})
    if why is not None:
        return left_out("ablation", "i", ABLATION_CLAIM, why)
    comparison = compare_runs(run, base, seed=seed, n_resamples=n_resamples)
    if not comparison.covers:
        return None
    scenarios = _covered(comparison.covers)
    reasons = _reasons({"ablation": run, "mcqa": base})
    share, shared = proactive_share_change(run, base, seed=seed, n_resamples=n_resamples)
    per_model = ablation_figures()
    values = list(per_model.values())
    rank = rank_among(share.estimate, values) if share is not None and not reasons else None
    paper = PaperFigure(
        sum(values) / len(values), len(values), "Fig. 20 per model, all scenarios", rank
    )
    compared = ("ablation", "mcqa")
    stats = (
        Statistic(
            "accuracy",
            "points",
            comparison.average.accuracy,
            compared,
            scenarios,
            comparison.average.shared,
        ),
        Statistic(
            "ps rate",
            "",
            comparison.average.ps_rate,
            compared,
            scenarios,
            comparison.average.shared,
        ),
        Statistic("proactive share", "%", share, compared, scenarios, shared, paper),
    )
    notes = () if share is not None else (NO_SHARE,)
    sentence = difference_sentence(
        "With random suggestions in place of the interventions", stats, reasons, also=notes
    )
    return Finding("ablation", "i", ABLATION_CLAIM, stats, sentence, reasons, notes)


# ----- several models: size ---------------------------------------------------------------------

SIZE_CLAIM = "proactiveness does not follow model size"
#: Models of known size a rank correlation needs.
MIN_SIZED = 3


def rho_interval(
    sizes: Sequence[float],
    rates: Sequence[float],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> Interval | None:
    """Spearman's rho of `rates` with `sizes` and a percentile interval from resampling the
    models (a resample whose sizes or rates are all one value has no rho and is left out);
    None with fewer than three models or no ranking."""
    estimate = spearman_rho(sizes, rates)
    if estimate is None:
        return None
    x, y = np.asarray(sizes, dtype=float), np.asarray(rates, dtype=float)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_resamples):
        index = rng.integers(0, len(x), size=len(x))
        rho = spearman_rho(x[index], y[index])
        if rho is not None:
            draws.append(rho)
    if not draws:
        return Interval(estimate, estimate, estimate)
    low, high = np.quantile(np.asarray(draws), [0.025, 0.975])
    return Interval(estimate, float(low), float(high))


def size_finding(
    all_measures: Sequence[RunMeasures], *, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES
) -> Finding | None:
    """(ii): Spearman's rho of the average ps rate (and accuracy) with parameter count over
    the models of known size (`measures.sized_models`: one run per model), with a bootstrap
    interval over models, beside the rho of the paper's models of published size (Table 1's
    averages, `paper_results.published_sizes`); None with fewer than three such models."""
    sized, left = sized_models(all_measures)
    # One point per model spec: a second run of the same spec is no second model, and two
    # models behind one spec (two `hf:tuned` checkpoints) cannot be told apart; said.
    chosen = {m.run.model: m.run.label for m in sized}
    notes = tuple(
        f"{m.run.label} is not counted: {chosen.get(m.run.model, 'another run')} stands for "
        f"its model spec ({m.run.model})"
        for m in left
    )
    stats = []
    for name, key in (("rho(size, ps rate)", "ps_rate"), ("rho(size, accuracy)", "accuracy")):
        points = [
            (m.run.params_b, m.average.values[key].estimate)  # type: ignore[union-attr]
            for m in sized
            if m.average.values.get(key) is not None
        ]
        value = rho_interval(
            [p[0] for p in points], [p[1] for p in points], seed=seed, n_resamples=n_resamples
        )
        if value is None:
            continue
        published = published_sizes(key)
        rho = spearman_rho([p[0] for p in published], [p[1] for p in published])
        paper = (
            None
            if rho is None
            else PaperFigure(rho, len(published), "Table 1's averages, models of published size")
        )
        labels = tuple(m.run.label for m in sized)
        tested = spearman_permutation_p(
            [p[0] for p in points], [p[1] for p in points], seed=seed, n_resamples=n_resamples
        )
        stats.append(Statistic(name, "rho", value, labels, (), len(points), paper, p_value=tested))
    if not stats:
        return None
    reasons = tuple(f"{m.run.label}: {reason}" for m in sized for reason in not_comparable(m.run))
    said = ", ".join(stated(s) for s in stats)
    paper = ", ".join(
        f"{s.name} {shown(s.paper.value, 'rho')}"  # type: ignore[union-attr]
        for s in stats
        if s.paper is not None
    )
    models = stats[0].episodes
    sentence = f"Over {models} models of known size, {said}"
    if paper:
        models = next(s.paper.models for s in stats if s.paper is not None)
        sentence += f"; the paper's {models} models of published size give {paper}"
    sentence += "." + _apart(reasons, ranks=False)  # a rho has no rank among the paper's models
    return Finding("size", "ii", SIZE_CLAIM, tuple(stats), sentence, reasons, notes)


# ----- training ---------------------------------------------------------------------------------

TRAINING_CLAIM = (
    "RL fine-tuning teaches proactiveness, and it transfers to scenarios not trained on"
)
TABLE3 = "table3_grpo"


def table3_config(rp: float | None = None) -> str:
    """Table 3's row name of proactive reward `rp` ("rp = 0.5"); default: the smallest the
    paper ran (the recipe's default)."""
    configs = sorted(
        {
            str(r["config"])
            for r in paper_table(TABLE3)["rows"]
            if str(r["config"]).startswith("rp = ")
        },
        key=lambda c: float(c.split("=")[1]),
    )
    if rp is None:
        return configs[0]
    # By value: the table prints "rp = 1.0" beside "rp = 0.5".
    return next((c for c in configs if float(c.split("=")[1]) == rp), f"rp = {rp:g}")


def table3_changes(rp: float | None = None) -> dict[str, dict[str, float]]:
    """Table 3's change from each model's original row to its row of proactive reward `rp`
    (`table3_config`), averaged over the scenarios it trained on (in-domain, "seen") and
    those it held out ("held out"), then over its two models:
    {"seen": {"accuracy": ..., "ps rate": ...}, "held out": {...}}."""
    table = paper_table(TABLE3)
    groups = {
        "seen": table["column_groups"]["in-domain"],
        "held out": table["column_groups"]["out-of-domain"],
    }
    chosen = table3_config(rp)
    by_model: dict[str, dict[str, dict[str, Any]]] = {}
    for row in table["rows"]:
        by_model.setdefault(row["model"], {})[row["config"]] = row["cells"]
    found: dict[str, dict[str, float]] = {}
    for group, columns in groups.items():
        found[group] = {}
        for name, key in (("accuracy", "acc"), ("ps rate", "psr")):
            changes = [
                _mean_over(rows[chosen], key, columns) - _mean_over(rows["original"], key, columns)
                for rows in by_model.values()
                if chosen in rows and "original" in rows
            ]
            if not changes:
                raise KeyError(f"Table 3 has no row {chosen!r}")
            found[group][name] = sum(changes) / len(changes)
    return found


def training_finding(
    base: Run,
    tuned: Run,
    seen: Sequence[str],
    *,
    rp: float | None = None,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> Finding | None:
    """(v): the tuned run minus the base run in accuracy and ps rate, paired, on the
    scenarios trained on (`seen`) and on the others, beside Table 3's change for proactive
    reward `rp` over its in-domain and out-of-domain scenarios (`table3_changes`); None
    when the runs share no scored episode."""
    paper = table3_changes(rp)
    reasons = _reasons({"base": base, "tuned": tuned})
    changed = identity_differences(base.config.get("settings"), tuned.config.get("settings"))
    if changed:  # the difference is then the settings' as much as the training's
        reasons += (f"tuned: other settings than base's ({'; '.join(changed)})",)
    stats = []
    for group, wanted in (
        ("seen", [s for s in tuned.by_scenario if s in seen]),
        ("held out", [s for s in tuned.by_scenario if s not in seen]),
    ):
        if not wanted:
            continue
        comparison = compare_runs(
            _restricted(tuned, wanted),
            _restricted(base, wanted),
            seed=seed,
            n_resamples=n_resamples,
        )
        if not comparison.covers:
            continue
        scenarios = _covered(comparison.covers)
        for name, unit, value in (
            ("accuracy", "points", comparison.average.accuracy),
            ("ps rate", "", comparison.average.ps_rate),
        ):
            figure = PaperFigure(
                paper[group][name],
                2,
                f"Table 3, {table3_config(rp)} - original, "
                f"{'in-domain' if group == 'seen' else 'out-of-domain'} scenarios",
            )
            stats.append(
                Statistic(
                    f"{name} ({group})",
                    unit,
                    value,
                    ("tuned", "base"),
                    scenarios,
                    comparison.average.shared,
                    figure,
                )
            )
    if not stats:
        return None
    table = paper_table(TABLE3)["column_groups"]["in-domain"]
    notes = ()
    if sorted(seen) != sorted(table):
        notes = (
            f"trained on {', '.join(seen) or 'none'}; the paper's Table 3 trained on "
            f"{', '.join(table)}",
        )
    sentence = difference_sentence("After training", stats, reasons, "changed by")
    return Finding("training", "v", TRAINING_CLAIM, tuple(stats), sentence, reasons, notes)


def finding_line(finding: Finding) -> str:
    """A finding in one line, as a terminal states it: the paper's claim, then the sentence."""
    return f"({finding.number}) {finding.claim}: {finding.sentence}"


def findings_dict(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The findings as JSON data (report.json, a suite's summary), the paper named once."""
    return [{**f.as_dict(), "paper_source": PAPER_SOURCE} for f in findings]
