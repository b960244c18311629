"""`proactivebench data synth|validate|download|filter`: make, check, get and filter benchmark
data.

Each calls `proactivebench.data` and prints what it found: the counts written, a data set's
problems and warnings (`report_check`, shared by `validate` and `download`; `EXIT_ERROR` on a
problem).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from proactivebench.cli.output import EXIT_ERROR, console, count_progress, out, shown_path

if TYPE_CHECKING:
    from proactivebench.data.validate import DatasetCheck
    from proactivebench.jobs.filtering import ComputedFilter


@click.group("data")
def data_group() -> None:
    """Get, make and check benchmark data."""


@data_group.command("synth")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory to write (official layout + synth_manifest.json).",
)
@click.option(
    "--per-scenario",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Samples to generate for each of the seven scenarios.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the generator: the same seed, size and split always write the same files.",
)
@click.option(
    "--split",
    type=click.Choice(["test", "train"]),
    default="test",
    show_default=True,
    help="test: samples to evaluate (eval --data); train: samples to train on (train grpo "
    "--data), never one of the test split's for the same seed.",
)
def data_synth(out_dir: Path, per_scenario: int, seed: int, split: str) -> None:
    """Generate a synthetic ProactiveBench of all seven scenarios."""
    from proactivebench.data.synth import generatable, generate

    with count_progress() as progress:
        task = progress.add_task(f"synth {split}", total=per_scenario * len(generatable()))
        manifest = generate(
            out_dir,
            per_scenario=per_scenario,
            seed=seed,
            split=split,
            progress=lambda n: progress.update(task, advance=n),
        )
    counts = ", ".join(f"{k} {v}" for k, v in manifest["counts"].items())
    out.print(f"wrote {shown_path(out_dir)}: {counts}")


@data_group.command("validate")
@click.argument("data_dir", type=click.Path(path_type=Path))
@click.option("--decode", is_flag=True, help="Decode every image fully (slow), not only headers.")
def data_validate(data_dir: Path, decode: bool) -> None:
    """Check every record and every image a data directory refers to."""
    from proactivebench.data.validate import validate_dataset

    report_check(validate_dataset(data_dir, decode=decode), data_dir, decoded=decode)


def report_check(check: DatasetCheck, data_dir: Path, decoded: bool = False) -> None:
    """Print a data set's problems and warnings; exit 1 when it has problems. `decoded`: the
    images were decoded in full (`--decode`), which the verdict says, since it checks more
    than headers."""
    where = escape(str(data_dir))
    for problem in check.problems:
        out.print(escape(str(problem)), highlight=False)
    for warning in check.warnings:
        out.print(escape(f"warning: {warning}"), highlight=False)
    if check.problems:
        console.print(f"[red]{len(check.problems)} problem(s)[/red] in {where}")
        sys.exit(EXIT_ERROR)
    warned = f", {len(check.warnings)} warning(s)" if check.warnings else ""
    images = "every image present and decoded in full" if decoded else "every image present"
    valid = f"{check.records} records checked, {images}{warned}: {where} is valid"
    out.print(valid, highlight=False)


@data_group.command("download")
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


@data_group.command("filter")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Filter file to write (the official list's shape); play it with eval --filter FILE.",
)
@click.option(
    "--at-least",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=0.25,
    show_default=True,
    help="Remove a sample when at least this fraction of the runs (rounded up to whole runs) "
    "answered it right at the first turn; the paper's 0.25 is 6 of 22 models.",
)
def data_filter(run_dirs: tuple[Path, ...], out_file: Path, at_least: float) -> None:
    """Compute the test filter of the paper (§3.3) from plain MCQA runs of one data set, one
    per model: the samples that fewer than --at-least of them answered right at the first turn
    are kept."""
    from proactivebench.jobs.filtering import write_filter

    computed = write_filter(run_dirs, out_file, at_least)
    for warning in computed.warnings:
        out.print(escape(f"warning: {warning}"), highlight=False)
    rule = f"right at the first turn in at least {computed.needed} of {len(computed.runs)} runs"
    unplayed = computed.not_played or {}
    for name, count in computed.counts.items():
        line = (
            f"{name}: {count.before} samples, {count.removed} removed ({rule}), {count.kept} kept"
        )
        if unplayed.get(name):
            many = unplayed[name] > 1
            line += (
                f"; {unplayed[name]} sample{'s' if many else ''} of the data no run played "
                f"(e.g. --limit) {'are' if many else 'is'} left out of the filter"
            )
        out.print(escape(line), highlight=False)
    if computed.not_played is None:
        out.print(escape(_unchecked(computed)), highlight=False)
    where = escape(str(out_file))
    out.print(f"wrote {where}; play it with eval --filter {where}", highlight=False)


def _unchecked(computed: ComputedFilter) -> str:
    """Why `data filter` could not count the samples no run played, and what that leaves."""
    if not computed.records:
        return (
            f"note: the runs' data {computed.data_dir} is not here: whether they played every "
            "sample is not checked, and the filter holds no digest of the data for eval to "
            "compare"
        )
    return (
        "note: the runs played a filter of their own: the samples it leaves out are not "
        "counted, nor in this filter"
    )
