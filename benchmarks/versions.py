"""This version against an earlier one, side by side in one run: same results, speed, start-up.

For a change meant to keep behaviour (a refactoring), three questions, asked of both versions
in turn on this machine:

1. **Same results**: `proactivebench eval` of several baselines and settings on one synthetic
   data set, and two open-ended runs whose model and judge are `python:` functions (one of
   them judged again by `judge RUN` with another); every `results.jsonl` line must be equal
   (latency left out), and so must `summary.json`, by one rule for both: the newer version
   may add fields (at any depth: a key of each turn of the trace too), which are named, but
   not change or drop one. A difference is shown where it is (file, episode, field, both
   values). Each version runs with a response cache of its own, made for the comparison, so
   that neither is answered from the other's cache (or the user's).
2. **Start-up**: each version's own `benchmarks/startup.py` (spawn to first request).
3. **Throughput**: each version's own `benchmarks/throughput.py` against the 50 ms fake server
   on 640×480 JPEGs (wall time at concurrency 64, speed-up, efficiency, client CPU per turn).

The earlier version is checked out from git into a temporary worktree (removed at the end) and
run by the same interpreter with its `src/` first on the path. Rounds alternate the order of
the two versions; medians are printed with the ratio new / old.

    python benchmarks/versions.py --baseline 79f5208 [--rounds 3] [--per-scenario 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The runs compared line by line: (label, eval arguments).
RUNS = [
    ("oracle", ["--model", "baseline:oracle"]),
    (
        "random, seed 3, shuffled options",
        ["--model", "baseline:random", "--seed", "3", "--option-order", "shuffled"],
    ),
    ("proactive, hint, history", ["--model", "baseline:proactive", "--hint", "--history"]),
    ("reactive, random actions", ["--model", "baseline:reactive", "--random-actions"]),
    ("oracle, reference", ["--model", "baseline:oracle", "--reference"]),
    ("proactive, ICL 2 with CoT", ["--model", "baseline:proactive", "--icl", "2", "--cot"]),
]
#: Open-ended runs, judged by a `python:` function (AGENTS below) and judged again by another
#: (`judge RUN`): (label, eval arguments, the second judge's function or None).
OEG_RUNS = [
    ("open-ended, 2 votes", ["--mode", "oeg", "--judge-votes", "2"], "second_judge"),
    ("open-ended, hint", ["--mode", "oeg", "--hint"], None),
]
#: The model and judges of the open-ended runs: answers that depend only on what they are
#: shown, so that both versions are asked the same and must record the same.
AGENTS = """
import hashlib


def _bit(text, salt):
    return hashlib.sha256((salt + text).encode()).digest()[0] % 2


def answer(messages, observation):
    text = messages[-1]["content"][-1]["text"]
    if _bit(text + str(observation.sample_id), "model"):
        return "I cannot tell: please move the blocks, rotate it or zoom out."
    return f"It is object number {observation.sample_id % 5}."  # no options in open-ended modes


def _verdict(messages, salt):
    text = messages[-1]["content"]
    entries = text.count(",") + 1
    bits = ", ".join(str(_bit(text + str(i), salt)) for i in range(min(entries, 4)))
    return f"<think>{salt}</think> {bits}"


def judge(messages, observation):
    return _verdict(messages, "first")


def second_judge(messages, observation):
    return _verdict(messages, "second")
"""
#: Per-turn and per-line fields that measure time, not behaviour.
TIMING = ("latency_s",)


def environment(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src)}


@contextmanager
def baseline_tree(ref: str, scratch: Path) -> Iterator[Path]:
    """A worktree of `ref` under `scratch`, removed from git's list again on leaving. Versions
    before the package had an `__init__.py` were a namespace package, which a regular package
    later on the path (an editable install of this checkout) would take over: such a tree gets
    an empty one, which changes nothing else."""
    tree = scratch / "baseline"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref],
        check=True,
        capture_output=True,
    )
    init = tree / "src" / "proactivebench" / "__init__.py"
    if not init.exists():
        init.write_text("")
    try:
        yield tree
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
            check=False,
            capture_output=True,
        )


def console_script() -> str:
    return os.path.join(os.path.dirname(sys.executable), "proactivebench")


def lines_of(run: Path) -> list[dict]:
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines() if x]
    for line in lines:
        for turn in line.get("trace", []):
            for key in TIMING:
                turn.pop(key, None)
        for key in TIMING:
            line.pop(key, None)
    return sorted(lines, key=lambda x: (x["scenario"], x["sample_id"]))


def compare(
    trees: dict[str, Path], scratch: Path, label: str, steps: Callable[[Path], list[list[str]]]
) -> bool:
    """Run the commands `steps(out)` with each version into its own `out` (and its own
    response cache); say whether the lines and summaries are equal (`compared`)."""
    outputs = {}
    for name, tree in trees.items():
        out = scratch / name / label.replace(" ", "_").replace(",", "")
        cache = scratch / name / "responses.sqlite"
        for step in steps(out):
            own_cache = [] if "--no-cache" in step else ["--cache", str(cache)]
            done = subprocess.run(
                [console_script(), *step, *own_cache],
                capture_output=True,
                text=True,
                env=environment(tree / "src"),
            )
            if done.returncode != 0:
                raise SystemExit(f"{name} ({label}): {' '.join(step)} failed:\n{done.stderr}")
        summary = json.loads((out / "summary.json").read_text())
        outputs[name] = (lines_of(out), summary)
    (old_lines, old_summary), (new_lines, new_summary) = outputs["old"], outputs["new"]
    equal, verdict = compared(old_lines, new_lines, old_summary, new_summary)
    print(f"  {label:36s} {len(new_lines):5d} episodes: {verdict}")
    return equal


def compared(
    old_lines: list[dict], new_lines: list[dict], old_summary: dict, new_summary: dict
) -> tuple[bool, str]:
    """Whether the newer version's lines and summary hold the older one's, and the verdict:
    "identical", with the fields the newer one adds named, or "DIFFERENT" with the first
    difference (file, episode, field, old and new value). Lines are paired by (scenario,
    sample id), as `lines_of` sorts them; a line one version lacks is a difference."""
    added: set[str] = set()
    difference = None
    if len(old_lines) != len(new_lines):
        difference = f"results.jsonl: {len(old_lines)} lines before, {len(new_lines)} now"
    for old, new in zip(old_lines, new_lines, strict=False):
        if difference is not None:
            break
        where = f"results.jsonl, {old.get('scenario')} sample {old.get('sample_id')}"
        found = first_difference(old, new, "", added)
        if found is not None:
            difference = f"{where}: {found}"
    summary_added: set[str] = set()
    if difference is None:
        found = first_difference(old_summary, new_summary, "", summary_added)
        if found is not None:
            difference = f"summary.json: {found}"
    if difference is not None:
        return False, f"DIFFERENT ({difference})"
    # A rate the summary adds is added for every scenario and the average: named once.
    named = [
        *(f"results.jsonl {', '.join(sorted(added))}" for _ in [0] if added),
        *(
            f"summary.json {', '.join(sorted({p.rsplit('.', 1)[-1] for p in summary_added}))}"
            for _ in [0]
            if summary_added
        ),
    ]
    return True, "identical" + (f" (the new version adds: {'; '.join(named)})" if named else "")


def first_difference(old: object, new: object, path: str, added: set[str]) -> str | None:
    """Where `new` changes or drops a value of `old` (its path and both values), or None; the
    keys `new` adds, at any depth, go to `added` (by path, list positions as `[]`): a later
    version may add fields, never change or drop one."""
    if isinstance(old, dict) and isinstance(new, dict):
        general = re.sub(r"\[\d+\]", "[]", path)
        added.update(f"{general}.{k}".lstrip(".") for k in new if k not in old)
        for key in old:
            if key not in new:
                return f"{path}.{key} dropped".lstrip(".")
            found = first_difference(old[key], new[key], f"{path}.{key}", added)
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for position, (a, b) in enumerate(zip(old, new, strict=True)):
            found = first_difference(a, b, f"{path}[{position}]", added)
            if found is not None:
                return found
        return None
    if old == new and type(old) is type(new):
        return None
    return f"{path.lstrip('.') or 'the value'}: {_shown(old)} before, {_shown(new)} now"


def _shown(value: object, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def same_results(trees: dict[str, Path], scratch: Path, per_scenario: int) -> bool:
    """Play every run of RUNS and OEG_RUNS with both versions; say where lines differ."""
    data = scratch / "data"
    subprocess.run(
        [
            console_script(),
            "data",
            "synth",
            "--out",
            str(data),
            "--per-scenario",
            str(per_scenario),
        ],
        check=True,
        capture_output=True,
        env=environment(trees["new"] / "src"),
    )

    def eval_(out: Path) -> list[str]:
        return ["eval", "--data", str(data), "--out", str(out), "--no-report"]

    agents = scratch / "agents.py"
    agents.write_text(AGENTS)
    identical = True
    for label, arguments in RUNS:
        identical &= compare(trees, scratch, label, lambda out, a=arguments: [[*eval_(out), *a]])
    for label, arguments, rejudge in OEG_RUNS:
        judged = ["--judge", f"python:{agents}:judge", "--no-cache", *arguments]

        def steps(out: Path, judged=judged, rejudge=rejudge) -> list[list[str]]:
            model = ["--model", f"python:{agents}:answer"]
            again = ["judge", str(out), "--judge", f"python:{agents}:{rejudge}", "--no-cache"]
            return [[*eval_(out), *model, *judged], *([again] if rejudge else [])]

        shown = label + (", judged again" if rejudge else "")
        identical &= compare(trees, scratch, shown, steps)
    return identical


def measure(tree: Path, script: str, arguments: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / script), *arguments],
        check=True,
        capture_output=True,
        text=True,
        env=environment(tree / "src"),
    )
    return result.stdout


def number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    if match is None:
        raise SystemExit(f"cannot find {pattern!r} in:\n{text}")
    return float(match.group(1))


THROUGHPUT = {
    "wall at 64 (s)": r"wall, concurrency 64 \(median of \d+\)\s*:\s*([\d.]+)",
    "speed-up 64 vs 1": r"speed-up 64 vs 1\s*:\s*([\d.]+)x",
    "efficiency (%)": r"efficiency at 64 \(bound / wall\)\s*:\s*([\d.]+)",
    "client CPU/turn, untransformed (ms)": r"client CPU/turn, untransformed, c64\s*:\s*([\d.]+)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git ref of the earlier version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-scenario", type=int, default=30)
    args = parser.parse_args()
    figures: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        with baseline_tree(args.baseline, scratch) as old:
            trees = {"old": old, "new": ROOT}
            print(f"same results ({args.per_scenario} per scenario, old = {args.baseline}):")
            identical = same_results(trees, scratch, args.per_scenario)
            for round_ in range(args.rounds):
                order = ["old", "new"] if round_ % 2 == 0 else ["new", "old"]
                for name in order:
                    text = measure(trees[name], "startup.py", ["--repeats", "5"])
                    start = number(r"median of \d+: ([\d.]+) s", text)
                    figures[name].setdefault("start-up, median of 5 (s)", []).append(start)
                    text = measure(
                        trees[name],
                        "throughput.py",
                        ["--per-scenario", str(args.per_scenario), "--repeats", "3"],
                    )
                    for label, pattern in THROUGHPUT.items():
                        figures[name].setdefault(label, []).append(number(pattern, text))
                print(f"round {round_ + 1} of {args.rounds} done", flush=True)
    print(f"\nmedians over {args.rounds} rounds (each round: both versions, alternating order)")
    print(f"{'measure':40s} {'old':>9s} {'new':>9s} {'new/old':>8s}")
    for label in figures["new"]:
        old = statistics.median(figures["old"][label])
        new = statistics.median(figures["new"][label])
        print(f"{label:40s} {old:9.3f} {new:9.3f} {new / old:8.2f}")
        every = lambda v: ", ".join(f"{x:.3f}" for x in v)  # noqa: E731
        print(
            f"  {'runs':38s} old {every(figures['old'][label])}; new {every(figures['new'][label])}"
        )
    if not identical:
        raise SystemExit("the two versions' results differ")


if __name__ == "__main__":
    main()
