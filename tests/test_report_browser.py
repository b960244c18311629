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
    """The average column of the cross-run tables is in view without scrolling (the intervals
    under their values, the tables fit a 1280 px window); the scatter names every scenario;
    no error."""
    errors: list[str] = []
    with opened(browser, six_runs_report, 1280, errors) as page:
        for key in ("cross-accuracy", "cross-ps_rate"):
            figure = page.locator(f'figure.table[data-table="{key}"]')
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


# ----- paper reports at 1280 and 400 px (issue 47, items 2 to 4) ---------------------------------

#: Long model names, as users' runs carry them (a served model's endpoint in its spec).
LONG_NAMES = (
    "openai:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:8000/v1",
    "hf:llava-hf/llava-onevision-qwen2-7b-ov-hf",
    "hf:OpenGVLab/InternVL3-8B",
    "openai:OpenGVLab/InternVL3-38B@http://gpu-node-17.cluster.example:8000/v1",
    "hf:llava-hf/llava-1.5-7b-hf",
    "hf:OpenGVLab/InternVL3-1B",
)


def _paper_like_run(root: Path, name: str, model: str, seed: int) -> Path:
    """A run of the paper's seven scenarios, 4 episodes each, some right, some asking."""
    from paperruns import SCENARIOS, mcqa_line, sample_ids, write_run

    lines = [
        mcqa_line(scenario, sample, (i + seed + k) % 3 == 0, (i * seed + k) % 3)
        for k, scenario in enumerate(SCENARIOS)
        for i, sample in enumerate(sample_ids(scenario, 4))
    ]
    return write_run(root, name, lines, model)


@pytest.fixture(scope="module")
def paper_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`report --paper` of 1, 2, 6 and 23 runs (Table 1: the 22 published rows and the runs',
    the cross-run tables: 1, 2, 6 and 23 rows), and one run `--vs` another."""
    from proactivebench.report import write_report

    root = tmp_path_factory.mktemp("paper-wide")
    models = [*LONG_NAMES, *(f"{name}-{i}" for i in range(4) for name in LONG_NAMES)][:23]
    runs = [
        _paper_like_run(root / "runs", f"run{i}", model, seed=i + 1)
        for i, model in enumerate(models)
    ]
    reports = {}
    for count in (1, 2, 6, 23):
        reports[f"paper-{count}"] = write_report(
            runs[:count], root / f"paper-{count}", paper=True, n_resamples=200, thumb_cache=None
        ).html
    reports["vs"] = write_report(
        runs[:1], root / "vs", vs=runs[4], n_resamples=200, thumb_cache=None
    ).html
    return reports


#: Per `figure.table`, per cell out of the first column, whether it can be read: lying in the
#: window at rest, not under a pinned (sticky) cell; else in a box that scrolls sideways,
#: where, scrolled to just right of its row's first cell, it lies whole in the box, beside
#: that first cell (in view), under no pinned cell; and, the box scrolled to its end, the
#: row's first cell still in view. Returns what fails, as text.
READABLE_CELLS = """figure => {
    const width = document.documentElement.clientWidth;
    const scroller = figure.querySelector(".scroller");
    const scrolls = ["auto", "scroll"].includes(getComputedStyle(scroller).overflowX);
    const rows = [...figure.querySelectorAll("tr")].map(row => [...row.children]);
    const name = figure.dataset.table;
    const problems = [];
    const sticky = cell => getComputedStyle(cell).position === "sticky";
    const covered = (cell, row) => {
        const r = cell.getBoundingClientRect();
        return row.some(other => other !== cell && sticky(other) && (() => {
            const o = other.getBoundingClientRect();
            return r.left < o.right - 0.5 && o.left < r.right - 0.5;
        })());
    };
    const inView = cell => {
        const r = cell.getBoundingClientRect();
        return r.width > 0 && r.left >= -0.5 && r.right <= width + 0.5;
    };
    scroller.scrollLeft = 0;
    const columns = Math.max(...rows.map(row => row.length));
    for (let column = 1; column < columns; column++) {
        scroller.scrollLeft = 0;
        const cells = rows.filter(row => row[column]);
        const atRest = cells.every(row => inView(row[column]) && !covered(row[column], row));
        if (atRest) continue;
        if (!scrolls || scroller.scrollWidth <= scroller.clientWidth) {
            problems.push(`${name}: column ${column} out of view and its box does not scroll`);
            continue;
        }
        const head = cells[0];
        const shift = head[column].getBoundingClientRect().left
            - head[0].getBoundingClientRect().right;
        scroller.scrollLeft += shift;
        const box = scroller.getBoundingClientRect();
        const right = Math.min(width, box.right);
        for (const row of cells) {
            const cell = row[column].getBoundingClientRect();
            const first = row[0].getBoundingClientRect();
            const room = right - first.right;
            const whole = cell.width > room + 0.5
                || (cell.left >= first.right - 0.5 && cell.right <= right + 0.5);
            if (!whole || !inView(row[0]) || covered(row[column], row)) {
                problems.push(`${name}: column ${column} (${row[column].innerText}) unreadable`
                    + ` scrolled to it: ${JSON.stringify([cell.left, cell.right, first.right,
                    right])}`);
                break;
            }
        }
        scroller.scrollLeft = scroller.scrollWidth;
        for (const row of cells) {
            if (!inView(row[0])) {
                problems.push(`${name}: the first cell of "${row[0].innerText}" is out of view`
                    + " at the end of the scroll");
                break;
            }
        }
    }
    scroller.scrollLeft = 0;
    return problems;
}"""


@pytest.mark.parametrize("width", [1280, 400])
@pytest.mark.parametrize("shape", ["paper-1", "paper-2", "paper-6", "paper-23", "vs"])
def test_every_table_cell_readable_or_beside_its_pinned_first_column(
    browser: Any, paper_reports: dict[str, Path], shape: str, width: int
) -> None:
    """Issue 47, item 2: every cell of every table, Table 1's 22 published rows and the runs'
    included, is in the window, or in a box that scrolls sideways while the row's first cell
    (the model) stays in view beside it; no pinned cell covers another (the average column,
    pinned at the right, covered COCO); the page itself does not scroll sideways."""
    errors: list[str] = []
    with opened(browser, paper_reports[shape], width, errors) as page:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        figures = page.locator("figure.table")
        keys = figures.evaluate_all("all => all.map(f => f.dataset.table)")
        if shape.startswith("paper"):
            assert "paper-table1-acc" in keys, keys
            rows = page.locator('figure.table[data-table="paper-table1-acc"] tbody tr')
            runs = int(shape.split("-")[1])
            assert rows.count() >= 22 + 3 * runs  # published, each run's three
        problems = [
            p for f in range(figures.count()) for p in figures.nth(f).evaluate(READABLE_CELLS)
        ]
        assert problems == []
    assert errors == []


@pytest.mark.parametrize("shape", ["paper-1", "paper-2", "paper-6", "paper-23", "vs"])
def test_the_first_screen_shows_a_number_of_a_results_table(
    browser: Any, paper_reports: dict[str, Path], shape: str
) -> None:
    """Issue 47, item 3: at 1280 x 800 the first screen holds a number of a results table
    (the columns' definitions, some sixteen lines, came first and pushed every table below
    it); the definitions are one click away."""
    errors: list[str] = []
    with opened(browser, paper_reports[shape], 1280, errors) as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        seen = page.locator("figure.table td.num").evaluate_all(
            """all => all.filter(cell => {
                const r = cell.getBoundingClientRect();
                return r.width > 0 && r.top >= 0 && r.bottom <= 800 && r.right <= 1280
                    && /\\d/.test(cell.innerText);
            }).map(cell => cell.innerText)"""
        )
        assert seen, "no number of a table on the first screen"
        legend = page.locator("details.legend")
        assert legend.count() == 1 and not legend.evaluate("d => d.open")
        legend.locator("summary").click()
        assert page.locator("dl.legend dt", has_text="accuracy %").first.is_visible()
    assert errors == []


def test_at_400_px_each_plot_links_its_full_size_image(
    browser: Any, paper_reports: dict[str, Path]
) -> None:
    """Issue 47, item 4: at 400 px the plots shrink to the window, unreadable, and were no
    links. Each is a link to its file beside the page (plots/NAME.png), the same image at
    full size: a tap opens it."""
    import base64
    from urllib.parse import unquote, urlparse

    errors: list[str] = []
    with opened(browser, paper_reports["paper-2"], 400, errors) as page:
        plots = page.locator("img.plot")
        assert plots.count() >= 3
        for index in range(plots.count()):
            plot = plots.nth(index)
            shown = plot.evaluate("img => [img.clientWidth, img.naturalWidth]")
            assert shown[0] <= 400 < shown[1]  # shrunk: the link is what makes it readable
            href = plot.evaluate("img => img.closest('a').href")
            target = Path(unquote(urlparse(href).path))
            assert target.parent.name == "plots" and target.is_file(), href
            embedded = plot.get_attribute("src") or ""
            assert base64.b64decode(embedded.split(",", 1)[1]) == target.read_bytes()
        first = plots.first.evaluate("img => img.closest('a').href")
        plots.first.click()
        page.wait_for_url(first)
    assert errors == []
