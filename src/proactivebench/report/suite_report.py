"""The report of a suite's experiments (`proactivebench paper`, `report OUT`), laid out as the
paper: each experiment's run beside the paper's table it reproduces (`report.paper_layout`).

A suite's output holds a run directory per experiment and `suite.json` (which experiments,
where the paper shows each, which is the plain run, the `--limit` they were played with). The
report of them all goes to `OUT/report/`: first the experiments (their episodes per scenario,
how each ended, a link to its own report and episode viewer, written beside its run), then
the paper's tables with the 22 published models and this model's row, the action
distributions and their changes from the plain run (the paper's Figs. 4, 5, 7), then each
run's own tables. When every run is partial (`report.comparable.partial`), every table says
so; when some are, the experiments table names them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proactivebench.benchmark.paper_results import paper_results
from proactivebench.benchmark.registry import scenario_order
from proactivebench.core.errors import (
    NothingToDoError,
    ProactiveBenchError,
    RunDirError,
    RunDirInUseError,
    RunMismatchError,
)
from proactivebench.core.paths import read_file
from proactivebench.core.texts import loads
from proactivebench.report.build import REPORT_DIR, ReportOutcome, write_report
from proactivebench.report.comparable import partial, stopped
from proactivebench.report.paper_layout import Layout
from proactivebench.report.runs import Run, load_run
from proactivebench.report.tables import Cell, Table
from proactivebench.run.rundir import (
    ONE_SUITE_KEYS,
    RESULTS,
    RUN_CONFIG,
    SUITE_RECORD,
    SUITE_RESERVED,
    RunLock,
    identity_differences,
    read_run_config,
    run_lines,
)
from proactivebench.run.selection_record import selection_of


def write_suite_report(
    out_dir: Path,
    record: Mapping[str, Any],
    statuses: Mapping[str, str],
    *,
    thumb_cache: bool = True,
    report_dir: Path | None = None,
    paper_model: str | None = None,
    if_changed: bool = True,
) -> ReportOutcome:
    """The report of the experiments `record` (`suite.json`) lists that have a run in
    `out_dir`, into `report_dir` (default `out_dir/report`); `statuses` says how each ended in
    the invocation that just ran them (by id); `paper_model` names the paper's model they
    evaluated where the model spec does not (`report --paper-model`). With `if_changed` (the
    `paper` and `suite` commands) a report built from the same runs and options is left as it
    is; without it (`report OUT`) the suite's report and each experiment's own are written
    again, as `report RUN` writes a run's: what their stamp does not cover (the package's
    code at one version, the data set's images) may have changed."""
    listed = record.get("experiments", [])
    entries = [e for e in listed if (out_dir / e["id"] / RUN_CONFIG).is_file()]
    left_out = left_out_warnings(out_dir, listed)
    if not entries:
        told = "".join(f"; {w}" for w in left_out)
        raise NothingToDoError(f"{out_dir}: no experiment of its suite.json has a run yet{told}")
    cache = "default" if thumb_cache else None
    refuse_mixed_models({e["id"]: out_dir / e["id"] for e in entries})
    for entry in list(entries):  # each experiment's own report and episode viewer
        run = out_dir / entry["id"]
        try:
            write_report([run], run / REPORT_DIR, if_changed=if_changed, thumb_cache=cache)
        except RunDirError as exc:
            entries.remove(entry)
            left_out.append(_left_out(out_dir, entry["id"], exc))
    if not entries:
        told = "".join(f"; {w}" for w in left_out)
        raise NothingToDoError(f"{out_dir}: no experiment of its suite.json can be reported{told}")
    runs = {e["id"]: out_dir / e["id"] for e in entries}
    report = report_dir or out_dir / REPORT_DIR
    limits = _limits(entries, runs, record.get("limit"))
    readable = _readable(runs)  # read once, for the partial and the unplaced experiments
    partial = partial_runs(readable, limits)
    every = len(partial) == len(entries)
    layout = Layout.of(
        {runs[e["id"]]: e["published"] for e in entries if isinstance(e.get("published"), str)},
        limits=limits,
        preface=(
            experiments_table(
                entries,
                runs,
                statuses,
                report,
                {} if every else partial,
                unplaced(entries, readable),
            ),
        ),
        note=partial_note(_common_limit(limits, len(entries))) if every else None,
        warnings=tuple(left_out),
        experiments={path: ident for ident, path in runs.items()},
    )
    plain = next((runs[e["id"]] for e in entries if e.get("plain")), None)
    model = _model(next(iter(runs.values())))
    return write_report(
        list(runs.values()),
        report,
        vs=plain,
        title=f"The paper's experiments: {model}" if model else "The paper's experiments",
        if_changed=if_changed,
        thumb_cache=cache,
        paper=True,
        paper_model=paper_model,
        layout=layout,
    )


def refuse_mixed_models(runs: Mapping[str, Path]) -> None:
    """Refuse a suite's output whose runs are of different models or data (their run.json's
    `ONE_SUITE_KEYS`), naming two that differ and how: the report names one model and sets
    each experiment against the plain run as the effect of its setting, so another model's
    run was read as one model's change (a folder made by two invocations at once before
    suite.json named its model, or a run folder copied in)."""
    first: tuple[str, dict[str, Any]] | None = None
    for ident, run in runs.items():
        try:
            config = read_run_config(run)
        except (OSError, ProactiveBenchError):
            continue  # left to the report, which says why
        ours = {key: config.get(key) or None for key in ONE_SUITE_KEYS}
        if first is None:
            first = (ident, ours)
        elif ours != first[1]:
            changes = "; ".join(identity_differences(first[1], ours))
            raise RunMismatchError(
                f"{run.parent} holds runs of different models or data ({first[0]} → {ident}: "
                f"{changes}): a suite's report compares one model's experiments, so none are "
                f"compared; report each run alone (report {run}) or move it to a suite of its own"
            )


def experiments_table(
    entries: list[dict[str, Any]],
    runs: Mapping[str, Path],
    statuses: Mapping[str, str],
    report: Path,
    partial: Mapping[str, list[str]] | None = None,
    apart: list[str] | None = None,
) -> Table:
    """A row per experiment: where the paper shows it, its scored episodes per scenario, how it
    ended, and a link to its own report (relative to the suite's report in `report`); a note
    for each experiment in `partial` (id -> why it is partial), and one naming those `apart`
    (`unplaced`: no table of the paper holds them)."""
    rows = []
    for entry in entries:
        ident = entry["id"]
        counts, errors = _episodes(runs[ident])
        shown = ", ".join(f"{s} {n}" for s, n in counts.items()) or "—"
        stopped = _stopped(runs[ident])
        selected = _selected(runs[ident])
        short = selected is not None and sum(counts.values()) + errors < selected
        status = statuses.get(ident) or (
            f"stopped ({stopped}): rerun the command to resume"
            if stopped
            else "episode errors"
            if errors
            else f"partial: {sum(counts.values())} of {selected} selected episodes scored"
            if short
            else "done"
        )
        rows.append(
            [
                Cell(ident),
                Cell(str(entry.get("paper") or "")),
                Cell(str(sum(counts.values())), sum(counts.values())),
                Cell(shown),
                Cell(status),
                Cell("report", href=_relative(runs[ident] / REPORT_DIR / "report.html", report)),
            ]
        )
    columns = ["experiment", "paper", "episodes", "per scenario", "status", "own report"]
    notes = [
        "Each experiment is a run directory of its own (report, show, judge and merge work on "
        "each); its own report holds its episode viewer. Episodes: scored ones (those that "
        "ended in an error are left out)."
    ]
    notes += [
        f"{ident}: {'; '.join(reasons)} (beside the paper's rows without a rank)"
        for ident, reasons in (partial or {}).items()
    ]
    if apart:
        notes.append(
            f"{', '.join(apart)}: no table or figure of the paper holds runs of "
            f"{'these settings' if len(apart) > 1 else 'its settings'}: shown in this "
            "report's own tables (the changes from the plain run, each run's tables) and in "
            "its own report (the last column), not beside the paper's models."
        )
    return Table(
        "experiments",
        "Experiments",
        columns,
        rows,
        notes,
        average_last=False,
        text_columns=(1, 3, 4, 5),
    )


def _readable(runs: Mapping[str, Path]) -> dict[str, Run]:
    """Each experiment's run that can be read, by id; one that cannot is left to the report,
    which says why."""
    found = {}
    for ident, path in runs.items():
        try:
            found[ident] = load_run(path)
        except (OSError, ProactiveBenchError):
            continue
    return found


def unplaced(entries: list[dict[str, Any]], runs: Mapping[str, Run]) -> list[str]:
    """The experiments whose run (in `runs`: those that can be read) stands beside no table
    or figure of the paper, by the rule that places runs there (`published.counterpart`,
    `figure_counterpart`, with the table suite.json names): a custom suite's `reference` +
    `hint` run, say. They vanished from the paper's tables without a word, the report saying
    nothing of where they stood."""
    from proactivebench.report.published import counterpart
    from proactivebench.report.published_figures import figure_counterpart

    found = []
    for entry in entries:
        run = runs.get(entry["id"])
        if run is None:
            continue
        named = entry.get("published")
        run.counterpart = named if isinstance(named, str) else None
        if counterpart(run) is None and figure_counterpart(run) is None:
            found.append(entry["id"])
    return found


def left_out_warnings(out_dir: Path, listed: list[dict[str, Any]]) -> list[str]:
    """What a suite's report leaves out, each named: an experiment suite.json lists whose
    folder is gone or holds no run.json, and a run folder in `out_dir` it does not list (its
    entry removed, or lost to two invocations at once). Left out without a word, a played
    experiment was missing from every table while the report looked whole."""
    warnings = []
    for entry in listed:
        folder = out_dir / entry["id"]
        if not folder.is_dir():
            warnings.append(
                f"experiment {entry['id']!r} of {SUITE_RECORD} has no folder ({folder}): "
                "left out of this report"
            )
        elif not (folder / RUN_CONFIG).is_file():
            warnings.append(
                f"experiment {entry['id']!r}: {folder} holds no {RUN_CONFIG}{_lines_of(folder)}: "
                "left out of this report"
            )
    ids = {entry["id"].casefold() for entry in listed}
    reserved = {name.casefold() for name in SUITE_RESERVED}
    for folder in sorted(out_dir.iterdir() if out_dir.is_dir() else []):
        if folder.name.casefold() in ids | reserved or not folder.is_dir():
            continue
        if (folder / RUN_CONFIG).is_file() or (folder / RESULTS).is_file():
            warnings.append(
                f"{folder} is a run folder {SUITE_RECORD} does not list: left out of this "
                f"report (report it alone: report {folder})"
            )
    return warnings


def _left_out(out_dir: Path, ident: str, exc: RunDirError) -> str:
    """Why experiment `ident` is left out of this report: its run cannot be reported now (in use
    by another invocation, its run.json damaged), which concerns that run only. It failed the
    whole report before: `paper --only X` beside another invocation exited 1 after playing
    well, and one damaged run.json left the healthy experiments without a report."""
    why = f"{exc}; mend it, then report {out_dir}"
    if isinstance(exc, RunDirInUseError):
        holder = RunLock.holder(out_dir / ident) or "unknown"
        why = (
            f"{out_dir / ident} is in use by another run (PID {holder}); report {out_dir} once "
            "that run ends makes the report whole"
        )
    return f"experiment {ident!r} is left out of this report: {why}"


def _lines_of(folder: Path) -> str:
    """How many lines the folder's results.jsonl holds, as ' (N lines in results.jsonl)'."""
    try:
        count = sum(1 for line in read_file(folder / RESULTS).splitlines() if line.strip())
    except OSError:
        return ""
    return f" ({count} lines in {RESULTS})"


def partial_note(limit: int | None) -> str:
    """What every table says when every run of the report is partial (played with `--limit`,
    when all were: the largest; stopped, one shard)."""
    after = paper_results()["filtering"]["counts_after"]
    counts = ", ".join(f"{s} {after[s]}" for s in scenario_order(after) if s != "total")
    how = (
        f"played with --limit {limit}, at most {limit} episodes per scenario"
        if limit is not None
        else "every experiment holds fewer episodes than its data offers"
    )
    return (
        f"Partial: {how} (the experiments table gives each run's), where the paper scored "
        f"every sample ({counts} after its filter)."
    )


def partial_runs(runs: Mapping[str, Run], limits: Mapping[Path, int]) -> dict[str, list[str]]:
    """Why each experiment's run (in `runs`: those that can be read) is partial, as
    `report.comparable.partial` decides it for the run (its selection, else the `--limit`
    suite.json keeps): the one rule its rank in the paper's tables follows. A note from the
    record's largest limit alone stamped "Partial" on tables of complete, ranked runs."""
    found = {}
    for ident, run in runs.items():
        run.limit = limits.get(run.run_dir)
        reasons = partial(run)
        if reasons:
            found[ident] = reasons
    return found


def _common_limit(limits: Mapping[Path, int], count: int) -> int | None:
    """The largest `--limit` when each of the `count` runs was played with one, else None."""
    return max(limits.values()) if limits and len(limits) == count else None


def _limits(entries: list[dict[str, Any]], runs: Mapping[str, Path], limit: Any) -> dict[Path, int]:
    """Each experiment's `--limit` as suite.json keeps it, for `report.comparable.partial`:
    an entry's own, null included (played whole); the record's only for an entry written
    before entries kept their own (no `limit` key)."""
    found = {}
    for entry in entries:
        own = entry.get("limit", limit)
        if isinstance(own, int) and not isinstance(own, bool):
            found[runs[entry["id"]]] = own
    return found


def _relative(target: Path, report: Path) -> str:
    """`target` as a link from a page in `report` (a path with forward slashes)."""
    return Path(os.path.relpath(target.resolve(), report.resolve())).as_posix()


def _episodes(run: Path) -> tuple[dict[str, int], int]:
    """Scored episodes per scenario and the episodes that ended in an error, counted from the
    run's results.jsonl as every reader counts it (`run_lines`), not its summary.json: a
    run stopped before its first end has none and a resumed one stopped again an old one, so
    an interrupted experiment showed 0 (or its earlier count) beside tables of its episodes.
    None when the results cannot be read (the report says why elsewhere)."""
    try:
        lines = run_lines(run, read_run_config(run)).lines
    except (OSError, ProactiveBenchError):
        return {}, 0
    scored: dict[str, int] = {}
    errors = 0
    for line in lines:
        if line.get("error"):
            errors += 1
        else:
            scenario = str(line.get("scenario"))
            scored[scenario] = scored.get(scenario, 0) + 1
    return {s: scored[s] for s in scenario_order(scored)}, errors


def _stopped(run: Path) -> str | None:
    """How the run's last invocation was stopped short (`comparable.stopped`), or None when it
    ended: the experiments table must not call such a run "done"."""
    try:
        config = loads(read_file(run / RUN_CONFIG).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return stopped(config) if isinstance(config, dict) else None


def _selected(run: Path) -> int | None:
    """How many episodes the run's run.json says it selected (None: it does not say)."""
    try:
        config = loads(read_file(run / RUN_CONFIG).decode("utf-8"))
        recorded = selection_of(config, run / RUN_CONFIG) if isinstance(config, dict) else None
    except (OSError, ValueError, ProactiveBenchError):
        return None
    if recorded is None:
        return None
    return sum(entry.selected for entry in recorded.scenarios.values())


def _model(run: Path) -> str:
    try:
        return str(loads(read_file(run / RUN_CONFIG).decode("utf-8")).get("model") or "")
    except (OSError, ValueError, AttributeError):
        return ""
