"""`train compare`: what training changed, on the scenarios it saw and on those it did not.

The paper's claim is that proactiveness learned on some scenarios carries over to unseen ones,
so the comparison splits the per-scenario gains of two eval runs (base model, tuned model)
into seen and held-out scenarios. Which scenarios were seen comes from the tuned model's
`train_run.json` (written by `train grpo` beside the weights) when the tuned run evaluated a
`hf:DIR` model, or from an explicit held-out list. Scores are `metrics.summarize` of each run's
latest results, so they are the numbers `eval` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proactivebench.errors import ProactiveBenchError
from proactivebench.metrics import ScenarioScore, summarize
from proactivebench.results import latest_results, read_results, read_run_config
from proactivebench.train.examples import parse_holdout
from proactivebench.train.grpo import read_run_file


@dataclass(frozen=True)
class ScenarioGain:
    scenario: str
    #: Trained on (True) or held out (False).
    seen: bool
    base: ScenarioScore
    tuned: ScenarioScore

    @property
    def accuracy_gain(self) -> float:
        return (self.tuned.accuracy or 0.0) - (self.base.accuracy or 0.0)

    @property
    def ps_gain(self) -> float:
        return (self.tuned.ps_rate or 0.0) - (self.base.ps_rate or 0.0)


@dataclass(frozen=True)
class Comparison:
    base_model: str
    tuned_model: str
    rows: list[ScenarioGain]
    #: Where the split into seen and held-out scenarios came from.
    split_source: str

    def mean_gain(self, seen: bool) -> tuple[float, float] | None:
        """Unweighted mean accuracy and ps-rate gains over the seen (or held-out) scenarios."""
        rows = [r for r in self.rows if r.seen == seen]
        if not rows:
            return None
        return (
            sum(r.accuracy_gain for r in rows) / len(rows),
            sum(r.ps_gain for r in rows) / len(rows),
        )

    def as_dict(self) -> dict[str, Any]:
        def gains(seen: bool) -> dict[str, float] | None:
            mean = self.mean_gain(seen)
            return None if mean is None else {"accuracy": mean[0], "ps_rate": mean[1]}

        return {
            "base_model": self.base_model,
            "tuned_model": self.tuned_model,
            "split_source": self.split_source,
            "scenarios": {
                r.scenario: {
                    "seen": r.seen,
                    "base": r.base.as_dict(),
                    "tuned": r.tuned.as_dict(),
                    "accuracy_gain": r.accuracy_gain,
                    "ps_gain": r.ps_gain,
                }
                for r in self.rows
            },
            "seen_gain": gains(True),
            "held_out_gain": gains(False),
        }


def _run_summary(run_dir: Path) -> tuple[str, dict[str, ScenarioScore]]:
    config = read_run_config(run_dir)
    lines = latest_results(read_results(run_dir / "results.jsonl"))
    if not lines:
        raise ProactiveBenchError(f"{run_dir}: no results to compare")
    if any("aggregate" in line for line in lines):
        raise ProactiveBenchError(f"{run_dir}: an open-ended run; compare needs MCQA runs")
    model = str(config.get("model", ""))
    return model, summarize(lines, model=model).scenarios


def trained_scenarios(model_spec: str) -> tuple[list[str], list[str]] | None:
    """(trained on, held out) from `train_run.json` of a `hf:DIR` model, if it has one."""
    if not model_spec.startswith("hf:"):
        return None
    run = read_run_file(model_spec[3:])
    if run is None:
        return None
    return list(run.get("trained_on") or []), list(run.get("held_out") or [])


def compare_runs(base_dir: Path, tuned_dir: Path, holdout: str | None = None) -> Comparison:
    """Per-scenario gains from `base_dir` to `tuned_dir`, split into seen and held-out."""
    base_model, base = _run_summary(Path(base_dir))
    tuned_model, tuned = _run_summary(Path(tuned_dir))
    if holdout is not None:
        held = set(parse_holdout(holdout))
        source = "--holdout"
    else:
        split = trained_scenarios(tuned_model)
        if split is None:
            raise ProactiveBenchError(
                f"{tuned_dir}: its model ({tuned_model}) has no train_run.json saying what was "
                "held out; name the held-out scenarios with --holdout"
            )
        trained_on, _ = split
        held = {s for s in tuned if s not in trained_on}
        source = f"{tuned_model[3:]}/train_run.json"
    common = [s for s in tuned if s in base]
    if not common:
        raise ProactiveBenchError("the two runs share no scenario")
    rows = [ScenarioGain(s, s not in held, base[s], tuned[s]) for s in common]
    return Comparison(base_model, tuned_model, rows, source)
