"""The documentation site (issue 33 item 5): `mkdocs build --strict` passes, so CI fails on a
broken link or anchor, a page left out of the navigation or an API entry that does not resolve;
the README stays a newcomer's first page; every exported name has its API entry."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import proactivebench
import proactivebench.testing
from docblocks import DOCS, ROOT, blocks, environment, pages

#: The README's quick start: exactly these two commands (issue 33 item 5).
QUICK_START = (
    "pip install -e . && proactivebench demo\npip install -e '.[test]' && python -m pytest -q"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for the tests of this module."""
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (the docs extra: pip install -e '.[docs]')")
    where = tmp_path_factory.mktemp("docs")
    site = where / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"]
    done = subprocess.run(
        [*command, "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=where,
        env={**environment(), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def test_mkdocs_build_strict_passes_and_the_home_page_is_the_readme(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Where to go next" in home and "Quick start" in home
    # The README's links into docs/ lead to the pages on the site.
    assert 'href="usage/"' in home and 'href="docs/' not in home
    api = (site / "api" / "running" / "index.html").read_text(encoding="utf-8")
    assert "aevaluate" in api and "EvalSettings" in api


def test_the_readme_quick_start_is_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = text.split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in blocks(ROOT / "README.md") if b.body == QUICK_START]
    assert f"```bash\n{QUICK_START}\n```" in quick, quick
    assert block.kind == "not-run"
    # CI runs the second command (its install quietly: `pip install -q -e '.[test]'`).
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[test]' && python -m pytest -q &&" in ci


@pytest.mark.parametrize(
    "failing", ["pip install -q -e .[test]", "python -m pytest -q", "python -m pytest -q -m slow"]
)
def test_ci_fails_when_the_test_command_fails(tmp_path: Path, failing: str) -> None:
    """.ci/run's line with the README's test command, run as the script runs it (`set -euo
    pipefail`) with `pip` and `python` standing in, one of its steps failing: the script must
    stop there with a failure. A failure inside an && list does not stop `set -e`: the quick
    set failed and .ci/run went on to exit 0."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (line,) = [x for x in ci.splitlines() if x.startswith("pip install -q -e '.[test]' &&")]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("pip", "python"):
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\n[ "{name} $*" = "{failing}" ] && exit 1\nexit 0\n')
        stub.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    script = f"set -euo pipefail\n{line}\necho went on\n"
    ended = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    assert ended.returncode != 0 and "went on" not in ended.stdout, ended


#: The longest line a code block shows without scrolling sideways in a 1280 px wide browser, by
#: the indentation of its fence: measured with Chromium on the built site (a line of N characters
#: put into each block of every page, README's home page and docs pages alike: the left
#: navigation and the right table of contents leave 80 characters; each level of a list takes 4).
#: Offline the theme's code font, Roboto Mono, is not fetched and DejaVu Sans Mono stands in;
#: with Roboto Mono (0.6 em a character) a block's 656 px at 13.6 px hold 80.4 (76.7 in a list).
CODE_WIDTH = {0: 80, 4: 76, 8: 72}


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_the_code_fits_the_page_width(page: Path) -> None:
    """No line of a page's code blocks is cut off at the right on the site (a synopsis' comment
    was; commands ran to 246 characters): a reader copies what they see."""
    long = []
    for block in blocks(page):
        indent = block.indent
        assert indent in CODE_WIDTH, (
            f"{block.where}: a block indented {indent}: measure its width on the site first"
        )
        long += [
            f"{block.where}+{row}: {len(line)} characters, {CODE_WIDTH[indent]} fit: {line}"
            for row, line in enumerate(block.body.splitlines(), 1)
            if len(line) > CODE_WIDTH[indent]
        ]
    assert not long, "\n".join(long)


#: Where a code block sits that CODE_WIDTH has no measure for (a table, a quote, a note).
UNMEASURED = frozenset({"table", "blockquote", "details", "admonition"})
#: Elements without an end tag.
VOID = frozenset(
    {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)


class CodeOnThePage(HTMLParser):
    """The text of each `<pre>` in a built page's `<article>`, with what it sits in: how many
    list items (each takes 4 characters) and any container CODE_WIDTH has not measured."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[set[str]] = []  # each open element: its tag and its classes
        self.found: list[tuple[int, set[str], list[str]]] = []
        self.text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        inside = set().union(*self.open) if self.open else set()
        if tag == "pre" and "article" in inside:
            self.text = []
            lists = sum("li" in element for element in self.open)
            self.found.append((lists, inside & UNMEASURED, self.text))
        self.open.append({tag, *classes})

    def handle_endtag(self, tag: str) -> None:
        if not any(tag in element for element in self.open):
            return  # a void element's (`<img ... />`) or a stray end tag
        while tag not in self.open.pop():
            pass
        if tag == "pre":
            self.text = None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)


def test_the_code_the_site_shows_fits_its_page(site: Path) -> None:
    """Every line of every code block the built site shows fits its width, the API pages'
    too: their signatures and the code of docstrings (errors.py's tree of the errors ran to
    95 characters), which the test of the Markdown above does not see."""
    long = []
    for html in sorted(site.rglob("*.html")):
        where = html.relative_to(site).as_posix()
        reader = CodeOnThePage()
        reader.feed(html.read_text(encoding="utf-8"))
        for number, (lists, unmeasured, text) in enumerate(reader.found, 1):
            width = CODE_WIDTH.get(4 * lists)
            assert width is not None and not unmeasured, (
                f"{where}: code block {number} (list items around it: {lists}, "
                f"in: {sorted(unmeasured)}): measure its width on the site first"
            )
            long += [
                f"{where}: code block {number}: {len(line)} characters, {width} fit: {line}"
                for line in "".join(text).splitlines()
                if len(line) > width
            ]
    assert not long, "\n".join(long)


def test_the_readme_is_short_and_points_to_every_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert sections == [
        "Quick start",
        "Reproduce the paper",
        "Evaluate your model",
        "Where to go next",
        "Credits",
    ]
    linked = set(re.findall(r"\]\(docs/([\w/-]+\.md)", text))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md")}
    assert pages <= linked, f"pages the README does not point to: {sorted(pages - linked)}"


def documented() -> set[str]:
    """Every `::: dotted.path` of the API pages (a module only when shown whole), and the
    members an entry lists."""
    found = set()
    for page in (DOCS / "api").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for entry in re.finditer(r"^::: (\S+)((?:\n    .*)*)", text, re.MULTILINE):
            path, options = entry[1], entry[2]
            if "members:" not in options:  # the whole module (or object)
                found.add(path)
            found.update(f"{path}.{m}" for m in re.findall(r"^ +- (\w+)$", options, re.M))
    return found


@pytest.mark.parametrize(
    ("package", "homes"),
    [
        (proactivebench, proactivebench._EXPORTS),
        (
            proactivebench.testing,
            {k: f"proactivebench.testing.{v}" for k, v in proactivebench.testing._HOMES.items()},
        ),
    ],
    ids=["proactivebench", "proactivebench.testing"],
)
def test_every_exported_name_has_an_api_entry(package: object, homes: dict[str, str]) -> None:
    entries = documented()
    missing = [
        name
        for name in package.__all__  # type: ignore[attr-defined]
        if f"{homes[name]}.{name}" not in entries and homes[name] not in entries
    ]
    assert not missing, f"exported but not in docs/api/*.md: {missing}"
