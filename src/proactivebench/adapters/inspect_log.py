"""An Inspect AI log of the `proactivebench/proactivebench` task turned into one of our runs.

The task's scorer keeps each episode's `results.jsonl` line in the score's metadata, so the
import copies lines, it does not rebuild them: the summary of the imported run equals the one
`proactivebench eval` would give for the same answers, and our reports read it as any run.
A sample that Inspect ended in an error becomes an error line, left out of the metrics; a
run that Inspect did not finish (it stopped at a sample error, or was cancelled) is imported as
far as it went, and the outcome says why it ended and which of the task's samples the log
lacks, so that nobody takes it for a complete run. A log that holds an episode twice is refused
(`adapters.imported`); samples of epochs after the first are left out and counted (`left_out`).
A line that is not an episode of the log's task (its sample id, the task's samples, the task's
scenarios say which), or whose episode's score in the log contradicts it, refuses the import:
nothing later could tell it from the task's. A sample whose scores hold different lines (a
second scorer appended) is refused too: which is the episode's cannot be told. run.json's
selection records the samples the task listed, so every reader says "partial" of a log that
lacks some.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.adapters.imported import (
    decoded_as_asked,
    refuse_twice,
    score_problem,
    write_imported,
)
from proactivebench.benchmark.metrics import Summary, headline_metrics
from proactivebench.benchmark.registry import lookup
from proactivebench.benchmark.results import EpisodeResult, OEGResult, is_oeg_line, result_key
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.core.texts import storable_json
from proactivebench.data.directory import is_synthetic
from proactivebench.run.rundir import RESULTS, line_problem

#: The registered name of the task (`inspect eval proactivebench/proactivebench`).
TASK_NAME = "proactivebench/proactivebench"
#: Where the task's scorer keeps the line; the same key as `adapters.inspect_task.RESULT_KEY`
#: (not imported from there, so that reading a log does not load the task's module).
RESULT_KEY = "result"
#: A task's sample id: the scenario, a dash, the record's id.
_SAMPLE_ID = re.compile(r"(.+?)-(-?\d+)")


@dataclass
class InspectImport:
    """What an import wrote, and what it could not: `status` is the log's ("success", "error",
    "cancelled", "started"), `reason` the error Inspect ended the run with, `errors` the
    imported samples' errors by message, `missing` the ids of the task's samples that the log
    does not hold (in the task's order)."""

    summary: Summary
    status: str
    reason: str | None = None
    errors: Counter[str] = field(default_factory=Counter)
    missing: list[str] = field(default_factory=list)
    #: How many samples the task has (None when the log does not say).
    expected: int | None = None
    #: What the import left out of the log, by kind (`adapters.imported.left_out_text`).
    left_out: Counter[str] = field(default_factory=Counter)

    @property
    def ending(self) -> str | None:
        """Why the Inspect run did not finish, or None when it did."""
        return ending(self.status, self.reason)

    @property
    def complete(self) -> bool:
        """Every sample of the task is in the log and none ended in an error (a log that does
        not list the task's samples is complete only if Inspect finished the run)."""
        known = self.expected is not None or self.status == "success"
        return known and not self.errors and not self.missing


def import_inspect_log(
    log_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]
) -> InspectImport:
    """Write `results.jsonl`, `run.json` and `summary.json` of the episodes in an Inspect log.

    Only the first epoch is imported (a run of ours plays each episode once).
    """
    log = _read_log(Path(log_path))
    out = Path(out_dir)
    if (out / RESULTS).exists():
        raise ProactiveBenchError(f"{out / RESULTS} exists; import into a new directory")
    metadata = log.eval.metadata or {}
    settings = metadata.get("settings", {})
    samples = [s for s in log.samples or [] if getattr(s, "epoch", 1) == 1]
    later = len(log.samples or []) - len(samples)
    # Lines come from the log's metadata, text from outside: made storable as it enters.
    lines = [storable_json(_line(sample, settings, log_path)) for sample in samples]
    settings, lines = _decoded_as_played(log, settings, lines)
    # A line no reader could count (damaged, another run's settings, an unknown scenario) is
    # refused before anything is written: the run directory stays free for a good log.
    for sample, line in zip(samples, lines, strict=True):
        problem = line_problem(
            line,
            settings if isinstance(settings, dict) else {},
            whose="the log's task",
            source="the task's settings",
        )
        if problem is not None:
            raise ProactiveBenchError(
                f"{log_path}: sample {sample.id!r}: {problem}; nothing imported"
            )
    for sample, line in zip(samples, lines, strict=True):
        problem = _foreign(log, sample, line) or _rescored(sample)
        if problem is not None:
            raise ProactiveBenchError(
                f"{log_path}: sample {sample.id!r}: {problem}; nothing imported"
            )
    refuse_twice(
        [(f"sample {s.id!r}", line) for s, line in zip(samples, lines, strict=True)], str(log_path)
    )
    ended = _ending(log)
    if not lines:
        raise ProactiveBenchError(
            f"{log_path} holds no finished sample to import" + (f" ({ended})" if ended else "")
        )
    identity = {
        "data_dir": metadata.get("data_dir"),
        "model": log.eval.model,
        "settings": settings,
        # What Inspect asked the model with: the task's decoding, or the command line's.
        "generate_config": log.plan.config.model_dump(mode="json", exclude_none=True),
        "inspect_log": str(log_path),
    }
    summary = write_imported(
        out,
        identity,
        [(f"{log_path}: sample {s.id!r}", line) for s, line in zip(samples, lines, strict=True)],
        log.eval.model,
        synthetic=_generated(metadata.get("data_dir")),
        selected=_listed(log),
    )
    outcome = _outcome(log, summary, samples, lines)
    if later:
        outcome.left_out["sample(s) of epochs after the first (a run plays each episode once)"] = (
            later
        )
    return outcome


#: The keys of Inspect's GenerateConfig that are a decoding of ours (`Decoding`): the same.
_DECODING_KEYS = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p"}


def _decoded_as_played(
    log: Any, settings: Any, lines: list[dict[str, Any]]
) -> tuple[Any, list[dict[str, Any]]]:
    """The task's settings and lines with the decoding Inspect asked the model with: the
    task records the decoding it declared, but `inspect eval --temperature 1.0` (or
    `--max-tokens`) overrides it, and a run recorded as decoded by the protocol would be read
    as such by every reader (the card, `data filter`, `report --paper`)."""
    if not isinstance(settings, dict) or not isinstance(settings.get("decoding"), dict):
        return settings, lines
    declared = settings["decoding"]
    config = log.plan.config.model_dump(mode="json", exclude_none=True)
    played = decoded_as_asked(declared, config, _DECODING_KEYS)
    if played == declared:
        return settings, lines
    for line in lines:
        if isinstance(line.get("settings"), dict) and line["settings"].get("decoding") == declared:
            line["settings"] = {**line["settings"], "decoding": played}
    return {**settings, "decoding": played}, lines


def _foreign(log: Any, sample: Any, line: dict[str, Any]) -> str | None:
    """Why `line` is not an episode of the log's task, or None: the sample's id (as the task
    names samples, "QD-3") names another episode, its scenario is none of the task's
    (`task_args` scenarios), or the task's samples (`dataset.sample_ids`) do not hold it."""
    episode = (line["scenario"], line["sample_id"])
    named = _episode_of(str(sample.id))
    # An id that names no scenario of ours ("weird-id-9") is a renamed sample: its line says.
    if isinstance(named, tuple) and lookup(named[0]) is not None and named != episode:
        return (
            f"its result line is {episode[0]} sample {episode[1]}, not the sample it is logged as"
        )
    scenarios = _task_scenarios(log.eval.task_args)
    if scenarios is not None and episode[0].upper() not in {s.upper() for s in scenarios}:
        return f"scenario {episode[0]!r} is not one of the task's ({', '.join(scenarios)})"
    listed = log.eval.dataset.sample_ids
    if listed is not None and episode not in {_episode_of(str(i)) for i in listed}:
        return f"{episode[0]} sample {episode[1]} is not one of the task's samples"
    return None


def _listed(log: Any) -> list[tuple[str, int]]:
    """The episodes the task selected (`dataset.sample_ids`, "QD-3"), those a sample id names;
    none when the log does not list them."""
    named = [_episode_of(str(i)) for i in log.eval.dataset.sample_ids or []]
    return [episode for episode in named if isinstance(episode, tuple)]


def _task_scenarios(task_args: Any) -> list[str] | None:
    """The scenarios the task was given (`-T scenarios=ROD,QD`), or None when it chose all."""
    given = task_args.get("scenarios") if isinstance(task_args, dict) else None
    if isinstance(given, str):
        given = given.split(",")
    if not isinstance(given, list | tuple):
        return None
    names = [str(part).strip() for part in given if str(part).strip()]
    return names or None  # none named: the task played every scenario


def _rescored(sample: Any) -> str | None:
    """Where a score Inspect kept for the sample contradicts the line it holds (every score
    that holds one: `_line` checked they hold the same), or None. A score of one value, not
    one per rate, is read as the headline rate (accuracy: 1 correct, 0 not)."""
    for _, score, held in _held(sample):
        value = score.value
        if not isinstance(value, dict):
            value = {headline_metrics(is_oeg_line(held))[0].key: value}
        problem = score_problem(value, held)
        if problem is not None:
            return problem
    return None


def _held(sample: Any) -> list[tuple[str, Any, dict[str, Any]]]:
    """Each score of the sample that holds a result line: (the scorer's name, the score, the
    line)."""
    found = []
    for name, score in (sample.scores or {}).items():
        line = (score.metadata or {}).get(RESULT_KEY)
        if isinstance(line, dict):
            found.append((str(name), score, line))
    return found


def _generated(data_dir: Any) -> bool:
    """Whether the data directory the log's task names holds generated data (`data synth`'s
    manifest), where it is still at hand."""
    return isinstance(data_dir, str) and bool(data_dir) and is_synthetic(Path(data_dir))


def _ending(log: Any) -> str | None:
    return ending(log.status, log.error.message if log.error is not None else None)


def ending(status: str, reason: str | None) -> str | None:
    """Why the Inspect run did not finish, or None when it did."""
    if status == "success":
        return None
    return f"the Inspect run ended with status {status!r}" + (f": {reason}" if reason else "")


def _outcome(log: Any, summary: Summary, samples: list[Any], lines: list[dict]) -> InspectImport:
    expected = log.eval.dataset.sample_ids
    # By the episode a line holds, not the sample's id text (an id may be renamed in the log).
    present = {result_key(line) for line in lines} | {str(sample.id) for sample in samples}
    missing = [str(i) for i in expected or [] if _episode_of(str(i)) not in present]
    return InspectImport(
        summary=summary,
        status=log.status,
        reason=log.error.message if log.error is not None else None,
        errors=Counter(line["error"] for line in lines if line.get("error")),
        missing=missing,
        expected=len(expected) if expected is not None else None,
    )


def _episode_of(sample_id: str) -> tuple[str, int] | str:
    """The episode a task's sample id names (`SCENARIO-ID`, as `inspect_task` makes it: "QD-3",
    "MVP-N-5", "ROD--2"), or the id itself when it names none."""
    match = _SAMPLE_ID.fullmatch(sample_id)
    return (match[1], int(match[2])) if match else sample_id


def _read_log(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ProactiveBenchError(
            "import-inspect needs Inspect AI: pip install -e '.[inspect]'"
        ) from None
    if not path.is_file():
        raise ProactiveBenchError(f"no Inspect log at {path}")
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # any reader failure is a damaged or foreign file
        raise ProactiveBenchError(f"cannot read the Inspect log {path}: {exc}") from None
    if log.eval.task != TASK_NAME:
        raise ProactiveBenchError(
            f"{path} is a log of the task {log.eval.task!r}, not of {TASK_NAME!r}"
        )
    return log


def _line(sample: Any, settings: dict[str, Any], log_path: Any) -> dict[str, Any]:
    """The sample's result line, or an error line when Inspect gave it no score. Scores that
    hold different lines (a second scorer appended with `inspect score`) are refused, naming
    the sample: which one is the episode's cannot be told, and taking the first would make the
    run depend on the order Inspect keeps them in."""
    held = _held(sample)
    for name, _, line in held[1:]:
        if line != held[0][2]:
            raise ProactiveBenchError(
                f"{log_path}: sample {sample.id!r}: its scores hold different result lines "
                f"({held[0][0]} and {name}): which is the episode's cannot be told; "
                "nothing imported"
            )
    if held:
        return held[0][2]
    metadata = sample.metadata or {}
    error = sample.error.message if sample.error is not None else "no score in the Inspect log"
    scenario, sample_id = metadata.get("scenario"), metadata.get("sample_id")
    if not isinstance(scenario, str) or not isinstance(sample_id, int):
        raise ProactiveBenchError(f"sample {sample.id!r} of the log is not a proactivebench one")
    if settings.get("mode") == "oeg":
        return OEGResult(scenario, sample_id, image="", prompt="", error=error).to_json()
    return EpisodeResult(scenario, sample_id, num_turns=0, error=error).to_json()
