"""The runs a report reads: each run directory's identity, its latest result lines, a label
for tables and plots, and the model's parameter count when known.

A report never mixes runs: every table row is one run directory, named by its model and the
settings that make it differ from a plain run (hint, history, ICL, reference...).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.benchmark.metrics import unrecorded_votes
from proactivebench.benchmark.results import is_oeg_line, result_order
from proactivebench.core.errors import (
    DamagedRunError,
    NotARunDirError,
    NothingToDoError,
    ProactiveBenchError,
)
from proactivebench.core.texts import shown_json
from proactivebench.report.inert import visible
from proactivebench.run.rundir import (
    RESULTS,
    RunLines,
    has_results,
    read_run_config,
    run_lines,
)
from proactivebench.run.selection_record import Selection, selection_of
from proactivebench.run.settings import EvalSettings, declared, label_marks


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
    #: Lines of results.jsonl left out of every count, each `file:line: why` (`run_lines`).
    rejected: list[str] = field(default_factory=list)
    #: How many lines `rejected` names (`rundir.RunLines.left_out`).
    left_out_lines: int = 0
    #: The paper's table or figure (its key in paper_results.json) the run stands beside, when
    #: the caller knows (a suite's experiment says); None: read from its settings
    #: (`report.published.counterpart`).
    counterpart: str | None = None
    #: The `--limit` (episodes per scenario) the caller says the run was played with (a
    #: suite's experiment: suite.json), for a run.json that records no selection; None: not
    #: said (`report.comparable.partial`).
    limit: int | None = None

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
    def multiturn(self) -> bool:
        """A multi-turn open-ended run (`--mode oeg-multiturn`): MCQA's lines and rates, with
        judged turns."""
        return self.settings.get("mode") == "oeg-multiturn"

    @property
    def data_dir(self) -> Path | None:
        data = self.config.get("data_dir")
        return Path(data) if isinstance(data, str) else None

    @property
    def scenarios(self) -> list[str]:
        return list(self.by_scenario)

    @functools.cached_property
    def selection(self) -> Selection | None:
        """What the run selected (run.json's `selection`, read by the readers' one rule:
        `selection_record.selection_of`), or None for a run recorded before it was. Read once: every
        surface that asks `report.comparable` about the run asks for it."""
        return selection_of(self.config, self.run_dir / "run.json")

    def left_out(self) -> str | None:
        """How many lines of results.jsonl no count holds (another run's settings, not a
        result line...), naming the first; None when every line counts. Said wherever an
        episode is looked for and not found, so that a file whose lines were all left out is
        never taken for an empty one."""
        if not self.rejected:
            return None
        many = self.left_out_lines
        lines = "1 line of results.jsonl is" if many == 1 else f"{many} lines of results.jsonl are"
        return f"{lines} left out, the first as {self.rejected[0]}"


def load_run(run_dir: str | Path, found: RunLines | None = None) -> Run:
    """Read a run directory (run.json and results.jsonl), or say clearly why it is not one.
    `found`: its lines as `rundir.run_lines` already gave them to the caller (`train
    compare`), not read again."""
    path = Path(run_dir)
    if path.exists() and not path.is_dir():
        raise NotARunDirError(f"{path} is not a run directory (a file, not a folder)")
    config = read_run_config(path)
    _check_config(path, config)
    if not has_results(path):
        raise NothingToDoError(f"{path} has no {RESULTS} yet: nothing to report")
    if found is None:
        found = run_lines(path, config)
    lines = sorted(found.lines, key=result_order)
    run = Run(
        run_dir=path,
        config=config,
        lines=lines,
        rejected=found.rejected,
        left_out_lines=found.left_out,
    )
    for line in lines:
        run.by_scenario.setdefault(line["scenario"], []).append(line)
    run.params_b = params_from_config(config)
    return run


#: The fields of run.json a report reads, and the JSON type each must have when present.
_CONFIG_TYPES: dict[str, tuple[type, ...]] = {
    "settings": (dict,),
    "model": (str,),
    "data_dir": (str,),
    "selection": (dict,),  # what the run selected (`report.comparable`)
}


def _check_config(path: Path, config: Mapping[str, Any]) -> None:
    """One clear error naming run.json and the field when a field has the wrong shape (a
    hand-edited or foreign file), rather than a failure deep inside the report: the fields
    the report reads, and each run setting of a flag, count or text declared in
    `settings.EvalSettings` (labels and the paper's tables read them by that type)."""
    for key, types in _CONFIG_TYPES.items():
        value = config.get(key)
        if value is not None and not isinstance(value, types):
            kind = "an object" if types == (dict,) else "a string"
            raise DamagedRunError(
                f"{path / 'run.json'} is damaged: {key!r} must be {kind}, not {_short(value)}"
            )
    declared_types = {s.name: s.base_type for s in declared(EvalSettings)}
    for key, value in (config.get("settings") or {}).items():
        wanted = declared_types.get(key)
        if value is None or wanted not in _SETTING_KINDS:
            continue
        if isinstance(value, bool) != (wanted is bool) or not isinstance(value, wanted):
            raise DamagedRunError(
                f"{path / 'run.json'} is damaged: setting {key!r} must be "
                f"{_SETTING_KINDS[wanted]}, not {_short(value)}"
            )


#: The setting types whose values run.json holds as JSON of one type: how to name each.
_SETTING_KINDS: dict[Any, str] = {bool: "true or false", int: "a whole number", str: "a text"}


def _short(value: Any) -> str:
    shown = visible(shown_json(value))
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _unique_labels(runs: Sequence[Run]) -> list[str]:
    """Each run's label, made unique: runs of one model and settings are told apart by their
    directory, then by as much of its path as it takes, and last by a number."""
    labels = [visible(setting_label(r)) for r in runs]
    for depth in range(1, 1 + max(len(r.run_dir.parts) for r in runs)):
        clashes = [labels.count(label) > 1 for label in labels]
        if not any(clashes):
            return labels
        for index, run in enumerate(runs):
            if clashes[index]:
                base = visible(setting_label(run))
                tail = "/".join(run.run_dir.parts[-depth:]) or str(run.run_dir)
                labels[index] = f"{base} ({visible(tail)})"
    seen: dict[str, int] = {}
    for index, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[index] = f"{label} #{seen[label]}"
    return labels


def label_apart(run: Run, others: Sequence[Run]) -> str:
    """`run`'s label told apart from `others`' by as much of its directory as it takes (as
    `_unique_labels` does among the runs): the `--vs` run of the same model as a compared one
    was titled by the label of a row of its table."""
    taken = {other.label for other in others}
    label = run.label
    for depth in range(1, 1 + len(run.run_dir.parts)):
        if label not in taken:
            return label
        tail = "/".join(run.run_dir.parts[-depth:]) or str(run.run_dir)
        label = f"{run.label} ({visible(tail)})"
    return label if label not in taken else f"{label} #2"


def load_runs(
    run_dirs: Sequence[str | Path], params: Mapping[str, float] | None = None
) -> list[Run]:
    """Read every run, give each a unique label and apply `--params` by label, model or
    directory name."""
    seen: dict[Path, str] = {}
    for run_dir in run_dirs:
        key = Path(run_dir).resolve()
        if key in seen:
            twice = (
                f"{run_dir} is given twice"
                if str(run_dir) == seen[key]
                else f"{seen[key]} and {run_dir} are the same run directory"
            )
            raise ProactiveBenchError(f"{twice}: give each run once (each run is one row)")
        seen[key] = str(run_dir)
    runs = [load_run(d) for d in run_dirs]
    for run, label in zip(runs, _unique_labels(runs), strict=True):
        run.label = label
    for name, value in (params or {}).items():
        matched = [r for r in runs if name in (r.label, r.model, r.run_dir.name)]
        if not matched:
            known = ", ".join(sorted({r.model for r in runs} | {r.run_dir.name for r in runs}))
            raise ProactiveBenchError(f"--params {name}=...: no run of that name (runs: {known})")
        for run in matched:
            run.params_b = value
    return runs


def is_plain(run: Run) -> bool:
    """Whether `run` has none of the settings a label names (no hint, history, ICL...): the
    run that stands for its model where runs are compared by model (the size plot)."""
    return not label_marks(EvalSettings, run.settings)


def earlier_verdicts(run: Run) -> dict[str, int]:
    """Per scenario, the finished lines scored by an earlier judge's verdict than the judge
    run.json names (`earlier_verdict`): the rates of a run with any mix two judges. Here,
    below `comparable` and `measures`, so that the warning and the comparability share it."""
    judge = run.settings.get("judge")
    return {
        name: sum(1 for line in lines if earlier_verdict(line, judge))
        for name, lines in run.by_scenario.items()
    }


def unrecorded_verdicts(run: Run) -> dict[str, int]:
    """Per scenario, the judged lines that do not record which votes held a verdict
    (`metrics.unrecorded_votes`)."""
    return {
        name: sum(1 for line in lines if unrecorded_votes(line))
        for name, lines in run.by_scenario.items()
    }


def earlier_verdict(line: Mapping[str, Any], judge: Any) -> bool:
    """Whether a finished line holds the verdict of another judge than `judge` (run.json's)."""
    if line.get("error"):
        return False
    if line.get("judge_error"):
        return True
    settings = line.get("settings")
    given = settings.get("judge") if isinstance(settings, dict) else None
    return given is not None and judge is not None and given != judge


def labelled_settings(run: Run) -> list[str]:
    """The settings that set `run` apart, by name ("hint", "mode"...): those a label shows."""
    return labelled(run.settings)


def labelled(settings: Mapping[str, Any]) -> list[str]:
    """`labelled_settings` of a run whose run.json records `settings` (also of one not played
    yet: a suite's experiment, `EvalSettings.identity()`)."""
    return [key for key, _ in label_marks(EvalSettings, settings)]


def setting_label(run: Run) -> str:
    """`model` plus what sets the run apart: "openai:qwen +hint +history"."""
    extra = " ".join(f"+{mark}" for _, mark in label_marks(EvalSettings, run.settings))
    return f"{run.model} {extra}".strip() if extra else (run.model or run.run_dir.name)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kKmMbBtT]?)\s*$")
_SCALE = {"": 1e-9, "k": 1e-6, "m": 1e-3, "b": 1.0, "t": 1e3}
_NAME_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bBmM])(?![a-zA-Z])")


def parse_param_count(text: str) -> float:
    """ "7B", "1.5b", "500M", "7e9" -> billions of parameters."""
    match = _SIZE.match(text)
    if not match:
        raise ProactiveBenchError(f"cannot read a parameter count from {text!r} (e.g. 7B, 500M)")
    value = float(match.group(1)) * _SCALE[match.group(2).lower()]
    if not math.isfinite(value) or value <= 0:
        raise ProactiveBenchError(
            f"parameter count {text!r} must be a finite number above zero (e.g. 7B, 500M)"
        )
    return value


def params_from_config(config: Mapping[str, Any]) -> float | None:
    """A parameter count the run states (run.json's `params`) or its model's name shows
    ("Qwen2.5-VL-7B-Instruct" -> 7, "SmolVLM-500M" -> 0.5)."""
    stated = config.get("params")
    if isinstance(stated, (int, float)) and not isinstance(stated, bool):
        if not math.isfinite(stated) or stated <= 0:
            return None
        return float(stated) / 1e9 if stated > 1e6 else float(stated)
    if isinstance(stated, str):
        try:
            return parse_param_count(stated)
        except ProactiveBenchError:
            return None
    # The model's name without the endpoint (`openai:M@http://host:8000/v1`) or its path.
    name = str(config.get("model", "")).split("@", 1)[0].rsplit("/", 1)[-1]
    matches = _NAME_SIZE.findall(name)
    if not matches:
        return None
    number, unit = matches[-1]
    value = float(number) * _SCALE[unit.lower()]
    return value if math.isfinite(value) and value > 0 else None
