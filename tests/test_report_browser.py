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

from proactivebench.benchmark.registry import paper_scenarios
from proactivebench.cli import main
from proactivebench.data.synth import generate

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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module's tests (each opens its own page)."""
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@contextlib.contextmanager
def opened(browser: Any, report: Path, width: int, errors: list[str]) -> Iterator[Any]:
    """`report` loaded in a new page of `browser` at `width` px; console errors, page errors
    (uncaught exceptions) and dialogs (an alert a payload would open) go to `errors`."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        yield page
    finally:
        page.close()


def test_report_in_chromium(browser: Any, report: Path) -> None:
    errors: list[str] = []
    with opened(browser, report, 1400, errors) as page:
        tables = page.locator("figure.table table")
        assert tables.count() >= 2  # the run's table and the usage table
        assert "accuracy %" in page.locator("figure.table").first.inner_text()

        # Sections are drawn when they come into view (lazy): scroll to the viewer.
        assert page.locator("article.episode").count() == 0
        select = page.locator("#viewer-scenario")
        for scenario in paper_scenarios():
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


def test_the_head_of_the_page_fits_400_px(browser: Any, report: Path) -> None:
    """At 400 px (a phone), the page's head (a `python:` model's label is one long word: its
    path, as is a run directory) wraps inside the window: the page does not scroll sideways,
    and the warning (half the answers here designate no option) comes before the tables."""
    errors: list[str] = []
    with opened(browser, report, 400, errors) as page:
        assert page.evaluate("document.documentElement.scrollWidth") <= 400
        for selector in ("header h1", "header li", "p.warning"):
            boxes = page.locator(selector).evaluate_all(
                "all => all.map(e => [e.getBoundingClientRect().right, e.scrollWidth,"
                " e.clientWidth])"
            )
            assert boxes, selector
            assert all(right <= 400 and wide <= box for right, wide, box in boxes), boxes
        warning = page.locator("p.warning").first.bounding_box()
        tables = page.locator("#tables").bounding_box()
        assert warning is not None and tables is not None and warning["y"] < tables["y"]
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
def seven_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The runs of `SIX`, then one of the random baseline (a `--vs` reference)."""
    return baseline_runs(tmp_path_factory.mktemp("seven"), (*SIX, "random"), per_scenario=3)


@pytest.fixture(scope="module")
def six_runs_report(seven_runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from proactivebench.report import write_report

    root = tmp_path_factory.mktemp("six")
    runs = seven_runs[:6]
    sizes = {run.name: size for run, size in zip(runs, (7, 13, 70, 2, 0.5, 7), strict=True)}
    outcome = write_report(runs, root / "report", params=sizes)
    return outcome.html


def test_six_runs_at_1280_px(browser: Any, six_runs_report: Path) -> None:
    """The average column of the cross-run tables is in view without scrolling, although the
    tables are wider than the window; the scatter names every scenario; no error."""
    errors: list[str] = []
    with opened(browser, six_runs_report, 1280, errors) as page:
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
        assert all(scenario in alt for scenario in paper_scenarios()), alt
        for name in ("scenarios", "size"):
            plot = page.locator(f'img.plot[data-plot="{name}"]')
            assert plot.evaluate("img => img.complete && img.naturalWidth > 0")
    assert errors == []


@pytest.fixture(scope="module")
def wide_reports(
    seven_runs: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Reports of 1, 2 and 6 baseline runs, and of 6 runs `--vs` another: their tables'
    pinned average column, at 1280 px."""
    from proactivebench.report import write_report

    root = tmp_path_factory.mktemp("wide")
    runs = seven_runs
    shapes = {"one": (runs[:1], None), "two": (runs[:2], None), "six": (runs[:6], None)}
    shapes["vs"] = (runs[:6], runs[6])
    return {
        name: write_report(chosen, root / f"report-{name}", vs=vs, thumb_cache=None).html
        for name, (chosen, vs) in shapes.items()
    }


#: What the column test reads of one `figure.table`, in one round trip to the page: the
#: scroll box, and the boxes of its headings and of its pinned average column (none: far off
#: to the left), before and after scrolling to the end.
MEASURE_TABLE = """figure => {
    const scroller = figure.querySelector(".scroller");
    const box = element => {
        const r = element.getBoundingClientRect();
        return {x: r.x, width: r.width};
    };
    const read = () => {
        const pin = figure.querySelector("th.average-col");
        const heads = [...figure.querySelectorAll("th")]
            .filter(head => !head.classList.contains("average-col"))
            .map(head => ({text: head.innerText, ...box(head)}));
        return {heads, pinned: pin ? box(pin) : {x: -1e9, width: 0}};
    };
    const before = read();
    const seen = {view: box(scroller), wide: scroller.scrollWidth, box_width: scroller.clientWidth};
    scroller.scrollLeft = scroller.scrollWidth;
    return {...seen, before, after: read()};
}"""


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5


@pytest.mark.parametrize("shape", ["one", "two", "six", "vs"])
def test_every_column_visible_or_visibly_scrollable(
    browser: Any, wide_reports: dict[str, Path], shape: str
) -> None:
    """At 1280 px, a column heading the pinned average column covers (or one past the table's
    box) lies in a box that scrolls and says so (its cue is shown); scrolled to the end, no
    heading is covered. A table that fits shows no cue."""
    errors: list[str] = []
    with opened(browser, wide_reports[shape], 1280, errors) as page:
        figures = page.locator("figure.table")
        assert figures.count() >= 2
        for number in range(figures.count()):
            figure = figures.nth(number)
            seen = figure.evaluate(MEASURE_TABLE)
            view = seen["view"]
            assert view["x"] + view["width"] <= 1280
            heads = seen["before"]["heads"]
            assert all(head["width"] > 0 for head in heads), heads  # every heading is laid out
            pinned = seen["before"]["pinned"]
            hidden = [
                head["text"]
                for head in heads
                if _overlaps(head, pinned) or head["x"] + head["width"] > view["x"] + view["width"]
            ]
            cue = figure.locator(".scroll-cue")
            if hidden:
                assert seen["wide"] > seen["box_width"], (shape, hidden)
                assert cue.is_visible(), (shape, hidden)
            else:
                assert not cue.is_visible()
            pinned = seen["after"]["pinned"]
            for head in seen["after"]["heads"]:
                assert not _overlaps(head, pinned) or head["x"] < view["x"], head["text"]
    assert errors == []
