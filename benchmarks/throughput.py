"""Throughput of the OpenAI-compatible backend against a server that takes 50 ms per request.

A real server spends most of a turn generating; what the harness must do is keep enough
requests in flight that this latency overlaps. This script measures that on images of the
official size (640×480 photo-like JPEGs, `benchmarks/official_size.py`) by default:

1. wall time of the same run of all seven scenarios at concurrency 64 and at concurrency 1,
   against the fake server of `testing.server` in *another process* (so that client and
   server share the two cores as they would on one machine), in its oracle mode (it answers the
   best move, so every episode takes the fewest turns and both runs make the same requests),
   with the response cache on, as `proactivebench eval` runs by default;
2. the efficiency at 64 against the latency bound: max(longest episode's turns, all turns /
   64) × latency, the time no client could beat;
3. the client's CPU time per turn (all its threads), for untransformed views (six scenarios)
   and for COCO's crops, which must be decoded and encoded;
4. the harness's own CPU time per turn with the oracle baseline and no server at all;
5. a cProfile breakdown of the client's CPU time by kind of work.

    python benchmarks/throughput.py [--images official|synthetic] [--per-scenario 60]
                                    [--latency 0.05] [--no-cache] [--profile-out FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from proactivebench.benchmark.scenarios import View  # noqa: E402
from proactivebench.data.images import ImageStore  # noqa: E402
from proactivebench.jobs.evaluate import EvalSettings, RunOutcome, evaluate  # noqa: E402
from proactivebench.models import load_model  # noqa: E402
from proactivebench.models.base import ChatRequest, Completion, Model  # noqa: E402
from proactivebench.models.baselines import Oracle  # noqa: E402
from proactivebench.models.cache import ResponseCache  # noqa: E402
from proactivebench.models.openai_compat import openai_messages  # noqa: E402
from proactivebench.testing.server import ServerProcess, fingerprint  # noqa: E402

MODEL = "bench-vlm"


# ----- data and the server's answer key -------------------------------------------------------


def make_data(root: Path, per_scenario: int, images: str) -> tuple[Path, EvalSettings]:
    """The synthetic data set, with its images replaced by official-size JPEGs unless
    `images` is "synthetic"."""
    from official_size import make_official_size

    from proactivebench.data.synth import generate

    generate(root / "synthetic", per_scenario=per_scenario, seed=0)
    if images == "synthetic":
        return root / "synthetic", EvalSettings()
    make_official_size(root / "synthetic", root / "official-size")
    return root / "official-size", EvalSettings()


class AnswerKeyRecorder(Model):
    """Plays the oracle in-process and records, for each request the openai backend will
    send, the fingerprint the server sees and the oracle's answer."""

    name = "answer-key"
    needs_images = True
    sees_answer_key = True
    max_batch = 1

    def __init__(self, image_format: str = "JPEG", quality: int = 90) -> None:
        self.oracle = Oracle()
        self.image_format, self.quality = image_format, quality
        self.answers: dict[str, str] = {}
        self.views: dict[View, None] = {}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        assert self.images is not None
        out = []
        for request in requests:
            wire = openai_messages(
                request.messages,
                lambda v: self.images.data_url(v, self.image_format, self.quality),  # type: ignore[union-attr]
            )
            answer = self.oracle.answer(request.observation)
            self.views[request.observation.view] = None
            self.answers[fingerprint(wire)] = answer
            out.append(Completion(answer))
        return out


# ----- measurements -----------------------------------------------------------------------------


def turns_per_episode(outcome: RunOutcome) -> list[int]:
    lines = (outcome.out_dir / "results.jsonl").read_text().splitlines()
    return [json.loads(line)["num_turns"] for line in lines]


def check_perfect(outcome: RunOutcome, label: str) -> None:
    """The oracle server must score 100 % with no errors, or the comparison is meaningless."""
    for short, score in outcome.summary.scenarios.items():
        if score.errors or score.accuracy != 100.0:
            raise SystemExit(f"{label}: {short} scored {score} (answer key mismatch?)")


@dataclass
class Timed:
    wall: float
    cpu: float
    turns: int
    retries: int


def timed_run(
    data: Path,
    settings: EvalSettings,
    url: str,
    scratch: Path,
    concurrency: int,
    cache: bool,
) -> Timed:
    """One openai-backend run in a fresh run directory (and a fresh response cache)."""
    model = load_model(f"openai:{MODEL}@{url}", timeout=30)  # as a run has it: wrapped
    out = Path(tempfile.mkdtemp(dir=scratch))
    responses = ResponseCache(out / "cache.sqlite") if cache else None
    cpu, start = time.process_time(), time.perf_counter()
    outcome = evaluate(data, model, out, settings, concurrency=concurrency, cache=responses)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    check_perfect(outcome, f"concurrency {concurrency}")
    retries = getattr(model, "stats", {}).get("retries", 0)
    return Timed(wall, cpu, sum(turns_per_episode(outcome)), retries)


def median_run(runs: list[Timed]) -> Timed:
    return sorted(runs, key=lambda r: r.wall)[len(runs) // 2]


def harness_cpu(data: Path, settings: EvalSettings, scratch: Path) -> tuple[float, int]:
    """CPU seconds and turns of a run with the oracle baseline: no server, no images."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    cpu = time.process_time()
    outcome = evaluate(data, load_model("baseline:oracle"), out, settings, concurrency=64)
    return time.process_time() - cpu, sum(turns_per_episode(outcome))


def image_cost(data: Path, views: Sequence[View]) -> float:
    """CPU seconds per view to make the data URL of each view once (cold cache)."""
    store = ImageStore(data)
    cpu = time.process_time()
    for view in views:
        store.data_url(view, "JPEG", 90)
    return (time.process_time() - cpu) / max(1, len(views))


CATEGORIES = (
    ("image read/decode/encode, base64", ("PIL", "Imaging", "data/images.py", "base64")),
    ("JSON", ("json",)),
    ("waiting for the server (epoll)", ("method 'poll'", "method 'select'", "control'")),
    (
        "HTTP (aiohttp, yarl, multidict, sockets)",
        ("aiohttp", "yarl", "multidict", "propcache", "ssl.py", "socket"),
    ),
    ("response cache (key, SQLite)", ("cache.py", "sqlite3", "hashlib", "openssl_sha")),
    ("event loop (asyncio)", ("asyncio", "selectors", "contextvars", "epoll")),
    ("openai backend (and the retry wrapper)", ("openai_compat", "models/http.py", "resilient.py")),
    ("results file (write, flush, fsync)", ("posix.fsync", "TextIOWrapper", "rundir.py:write")),
    (
        "image path checks (selection, store)",
        (
            "validate.py",
            "pathlib",
            "posixpath",
            "stat",
            "directory.py:resolve",
            "directory.py:_real",
        ),
    ),
    ("TLS context (client start-up)", ("_ssl._SSLContext",)),
    (
        "harness (evaluate, engine, episodes, prompts)",
        (
            "evaluate.py",
            "engine.py",
            "play_episode.py",
            "scenarios",
            "prompting",
            "records",
            "directory.py",
            "metrics",
            "protocol",
        ),
    ),
)


Func = tuple[str, int, str]


def categorize(func: Func, callers: dict[Func, Any] | None = None) -> str:
    """The kind of work a function does; a generic builtin (`isinstance`, `dict.get`) counts
    for the kind of its main caller, so that "other" holds only what fits no kind."""
    where = f"{func[0]}:{func[2]}"
    for label, needles in CATEGORIES:
        if any(n in where for n in needles):
            return label
    if func[0] == "~" and callers:
        main = max(callers, key=lambda c: callers[c][3])  # by cumulative time spent
        return categorize(main)
    return "other"


def profile_run(
    data: Path, settings: EvalSettings, url: str, scratch: Path, save: Path | None, cache: bool
) -> tuple[dict[str, float], float, list[tuple[float, str]]]:
    """Self time per category and the top functions of a concurrency-64 run under cProfile."""
    model = load_model(f"openai:{MODEL}@{url}", timeout=30)  # as a run has it: wrapped
    out = Path(tempfile.mkdtemp(dir=scratch))
    responses = ResponseCache(out / "cache.sqlite") if cache else None
    profiler = cProfile.Profile()
    profiler.enable()
    evaluate(data, model, out, settings, concurrency=64, cache=responses)
    profiler.disable()
    if save is not None:
        profiler.dump_stats(save)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    totals: dict[str, float] = defaultdict(float)
    top = []
    for func, (_cc, _nc, tottime, _ct, callers) in stats.items():
        totals[categorize(func, callers)] += tottime
        top.append((tottime, f"{Path(func[0]).name}:{func[1]}:{func[2]}"))
    top.sort(reverse=True)
    return dict(totals), sum(totals.values()), top[:15]


def server_cpu(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ----- the report ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", choices=("official", "synthetic"), default="official")
    parser.add_argument("--per-scenario", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-cache", action="store_true", help="runs without the response cache")
    parser.add_argument("--profile-out", type=Path, default=None)
    args = parser.parse_args()
    cache, high = not args.no_cache, args.concurrency
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        data, every = make_data(scratch, args.per_scenario, args.images)
        untransformed = replace(every, scenarios=("ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT"))
        cropped = replace(every, scenarios=("COCO",))
        key = AnswerKeyRecorder()
        lengths = turns_per_episode(evaluate(data, key, scratch / "key", every, concurrency=8))
        plain_views = [v for v in key.views if v.crop is None]
        crop_views = [v for v in key.views if v.crop is not None]
        plain_s, crop_s = image_cost(data, plain_views), image_cost(data, crop_views)
        answers = scratch / "answers.json"
        answers.write_text(json.dumps(key.answers))
        harness_s, harness_turns = harness_cpu(data, every, scratch)

        def runs(settings: EvalSettings, concurrency: int, repeats: int) -> list[Timed]:
            return [
                timed_run(data, settings, server.url, scratch, concurrency, cache)
                for _ in range(repeats)
            ]

        with ServerProcess(latency=args.latency, answers=answers) as server:
            assert server.process is not None
            runs(every, high, 1)  # warm-up: page cache, connections
            low_run = runs(every, 1, 1)[0]
            before = server_cpu(server.process.pid)
            high_runs = runs(every, high, args.repeats)
            after = server_cpu(server.process.pid)
            plain_run = median_run(runs(untransformed, high, args.repeats))
            crop_run = median_run(runs(cropped, high, args.repeats))
            totals, profiled, top = profile_run(
                data, every, server.url, scratch, args.profile_out, cache
            )
    high_run = median_run(high_runs)
    total = sum(lengths)
    assert low_run.turns == high_run.turns == total, "every run must play the same turns"
    bound = max(max(lengths), total / high) * args.latency
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    kind = "640x480 JPEG (official size)" if args.images == "official" else "synthetic PNG"
    print(f"machine: {os.cpu_count()} CPUs, load average at the end {load:.2f}")
    print(f"data: {args.per_scenario} per scenario, {len(lengths)} episodes, images {kind}")
    print(f"response cache                      : {'on' if cache else 'off'}")
    print(f"turns per run (requests)            : {total} (longest episode {max(lengths)})")
    print(f"server latency per request          : {args.latency * 1000:.0f} ms")
    print(f"wall, concurrency 1                 : {low_run.wall:8.2f} s")
    print(f"wall, concurrency {high} (median of {args.repeats}) : {high_run.wall:8.2f} s")
    walls = ", ".join(f"{r.wall:.2f}" for r in high_runs)
    print(f"  the runs at {high}                    : {walls} s")
    print(f"speed-up {high} vs 1                    : {low_run.wall / high_run.wall:8.1f}x")
    print(f"latency bound at {high}                 : {bound:8.2f} s")
    print(f"efficiency at {high} (bound / wall)     : {100 * bound / high_run.wall:8.0f} %")
    print(f"client CPU/turn, all seven, c{high}     : {high_run.cpu / total * 1000:8.2f} ms")
    plain_ms = plain_run.cpu / plain_run.turns * 1000
    print(f"client CPU/turn, untransformed, c{high} : {plain_ms:8.2f} ms ({plain_run.turns} turns)")
    crop_ms = crop_run.cpu / crop_run.turns * 1000
    print(f"client CPU/turn, COCO crops, c{high}    : {crop_ms:8.2f} ms ({crop_run.turns} turns)")
    print(f"client CPU/turn, concurrency 1      : {low_run.cpu / total * 1000:8.2f} ms")
    if before is not None and after is not None:
        server_ms = (after - before) / (args.repeats * total) * 1000
        print(f"server (fake) CPU/turn, c{high}         : {server_ms:8.2f} ms")
    print(f"harness CPU/turn, oracle, no server : {harness_s / harness_turns * 1000:8.3f} ms")
    print(f"data URL of an untransformed view   : {plain_s * 1000:8.2f} ms (cold, file bytes)")
    print(f"data URL of a crop (decode+encode)  : {crop_s * 1000:8.2f} ms (cold)")
    print(f"retries in the timed runs           : {sum(r.retries for r in high_runs)}")
    print(f"\ncProfile of the client, concurrency {high} (main thread self time):")
    for label, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {label:44s} {seconds:7.3f} s  {100 * seconds / profiled:5.1f} %")
    print(f"  {'total':44s} {profiled:7.3f} s")
    print("\ntop functions by self time:")
    for seconds, name in top:
        print(f"  {seconds:7.3f} s  {name}")


if __name__ == "__main__":
    main()
