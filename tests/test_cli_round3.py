"""What the command line says, round 3 (issue 29, item 14): help that names only what a
command takes, the same table from every command that ends a run, no progress before a run
has started, no lock files in a released directory, a validation that says it decoded, and
the demo's word on the oracle's ps 0.00."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from clirun import eval_args, held_by_another_process, run_cli
from handmade import full_dataset
from proactivebench.benchmark.metrics import ScenarioScore, Summary
from proactivebench.cli import cli
from proactivebench.cli.demo import oracle_note
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.models import load_model
from proactivebench.run.judge import Judge


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def option_help(command: str, name: str) -> str:
    params = cli.commands[command].params  # type: ignore[attr-defined]
    return next(p.help for p in params if p.name == name and isinstance(p, click.Option))


def test_the_judge_help_lists_only_specs_a_judge_may_be() -> None:
    text = option_help("eval", "judge_spec")
    assert "baseline:" not in text and "replay:" not in text
    # openai:MODEL, hf:PATH, python:MODULE (not the ".py:" of python:FILE.py:FUNCTION)
    for kind in re.findall(r"(?:^|[\s(,])(\w+):[A-Z]", text):
        assert kind in ("openai", "anthropic", "hf", "python"), kind
    # What the help no longer offers is refused as a judge.
    with pytest.raises(ProactiveBenchError):
        Judge(load_model("baseline:oracle"))


def test_plays_seed_help_names_only_plays_options() -> None:
    text = option_help("play", "seed")
    named = set(re.findall(r"--[a-z][a-z-]*", text))
    offered = {o for p in cli.commands["play"].params for o in p.opts}  # type: ignore[attr-defined]
    assert named and named <= offered, named - offered
    assert "baseline" not in text and "--icl" not in text
    assert "--icl" in option_help("eval", "seed")  # eval's seed does draw demonstrations


def table_of(text: str) -> list[str]:
    """The lines of the printed table (those with a scenario's row or the header)."""
    return [line for line in text.splitlines() if "│" in line or "ROD" in line]


def test_merge_prints_the_table_eval_prints(data: Path, tmp_path: Path, capsys) -> None:
    code, whole = run_cli(eval_args(data, tmp_path / "whole", "--no-report"), capsys)
    assert code == 0 and "±" in whole
    shards = []
    for i in range(2):
        shard = tmp_path / f"shard{i}"
        code, _ = run_cli(eval_args(data, shard, "--shard", f"{i}/2", "--no-report"), capsys)
        assert code == 0
        shards.append(str(shard))
    code, merged = run_cli(["merge", *shards, "--out", str(tmp_path / "merged")], capsys)
    assert code == 0 and "±" in merged
    assert table_of(merged) == table_of(whole)


def test_an_unreachable_server_shows_no_progress_first(data: Path, tmp_path: Path, capsys) -> None:
    args = eval_args(data, tmp_path / "run", "--no-cache", "--model-option", "connect_timeout=2")
    args[args.index("baseline:oracle")] = "openai:m@http://127.0.0.1:9/v1"
    code, text = run_cli(args, capsys)
    assert code == 1 and "unreachable" in text and "Traceback" not in text, text
    assert "(0%)" not in text and "0/" not in text, text


def test_a_released_run_directory_keeps_no_lock_files(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    code, _ = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0 and (run / "results.jsonl").is_file()
    assert not (run / ".lock").exists() and not (run / ".lock.pid").exists()


def test_only_the_holder_removes_the_lock_files(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    code, _ = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0
    with held_by_another_process(run) as pid:
        code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
        assert code == 1 and f"PID {pid}" in text
        # The refused run left the holder's files alone: a third is refused the same way.
        assert (run / ".lock").exists() and (run / ".lock.pid").read_text().strip() == str(pid)
        code, text = run_cli(eval_args(data, run, "--no-report"), capsys)
        assert code == 1 and f"PID {pid}" in text
    code, _ = run_cli(eval_args(data, run, "--no-report"), capsys)
    assert code == 0 and not (run / ".lock").exists()


def test_validate_says_when_it_decoded(data: Path, capsys) -> None:
    code, plain = run_cli(["data", "validate", str(data)], capsys)
    assert code == 0 and "is valid" in plain and "decoded" not in plain
    code, decoded = run_cli(["data", "validate", "--decode", str(data)], capsys)
    assert code == 0 and "every image present and decoded in full" in decoded


def test_the_demo_says_why_the_oracle_asks_nothing() -> None:
    scores = {
        "ROD": ScenarioScore(n=2, accuracy=100.0, ps_rate=1.0),
        "QD": ScenarioScore(n=2, accuracy=100.0, ps_rate=0.0),
        "CIT": ScenarioScore(n=2, accuracy=100.0, ps_rate=0.0),
    }
    note = oracle_note(Summary("baseline:oracle", scores))
    assert note is not None and note.startswith("oracle ps 0.00 on QD, CIT:")
    assert "ROD" not in note
    asking = {"ROD": ScenarioScore(n=2, accuracy=100.0, ps_rate=1.0)}
    assert oracle_note(Summary("baseline:oracle", asking)) is None
