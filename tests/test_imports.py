"""A command imports what it uses: `--help` lists the commands without importing their modules,
and `eval --no-report` imports neither the report's builder, plots and page (nor matplotlib),
nor the web app of `play`, nor the downloader of `data download`; before its first request it
imports no report module and no NumPy (issue 34, item 2).

Each command runs in a new process under an import hook (a `sys.meta_path` finder that notes
every module asked for, in every thread, and when), so what an earlier test imported here
cannot hide an import. The root's list of commands, made from `cli.COMMANDS` without importing
them, is checked against what the commands themselves say.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from proactivebench.cli import COMMANDS, cli, load_command
from proactivebench.data.synth import generate
from proactivebench.testing.server import FakeOpenAI

#: Runs `proactivebench ARGS` (argv[2:]) and writes to argv[1], as JSON, every module it asked
#: for: [name, time.monotonic() when first asked], in order.
_TRACED = """
import atexit, json, sys, threading, time

seen = []
lock = threading.Lock()


class Noted:
    def find_spec(self, name, path=None, target=None):
        with lock:
            seen.append([name, time.monotonic()])
        return None  # found by the finders after this one, as always


sys.meta_path.insert(0, Noted())
atexit.register(lambda: open(sys.argv[1], "w").write(json.dumps(seen)))
from proactivebench.cli import main

main(sys.argv[2:])
"""

#: Never imported by `--help` nor by `eval --no-report`.
NEVER = (
    "matplotlib",
    "proactivebench.report.build",
    "proactivebench.report.plots",
    "proactivebench.report.html",
    "proactivebench.report.thumbs",
    "proactivebench.humanplay",
    "proactivebench.cli.play",
    "aiohttp.web",
    "proactivebench.data.download",
    "proactivebench.cli.data",
    "huggingface_hub",
    "torch",
)


def traced(args: list[str], where: Path) -> list[tuple[str, float]]:
    """The modules `proactivebench ARGS` asked for, in order, each with when (monotonic)."""
    note = where / "imports.json"
    done = subprocess.run(
        [sys.executable, "-c", _TRACED, str(note), *args],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [(name, when) for name, when in json.loads(note.read_text())]


def under(names: set[str], *packages: str) -> set[str]:
    """The names in `names` that are one of `packages` or inside one."""
    return {n for n in names for p in packages if n == p or n.startswith(p + ".")}


def test_the_hook_sees_what_a_command_imports(tmp_path: Path) -> None:
    """The checks below would pass vacuously if the hook missed imports: `data download
    --help` imports the data commands' module, and no other command's."""
    names = {name for name, _ in traced(["data", "download", "--help"], tmp_path)}
    assert {"proactivebench.cli", "proactivebench.cli.data", "click"} <= names
    assert "proactivebench.cli.run" not in names


def test_help_imports_no_command(tmp_path: Path) -> None:
    names = {name for name, _ in traced(["--help"], tmp_path)}
    assert "proactivebench.cli" in names
    commands = {f"proactivebench.cli.{module}" for module, _, _ in COMMANDS.values()}
    assert not names & commands, names & commands
    assert not under(names, *NEVER, "numpy", "proactivebench.report", "aiohttp")


def test_eval_no_report_imports_what_it_uses(tmp_path: Path) -> None:
    data = tmp_path / "data"
    generate(data, per_scenario=1, seed=0)
    with FakeOpenAI() as server:
        model = f"openai:m@{server.url}"
        args = ["eval", "--data", str(data), "--model", model, "--out", str(tmp_path / "run")]
        args += ["--limit", "1", "--scenarios", "ROD", "--no-report"]
        imported = traced([*args, "--cache", str(tmp_path / "cache.sqlite")], tmp_path)
        first_request = min(request.time for request in server.chat_requests)
    names = {name for name, _ in imported}
    assert {"proactivebench.cli.run", "aiohttp.client"} <= names  # it did play: openai: used it
    assert not under(names, *NEVER), under(names, *NEVER)
    before = {name for name, when in imported if when < first_request}
    assert "proactivebench.jobs.evaluate" in before
    assert not under(before, "proactivebench.report", "numpy"), under(before, "numpy")
    # The table's ± comes from the run's measures, NumPy's bootstrap: after the run.
    assert "proactivebench.report.measures" in names


@pytest.mark.parametrize("limit", [0, 20, 45, 80, 200, 10_000])
def test_the_list_is_each_commands_own_short_help(limit: int) -> None:
    """`COMMANDS` holds the first sentence of each command's help, from which the root's
    `--help` is made as click makes it from the command: the list reads the same at every
    width as if every module had been imported."""
    for name, (_, _, summary) in COMMANDS.items():
        real = load_command(name)
        assert real.name == name
        listed = click.Command(name, help=summary).get_short_help_str(limit)
        assert listed == real.get_short_help_str(limit), name


def test_every_command_of_the_table_is_in_the_group() -> None:
    assert sorted(cli.commands) == sorted(COMMANDS)
    assert cli.commands["eval"] is load_command("eval")
    with pytest.raises(KeyError):
        cli.commands["no-such-command"]


def test_eval_of_a_baseline_imports_no_http_client(tmp_path: Path) -> None:
    """aiohttp is imported when an `openai:` model is made, not for every `eval`."""
    data = tmp_path / "data"
    generate(data, per_scenario=1, seed=0, scenarios=["ROD"])
    args = ["eval", "--data", str(data), "--model", "baseline:oracle", "--no-report"]
    names = {name for name, _ in traced([*args, "--out", str(tmp_path / "run")], tmp_path)}
    assert "proactivebench.jobs.evaluate" in names
    assert not under(names, *NEVER, "aiohttp"), under(names, *NEVER, "aiohttp")
