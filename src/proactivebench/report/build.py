"""Writing a report: read the runs, measure them, and write every table, plot and page.

The files of a report directory:

- `report.md`, `report.json`, `report.html` (one self-contained page with the episode viewer);
- `tables/<name>.csv` and `tables/<name>.tex` for each table;
- `plots/scenarios.png`, `plots/accuracy_vs_ps.png`, `plots/actions.png` (with an MCQA
  run: the action distribution), `plots/size.png` (with two or more runs of known size);
- `.built-from.json`: what the report was built from (`stat` of each run's results.jsonl and
  run.json, the options, the report's format) and `stat` of every file it wrote, so that
  `eval` on a run nothing has changed since leaves the report alone (`write_report(...,
  if_changed=True)`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from proactivebench.benchmark.metrics import MCQA_METRICS, OEG_METRICS, average_label
from proactivebench.benchmark.paper_results import paper_model_named, recognise_model
from proactivebench.core.errors import (
    NothingToDoError,
    ProactiveBenchError,
    RunMismatchError,
    WriteError,
)
from proactivebench.core.paths import (
    open_to_write,
    read_file,
    staged_folder,
    thumbnail_cache_path,
    write_whole,
)
from proactivebench.core.provenance import package_version
from proactivebench.core.texts import dumps, loads
from proactivebench.models import SPEC_KIND
from proactivebench.report import plots
from proactivebench.report.agreement import agreement_table
from proactivebench.report.comparable import (
    average_apart,
    contradiction,
    judges_apart,
    not_comparable,
)
from proactivebench.report.findings import (
    MIN_SIZED,
    Finding,
    finding_line,
    findings_dict,
    size_finding,
    suite_findings,
)
from proactivebench.report.html import finite_json, legend_html, render_html
from proactivebench.report.inert import markdown as md
from proactivebench.report.measures import (
    INTERVAL_METHODS,
    Comparison,
    Intervals,
    RunMeasures,
    action_changes,
    checked_intervals,
    compare_runs,
    intervals_of,
    measure_run,
    metrics_of,
    run_warnings,
    size_correlations,
)
from proactivebench.report.outcome import ReportOutcome
from proactivebench.report.paper_layout import Layout
from proactivebench.report.published import (
    AVERAGE_APART,
    PaperComparison,
    compare_with_paper,
    unranked_note,
)
from proactivebench.report.published_figures import FigureComparison, compare_with_figures
from proactivebench.report.runs import Run, label_apart, load_runs
from proactivebench.report.tables import (
    Table,
    actions_change_table,
    actions_table,
    comparison_table,
    cross_table,
    run_table,
    to_csv,
    to_latex,
    to_markdown,
    usage_table,
)
from proactivebench.report.thumbcache import ThumbCache
from proactivebench.report.thumbs import Thumbnails, start_all
from proactivebench.run.datarecords import other_data
from proactivebench.run.rundir import (
    REPORT_DIR,
    RESULTS,
    RUN_CONFIG,
    RunLock,
    file_stamp,
)

#: The report's format: raise it when the same runs give other report files, so that reports
#: written before are rewritten by the next `eval` rather than left alone as up to date.
#: 3: no size-plot note for runs of one model or of people; CSV text cells kept from formulas.
#: 4: Wilson intervals for proportions (`measures.rate_interval`).
#: 5: a suite's report states the paper's findings first (`report.findings`).
REPORT_FORMAT = 5
#: What a report was built from (`_BuiltFrom`), in the report directory.
BUILT_FROM = ".built-from.json"


def _images_of(runs: Sequence[Run], cache: ThumbCache | None) -> dict[str, Thumbnails | None]:
    """One thumbnail maker per scenario, from the data directory of the first run that has
    the scenario (runs compared over the same samples share their data)."""
    by_dir: dict[Path, Thumbnails] = {}
    found: dict[str, Thumbnails | None] = {}
    for run in runs:
        data = run.data_dir
        thumbs = None
        if data is not None:
            thumbs = by_dir.get(data) or by_dir.setdefault(data, Thumbnails(data, cache=cache))
        for scenario in run.by_scenario:
            if found.get(scenario) is None:
                found[scenario] = thumbs
    return found


def _shows_images(run: Run, thumbs: Mapping[str, Thumbnails | None]) -> bool:
    """Whether any scenario of `run` has a data directory to make thumbnails from."""
    return any(t is not None and t.available for s, t in thumbs.items() if s in run.by_scenario)


@dataclass
class _Files:
    """Writes the report's files into `stage` (a `staged_folder` of the report directory),
    recording each under the name it will have in `out`."""

    stage: Path
    out: Path
    outcome: ReportOutcome

    def write(self, name: str, content: str | bytes) -> None:
        path = self.stage / name
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(open_to_write(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as f:
                f.write(data)
        except OSError as exc:
            raise WriteError(self.out / name, exc) from None
        self.outcome.files.append(self.out / name)


def _run_dir_holding(out: Path) -> Path | None:
    """The run directory a report into `out` writes into (`RUN/report`, or a run directory
    itself), which it must hold as every writer does; None for a folder of its own."""
    for folder in (out, out.parent):
        if (folder / RUN_CONFIG).is_file():
            return folder
    return None


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    vs: str | Path | None = None,
    params: Mapping[str, float] | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    title: str | None = None,
    allow_empty: bool = True,
    if_changed: bool = False,
    thumb_cache: str | Path | Literal["default"] | None = "default",
    paper: bool = False,
    paper_model: str | None = None,
    layout: Layout | None = None,
    plot_helper: PlotHelper | None = None,
) -> ReportOutcome:
    """Read `run_dirs` (and the `vs` run), and write the report into `out_dir` (default: the
    one run's `report/` folder).

    `thumb_cache` keeps the episode viewer's thumbnails across reports (a SQLite file; by
    default `paths.thumbnail_cache_path()`, beside the response cache); None makes them all.

    A run without episodes is reported with a warning; when every run is empty and not
    `allow_empty` (the `report` command), there is nothing to report and that is an error.
    `eval` allows it: its run's report is written whatever the run holds. With `if_changed`
    (`eval`), a report built from the same runs and options, whose files are as it wrote them,
    is left alone (`ReportOutcome.unchanged`); any change rewrites it.

    `paper` places the runs among the paper's published rows (`report.published`);
    `paper_model` (which implies it) names the paper's model the runs evaluated. `layout`
    (`Layout`: a suite's report, `suite.write_suite_report`) orders the report as the paper
    is ordered, places each run beside the table its caller names, and adds its tables and
    notes. `plot_helper` draws some of the plots in another process meanwhile (`PlotHelper`,
    `report.worker`): the report is the same."""
    if not run_dirs:
        raise ProactiveBenchError("report needs at least one run directory")
    if out_dir is None:
        if len(run_dirs) > 1:
            raise ProactiveBenchError("several runs: say where the report goes with --out DIR")
        out_dir = Path(run_dirs[0]) / REPORT_DIR
    out = Path(out_dir)
    holder = _run_dir_holding(out)
    if thumb_cache == "default":
        thumb_cache = thumbnail_cache_path()
    options = {"params": dict(params or {}), "seed": seed, "n_resamples": n_resamples}
    options.update(
        title=title, vs=str(vs) if vs is not None else None, runs=list(map(str, run_dirs))
    )
    paper = paper or paper_model is not None
    published = PaperOptions(paper_model) if paper else None
    if published is not None:  # only then: a report without --paper keeps its stamp
        published.check()
        options.update(paper=True, paper_model=paper_model)
    if layout is not None:
        options.update(layout=layout.stamp())
    inputs = _BuiltFrom.inputs([*run_dirs, *([vs] if vs is not None else [])], options)
    with RunLock(holder) if holder is not None else contextlib.nullcontext():
        built = _BuiltFrom.read(out, inputs) if if_changed else None
        if built is not None:
            return dataclasses.replace(built.outcome(out), runs=list(map(Path, run_dirs)))
        with _opened(thumb_cache) as cache:
            outcome = _write_report(
                run_dirs,
                out,
                vs,
                params,
                seed,
                n_resamples,
                title,
                allow_empty,
                cache,
                published,
                layout,
                plot_helper,
            )
        built = _BuiltFrom(
            inputs, outcome.notes, outcome.warnings, outcome.intervals, outcome.findings
        )
        built.write(out, outcome.files)
        outcome.runs = list(map(Path, run_dirs))
        return outcome


def built_from_runs_as_they_are(out: Path, run_dirs: Sequence[Path]) -> bool:
    """Whether the report in `out` was built from `run_dirs` (in any order) as their
    results.jsonl and run.json are now: each file's size and modification time, which a copy
    of the folders keeps (its path and inode it does not). `push` publishes a report only
    then: one built before lines were moved out shows numbers the pushed lines do not give.
    A report without its record (copied without hidden files, damaged) is not known to be."""
    try:
        note = loads(read_file(out / BUILT_FROM).decode("utf-8"))
        then = [_size_and_time(stamps) for stamps in note["inputs"]["runs"].values()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    now = [
        _size_and_time([file_stamp(Path(run) / name) for name in (RESULTS, RUN_CONFIG)])
        for run in run_dirs
    ]
    return sorted(map(str, then)) == sorted(map(str, now))


def _size_and_time(stamps: Any) -> list[Any]:
    """[size, modification time] of each `file_stamp` (None for a missing file)."""
    return [stamp[:2] if isinstance(stamp, list) else None for stamp in stamps]


class _BuiltFrom:
    """`.built-from.json`: the inputs of a report (`stat` of each run's results.jsonl and
    run.json: any line appended, merged or re-judged changes them; the options; the report's
    format and the package's version) and `stat` of each file written, with the notes,
    warnings and the first run's intervals to tell again. Images are not stamped: a data
    set's images are not expected to change under its runs (`report` rewrites the report
    whatever it finds)."""

    def __init__(
        self,
        inputs: dict[str, Any],
        notes: list[str],
        warnings: list[str],
        intervals: Intervals,
        findings: list[str],
    ) -> None:
        self.inputs, self.notes, self.warnings, self.intervals = inputs, notes, warnings, intervals
        self.findings = findings
        self.files: dict[str, Any] = {}

    @staticmethod
    def inputs(run_dirs: Sequence[str | Path], options: dict[str, Any]) -> dict[str, Any]:
        runs = {
            str(Path(run).resolve()): [file_stamp(Path(run) / n) for n in (RESULTS, RUN_CONFIG)]
            for run in run_dirs
        }
        version = package_version()
        stamp = {"format": REPORT_FORMAT, "version": version, "runs": runs, "options": options}
        return loads(dumps(stamp))  # as it reads back: tuples as lists

    @classmethod
    def read(cls, out: Path, inputs: dict[str, Any]) -> _BuiltFrom | None:
        """The record of the report in `out` when it was built from `inputs` and its files
        are all as it wrote them; None otherwise (then it is written again)."""
        try:
            note = loads(read_file(out / BUILT_FROM).decode("utf-8"))
            if note["inputs"] != inputs or not note["files"]:
                return None
            if any(file_stamp(out / name) != stamp for name, stamp in note["files"].items()):
                return None
            intervals = checked_intervals(note["intervals"])
            if intervals is None:
                return None
            findings = [str(f) for f in note["findings"]]
            built = cls(inputs, list(note["notes"]), list(note["warnings"]), intervals, findings)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        built.files = note["files"]
        return built

    def write(self, out: Path, files: Sequence[Path]) -> None:
        self.files = {str(path.relative_to(out)): file_stamp(path) for path in files}
        note = {"inputs": self.inputs, "files": self.files}
        note.update(notes=self.notes, warnings=self.warnings, intervals=self.intervals)
        note.update(findings=self.findings)
        write_whole(out / BUILT_FROM, dumps(note, ensure_ascii=False) + "\n")

    def outcome(self, out: Path) -> ReportOutcome:
        files = [out / name for name in self.files]
        return ReportOutcome(
            out,
            files,
            self.notes,
            self.warnings,
            intervals=self.intervals,
            unchanged=True,
            findings=self.findings,
        )


@contextlib.contextmanager
def _opened(path: str | Path | None) -> Iterator[ThumbCache | None]:
    """The thumbnail cache at `path` (None: none), closed after the report."""
    if path is None:
        yield None
        return
    with contextlib.closing(ThumbCache(path)) as cache:
        yield cache


@dataclass(frozen=True)
class PaperOptions:
    """`report --paper [--paper-model NAME]`: the paper's rows beside the runs."""

    paper_model: str | None = None

    def check(self) -> None:
        """An unknown `--paper-model` is an error before anything is read."""
        if self.paper_model is not None:
            paper_model_named(self.paper_model)

    def give_sizes(self, runs: Sequence[Run]) -> None:
        """A run of no known size whose model is one of the paper's takes the paper's size
        (`PaperModel.params_b`), for the size plot and its rho."""
        named = paper_model_named(self.paper_model) if self.paper_model is not None else None
        for run in runs:
            model = named or recognise_model(run.model)
            if run.params_b is None and model is not None and model.params_b is not None:
                run.params_b = float(model.params_b)

    def compare(
        self, all_measures: Sequence[RunMeasures], outcome: ReportOutcome, unplaced: bool = True
    ) -> list[PaperComparison | FigureComparison]:
        """The runs placed in the paper's tables, and beside its Figs. 8 and 9; a note for
        the runs with no counterpart (`unplaced`; a suite's report says where each stands).
        The runs not comparable for the same reasons share one note (six runs on generated
        data told the same reason six times at the page's head)."""
        tables = compare_with_paper(all_measures, self.paper_model)
        figures = compare_with_figures(all_measures)
        ranked = {id(p.run) for c in tables for p in c.placed}  # the figures rank none
        placed = ranked | {id(run) for c in figures for run, _ in c.runs}
        unranked: dict[tuple[str, ...], tuple[int, list[str]]] = {}  # reasons: (note, runs)
        for measures in all_measures:
            run = measures.run
            reasons = tuple(not_comparable(run)) if id(run) in placed else ()
            misplaced = contradiction(run) or (
                f"named for {run.counterpart}, whose settings it does not have"
                if run.counterpart is not None
                else None
            )
            if misplaced is not None and id(run) not in placed:
                outcome.notes.append(
                    f"--paper: {run.label} is left out of the paper's tables: {misplaced}"
                )
            elif reasons:
                if reasons not in unranked:
                    unranked[reasons] = (len(outcome.notes), [])
                    outcome.notes.append("")  # written below, once its runs are known
                unranked[reasons][1].append(run.label)
            elif id(run) in ranked and (apart := average_apart(run)) is not None:
                outcome.notes.append(f"--paper: {run.label}: {apart}: {AVERAGE_APART}")
            elif unplaced and id(run) not in placed:
                outcome.notes.append(
                    f"--paper: {run.label} has no counterpart in the paper (its "
                    "settings match none of Tables 1, 2, 4, 6, 7, 9, 10 and Figs. 8, 9)"
                )
        for reasons, (at, labels) in unranked.items():
            outcome.notes[at] = f"--paper: {unranked_note(', '.join(labels), list(reasons))}"
        return [*tables, *figures]


def _write_report(
    run_dirs: Sequence[str | Path],
    out: Path,
    vs: str | Path | None,
    params: Mapping[str, float] | None,
    seed: int,
    n_resamples: int,
    title: str | None,
    allow_empty: bool,
    cache: ThumbCache | None,
    published: PaperOptions | None = None,
    layout: Layout | None = None,
    plot_helper: PlotHelper | None = None,
) -> ReportOutcome:
    runs = load_runs(run_dirs, params)
    if layout is not None:
        layout.place(runs)
    if published is not None:
        published.give_sizes(runs)
    base = load_runs([vs])[0] if vs is not None else None
    if base is not None:
        base.label = label_apart(base, runs) + " (--vs)"
    empty = [r for r in runs if not r.lines]
    if empty and len(empty) == len(runs) and not allow_empty:
        told = "; ".join(f"no episode in {r.run_dir} ({_emptiness(r)})" for r in empty)
        raise NothingToDoError(f"nothing to report: {told}")
    outcome = ReportOutcome(out_dir=out)
    outcome.warnings += layout.warnings if layout is not None else ()
    all_measures = [measure_run(r, seed=seed, n_resamples=n_resamples) for r in runs]
    for measures in all_measures:
        outcome.warnings += run_warnings(measures, named=len(runs) > 1)
    # The lines of `--vs` not counted, told once: a base among the runs (a suite's plain run)
    # had them told with its own warnings, and each appeared twice.
    shown = {r.run_dir.resolve() for r in runs}
    beside = [base] if base is not None and base.run_dir.resolve() not in shown else []
    for reference in beside:
        outcome.warnings += reference.rejected
    apart = judges_apart([*runs, *beside])
    if apart is not None:
        outcome.warnings.append(apart)
    outcome.measures = all_measures
    outcome.intervals = intervals_of(all_measures[0])
    outcome.notes += [multiturn_note(r, several=len(runs) > 1) for r in runs if r.multiturn]
    found = _findings(runs, all_measures, layout, outcome, seed, n_resamples)
    outcome.findings = [finding_line(f) for f in found]

    comparisons: list[Comparison] = []
    if base is not None:
        # A suite's report compares its multiple-choice experiments only; `--vs` refuses.
        mixed = layout is not None and not base.oeg
        if not mixed and (base.oeg or any(r.oeg for r in runs)):
            raise ProactiveBenchError("--vs compares MCQA runs (an open-ended run has no accuracy)")
        # The reference itself, given among the runs too, is no comparison (a row of 0, p = 1).
        compared = [r for r in runs if r.run_dir.resolve() != base.run_dir.resolve() and not r.oeg]
        if len(compared) < len(runs) and layout is None:
            outcome.notes.append(f"--vs {base.run_dir}: not compared with itself")
        compared = _on_same_data(compared, base, outcome, refuse=layout is None)
        comparisons = [compare_runs(r, base, seed=seed, n_resamples=n_resamples) for r in compared]
        base_measures = measure_run(base, seed=seed, n_resamples=n_resamples)
        by_run = {id(m.run): m for m in all_measures}
        for comparison in comparisons:
            measures = by_run[id(comparison.run)]
            changes, cover = action_changes(measures, base_measures)
            comparison.actions, comparison.actions_cover = changes, cover
            told = unpaired_warning(comparison, measures, base_measures)
            if told is not None:
                outcome.warnings.append(told)

    papers = published.compare(all_measures, outcome, layout is None) if published else []
    tables = _tables(all_measures, comparisons, [c.table() for c in papers])
    outcome.headline = _headline(tables, several=len(runs) > 1)
    if layout is not None:
        tables = layout.arrange(tables)
        outcome.headline = [t for t in tables if t.key in layout.headline_keys(tables)]
    with _thumbnails(runs, cache) as thumbs:  # made by worker processes while plots are drawn
        images = _plots(all_measures, outcome, bool(papers), plot_helper)
        # Built whole in a stage beside `out`, then moved in: a failure (a full disk) leaves
        # the previous report as it was, never half of a new one.
        with staged_folder(out) as stage:
            files = _Files(stage, out, outcome)
            for table in tables:
                files.write(f"tables/{table.key}.csv", to_csv(table))
                files.write(f"tables/{table.key}.tex", to_latex(table))
            for name, png in images.items():
                files.write(f"plots/{name}.png", png)
            _pages(
                files,
                runs,
                all_measures,
                comparisons,
                tables,
                images,
                title,
                thumbs,
                papers,
                keep_order=layout is not None,
                findings=found,
            )
    _remove_stale(out, outcome.files)
    return outcome


def _findings(
    runs: Sequence[Run],
    all_measures: Sequence[RunMeasures],
    layout: Layout | None,
    outcome: ReportOutcome,
    seed: int,
    n_resamples: int,
) -> list[Finding]:
    """What the report states first (`report.findings`): a suite's experiments answer the
    paper's findings; several models' runs, whether proactiveness follows size. Where none
    can be stated, a note says why."""
    if layout is not None and layout.experiments:
        found = suite_findings(layout.by_experiment(runs), seed=seed, n_resamples=n_resamples)
        if not found:
            outcome.notes.append(
                "no findings: the suite has no scored plain multiple-choice run (mcqa) to set "
                "its experiments against"
            )
        return found
    if len(runs) < 2:
        return []
    size = size_finding(all_measures, seed=seed, n_resamples=n_resamples)
    if size is None and len({r.model for r in runs if not r.oeg}) >= MIN_SIZED:
        outcome.notes.append(
            f"no finding on size: it needs {MIN_SIZED} models of known size (from their "
            "names, or --params NAME=7B)"
        )
    return [size] if size is not None else []


#: Runs a report's default title names; more are counted (the page's head lists them all).
TITLE_NAMES = 3


def default_title(labels: Sequence[str]) -> str:
    """'Report: a, b, c', or for many runs 'Report: a, b, c and 20 more': a title of 23
    labels filled a phone's first screen, and a wide one's, before any number."""
    shown = ", ".join(labels[:TITLE_NAMES])
    more = len(labels) - TITLE_NAMES
    return f"Report: {shown}" + (f" and {more} more" if more > 0 else "")


def unpaired_warning(
    comparison: Comparison, measures: RunMeasures, base: RunMeasures
) -> str | None:
    """A warning when the run and its `--vs` reference scored other episodes (a partial
    reference, a run of more samples): the Δ accuracy and ps are over the pairs alone, the Δ
    action distribution over each run's own episodes, and neither table says so; or None."""
    shown = [s for s in measures.scenarios if measures.scenarios[s].n]
    mine = sum(measures.scenarios[s].n for s in shown)
    theirs = sum(base.scenarios[s].n for s in shown if s in base.scenarios)
    pairs = comparison.average.shared
    if pairs == mine == theirs:
        return None
    return (
        f"--vs {comparison.base.run_dir}: {comparison.run.label} scored {mine} episodes and the "
        f"reference ({comparison.base.label}) {theirs} in the same {len(shown)} scenario(s), "
        f"{pairs} of them both: its Δ accuracy and ps are over those {pairs} pairs, its Δ "
        "action distribution compares each run's own episodes"
    )


def _on_same_data(runs: list[Run], base: Run, outcome: ReportOutcome, *, refuse: bool) -> list[Run]:
    """The runs that can be paired with `base` episode by episode: those played on the same
    data (`datarecords.other_data`, the rule `data filter` and `merge` apply); another data
    set's sample ids name other samples, and pairs of them are no comparison. A run given with
    `--vs` is refused; in a suite's report its comparison is left out, with a warning."""
    kept = []
    for run in runs:
        why = other_data(run.config, base.config, (run.lines, base.lines))
        if why is None:
            kept.append(run)
            continue
        told = (
            f"--vs {base.run_dir}: {run.run_dir} was played on other data ({why}), so its "
            "samples are not the reference's under the same ids: not paired"
        )
        if refuse:
            raise RunMismatchError(f"{told}; compare runs played on the same data")
        outcome.warnings.append(told)
    return kept


@contextlib.contextmanager
def _thumbnails(
    runs: Sequence[Run], cache: ThumbCache | None
) -> Iterator[dict[str, Thumbnails | None]]:
    """The thumbnail makers of the runs' scenarios, every view started; whatever is still being
    made when the block ends (an error, Ctrl-C) is stopped."""
    thumbs = _images_of(runs, cache)
    try:
        start_all(thumbs, runs)
        yield thumbs
    finally:
        for maker in {id(t): t for t in thumbs.values() if t is not None}.values():
            maker.close()


def _pages(
    files: _Files,
    runs: Sequence[Run],
    all_measures: Sequence[RunMeasures],
    comparisons: Sequence[Comparison],
    tables: Sequence[Table],
    images: Mapping[str, bytes],
    title: str | None,
    thumbs: dict[str, Thumbnails | None],
    papers: Sequence[PaperComparison | FigureComparison] = (),
    keep_order: bool = False,
    findings: Sequence[Finding] = (),
) -> None:
    """report.html, report.md and report.json (`keep_order`: the tables as given), the
    `findings` first in each."""
    outcome = files.outcome
    correlations = size_correlations(all_measures, with_paper=bool(papers))
    heading = title or default_title([r.label for r in runs])
    unavailable = sorted(
        {
            str(r.data_dir) if r.data_dir is not None else f"{r.run_dir}/run.json names none"
            for r in runs
            if r.by_scenario and not _shows_images(r, thumbs)
        }
    )
    if unavailable:
        outcome.notes.append(
            f"episode images not shown: data directory not found ({', '.join(unavailable)})"
        )
    page = render_html(
        heading,
        runs,
        all_measures,
        tables,
        images,
        outcome.notes,
        thumbs,
        keep_order,
        warnings=outcome.warnings,
        comparisons=comparisons,
        findings=findings,
    )
    files.write("report.html", page)
    missing = sum(t.missing for t in {id(t): t for t in thumbs.values() if t}.values())
    if missing:
        outcome.notes.append(f"{missing} episode image(s) could not be read; shown as missing")
    files.write("report.md", _markdown(heading, runs, tables, images, outcome, findings))
    document = _json(runs, all_measures, comparisons, correlations, outcome)
    if findings:  # a suite's report: a report of runs keeps its keys
        document = {"findings": findings_dict(findings), **document}
    if papers:  # only with --paper: a report without it is as it was
        document["paper"] = {c.key: c.as_dict() for c in papers}
    files.write("report.json", finite_json(document, indent=2) + "\n")


#: The files a report writes besides report.md/.json/.html, by folder: what a previous report
#: in the same directory may have left.
_REPORT_FILES = {"tables": ("*.csv", "*.tex"), "plots": ("*.png",)}


def _remove_stale(out: Path, written: Sequence[Path]) -> None:
    """Delete what an earlier report left in `out` that this one did not write (a table of a
    run no longer given, the size plot...): only the report's own kinds of file, in its own
    folders, so nothing else the user keeps there is touched."""
    kept = {p.resolve() for p in written}
    for folder, patterns in _REPORT_FILES.items():
        for pattern in patterns:
            for path in sorted((out / folder).glob(pattern)):
                if path.is_file() and path.resolve() not in kept:
                    path.unlink(missing_ok=True)


def _emptiness(run: Run) -> str:
    """Why a run has no episode to count: its results file is empty, or every line of it was
    left out (another run's settings, not a result line...: the first is named)."""
    return run.left_out() or "results.jsonl is empty"


def _unique_keys(tables: list[Table]) -> list[Table]:
    """Table keys name files: two runs whose labels slug alike get `-2`, `-3`..."""
    seen: set[str] = set()
    for table in tables:
        key, number = table.key, 1
        while key in seen:
            number += 1
            key = f"{table.key}-{number}"
        seen.add(key)
        table.key = key
    return tables


def multiturn_note(run: Run, several: bool) -> str:
    """What a multi-turn open-ended run's numbers are, as the paper says of its Table 10."""
    prefix = f"{run.label}: " if several else ""
    return (
        f"{prefix}multi-turn open-ended generation (--mode oeg-multiturn) is an approximate "
        "comparison with MCQA, as the paper says of its Table 10 (§4.2): a suggestion that "
        "names no action the state offers is mapped to a random valid one, and a judge, not "
        "an option, decides each turn (docs/protocol.md §6)"
    )


def _tables(
    all_measures: Sequence[RunMeasures],
    comparisons: Sequence[Comparison],
    published: Sequence[Table] = (),
) -> list[Table]:
    mcqa = [m for m in all_measures if not m.run.oeg]
    oeg = [m for m in all_measures if m.run.oeg]
    # The action distribution (MCQA only) has tables of its own: each run's, after the runs'
    # tables; side by side and the changes from --vs, after the comparisons.
    tables = [*(run_table(m) for m in all_measures), *(run_table(m, "actions") for m in mcqa)]
    if len(all_measures) > 1:
        for group, keys in ((mcqa, ("accuracy", "ps_rate")), (oeg, ("aggregate", "ps", "cp"))):
            if group:
                wanted = {m.key: m for m in (*MCQA_METRICS, *OEG_METRICS)}
                tables += [cross_table(group, wanted[k]) for k in keys]
    tables += published
    if comparisons:
        tables += [
            comparison_table(comparisons, "accuracy"),
            comparison_table(comparisons, "ps_rate"),
        ]
    if len(mcqa) > 1:
        tables.append(actions_table(mcqa))
    if comparisons:
        tables.append(actions_change_table(comparisons))
    tables.append(usage_table(all_measures))
    agreement = agreement_table([m.run for m in all_measures])  # several human runs (play)
    # A run labelled "vs" must not overwrite the files of the table of changes: the runs'
    # tables come first and keep their keys.
    return _unique_keys([*tables, agreement] if agreement is not None else tables)


def _headline(tables: Sequence[Table], several: bool) -> list[Table]:
    """The run's own table, or with several runs the tables that set them side by side (the
    per-run tables stay in the files), then the comparisons."""
    cross = [t for t in tables if t.key.startswith("cross-")]
    runs = [t for t in tables if t.key.startswith("run-")]
    compared = [t for t in tables if t.key.startswith("vs-") or t.key == "agreement"]
    papers = [t for t in tables if t.key.startswith("paper-")]
    return [*(cross if several and cross else runs), *papers, *compared]


#: A plot's outcome: its PNG, "none" (no such plot for these runs), or why it was not drawn
#: (`plot_outcome`).
PlotOutcome = tuple[str, Any]
#: Draws some plots elsewhere (a process of `report.worker`): given the plots' names, the
#: runs' measures and `with_paper`, it starts drawing the names it takes and returns them
#: with a function that collects their outcomes (a name it could not draw is left out of
#: what it collects, and drawn here).
PlotHelper = Callable[
    [Sequence[str], Sequence[RunMeasures], bool],
    tuple[Sequence[str], Callable[[], dict[str, PlotOutcome]]],
]
#: The plots drawn by a `PlotHelper` when there is one (the others are drawn here
#: meanwhile): about half of the drawing time each way.
HELPED_PLOTS = ("accuracy_vs_ps", "size")


#: The report's plots, in the order they are drawn and their notes told.
PLOTS = ("scenarios", "accuracy_vs_ps", "actions", "size")


def plot_outcome(name: str, all_measures: Sequence[RunMeasures], with_paper: bool) -> PlotOutcome:
    """Draw one plot: ("png", bytes), ("none", None) where these runs have no such plot, or
    ("failed", "Type: message") when drawing raised."""
    drawers: dict[str, Callable[[Sequence[RunMeasures]], bytes | None]] = {
        "scenarios": plots.scenario_bars,
        "accuracy_vs_ps": partial(plots.accuracy_vs_ps, with_paper=with_paper),
        "actions": plots.action_bars,
        "size": partial(plots.size_plot, with_paper=with_paper),
    }
    try:
        png = drawers[name](all_measures)
    except Exception as exc:
        return "failed", f"{type(exc).__name__}: {exc}"
    return ("none", None) if png is None else ("png", png)


def _plots(
    all_measures: Sequence[RunMeasures],
    outcome: ReportOutcome,
    with_paper: bool = False,
    helper: PlotHelper | None = None,
) -> dict[str, bytes]:
    """The report's plots (a `helper` draws some of them meanwhile), and a note for each one
    not drawn: the same notes, in the same order, however they were drawn."""
    reason = plots.missing_reason()
    if reason:
        outcome.notes.append(reason)
        return {}
    names = PLOTS
    helped: Sequence[str] = ()
    collect: Callable[[], dict[str, PlotOutcome]] = dict
    if helper is not None:
        helped, collect = helper([n for n in names if n in HELPED_PLOTS], all_measures, with_paper)
    drawn = {n: plot_outcome(n, all_measures, with_paper) for n in names if n not in helped}
    away = collect()
    images: dict[str, bytes] = {}
    for name in names:
        kind, value = (
            drawn.get(name) or away.get(name) or plot_outcome(name, all_measures, with_paper)
        )
        if kind == "failed":
            outcome.notes.append(f"plot {name} not drawn: {value}")
        elif kind == "png":
            images[name] = value
    # Baselines and people (`baseline:...`, `human:...`) have no model size, and the runs of
    # one model (a suite's experiments) are one point: a report that could never have a size
    # plot is told nothing about it.
    models = {m.run.model for m in all_measures if _sized(m.run.model)}
    if (
        "size" not in images
        and len(models) > 1
        and not any(n.startswith("plot size") for n in outcome.notes)
    ):
        outcome.notes.append(
            "size plot skipped: fewer than two models with a known parameter count "
            "(give them with --params NAME=7B; one point per model)"
        )
    return images


def _sized(model: str) -> bool:
    """Whether a run's model spec is of a kind that has a parameter count (`SpecKind.sized`;
    a spec of no known kind may well have one)."""
    kind = SPEC_KIND.get(model.partition(":")[0])
    return kind is None or kind.sized


def _markdown(
    title: str,
    runs: Sequence[Run],
    tables: Sequence[Table],
    images: Mapping[str, bytes],
    outcome: ReportOutcome,
    findings: Sequence[Finding] = (),
) -> str:
    lines = [f"# {md(title)}", ""]
    for run in runs:
        size = f", {run.params_b:g}B parameters" if run.params_b else ""
        lines.append(f"- **{md(run.label)}**: {md(str(run.run_dir))}{size}")
    if outcome.warnings:  # first: what must not be missed, before any number
        lines += ["", "## Warnings", ""]
        lines += [f"- **warning:** {md(w)}" for w in outcome.warnings]
    if findings:  # then the answers to the paper's questions, before the tables
        lines += ["", "## Findings", ""]
        lines += [f"- **({f.number}) {md(f.claim)}:** {md(f.sentence)}" for f in findings]
    lines += ["", "## What the columns mean", ""]
    metrics = []
    for run in runs:
        metrics += [m for m in metrics_of(run) if m not in metrics]
    lines += [f"- **{m.heading}**: {m.doc}" for m in metrics]
    lines += ["", "## Tables", ""]
    lines += [to_markdown(t) for t in tables]
    if images:
        lines += ["## Plots", ""]
        lines += [f"![{name}](plots/{name}.png)" for name in images]
        lines.append("")
    if outcome.notes:
        lines += ["## Notes", ""]
        lines += [f"- {md(n)}" for n in outcome.notes]
    return "\n".join(lines).rstrip() + "\n"


def _json(
    runs: Sequence[Run],
    all_measures: Sequence[RunMeasures],
    comparisons: Sequence[Comparison],
    correlations: dict[str, Any] | None,
    outcome: ReportOutcome,
) -> dict[str, Any]:
    declared = (*MCQA_METRICS, *OEG_METRICS)
    return {
        "metrics": {m.key: m.doc for m in declared},
        "metric_info": {m.key: m.describe() for m in declared},
        "intervals": INTERVAL_METHODS,
        "runs": [
            {
                "label": m.run.label,
                "run_dir": str(m.run.run_dir),
                "model": m.run.model,
                "settings": m.run.settings,
                "params_b": m.run.params_b,
                "scenarios": {k: v.as_dict() for k, v in m.scenarios.items()},
                "average": {
                    **m.average.as_dict(),
                    "label": average_label(m.average.covers, m.average.missing),
                },
                "usage": m.usage,
            }
            for m in all_measures
        ],
        "comparisons": [
            {
                "run": c.run.label,
                "base": c.base.label,
                "scenarios": {k: v.as_dict() for k, v in c.scenarios.items()},
                "average": {
                    **c.average.as_dict(),
                    "covers": c.covers,
                    "label": average_label(c.covers),
                },
                "action_changes": c.actions,
                "action_changes_average_covers": c.actions_cover,
            }
            for c in comparisons
        ],
        "size_correlation": correlations,
        "warnings": outcome.warnings,
        "notes": outcome.notes,
    }


__all__ = ["REPORT_DIR", "ReportOutcome", "legend_html", "write_report"]
