"""Throughput of the OpenAI-compatible backend against a server that takes 50 ms per request.

A real server spends most of a turn generating; what the harness must do is keep enough
requests in flight that this latency overlaps. This script measures that:

1. wall time of the same run at concurrency 64 and at concurrency 1, against the fake server
   of `tests/openai_server.py` in *another process* (so that client and server share the two
   cores as they would on one machine), in its oracle mode (it answers the best move, so every
   episode takes the fewest turns and both runs do exactly the same requests);
2. the harness's own CPU time per turn with the oracle baseline and no server at all;
3. a cProfile breakdown of the client's CPU time for the openai backend, by kind of work
   (image decode/encode, JSON, HTTP, event loop, harness, waiting).

    python benchmarks/throughput.py [--per-scenario 60] [--latency 0.05] [--profile-out FILE]

Uses the synthetic data set (`proactivebench.data.synth.generate`) when it is installed,
otherwise copies of the hand-made records of the tests.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from openai_server import ServerProcess, fingerprint  # noqa: E402
from proactivebench.data.images import ImageStore  # noqa: E402
from proactivebench.models import load_model  # noqa: E402
from proactivebench.models.base import ChatRequest, Completion, Model  # noqa: E402
from proactivebench.models.baselines import Oracle  # noqa: E402
from proactivebench.models.openai_compat import OpenAICompatible, openai_messages  # noqa: E402
from proactivebench.runner import EvalSettings, RunOutcome, evaluate  # noqa: E402
from proactivebench.scenarios import View  # noqa: E402

MODEL = "bench-vlm"


# ----- data and the server's answer key -------------------------------------------------------


def make_data(root: Path, per_scenario: int) -> tuple[Path, EvalSettings]:
    """The synthetic data set, or the hand-made records repeated under new ids."""
    try:
        from proactivebench.data.synth import generate
    except ImportError:
        generate = None
    if generate is not None:
        generate(root, per_scenario=per_scenario, seed=0)
        return root, EvalSettings()
    import handmade

    records = {
        short: [build(id=1000 + i) for i in range(per_scenario)]
        for short, build in handmade.BUILDERS.items()
    }
    handmade.write_dataset(root, records)
    return root, EvalSettings(all_samples=True)


class AnswerKeyRecorder(Model):
    """Plays the oracle in-process and records, for each request the openai backend will
    send, the fingerprint the server sees and the oracle's answer."""

    name = "answer-key"
    needs_images = True
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


def episodes_of(outcome: RunOutcome) -> int:
    return sum(s.n + s.errors for s in outcome.summary.scenarios.values())


def turns(outcome: RunOutcome) -> int:
    lines = (outcome.out_dir / "results.jsonl").read_text().splitlines()
    return sum(json.loads(line)["num_turns"] for line in lines)


def check_perfect(outcome: RunOutcome, label: str) -> None:
    """The oracle server must score 100 % with no errors, or the comparison is meaningless."""
    for short, score in outcome.summary.scenarios.items():
        if score.errors or score.accuracy != 100.0:
            raise SystemExit(f"{label}: {short} scored {score} (answer key mismatch?)")


def timed_run(
    data: Path, settings: EvalSettings, url: str, scratch: Path, concurrency: int
) -> tuple[float, float, int, OpenAICompatible]:
    """(wall s, client CPU s, turns, model) of one openai-backend run in a fresh directory."""
    model = OpenAICompatible(MODEL, url, timeout=30)
    out = Path(tempfile.mkdtemp(dir=scratch))
    cpu, start = time.process_time(), time.perf_counter()
    outcome = evaluate(data, model, out, settings, concurrency=concurrency)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    check_perfect(outcome, f"concurrency {concurrency}")
    return wall, cpu, turns(outcome), model


def harness_cpu(data: Path, settings: EvalSettings, scratch: Path) -> tuple[float, int]:
    """CPU seconds and turns of a run with the oracle baseline: no server, no images."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    cpu = time.process_time()
    outcome = evaluate(data, load_model("baseline:oracle"), out, settings, concurrency=64)
    return time.process_time() - cpu, turns(outcome)


def image_cost(data: Path, views: Sequence[View]) -> float:
    """CPU seconds to decode, transform, JPEG-encode and base64 every view once (cold cache).

    Measured apart because the backend may do this work in worker threads (large images),
    which cProfile (main thread only) does not see.
    """
    store = ImageStore(data)
    cpu = time.process_time()
    for view in views:
        store.data_url(view, "JPEG", 90)
    return time.process_time() - cpu


CATEGORIES = (
    ("image decode/encode", ("PIL", "Imaging", "data/images.py", "base64")),
    ("JSON", ("json",)),
    ("waiting for the server (epoll)", ("method 'poll'", "method 'select'", "control'")),
    (
        "HTTP (httpx, httpcore, h11, anyio, sockets)",
        ("httpx", "httpcore", "h11", "anyio", "sniffio", "ssl.py", "socket"),
    ),
    ("event loop (asyncio)", ("asyncio", "selectors", "contextvars", "epoll")),
    ("openai backend", ("openai_compat",)),
    ("results file (write, flush, fsync)", ("posix.fsync", "TextIOWrapper", "runner.py:append")),
    ("image path checks (runner, store)", ("validate.py", "pathlib", "posixpath", "stat")),
    ("TLS context (client start-up)", ("_ssl._SSLContext",)),
    (
        "harness (runner, episodes, prompts)",
        ("runner.py", "scenarios", "prompting", "records", "layout", "metrics", "protocol"),
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
    data: Path, settings: EvalSettings, url: str, scratch: Path, save: Path | None
) -> tuple[dict[str, float], float, list[tuple[float, str]]]:
    """Self time per category and the top functions of a concurrency-64 run under cProfile."""
    model = OpenAICompatible(MODEL, url, timeout=30)
    out = Path(tempfile.mkdtemp(dir=scratch))
    profiler = cProfile.Profile()
    profiler.enable()
    evaluate(data, model, out, settings, concurrency=64)
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
    parser.add_argument("--per-scenario", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--profile-out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        data, settings = make_data(scratch / "data", args.per_scenario)
        key = AnswerKeyRecorder()
        episodes = episodes_of(evaluate(data, key, scratch / "key", settings, concurrency=8))
        views = len(key.views)
        image_s = image_cost(data, list(key.views))
        answers = scratch / "answers.json"
        answers.write_text(json.dumps(key.answers))
        harness_s, harness_turns = harness_cpu(data, settings, scratch)
        with ServerProcess(latency=args.latency, answers=answers) as server:
            assert server.process is not None
            timed_run(data, settings, server.url, scratch, 64)  # warm-up: page cache, pool
            wall_1, cpu_1, turns_1, _ = timed_run(data, settings, server.url, scratch, 1)
            before = server_cpu(server.process.pid)
            runs = [timed_run(data, settings, server.url, scratch, 64) for _ in range(3)]
            after = server_cpu(server.process.pid)
            wall_64, cpu_64, turns_64, model = sorted(runs, key=lambda r: r[0])[1]  # median
            totals, profiled, top = profile_run(
                data, settings, server.url, scratch, args.profile_out
            )
    assert turns_1 == turns_64, "both runs must play the same turns"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average at the end {load:.2f}")
    kind = "hand-made" if settings.all_samples else "synthetic"
    print(f"data: {kind}, {args.per_scenario} per scenario, {episodes} episodes")
    print(f"turns per run (requests)            : {turns_64}")
    print(f"server latency per request          : {args.latency * 1000:.0f} ms")
    print(f"wall, concurrency 1                 : {wall_1:8.2f} s  ({turns_1 / wall_1:7.1f} req/s)")
    print(
        f"wall, concurrency 64 (median of 3)  : {wall_64:8.2f} s  ({turns_64 / wall_64:7.1f} req/s)"
    )
    print(f"  the three runs at 64                : {', '.join(f'{r[0]:.2f}' for r in runs)} s")
    print(f"speed-up 64 vs 1                    : {wall_1 / wall_64:8.1f}x")
    print(f"ideal at 64 (latency only)          : {turns_64 * args.latency / 64:8.2f} s")
    print(f"client CPU per turn, concurrency 64 : {cpu_64 / turns_64 * 1000:8.2f} ms")
    print(f"client CPU per turn, concurrency 1  : {cpu_1 / turns_1 * 1000:8.2f} ms")
    if before is not None and after is not None:
        server_ms = (after - before) / (3 * turns_64) * 1000
        print(f"server CPU per turn, concurrency 64 : {server_ms:8.2f} ms")
    print(f"harness CPU/turn, oracle, no server : {harness_s / harness_turns * 1000:8.3f} ms")
    print(f"image decode+crop+JPEG+base64 / view: {image_s / views * 1000:8.2f} ms ({views} views)")
    print(f"retries in the timed run            : {model.stats['retries']}")
    print("\ncProfile of the client, concurrency 64 (main thread self time):")
    for label, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {label:44s} {seconds:7.3f} s  {100 * seconds / profiled:5.1f} %")
    print(f"  {'total':44s} {profiled:7.3f} s")
    print("\ntop functions by self time:")
    for seconds, name in top:
        print(f"  {seconds:7.3f} s  {name}")


if __name__ == "__main__":
    main()
