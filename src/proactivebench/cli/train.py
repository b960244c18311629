"""`proactivebench train grpo|compare`: GRPO post-training (`proactivebench.train`, the
optional [train] extra, imported only when a command runs) and the seen vs held-out gains of
two eval runs, printed as a table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from proactivebench.cli.options import parse_model_options, setting_options
from proactivebench.cli.output import EXIT_INTERRUPTED, console, out, printable
from proactivebench.run.settings import EvalSettings
from proactivebench.train.recipe import RECIPES, proactive_rewards


@click.group("train")
def train_group() -> None:
    """Teach proactiveness: GRPO post-training with TRL (needs the [train] extra)."""


@train_group.command("grpo")
@click.option("--model", "model", required=True, help="Model path or Hub id (image-text-to-text).")
@click.option(
    "--data",
    "data",
    required=True,
    help="A directory in the official layout (e.g. from 'data synth --split train'), a parquet "
    "or JSONL file in the official train schema, or 'hub'.",
)
@click.option(
    "--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Output directory."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    default=None,
    help="YAML or TOML file: GRPOConfig fields, and 'rewards' / 'lora' sections.",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Optimizer steps.")
@click.option("--lora", is_flag=True, help="Train a LoRA adapter on the language model only.")
@click.option("--holdout", default=None, help="Scenarios kept out of training, e.g. ROD,MVP-N.")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="A GRPOConfig field (repeatable; JSON values are typed), over the config file.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace a previous run's outputs in --out (a non-empty --out is refused otherwise).",
)
@click.option(
    "--mode",
    type=click.Choice(["single", "multi"]),
    default=None,
    help="single: one turn per example (default); multi: experimental multi-turn episodes.",
)
@click.option(
    "--recipe",
    type=click.Choice(RECIPES),
    default=None,
    help="paper: the paper's GRPO recipe (Table 5's hyperparameters, LoRA, its rewards, "
    "trained on QD and COCO); the config file, --set and --holdout win over it.",
)
@click.option(
    "--proactive-reward",
    "proactive_reward",
    type=float,
    default=None,
    metavar="RP",
    help="With --recipe paper: the reward rp of a valid proactive suggestion (the paper ran "
    f"{', '.join(f'{v:g}' for v in proactive_rewards())}; default "
    f"{proactive_rewards()[0]:g}).",
)
@setting_options(EvalSettings, "train")
def grpo_command(
    model: str,
    data: str,
    out_dir: Path,
    config_file: Path | None,
    max_steps: int | None,
    lora: bool,
    holdout: str | None,
    overrides: tuple[str, ...],
    overwrite: bool,
    mode: str | None,
    recipe: str | None,
    proactive_reward: float | None,
    **episode: Any,
) -> None:
    """Post-train a model with GRPO on ProactiveBench episodes (single-turn states by default)."""
    from proactivebench.train.checks import one_line_warnings
    from proactivebench.train.grpo import (
        TrainSettings,
        read_config_file,
        resumable_checkpoint,
        train_grpo,
    )

    one_line_warnings()
    values = parse_settings(overrides)
    if max_steps is not None:
        values["max_steps"] = max_steps
    config = read_config_file(config_file) if config_file is not None else {}
    settings = TrainSettings.build(
        model,
        data,
        out_dir,
        config=config,
        overrides=values,
        holdout=holdout,
        lora=lora,
        mode=mode,
        config_name=str(config_file) if config_file is not None else "config",
        overwrite=overwrite,
        episode={name: value for name, value in episode.items() if value is not None},
        recipe=recipe,
        proactive_reward=proactive_reward,
    )

    def on_data(counts: dict[str, int]) -> None:
        shown = ", ".join(f"{s} {n}" for s, n in counts.items())
        console.print(f"training examples: {shown}", highlight=False)
        if settings.holdout:
            console.print(f"held out: {', '.join(settings.holdout)}", highlight=False)
        if settings.recipe is not None:
            recipe_note(settings.recipe)

    try:
        outcome = train_grpo(settings, on_data=on_data)
    except KeyboardInterrupt:
        saved = resumable_checkpoint(settings)
        if saved is not None:
            # --overwrite starts afresh, removing the checkpoints: the rerun must leave it out.
            again = "the same command without --overwrite" if overwrite else "the same command"
            console.print(
                f"interrupted; rerun {again} to resume from {escape(str(saved))}",
                highlight=False,
            )
        else:
            console.print(
                "interrupted; nothing was saved (no checkpoint: set save_strategy to keep "
                "some), a rerun starts from the beginning"
            )
        sys.exit(EXIT_INTERRUPTED)
    if not outcome.main_process:
        return  # another process of a launch: the main one tells
    where = escape(str(outcome.out_dir))
    out.print(f"trained {outcome.steps} steps on {outcome.examples} examples", highlight=False)
    out.print(f"model: {where} (evaluate it with --model hf:{where})", highlight=False)


def recipe_note(record: dict[str, Any]) -> None:
    """Tell what the recipe set, and how to launch it as the paper did when this run is not
    under DeepSpeed."""
    overridden = ", ".join(record["overridden"]) or "nothing"
    console.print(
        f"recipe {record['name']}: rp {record['proactive_reward']:g}, batch "
        f"{record['batch']['this_run']} (the paper's {record['batch']['paper']}); "
        f"overridden: {escape(overridden)}",
        highlight=False,
    )
    deepspeed = record["deepspeed"]
    if not deepspeed["in_effect"]:
        console.print(
            f"the paper trained under DeepSpeed ZeRO-{deepspeed['paper_zero_stage']}; this run "
            "does not. To launch as it did: accelerate launch --config_file "
            f"{escape(deepspeed['accelerate_config'])} -m proactivebench train grpo ...",
            highlight=False,
        )


def parse_settings(pairs: tuple[str, ...]) -> dict[str, Any]:
    """`--set KEY=VALUE` pairs, JSON-typed as `--model-option`'s; the types are checked
    against GRPOConfig's fields later, naming `--set` and the field."""
    try:
        return dict(parse_model_options(pairs))
    except click.BadParameter as exc:
        exc.param_hint = "--set"
        raise


@train_group.command("compare")
@click.argument("base_run", type=click.Path(path_type=Path))
@click.argument("tuned_run", type=click.Path(path_type=Path))
@click.option(
    "--holdout",
    default=None,
    help="Held-out scenarios; default: from the tuned model's train_run.json.",
)
@click.option(
    "--paper",
    is_flag=True,
    help="Also print the paper's Table 3 (GRPO: original, rp = 0.5 / 0.75 / 1.0, reference) "
    "with the two runs in its columns.",
)
def compare_command(base_run: Path, tuned_run: Path, holdout: str | None, paper: bool) -> None:
    """Seen vs held-out scenario gains from two eval runs (base model, tuned model)."""
    from proactivebench.report.findings import finding_line
    from proactivebench.train.compare import (
        beside_paper,
        compare_runs,
        not_comparable_notes,
        training_finding,
    )

    comparison = compare_runs(base_run, tuned_run, holdout)
    for note in comparison.notes:
        console.print(f"[yellow]warning:[/yellow] {escape(note)}", highlight=False)
    table = Table(title=f"{comparison.base_model} → {comparison.tuned_model}")
    for heading in ("scenario", "split", "n", "base acc %", "tuned acc %", "gain", "ps gain"):
        table.add_column(heading, justify="left" if heading in ("scenario", "split") else "right")
    for row in comparison.rows:
        table.add_row(
            row.scenario,
            "seen" if row.seen else "held out",
            str(row.tuned.n),
            f"{row.base.accuracy or 0.0:.1f}",
            f"{row.tuned.accuracy or 0.0:.1f}",
            f"{row.accuracy_gain:+.1f}",
            f"{row.ps_gain:+.2f}",
        )
    table.add_section()
    for label, seen in (("seen", True), ("held out", False)):
        mean = comparison.mean_gain(seen)
        if mean is not None:
            table.add_row(
                f"mean, {label}", "", "", "", "", f"{mean[0]:+.1f}", f"{mean[1]:+.2f}", style="bold"
            )
    out.print(table)
    out.print(f"split from {escape(comparison.split_source)}", highlight=False)
    if paper:
        columns, rows = beside_paper(comparison)
        out.print(paper_table(columns, rows))
        for note in not_comparable_notes(comparison):
            console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)
    finding = training_finding(comparison)
    if finding is not None:  # the paper's finding (v), as these two runs answer it
        told = escape(printable(finding_line(finding)))
        out.print(f"finding: {told}", highlight=False)


def paper_table(columns: list[str], rows: list[Any]) -> Table:
    """Table 3's rows and the runs' (`train.compare.ScoreRow`), each cell `acc % / ps rate`:
    the paper's as printed (one decimal, '-' where it printed none), the runs' as `eval`
    prints them."""
    table = Table(title="the paper's Table 3 (GRPO) and these runs: accuracy % / ps rate")
    table.add_column("row", justify="left")
    for column in columns:
        table.add_column(column, justify="right")
    for index, row in enumerate(rows):
        if row.source == "run" and rows[index - 1].source == "paper":
            table.add_section()
        rate = "{:.1f}" if row.source == "paper" else "{:.2f}"
        cells = []
        for column in columns:
            acc, psr = row.cells.get(column, (None, None))
            shown_acc = "-" if acc is None else f"{acc:.1f}"
            cells.append(f"{shown_acc} / {'-' if psr is None else rate.format(psr)}")
        table.add_row(escape(row.label), *cells)
    return table
