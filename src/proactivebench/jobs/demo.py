"""The offline main job: the built-in baselines on a synthetic ProactiveBench.

On first use the synthetic test set is generated into the user cache directory (keyed by
generator version, seed and size, written to a temporary folder and renamed into place, so an
interrupted generation is never mistaken for a finished one); later runs reuse it, and the
baseline runs resume, so a second `proactivebench demo` is instant. The baselines end side by
side in one report (tables, plots, the episode viewer), so a first look includes what a
researcher reads of a real run.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from proactivebench.benchmark.results import EpisodeResult
from proactivebench.core.paths import cache_root, write_whole
from proactivebench.core.texts import dumps
from proactivebench.data.directory import MANIFEST
from proactivebench.jobs.evaluate import RunOutcome, evaluate
from proactivebench.models import load_model
from proactivebench.report import ReportOutcome, write_report

DEMO_BASELINES = ("oracle", "proactive", "reactive", "random", "abstain")


def ensure_synthetic(
    per_scenario: int,
    seed: int = 0,
    root: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> Path:
    """The synthetic test set of that size and seed, generated once."""
    from proactivebench.data.synth import GENERATOR_VERSION, generate

    root = root or cache_root()
    target = root / f"synth-test-v{GENERATOR_VERSION}-seed{seed}-n{per_scenario}"
    if (target / MANIFEST).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=root))
    try:
        generate(staging, per_scenario=per_scenario, seed=seed, split="test", progress=progress)
        if target.exists():  # a half-made folder from an older layout: replace it
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def run_demo(
    data_dir: Path,
    runs_dir: Path,
    baselines: Sequence[str] = DEMO_BASELINES,
    seed: int = 0,
    on_start: Callable[[str, int, int], None] | None = None,
    on_result: Callable[[str, EpisodeResult], None] | None = None,
) -> dict[str, RunOutcome]:
    """Evaluate each baseline on the data; run directories under `runs_dir/<baseline>`."""
    outcomes = {}
    for name in baselines:
        model = load_model(f"baseline:{name}", seed=seed)
        outcomes[name] = evaluate(
            data_dir,
            model,
            runs_dir / name,
            on_start=(lambda total, done, n=name: on_start(n, total, done)) if on_start else None,
            on_result=(lambda r, n=name: on_result(n, r)) if on_result else None,
        )
    write_whole(
        runs_dir / "demo.json",
        dumps({n: o.summary.as_dict() for n, o in outcomes.items()}, indent=2) + "\n",
    )
    return outcomes


def write_demo_report(runs_dir: Path, baselines: Sequence[str] = DEMO_BASELINES) -> ReportOutcome:
    """The baselines of `run_demo` side by side in one report, in `runs_dir/report`."""
    return write_report(
        [runs_dir / name for name in baselines],
        runs_dir / "report",
        title="Built-in baselines on the synthetic ProactiveBench",
    )
