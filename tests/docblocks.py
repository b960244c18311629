"""The fenced code blocks of README.md and docs/*.md, found by the comment right before them.

A block is marked by an HTML comment on the line before its fence (at the fence's indentation;
it is invisible on GitHub and on the site):

- `<!-- runnable -->`: runs as written; tests/test_doc_commands.py runs it.
- `<!-- not-run: REASON -->`: not run by the tests, and REASON says why (a GPU, a real model or
  server, the Hub, an install into the current environment, a synopsis with placeholders).
- `<!-- recipe: NAME -->` (`<!-- recipe: NAME (background) -->` for a server): one of the
  testing kit's recipes, run (and checked further) by tests/test_testing_kit.py.
- `<!-- file: NAME -->`: a file's content (a TOML or YAML config), which the runnable blocks
  after it on the same page may use: the test writes it to NAME first.

Every bash and Python block carries one of them (tests/test_doc_commands.py checks), so no
command in the docs goes unchecked without a stated reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import proactivebench

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: The languages of commands: every block in one of them must be marked.
COMMAND_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "python"})

FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$",
    re.MULTILINE | re.DOTALL,
)
MARK = re.compile(r"<!-- (?P<kind>runnable|not-run|recipe|file)(?::[ ]*(?P<arg>.*?))?[ ]*-->")
BACKGROUND = " (background)"
#: Where the docs' fake server serves (docs/testing.md starts it with `--port 8011`): the pages'
#: commands use this URL as written. The tests serve on a free port instead and point the
#: commands there (`run_block(..., server=URL)`), so that two test sessions on one machine never
#: fight over the docs' port.
DOCS_PORT = 8011
DOCS_URL = f"http://127.0.0.1:{DOCS_PORT}/v1"


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text (dedented) and its marker."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    body: str
    kind: str | None  # runnable, not-run, recipe, file; None when unmarked
    arg: str  # the reason, the recipe's name (with " (background)"), the file's name
    indent: int = 0  # the fence's indentation: 4 a level of a list (the site's width shrinks)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"

    @property
    def name(self) -> str:
        """A recipe's name, without its "(background)"."""
        return self.arg.removesuffix(BACKGROUND)

    @property
    def background(self) -> bool:
        return self.arg.endswith(BACKGROUND)


def pages() -> list[Path]:
    """The README and every docs page, in a fixed order."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for fence in FENCE.finditer(text):
        line = text.count("\n", 0, fence.start()) + 1
        before = lines[line - 2].strip() if line >= 2 else ""
        mark = MARK.fullmatch(before)
        indent = len(fence["indent"])
        body = "\n".join(row[indent:] for row in fence["body"].rstrip("\n").split("\n"))
        found.append(
            Block(
                page=page,
                line=line,
                lang=fence["lang"],
                body=body,
                kind=mark["kind"] if mark else None,
                arg=(mark["arg"] or "") if mark else "",
                indent=indent,
            )
        )
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def environment() -> dict[str, str]:
    """This interpreter's scripts first on PATH and this checkout's package first on the path,
    so that `python`, `proactivebench`, `inspect` and `vf-eval` are the ones under test."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    package_root = str(Path(proactivebench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["HF_HUB_OFFLINE"] = "1"
    env["COLUMNS"] = "200"
    return env


def served_at(text: str, server: str | None) -> str:
    """`text` (a block's body) with the docs' server URL (`DOCS_URL`) replaced by `server`, the
    URL the test's own fake server serves at; as written when `server` is None."""
    return text if server is None else text.replace(DOCS_URL, server)


def run_block(
    block: Block,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    server: str | None = None,
) -> str:
    """Run a block as written in `cwd` (with `server`, the docs' server URL pointed there):
    bash through `bash -e`, Python through this interpreter. Fails (with the block's place and
    output) on a non-zero exit or a traceback."""
    body = served_at(block.body, server)
    command = ["bash", "-e", "-c", body]
    if block.lang == "python":
        command = [sys.executable, "-c", body]
    done = subprocess.run(
        command,
        cwd=cwd,
        env=environment() if env is None else env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.where} exited {done.returncode}:\n{output}"
    assert "Traceback" not in output, f"{block.where}:\n{output}"
    return output
