"""The `hf:` backend's own cost: the library's run against a plain AutoProcessor + generate loop.

On a tiny random LLaVA (testing/tiny_vlm.py) and a synthetic set of every scenario (7 × 30
samples: 210 first-turn requests, greedy, 50 new tokens, float32 on the CPU), three sides play
the same requests in the same batches:

- **raw**: a loop a user would write — open the batch's images with Pillow, the processor's chat
  template, the processor, `model.generate`, `batch_decode` — all in the main thread;
- **new**: this checkout's `hf:` backend through the library's `evaluate` (the path of
  `proactivebench eval --model hf:DIR`);
- **old**: the same through an earlier commit (`--baseline`), checked out into a temporary git
  worktree and put first on `PYTHONPATH`, as benchmarks/versions.py does.

The batches are those the backend forms (recorded once, by the new side, before timing); the
raw loop replays them, so both sides pad and generate the same batches. Each side runs in a
process of its own — for its peak resident memory (`ru_maxrss`) too — which loads the model,
plays everything once untimed (warm-up), then `--reps` timed passes. Rounds alternate the order
of the sides; medians over rounds are printed, per request, with the ratios to the raw loop, the
peak memory, the threads at the end, and the voluntary context switches per request (threads
that went to sleep waiting: what torch's OpenMP teams do when they stop spinning; unlike time,
this count does not depend on what else the machine runs).
Both library sides must give the same answers; how many answers the raw loop shares with them
is printed too (the raw loop resizes views with plain Pillow, so a view can differ by a pixel).

    python benchmarks/hf_backend.py [--baseline 66fa9fe] [--rounds 3] [--reps 2]
        [--per-scenario 30] [--batches 1 8] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from versions import baseline_tree

ROOT = Path(__file__).resolve().parents[1]
SIDES = ("raw", "new", "old")


# ----- inside a side's own process -------------------------------------------------------------


def rss_mb() -> float:
    """The process's resident memory now (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def record_batches(work: Path, batch: int) -> None:
    """Play the run once with the new backend and write the batches it generated: per request
    its key, its conversation in transformers' format, and its views (file, crop, short edge)."""
    from proactivebench.jobs.evaluate import evaluate
    from proactivebench.models import load_model
    from proactivebench.models.hf import HFModel, to_hf_conversation

    model = load_model(f"hf:{work / 'vlm'}", device="cpu", dtype="float32", max_batch=batch)
    inner = model.inner
    assert isinstance(inner, HFModel)
    batches: list[list[dict[str, Any]]] = []
    generate_batch = inner._generate_batch

    def recording(requests: Any) -> Any:
        batches.append(
            [
                dict(
                    zip(
                        ("conversation", "views"),
                        to_hf_conversation(
                            r.messages, lambda v: [v.image, v.crop, v.resize_short_edge]
                        ),
                        strict=True,
                    ),
                    key=f"{r.observation.scenario}/{r.observation.sample_id}",
                    max_tokens=r.decoding.max_tokens,
                )
                for r in requests
            ]
        )
        return generate_batch(requests)

    inner._generate_batch = recording  # type: ignore[method-assign]
    evaluate(work / "data", model, work / f"record-{batch}")
    (work / f"batches-{batch}.json").write_text(json.dumps(batches))


def raw_side(work: Path, batch: int, reps: int) -> tuple[list[float], dict[str, str], int]:
    """The plain loop over the recorded batches: per-pass seconds, answers, requests."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    batches = json.loads((work / f"batches-{batch}.json").read_text())
    processor = AutoProcessor.from_pretrained(work / "vlm")
    processor.tokenizer.padding_side = "left"
    model = AutoModelForImageTextToText.from_pretrained(work / "vlm", dtype=torch.float32).eval()

    def image(file: str, crop: list[int] | None, short_edge: int | None) -> Image.Image:
        with Image.open(work / "data" / file) as raw:
            picture = raw.convert("RGB")
        if crop:
            picture = picture.crop(tuple(crop))
        if short_edge:
            scale = short_edge / min(picture.size)
            picture = picture.resize([round(side * scale) for side in picture.size])
        return picture

    def one_pass() -> dict[str, str]:
        answers = {}
        for requests in batches:
            images = [[image(*view) for view in r["views"]] for r in requests]
            prompts = processor.apply_chat_template(
                [r["conversation"] for r in requests], add_generation_prompt=True, tokenize=False
            )
            inputs = processor(
                text=prompts, images=images if any(images) else None, padding=True,
                return_tensors="pt",
            )  # fmt: skip
            with torch.inference_mode():
                output = model.generate(
                    **inputs, max_new_tokens=requests[0]["max_tokens"], do_sample=False
                )
            texts = processor.tokenizer.batch_decode(
                output[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True
            )
            answers.update((r["key"], text) for r, text in zip(requests, texts, strict=True))
        return answers

    seconds, answers = timed(one_pass, reps)
    return seconds, answers, sum(len(b) for b in batches)


def library_side(work: Path, batch: int, reps: int) -> tuple[list[float], dict[str, str], int]:
    """The `hf:` backend through `evaluate`, a fresh run directory each pass."""
    from proactivebench.jobs.evaluate import evaluate
    from proactivebench.models import load_model

    model = load_model(f"hf:{work / 'vlm'}", device="cpu", dtype="float32", max_batch=batch)
    requests = 0

    def one_pass() -> dict[str, str]:
        nonlocal requests
        out = Path(tempfile.mkdtemp(dir=work, prefix="run-"))
        evaluate(work / "data", model, out)
        lines = [json.loads(x) for x in (out / "results.jsonl").read_text().split("\n") if x]
        requests = sum(len(line["trace"]) for line in lines)
        return {f"{x['scenario']}/{x['sample_id']}": x["trace"][0]["answer"] for x in lines}

    seconds, answers = timed(one_pass, reps)
    return seconds, answers, requests


#: Voluntary context switches of the whole process (every thread) during the timed passes: a
#: thread that waits for another goes to sleep, one that spins does not. Unlike time, this count
#: does not depend on what else the machine runs.
SWITCHES = [0]


def timed(one_pass: Any, reps: int) -> tuple[list[float], dict[str, str]]:
    """One untimed warm-up pass, then `reps` timed ones; the answers of the last."""
    answers = one_pass()
    seconds = []
    switches = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    for _ in range(reps):
        started = time.perf_counter()
        answers = one_pass()
        seconds.append(time.perf_counter() - started)
    SWITCHES[0] = (resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - switches) // reps
    return seconds, answers


def child(args: argparse.Namespace) -> None:
    work = Path(args.work)
    if args.side == "record":
        record_batches(work, args.batch)
        return
    import proactivebench

    before = rss_mb()
    play = raw_side if args.side == "raw" else library_side
    seconds, answers, requests = play(work, args.batch, args.reps)
    (work / f"answers-{args.side}-{args.batch}.json").write_text(json.dumps(answers))
    print(
        json.dumps(
            {
                "ms_per_request": 1000 * statistics.median(seconds) / requests,
                "requests": requests,
                "switches_per_request": SWITCHES[0] / requests,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "rss_at_start_mb": before,
                "threads": len(os.listdir("/proc/self/task")),
                "package": proactivebench.__file__,
            }
        )
    )


# ----- the parent: data, model, the earlier version, rounds ------------------------------------


def run_child(work: Path, side: str, batch: int, reps: int, src: Path, threads: int | None):
    env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    command = [sys.executable, __file__, "--child", side, "--work", str(work)]
    command += ["--batch", str(batch), "--reps", str(reps)]
    out = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1]) if out.strip() else None


def prepare(work: Path, per_scenario: int) -> None:
    """The tiny model and the data."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT / "src"))
    from proactivebench.data.synth import generate
    from proactivebench.testing.tiny_vlm import build_tiny_vlm

    build_tiny_vlm(work / "vlm")
    generate(work / "data", per_scenario=per_scenario, seed=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline", default="66fa9fe", help="the commit before (default: %(default)s)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of all sides (default: %(default)s)"
    )
    parser.add_argument(
        "--reps", type=int, default=2, help="timed passes per side and round (default: %(default)s)"
    )
    parser.add_argument(
        "--per-scenario",
        type=int,
        default=30,
        help="synthetic samples per scenario (default: %(default)s)",
    )
    parser.add_argument(
        "--batches", type=int, nargs="+", default=[1, 8], help="max_batch values (default: 1 8)"
    )
    parser.add_argument(
        "--threads", type=int, help="OMP_NUM_THREADS for every side (default: torch's own)"
    )
    parser.add_argument("--child", choices=(*SIDES, "record"), dest="side", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=8, help=argparse.SUPPRESS)
    args = parser.parse_args()  # fmt: skip
    if args.side:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="hf-backend-") as scratch:
        work = Path(scratch)
        prepare(work, args.per_scenario)
        with baseline_tree(args.baseline, work) as tree:
            compare(work, args, {"raw": ROOT / "src", "new": ROOT / "src", "old": tree / "src"})


def compare(work: Path, args: argparse.Namespace, srcs: dict[str, Path]) -> None:
    print(f"{args.per_scenario} per scenario, {args.rounds} rounds × {args.reps} passes, "
          f"before = {args.baseline}, OMP_NUM_THREADS={args.threads or 'unset'}")  # fmt: skip
    for batch in args.batches:
        run_child(work, "record", batch, 0, srcs["new"], args.threads)
        figures: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
        for round_ in range(args.rounds):
            order = SIDES[round_ % 3 :] + SIDES[: round_ % 3]
            for side in order:
                figures[side].append(
                    run_child(work, side, batch, args.reps, srcs[side], args.threads)
                )
        answers = {
            side: json.loads((work / f"answers-{side}-{batch}.json").read_text()) for side in SIDES
        }
        report(batch, figures, answers)


def report(batch: int, figures: dict[str, list[dict[str, Any]]], answers: dict[str, Any]) -> None:
    def median(side: str, key: str) -> float:
        return statistics.median(f[key] for f in figures[side])

    raw = median("raw", "ms_per_request")
    print(f"\nbatch {batch}: {figures['raw'][0]['requests']} requests")
    header = f"{'side':<6}{'ms/request':>12}{'- raw':>8}{'/ raw':>8}{'peak MB':>9}{'threads':>9}"
    print(f"{header}{'switches':>10}  rounds (ms)")
    for side in SIDES:
        ms = median(side, "ms_per_request")
        rounds = " ".join(f"{f['ms_per_request']:.1f}" for f in figures[side])
        print(
            f"{side:<6}{ms:>12.1f}{ms - raw:>+8.1f}{ms / raw:>7.2f}×"
            f"{median(side, 'peak_rss_mb'):>9.0f}{figures[side][-1]['threads']:>9}"
            f"{median(side, 'switches_per_request'):>10.0f}  {rounds}"
        )  # fmt: skip
    assert answers["new"] == answers["old"], "the new backend answers otherwise than the old one"
    same = sum(answers["raw"].get(key) == text for key, text in answers["new"].items())
    print(f"answers: new = old for all {len(answers['new'])}; raw = new for {same}")


if __name__ == "__main__":
    main()
