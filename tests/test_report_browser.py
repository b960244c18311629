"""The HTML report in a real browser: Debian's headless Chromium, driven by Playwright.

The report of a 7-scenario synthetic run, played by a user's function whose answers include
an XSS payload: the tables are there, every scenario shows an episode strip, the console
stays clean, and the payload is shown as text and never runs.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from proactivebench.cli import main
from proactivebench.data.synth import generate
from proactivebench.protocol import SCENARIOS

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser")) if p is not None), None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary (apt-get install -y chromium)"
)

PAYLOAD = "<img src=x onerror=\"document.title='pwned'\"><script>window.pwned=1</script>"

AGENT = f"""
def answer(messages, observation):
    # Odd samples answer with markup that must stay text; even ones pick option B.
    if observation.sample_id % 2:
        return {PAYLOAD!r}
    return "B"
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    generate(root / "data", per_scenario=2, seed=0)
    agent = root / "agent.py"
    agent.write_text(textwrap.dedent(AGENT))
    try:
        main(
            [
                "eval",
                "--data",
                str(root / "data"),
                "--model",
                f"python:{agent}:answer",
                "--out",
                str(root / "run"),
                "--no-cache",
            ]
        )
    except SystemExit as done:
        assert done.code in (0, None)
    page = root / "run" / "report" / "report.html"
    assert page.is_file()
    return page


def test_report_in_chromium(report: Path) -> None:
    errors: list[str] = []
    dialogs: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(report.as_uri())
            page.wait_for_load_state("load")

            tables = page.locator("figure.table table")
            assert tables.count() >= 2  # the run's table and the usage table
            assert "accuracy %" in page.locator("figure.table").first.inner_text()

            # Sections are drawn when they come into view (lazy): scroll to the viewer.
            assert page.locator("article.episode").count() == 0
            select = page.locator("#viewer-scenario")
            for scenario in SCENARIOS:
                select.select_option(scenario)
                page.locator(".scenario-section").first.scroll_into_view_if_needed()
                strip = page.locator(f'article.episode[data-scenario="{scenario}"]').first
                strip.wait_for(state="visible", timeout=5000)
                assert strip.locator(".turn").count() >= 1
                assert strip.locator("img").count() >= 1  # a thumbnail of the view

            select.select_option("all")
            page.locator(".scenario-section").first.scroll_into_view_if_needed()
            shown = page.locator("pre.answer", has_text="onerror")
            shown.first.wait_for(state="visible", timeout=5000)
            assert shown.first.text_content() == PAYLOAD
            assert page.evaluate("window.pwned === undefined")
            assert page.title() != "pwned"
            assert page.locator("img[src='x']").count() == 0
        finally:
            browser.close()
    assert errors == [] and dialogs == []
