"""The command line as a package: every command registered, every option explained, the pages
the help texts point to there, `python -m proactivebench` as the `proactivebench` command, and no
import circle inside `cli/`."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click

import proactivebench.cli
from proactivebench.cli import cli

COMMANDS = {
    "data",
    "demo",
    "eval",
    "import-inspect",
    "import-lmms-eval",
    "list",
    "judge",
    "merge",
    "paper",
    "play",
    "push",
    "report",
    "show",
    "suite",
    "train",
}


def commands(
    command: click.Command, path: str = "proactivebench"
) -> Iterator[tuple[str, click.Command]]:
    """Every command of the tree under `command`, subgroups and their commands included."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from commands(sub, f"{path} {name}")


def test_every_command_is_registered() -> None:
    assert set(cli.commands) == COMMANDS
    paths = {path for path, _ in commands(cli)}
    assert {"proactivebench data synth", "proactivebench train grpo"} <= paths


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"{path} {'/'.join(param.opts)}"
        for path, command in commands(cli)
        for param in command.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert not missing, "options without help text: " + ", ".join(missing)
    assert len(list(commands(cli))) > len(COMMANDS)  # the walk reached the subgroups' commands


#: A help text's pointer to the documentation: `docs/PAGE.md`, with the section it means in
#: quotes after a colon when not the whole page (`docs/scale-out.md: "Across GPUs and nodes"`).
DOC_POINTER = re.compile(r'docs/(?P<page>[\w/-]+\.md)(?::\s+"(?P<section>[^"]+)")?')


def help_texts() -> Iterator[tuple[str, str]]:
    """Every command's help and every option's, whitespace made single spaces (a docstring
    wraps a pointer over two lines)."""
    for path, command in commands(cli):
        texts = [command.help or ""]
        texts += [param.help or "" for param in command.params if isinstance(param, click.Option)]
        for text in texts:
            yield path, " ".join(text.split())


def test_help_texts_point_to_pages_and_sections_that_exist() -> None:
    """A help text that sends the reader elsewhere names a docs page that exists and, when it
    quotes a section, the start of one of that page's headings; none points to a section of
    the README, which is the site's home page and an overview, not the reference (`paper`'s
    help pointed there after the README's section had moved to docs/paper.md)."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    found: set[tuple[str, str, str | None]] = set()
    wrong: list[str] = []
    for path, text in help_texts():
        if "README:" in text:
            wrong.append(f"{path}: points to the README: {text}")
        for pointer in DOC_POINTER.finditer(text):
            page, section = docs / pointer["page"], pointer["section"]
            found.add((path, pointer["page"], section))
            if not page.is_file():
                wrong.append(f"{path}: no page docs/{pointer['page']}")
                continue
            headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
            if section and not any(h.startswith(section) for h in headings):
                wrong.append(f"{path}: docs/{pointer['page']} has no section {section!r}")
    assert not wrong, "\n".join(wrong)
    assert {
        ("proactivebench paper", "paper.md", None),
        ("proactivebench eval", "scale-out.md", "Across GPUs and nodes"),
    } <= found


def test_python_m_proactivebench_is_the_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "proactivebench", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage: proactivebench" in done.stdout
    listed = {line.split()[0] for line in done.stdout.split("Commands:")[1].splitlines() if line}
    assert listed == COMMANDS


def test_no_module_of_the_package_imports_its_root() -> None:
    """Command modules import `cli.output`, `cli.options` and the library, never `cli` itself
    (the root imports them all: the other way round would be a circle)."""
    package = Path(proactivebench.cli.__file__).parent
    modules = sorted(p for p in package.glob("*.py") if p.name != "__init__.py")
    assert {p.stem for p in modules} >= {"output", "options", "run", "report", "train"}
    circles = []
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                root = node.module == "proactivebench.cli" or (node.level == 1 and not node.module)
                root = root or (
                    node.module == "proactivebench" and any(a.name == "cli" for a in node.names)
                )
            elif isinstance(node, ast.Import):
                root = any(a.name == "proactivebench.cli" for a in node.names)
            else:
                continue
            if root:
                circles.append(f"{module.name}:{node.lineno}")
    assert not circles, f"imports of proactivebench.cli inside the package: {circles}"


def test_plain_progress_lines_say_how_long_the_rest_takes() -> None:
    """Off a terminal, the first result and then each tenth is one line with the time left at
    the pace so far: 10 episodes a second, 100 in all -> after 20, about 8 s left (rich's
    estimate, within a second); the last line has none."""
    import io
    import re

    from rich.console import Console

    from proactivebench.cli.output import LineProgress, duration

    clock = [0.0]
    sink = io.StringIO()
    progress = LineProgress(console=Console(file=sink, width=200), get_time=lambda: clock[0])
    with progress:
        task = progress.add_task("run", total=100)
        for _ in range(100):
            clock[0] += 0.1
            progress.advance(task)
    lines = sink.getvalue().splitlines()
    assert len(lines) == 11 and all(line.startswith("run: ") for line in lines)
    assert lines[2].startswith("run: 20/100 (20%)"), lines
    left = [int(m.group(1)) for line in lines if (m := re.search(r"about (\d+)s left$", line))]
    assert len(left) == 9 and 7 <= left[1] <= 9 and left == sorted(left, reverse=True), lines
    assert "left" not in lines[-1] and lines[-1].startswith("run: 100/100")
    assert [duration(s) for s in (44.6, 200, 7500)] == ["45s", "3m20s", "2h05m"]


def test_several_tasks_off_a_terminal_give_lines_per_task_not_per_episode() -> None:
    """Issue 47: off a terminal, `paper`'s experiments played at once wrote a line per tenth of
    each, interleaved (with a few episodes each: a line per episode). Now: a line when each
    starts and when it ends, and one line of every running one each 30 s of the (injected)
    clock: 11 experiments of 200 episodes, interleaved, give 22 lines with the clock still,
    and 22 + 2200 * 0.1 / 30 = 22 + 7 lines as it moves 0.1 s an episode."""
    import io

    from rich.console import Console

    from proactivebench.cli.output import SeveralLineProgress

    for step, running_lines in ((0.0, 0), (0.1, 7)):
        clock = [0.0]
        sink = io.StringIO()
        progress = SeveralLineProgress(
            console=Console(file=sink, width=200), get_time=lambda clock=clock: clock[0]
        )
        with progress:
            tasks = [progress.add_task(f"exp{i}", total=200, errors=0) for i in range(11)]
            for task in tasks:
                progress.update(task, completed=0)
            for _ in range(200):
                for task in tasks:
                    clock[0] += step
                    progress.advance(task)
        lines = sink.getvalue().splitlines()
        running = [line for line in lines if line.startswith("running: ")]
        assert len(running) == running_lines, lines
        assert len(lines) == 22 + running_lines, lines
        for i in range(11):
            mine = [line for line in lines if line.startswith(f"exp{i}: ")]
            assert [m.split(" (")[0] for m in mine] == [f"exp{i}: 0/200", f"exp{i}: 200/200"]
        if running:  # every experiment's count in one line
            assert all(f"exp{i} " in running[0] for i in range(11)), running[0]


def test_paper_progress_off_a_terminal_is_bounded_by_experiments(monkeypatch) -> None:
    """`paper`/`suite`'s progress (`suite_progress`) off a terminal: 3 experiments of 40
    episodes, interleaved, write 2 lines each (start, end), not one per episode (the clock is
    held still: no timed line)."""
    import functools
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from proactivebench.cli import output, suite
    from proactivebench.jobs.suite import Experiment
    from proactivebench.run.settings import EvalSettings

    sink = io.StringIO()
    monkeypatch.setattr(output, "console", Console(file=sink, width=100))
    still = functools.partial(output.SeveralLineProgress, get_time=lambda: 0.0)
    monkeypatch.setattr(output, "SeveralLineProgress", still)
    experiments = [Experiment(id=f"e{i}", paper="", settings=EvalSettings()) for i in range(3)]
    with suite.suite_progress(experiments) as (on_start, on_result):
        for e in experiments:
            on_start(e.id, 40, 0)
        for _ in range(40):
            for e in experiments:
                on_result(e.id, SimpleNamespace(error=None))
    lines = sink.getvalue().splitlines()
    assert len(lines) == 6, lines
    assert sorted(line.split(":")[0].strip() for line in lines) == [
        "e0",
        "e0",
        "e1",
        "e1",
        "e2",
        "e2",
    ]


def test_plain_progress_lines_count_in_whole_numbers() -> None:
    """A count of a million or more is written whole (1234567/7000000), not in the exponent
    form of Python's `g` (1.23457e+06/7e+06), which also rounds it."""
    import io

    from rich.console import Console

    from proactivebench.cli.output import LineProgress

    sink = io.StringIO()
    progress = LineProgress(console=Console(file=sink, width=200), get_time=lambda: 1.0)
    with progress:
        task = progress.add_task("synth test", total=7_000_000)
        progress.advance(task, 1_234_567)
    assert sink.getvalue().splitlines()[0].startswith("synth test: 1234567/7000000 (18%)")


def test_the_episode_rate_is_worked_out_when_shown() -> None:
    """eval's progress shows episodes/s as of when a line is printed, not as of the last time
    the rate was stored (it is no longer stored per episode)."""
    import io

    from rich.console import Console

    from proactivebench.cli.output import EpisodeRate, LineProgress

    clock = [0.0]
    sink = io.StringIO()
    progress = LineProgress(console=Console(file=sink, width=200), get_time=lambda: clock[0])
    with progress:
        task = progress.add_task("run", total=40, speed="")
        rate = EpisodeRate(progress, task)
        assert str(rate) == "- ep/s"  # nothing done yet
        progress.update(task, speed=rate)
        for step in range(40):
            clock[0] += 0.5 if step < 20 else 0.25  # 2 ep/s, then 4 ep/s
            progress.advance(task)
    lines = sink.getvalue().splitlines()
    assert "speed 2.0 ep/s" in lines[5] and lines[5].startswith("run: 20/40"), lines
    assert "speed 2.7 ep/s" in lines[-1], lines  # 40 episodes in 15 s, rich's estimate


def test_plots_come_with_the_package_and_cost_nothing_at_start_up() -> None:
    """matplotlib is a dependency (a user who installs the package gets the plots), and no
    command pays for importing it before a report is drawn."""
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert any(d.startswith("matplotlib") for d in project["project"]["dependencies"])
    code = (
        "import sys, proactivebench.cli, proactivebench.report; print('matplotlib' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False"
