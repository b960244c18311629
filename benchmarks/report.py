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

With `--fixed-cost` (issue 34, item 4), it measures what a report costs whatever the run's
size, as a user waits for it, in fresh processes, this checkout against an earlier commit
(`--baseline`, default `main`, checked out into a temporary git worktree): `proactivebench
eval` of 7 × N synthetic samples with the openai backend against the fake server (50 ms,
`--concurrency`, default 8, so that the run lasts seconds as a real one does), and then
`proactivebench report RUN --out DIR`. It prints, as medians over rounds (the versions
alternating) with the ratios now/baseline: the run (spawn to the last write of
results.jsonl), the report's part of `eval` (the last write of results.jsonl to the last
file of the report, and to the process's exit), `eval`'s wall time, and the `report`
command's wall and CPU time. Both versions share one thumbnail cache, filled by a warm-up
report, so that thumbnails are looked up, not made; it checks that both versions' reports
of the same run have byte-identical tables, report.md and report.json.

With `--side-by-side`, it measures instead what writing the report adds to a run, with the
thumbnail code of before (commit 66fa9fe, kept here as `BeforeThumbnails`: every view decoded
and shrunk one after another) and with today's (reduced-scale decoding, a process pool, the
thumbnail cache cold and warm), on the workload of issue 20: the seven scenarios with 640×480
JPEGs, played by the openai backend at concurrency 64 against the fake server of
`testing.server` answering in 50 ms (as `throughput.py` runs it). Each round plays the
run once, then writes its report the three ways (the order alternating between rounds); the
figures are medians over the rounds, with the new/before ratios.

    python benchmarks/report.py [--per-scenario 500] [--repeats 5] [--keep DIR] [--official-size]
    python benchmarks/report.py --side-by-side [--per-scenario 60] [--rounds 5]
    python benchmarks/report.py --fixed-cost [--baseline main] [--per-scenario 60] [--rounds 5]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data import thumbnails
from proactivebench.data.directory import PathGuard
from proactivebench.data.images import DEFAULT_MAX_IMAGE_MB, apply_view, opened_image
from proactivebench.data.synth import generate
from proactivebench.data.thumbnails import THUMB_QUALITY, thumbnail_format
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.report import build, write_report
from proactivebench.report.thumbs import view_key

ROOT = Path(__file__).resolve().parents[1]


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


# ----- --side-by-side: the report's cost against the run's, before and now -------------------


class BeforeThumbnails:
    """The thumbnails as commit 66fa9fe made them, one view after another in this process: the
    whole file decoded when the view has a crop, converted (a copy), cropped, then shrunk.
    Kept here, for the comparison only."""

    def __init__(self, data_dir: Path | None, edge: int = 112, cache: object = None) -> None:
        self.edge = edge
        self.max_file_bytes = DEFAULT_MAX_IMAGE_MB * 10**6
        self._guard = PathGuard(data_dir) if data_dir is not None and data_dir.is_dir() else None
        self._urls: dict[Any, str | None] = {}
        self.missing = 0

    @property
    def available(self) -> bool:
        return self._guard is not None

    def prefetch(self, keys: object) -> None:
        """Before, nothing was made ahead: each view on its first `url`."""

    start = prefetch

    def close(self) -> None:
        """Before, there was nothing to stop."""

    def url(self, key: tuple) -> str | None:
        if key not in self._urls:
            self._urls[key] = self._make(key)
            self.missing += self._urls[key] is None
        return self._urls[key]

    def _make(self, key: tuple) -> str | None:
        from PIL import Image

        if self._guard is None:
            return None
        image_path, crop, resize = key
        try:
            path = self._guard.resolve(image_path)
            with opened_image(path, image_path, max_bytes=self.max_file_bytes) as opened:
                if crop is None:
                    opened.draft("RGB", (self.edge, self.edge))
                image = apply_view(opened.convert("RGB"), View(image_path, crop, resize))
                image.thumbnail((self.edge, self.edge), Image.Resampling.BILINEAR)
                buffer = io.BytesIO()
                image.save(buffer, format=thumbnail_format(), quality=THUMB_QUALITY, method=0)
        except (OSError, ValueError, ProactiveBenchError):
            return None
        mime = "image/webp" if thumbnail_format() == "WEBP" else "image/jpeg"
        return f"data:{mime};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


class NoThumbnails(BeforeThumbnails):
    """No thumbnail at all: what the rest of the report costs (tables, plots, the page)."""

    def __init__(self, data_dir: Path | None, edge: int = 112, cache: object = None) -> None:
        super().__init__(None)


@contextlib.contextmanager
def thumbnails_as(maker: type) -> Iterator[None]:
    """Reports written in the block make their thumbnails with `maker`."""
    today = build.Thumbnails
    build.Thumbnails = maker  # type: ignore[misc]
    try:
        yield
    finally:
        build.Thumbnails = today  # type: ignore[misc]


def fresh_fork_server() -> None:
    """Stop the process pool's fork server, so that the next report starts its own, as the
    report of a `proactivebench eval` process does."""
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()


def write_before(run: Path, out: Path, cache: Path) -> None:
    with thumbnails_as(BeforeThumbnails):
        write_report([run], out, thumb_cache=None)


def write_now(run: Path, out: Path, cache: Path) -> None:
    fresh_fork_server()
    write_report([run], out, thumb_cache=cache)


def write_one_process(run: Path, out: Path, cache: Path) -> None:
    cores = thumbnails._cores
    thumbnails._cores = lambda: 1  # as on a machine of one core: no pool
    try:
        write_report([run], out, thumb_cache=None)
    finally:
        thumbnails._cores = cores


def write_without(run: Path, out: Path, cache: Path) -> None:
    with thumbnails_as(NoThumbnails):
        write_report([run], out, thumb_cache=None)


#: The ways a report is written, in the order of even rounds (odd rounds reverse it, the warm
#: cache always after the cold one): label, writer.
WAYS: dict[str, tuple[str, Callable[[Path, Path, Path], None]]] = {
    "before": ("thumbnails as before (66fa9fe)", write_before),
    "cold": ("now, cold thumbnail cache", write_now),
    "warm": ("now, warm thumbnail cache", write_now),
    "one-process": ("now, no cache, no pool (one process)", write_one_process),
    "none": ("no thumbnails at all (the rest)", write_without),
}


def timed(write: Callable[..., Any], *args: Any) -> float:
    started = time.perf_counter()
    write(*args)
    return time.perf_counter() - started


def thumbnail_cpu(data: Path, keys: list[tuple], rounds: int) -> dict[str, tuple[float, float]]:
    """CPU time (of this process, so that other work on the machine counts little) to make one
    thumbnail, before and now, for the views without and with a crop: medians over rounds."""
    before = BeforeThumbnails(data)
    guard = PathGuard(data)
    jobs = {
        "plain views": [(guard.resolve(k[0]), k) for k in dict.fromkeys(keys) if k[1] is None],
        "cropped views (COCO)": [
            (guard.resolve(k[0]), k) for k in dict.fromkeys(keys) if k[1] is not None
        ],
    }
    result = {}
    for kind, views in jobs.items():
        if not views:
            continue
        spent: dict[str, list[float]] = {"before": [], "now": []}
        for _ in range(rounds):
            for way in spent:
                started = time.process_time()
                for path, key in views:
                    if way == "before":
                        before._make(key)
                    else:
                        thumbnails.make_thumbnail(path, key, 112, None)
                spent[way].append(1000 * (time.process_time() - started) / len(views))
        result[kind] = (statistics.median(spent["before"]), statistics.median(spent["now"]))
    return result


def side_by_side(per_scenario: int, rounds: int, latency: float, concurrency: int) -> None:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
    from throughput import MODEL, AnswerKeyRecorder, make_data

    from proactivebench.models.cache import ResponseCache
    from proactivebench.testing.server import ServerProcess

    free = thumbnails._cores()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        data, settings = make_data(scratch, per_scenario, "official")
        key = AnswerKeyRecorder()
        evaluate(data, key, scratch / "key", settings, concurrency=8)
        answers = scratch / "answers.json"
        answers.write_text(json.dumps(key.answers))

        def play(name: str) -> tuple[Path, float]:
            run = scratch / name
            model = load_model(f"openai:{MODEL}@{server.url}", timeout=30)
            started = time.perf_counter()
            evaluate(
                data,
                model,
                run,
                settings,
                concurrency=concurrency,
                cache=ResponseCache(run.with_suffix(".sqlite")),
            )
            return run, time.perf_counter() - started

        walls: list[float] = []
        times: dict[str, list[float]] = {kind: [] for kind in WAYS}
        with ServerProcess(latency=latency, answers=answers) as server:
            warm_up, _ = play("warm-up")  # page cache, connections, matplotlib's import
            write_report([warm_up], scratch / "report-warm-up", thumb_cache=None)
            for number in range(rounds):
                run, wall = play(f"run-{number}")
                walls.append(wall)
                cache = scratch / f"thumbs-{number}.sqlite"

                order = list(WAYS) if number % 2 == 0 else ["none", "one-process", "cold", "warm"]
                for kind in order if number % 2 == 0 else [*order, "before"]:
                    out = scratch / f"{kind}-{number}"
                    times[kind].append(timed(WAYS[kind][1], run, out, cache))
            report = write_report([run], scratch / "last", thumb_cache=cache)
            shown = (scratch / "last" / "report.html").read_text().count("data:image/")
            for kind in ("before", "cold", "warm", "one-process"):  # the same views, all shown
                page = (scratch / f"{kind}-0" / "report.html").read_text()
                assert page.count("data:image/") == shown, kind
            cpu = thumbnail_cpu(
                data,
                [view_key(t) for x in report.measures[0].run.lines for t in x["trace"]],
                rounds,
            )
    lines = report.measures[0].run.lines
    views = len({view_key(t) for line in lines for t in line["trace"]})
    turns = sum(len(x["trace"]) for x in lines)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    wall = statistics.median(walls)
    print(
        f"machine: {os.cpu_count()} CPUs, load average at the end {load:.2f}; cores free for "
        f"the thumbnail pool at the start / end: {free} / {thumbnails._cores()} (a pool needs 2)"
    )
    print(
        f"workload: 7 scenarios x {per_scenario}, {len(lines)} episodes, {turns} turns, "
        f"{views} distinct views (640x480 JPEGs); server {latency * 1000:.0f} ms, "
        f"concurrency {concurrency}; {rounds} rounds, medians"
    )
    print(f"run wall time: {wall:.2f} s (rounds: {' / '.join(f'{w:.2f}' for w in walls)})")
    for kind, (before_ms, now_ms) in cpu.items():
        print(
            f"thumbnail alone, CPU time in one process, {kind}: {before_ms:.2f} ms before, "
            f"{now_ms:.2f} ms now (now/before {now_ms / before_ms:.2f}x)"
        )
    base, rest = statistics.median(times["before"]), statistics.median(times["none"])
    print(
        "report time: median, % of the run's wall time (goal <= 15 %), and the thumbnails' part "
        "(above the report without thumbnails) per view (goal <= 1.5 ms)"
    )
    for kind, (label, _) in WAYS.items():
        median = statistics.median(times[kind])
        ratio = "" if kind in ("before", "none") else f", now/before {median / base:.2f}x"
        per_view = "" if kind == "none" else f", {1000 * (median - rest) / views:.2f} ms per view"
        print(
            f"  {label}: {median:.2f} s, {100 * median / wall:.0f} %{per_view}{ratio} "
            f"(rounds: {' / '.join(f'{t:.2f}' for t in times[kind])})"
        )


# ----- --fixed-cost: the report's cost after the last answer, in fresh processes ------------


def spawned(command: list[str], src: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Run `python -m proactivebench COMMAND` with `src` first on the path: its start and end
    (epoch seconds, to compare with files' modification times) and CPU time (its own and its
    children's: a report's worker counts)."""
    import subprocess

    environment = {**env, "PYTHONPATH": str(src)}
    started = time.time()
    with tempfile.TemporaryFile() as messages:
        process = subprocess.Popen(
            [sys.executable, "-m", "proactivebench", *command],
            stdout=subprocess.DEVNULL,
            stderr=messages,
            env=environment,
        )
        before = os.times()
        process.wait()
        ended = time.time()
        after = os.times()
        if process.returncode != 0:
            messages.seek(0)
            sys.exit(f"{' '.join(command)} failed:\n{messages.read().decode(errors='replace')}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return started, ended, cpu


def written_at(path: Path) -> float:
    return path.stat().st_mtime_ns / 1e9


def same_report(one: Path, other: Path) -> list[str]:
    """Files of two reports of the same run that differ (tables, report.md, report.json)."""
    names = sorted(
        {
            str(p.relative_to(root))
            for root in (one, other)
            for p in [*root.glob("tables/*"), root / "report.md", root / "report.json"]
        }
    )
    return [
        n
        for n in names
        if not (one / n).is_file()
        or (one / n).read_bytes() != ((other / n).read_bytes() if (other / n).is_file() else None)
    ]


def fixed_cost(
    baseline: str, per_scenario: int, rounds: int, latency: float, concurrency: int
) -> None:
    sys.path[:0] = [str(ROOT / "benchmarks")]
    from throughput import MODEL, AnswerKeyRecorder, make_data
    from versions import baseline_tree

    from proactivebench.testing.server import ServerProcess

    figures: dict[str, dict[str, list[float]]] = {"baseline": {}, "now": {}}
    differences: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, baseline_tree(baseline, Path(tmp)) as tree:
        scratch = Path(tmp)
        sources = {"baseline": tree / "src", "now": ROOT / "src"}
        data, settings = make_data(scratch, per_scenario, "synthetic")
        key = AnswerKeyRecorder()
        evaluate(data, key, scratch / "key", settings, concurrency=8)
        answers = scratch / "answers.json"
        answers.write_text(json.dumps(key.answers))
        # One thumbnail cache for all; compiled modules cached as on a user's machine.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PROACTIVEBENCH_CACHE"] = str(scratch / "cache")

        def eval_and_report(version: str, name: str, kept: bool = True) -> None:
            run = scratch / name / "run"
            model = f"openai:{MODEL}@{server.url}"
            command = ["eval", "--data", str(data), "--model", model, "--out", str(run)]
            command += ["--cache", str(scratch / name / "responses.sqlite")]
            started, ended, _ = spawned(
                [*command, "--concurrency", str(concurrency)], sources[version], env
            )
            answered = written_at(run / "results.jsonl")
            reported = written_at(run / "report" / build.BUILT_FROM)
            spent = figures[version] if kept else {}
            for label, value in (
                ("run: spawn to the last answer written", answered - started),
                ("eval: last answer to report written", reported - answered),
                ("eval: last answer to exit", ended - answered),
                ("eval: whole process", ended - started),
            ):
                spent.setdefault(label, []).append(value)
            started, ended, cpu = spawned(
                ["report", str(run), "--out", str(scratch / name / "again")],
                sources[version],
                env,
            )
            spent.setdefault("report RUN: whole process", []).append(ended - started)
            spent.setdefault("report RUN: CPU (with children)", []).append(cpu)

        with ServerProcess(latency=latency, answers=answers) as server:
            for version in sources:  # warm-up: .pyc files, page cache, the thumbnail cache
                eval_and_report(version, f"warm-up-{version}", kept=False)
            for number in range(rounds):
                order = list(sources) if number % 2 == 0 else list(sources)[::-1]
                for version in order:
                    eval_and_report(version, f"{version}-{number}")
            # Both versions' reports of one run: the same bytes where results are concerned.
            run = scratch / "now-0" / "run"
            spawned(["report", str(run), "--out", str(scratch / "cmp")], sources["baseline"], env)
            spawned(["report", str(run), "--out", str(scratch / "cmp-now")], sources["now"], env)
            differences = same_report(scratch / "cmp", scratch / "cmp-now")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"machine: {os.cpu_count()} CPUs, load average at the end {load:.2f}; workload: 7 x "
        f"{per_scenario} synthetic samples, openai backend, server {latency * 1000:.0f} ms, "
        f"concurrency {concurrency}; {rounds} rounds alternating, medians (seconds)"
    )
    print(f"{'':42} {baseline:>10} {'now':>10} {'now/base':>9}   rounds (baseline | now)")
    for label in figures["now"]:
        old, new = figures["baseline"][label], figures["now"][label]
        before, after = statistics.median(old), statistics.median(new)
        shown = " ".join(f"{x:.2f}" for x in old) + " | " + " ".join(f"{x:.2f}" for x in new)
        print(f"{label:42} {before:10.3f} {after:10.3f} {after / before:8.2f}x   {shown}")
    print(
        "reports of the same run: "
        + (
            f"DIFFERENT: {', '.join(differences)}"
            if differences
            else "identical tables, report.md and report.json"
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-scenario", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="Keep data and run here.")
    parser.add_argument("--official-size", action="store_true", help="640x480 JPEG images.")
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="The report's cost against a 50 ms run's, with the thumbnails of before and now.",
    )
    parser.add_argument(
        "--fixed-cost",
        action="store_true",
        help="The report's cost after the last answer and the report command's, in fresh "
        "processes, against --baseline.",
    )
    parser.add_argument("--baseline", default="main", help="--fixed-cost: the commit before.")
    parser.add_argument("--rounds", type=int, default=5, help="--side-by-side: rounds.")
    parser.add_argument("--latency", type=float, default=0.05, help="--side-by-side: server s.")
    parser.add_argument(
        "--concurrency", type=int, default=None, help="--side-by-side (64), --fixed-cost (8)."
    )
    args = parser.parse_args()
    if args.fixed_cost:
        fixed_cost(
            args.baseline, args.per_scenario or 60, args.rounds, args.latency, args.concurrency or 8
        )
        return
    if args.side_by_side:
        side_by_side(args.per_scenario or 60, args.rounds, args.latency, args.concurrency or 64)
        return
    args.per_scenario = args.per_scenario or 500

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
    report = write_report([run], thumb_cache=None)  # every thumbnail made, as a first report
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
