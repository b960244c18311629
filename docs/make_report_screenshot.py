"""Draw `docs/report.png`: the HTML report of two baselines on a synthetic ProactiveBench.

Generates 7 × 20 synthetic samples, plays `baseline:proactive` and `baseline:random`, writes
their report with `--vs random`, opens it in headless Chromium (Debian's, via Playwright) and
stacks two views of the page: the top (the tables) and the episode viewer. Run from the
repository root:

    python docs/make_report_screenshot.py [--out docs/report.png]
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
from pathlib import Path

from PIL import Image

from proactivebench.data.synth import generate
from proactivebench.models import load_model
from proactivebench.report import write_report
from proactivebench.runner import evaluate

WIDTH, HEIGHT = 1400, 820


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/report.png"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium binary: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        generate(root / "data", per_scenario=20, seed=0)
        runs = []
        for name in ("proactive", "random"):
            evaluate(root / "data", load_model(f"baseline:{name}"), root / name)
            runs.append(root / name)
        page_path = write_report(runs, root / "report", vs=root / "random").html
        shots = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(page_path.as_uri(), wait_until="load")
            shots.append(page.screenshot())
            page.locator("#viewer-scenario").select_option("COCO")
            page.locator("#episodes").scroll_into_view_if_needed()
            page.locator("article.episode").first.wait_for(state="visible")
            page.evaluate("document.getElementById('episodes').scrollIntoView()")
            shots.append(page.screenshot())
            browser.close()
    images = [Image.open(io.BytesIO(shot)).convert("RGB") for shot in shots]
    sheet = Image.new("RGB", (WIDTH, sum(i.height for i in images) + 8), (120, 120, 120))
    top = 0
    for image in images:
        sheet.paste(image, (0, top))
        top += image.height + 8
    sheet = sheet.resize((sheet.width * 3 // 4, sheet.height * 3 // 4), Image.Resampling.LANCZOS)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(args.out, optimize=True)
    print(f"wrote {args.out} ({sheet.width}x{sheet.height})")


if __name__ == "__main__":
    main()
