"""The runs a report reads: each run directory's identity, its latest result lines, a label
for tables and plots, and the model's parameter count when known.

A report never mixes runs: every table row is one run directory, named by its model and the
settings that make it differ from a plain run (hint, history, ICL, reference...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.errors import ProactiveBenchError
from proactivebench.protocol import SCENARIOS
from proactivebench.results import (
    RESULTS,
    is_oeg_line,
    latest_results,
    read_results,
    read_run_config,
    result_order,
)


@dataclass
class Run:
    """One run directory, read once."""

    run_dir: Path
    config: dict[str, Any]
    #: The latest line of every episode, in the paper's scenario order then by sample id.
    lines: list[dict[str, Any]]
    label: str = ""
    #: Parameters of the model, in billions, when run.json, the model's name or the user
    #: (`--params`) says.
    params_b: float | None = None
    by_scenario: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return str(self.config.get("model", ""))

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.config.get("settings") or {})

    @property
    def oeg(self) -> bool:
        return self.settings.get("mode") == "oeg" or any(is_oeg_line(x) for x in self.lines[:1])

    @property
    def data_dir(self) -> Path | None:
        data = self.config.get("data_dir")
        return Path(data) if isinstance(data, str) else None

    @property
    def scenarios(self) -> list[str]:
        return list(self.by_scenario)


def load_run(run_dir: str | Path) -> Run:
    """Read a run directory (run.json and results.jsonl), or say clearly why it is not one."""
    path = Path(run_dir)
    config = read_run_config(path)
    if not (path / RESULTS).is_file():
        raise ProactiveBenchError(f"{path} has no {RESULTS} yet: nothing to report")
    lines = sorted(latest_results(read_results(path / RESULTS)), key=result_order)
    run = Run(run_dir=path, config=config, lines=lines)
    for line in lines:
        run.by_scenario.setdefault(line["scenario"], []).append(line)
    run.params_b = params_from_config(config)
    return run


def load_runs(
    run_dirs: Sequence[str | Path], params: Mapping[str, float] | None = None
) -> list[Run]:
    """Read every run, give each a unique label and apply `--params` by label, model or
    directory name."""
    runs = [load_run(d) for d in run_dirs]
    labels = [setting_label(r) for r in runs]
    for run, label in zip(runs, labels, strict=True):
        run.label = label if labels.count(label) == 1 else f"{label} ({run.run_dir.name})"
    for name, value in (params or {}).items():
        matched = [r for r in runs if name in (r.label, r.model, r.run_dir.name)]
        if not matched:
            known = ", ".join(sorted({r.model for r in runs} | {r.run_dir.name for r in runs}))
            raise ProactiveBenchError(f"--params {name}=...: no run of that name (runs: {known})")
        for run in matched:
            run.params_b = value
    return runs


#: Settings worth naming in a label when they differ from a plain run: (key, how to show it).
_LABELLED = (
    ("reference", lambda v: "reference" if v else None),
    ("hint", lambda v: "hint" if v else None),
    ("history", lambda v: "history" if v else None),
    ("icl", lambda v: f"ICL-{v}" if v else None),
    ("cot", lambda v: "CoT" if v else None),
    ("icl_reduced", lambda v: "reduced" if v else None),
    ("random_actions", lambda v: "random actions" if v else None),
    ("option_order", lambda v: f"{v} options" if v and v != "record" else None),
    ("answer_extraction", lambda v: f"{v} reading" if v and v != "strict" else None),
    ("resize_short_edge", lambda v: f"{v}px" if v else None),
    ("mode", lambda v: v.upper() if v and v != "mcqa" else None),
)


def setting_label(run: Run) -> str:
    """`model` plus what sets the run apart: "openai:qwen +hint +history"."""
    settings = run.settings
    marks = [show(settings.get(key)) for key, show in _LABELLED]
    extra = " ".join(f"+{m}" for m in marks if m)
    return f"{run.model} {extra}".strip() if extra else (run.model or run.run_dir.name)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kKmMbBtT]?)\s*$")
_SCALE = {"": 1e-9, "k": 1e-6, "m": 1e-3, "b": 1.0, "t": 1e3}
_NAME_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bBmM])(?![a-zA-Z])")


def parse_params(text: str) -> float:
    """ "7B", "1.5b", "500M", "7e9" -> billions of parameters."""
    match = _SIZE.match(text)
    if not match:
        raise ProactiveBenchError(f"cannot read a parameter count from {text!r} (e.g. 7B, 500M)")
    return float(match.group(1)) * _SCALE[match.group(2).lower()]


def params_from_config(config: Mapping[str, Any]) -> float | None:
    """A parameter count the run states (run.json's `params`) or its model's name shows
    ("Qwen2.5-VL-7B-Instruct" -> 7, "SmolVLM-500M" -> 0.5)."""
    stated = config.get("params")
    if isinstance(stated, (int, float)):
        return float(stated) / 1e9 if stated > 1e6 else float(stated)
    if isinstance(stated, str):
        try:
            return parse_params(stated)
        except ProactiveBenchError:
            return None
    name = str(config.get("model", "")).rsplit("/", 1)[-1]
    matches = _NAME_SIZE.findall(name)
    if not matches:
        return None
    number, unit = matches[-1]
    return float(number) * _SCALE[unit.lower()]


def scenario_order(names: Sequence[str]) -> list[str]:
    """Scenario names in the paper's order, unknown ones last."""
    return sorted(
        set(names), key=lambda s: (SCENARIOS.index(s) if s in SCENARIOS else len(SCENARIOS), s)
    )
