"""Draw `docs/paper-table1.png`: Table 1 of a paper report, the 22 published rows and a run on
generated data (shown last, without a rank, the notes saying why), at 1280 px.

The run's lines are made as the tests make them (`tests/paperruns.py`): two samples a
scenario, every other one correct. Opens the report in headless Chromium (Debian's, via
Playwright) and shoots the table alone. Run from the repository root:

    python docs/make_paper_screenshot.py [--out docs/paper-table1.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from paperruns import SCENARIOS, mcqa_line, sample_ids, write_run
from proactivebench.report import write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/paper-table1.png"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        lines = [
            mcqa_line(scenario, sample, index % 2 == 0, index % 3)
            for scenario in SCENARIOS
            for index, sample in enumerate(sample_ids(scenario, 2))
        ]
        run = write_run(root, "random", lines, "baseline:random")
        (root / "no-data" / "synth_manifest.json").write_text("{}")  # generated data
        report = write_report([run], root / "report", paper=True, thumb_cache=None)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(report.html.as_uri())
            table = page.locator('figure.table[data-table="paper-table1-acc"]')
            table.screenshot(path=str(args.out))
            browser.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
