"""`push`: runs and reports put in a Hugging Face dataset repository, with a dataset card.

Where things go in the repo (documented in docs/reports.md, "Results on the Hub"):

- a run directory `RUN` → `runs/<RUN's name>/` (run.json, results.jsonl, summary.json and its
  `report/` folder when it has one); summary.json and the card's table are computed at push
  time from the lines as every reader counts them (`run_lines`, `metrics.summarize`), never
  taken from the file, which may predate lines moved out or in;
- a suite's output `OUT` (`paper --out OUT`, `suite FILE --out OUT`: suite.json and one run
  directory per experiment) → every experiment as `runs/<OUT's name>/<experiment id>/` and the
  suite's report `OUT/report` as `reports/<OUT's name>/` (replaced with the runs: deleted
  when this push sends no current report);
- a report directory `DIR` (report.json or report.html, no run.json) → `reports/<DIR's name>/`,
  refused unless built from its runs' lines as they are now (`_refuse_stale_report`);
- `README.md`: the dataset card, written anew at every push from the runs of this push and
  those earlier pushes left in `runs/` (model, settings, data, the summary table).

Everything goes in one commit, made on the repo's head the push read (`parent_commit`): a
second push committing in between makes the Hub refuse it, and the push reads the repo again
(`_commit_on_head`), so that two pushes at once never mix. A rerun overwrites the same paths
(files that did not change are not sent again: the Hub says which it holds) and rewrites the
card. Each folder pushed
(`runs/NAME/`, `reports/NAME/`) is replaced whole: files an earlier push left there that this
push does not hold are deleted in the same commit, so that one run's lines never stand beside
another's report; a folder that held another run (run.json's identity differs) is named in a
warning. Files elsewhere in the repo are left alone.

huggingface_hub is imported inside functions only: its endpoint (`HF_ENDPOINT`) is fixed at
import, and importing this module must not fix it. Its errors become one `PushError` line
naming the repo and what to do (`hf auth login`, HF_TOKEN, the network).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import shlex
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from proactivebench.benchmark.metrics import Metric, average_label, headline_metrics, summarize
from proactivebench.core.errors import ProactiveBenchError, PushError, hub_answer
from proactivebench.core.escapes import visible
from proactivebench.core.paths import read_file
from proactivebench.core.texts import dumps, loads, shown_json
from proactivebench.jobs.suite import is_suite_dir, read_suite_record
from proactivebench.run.rundir import (
    REPORT_DIR,
    RESULTS,
    RUN_CONFIG,
    SUITE_RECORD,
    SUMMARY,
    RunLines,
    RunLock,
    file_stamp,
    has_results,
    identity_differences,
    read_run_config,
    run_lines,
    summary_json,
    without_provenance,
)

REPO_TYPE = "dataset"
CARD = "README.md"
RUNS = "runs"
REPORTS = "reports"
#: A run's own report folder, pushed with the run.
RUN_REPORT = REPORT_DIR
#: What marks a directory as a report of `report` (no run.json beside).
REPORT_FILES = ("report.json", "report.html")
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_COMMIT = re.compile(r"[0-9a-f]{40}")
#: How many times a push reads the repo and commits when other commits keep landing between
#: the two (`_commit_on_head`), and the Hub's answer to a commit whose parent is no longer
#: the head ("A commit has happened since").
_TRIES = 5
_MOVED_ON = 412
_LOGIN = "log in with `hf auth login` or set HF_TOKEN to a token with write access"


@dataclass
class PushedRun:
    """One run as the card describes it: where it went, its run.json, and the summary of its
    lines as every reader counts them (`not_counted`: lines a reader leaves out)."""

    repo_path: str
    config: dict[str, Any]
    summary: dict[str, Any] | None
    not_counted: int = 0
    #: What a reader of the table must know (`cautions`): eval's warnings, and why the run is
    #: not comparable with the paper's published numbers.
    cautions: list[str] = field(default_factory=list)


@dataclass
class PushPlan:
    """What one push sends: each file (its repo path → the local file it comes from), the
    bytes sent for those not sent as the file is now (`contents`), the runs and reports it
    holds, and what the pusher should know (`notes`)."""

    files: dict[str, Path] = field(default_factory=dict)
    contents: dict[str, bytes] = field(default_factory=dict)
    runs: list[PushedRun] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Folders this push replaces whole though it may send no file there: a suite's
    #: `reports/<OUT>/` when its report is stale or missing (the repo's is of other lines).
    replaced: set[str] = field(default_factory=set)

    def add(self, repo_path: str, local: Path, content: bytes | None = None) -> None:
        """One file (`content`: the bytes to send instead of the file as it is then); two
        local files for one repo path (two runs of one name) are refused."""
        before = self.files.get(repo_path)
        if before is not None and before != local:
            raise PushError(
                f"{before} and {local} would both be {repo_path} in the repo: push them "
                "separately or rename one directory"
            )
        self.files[repo_path] = local
        if content is not None:
            self.contents[repo_path] = content


@dataclass(frozen=True)
class PushOutcome:
    """What a push did: the repo's URL, the commit, and what it holds now from this push."""

    url: str
    commit: str
    files: int
    runs: list[str]
    reports: list[str]
    #: What the pusher should know: a summary.json its lines contradict, a folder replaced.
    notes: list[str] = field(default_factory=list)


# --- what to send -------------------------------------------------------------------------


def plan_push(paths: Sequence[str | os.PathLike[str]]) -> PushPlan:
    """Every file of the runs, suites and reports named, with its path in the repo."""
    if not paths:
        raise PushError("nothing to push: name run directories, suite outputs or reports")
    plan = PushPlan()
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if not path.is_dir() or path.is_symlink():
            raise PushError(f"{path} is not a directory: name a run, a suite's output or a report")
        if path.resolve() in seen:  # named again (RUN and RUN/): pushed, counted and carded once
            continue
        seen.add(path.resolve())
        before = (set(plan.files), set(plan.replaced))
        _add_path(plan, path, path.resolve().name)
        _refuse_shared_folder(plan, before, path)
    return plan


def _add_path(plan: PushPlan, path: Path, name: str) -> None:
    """A run directory, a suite's output or a report, by what it holds."""
    if (path / RUN_CONFIG).is_file():
        _add_run(plan, path, f"{RUNS}/{name}")
    elif is_suite_dir(path):
        _add_suite(plan, path, name)
    elif any((path / f).is_file() for f in REPORT_FILES):
        _refuse_stale_report(path)
        _add_report(plan, path, f"{REPORTS}/{name}")
    else:
        raise PushError(
            f"{path} is neither a run directory ({RUN_CONFIG}), a suite's output (suite.json) "
            f"nor a report ({' or '.join(REPORT_FILES)})"
        )


def _refuse_shared_folder(plan: PushPlan, before: tuple[set[str], set[str]], path: Path) -> None:
    """Two directories named alike (a run and a suite's output, two reports) would fill one
    folder of the repo with the files of both: refused, naming the folder. `before`: the
    repo paths and the folders replaced planned before `path`'s."""
    files, replaced = before
    mine = {_folder_of(p) for p in plan.files if p not in files} | (plan.replaced - replaced)
    shared = sorted(mine & ({_folder_of(p) for p in files} | replaced))
    if shared:
        raise PushError(
            f"{path} would go to {shared[0]}/ in the repo, where another directory of this push "
            "goes: push them separately or rename one directory"
        )


def _add_run(plan: PushPlan, run_dir: Path, repo_path: str) -> None:
    config = read_run_config(run_dir)
    holder = RunLock.holder(run_dir)
    if holder is not None:  # its results are still being appended: a half-written run
        raise PushError(
            f"{run_dir} is in use by another run (PID {holder}): push it once that run ends"
        )
    if not has_results(run_dir):
        raise PushError(f"{run_dir} has no {RESULTS} yet: nothing to push")
    found, results = _counted_lines(run_dir, config)
    results, torn = _whole_lines(results)
    if torn:
        plan.notes.append(
            f"{run_dir / RESULTS} ends in a torn line ({torn} bytes without a newline: a write "
            "cut short), which no reader counts: pushed its whole lines only"
        )
    # summary.json as eval writes it, from the lines as they are now: a file written before
    # lines were moved out (or in) would publish numbers no reader of the pushed lines gives.
    summary = summarize(found.lines, model=str(config.get("model", "")))
    fresh = summary_json(summary).encode("utf-8")
    if _plain_file(run_dir / SUMMARY) and (run_dir / SUMMARY).read_bytes() != fresh:
        plan.notes.append(
            f"{run_dir / SUMMARY} is not what its {RESULTS} gives (lines moved or edited since "
            "it was written): pushed the summary its lines give"
        )
    if _plain_file(run_dir / RUN_CONFIG):
        plan.add(f"{repo_path}/{RUN_CONFIG}", run_dir / RUN_CONFIG)
    plan.add(f"{repo_path}/{RESULTS}", run_dir / RESULTS, results)
    plan.add(f"{repo_path}/{SUMMARY}", run_dir / SUMMARY, fresh)
    if _current_report(plan, run_dir / RUN_REPORT, [run_dir]):
        for local, relative in _files_under(run_dir / RUN_REPORT):
            plan.add(f"{repo_path}/{RUN_REPORT}/{relative}", local)
    plan.runs.append(
        PushedRun(repo_path, config, summary.as_dict(), cautions=cautions(run_dir, found))
    )


def cautions(run_dir: Path, found: RunLines | None = None) -> list[str]:
    """What the card says above a run's table, as `report` says it: the warnings its lines
    give (`report.measures.run_warnings`: unreadable answers, verdicts kept from an earlier
    judge...) and what makes it not comparable with the paper's rows (`report.comparable`:
    generated data, partial, settings the table does not have), and its average when that
    covers other scenarios than the paper's (`average_apart`). `found`: the run's lines as
    `run_lines` already gave them, not read again."""
    from proactivebench.benchmark.paper_results import paper_table
    from proactivebench.report.comparable import (
        COUNTERPARTS,
        average_apart,
        not_comparable,
        run_mode,
    )
    from proactivebench.report.measures import run_warnings_and_intervals
    from proactivebench.report.published import (
        PAPER_AVERAGE,
        counterpart,
        figure_name,
        table_number,
    )
    from proactivebench.report.published_figures import figure_counterpart
    from proactivebench.report.runs import load_run

    run = load_run(run_dir, found)  # read once: for the warnings and the comparability
    warnings, _ = run_warnings_and_intervals(run_dir, run)
    reasons = not_comparable(run)
    # The table or figure of its settings, as report --paper places it: none (shuffled
    # options, CoT...), or another than its mode's plain table (--all-samples is Table 4's,
    # a history run at 224 px Fig. 8's), whose scenarios its average is compared over.
    placed = counterpart(run)
    figure = figure_counterpart(run) if placed is None else None
    columns: list[str] | None = None
    if placed is None and figure is None:
        reasons.append("its settings are no table's or figure's of the paper")
    elif figure is not None:
        printed = list(paper_table(figure[0])["columns"])
        columns = printed[:-1] if printed[-1] == PAPER_AVERAGE else []
        warnings = [
            *warnings,
            f"its settings are {figure_name(figure[0])}'s: its numbers compare with that "
            "figure's averages over ten models",
        ]
    elif placed != COUNTERPARTS.get((run_mode(run), None)):  # a plain run's table
        warnings = [
            *warnings,
            f"its settings are {table_number(placed)}'s: its numbers compare with that "
            "table's rows",
        ]
    if reasons:
        warnings = [
            *warnings,
            "not comparable with the paper's published numbers: " + "; ".join(reasons),
        ]
    # As report --paper sets the average apart (Fig. 9 prints none: nothing to compare).
    apart = average_apart(run, columns) if columns != [] else None
    if apart is not None:
        warnings = [*warnings, f"the average is not comparable with the paper's: {apart}"]
    return warnings


def _counted_lines(run_dir: Path, config: dict[str, Any]) -> tuple[RunLines, bytes]:
    """The lines every counting command reads (`run_lines`) and the bytes of results.jsonl
    they were read from, which are what is sent: a line appended in between would otherwise
    be published beside a summary that does not count it."""
    path = run_dir / RESULTS
    before = file_stamp(path)
    # The same reading every counting command makes (`run_lines`): a line that `report`,
    # `show` and a resume leave out would be published as the run's all the same, beside a
    # card whose table does not count it.
    found = run_lines(run_dir, config)
    if found.rejected:
        first = found.rejected[0].removesuffix("; not counted")
        many = found.left_out
        raise PushError(
            f"{run_dir}: {many} line(s) of {RESULTS} cannot be counted (the "
            f"first: {first}); fix or move them out of the run before pushing"
        )
    try:
        data = read_file(path)  # as run_lines read it
    except OSError as exc:
        raise PushError(f"cannot read {path}: {exc.strerror or exc}") from None
    if file_stamp(path) != before:
        raise PushError(f"{path} changed while push read it: push again once it is written")
    return found, data


def _whole_lines(data: bytes) -> tuple[bytes, int]:
    """`data` up to its last newline, and how many bytes followed it: a torn last line is
    counted by no reader (`numbered_lines`), and published it would end the Hub's file in a
    fragment of JSON. Blank bytes after the last newline are kept (0)."""
    cut = data.rfind(b"\n") + 1
    if not data[cut:].strip():
        return data, 0
    return data[:cut], len(data) - cut


def _add_suite(plan: PushPlan, out_dir: Path, name: str) -> None:
    """Every experiment of suite.json that has a run directory, and the suite's report. One
    it lists whose run is gone (no folder; lines without run.json) is refused: `runs/<OUT>/`
    is replaced whole, so it would be deleted from the Hub, or never published, unsaid."""
    ids = [entry["id"] for entry in read_suite_record(out_dir).get("experiments", [])]
    lost = [i for i in ids if _lost(out_dir / i)]
    if lost:
        raise PushError(
            f"{out_dir / SUITE_RECORD} lists the experiment {visible(lost[0])} but "
            f"{out_dir / lost[0]} holds no run ({RUN_CONFIG}){_more(lost)}: pushed, "
            f"runs/{name}/{lost[0]}/ would be deleted from the repo; put its run directory "
            f"back, or remove its entry from {SUITE_RECORD} to publish the suite without it"
        )
    played = [i for i in ids if (out_dir / i / RUN_CONFIG).is_file()]
    if not played:
        raise PushError(f"{out_dir} holds no experiment's run yet: nothing to push")
    for experiment in played:
        _add_run(plan, out_dir / experiment, f"{RUNS}/{name}/{experiment}")
    _tell_two_judges(plan.runs[-len(played) :], played)
    # The suite's report folder is replaced whole even when no report of it is sent: the one
    # an earlier push left is of the lines as they were then (its links name files this push
    # replaces), and would stay published, and linked from the card, beside these.
    plan.replaced.add(f"{REPORTS}/{name}")
    if _current_report(plan, out_dir / RUN_REPORT, [out_dir / e for e in played]):
        _add_report(plan, out_dir / RUN_REPORT, f"{REPORTS}/{name}")


def _tell_two_judges(runs: list[PushedRun], ids: list[str]) -> None:
    """The suite's judged experiments naming different judges: each one's card section says
    so, as the suite's report does (`comparable.judges_apart`), since the card sets them side
    by side and their differences compare the judges as much as the experiments."""
    judges = {
        ident: shown_json(run.config.get("settings", {}).get("judge"))
        for ident, run in zip(ids, runs, strict=True)
        if isinstance(run.config.get("settings"), dict) and run.config["settings"].get("judge")
    }
    if len(set(judges.values())) < 2:
        return
    named = "; ".join(f"{ident}: {judge}" for ident, judge in judges.items())
    told = (
        f"the suite's judged experiments name different judges ({named}): their judged rates, "
        "and the differences between them, compare the judges as much as the experiments"
    )
    for ident, run in zip(ids, runs, strict=True):
        if ident in judges:
            run.cautions.append(told)


def _lost(run_dir: Path) -> bool:
    """Whether a suite's experiment lost its run: no folder, or lines without run.json (a
    folder without either is a run that started and wrote nothing: nothing to lose)."""
    if not run_dir.is_dir():
        return True
    return not (run_dir / RUN_CONFIG).is_file() and (run_dir / RESULTS).exists()


def _more(ids: list[str]) -> str:
    """' (and N more: a, b)' naming the other experiments beside the first."""
    rest = ids[1:]
    return f" (and {len(rest)} more: {visible(', '.join(rest))})" if rest else ""


def _current_report(plan: PushPlan, report_dir: Path, run_dirs: list[Path]) -> bool:
    """Whether the report of a run or a suite is pushed: only when it was built from the
    lines as they are (`built_from_runs_as_they_are`); one built before is named in a note and
    left out (its numbers would contradict the pushed lines and the card)."""
    from proactivebench.report.build import built_from_runs_as_they_are

    if not report_dir.is_dir():
        return False
    if built_from_runs_as_they_are(report_dir, run_dirs):
        return True
    plan.notes.append(
        f"{report_dir} was not built from the lines as they are now (or does not say what it "
        f"was built from): not pushed; `proactivebench report {report_dir.parent}` rewrites "
        "it, then push again"
    )
    return False


def _refuse_stale_report(report_dir: Path) -> None:
    """A report directory named on its own (`report A B --out DIR`) is pushed only when it
    was built from its runs' lines as they are now, the rule of `_current_report`; named by
    the user, it is refused rather than left out: its runs (as `.built-from.json` records
    them) not at hand, or changed since, or not recorded at all."""
    from proactivebench.report.build import BUILT_FROM, built_from_runs_as_they_are

    runs = _report_inputs(report_dir / BUILT_FROM)
    if runs is None:
        raise PushError(
            f"{report_dir} does not say what it was built from ({BUILT_FROM} missing or "
            "unreadable): rebuild it with `proactivebench report RUN... --out "
            f"{report_dir}`, then push again"
        )
    quoted = " ".join(shlex.quote(run) for run in runs)
    rebuild = f"`proactivebench report {quoted} --out {shlex.quote(str(report_dir))}`"
    gone = [run for run in runs if not Path(run).is_dir()]
    if gone:
        raise PushError(
            f"{report_dir} was built from runs that are not at hand ({gone[0]} moved or "
            f"deleted): it cannot be told to be their lines'; rebuild it with {rebuild} "
            "where they are, then push again"
        )
    if not built_from_runs_as_they_are(report_dir, [Path(run) for run in runs]):
        raise PushError(
            f"{report_dir} was not built from its runs' lines as they are now (changed since): "
            f"rebuild it with {rebuild} (and the options it was built with), then push again"
        )


def _report_inputs(record: Path) -> list[str] | None:
    """The run directories a report's record (`.built-from.json`) says it was built from;
    None when it is missing or not such a record."""
    try:
        runs = loads(read_file(record).decode("utf-8"))["inputs"]["runs"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [str(run) for run in runs] if isinstance(runs, dict) and runs else None


def _add_report(plan: PushPlan, report_dir: Path, repo_path: str) -> None:
    for local, relative in _files_under(report_dir):
        plan.add(f"{repo_path}/{relative}", local)
    plan.reports.append(repo_path)


def _plain_file(path: Path) -> bool:
    """A regular file, not a link (a link could point anywhere: nothing of it is sent)."""
    return path.is_file() and not path.is_symlink()


def _files_under(root: Path) -> Iterator[tuple[Path, str]]:
    """Every regular file under `root` (links and hidden entries left out), with its path
    relative to `root` in POSIX form, sorted."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            local = Path(folder) / name
            if not name.startswith(".") and _plain_file(local):
                found.append((local, PurePosixPath(*local.relative_to(root).parts).as_posix()))
    yield from sorted(found, key=lambda item: item[1])


# --- the dataset card ---------------------------------------------------------------------


def dataset_card(
    plan: PushPlan,
    repo_id: str,
    earlier: Sequence[PushedRun] = (),
    earlier_reports: Sequence[str] = (),
) -> str:
    """README.md of the repo: YAML front matter the Hub reads (no viewer: the files are runs,
    not one table), then each run's model, settings, data and summary table: this push's runs
    and the `earlier` ones the repo holds, in the order of their paths."""
    from huggingface_hub import DatasetCardData

    data = DatasetCardData(
        pretty_name=f"ProactiveBench results: {repo_id}", tags=["proactivebench"]
    )
    front = data.to_yaml().rstrip("\n") + "\nviewer: false\n"
    lines = [
        "---",
        front.rstrip("\n"),
        "---",
        "",
        f"# ProactiveBench results: {repo_id}",
        "",
        "Runs of ProactiveBench (De Min et al., 2026) pushed with `proactivebench push`. "
        "Each run's folder holds `run.json` (model, data, settings, "
        "provenance), `results.jsonl` (one line per episode) and `summary.json`; "
        "`proactivebench report` reads a downloaded run as it reads a local one.",
        "",
    ]
    for run in sorted([*plan.runs, *earlier], key=lambda r: r.repo_path):
        lines += _run_section(run)
    reports = sorted({*plan.reports, *earlier_reports})
    if reports:
        lines += ["## Reports", ""]
        lines += [f"- [{_code(r)}]({quote(r)}/report.html)" for r in reports]
        lines.append("")
    return "\n".join(lines)


def _run_section(run: PushedRun) -> list[str]:
    config = run.config
    settings = config.get("settings") if isinstance(config.get("settings"), dict) else {}
    lines = [
        f"## {_code(run.repo_path)}",
        "",
        f"- model: {_code(str(config.get('model', '?')))}",
        f"- settings: {_code(_compact(settings))}",
    ]
    if config.get("judge") is not None:
        lines.append(f"- judge: {_code(_compact(config['judge']))}")
    lines.append(f"- data: {_data_text(config)}")
    lines.append("")
    if run.summary is None:
        return [*lines, f"No {RESULTS} in this run: no summary table.", ""]
    if run.cautions:
        lines += ["Read with care:", "", *(f"- {_prose(c)}" for c in run.cautions), ""]
    if run.not_counted:
        lines += [
            f"{run.not_counted} line(s) of {RESULTS} are not counted (not result lines "
            "of this run: `proactivebench report` names them).",
            "",
        ]
    return [*lines, *_summary_table(run.summary, settings.get("mode") == "oeg"), ""]


def _data_text(config: dict[str, Any]) -> str:
    """The data directory's name (its full path is the pusher's machine's) and its revision
    when run.json records one."""
    data_dir = config.get("data_dir")
    name = PurePosixPath(str(data_dir).replace("\\", "/")).name if data_dir else "?"
    text = _code(name)
    revision = config.get("data_revision")
    return f"{text} (revision {_code(str(revision))})" if revision else text


def _summary_table(summary: dict[str, Any], oeg: bool) -> list[str]:
    """summary.json's headline rates per scenario and their average, as the terminal's table
    shows them (headings and number formats from metrics.py)."""
    metrics = headline_metrics(oeg)
    head = ["scenario", "n", *(m.heading for m in metrics), "errors"]
    rows = []
    scenarios = summary.get("scenarios")
    for name, score in scenarios.items() if isinstance(scenarios, dict) else ():
        rows.append(_row(str(name), score, metrics))
    if isinstance(summary.get("average"), dict):
        rows.append(_row(_average_label(scenarios), summary["average"], metrics))
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _average_label(scenarios: Any) -> str:
    """The average row's name as eval's table gives it (`metrics.average_label`, read from
    summary.json's scenarios as `Summary.average_label` reads them): "average" over the
    paper's seven only, so that a mean of two scenarios is never read as the paper's."""
    scores = scenarios if isinstance(scenarios, dict) else {}
    scored = {str(name): isinstance(s, dict) and bool(s.get("n")) for name, s in scores.items()}
    return average_label(
        [name for name, ok in scored.items() if ok], [name for name, ok in scored.items() if not ok]
    )


def _row(name: str, score: Any, metrics: Sequence[Metric]) -> list[str]:
    score = score if isinstance(score, dict) else {}
    cells = [_cell(name), _number(score.get("n"))]
    for metric in metrics:
        value = score.get(metric.key)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        # A NaN or an infinity is no rate: shown as missing, never as "nan %".
        cells.append(metric.text(float(value)) if ok and math.isfinite(value) else "–")
    return [*cells, _number(score.get("errors"))]


def _number(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "–"


def _compact(value: Any) -> str:
    return dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


def _code(text: str) -> str:
    """Text from a run's files (folder names, run.json's model, settings and data) as an inert
    Markdown code span: control, format and bidirectional characters written as their escapes
    (`escapes.visible`: an override would show another name than the file holds), on one
    line, fenced by one backtick more than its longest run of backticks (CommonMark), so that
    a backtick in it shows as it is. A `|` stays as it is: outside a table it is no markup,
    and a backslash before it would be shown (`_cell` is for table cells)."""
    inner = _one_line(text)
    fence = "`" * (max(map(len, re.findall(r"`+", inner)), default=0) + 1)
    # A span's content that begins or ends with a backtick would merge with the fence: a
    # space on each side, which CommonMark strips.
    padded = f" {inner} " if inner.startswith("`") or inner.endswith("`") else inner
    return f"{fence}{padded}{fence}"


def _one_line(text: str) -> str:
    """`escapes.visible` text on one line: runs of white space as one space."""
    return " ".join(visible(text).split())


def _cell(text: str) -> str:
    """Text of a table cell made inert: `_one_line`, a backtick (which would open a code
    span) written `'`, and `|`, which would end the cell, written `\\|`, which the table shows
    as `|`."""
    return _one_line(text).replace("`", "'").replace("|", "\\|")


#: Characters Markdown reads as markup in running text.
_MARKUP = re.compile(r"([\\`*_\[\]<>|#!~])")


def _prose(text: str) -> str:
    """Text the tool wrote from a run (a warning naming its files or answers) made inert in
    running Markdown: `escapes.visible`, one line, and every markup character escaped."""
    return _MARKUP.sub(r"\\\1", " ".join(visible(text).split()))


# --- the push -----------------------------------------------------------------------------


def push(
    paths: Sequence[str | os.PathLike[str]],
    repo_id: str,
    *,
    private: bool = False,
    token: str | None = None,
) -> PushOutcome:
    """Push runs, suites' outputs and reports to the dataset repo `repo_id` (created when
    missing, private with `private`; an existing repo keeps its visibility), in one commit
    with a regenerated card. `token`: default the logged-in one (`hf auth login`, HF_TOKEN)."""
    if not _REPO_ID.fullmatch(repo_id):
        raise PushError(f"--repo must be OWNER/NAME (a dataset repo on the Hub), not {repo_id!r}")
    plan = plan_push(paths)
    from huggingface_hub import HfApi, constants, get_token

    token = token or get_token()
    if not token:
        raise PushError(f"no Hugging Face token to push to {repo_id}: {_LOGIN}")
    api = HfApi(token=token)
    with _hub_errors(repo_id, constants.ENDPOINT), _quiet_library():
        with _hub_answer(f"the repo {repo_id}"):
            url = api.create_repo(
                repo_id, repo_type=REPO_TYPE, private=private or None, exist_ok=True
            )
        commit, count, notes = _commit_on_head(api, repo_id, plan)
    return PushOutcome(
        url=str(url),
        commit=commit,
        files=count,
        runs=[run.repo_path for run in plan.runs],
        reports=list(plan.reports),
        notes=[*plan.notes, *notes],
    )


def _commit_on_head(api: Any, repo_id: str, plan: PushPlan) -> tuple[str, int, list[str]]:
    """The push's one commit (`_commit_once`), made on the head the card and the deletions
    were computed from. Another commit landing in between (a second push at the same moment)
    would otherwise mix them: its run's report beside this run's lines, a card without its
    run. The Hub refuses such a commit (HTTP 412): the repo is read again and the commit
    recomputed, at most `_TRIES` times, then refused in one line."""
    from huggingface_hub import errors

    for _ in range(_TRIES):
        try:
            return _commit_once(api, repo_id, plan)
        except errors.HfHubHTTPError as exc:
            if exc.response is None or exc.response.status_code != _MOVED_ON:
                raise
    raise PushError(
        f"{repo_id} changed {_TRIES} times while push read it (other pushes to it at the same "
        "moment): nothing pushed; push again once they are done"
    )


def _commit_once(api: Any, repo_id: str, plan: PushPlan) -> tuple[str, int, list[str]]:
    """Read the repo at its head, compute from it the card, the summaries to refresh and the
    files to delete, and commit all of it with that head as parent (`parent_commit`): the
    commit's id, how many operations it held, and what the pusher should know."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    with tempfile.TemporaryDirectory(prefix="proactivebench-push-") as scratch:
        repo = _RepoFiles(api, repo_id, Path(scratch))
        _refuse_a_run_over_a_suite(repo, plan)
        earlier, refreshed = _earlier_runs(repo, plan)
        stale = _stale_files(set(repo.held), plan)
        notes = _replaced(repo, plan, stale)
    notes += [
        f"{p} in {repo_id} was not what the lines beside it give: replaced by theirs"
        for p in sorted(refreshed)
        if p in repo.held
    ]
    card = dataset_card(plan, repo_id, earlier, _earlier_reports(repo, plan))
    sent: dict[str, bytes | str] = {CARD: card.encode("utf-8")}
    sent |= {p: plan.contents.get(p, str(local)) for p, local in plan.files.items()}
    sent |= refreshed
    operations: list[Any] = [CommitOperationAdd(p, what) for p, what in sorted(sent.items())]
    operations += [CommitOperationDelete(p) for p in stale]
    named = [run.repo_path for run in plan.runs] + plan.reports
    message = "proactivebench push: " + visible(", ".join(named))
    with _hub_answer(f"the commit to {repo_id}"):
        commit = api.create_commit(
            repo_id,
            operations,
            commit_message=message[:200],
            repo_type=REPO_TYPE,
            parent_commit=repo.head,
        )
    return str(commit.oid), len(operations), notes


class _RepoFiles:
    """What the repo holds before this push, at its head commit (`head`, None where the Hub
    names none): each file's path and git blob id, and files of it read back into `scratch`
    (at their repo paths), all of that one commit."""

    def __init__(self, api: Any, repo_id: str, scratch: Path) -> None:
        self.api, self.repo_id, self.scratch = api, repo_id, scratch
        with _hub_answer(f"the files of {repo_id}"):
            sha = api.repo_info(repo_id, repo_type=REPO_TYPE).sha
            self.head: str | None = sha if isinstance(sha, str) and _COMMIT.fullmatch(sha) else None
            entries = list(
                api.list_repo_tree(repo_id, recursive=True, repo_type=REPO_TYPE, revision=self.head)
            )
            self.held: dict[str, str | None] = {
                e.path: e.blob_id for e in entries if hasattr(e, "blob_id")
            }

    def download(self, repo_path: str) -> Path | None:
        """The file read back (under `scratch`); None when the repo has no such file."""
        if repo_path not in self.held:
            return None
        with _hub_answer(f"{self.repo_id}/{repo_path}"):
            return Path(
                self.api.hf_hub_download(
                    self.repo_id,
                    repo_path,
                    repo_type=REPO_TYPE,
                    revision=self.head,
                    local_dir=self.scratch,
                )
            )

    def read_json(self, repo_path: str) -> Any:
        """The file's JSON value; None when the repo has no such file or it is not JSON."""
        local = self.download(repo_path)
        if local is None:
            return None
        try:
            return loads(local.read_bytes().decode("utf-8"))
        except ValueError:
            return None

    def holds_as(self, repo_path: str, data: bytes) -> bool:
        """Whether the repo holds `data` at `repo_path` (its git blob id, as the Hub lists it)."""
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        return self.held.get(repo_path) == blob


def _refuse_a_run_over_a_suite(repo: _RepoFiles, plan: PushPlan) -> None:
    """Refuse a single run pushed where the repo holds a suite's experiments under the same
    name (`runs/NAME/<id>/run.json`): replacing the folder whole would delete the suite's runs
    and leave its report (`reports/NAME/`) beside another model's run, which the card would
    then link side by side. A suite pushed over a single run replaces both folders."""
    for run in plan.runs:
        if run.repo_path.count("/") != 1:
            continue  # an experiment of a suite this push sends
        held = sorted(
            p
            for p in repo.held
            if p.startswith(f"{run.repo_path}/")
            and p.endswith(f"/{RUN_CONFIG}")
            and p.count("/") == 3
        )
        if held:
            raise PushError(
                f"{run.repo_path} in {repo.repo_id} holds a suite's experiments "
                f"({len(held)}, e.g. {held[0]}): pushing the run "
                f"{visible(run.repo_path.split('/', 1)[1])} there would delete them and leave "
                "the suite's report beside it; rename the run's directory, or push the suite "
                "again"
            )


def _folders(plan: PushPlan) -> set[str]:
    """The folders this push replaces whole: `runs/NAME` and `reports/NAME` of every file,
    and those replaced without a file (`PushPlan.replaced`)."""
    return {_folder_of(p) for p in plan.files} | plan.replaced


def _folder_of(repo_path: str) -> str:
    """The folder a pushed file belongs to: `runs/NAME` or `reports/NAME`."""
    return "/".join(repo_path.split("/")[:2])


def _under(repo_path: str, folders: set[str]) -> bool:
    return any(repo_path.startswith(f"{folder}/") for folder in folders)


def _stale_files(held: set[str], plan: PushPlan) -> list[str]:
    """Files an earlier push left in a folder this push replaces and this push does not hold:
    deleted in the same commit (kept, they would mix two runs: one's lines, another's report)."""
    folders = _folders(plan)
    return sorted(p for p in held if _under(p, folders) and p not in plan.files)


def _replaced(repo: _RepoFiles, plan: PushPlan, stale: list[str]) -> list[str]:
    """What the pusher should know of the folders replaced: a run pushed where the repo held
    another one (its run.json's identity differs), and the files removed."""
    notes = []
    for run in plan.runs:
        old = repo.read_json(f"{run.repo_path}/{RUN_CONFIG}")
        if not isinstance(old, dict):
            continue
        differences = identity_differences(without_provenance(old), without_provenance(run.config))
        if differences:
            shown = "; ".join(differences[:3]) + ("; ..." if len(differences) > 3 else "")
            notes.append(
                f"{run.repo_path} in {repo.repo_id} held another run ({shown}): replaced by this "
                "one (rename the local directory and push again to keep both)"
            )
    for folder in sorted(_folders(plan)):
        gone = [p for p in stale if p.startswith(f"{folder}/")]
        if gone:
            notes.append(
                f"{folder}: {len(gone)} file(s) of an earlier push that this one does not hold "
                f"deleted (the first: {gone[0]})"
            )
    return notes


def _earlier_runs(repo: _RepoFiles, plan: PushPlan) -> tuple[list[PushedRun], dict[str, bytes]]:
    """The runs the repo holds from earlier pushes outside the folders this push replaces, read
    back so that the regenerated card still describes them, with their tables computed from
    their lines as this push's are (a summary.json pushed by an earlier version, or edited on
    the Hub, is not taken on trust); and each such summary.json the repo does not hold as its
    lines give it, to send. A run.json there that is not ours to read (not JSON, not an
    object) leaves its run out of the card."""
    folders = _folders(plan)
    suffix = f"/{RUN_CONFIG}"
    earlier, refreshed = [], {}
    for config_path in sorted(repo.held):
        run_path = config_path.removesuffix(suffix)
        if not (config_path.startswith(f"{RUNS}/") and config_path.endswith(suffix)):
            continue
        if _under(config_path, folders) or f"/{RUN_REPORT}/" in f"{run_path}/":
            continue
        config = repo.read_json(config_path)
        if not isinstance(config, dict):
            continue
        run, summary = _earlier_run(repo, run_path, config)
        earlier.append(run)
        if summary is not None and not repo.holds_as(f"{run_path}/{SUMMARY}", summary):
            refreshed[f"{run_path}/{SUMMARY}"] = summary
    return earlier, refreshed


def _earlier_reports(repo: _RepoFiles, plan: PushPlan) -> list[str]:
    """The reports earlier pushes left in the repo (`reports/NAME/report.html`) outside the
    folders this push replaces: the card still links them."""
    folders = _folders(plan)
    page = "/report.html"
    return sorted(
        p.removesuffix(page)
        for p in repo.held
        if p.startswith(f"{REPORTS}/") and p.count("/") == 2 and p.endswith(page)
        if not _under(p, folders)
    )


def _earlier_run(
    repo: _RepoFiles, run_path: str, config: dict[str, Any]
) -> tuple[PushedRun, bytes | None]:
    """A run of the repo as the card shows it, its lines read back and counted by `run_lines`,
    and its summary.json's bytes as those lines give it (None: the repo holds no lines)."""
    if repo.download(f"{run_path}/{RESULTS}") is None:
        return PushedRun(run_path, config, None), None
    local = repo.scratch / run_path
    found = run_lines(local, config)
    summary = summarize(found.lines, model=str(config.get("model", "")))
    not_counted = found.left_out
    run = PushedRun(run_path, config, summary.as_dict(), not_counted=not_counted)
    if (local / RUN_CONFIG).is_file():
        # As `report` does: lines left out are counted in the sentence under the cautions
        # (`not_counted`), and the rest of the run is read with care all the same.
        shown = [w for w in cautions(local, found) if w not in found.rejected]
        run.cautions = [w.replace(str(local), run_path) for w in shown]
    return run, summary_json(summary).encode("utf-8")


def _hub_answer(what: str) -> AbstractContextManager[None]:
    """Around one huggingface_hub call (`errors.hub_answer`): an answer about `what` that is
    not the Hub's fails inside the library as a JSONDecodeError, TypeError, KeyError or
    AttributeError, told as one `PushError` (a ValueError of the library's own checks is
    `_hub_errors`' to tell)."""
    from huggingface_hub import constants

    kinds = (json.JSONDecodeError, TypeError, KeyError, AttributeError)
    return hub_answer(constants.ENDPOINT, what, PushError, kinds)


@contextmanager
def _quiet_library() -> Iterator[None]:
    """The library's own warnings off while it pushes: a rerun that changes nothing is not
    a problem (it then makes no commit), and our one line says what was pushed."""
    hub_logger = logging.getLogger("huggingface_hub")
    before = hub_logger.level
    hub_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hub_logger.setLevel(before)


@contextmanager
def _hub_errors(repo_id: str, endpoint: str) -> Iterator[None]:
    """The library's and the network's exceptions as one `PushError` line each."""
    import httpx2
    from huggingface_hub import errors

    where = f"dataset {repo_id} on {endpoint}"
    try:
        yield
    except ProactiveBenchError:
        raise
    except errors.OfflineModeIsEnabled:
        raise PushError(f"HF_HUB_OFFLINE is set: unset it to push to {repo_id}") from None
    except errors.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status == 401:
            raise PushError(
                f"{endpoint} refused the token (HTTP 401) for {where}: {_LOGIN}"
            ) from None
        if status == 403:
            raise PushError(
                f"no permission to create or write {where} (HTTP 403): create the repo on the "
                f"Hub or use a token allowed to write to it ({_LOGIN})"
            ) from None
        if status == 404 or isinstance(exc, errors.RepositoryNotFoundError):
            raise PushError(
                f"{where} not found and not created: check OWNER/NAME, or create it on the Hub "
                f"({_LOGIN})"
            ) from None
        what = f"HTTP {status}" if status is not None else str(exc).splitlines()[0]
        raise PushError(
            f"{endpoint} answered {what} while pushing to {repo_id}; try again later"
        ) from None
    except errors.HFValidationError as exc:
        raise PushError(f"invalid repo {repo_id!r}: {exc}") from None
    except ValueError as exc:  # the card refused by the Hub's metadata check
        raise PushError(f"{where} refused the push: {str(exc).splitlines()[0]}") from None
    except httpx2.TransportError as exc:
        raise PushError(
            f"cannot reach {endpoint} to push to {repo_id} ({exc or type(exc).__name__}); check "
            "the network or HF_ENDPOINT, then rerun"
        ) from None
    except OSError as exc:
        where_file = f": {exc.filename}" if exc.filename else ""
        raise PushError(f"cannot read a file to push: {exc.strerror or exc}{where_file}") from None
