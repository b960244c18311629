"""Draw `docs/play.png`: a turn of `proactivebench play` in the browser.

Generates a small synthetic ProactiveBench, starts `proactivebench play --no-browser` on it
(ROD only, with --history), opens the printed URL in headless Chromium (Debian's, via
Playwright), presses Enter past the instructions, answers the first turn by asking (the
option that moves the blocks) and shoots the second turn, its first shown above it. Run from
the repository root:

    python docs/make_play_screenshot.py [--out docs/play.png]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from proactivebench.data.synth import generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/play.png"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium binary: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        generate(root / "data", per_scenario=2, seed=0)
        command = [sys.executable, "-m", "proactivebench", "play", "--data", str(root / "data")]
        command += ["--out", str(root / "run"), "--scenarios", "ROD", "--history"]
        command += ["--annotator", "alice", "--no-browser"]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            url = next(
                line.split(": ", 1)[1].strip() for line in server.stdout if "browser: " in line
            )
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                page.goto(url)
                page.keyboard.press("Enter")
                page.wait_for_selector("#turn:not([hidden])")
                page.click(".option:has-text('Move the')")
                page.wait_for_selector("#history .earlier")
                page.wait_for_function("document.getElementById('image').complete")
                page.screenshot(path=str(args.out), full_page=True)
                browser.close()
        finally:
            server.kill()
            server.wait()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
