"""Everything the commands show on the terminal, and how they end.

The consoles (`console`: progress, notes and warnings on stderr; `out`: results on stdout),
making untrusted text inert (`printable`, `one_line`, `PrintableFormatter`), the tables of
scores (`summary_table`, `comparison_table`), progress (a bar on a terminal, plain periodic
lines off one), the exit codes, and the small printers several commands share. The command
modules (`cli.run`, `cli.report`, ...) import from here; this module imports no command, so
the package has no import circle.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from proactivebench.core.escapes import visible

if TYPE_CHECKING:
    from proactivebench.benchmark.metrics import ScenarioScore, Summary
    from proactivebench.benchmark.results import EpisodeResult, OEGResult
    from proactivebench.report import ReportOutcome
    from proactivebench.report.measures import Intervals
    from proactivebench.report.tables import Cell as ReportCell
    from proactivebench.report.tables import Table as ReportTable


class InertConsole(Console):
    """A console through which no text from outside can act on the terminal: every string it
    is given is made `printable` before its markup is read (`render_str`: what `print` and
    table cells and titles go through, so a path or a name in an f-string is covered), and
    every segment it writes is made printable again (`render`: text that came as a rich
    `Text`, e.g. a transcript). Escapes are ASCII, so escaping twice changes nothing; rich's
    own colours and cursor moves are control segments, written as they are."""

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(printable(text), **options)

    def render(self, renderable: Any, options: Any = None) -> Iterator[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
            else:
                shown = printable(segment.text)
                yield segment if shown == segment.text else Segment(shown, segment.style)


# soft_wrap: a line is never broken by rich; a terminal wraps what is too long by itself, so
# a path or a verdict stays one line for the eye, for copy-paste, and for scripts and tests.
# emoji=False: ":x:" in a model name or an answer stays ":x:".
console = InertConsole(stderr=True, soft_wrap=True, emoji=False)


class ReaderMayStop(InertConsole):
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
    """Multi-line text (an answer, a transcript, a traceback) for the terminal: control,
    format and separator characters visible (`\x1b`, `\u202e`, `\u2028`), line breaks kept."""
    return visible(text, keep_lines=True)


#: A name shown in a title or a progress line: one line, every control character visible.
one_line = visible


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path for a console message: one line (`one_line`: a line feed in a folder's name is
    `\\n`, not a break that cuts the path in two), its brackets not read as markup. The
    console keeps line feeds (`printable`), so a path must be made one line where it is
    formatted."""
    return escape(one_line(os.fspath(path)))


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


def interval_caption() -> str:
    """Under a table whose rates carry ±: what the number after it is."""
    from proactivebench.benchmark.metrics import INTERVAL_NAME

    return f"±: half the width of the {INTERVAL_NAME}; the report gives its bounds"


def plus_minus(estimate: str, low: float, high: float) -> str:
    """`42.0 ± 3.1`: a rate shown as `estimate` (already formatted) with half the width of its
    95 % interval, to as many decimals as the estimate, as lmms-eval shows a standard error.
    Half the width, because the interval need not be symmetric around the estimate
    (the report's tables and report.json keep both bounds)."""
    decimals = len(estimate.partition(".")[2])
    return f"{estimate} ± {(high - low) / 2:.{decimals}f}"


def summary_table(
    summary: Summary, title: str | None = None, intervals: Intervals | None = None
) -> Table:
    """Per-scenario n, the run's rates and errors, and their average over scenarios; with the
    run's `intervals` (the report's), each rate that has a 95 % interval gets its ±."""
    from proactivebench.benchmark.metrics import AVERAGE, headline_metrics

    columns = headline_metrics(summary.oeg)
    intervals = intervals or {}
    shows_interval = any(m.key in intervals.get(AVERAGE, {}) for m in columns)
    table = Table(
        title=Text(one_line(title or summary.model)),
        caption=interval_caption() if shows_interval else None,
        caption_justify="left",
    )
    table.add_column("scenario")
    table.add_column("n", justify="right")
    for metric in columns:
        table.add_column(metric.heading, justify="right")
    table.add_column("errors", justify="right")

    def cells(score: ScenarioScore, bounds: dict[str, list[float]]) -> list[str]:
        rates = []
        for metric in columns:
            value = getattr(score, metric.key)
            if value is None:
                rates.append("—")
            elif metric.key in bounds:
                rates.append(plus_minus(metric.text(value), *bounds[metric.key]))
            else:
                rates.append(metric.text(value))
        return [str(score.n), *rates, str(score.errors)]

    for short, score in summary.scenarios.items():
        table.add_row(short, *cells(score, intervals.get(short, {})))
    average = summary.average
    if average is not None:
        table.add_section()
        table.add_row(
            summary.average_label,
            *cells(average, intervals.get(AVERAGE, {})),
            style="bold",
        )
    return table


#: The legend under the demo's comparison table.
COMPARISON_LEGEND = (
    "acc %: episodes that ended on the correct category. ps: proactive suggestions per "
    "episode, on average (a count, not a %). —: no episode scored."
)


def comparison_table(summaries: dict[str, Summary], title: str) -> Table:
    """Accuracy and ps rate of several runs side by side, one row per scenario."""
    from proactivebench.benchmark.registry import scenario_order

    table = Table(title=title, caption=COMPARISON_LEGEND, caption_justify="left")
    table.add_column("scenario")
    for name in summaries:
        table.add_column(f"{name}\nacc % | ps", justify="right")
    shown = scenario_order(s for summary in summaries.values() for s in summary.scenarios)
    rows: dict[str, list[str]] = {s: [] for s in shown}
    averages = []
    for summary in summaries.values():
        for short in shown:
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
    only a terminal can redraw in place. Each line says how long the rest should take, at the
    pace so far (as the bar's time-remaining column does)."""

    def __init__(
        self, *columns: Any, console: Console, get_time: Callable[[], float] | None = None
    ) -> None:
        super().__init__(*columns, console=console, disable=True, get_time=get_time)
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
        self._say(self._line(task))

    @staticmethod
    def _line(task: Task) -> str:
        """`NAME: done/total (p%), field value..., elapsed, about ETA left`."""
        total, done = task.total or 0, task.completed
        fields = "".join(f", {name} {value}" for name, value in task.fields.items())
        remaining = task.time_remaining
        eta = f", about {duration(remaining)} left" if remaining and done < total else ""
        return (
            f"{task.description}: {_count(done)}/{_count(total)} "
            f"({100 * done / total:.0f}%){fields}, {task.elapsed or 0:.0f}s{eta}"
        )

    def _say(self, line: str) -> None:
        self.console.print(printable(line), markup=False, highlight=False)


class SeveralLineProgress(LineProgress):
    """Progress off a terminal of several tasks played at once (a suite's experiments): a
    task's line when it starts and when it ends, and, every `every` seconds, one line of every
    running task's count. A tenth of each task, told as it came, interleaved the experiments
    line by line and grew with them; these lines grow with the time taken and the number of
    experiments, not with their episodes."""

    def __init__(
        self,
        *columns: Any,
        console: Console,
        get_time: Callable[[], float] | None = None,
        every: float = 30.0,
    ) -> None:
        super().__init__(*columns, console=console, get_time=get_time)
        self.every = every
        #: When the line of every running task was last told (or the first task started).
        self._told_all: float | None = None

    def _report(self, task_id: TaskID, final: bool = False) -> None:
        task = self._tasks[task_id]
        total, done, now = task.total, task.completed, self.get_time()
        if not total:
            return
        last = self._reported.get(task_id)
        ended = done >= total and (last is None or last[0] != done)
        if last is None or ended or (final and done != last[0]):
            self._reported[task_id] = (done, now)
            self._say(self._line(task))
            if self._told_all is None:
                self._told_all = now
            return
        if self._told_all is not None and now - self._told_all >= self.every:
            self._told_all = now
            running = [
                t
                for t in self._tasks.values()
                if t.total and t.id in self._reported and t.completed < t.total
            ]
            counts = (
                f"{t.description.strip()} {_count(t.completed)}/{_count(t.total or 0)}"
                for t in running
            )
            self._say(f"running: {'; '.join(counts)}")


def _count(value: float) -> str:
    """A progress count as people read it: whole numbers whole at any size (`g` would write
    1234567 as 1.23457e+06), a fraction with its digits."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def duration(seconds: float) -> str:
    """A time span as people read it in a log line: 45s, 3m20s, 2h05m."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def print_error(message: str | Sequence[str]) -> None:
    """A user error, as `main` tells it: one `error:` line, or a line of each of its `lines`
    (`ProactiveBenchError.lines`), each one line: a line feed in a path it names is shown
    `\\n`, not a break that cuts the message in two."""
    lines = [message] if isinstance(message, str) else list(message)
    shown = "\n".join(escape(one_line(line)) for line in lines)
    console.print(f"[red]error:[/red] {shown}", highlight=False)


def description_column() -> TextColumn:
    """A progress task's name, as plain text (a model spec is not markup)."""
    return TextColumn("{task.description}", style="bold", markup=False)


def new_progress(*columns: Any, several: bool = False) -> Progress:
    """A rich progress bar on a terminal, plain periodic lines anywhere else (`several`
    tasks played at once: `SeveralLineProgress`)."""
    if console.is_terminal:
        return Progress(*columns, console=console)
    if several:
        return SeveralLineProgress(*columns, console=console)
    return LineProgress(*columns, console=console)


def count_progress() -> Progress:
    """A plain bar with a count, for generation and the demo's runs."""
    columns = (description_column(), BarColumn(), MofNCompleteColumn())
    return new_progress(*columns, TimeElapsedColumn())


class EpisodeRate:
    """A progress task's episodes per second, worked out when a bar or a line shows it: rich's
    estimate walks the task's recent samples, which, done for every episode as it ends, cost
    more than a fast backend's whole episode."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self.progress, self.task = progress, task

    def __str__(self) -> str:
        task = next(t for t in self.progress.tasks if t.id == self.task)
        speed = task.speed or (task.completed / task.elapsed if task.elapsed else None)
        return f"{speed:.1f} ep/s" if speed else "- ep/s"


@contextmanager
def episode_progress(
    label: str, stats: Callable[[], dict[str, int]] = dict
) -> Iterator[tuple[Callable[..., None], Callable[..., None]]]:
    """A progress bar fed by `evaluate`'s `on_start` / `on_result` callbacks.

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
    # Shown from `on_start` on, which `evaluate` calls once the model answered its preflight:
    # a run that cannot start says so without a bar before it.
    progress = new_progress(*columns)
    task = progress.add_task(one_line(label), total=None, speed="", errors=0, retries=0)
    progress.update(task, speed=EpisodeRate(progress, task))
    errors = 0
    shown = False

    def on_start(total: int, done: int) -> None:
        nonlocal shown
        if not shown:
            progress.start()
            shown = True
        progress.update(task, total=total, completed=done)

    def on_result(result: EpisodeResult | OEGResult) -> None:
        nonlocal errors
        errors += result.error is not None
        retries = stats().get("retries", 0)
        progress.update(task, advance=1, errors=errors, retries=retries)

    try:
        yield on_start, on_result
    finally:
        if shown:
            progress.stop()


#: Exit codes: every selected episode scored; bad input or nothing to play; a usage error
#: (click's); some episodes ended in an error (kept apart, a rerun retries them); interrupted.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_EPISODE_ERRORS, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
#: Stopped by SIGTERM: handled as Ctrl-C, with the shell's code for it (128 + 15).
EXIT_TERMINATED = 143


def print_failures(errors: Counter[str], headline: str, detail: str) -> None:
    """Say that things failed: `headline` (highlighted, e.g. "3 episode(s) ended in an
    error"), `detail`, and the most common reason with its count (the reason is outside text:
    printed inert)."""
    reason, count = errors.most_common(1)[0]
    console.print(
        f"[yellow]{headline}[/yellow]{detail}. Most common ({count}x): {escape(printable(reason))}",
        highlight=False,
    )


def print_warnings(warnings: list[str]) -> None:
    """Warnings that must not be missed (e.g. unreadable answers), one line each, on stderr."""
    for warning in warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(printable(warning))}", highlight=False)


def report_table(table: ReportTable) -> Table:
    """One of the report's tables (`report.tables.Table`) for the terminal, its average row set
    apart as in the report's own formats; a rate with an interval shows its ± (`42.0 ± 3.1`)
    rather than its bounds, so that six runs side by side still fit a wide terminal."""
    # Differences (--vs) keep their bounds: whether the interval holds 0 is their point.
    differences = table.key.startswith("vs-")
    intervals = not differences and any(c.low is not None for row in table.rows for c in row)
    shown = Table(
        title=Text(one_line(table.title)),
        caption=interval_caption() if intervals else None,
        caption_justify="left",
    )
    for index, heading in enumerate(table.columns):
        shown.add_column(one_line(heading), justify="left" if index == 0 else "right")
    for number, row in enumerate(table.rows):
        last = number == len(table.rows) - 1
        if last and table.average_last and len(table.rows) > 1:
            shown.add_section()
        style = "bold" if last and table.average_last else None
        texts = [cell.text if differences else _terminal_text(cell) for cell in row]
        shown.add_row(*(Text(printable(text)) for text in texts), style=style)
    return shown


def _terminal_text(cell: ReportCell) -> str:
    """A rate with its interval as `estimate ± half-width`; anything else as the report
    writes it."""
    estimate, bracket, rest = cell.text.partition(" [")
    if cell.low is None or cell.high is None or not bracket:
        return cell.text  # no interval shown (a plain mean): as the report writes it
    # What follows the interval ("not compared") stays: it says how to read the number.
    return plus_minus(estimate, cell.low, cell.high) + rest.partition("]")[2]


def print_report_outcome(outcome: ReportOutcome) -> None:
    """Where the report went, what it lacks, the unreadable-answer warnings, and last (a
    suite's report) the paper's findings as its experiments answer them."""
    for note in outcome.notes:
        console.print(f"note: {escape(printable(note))}", highlight=False)
    kept = " (up to date: nothing changed since it was written)" if outcome.unchanged else ""
    out.print(f"report: {shown_path(outcome.html)}{kept}", highlight=False)
    print_warnings(outcome.warnings)
    for finding in outcome.findings:  # one message each, as note: and warning: are
        out.print(f"finding: {escape(printable(finding))}", highlight=False)
