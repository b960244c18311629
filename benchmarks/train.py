"""GRPO training speed on CPU: optimizer steps per second of the tiny LLaVA-style model.

    python benchmarks/train.py [--steps 6] [--repeats 3] [--per-scenario 2]

Builds the tests' tiny random model (about 75 k parameters, `testing/tiny_vlm.py`) and our
generator's train split in a temporary directory, then trains `--steps` GRPO steps with our
rewards, full fine-tuning and LoRA, interleaved `--repeats` times, and prints steps/s of each
run, their medians and the ratio. Each step generates 4 completions for each of 2 prompts
(8 sequences of up to 8 tokens) and optimizes on them. What it measures is the overhead of the
stack (generation loop, image processing, reward reading, optimizer) on a model too small to
cost anything itself: a floor for real runs, not their speed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def run(model: Path, data: Path, out: Path, steps: int, lora: bool) -> float:
    """Train `steps` steps; return steps per second of the training loop alone."""
    from proactivebench.train.grpo import TrainSettings, train_grpo

    settings = TrainSettings.build(
        str(model),
        str(data),
        out,
        overrides={
            "max_steps": steps,
            "per_device_train_batch_size": 8,
            "num_generations": 4,
            "max_completion_length": 8,
            "activation_checkpointing": False,
            "disable_tqdm": True,
        },
        lora=lora,
    )
    outcome = train_grpo(settings)
    runtime = next(e["train_runtime"] for e in outcome.log_history if "train_runtime" in e)
    return outcome.steps / runtime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-scenario", type=int, default=2)
    args = parser.parse_args()
    from proactivebench.data.synth import generate
    from proactivebench.testing.tiny_vlm import build_tiny_vlm

    rates: dict[str, list[float]] = {"full": [], "lora": []}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        model = build_tiny_vlm(root / "model")
        generate(root / "data", per_scenario=args.per_scenario, split="train")
        for repeat in range(args.repeats):
            for kind in rates:
                start = time.perf_counter()
                out = root / f"{kind}{repeat}"
                rate = run(model, root / "data", out, args.steps, kind == "lora")
                rates[kind].append(rate)
                wall = time.perf_counter() - start
                print(f"{kind:<5} run {repeat + 1}: {rate:.2f} steps/s ({wall:.1f} s with loading)")
    full, lora = (statistics.median(rates[k]) for k in ("full", "lora"))
    print(f"median steps/s: full {full:.2f}, LoRA {lora:.2f}; LoRA / full = {lora / full:.2f}x")


if __name__ == "__main__":
    main()
