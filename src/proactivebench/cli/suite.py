"""`paper` and `suite FILE`: several experiments with one model, side by side in one process.

`paper` runs the paper's list (`suites/paper.toml`), `suite FILE` a user's; both hand the
experiments to `proactivebench.jobs.suite.run_suite` (one engine: one response cache, one limit on
requests in flight), show one progress view for them all, then the table of experiments, the
requests the sharing saved, and a report of every experiment in OUT/report.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from proactivebench.cli.options import (
    cache_options,
    data_option,
    judge_options,
    make_judge,
    open_cache,
    option_group,
    parse_model_options,
    run_options,
)
from proactivebench.cli.output import (
    EXIT_EPISODE_ERRORS,
    EXIT_ERROR,
    EXIT_OK,
    console,
    description_column,
    new_progress,
    out,
    print_error,
    print_report_outcome,
    print_warnings,
)
from proactivebench.core.errors import NothingToDoError
from proactivebench.models import SPEC_HELP, load_model
from proactivebench.run.settings import RunOptions

if TYPE_CHECKING:
    from proactivebench.jobs.suite import Experiment, ExperimentOutcome, Suite, SuiteOutcome
    from proactivebench.run.play_episode import Result

#: The options `paper` and `suite` share (the suite file aside).
suite_options = option_group(
    data_option,
    click.option("--model", "model_spec", required=True, help=f"Model spec: {SPEC_HELP}."),
    click.option(
        "--out",
        "out_dir",
        required=True,
        type=click.Path(path_type=Path),
        help="Folder of the experiments' run directories (OUT/<id>) and their report "
        "(OUT/report); rerunning the same command resumes every experiment.",
    ),
    click.option(
        "--only",
        default=None,
        metavar="IDS",
        help="Comma-separated experiment ids to run (default: all).",
    ),
    click.option("--skip", default=None, metavar="IDS", help="Comma-separated ids to leave out."),
    click.option(
        "--limit",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="At most N episodes per scenario in every experiment (a trial run).",
    ),
    run_options("suite"),
    click.option(
        "--model-option",
        "model_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="Backend option, repeatable (as eval's).",
    ),
    cache_options,
    judge_options,
    click.option("--no-report", is_flag=True, help="Do not write OUT/report at the end."),
)


@click.command("paper")
@suite_options
def paper_command(**options: Any) -> None:
    """Run the paper's experiments for one model (docs/paper.md)."""
    from proactivebench.jobs.suite import paper_suite

    run_command(paper_suite(), **options)


@click.command("suite")
@click.argument("suite_file", type=click.Path(path_type=Path))
@suite_options
def suite_command(suite_file: Path, **options: Any) -> None:
    """Run the experiments of SUITE_FILE (TOML: [[experiment]] tables of an id and eval's
    settings by name) for one model, as `paper` runs the paper's."""
    from proactivebench.jobs.suite import read_suite

    run_command(read_suite(suite_file), **options)


def _local(spec: str) -> bool:
    """Whether a model spec loads weights into this process (costly to make more than once)."""
    return spec.startswith("hf:")


def _ids(text: str | None, flag: str) -> list[str]:
    """The ids of `--only` / `--skip` (None: not given); a text that names none (`--only ,`,
    or `--only ''` from a script's unset variable) is a mistake, not "all"."""
    if text is None:
        return []
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise click.BadParameter(f"names no experiment: {text!r}", param_hint=flag)
    return ids


def run_command(
    suite: Suite,
    *,
    data_dir: Path,
    model_spec: str,
    out_dir: Path,
    only: str | None,
    skip: str | None,
    limit: int | None,
    options: RunOptions,
    model_options: tuple[str, ...],
    cache_path: Path | None,
    no_cache: bool,
    judge_spec: str | None,
    judge_votes: int,
    judge_options: tuple[str, ...],
    judge_max_tokens: int | None,
    judge_temperature: float | None,
    no_report: bool,
) -> None:
    """Play the chosen experiments of `suite`, then tell and report them; exits non-zero when
    one failed or left episodes in error."""
    from proactivebench.jobs.suite import refuse_before_running, run_suite

    experiments = suite.chosen(_ids(only, "--only"), _ids(skip, "--skip"))
    # Before a model is made (a local one takes minutes to load), what would fail them all.
    refuse_before_running(data_dir, out_dir)
    if judge_spec is None and all(e.judged for e in experiments):
        raise NothingToDoError(
            f"every experiment chosen ({', '.join(e.id for e in experiments)}) is open-ended "
            "and needs a judge: pass --judge SPEC"
        )
    backend = parse_model_options(model_options)

    def judge() -> Any:
        return make_judge(
            judge_spec, judge_votes, judge_options, judge_max_tokens, judge_temperature
        )

    # Made first: a spec that names no backend is one error before anything runs. A local
    # model (`hf:`) is loaded once and shared; the others are cheap to make, one per
    # experiment, each answering as it would alone.
    probe = load_model(model_spec, **backend)
    model = probe if _local(model_spec) else lambda: load_model(model_spec, **backend)
    judging = judge() if judge_spec is not None else None
    if judging is not None and not _local(judge_spec or ""):
        judging = judge
    if judge_spec is None:
        skipped = [e.id for e in experiments if e.judged]
        if skipped:
            console.print(
                f"skipped without --judge (open-ended, judged): {', '.join(skipped)}",
                highlight=False,
            )
    # The suite's default: the server sees what one `eval` at that concurrency asks.
    if options.requests_in_flight is None:
        options = dataclasses.replace(options, requests_in_flight=options.concurrency)
    cache = open_cache(cache_path, no_cache, wanted=probe.cacheable or judge_spec is not None)
    with (
        contextlib.closing(cache) if cache else contextlib.nullcontext(),
        suite_progress(experiments) as (on_start, on_result),
    ):
        outcome = asyncio.run(
            run_suite(
                data_dir,
                experiments,
                out_dir,
                model=model,
                judge=judging,
                options=options,
                cache=cache,
                limit=limit,
                on_start=on_start,
                on_result=on_result,
            )
        )
    sys.exit(tell_suite(outcome, out_dir, no_report, no_cache))


@contextlib.contextmanager
def suite_progress(
    experiments: list[Experiment],
) -> Iterator[tuple[Callable[[str, int, int], None], Callable[[str, Result], None]]]:
    """One progress view of every experiment: a row each (its episodes, its errors), shown
    from the first experiment that starts."""
    progress = new_progress(
        description_column(),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors {task.fields[errors]}"),
        TimeElapsedColumn(),
        several=True,
    )
    width = max(len(e.id) for e in experiments) if experiments else 0
    tasks = {
        e.id: progress.add_task(e.id.ljust(width), total=None, errors=0, start=False)
        for e in experiments
    }
    shown = False

    def on_start(ident: str, total: int, done: int) -> None:
        nonlocal shown
        if not shown:
            progress.start()
            shown = True
        progress.start_task(tasks[ident])
        progress.update(tasks[ident], total=total, completed=done)

    def on_result(ident: str, result: Result) -> None:
        task = tasks[ident]
        errors = progress.tasks[task].fields["errors"] + (result.error is not None)
        progress.update(task, advance=1, errors=errors)

    try:
        yield on_start, on_result
    finally:
        if shown:
            progress.stop()


def tell_suite(outcome: SuiteOutcome, out_dir: Path, no_report: bool, no_cache: bool) -> int:
    """The table of experiments, what the sharing saved, the failures, the report; returns the
    exit status (`eval`'s codes: an error, episodes in error, or none)."""
    from proactivebench.jobs.suite import EPISODE_ERRORS, write_suite_report

    out.print(experiments_table(outcome.experiments))
    played = [e for e in outcome.experiments if e.outcome is not None]
    console.print(
        f"{outcome.asked} requests asked; {outcome.saved} more answered from a request "
        "another experiment asked (saved by sharing one cache)"
        if not no_cache
        else "--no-cache: nothing shared between the experiments",
        highlight=False,
    )
    for entry in outcome.failed:
        print_error(f"{entry.experiment.id} failed: {entry.reason}")
    if played and not no_report:
        print_report_outcome(write_suite_report(out_dir, outcome, thumb_cache=not no_cache))
    elif played:
        print_warnings(experiment_warnings(played))
    if outcome.failed:
        failed = ", ".join(e.experiment.id for e in outcome.failed)
        console.print(
            escape(
                f"failed: {failed}; the others are intact. Mend what the error above says (a "
                "server that did not answer, settings changed since the run), then rerun the "
                "same command to resume"
            ),
            highlight=False,
        )
        return EXIT_ERROR
    if any(e.status == EPISODE_ERRORS for e in outcome.experiments):
        return EXIT_EPISODE_ERRORS
    return EXIT_OK


def experiment_warnings(played: list[ExperimentOutcome]) -> list[str]:
    """Each played experiment's warnings (`report.measures.run_warnings`), named by its id:
    what the suite's report tells, told without one (`--no-report`), as `eval --no-report`
    tells a run's."""
    from proactivebench.core.errors import ProactiveBenchError
    from proactivebench.report.measures import run_warnings_and_intervals

    warnings = []
    for entry in played:
        try:
            found, _ = run_warnings_and_intervals(entry.out_dir)
        except ProactiveBenchError as exc:  # its lines cannot be read: said, not hidden
            found = [f"its results could not be read: {exc}"]
        warnings += [f"{entry.experiment.id}: {w}" for w in found]
    return warnings


#: The caption under `experiments_table` when it has open-ended rows.
OEG_COLUMNS_CAPTION = (
    "cp % and ps %: open-ended rows, the answers the judge found to name the correct category "
    "and to hold a proactive suggestion"
)


def experiments_table(entries: list[ExperimentOutcome]) -> Table:
    """Experiment, its scored episodes (as the suite report's experiments table counts them:
    those that ended in an error are left out), the average accuracy and ps rate of an MCQA
    row, and, when any row is open-ended, the average cp and ps (%) in their own columns (not
    under MCQA's headings: a ps % is no ps rate), and how it ended. An average over fewer than
    the seven scenarios is named in the caption as eval's table names it
    (`Summary.average_label`), never shown as a plain average."""
    oeg = any(e.outcome is not None and e.outcome.summary.oeg for e in entries)
    captions = [OEG_COLUMNS_CAPTION] if oeg else []
    rates = ["accuracy (avg)", "ps rate (avg)"]
    if oeg:
        rates += ["cp % (avg)", "ps % (avg)"]
    table = Table(title="experiments", caption_justify="left")
    for heading in ("experiment", "episodes scored", *rates, "status"):
        table.add_column(
            heading, justify="left" if heading in ("experiment", "status") else "right"
        )
    for entry in entries:
        cells = ["—"] * (1 + len(rates))
        if entry.outcome is not None:
            summary = entry.outcome.summary
            average = summary.average
            cells[0] = str(sum(s.n for s in summary.scenarios.values()))
            if average is not None:
                # An open-ended row's cp and ps in their columns, after MCQA's two.
                at, keys = (3, ("cp", "ps")) if summary.oeg else (1, ("accuracy", "ps_rate"))
                for offset, key in enumerate(keys):
                    value = getattr(average, key)
                    decimals = 2 if key == "ps_rate" else 1
                    cells[at + offset] = "—" if value is None else f"{value:.{decimals}f}"
                captions += _average_caption(entry.experiment.id, summary.average_label)
        status = entry.status if entry.reason is None else f"{entry.status}: {entry.reason}"
        table.add_row(escape(entry.experiment.id), *cells, escape(_short(status)))
    table.caption = escape("\n".join(captions)) if captions else None
    return table


def _average_caption(ident: str, label: str) -> list[str]:
    """The caption line naming what an experiment's averages cover, when not all seven
    scenarios (`metrics.average_label`): a plain "average" hid that one scenario was missing."""
    if label == "average":
        return []
    return [f"{ident}: (avg) is the {label}"]


def _short(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
