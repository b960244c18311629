"""The commands that read finished runs: `report` writes tables, plots and the HTML viewer
(`proactivebench.report`) and prints the tables people look for first (the run's, or those that
set several runs side by side) and where the files are; `show` prints one episode as a
transcript."""

from __future__ import annotations

from pathlib import Path

import click

from proactivebench.cli.fit import column_blocks
from proactivebench.cli.output import (
    out,
    print_report_outcome,
    printable,
    report_table,
    shown_path,
)
from proactivebench.core.errors import ProactiveBenchError


def parse_params(pairs: tuple[str, ...]) -> dict[str, float]:
    """`NAME=7B` pairs -> {NAME: 7.0} (billions of parameters)."""
    from proactivebench.report.runs import parse_param_count

    params: dict[str, float] = {}
    for pair in pairs:
        name, sep, count = pair.rpartition("=")
        if not sep or not name.strip():
            raise click.BadParameter(
                f"expected NAME=COUNT (e.g. qwen=7B), got {pair!r}", param_hint="--params"
            )
        try:
            params[name.strip()] = parse_param_count(count)
        except ProactiveBenchError as exc:
            raise click.BadParameter(str(exc), param_hint="--params") from None
    return params


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Report directory [default: RUN_DIR/report for one run; needed for several].",
)
@click.option(
    "--vs",
    "vs_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="A run to compare every run with: paired differences and McNemar p-values.",
)
@click.option(
    "--params",
    "params",
    multiple=True,
    metavar="NAME=7B",
    help="Parameter count of a run's model (NAME: model, label or directory name), for the "
    "size plot; repeatable.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, help="Bootstrap seed [0 or more].")
@click.option(
    "--thumb-cache",
    "thumb_cache",
    type=click.Path(path_type=Path),
    default=None,
    help="SQLite cache of the episode viewer's thumbnails, reused by every report of the same "
    "images [default: thumbnails.sqlite in the user cache dir, beside the response cache].",
)
@click.option("--no-thumb-cache", is_flag=True, help="Make every thumbnail afresh; keep none.")
@click.option(
    "--paper",
    is_flag=True,
    help="Place each run among the paper's 22 models in the paper's table of its kind "
    "(Table 1 for plain MCQA; hint: 7; reference: 6; --all-samples: 4; OEG: 2, with hint 9; "
    "multi-turn OEG: 10): rank per column, and the paper's value against our interval when "
    "the run's model is one of the paper's.",
)
@click.option(
    "--paper-model",
    "paper_model",
    default=None,
    metavar="NAME",
    help="The paper's model the runs evaluated (e.g. 'Qwen-2.5-VL 7B'), where the model "
    "spec's name does not say; implies --paper.",
)
def report_command(
    run_dirs: tuple[Path, ...],
    out_dir: Path | None,
    vs_dir: Path | None,
    params: tuple[str, ...],
    seed: int,
    thumb_cache: Path | None,
    no_thumb_cache: bool,
    paper: bool,
    paper_model: str | None,
) -> None:
    """Write tables (Markdown, CSV, JSON, LaTeX), plots and an HTML episode viewer. The
    directory of a suite (`proactivebench paper --out OUT`) gives its report laid out as the
    paper; several suites' directories (several models) give the report of their plain runs,
    with the rank correlation of size and proactiveness."""
    from proactivebench.jobs.suite import (
        is_suite_dir,
        plain_run,
        read_suite_record,
        write_suite_report,
    )
    from proactivebench.report import write_report

    if len(run_dirs) == 1 and is_suite_dir(run_dirs[0]):
        if vs_dir is not None or params:
            raise ProactiveBenchError(
                f"{run_dirs[0]} holds a suite's experiments, whose report compares them with "
                "their plain run and the paper's models: --vs and --params are for run "
                "directories"
            )
        outcome = write_suite_report(
            run_dirs[0],
            thumb_cache=not no_thumb_cache,
            report_dir=out_dir,
            paper_model=paper_model,
            if_changed=False,
        )
    else:
        if vs_dir is not None and is_suite_dir(vs_dir):  # its experiments are runs; it is not one
            ids = ", ".join(e["id"] for e in read_suite_record(vs_dir)["experiments"])
            raise ProactiveBenchError(
                f"{vs_dir} holds a suite's experiments ({ids}), not one run: name one of its "
                f"experiments' run directories ({Path(vs_dir) / 'ID'}) with --vs"
            )
        # Several models' suites (`report OUT1 OUT2 ...`): each stands by its plain run.
        runs = [plain_run(given) if is_suite_dir(given) else given for given in run_dirs]
        outcome = write_report(
            runs,
            out_dir,
            vs=vs_dir,
            params=parse_params(params),
            seed=seed,
            allow_empty=False,
            thumb_cache=None if no_thumb_cache else thumb_cache or "default",
            paper=paper,
            paper_model=paper_model,
        )
    for table in outcome.headline:
        # Narrower than the table: blocks of its columns, the model or scenario in each.
        for shown in column_blocks(out, report_table(table), out.width):
            out.print(shown)
    md, tables = shown_path(outcome.out_dir / "report.md"), shown_path(outcome.out_dir / "tables")
    out.print(f"tables: {md} (CSV and LaTeX in {tables})", highlight=False)
    print_report_outcome(outcome)


@click.command("show")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.argument("scenario")
@click.argument("sample_id", type=int)
def show_command(run_dir: Path, scenario: str, sample_id: int) -> None:
    """Print one episode as a transcript: prompts, options, answers, verdicts, the end."""
    from proactivebench.report.transcript import find_episode, player_of, transcript

    episode = find_episode(run_dir, scenario, sample_id)
    out.print(transcript(episode, printable, player_of(run_dir)))
