"""Whether a run can stand beside the paper's published rows: the one place that decides it.

A run is ranked among the paper's models, and its values checked against its model's
published ones, only when nothing it recorded makes the comparison meaningless. What does
(`not_comparable`):

- **generated data**: run.json's `selection.synthetic`, or (older runs) a `synth_manifest.json`
  in the run's data directory (`data synth`): other images, other answers;
- **partial**: data holding fewer samples than the paper's test set (Fig. 10's counts after
  the filter; 100 a scenario for open-ended runs), or fewer episodes than the data offers:
  `selection` records per scenario what the data offered (`available`) and what the run
  selected (`selected`: fewer under `--limit`),
  and the shard a launched rank played; fewer scored lines than selected (a stopped run,
  episodes that ended in an error); for runs recorded before `selection`, the `--limit` a
  suite says its experiment was played with (`suite.json`) and a last invocation that run.json
  says was stopped (a suite's later extension, interrupted);
- **settings the table does not have**: a caller (a suite's experiment) may name the paper's
  table a run stands beside, where the settings cannot tell (an `--all-samples` run is not
  recorded as one); a name the run's settings contradict (`hint = true` placed in Table 1,
  zero-shot) is not followed (`said_table`);
- **verdicts of two judges**: lines that keep an earlier judge's verdict beside the judge
  run.json names (`runs.earlier_verdicts`): its rates mix two judges;
- **comparability unknown**: a run.json that records no selection, whose data directory is
  not at hand (generated data cannot be told apart from the paper's); or a selection that does
  not record what the data offered for a scenario (`available` null: an imported run, whose
  log says which episodes its task selected, not what the data offered), so neither whole nor
  partial can be told.

The average column asks one thing more (`average_apart`): a run's average over other
scenarios than the table's (a run of ROD alone, data without VSOD and MVP-N) is a mean of
other terms than the paper's, so its average is neither ranked nor checked, while its
scenario columns, like with like, are (`average_not_comparable`).

Every surface that sets a run beside the published models (`report --paper`'s tables and
plots, a suite's report) asks here; such a run is shown with the reasons and without a rank
or an inside/outside verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from proactivebench.benchmark.paper_results import paper_results
from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.core.texts import shown_json
from proactivebench.data.directory import is_synthetic
from proactivebench.report.runs import Run, earlier_verdicts, labelled, labelled_settings
from proactivebench.run.selection_record import Selection

#: The paper's tables by the kind of run: (mode, the setting that sets the run apart, or None
#: for none) -> the key in paper_results.json.
COUNTERPARTS: dict[tuple[str, str | None], str] = {
    ("mcqa", None): "table1_mcqa",
    ("mcqa", "hint"): "table7_hint",
    ("mcqa", "reference"): "table6_oracle",
    ("mcqa", "all_samples"): "table4_unfiltered",
    ("oeg", None): "table2_oeg",
    ("oeg", "hint"): "table9_oeg_hint",
    ("oeg-multiturn", None): "table10_multiturn_oeg",
}
#: The samples per scenario the paper's open-ended tables scored (§3.1: "100 examples per
#: scenario", `subset = 100` in suites/paper.toml): an open-ended run that selected that many
#: of the more a scenario offers is whole.
PAPER_OEG_SAMPLES = 100
#: A table a caller may name where the settings name another: Table 4 is Table 1's setting on
#: every sample (run.json does not record `--all-samples`), Table 8 is Table 2's twin.
_SAME_SETTINGS = {"table4_unfiltered": "table1_mcqa", "table8_oeg_agg": "table2_oeg"}


def run_mode(run: Run) -> str:
    """mcqa, oeg or oeg-multiturn."""
    return "oeg" if run.oeg else str(run.settings.get("mode") or "mcqa")


def own_filter(settings: Mapping[str, Any]) -> bool:
    """Whether a run played a test set of its own (`--filter`: run.json records the digest of
    its ids under `filter`, or `filter_digest`)."""
    return bool(settings.get("filter") or settings.get("filter_digest"))


def table_of(mode: str, settings: Mapping[str, Any], *, all_samples: bool = False) -> str | None:
    """The paper's table of runs of `mode` whose run.json records `settings` (`COUNTERPARTS`)
    and that played samples the official filter drops or not (`all_samples`); None for
    settings the paper tabulates nowhere (history, ICL, CoT, a filter of one's own, two
    settings at once). The one rule, for a run (`settings_table`) and for a suite's
    experiment before it plays (its `published` checked)."""
    if own_filter(settings):
        return None  # a test set of one's own: no table of the paper
    marks = [k for k in labelled(settings) if k != "mode"]
    if all_samples or settings.get("all_samples"):
        marks.append("all_samples")
    if len(marks) > 1:
        return None
    return COUNTERPARTS.get((mode, marks[0] if marks else None))


def settings_table(run: Run, unfiltered: bool = False) -> str | None:
    """`table_of` a run (`unfiltered`: it played samples the official filter drops)."""
    return table_of(run_mode(run), run.settings, all_samples=unfiltered)


def decoding_apart(run: Run) -> str | None:
    """Why `run` was not decoded as the paper's rows were (the protocol's decoding for its
    mode: greedy with 50 new tokens for multiple choice, `EvalSettings`' default), or None: a
    sampled or truncated answer is another measurement. A run.json that records no decoding
    says nothing."""
    from proactivebench.run.settings import EvalSettings

    recorded = run.settings.get("decoding")
    if recorded is None:
        return None
    protocol = EvalSettings(mode=run_mode(run)).identity().get("decoding")
    if recorded == protocol:
        return None
    return (
        f"settings the table does not have: decoding {shown_json(recorded)}, where the paper's "
        f"protocol decodes {shown_json(protocol)}"
    )


def subset_apart(run: Run) -> str | None:
    """Why an open-ended run did not play the paper's samples (§3.1: 100 per scenario, the
    subset `--subset 100` draws), or None: more than 100 of a scenario, or, where a scenario
    offers more and the run's invocations recorded how they selected (`selected_by`), chosen
    otherwise (`--limit 100` takes the first 100, not the subset)."""
    if run_mode(run) == "mcqa" or run.selection is None:
        return None
    entries = run.selection.scenarios
    over = [f"{name} {e.selected}" for name, e in entries.items() if e.selected > PAPER_OEG_SAMPLES]
    if over:
        return (
            f"settings the table does not have: {', '.join(over)} samples, not the paper's "
            f"subset of {PAPER_OEG_SAMPLES} per scenario (--subset {PAPER_OEG_SAMPLES})"
        )
    more = [n for n, e in entries.items() if e.available and e.available > PAPER_OEG_SAMPLES]
    history = run.config.get("provenance")
    chosen = [
        entry["selected_by"]
        for entry in (history if isinstance(history, list) else [])
        if isinstance(entry, dict) and isinstance(entry.get("selected_by"), dict)
    ]
    if more and any(c.get("subset") != PAPER_OEG_SAMPLES for c in chosen):
        return (
            f"settings the table does not have: {', '.join(more)} chosen otherwise than the "
            f"paper's subset of {PAPER_OEG_SAMPLES} (--subset {PAPER_OEG_SAMPLES})"
        )
    return None


def said_table(run: Run) -> str | None:
    """The table a caller named for `run` (`Run.counterpart`) when its settings agree with it;
    None when none was named, the name is no table of `COUNTERPARTS`, or the settings
    contradict it (`contradiction` says how)."""
    said = run.counterpart
    if said is None or said not in COUNTERPARTS.values():
        return None
    return said if contradiction(run) is None else None


def contradiction(run: Run) -> str | None:
    """Why the table a caller named for `run` is not the table of its settings, or None."""
    said = run.counterpart
    if said is None or said not in COUNTERPARTS.values():
        return None
    own = settings_table(run)
    if own is not None and own in (said, _SAME_SETTINGS.get(said)):
        return None
    marks = [k for k in labelled_settings(run) if k != "mode"] or ["none"]
    where = f"{_table_name(own)}'s" if own is not None else "no table's of the paper"
    return (
        f"settings the table does not have: named for {_table_name(said)}, but its settings "
        f"(mode {run_mode(run)}, {', '.join(marks)}) are {where}"
    )


def _table_name(key: str) -> str:
    return "Table " + key.split("_", 1)[0].removeprefix("table")


def not_comparable(run: Run) -> list[str]:
    """What makes `run` not comparable with the paper's published rows, each a short reason
    (generated data, partial, settings the table does not have, two judges, unknown); empty
    when nothing does."""
    reasons = []
    if synthetic(run):
        reasons.append("generated data (data synth), not the paper's")
    elif unknown(run):
        reasons.append(
            "comparability unknown: run.json records no selection and its data directory is "
            "not at hand (generated data cannot be told apart)"
        )
    reasons += partial(run)
    apart = (decoding_apart(run), subset_apart(run), unknown_offer(run), contradiction(run))
    reasons += [r for r in apart if r]
    earlier = sum(earlier_verdicts(run).values())
    if earlier:
        reasons.append(f"verdicts of two judges: {earlier} line(s) keep an earlier judge's verdict")
    return reasons


def average_not_comparable(run: Run, scenarios: Sequence[str] | None = None) -> list[str]:
    """What makes `run`'s average not comparable with the paper's average over `scenarios`
    (the table's; the paper's seven by default): `not_comparable`, and `average_apart`."""
    apart = average_apart(run, scenarios)
    return [*not_comparable(run), *([apart] if apart else [])]


def average_apart(run: Run, scenarios: Sequence[str] | None = None) -> str | None:
    """Why `run`'s average is a mean of other scenarios than the table's average (`scenarios`;
    the paper's seven by default): it covers those with a scored episode (as its average row
    does); None when it covers the table's."""
    table = list(paper_scenarios() if scenarios is None else scenarios)
    covers = covered(run)
    if sorted(covers) == sorted(table):
        return None
    return (
        f"average of other scenarios: the run's covers {', '.join(covers) or 'none'}; "
        f"the paper's covers all {len(table)} ({', '.join(table)})"
    )


def covered(run: Run) -> list[str]:
    """The scenarios `run`'s average covers: those with at least one scored episode (a line
    without an error), as `measures.measure_run` averages them."""
    return [
        name
        for name, lines in run.by_scenario.items()
        if any(not line.get("error") for line in lines)
    ]


def unknown(run: Run) -> bool:
    """Whether nothing says what data the run played: run.json records no selection and its
    data directory is not at hand (moved, deleted, or never recorded), so that generated data
    cannot be told apart from the paper's."""
    if run.selection is not None:
        return False
    return run.data_dir is None or not run.data_dir.is_dir()


def synthetic(run: Run) -> bool:
    """Whether the run played generated data: as `Run.selection` records it, or as its data
    directory shows when it is at hand (`data synth`'s manifest): either says so (a record
    edited to say false is not taken over the data itself)."""
    recorded = run.selection
    if recorded is not None and recorded.synthetic:
        return True
    return run.data_dir is not None and is_synthetic(run.data_dir)


def partial(run: Run) -> list[str]:
    """Why the run holds fewer episodes than the data offers (see the module's docstring);
    empty when it holds them all or, for a run that recorded no selection, when nothing
    says."""
    recorded = run.selection
    if recorded is None:
        reasons = [f"partial: played with --limit {run.limit}"] if run.limit is not None else []
        how = stopped(run.config)
        return [*reasons, f"partial: its last invocation stopped ({how})"] if how else reasons
    reasons = []
    if recorded.shard is not None and recorded.shard[1] > 1:
        index, count = recorded.shard
        reasons.append(f"partial: one shard ({index} of {count}) of the selection")
    short = _short_scenarios(run, recorded)
    if short:
        reasons.append("partial: " + ", ".join(short))
    return reasons


def judges_apart(runs: Sequence[Run]) -> str | None:
    """A warning when the judged runs shown together (a report's runs and its `--vs`, a
    suite's experiments) name different judges in run.json, or None: their open-ended
    rates, and every difference between them, measure the judges as much as the runs."""
    judged = [(run, run.settings.get("judge")) for run in runs if run.settings.get("judge")]
    if len({shown_json(judge) for _, judge in judged}) < 2:
        return None
    named = "; ".join(f"{run.label}: {shown_json(judge)}" for run, judge in judged)
    return (
        f"the judged runs name different judges ({named}): their judged rates, and the "
        "differences between them, compare the judges as much as the runs"
    )


def imported(run: Run) -> bool:
    """Whether the run was imported from another harness's log (its command is not ours)."""
    return "inspect_log" in run.config or "lmms_eval_samples" in run.config


def unscored(run: Run) -> str | None:
    """How many of the episodes the run selected hold no score (never played: a run killed
    or stopped; or ended in an error), per scenario, or None: said wherever the run is
    shown, not only beside the paper, since a killed run's table reads like a whole one."""
    recorded = run.selection
    if recorded is None:
        return None
    short, scored_all, selected_all = [], 0, 0
    for name, entry in recorded.scenarios.items():
        scored = sum(1 for line in run.by_scenario.get(name, []) if not line.get("error"))
        scored_all, selected_all = scored_all + scored, selected_all + entry.selected
        if scored < entry.selected:
            short.append(f"{name} {scored} of {entry.selected}")
    if not short:
        return None
    return (
        f"{run.run_dir}: {scored_all} of the {selected_all} episodes it selected hold a score "
        f"({'; '.join(short)})"
        + (
            ""
            if imported(run)
            else f": eval with its options and --out {run.run_dir} plays the rest"
        )
    )


def unknown_offer(run: Run) -> str | None:
    """Why whether `run` is whole cannot be told: its selection records no `available` for
    some scenarios (an import, whose log held episodes of a data set it does not describe);
    None when it records them all, or records no selection."""
    recorded = run.selection
    if recorded is None:
        return None
    names = [name for name, entry in recorded.scenarios.items() if entry.available is None]
    if not names:
        return None
    return (
        "comparability unknown: what the data offered is not recorded for "
        + ", ".join(names)
        + (" (imported: the log does not say what the data offered)" if imported(run) else "")
    )


def stopped(config: Mapping[str, Any]) -> str | None:
    """How a run's last invocation was stopped short (run.json's provenance: `stopped_by`,
    'interrupted' or an error's class; no end time: killed, or still running), or None when
    it ended (or run.json says nothing of it)."""
    entries = config.get("provenance")
    last = entries[-1] if isinstance(entries, list) and entries else None
    if not isinstance(last, dict) or not last:
        return None
    if last.get("stopped_by"):
        return str(last["stopped_by"])
    if last.get("ended") is None:
        return "no end time: killed, or still running"
    return None


def paper_test_counts() -> dict[str, int]:
    """The samples per scenario of the paper's test set (the official filter's, §3.3: 7,557
    in all), from paper_results.json: data holding fewer is a part of it."""
    counts = paper_results()["filtering"]["counts_after"]
    return {name: int(counts[name]) for name in paper_scenarios() if name in counts}


def _short_scenarios(run: Run, recorded: Selection) -> list[str]:
    """Per scenario of the selection, what falls short: the data's samples of the paper's
    test set (a download cut short, a subset), samples selected of those available, or
    episodes scored of those selected."""
    found = []
    cap = PAPER_OEG_SAMPLES if run_mode(run) != "mcqa" else None
    paper = {} if recorded.synthetic else paper_test_counts()
    for name, entry in recorded.scenarios.items():
        available, selected = entry.available, entry.selected
        official = paper.get(name)
        if official is not None and cap is not None:
            official = min(official, cap)
        if available is not None and official is not None and available < official:
            found.append(f"{name} {available} of the paper's {official} samples in the data")
            continue
        scored = sum(1 for line in run.by_scenario.get(name, []) if not line.get("error"))
        wanted = available if cap is None or available is None else min(available, cap)
        if wanted is not None and selected < wanted:
            found.append(f"{name} {selected} of {wanted} samples selected")
        elif scored < selected:
            found.append(f"{name} {scored} of {selected} selected episodes scored")
    return found
