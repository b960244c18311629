"""The HTML report of a large run: how much it weighs and how fast a browser opens it.

Generates a synthetic set of 7 × N samples (default 500), plays it with `baseline:proactive`
(the baseline with the most turns, so the most views to show), writes the report as `eval`
does, and opens it in headless Chromium (Debian's, driven by Playwright) several times:

- weight: the size of `report.html` (the budget is 30 MB);
- open: from navigation to the `load` event: the page parsed, its scripts run, the tables
  and plots shown (the budget is 3 s);
- first strips: from navigation until the first scenario's episode strips are drawn once the
  viewer is scrolled into view (sections are drawn lazily, when they come into view).

It also prints how long `eval` itself took and how long writing the report took.

With `--official-size`, the images are first replaced by 640×480 photo-like JPEGs (as the
official data's; `official_size.py`), which thumbnails decode at a quarter of their size.

    python benchmarks/report.py [--per-scenario 500] [--repeats 5] [--keep DIR] [--official-size]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from proactivebench.data.synth import generate
from proactivebench.models import load_model
from proactivebench.report import write_report
from proactivebench.runner import evaluate


def open_times(page_path: Path, repeats: int) -> tuple[list[float], list[float]]:
    """Seconds to the load event and to the first drawn strips, per repeat (fresh page)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("no chromium binary: apt-get install -y chromium")
    loads, strips = [], []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            for _ in range(repeats + 1):  # the first is a warm-up (disk cache, browser start)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.on("pageerror", lambda e: errors.append(str(e)))
                start = time.perf_counter()
                page.goto(page_path.as_uri(), wait_until="load", timeout=60_000)
                loaded = time.perf_counter() - start
                page.locator("#viewer-episodes").scroll_into_view_if_needed()
                page.locator("article.episode").first.wait_for(state="visible", timeout=60_000)
                drawn = time.perf_counter() - start
                page.close()
                loads.append(loaded)
                strips.append(drawn)
        finally:
            browser.close()
    if errors:
        sys.exit(f"page errors: {errors}")
    return loads[1:], strips[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-scenario", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="Keep data and run here.")
    parser.add_argument("--official-size", action="store_true", help="640x480 JPEG images.")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="report-bench-"))
    data, run = root / "data", root / "run"
    if not (data / "synth_manifest.json").is_file():
        started = time.perf_counter()
        if args.official_size:
            from official_size import make_official_size

            generate(root / "png", per_scenario=args.per_scenario, seed=0)
            make_official_size(root / "png", data)
            shutil.rmtree(root / "png")
        else:
            generate(data, per_scenario=args.per_scenario, seed=0)
        print(f"generated 7 x {args.per_scenario} samples in {time.perf_counter() - started:.0f} s")
    shutil.rmtree(run, ignore_errors=True)  # a fresh run, never a resumed one
    started = time.perf_counter()
    outcome = evaluate(data, load_model("baseline:proactive"), run)
    played = time.perf_counter() - started
    episodes = sum(s.n for s in outcome.summary.scenarios.values())
    started = time.perf_counter()
    report = write_report([run])
    written = time.perf_counter() - started
    size_mb = report.html.stat().st_size / 1e6
    turns = report.measures[0].usage["requests"]
    loads, strips = open_times(report.html, args.repeats)

    print(f"episodes: {episodes}, turns shown: {turns} (baseline:proactive)")
    views = len(
        {
            (t["image"], str(t.get("crop")), t.get("resize_short_edge"))
            for line in report.measures[0].run.lines
            for t in line.get("trace", [])
        }
    )
    print(
        f"eval: {played:.1f} s; writing the report: {written:.1f} s ({views} distinct views, "
        f"{1000 * written / views:.1f} ms each, thumbnail included)"
    )
    print(f"report.html: {size_mb:.1f} MB (budget 30 MB)")
    print(
        f"open (navigation to load), median of {len(loads)}: {statistics.median(loads):.2f} s "
        f"(runs: {' / '.join(f'{x:.2f}' for x in loads)}; budget 3 s)"
    )
    print(
        f"first strips drawn, median of {len(strips)}: {statistics.median(strips):.2f} s "
        f"(runs: {' / '.join(f'{x:.2f}' for x in strips)})"
    )
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
