"""`proactivebench demo`: the whole benchmark offline in one command, for a first look.

Generates a synthetic data set once (cached), scores the built-in baselines on it
(`proactivebench.jobs.demo`), writes their report (tables, plots, the episode viewer), prints their
comparison table, where the files are, and one episode of the `proactive` baseline, turn by
turn.
"""

from __future__ import annotations

from pathlib import Path

import click

from proactivebench.benchmark.metrics import Summary
from proactivebench.cli.output import (
    comparison_table,
    count_progress,
    out,
    printable,
    shown_path,
)


@click.command("demo")
@click.option(
    "--per-scenario",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Synthetic samples per scenario.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the synthetic data and of the random baselines; each seed and size is "
    "generated once and kept in the user cache.",
)
def demo_command(per_scenario: int, seed: int) -> None:
    """Offline: generate a synthetic ProactiveBench once and score the built-in baselines."""
    from proactivebench.core.paths import cache_root
    from proactivebench.data.synth import generatable
    from proactivebench.jobs.demo import (
        DEMO_BASELINES,
        ensure_synthetic,
        run_demo,
        write_demo_report,
    )

    with count_progress() as progress:
        total = per_scenario * len(generatable())
        task = progress.add_task("synthetic data", total=total)
        data_dir = ensure_synthetic(
            per_scenario, seed, progress=lambda n: progress.update(task, advance=n)
        )
        progress.update(task, completed=total)
        tasks = {n: progress.add_task(f"baseline:{n}", total=None) for n in DEMO_BASELINES}
        runs_dir = cache_root() / "runs" / f"demo-seed{seed}-n{per_scenario}"
        outcomes = run_demo(
            data_dir,
            runs_dir,
            seed=seed,
            on_start=lambda n, total, done: progress.update(tasks[n], total=total, completed=done),
            on_result=lambda n, r: progress.update(tasks[n], advance=1),
        )
        progress.add_task("report", total=None)
        report = write_demo_report(runs_dir)
    out.print(
        comparison_table(
            {n: o.summary for n, o in outcomes.items()},
            title=f"Synthetic ProactiveBench, {per_scenario} per scenario",
        )
    )
    note = oracle_note(outcomes["oracle"].summary) if "oracle" in outcomes else None
    if note:
        out.print(note, highlight=False)
    out.print(f"data:    {shown_path(data_dir)}")
    out.print(f"results: {shown_path(runs_dir)}/<baseline>/results.jsonl")
    out.print(f"report:  {report.html}")
    show_demo_episode(runs_dir / "proactive")


def oracle_note(summary: Summary) -> str | None:
    """Why the oracle's ps rate is 0.00 where it is: a reader of the table would take it for
    a fault. The oracle plays the best move, and where the first turn already counts the
    category as correct the best move is to answer at once, without asking."""
    at_once = [name for name, score in summary.scenarios.items() if score.ps_rate == 0]
    if not at_once:
        return None
    return (
        f"oracle ps 0.00 on {', '.join(at_once)}: the oracle knows the answer, and there the "
        "protocol counts the correct category as right from the first turn, so its best move "
        "asks nothing; a model's ps rate reads between oracle (the "
        "fewest suggestions of a perfect model) and proactive (the most)."
    )


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
