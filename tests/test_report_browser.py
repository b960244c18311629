"""The HTML report in a real browser: Debian's headless Chromium, driven by Playwright.

The report of a 7-scenario synthetic run, played by a user's function whose answers include
an XSS payload: the tables are there, every scenario shows an episode strip, the console
stays clean, and the payload is shown as text and never runs.
"""

from __future__ import annotations

import contextlib
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@contextlib.contextmanager
def opened(report: Path, width: int, errors: list[str]) -> Iterator[Any]:
    """`report` loaded in headless Chromium at `width` px; console errors, page errors
    (uncaught exceptions) and dialogs (an alert a payload would open) go to `errors`."""
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
            page.goto(report.as_uri())
            page.wait_for_load_state("load")
            yield page
        finally:
            browser.close()


def test_report_in_chromium(report: Path) -> None:
    errors: list[str] = []
    with opened(report, 1400, errors) as page:
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
    assert errors == []


#: Six runs side by side: the cross-run tables are wider than a 1280 px window.
SIX = ("oracle", "random", "proactive", "reactive", "abstain", "oracle")


def baseline_runs(root: Path, baselines: tuple[str, ...], per_scenario: int) -> list[Path]:
    """One run directory under `root` per baseline, on synthetic data generated there."""
    generate(root / "data", per_scenario=per_scenario, seed=0)
    runs = []
    for number, baseline in enumerate(baselines):
        run = root / f"{baseline}-{number}"
        args = ["eval", "--data", str(root / "data"), "--model", f"baseline:{baseline}"]
        try:
            main([*args, "--out", str(run), "--no-cache", "--no-report"])
        except SystemExit as done:
            assert done.code in (0, None)
        runs.append(run)
    return runs


@pytest.fixture(scope="module")
def six_runs_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from proactivebench.report import write_report

    root = tmp_path_factory.mktemp("six")
    runs = baseline_runs(root, SIX, per_scenario=3)
    sizes = {run.name: size for run, size in zip(runs, (7, 13, 70, 2, 0.5, 7), strict=True)}
    outcome = write_report(runs, root / "report", params=sizes)
    return outcome.html


def test_six_runs_at_1280_px(six_runs_report: Path) -> None:
    """The average column of the cross-run tables is in view without scrolling, although the
    tables are wider than the window; the scatter names every scenario; no error."""
    errors: list[str] = []
    with opened(six_runs_report, 1280, errors) as page:
        for key in ("cross-accuracy", "cross-ps_rate"):
            figure = page.locator(f'figure.table[data-table="{key}"]')
            scroller = figure.locator(".scroller").evaluate("f => [f.scrollWidth, f.clientWidth]")
            assert scroller[0] > scroller[1], "the table fits: the check would prove nothing"
            view = figure.locator(".scroller").bounding_box()
            assert view is not None and view["x"] + view["width"] <= 1280
            cells = figure.locator(".average-col")
            assert cells.count() == 1 + len(SIX)  # the heading and every run
            for index in range(cells.count()):
                box = cells.nth(index).bounding_box()
                assert box is not None and box["width"] > 0
                assert view["x"] <= box["x"]
                assert box["x"] + box["width"] <= view["x"] + view["width"] + 0.5
            assert cells.first.inner_text() == "average"

        scatter = page.locator('img.plot[data-plot="accuracy_vs_ps"]')
        assert scatter.evaluate("img => img.complete && img.naturalWidth > 0")
        alt = scatter.get_attribute("alt") or ""
        assert all(scenario in alt for scenario in SCENARIOS), alt
        for name in ("scenarios", "size"):
            plot = page.locator(f'img.plot[data-plot="{name}"]')
            assert plot.evaluate("img => img.complete && img.naturalWidth > 0")
    assert errors == []


@pytest.fixture(scope="module")
def wide_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Reports of 1, 2 and 6 baseline runs, and of 6 runs `--vs` another: their tables'
    pinned average column, at 1280 px."""
    from proactivebench.report import write_report

    root = tmp_path_factory.mktemp("wide")
    runs = baseline_runs(root, (*SIX, "random"), per_scenario=2)
    shapes = {"one": (runs[:1], None), "two": (runs[:2], None), "six": (runs[:6], None)}
    shapes["vs"] = (runs[:6], runs[6])
    return {
        name: write_report(chosen, root / f"report-{name}", vs=vs, thumb_cache=None).html
        for name, (chosen, vs) in shapes.items()
    }


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5


@pytest.mark.parametrize("shape", ["one", "two", "six", "vs"])
def test_every_column_visible_or_visibly_scrollable(
    wide_reports: dict[str, Path], shape: str
) -> None:
    """At 1280 px, a column heading the pinned average column covers (or one past the table's
    box) lies in a box that scrolls and says so (its cue is shown); scrolled to the end, no
    heading is covered. A table that fits shows no cue."""
    errors: list[str] = []
    with opened(wide_reports[shape], 1280, errors) as page:
        figures = page.locator("figure.table")
        assert figures.count() >= 2
        for number in range(figures.count()):
            figure = figures.nth(number)
            scroller = figure.locator(".scroller")
            wide, box_width = scroller.evaluate("s => [s.scrollWidth, s.clientWidth]")
            view = scroller.bounding_box()
            assert view is not None and view["x"] + view["width"] <= 1280
            cue = figure.locator(".scroll-cue")
            heads = figure.locator("th")
            pin = figure.locator("th.average-col")
            none = {"x": -1e9, "width": 0.0}  # a table without a pinned column
            pinned = pin.bounding_box() if pin.count() else none
            assert pinned is not None
            hidden = []
            for index in range(heads.count()):
                head = heads.nth(index)
                if "average-col" in (head.get_attribute("class") or ""):
                    continue
                box = head.bounding_box()
                assert box is not None
                if _overlaps(box, pinned) or box["x"] + box["width"] > view["x"] + view["width"]:
                    hidden.append(head.inner_text())
            if hidden:
                assert wide > box_width, (shape, hidden)
                assert cue.is_visible(), (shape, hidden)
            else:
                assert not cue.is_visible()
            scroller.evaluate("s => { s.scrollLeft = s.scrollWidth; }")
            pinned = pin.bounding_box() if pin.count() else none
            assert pinned is not None
            for index in range(heads.count()):
                head = heads.nth(index)
                if "average-col" not in (head.get_attribute("class") or ""):
                    box = head.bounding_box()
                    assert box is not None
                    assert not _overlaps(box, pinned) or box["x"] < view["x"], head.inner_text()
            if shape in ("six", "vs"):
                page.screenshot(path=str(wide_reports[shape].parent / "at-1280.png"))
    assert errors == []
