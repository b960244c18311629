"""Draw `docs/report.png`: the HTML report of five baselines on a synthetic ProactiveBench.

Generates 7 × 20 synthetic samples, plays the five built-in baselines (given made-up sizes
with `params`, so that the size plot is drawn), writes their report with `--vs random`, opens
it in headless Chromium (Debian's, via Playwright) at 1280 px and stacks three views of the
page: the side-by-side tables (the run column pinned at the left), the plots and the episode
viewer. Run from the repository root:

    python docs/make_report_screenshot.py [--out docs/report.png]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import tempfile
from pathlib import Path

from PIL import Image

from proactivebench.data.synth import generate
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.report import write_report

WIDTH, HEIGHT = 1280, 760
#: Made-up sizes (billions of parameters), for the size plot.
SIZES = {"oracle": 72, "proactive": 32, "reactive": 7, "random": 2, "abstain": 0.5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/report.png"))
    args = parser.parse_args()
    out, home = args.out.resolve(), Path.cwd()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium binary: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        os.chdir(root)  # the runs are named by relative paths, as a user types them
        generate(Path("data"), per_scenario=20, seed=0)
        runs = []
        for name in SIZES:
            evaluate(Path("data"), load_model(f"baseline:{name}"), Path(name))
            runs.append(Path(name))
        page_path = write_report(
            runs,
            Path("report"),
            vs=Path("random"),
            params=SIZES,
            title="Built-in baselines on the synthetic ProactiveBench",
        ).html
        shots = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            page.locator("table").first.scroll_into_view_if_needed()
            page.evaluate("window.scrollBy(0, -40)")
            shots.append(page.screenshot())
            page.locator("#plots").scroll_into_view_if_needed()
            page.evaluate("document.getElementById('plots').scrollIntoView()")
            shots.append(page.screenshot())
            page.locator("#viewer-run").select_option(label="baseline:proactive")
            page.locator("#viewer-scenario").select_option("ROD")
            page.locator("#episodes").scroll_into_view_if_needed()
            page.locator("article.episode").first.wait_for(state="visible")
            page.evaluate("document.getElementById('episodes').scrollIntoView()")
            shots.append(page.screenshot())
            browser.close()
        os.chdir(home)
    images = [Image.open(io.BytesIO(shot)).convert("RGB") for shot in shots]
    sheet = Image.new("RGB", (WIDTH, sum(i.height for i in images) + 8), (120, 120, 120))
    top = 0
    for image in images:
        sheet.paste(image, (0, top))
        top += image.height + 8
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out, optimize=True)
    print(f"wrote {out} ({sheet.width}x{sheet.height})")


if __name__ == "__main__":
    main()
