"""The documentation site (issue 33 item 5): `mkdocs build --strict` passes, so CI fails on a
broken link or anchor, a page left out of the navigation or an API entry that does not resolve;
the README stays a newcomer's first page; every exported name has its API entry."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import proactivebench
import proactivebench.testing
from docblocks import DOCS, ROOT, blocks, environment, pages

#: The README's quick start: exactly these two commands (issue 33 item 5).
QUICK_START = (
    "pip install -e . && proactivebench demo\npip install -e '.[test]' && python -m pytest -q"
)


def built_site(tmp_path: Path) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (the docs extra: pip install -e '.[docs]')")
    site = tmp_path / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"]
    done = subprocess.run(
        [*command, "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=tmp_path,
        env={**environment(), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def test_mkdocs_build_strict_passes_and_the_home_page_is_the_readme(tmp_path: Path) -> None:
    site = built_site(tmp_path)
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


#: The longest line a code block shows without scrolling sideways in a 1280 px wide browser, by
#: the indentation of its fence: measured with Chromium on the built site (a line of N characters
#: put into each block of every page, README's home page and docs pages alike: the left
#: navigation and the right table of contents leave 80 characters; each level of a list takes 4).
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
