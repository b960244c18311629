"""The `proactivebench` command: parses arguments and calls the library, nothing more."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from proactivebench.cli_inspect import import_inspect_command
from proactivebench.cli_train import train as train_commands
from proactivebench.errors import ProactiveBenchError
from proactivebench.escapes import visible
from proactivebench.metrics import ScenarioScore, Summary
from proactivebench.models import SPEC_HELP, Decoding, load_model
from proactivebench.protocol import SCENARIOS
from proactivebench.scenarios.answers import EXTRACTIONS
from proactivebench.scenarios.base import OPTION_ORDERS

if TYPE_CHECKING:
    from proactivebench.data.validate import DatasetCheck
    from proactivebench.judge import Judge
    from proactivebench.models.cache import ResponseCache
    from proactivebench.results import EpisodeResult, OEGResult

# soft_wrap: a line is never broken by rich; a terminal wraps what is too long by itself, so
# a path or a verdict stays one line for the eye, for copy-paste, and for scripts and tests.
# emoji=False: ":x:" in a model name or an answer stays ":x:".
console = Console(stderr=True, soft_wrap=True, emoji=False)


class ReaderMayStop(Console):
    """stdout's console: when the reader stops reading (`proactivebench report RUN | head`),
    the rest of the output goes nowhere and the command ends as it would have (rich's own
    reaction exits 1, as if the command had failed)."""

    def on_broken_pipe(self) -> None:
        if not self.quiet:
            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())


out = ReaderMayStop(soft_wrap=True, emoji=False)
#: Width given to rich off a terminal, where it would otherwise assume 80 columns (or $COLUMNS)
#: and wrap the cells of a table: files, pipes and captured output get every table whole.
UNBOUNDED_WIDTH = 10_000


def printable(text: str) -> str:
    """Multi-line text (an answer, a transcript, a traceback) for the terminal: control
    characters visible (`\x1b`), line breaks kept."""
    return visible(text, keep_lines=True)


#: A name shown in a title or a progress line: one line, every control character visible.
one_line = visible


class PrintableFormatter(logging.Formatter):
    """Log records (the library's warnings, a user's traceback) with control characters made
    visible, as everything else printed."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def fit_to_output(*consoles: Console) -> None:
    """Off a terminal, let tables take their natural width instead of the assumed 80 columns."""
    for c in consoles:
        if not c.is_terminal:
            c.width = UNBOUNDED_WIDTH


#: Table columns: (heading, score field, format); MCQA runs, then judged open-ended runs.
MCQA_COLUMNS = (("accuracy %", "accuracy", "{:.1f}"), ("ps rate", "ps_rate", "{:.2f}"))
OEG_COLUMNS = (
    ("ps %", "ps", "{:.1f}"),
    ("cp %", "cp", "{:.1f}"),
    ("aggregate %", "aggregate", "{:.1f}"),
    ("judges agree %", "agreement", "{:.1f}"),
)


def summary_table(summary: Summary, title: str | None = None) -> Table:
    """Per-scenario n, the run's rates and errors, and their average over scenarios."""
    columns = OEG_COLUMNS if summary.oeg else MCQA_COLUMNS
    table = Table(title=Text(one_line(title or summary.model)))
    table.add_column("scenario")
    table.add_column("n", justify="right")
    for heading, _, _ in columns:
        table.add_column(heading, justify="right")
    table.add_column("errors", justify="right")

    def cells(score: ScenarioScore) -> list[str]:
        values = [getattr(score, name) for _, name, _ in columns]
        rates = [
            fmt.format(v) if v is not None else "—"
            for (_, _, fmt), v in zip(columns, values, strict=True)
        ]
        return [str(score.n), *rates, str(score.errors)]

    for short, score in summary.scenarios.items():
        table.add_row(short, *cells(score))
    average = summary.average
    if average is not None:
        table.add_section()
        table.add_row(summary.average_label, *cells(average), style="bold")
    return table


#: The legend under the demo's comparison table.
COMPARISON_LEGEND = (
    "acc %: episodes that ended on the correct category. ps: proactive suggestions per "
    "episode, on average (a count, not a %). —: no episode scored."
)


def comparison_table(summaries: dict[str, Summary], title: str) -> Table:
    """Accuracy and ps rate of several runs side by side, one row per scenario."""
    table = Table(title=title, caption=COMPARISON_LEGEND, caption_justify="left")
    table.add_column("scenario")
    for name in summaries:
        table.add_column(f"{name}\nacc % | ps", justify="right")
    rows = {s: [] for s in SCENARIOS}
    averages = []
    for summary in summaries.values():
        for short in SCENARIOS:
            score = summary.scenarios.get(short)
            rows[short].append(_acc_ps(score) if score else "-")
        avg = summary.average
        averages.append(_acc_ps(avg) if avg else "-")
    for short, cells in rows.items():
        if any(c != "-" for c in cells):
            table.add_row(short, *cells)
    table.add_section()
    table.add_row("average", *averages, style="bold")
    return table


def _acc_ps(score: ScenarioScore) -> str:
    if score.accuracy is None or score.ps_rate is None:
        return "—"
    return f"{score.accuracy:5.1f} | {score.ps_rate:.2f}"


class LineProgress(Progress):
    """Progress off a terminal (a log file, CI): the same tasks, reported as one plain line each
    time a tenth more is done (or a minute has passed) and at the end, instead of a bar that
    only a terminal can redraw in place."""

    def __init__(self, *columns: Any, console: Console) -> None:
        super().__init__(*columns, console=console, disable=True)
        #: Per task: how much was done when it was last reported, and when.
        self._reported: dict[TaskID, tuple[float, float]] = {}

    def update(self, task_id: TaskID, **changes: Any) -> None:
        super().update(task_id, **changes)
        self._report(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._report(task_id)

    def stop(self) -> None:
        for task_id in list(self._tasks):
            self._report(task_id, final=True)
        super().stop()

    def _report(self, task_id: TaskID, final: bool = False) -> None:
        task = self._tasks[task_id]
        total, done, now = task.total, task.completed, self.get_time()
        if not total:
            return
        if task_id in self._reported:
            last, when = self._reported[task_id]
            new_tenth = int(10 * done / total) > int(10 * last / total)
            if not (new_tenth or now - when >= 60 or (final and done != last)):
                return
        self._reported[task_id] = (done, now)
        fields = "".join(f", {name} {value}" for name, value in task.fields.items())
        line = (
            f"{task.description}: {done:g}/{total:g} "
            f"({100 * done / total:.0f}%){fields}, {task.elapsed or 0:.0f}s"
        )
        self.console.print(printable(line), markup=False, highlight=False)


def description_column() -> TextColumn:
    """A progress task's name, as plain text (a model spec is not markup)."""
    return TextColumn("{task.description}", style="bold", markup=False)


def new_progress(*columns: Any) -> Progress:
    """A rich progress bar on a terminal, plain periodic lines anywhere else."""
    if console.is_terminal:
        return Progress(*columns, console=console)
    return LineProgress(*columns, console=console)


def count_progress() -> Progress:
    """A plain bar with a count, for generation and the demo's runs."""
    columns = (description_column(), BarColumn(), MofNCompleteColumn())
    return new_progress(*columns, TimeElapsedColumn())


def parse_model_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`KEY=VALUE` pairs -> keyword options; values that parse as JSON are typed (8, true)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(
                f"expected KEY=VALUE, got {pair!r}", param_hint="--model-option"
            )
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        options[key.strip().replace("-", "_")] = value
    return options


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` -> (I, N) with 0 <= I < N."""
    index, sep, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        raise click.BadParameter(f"expected I/N, got {text!r}", param_hint="--shard") from None
    if not sep or not 0 <= shard[0] < shard[1]:
        raise click.BadParameter(f"need 0 <= I < N, got {text!r}", param_hint="--shard")
    return shard


@contextmanager
def episode_progress(
    label: str, stats: Callable[[], dict[str, int]] = dict
) -> Iterator[tuple[Callable[..., None], Callable[..., None]]]:
    """A progress bar fed by the runner's `on_start` / `on_result` callbacks.

    Shows episodes/s, episodes that ended in an error, and the backend's retries.
    """
    columns = (
        description_column(),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "{task.fields[speed]}  errors {task.fields[errors]}  retries {task.fields[retries]}"
        ),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with new_progress(*columns) as progress:
        task = progress.add_task(one_line(label), total=None, speed="- ep/s", errors=0, retries=0)
        errors = 0

        def on_start(total: int, done: int) -> None:
            progress.update(task, total=total, completed=done)

        def on_result(result: EpisodeResult | OEGResult) -> None:
            nonlocal errors
            errors += result.error is not None
            elapsed = progress.tasks[task].elapsed or 0.0
            speed = progress.tasks[task].speed
            rate = f"{speed:.1f}" if speed else (f"{1 / elapsed:.1f}" if elapsed else "-")
            retries = stats().get("retries", 0)
            progress.update(task, advance=1, speed=f"{rate} ep/s", errors=errors, retries=retries)

        yield on_start, on_result


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proactivebench")
def cli() -> None:
    """Measure and train proactiveness in multimodal LLMs (ProactiveBench)."""


def judge_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options that choose and shape a judge of open-ended answers."""
    options = (
        click.option(
            "--judge",
            "judge_spec",
            default=None,
            help=f"OEG: the judge model, any spec ({SPEC_HELP}).",
        ),
        click.option(
            "--judge-votes",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="OEG: judge each answer N times and take the majority.",
        ),
        click.option(
            "--judge-option",
            "judge_options",
            multiple=True,
            metavar="KEY=VALUE",
            help="OEG: a backend option of the judge, repeatable (as --model-option).",
        ),
        click.option(
            "--judge-max-tokens",
            type=click.IntRange(min=1),
            default=None,
            help="OEG: the judge's token limit [default: 32768].",
        ),
        click.option(
            "--judge-temperature",
            type=float,
            default=None,
            help="OEG: the judge's temperature [default: none sent, the server's].",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


def cache_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--cache PATH` and `--no-cache`."""
    command = click.option(
        "--no-cache", is_flag=True, help="Do not read or write the response cache."
    )(command)
    return click.option(
        "--cache",
        "cache_path",
        type=click.Path(path_type=Path),
        default=None,
        help="SQLite response cache [default: the user cache dir's responses.sqlite].",
    )(command)


def open_cache(cache_path: Path | None, no_cache: bool, wanted: bool) -> ResponseCache | None:
    """The response cache the options name, when a real model or judge will ask anything."""
    from proactivebench.models.cache import ResponseCache
    from proactivebench.paths import response_cache_path

    if no_cache or not wanted:
        return None
    return ResponseCache(cache_path or response_cache_path())


def make_judge(
    spec: str | None,
    votes: int,
    options: tuple[str, ...],
    max_tokens: int | None,
    temperature: float | None,
    seed: int = 0,
) -> Judge | None:
    """The judge the options describe, or None without `--judge`."""
    from proactivebench.judge import Judge, oeg_decoding

    if spec is None:
        return None
    decoding = with_overrides(oeg_decoding(), max_tokens=max_tokens, temperature=temperature)
    model = load_model(spec, seed=seed, **parse_model_options(options))
    return Judge(model, votes=votes, decoding=decoding)


def with_overrides(decoding: Decoding, **overrides: Any) -> Decoding:
    """`decoding` with the settings a user gave on the command line."""
    return dataclasses.replace(decoding, **{k: v for k, v in overrides.items() if v is not None})


@cli.command("eval")
@click.option(
    "--data",
    "data_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Data directory in the official layout (<stem>_preprocessed.jsonl + images).",
)
@click.option("--model", "model_spec", required=True, help=f"Model spec: {SPEC_HELP}.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Run directory; rerunning the same command resumes it.",
)
@click.option(
    "--scenarios",
    default=None,
    help=f"Comma-separated short names ({','.join(SCENARIOS)}); default: all present.",
)
@click.option("--hint", is_flag=True, help="Append the scenario's hint to every prompt.")
@click.option("--reference", is_flag=True, help="Reference (upper-bound) mode: one clear turn.")
@click.option("--random-actions", is_flag=True, help="Carry out a random action (ablation).")
@click.option(
    "--history", is_flag=True, help="Send every earlier turn of the episode with each turn."
)
@click.option(
    "--icl",
    type=click.IntRange(min=0),
    default=0,
    metavar="K",
    help="Show K oracle demonstrations of other samples before each episode.",
)
@click.option("--cot", is_flag=True, help="Demonstrations reason before intervening (--icl).")
@click.option(
    "--icl-reduced", is_flag=True, help="Demonstrations keep their first and last turn (--icl)."
)
@click.option(
    "--option-order",
    type=click.Choice(OPTION_ORDERS),
    default="record",
    show_default=True,
    help="shuffled: permute the shown options per sample and turn, to measure position bias.",
)
@click.option(
    "--answer-extraction",
    type=click.Choice(EXTRACTIONS),
    default="strict",
    show_default=True,
    help="lenient: drop <think> reasoning, markdown, 'Answer:' prefixes and brackets around a "
    "letter before reading (beyond the paper).",
)
@click.option(
    "--resize-short-edge",
    type=click.IntRange(min=8),
    default=None,
    metavar="N",
    help="Scale every image (COCO's crops excepted) to a short edge of N pixels.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N per scenario.")
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of random baselines and random actions.",
)
@click.option("--all-samples", is_flag=True, help="Do not apply the official test filter.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Episodes in flight at once.",
)
@click.option(
    "--endpoints",
    default=None,
    help="openai: comma-separated base URLs of replicas to spread requests over.",
)
@click.option(
    "--model-option",
    "model_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Backend option, repeatable (e.g. dtype=bfloat16, max_batch=16, image_format=PNG, "
    "api_key_env=MY_KEY, timeout=60, max_retries=8); VALUE is read as JSON when it parses.",
)
@click.option("--shard", default=None, metavar="I/N", help="Play slice I of N (0 <= I < N).")
@cache_options
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Default: 50 (MCQA), 32768 (OEG).",
)
@click.option(
    "--temperature",
    type=float,
    default=None,
    help="Default: 0, greedy (MCQA); none sent, the server's (OEG).",
)
@click.option("--top-p", type=float, default=None)
@click.option(
    "--mode",
    type=click.Choice(["mcqa", "oeg"]),
    default="mcqa",
    show_default=True,
    help="mcqa: multi-turn multiple choice; oeg: one open-ended turn, judged (needs --judge).",
)
@judge_options
@click.option(
    "--no-report",
    is_flag=True,
    help="Do not write the report (RUN_DIR/report/: tables, plots, HTML viewer) at the end.",
)
def eval_command(
    data_dir: Path,
    model_spec: str,
    out_dir: Path,
    scenarios: str | None,
    hint: bool,
    reference: bool,
    random_actions: bool,
    history: bool,
    icl: int,
    cot: bool,
    icl_reduced: bool,
    option_order: str,
    answer_extraction: str,
    resize_short_edge: int | None,
    limit: int | None,
    seed: int,
    all_samples: bool,
    concurrency: int,
    endpoints: str | None,
    model_options: tuple[str, ...],
    shard: str | None,
    cache_path: Path | None,
    no_cache: bool,
    max_tokens: int | None,
    temperature: float | None,
    top_p: float | None,
    mode: str,
    judge_spec: str | None,
    judge_votes: int,
    judge_options: tuple[str, ...],
    judge_max_tokens: int | None,
    judge_temperature: float | None,
    no_report: bool,
) -> None:
    """Play the benchmark's episodes with a model and score them."""
    from proactivebench.judge import oeg_decoding
    from proactivebench.runner import EvalSettings, evaluate

    options = parse_model_options(model_options)
    if endpoints:
        options["endpoints"] = endpoints
    model = load_model(model_spec, seed=seed, **options)
    base = oeg_decoding() if mode == "oeg" else Decoding()
    decoding = with_overrides(base, max_tokens=max_tokens, temperature=temperature, top_p=top_p)
    judge = make_judge(
        judge_spec, judge_votes, judge_options, judge_max_tokens, judge_temperature, seed
    )
    # Baselines answer faster than a lookup; a real model or judge is worth caching.
    real = model.needs_images or (judge is not None and judge.model.needs_images)
    cache = open_cache(cache_path, no_cache, wanted=real)
    settings = EvalSettings(
        decoding=decoding,
        hint=hint,
        reference=reference,
        random_actions=random_actions,
        history=history,
        icl=icl,
        cot=cot,
        icl_reduced=icl_reduced,
        option_order=option_order,
        answer_extraction=answer_extraction,
        resize_short_edge=resize_short_edge,
        mode=mode,
        seed=seed,
        limit=limit,
        all_samples=all_samples,
        scenarios=tuple(s.strip() for s in scenarios.split(",")) if scenarios else None,
    )
    with (
        contextlib.closing(cache) if cache else contextlib.nullcontext(),
        episode_progress(model.name, lambda: getattr(model, "stats", {})) as callbacks,
    ):
        on_start, on_result = callbacks
        outcome = evaluate(
            data_dir,
            model,
            out_dir,
            settings,
            concurrency=concurrency,
            shard=parse_shard(shard) if shard else None,
            cache=cache,
            judge=judge,
            on_start=on_start,
            on_result=on_result,
        )
    out.print(summary_table(outcome.summary))
    out.print(f"results: {outcome.out_dir / 'results.jsonl'}")
    if outcome.cached:
        console.print(
            f"{outcome.cached} of {outcome.answers} answers came from the response cache, not "
            "from the model (--no-cache asks the model again)",
            highlight=False,
        )
    finish_run(outcome.out_dir, write=not no_report)
    report_errors(outcome.errors, scored=sum(s.n for s in outcome.summary.scenarios.values()))


def finish_run(run_dir: Path, write: bool) -> None:
    """The run's report (unless --no-report), and the warnings that must not be missed."""
    from proactivebench.cli_report import print_report_outcome, print_warnings
    from proactivebench.report import write_report
    from proactivebench.report.measures import measure_run, unreadable_warnings
    from proactivebench.report.runs import load_runs

    if write:
        print_report_outcome(write_report([run_dir]))
    else:
        run = load_runs([run_dir])[0]
        print_warnings(unreadable_warnings(measure_run(run, n_resamples=0)))


#: Exit codes: every selected episode scored; bad input or nothing to play; a usage error
#: (click's); some episodes ended in an error (kept apart, a rerun retries them); interrupted.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_EPISODE_ERRORS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def report_errors(errors: Counter[str], scored: int) -> None:
    """Say why episodes failed, and exit with `EXIT_EPISODE_ERRORS` when any did."""
    if not errors:
        return
    total = sum(errors.values())
    reason, count = errors.most_common(1)[0]
    console.print(
        f"[yellow]{total} episode(s) ended in an error[/yellow], {scored} scored (the errors are "
        f"left out of the metrics; rerun the same command to retry them). Most common "
        f"({count}x): {escape(printable(reason))}",
        highlight=False,
    )
    sys.exit(EXIT_EPISODE_ERRORS)


@cli.command("judge")
@click.argument("run_dir", type=click.Path(path_type=Path))
@judge_options
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the judged run here [default: judge RUN_DIR in place].",
)
@cache_options
def judge_command(
    run_dir: Path,
    judge_spec: str | None,
    judge_votes: int,
    judge_options: tuple[str, ...],
    judge_max_tokens: int | None,
    judge_temperature: float | None,
    out_dir: Path | None,
    cache_path: Path | None,
    no_cache: bool,
) -> None:
    """Judge a finished open-ended run again, without asking the tested model anything."""
    from proactivebench.models.cache import CachedModel
    from proactivebench.oeg import rejudge

    judge = make_judge(judge_spec, judge_votes, judge_options, judge_max_tokens, judge_temperature)
    if judge is None:
        raise click.UsageError("say which model judges: --judge SPEC")
    cache = open_cache(cache_path, no_cache, wanted=judge.model.needs_images)
    if cache is not None:
        judge = judge.with_model(CachedModel(judge.model, cache))
    with contextlib.closing(cache) if cache else contextlib.nullcontext():
        summary = rejudge(run_dir, judge, out_dir)
    out.print(summary_table(summary))
    out.print(f"results: {(out_dir or run_dir) / 'results.jsonl'}")


@cli.command("merge")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path))
@click.option(
    "--partial",
    is_flag=True,
    help="Merge even when shards are missing or given twice (says which).",
)
def merge_command(run_dirs: tuple[Path, ...], out_dir: Path, partial: bool) -> None:
    """Join the run directories of the shards of one run (every shard, once)."""
    from proactivebench.runner import merge_runs

    summary = merge_runs(run_dirs, out_dir, partial=partial)
    out.print(summary_table(summary))
    out.print(f"results: {out_dir / 'results.jsonl'}")


@cli.command("demo")
@click.option(
    "--per-scenario",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Synthetic samples per scenario.",
)
@click.option("--seed", type=int, default=0, show_default=True)
def demo_command(per_scenario: int, seed: int) -> None:
    """Offline: generate a synthetic ProactiveBench once and score the built-in baselines."""
    from proactivebench.demo import DEMO_BASELINES, ensure_synthetic, run_demo
    from proactivebench.paths import cache_root

    with count_progress() as progress:
        task = progress.add_task("synthetic data", total=per_scenario * len(SCENARIOS))
        data_dir = ensure_synthetic(
            per_scenario, seed, progress=lambda n: progress.update(task, advance=n)
        )
        progress.update(task, completed=per_scenario * len(SCENARIOS))
        tasks = {n: progress.add_task(f"baseline:{n}", total=None) for n in DEMO_BASELINES}
        runs_dir = cache_root() / "runs" / f"demo-seed{seed}-n{per_scenario}"
        outcomes = run_demo(
            data_dir,
            runs_dir,
            seed=seed,
            on_start=lambda n, total, done: progress.update(tasks[n], total=total, completed=done),
            on_result=lambda n, r: progress.update(tasks[n], advance=1),
        )
    out.print(
        comparison_table(
            {n: o.summary for n, o in outcomes.items()},
            title=f"Synthetic ProactiveBench, {per_scenario} per scenario",
        )
    )
    out.print(f"data:    {data_dir}")
    out.print(f"results: {runs_dir}/<baseline>/results.jsonl")
    show_demo_episode(runs_dir / "proactive")


def show_demo_episode(run_dir: Path) -> None:
    """The demo's last word: one short episode of the `proactive` baseline, turn by turn."""
    from proactivebench.report.transcript import short_asking_episode, transcript

    line = short_asking_episode(run_dir)
    if line is None:
        return
    out.print()
    out.print(
        f"One episode of baseline:proactive (proactivebench show {run_dir} "
        f"{line['scenario']} {line['sample_id']}):",
        highlight=False,
        markup=False,
    )
    out.print(transcript(line, printable))


@cli.group()
def data() -> None:
    """Get, make and check benchmark data."""


@data.command("synth")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory to write (official layout + synth_manifest.json).",
)
@click.option("--per-scenario", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--split", type=click.Choice(["test", "train"]), default="test", show_default=True)
def data_synth(out_dir: Path, per_scenario: int, seed: int, split: str) -> None:
    """Generate a synthetic ProactiveBench of all seven scenarios."""
    from proactivebench.data.synth import generate

    with count_progress() as progress:
        task = progress.add_task(f"synth {split}", total=per_scenario * len(SCENARIOS))
        manifest = generate(
            out_dir,
            per_scenario=per_scenario,
            seed=seed,
            split=split,
            progress=lambda n: progress.update(task, advance=n),
        )
    counts = ", ".join(f"{k} {v}" for k, v in manifest["counts"].items())
    out.print(f"wrote {out_dir}: {counts}")


@data.command("validate")
@click.argument("data_dir", type=click.Path(path_type=Path))
@click.option("--decode", is_flag=True, help="Decode every image fully (slow), not only headers.")
def data_validate(data_dir: Path, decode: bool) -> None:
    """Check every record and every image a data directory refers to."""
    from proactivebench.data.validate import validate_dataset

    report_check(validate_dataset(data_dir, decode=decode), data_dir)


def report_check(check: DatasetCheck, data_dir: Path) -> None:
    """Print a data set's problems and warnings; exit 1 when it has problems."""
    where = escape(str(data_dir))
    for problem in check.problems:
        out.print(escape(str(problem)), highlight=False)
    for warning in check.warnings:
        out.print(escape(f"warning: {warning}"), highlight=False)
    if check.problems:
        console.print(f"[red]{len(check.problems)} problem(s)[/red] in {where}")
        sys.exit(1)
    warned = f", {len(check.warnings)} warning(s)" if check.warnings else ""
    valid = f"{check.records} records checked, every image present{warned}: {where} is valid"
    out.print(valid, highlight=False)


@data.command("download")
@click.option(
    "--dir",
    "data_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to put the data; default: 'official' in the user cache (PROACTIVEBENCH_CACHE).",
)
@click.option(
    "--repo",
    "repo_id",
    default="tdemin16/ProactiveBench",
    show_default=True,
    help="Dataset repo on the Hub (HF_ENDPOINT selects the Hub).",
)
@click.option("--revision", default=None, help="Branch, tag or commit; default: main.")
def data_download(data_dir: Path | None, repo_id: str, revision: str | None) -> None:
    """Download the official test data and validate it; rerun to resume an interrupted one."""
    from proactivebench.data.download import byte_progress, download_dataset

    with byte_progress(console) as on_progress:
        report = download_dataset(
            data_dir, repo_id=repo_id, revision=revision, on_progress=on_progress
        )
    where = escape(str(report.data_dir))
    summary = f"{repo_id}@{report.commit[:12]}: {report.summary()}"
    out.print(f"data in {where} ({summary})", highlight=False)
    report_check(report.check, report.data_dir)


# Training commands live in their own module (an optional extra; see cli_train).
cli.add_command(train_commands)
cli.add_command(import_inspect_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors become one message and a non-zero exit, never a traceback."""
    fit_to_output(console, out)
    root = logging.getLogger()
    if not root.handlers:  # the library's warnings, one line each
        handler = logging.StreamHandler()
        handler.setFormatter(PrintableFormatter("warning: %(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[handler])
    try:
        cli.main(args=argv, prog_name="proactivebench", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        console.print("interrupted; rerun the same command to resume")
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ProactiveBenchError as exc:
        console.print(f"[red]error:[/red] {escape(printable(str(exc)))}", highlight=False)
        sys.exit(EXIT_ERROR)


# The commands of their own modules register on `cli` (imported last: they import from here).
from proactivebench import cli_report  # noqa: E402, F401

if __name__ == "__main__":
    main()
