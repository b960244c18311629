"""The commands that make a run directory: `eval` plays and scores episodes, `judge` judges a
finished open-ended run again, `merge` joins the shards of one run.

Each parses its options, calls its job (`eval`: `proactivebench.jobs.evaluate`, or
`proactivebench.jobs.launch` for several processes; `judge`: `proactivebench.jobs.rejudge`;
`merge`: `proactivebench.run.rundir.merge_runs`) and prints the scores (`cli.output`). `eval`'s
run-setting options are generated from the settings' declaration
(`cli.options.setting_options`)."""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from proactivebench.cli.options import (
    backend_options,
    cache_options,
    data_option,
    decoding_of,
    decoding_options,
    judge_options,
    make_judge,
    open_cache,
    parse_shard,
    run_options,
    setting_options,
)
from proactivebench.cli.output import (
    EXIT_EPISODE_ERRORS,
    EXIT_ERROR,
    EXIT_OK,
    console,
    episode_progress,
    out,
    print_error,
    print_failures,
    print_report_outcome,
    print_warnings,
    shown_path,
    summary_table,
)
from proactivebench.models import SPEC_HELP, load_model
from proactivebench.run.settings import EvalSettings, RunOptions

if TYPE_CHECKING:
    from proactivebench.benchmark.metrics import Summary
    from proactivebench.jobs.evaluate import RunOutcome
    from proactivebench.jobs.launch import Launch, LaunchedOutcome
    from proactivebench.report import ReportOutcome
    from proactivebench.report.measures import Intervals
    from proactivebench.report.worker import ReportWorker


@click.command("eval")
@data_option
@click.option("--model", "model_spec", required=True, help=f"Model spec: {SPEC_HELP}.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Run directory; rerunning the same command resumes it.",
)
@setting_options(EvalSettings)
@decoding_options
@run_options()
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
    help="Backend option, repeatable (e.g. dtype=bfloat16, device_map=auto, max_batch=16, "
    "image_format=PNG, api_key_env=MY_KEY, timeout=60, max_retries=8, "
    "max_response_bytes=33554432); VALUE is read as JSON when it parses.",
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Play slice I of N (0 <= I < N); join the slices with merge. Not under torchrun or "
    "accelerate launch, where each process plays the slice of its rank by itself.",
)
@cache_options
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
    endpoints: str | None,
    model_options: tuple[str, ...],
    shard: str | None,
    cache_path: Path | None,
    no_cache: bool,
    judge_spec: str | None,
    judge_votes: int,
    judge_options: tuple[str, ...],
    judge_max_tokens: int | None,
    judge_temperature: float | None,
    no_report: bool,
    max_tokens: int | None,
    temperature: float | None,
    top_p: float | None,
    options: RunOptions,
    **run_settings: Any,
) -> None:
    """Play the benchmark's episodes with a model and score them.

    Started by torchrun or accelerate launch with N processes, each plays the shard of its
    rank into OUT/ranks/rank-I-of-N, and rank 0 merges them into OUT (docs/scale-out.md:
    "Across GPUs and nodes")."""
    from proactivebench.jobs.evaluate import evaluate, run_identity
    from proactivebench.jobs.launch import detect_launch
    from proactivebench.run.rundir import check_run_dir

    launch = detect_launch()
    if launch is not None and shard:
        raise click.UsageError(
            f"--shard plays one slice of a run started by hand (a job array, then merge); this "
            f"process is rank {launch.rank} of {launch.world_size} of a launcher, which plays "
            "the shard of its rank: leave out --shard"
        )
    # Checked first: a bad setting is told before a model is loaded or a cache opened.
    decoding = decoding_of(run_settings["mode"], max_tokens, temperature, top_p)
    settings = EvalSettings(decoding=decoding, **run_settings)
    # The run's seed also seeds the model (random baselines, sampling) and the judge.
    seed = settings.seed
    backend = backend_options(model_options)
    if endpoints:
        backend["endpoints"] = endpoints
    # A plain eval of many episodes has its report written by a worker process that gets
    # ready while the run plays (`report.worker`); never for --no-report.
    worker = report_worker(not no_report and launch is None)

    def play(run_dir: Path, part: tuple[int, int] | None, progress: bool = True) -> RunOutcome:
        # The judge first: one that cannot judge is refused before the model is loaded.
        judge = make_judge(
            judge_spec, judge_votes, judge_options, judge_max_tokens, judge_temperature, seed
        )
        model = load_model(model_spec, seed=seed, **backend)
        if launch is not None:
            # RUN of a launched run holds the run's identity: another model or settings (in
            # new shard directories, with another process count) is refused before a shard
            # is played, as a plain eval is, not by the merge once every shard was played.
            check_run_dir(out_dir, run_identity(Path(data_dir), model, settings, judge))
        # Only answers that are a function of the request are cached (`Model.cacheable`):
        # not the baselines' (faster than a lookup), replay's or a person's.
        real = model.cacheable or (judge is not None and judge.model.cacheable)
        cache = open_cache(cache_path, no_cache, wanted=real)
        label = model.name if launch is None else f"{model.name} [rank {launch.rank} shard]"
        with (
            contextlib.closing(cache) if cache else contextlib.nullcontext(),
            episode_progress(label, lambda: getattr(model, "stats", {}))
            if progress
            else contextlib.nullcontext((None, None)) as callbacks,
        ):
            on_start, on_result = callbacks
            if worker is not None:
                on_start = both(on_start, worker.on_start)
            return evaluate(
                data_dir,
                model,
                run_dir,
                settings,
                options=options,
                shard=part,
                cache=cache,
                judge=judge,
                on_start=on_start,
                on_result=on_result,
            )

    if launch is not None:
        eval_launched(launch, out_dir, play, no_report, no_cache)
        return
    with worker if worker is not None else contextlib.nullcontext():
        eval_played(play, out_dir, shard, no_report, no_cache, worker)


def eval_played(
    play: Callable[[Path, tuple[int, int] | None], RunOutcome],
    out_dir: Path,
    shard: str | None,
    no_report: bool,
    no_cache: bool,
    worker: ReportWorker | None,
) -> None:
    """A plain `eval` (not launched): play, then tell the run and write its report."""
    outcome = play(out_dir, parse_shard(shard) if shard else None)
    if not outcome.played:
        out.print(
            f"all {outcome.resumed} episodes already done in {outcome.out_dir}: nothing played. "
            "The existing results:"
        )
    if outcome.beyond:
        chosen = outcome.summary_episodes() - outcome.beyond
        console.print(
            f"note: this selection chose {chosen} of the run's {outcome.summary_episodes()} "
            "episodes; the table, summary.json and the report describe the whole run (use "
            "another --out to keep a subset apart)",
            highlight=False,
        )
    status = tell_run(
        outcome.summary,
        outcome.out_dir,
        outcome.errors,
        outcome.cached,
        outcome.answers,
        no_report,
        no_cache,
        worker,
    )
    if status != EXIT_OK:
        sys.exit(status)


def report_worker(wanted: bool) -> ReportWorker | None:
    """An idle `ReportWorker` when a report will be written (`wanted`): its module only then
    (`eval --no-report` imports nothing of the report)."""
    if not wanted:
        return None
    from proactivebench.report.worker import ReportWorker

    return ReportWorker()


def both(
    first: Callable[[int, int], None] | None, then: Callable[[int, int], None]
) -> Callable[[int, int], None]:
    """One `on_start` callback that calls `first` (if any), then `then`."""

    def called(total: int, done: int) -> None:
        if first is not None:
            first(total, done)
        then(total, done)

    return called


def eval_launched(
    launch: Launch,
    out_dir: Path,
    play: Callable[[Path, tuple[int, int], bool], RunOutcome],
    no_report: bool,
    no_cache: bool = False,
) -> None:
    """`eval` as one rank of a launched run: this rank's shard, then rank 0 merges, prints
    and reports the whole run; every rank ends with rank 0's exit status."""
    from proactivebench.jobs.launch import LaunchedRun

    with LaunchedRun(launch) as run:
        outcome = run.evaluate(out_dir, lambda where, part: play(where, part, launch.leader))
        if launch.leader:
            status = tell_launched(launch, outcome, out_dir, no_report, no_cache)
        else:
            # Rank 0 prints every rank's line; on rank 0's node the ranks share its terminal
            # (torchrun), so this rank's line would show twice. On another node it is the
            # only word of this rank there.
            mine = outcome.reports[launch.rank]
            if mine.host != outcome.reports[0].host:
                own = mine.describe(launch.world_size)
                console.print(
                    escape(f"{own}; rank 0 merges the shards into {out_dir} and reports the run"),
                    highlight=False,
                )
            status = EXIT_OK
        # Everything is said before: the launcher stops the other ranks once one has ended.
        status = run.agree(status)
    sys.exit(status)


def tell_launched(
    launch: Launch, outcome: LaunchedOutcome, out_dir: Path, no_report: bool, no_cache: bool = False
) -> int:
    """Rank 0: what each rank did, then the merged run (table, report, episode errors) or why
    it was not merged; returns the exit status of the whole run."""
    for report in outcome.reports:
        console.print(escape(report.describe(launch.world_size)), highlight=False)
    if outcome.problem is not None or outcome.merged is None:
        print_error(outcome.problem or f"{out_dir} was not merged")
        return EXIT_ERROR
    return tell_run(
        outcome.merged,
        out_dir,
        outcome.errors,
        outcome.cached,
        outcome.answers,
        no_report,
        no_cache,
    )


def tell_run(
    summary: Summary,
    run_dir: Path,
    errors: Counter[str],
    cached: int,
    answers: int,
    no_report: bool,
    no_cache: bool = False,
    worker: ReportWorker | None = None,
) -> int:
    """A finished run, as `eval` ends (plain or launched): the table (each rate with the ± of
    its 95 % interval), where the results are, how many answers the response cache gave, the
    report (by `worker` when one was started), and why episodes failed; returns the exit
    status."""
    intervals, warnings, report = measure_and_report(run_dir, not no_report, not no_cache, worker)
    out.print(summary_table(summary, intervals=intervals))
    out.print(f"results: {shown_path(run_dir / 'results.jsonl')}")
    if cached:
        console.print(
            f"{cached} of {answers} answers came from the response cache, not "
            "from the model (--no-cache asks the model again)",
            highlight=False,
        )
    tell_report(warnings, report)
    scored = sum(s.n for s in summary.scenarios.values())
    return EXIT_EPISODE_ERRORS if print_episode_errors(errors, scored) else EXIT_OK


def tell_table(summary: Summary, run_dir: Path) -> None:
    """The table as `eval` prints it (each rate with the ± of its 95 % interval), where the
    results are and the warnings: what `merge` and `import-inspect` end with, as `eval
    --no-report` does, so that the same run reads the same whichever command made it."""
    intervals, warnings, _ = measure_and_report(run_dir, write=False)
    out.print(summary_table(summary, intervals=intervals))
    out.print(f"results: {shown_path(run_dir / 'results.jsonl')}")
    print_warnings(warnings)


def measure_and_report(
    run_dir: Path, write: bool, thumb_cache: bool = True, worker: ReportWorker | None = None
) -> tuple[Intervals, list[str], ReportOutcome | None]:
    """Each rate's 95 % interval (the terminal's ±), the warnings that must not be missed,
    and, unless --no-report, the run's report (its thumbnails cached unless `thumb_cache` is
    off: --no-cache), which measures the run anyway: the terminal's ± and the report's
    intervals are the same numbers, computed once. A report or a finished run that nothing has
    changed since tells what it remembered, without reading a line. A `worker` writes the
    report when one was started; when it could not, the report is written here and a warning
    says why."""
    if not write:  # the run's measures alone: not the report's builder, plots and page
        from proactivebench.report.measures import run_warnings_and_intervals

        warnings, intervals = run_warnings_and_intervals(run_dir)
        return intervals, warnings, None
    cache = "default" if thumb_cache else None
    if worker is not None:
        report = worker.write(run_dir, if_changed=True, thumb_cache=cache)
        if worker.trouble is not None:
            print_warnings([f"{worker.trouble}; the report was written by this process"])
    else:
        from proactivebench.report import write_report

        report = write_report([run_dir], if_changed=True, thumb_cache=cache)
    return report.intervals, report.warnings, report


def tell_report(warnings: list[str], report: ReportOutcome | None) -> None:
    """Where the report went (if written; it tells its warnings), or the warnings alone."""
    if report is not None:
        print_report_outcome(report)
    else:
        print_warnings(warnings)


def print_episode_errors(errors: Counter[str], scored: int) -> bool:
    """Say why episodes failed, if any did (returns whether)."""
    if not errors:
        return False
    print_failures(
        errors,
        f"{errors.total()} episode(s) ended in an error",
        f", {scored} scored (the errors are left out of the metrics; rerun the same command to "
        "retry them)",
    )
    return True


@click.command("judge")
@click.argument("run_dir", type=click.Path(path_type=Path))
@judge_options
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the judged run here [default: judge RUN_DIR in place, keeping the results it "
    "replaces as RUN_DIR/results.previous.jsonl].",
)
@run_options("judge")
@cache_options
@click.option(
    "--no-report",
    is_flag=True,
    help="Do not rewrite the report (the run directory's report/) at the end.",
)
def judge_command(
    run_dir: Path,
    judge_spec: str | None,
    judge_votes: int,
    judge_options: tuple[str, ...],
    judge_max_tokens: int | None,
    judge_temperature: float | None,
    out_dir: Path | None,
    options: RunOptions,
    cache_path: Path | None,
    no_cache: bool,
    no_report: bool,
) -> None:
    """Judge a finished open-ended run again, without asking the tested model anything.

    A multi-turn run (--mode oeg-multiturn) keeps the episodes every turn of which the new
    judge judges as before; the others are left out, for `eval` to play again (it prints
    the command).
    A line the judge could not judge (its call failed) keeps the verdict it had; rerun the
    same command to retry those lines (exit 3 until none is left). Interrupted (Ctrl-C), the
    same command goes on from the lines judged so far."""
    from proactivebench.jobs.rejudge import PREVIOUS_RESULTS, backup_stays, rejudge
    from proactivebench.run.engine import RunEngine

    judge = make_judge(judge_spec, judge_votes, judge_options, judge_max_tokens, judge_temperature)
    if judge is None:
        raise click.UsageError("say which model judges: --judge SPEC")
    cache = open_cache(cache_path, no_cache, wanted=judge.model.cacheable)
    backend = judge.model  # its retries are shown, the cache has none
    target = out_dir if out_dir is not None else run_dir

    def tell_start(to_judge: int, lines: int, judged_before: int) -> None:
        where = "in place" if target.resolve() == run_dir.resolve() else f"into {target}"
        kept = (
            f"; the earlier judge's results stay in {target / PREVIOUS_RESULTS}"
            if backup_stays(target, judge)
            else f"; the results it replaces are kept as {target / PREVIOUS_RESULTS}"
            if (target / "results.jsonl").exists()
            else ""
        )
        before = (
            f" ({judged_before} more were judged before it was interrupted)"
            if judged_before
            else ""
        )
        console.print(
            escape(f"judging {to_judge} of {lines} lines of {run_dir} {where}{before}{kept}"),
            highlight=False,
        )

    label = f"judging with {backend.name}"
    with (
        contextlib.closing(cache) if cache else contextlib.nullcontext(),
        episode_progress(label, lambda: getattr(backend, "stats", {})) as (progress, on_result),
    ):

        def on_start(to_judge: int, lines: int, judged_before: int) -> None:
            tell_start(to_judge, lines, judged_before)
            progress(to_judge, 0)

        outcome = rejudge(
            run_dir,
            judge,
            out_dir,
            engine=RunEngine(options, cache),
            on_start=on_start,
            on_result=on_result,
        )
    tell_discarded(outcome.discarded, target)
    if outcome.untouched:
        print_failures(
            outcome.failures or Counter({"the judge gave no verdict": 1}),
            "no line could be judged",
            ": the run is left as it was, judged by its earlier judge; rerun the same "
            "command to retry",
        )
        sys.exit(EXIT_EPISODE_ERRORS)
    intervals, warnings, report = measure_and_report(outcome.out_dir, not no_report, not no_cache)
    out.print(summary_table(outcome.summary, intervals=intervals))
    out.print(f"results: {shown_path(outcome.out_dir / 'results.jsonl')}")
    tell_report(warnings, report)
    if outcome.replay:
        tell_replay(outcome.replay, outcome.out_dir, judge_spec or "", outcome.previous)
    if outcome.failures:
        total = outcome.failures.total()
        unscored = total - outcome.kept
        none = f", {unscored} have none and are left out of the metrics" if unscored else ""
        print_failures(
            outcome.failures,
            f"{total} line(s) could not be judged",
            f" ({outcome.kept} kept their previous verdict{none}); rerun the same command to "
            "retry them",
        )
        sys.exit(EXIT_EPISODE_ERRORS)


def tell_discarded(discarded: Counter[str], out_dir: Path) -> None:
    """Say, one line a judge, which verdicts of an interrupted judging by another judge this
    judging did not take: they were in the journal it removed."""
    from proactivebench.run.rundir import JUDGED_SO_FAR

    for judge, count in sorted(discarded.items()):
        out.print(
            escape(
                f"note: the interrupted judging by {judge} held {count} verdict(s) in "
                f"{out_dir / JUDGED_SO_FAR}; discarded, since another judge was asked (rerun "
                "that judge to judge those lines again)"
            ),
            highlight=False,
        )


def tell_replay(count: int, out_dir: Path, judge_spec: str, previous: Path | None) -> None:
    """Say which multi-turn episodes re-judging left out and the `eval` that plays them again:
    a verdict changed at a turn means the episode would have gone otherwise, which only
    playing it with the new judge can tell (docs/protocol.md §6); rerunning `judge` cannot.
    The command is the run's as run.json records it (`replay_commands`)."""
    commands = replay_commands(out_dir, judge_spec)
    kept = f"; the lines they replace are kept in {previous}" if previous else ""
    shown = " ; ".join(commands) if commands else ""
    unknown = (
        ", with the selection options it was played with (run.json of an earlier version "
        "does not record them)"
        if not _selections(out_dir)
        else ""
    )
    out.print(
        escape(
            f"{count} multi-turn episode(s) were judged otherwise at some turn, so they would "
            f"have gone otherwise: left out of {out_dir / 'results.jsonl'}{kept}. Play them "
            f"again with the new judge{unknown}: {shown}"
        ),
        highlight=False,
    )


def _selections(out_dir: Path) -> list[dict[str, Any]]:
    """What selected the episodes of each invocation that played into `out_dir` (its
    provenance's `SELECTED_BY`), each once, in order; a run that is no shard (unsharded, or
    shards merged) without their shards, since it holds every slice."""
    from proactivebench.run.engine import SELECTED_BY
    from proactivebench.run.rundir import provenance_of, read_run_config
    from proactivebench.run.selection_record import SELECTION

    config = read_run_config(out_dir)
    selection = config.get(SELECTION)
    sharded = isinstance(selection, dict) and selection.get("shard") is not None
    found: list[dict[str, Any]] = []
    for entry in provenance_of(config):
        chosen = entry.get(SELECTED_BY)
        if not isinstance(chosen, dict):
            continue
        chosen = chosen if sharded else {k: v for k, v in chosen.items() if k != "shard"}
        if chosen not in found:
            found.append(chosen)
    return found


def replay_commands(out_dir: Path, judge_spec: str) -> list[str]:
    """The `eval` command(s) that play the run in `out_dir` again with `judge_spec`: its data,
    model, episode settings (as its identity records them), decoding and judge's votes and
    decoding, and the selection of each invocation (`_selections`: one command each, since
    a run extended by another `--scenarios` holds both), every option derived from the
    settings' declaration (`settings.eval_arguments`)."""
    from proactivebench.run.judge import oeg_decoding
    from proactivebench.run.rundir import read_run_config
    from proactivebench.run.settings import eval_arguments

    config = read_run_config(out_dir)
    identity = config.get("settings") if isinstance(config.get("settings"), dict) else {}
    base = [
        "proactivebench",
        "eval",
        "--data",
        str(config.get("data_dir", "DATA")),
        "--model",
        str(config.get("model", "MODEL")),
    ]
    decoding = identity.get("decoding") if isinstance(identity.get("decoding"), dict) else {}
    judge = identity.get("judge") if isinstance(identity.get("judge"), dict) else {}
    judged = judge.get("decoding") if isinstance(judge.get("decoding"), dict) else {}
    default = oeg_decoding().as_dict()
    extra = _decoding_options("--", decoding, default, ("max_tokens", "temperature", "top_p"))
    extra += ["--judge", judge_spec]
    if judge.get("votes", 1) != 1:
        extra += ["--judge-votes", str(judge["votes"])]
    extra += _decoding_options("--judge-", judged, default, ("max_tokens", "temperature"))
    extra += ["--out", str(out_dir)]
    commands = []
    for chosen in _selections(out_dir) or [{}]:
        shard = chosen.get("shard")
        sharded = ["--shard", f"{shard[0]}/{shard[1]}"] if isinstance(shard, list) else []
        options = eval_arguments(identity, chosen)
        commands.append(shlex.join([*base, *options, *sharded, *extra]))
    return commands


def _decoding_options(
    prefix: str, recorded: dict[str, Any], default: dict[str, Any], names: tuple[str, ...]
) -> list[str]:
    """`--max-tokens N`-like options for the decoding settings `recorded` holds otherwise
    than the open-ended default (a value at its default is left out)."""
    options = []
    for name in names:
        if name in recorded and recorded[name] != default.get(name):
            options += [f"{prefix}{name.replace('_', '-')}", str(recorded[name])]
    return options


@click.command("merge")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory for the merged run: one run directory, as eval writes (report and show "
    "read it; eval resumes it, e.g. after --partial).",
)
@click.option(
    "--partial",
    is_flag=True,
    help="Merge even when shards are missing or given twice (says which). A shard that "
    "stopped before its end merges without it: the merged run is partial, said, and `eval "
    "--out MERGED` plays the rest.",
)
def merge_command(run_dirs: tuple[Path, ...], out_dir: Path, partial: bool) -> None:
    """Join the run directories of the shards of one run (every shard, once)."""
    from proactivebench.jobs.evaluate import merge_runs

    tell_table(merge_runs(run_dirs, out_dir, partial=partial), out_dir)
