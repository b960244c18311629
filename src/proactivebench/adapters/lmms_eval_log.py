"""lmms-eval's samples logs of the `proactivebench` task turned into one of our runs.

`lmms-eval --log_samples` writes one `<date>_samples_proactivebench_<scenario>.jsonl` per
subtask; each of its lines holds, under every metric's name, the episode's `results.jsonl` line
(`adapters.lmms_eval_task.process_results` put it there). The import copies those lines, it does
not rebuild them: the imported run's summary equals the one `proactivebench eval` gives for the
same answers, and `report` and `show` read it as any run. No lmms-eval import is needed. Nothing
of a log is left out: a line that is not an episode, or an episode twice, refuses the import.
A line that is not an episode of its log's subtask (a log holds one scenario: the one its file
name's subtask names; the row's document names the episode) refuses it too, and so does a row
whose lmms-eval score contradicts its line: the import records what its lines hold as the run's
selection (a samples log does not say what its task selected), so nothing later could tell.
A log that holds no episode is said, naming it: its scenario is then absent from the run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.adapters.imported import refuse_twice, score_problem, write_imported
from proactivebench.benchmark.metrics import Summary, headline_metrics
from proactivebench.benchmark.registry import scenario_names
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.core.texts import loads, storable_json
from proactivebench.run.rundir import RESULTS, line_problem

#: The key of a metric's entry that holds the line; the same as
#: `adapters.lmms_eval_task.RESULT_KEY` (not imported: that module needs lmms-eval).
RESULT_KEY = "result"
#: lmms-eval's per-document score in a metric's entry (`adapters.lmms_eval_task.SCORE_KEY`).
SCORE_KEY = "score"
#: The subtask a samples log is of, from its name (`<date>_samples_proactivebench_rod.jsonl`;
#: `adapters.lmms_eval_task.task_name` makes the subtask's name from the scenario's).
_SUBTASK_LOG = re.compile(r".*_samples_proactivebench_(.+)\.jsonl", re.IGNORECASE)


@dataclass
class LmmsEvalImport:
    """What an import wrote (`summary`) and what it says beside (`warnings`: a log that held
    no episode)."""

    summary: Summary
    warnings: list[str] = field(default_factory=list)


def import_lmms_eval_samples(
    samples: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str], model: str
) -> LmmsEvalImport:
    """Write `results.jsonl`, `run.json` and `summary.json` of the episodes in lmms-eval's
    samples logs (one file per scenario's subtask, any number of them) into `out_dir`."""
    out = Path(out_dir)
    if (out / RESULTS).exists():
        raise ProactiveBenchError(f"{out / RESULTS} exists; import into a new directory")
    _refuse_repeated(samples)
    found: list[tuple[str, dict[str, Any]]] = []
    origins: list[tuple[Path, dict[str, Any]]] = []  # each line's log and row, as in `found`
    empty: list[str] = []
    for path in map(Path, samples):
        held = _lines_of(path)
        if not held:
            empty.append(str(path))
        for where, line, row in held:
            found.append((where, line))
            origins.append((path, row))
    if not found:
        raise ProactiveBenchError(
            f"the samples logs hold no episode to import ({', '.join(empty)})"
        )
    # The settings of the first line that records any are the run's (a line recording none,
    # written before lines recorded them, agrees with every run: `settings_problem`, so it
    # cannot be the reference, or the verdict would depend on the order of the lines). A line
    # of another run is refused like a line no reader could count, before anything is written.
    reference = next(
        (i for i, (_, line) in enumerate(found) if line.get("settings") is not None), 0
    )
    settings = found[reference][1].get("settings") or {}
    whose, source = "the first line's", "first line"
    if reference:
        whose = f"the first line recording settings ({found[reference][0]})"
        source = "that line"
    for where, line in found:
        problem = line_problem(line, settings, whose=whose, source=source)
        if problem is not None:
            raise ProactiveBenchError(f"{where}: {problem}; nothing imported")
    # Lines every reader can count: now whether each is its subtask's, and scored as it says.
    first: dict[Path, tuple[str, dict[str, Any]]] = {}  # each log's first line
    for (where, line), (path, row) in zip(found, origins, strict=True):
        first.setdefault(path, (where, line))
        problem = _rescored(row, line) or _foreign(path, row, line, first[path])
        if problem is not None:
            raise ProactiveBenchError(f"{where}: {problem}; nothing imported")
    refuse_twice(found, "the samples logs")
    identity = {
        "model": model,
        "settings": settings,
        "lmms_eval_samples": [str(Path(p)) for p in samples],
    }
    summary = write_imported(out, identity, found, model)
    return LmmsEvalImport(summary, [f"{path}: the samples log holds no episode" for path in empty])


def _refuse_repeated(samples: Sequence[str | os.PathLike[str]]) -> None:
    """Refuse one samples log given twice (the same file under one name or two): its episodes
    would be refused as logs of two runs, which they are not."""
    seen: dict[Path, str] = {}
    for given in samples:
        path = Path(given)
        try:
            key = path.resolve()
        except (OSError, RuntimeError):
            key = path.absolute()
        if key in seen:
            same = "" if seen[key] == str(path) else f" (as {seen[key]} and {path})"
            raise ProactiveBenchError(
                f"the samples log {path} is given twice{same}; nothing imported"
            )
        seen[key] = str(path)


def _lines_of(path: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The result lines of one samples log (each with its `file:line` and its row), each made
    storable as it enters."""
    if not path.is_file():
        raise ProactiveBenchError(f"no lmms-eval samples log at {path}")
    try:
        data = path.read_bytes()
        # A byte order mark (an editor's, Windows' tools') is no part of the first row.
        text_of_log = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        raise ProactiveBenchError(
            f"{path}: not a samples log (not UTF-8 text at byte {start})"
        ) from None
    except OSError as exc:
        raise ProactiveBenchError(f"cannot read {path}: {exc.strerror or exc}") from None
    lines = []
    for number, text in enumerate(text_of_log.splitlines(), 1):
        if not text.strip():
            continue
        try:
            sample = loads(text)
        except ValueError as exc:
            raise ProactiveBenchError(f"{path}:{number}: not JSON ({exc})") from None
        line = _line(sample, f"{path}:{number}")
        if line is None:
            raise ProactiveBenchError(
                f"{path}:{number}: not a sample of the proactivebench lmms-eval task (no result "
                "line under its metrics)"
            )
        lines.append((f"{path}:{number}", storable_json(line), sample))
    return lines


def _foreign(
    path: Path, row: dict[str, Any], line: dict[str, Any], first: tuple[str, dict[str, Any]]
) -> str | None:
    """Why `line` is not an episode of the subtask `path` logs, or None: its scenario is not
    the one of the subtask its file name names, nor the one of the log's `first` line (a
    samples log is one subtask's, one scenario's), or the row's document names another
    episode."""
    scenario = line["scenario"]
    named = _SUBTASK_LOG.fullmatch(path.name)
    subtasks = {_subtask(known) for known in scenario_names()}
    if named and _subtask(named[1]) in subtasks and _subtask(scenario) != _subtask(named[1]):
        return (
            f"a {scenario} line in the log of the subtask proactivebench_{named[1]} "
            "(a samples log holds one scenario's episodes)"
        )
    if first[1]["scenario"] != scenario:
        return (
            f"a {scenario} line in a log of {first[1]['scenario']} episodes ({first[0]}; a "
            "samples log holds one scenario's episodes)"
        )
    doc = row.get("doc")
    named_by_doc = (doc.get("scenario"), doc.get("sample_id")) if isinstance(doc, dict) else None
    episode = (scenario, line["sample_id"])
    if named_by_doc is not None and None not in named_by_doc and named_by_doc != episode:
        mine, theirs = _shown(episode, named_by_doc)
        return f"its result line is {mine}, its document {theirs}"
    return None


def _shown(episode: tuple[str, int], named: tuple[Any, Any]) -> tuple[str, str]:
    """Both episodes for a message, each part whose type differs with its type ("sample 0
    (int)" and "sample '0' (str)"), so that two that print alike are told apart."""
    parts: list[list[str]] = [[], []]
    for mine, theirs in zip(episode, named, strict=True):
        if type(mine) is type(theirs):
            parts[0].append(str(mine))
            parts[1].append(str(theirs))
        else:
            parts[0].append(f"{mine!r} ({type(mine).__name__})")
            parts[1].append(f"{theirs!r} ({type(theirs).__name__})")
    return f"{parts[0][0]} sample {parts[0][1]}", f"{parts[1][0]} sample {parts[1][1]}"


def _subtask(scenario: str) -> str:
    """The suffix of a scenario's subtask (`lmms_eval_task.task_name`): "rod", "mvp_n"."""
    return scenario.lower().replace("-", "_")


def _rescored(row: dict[str, Any], line: dict[str, Any]) -> str | None:
    """Where a metric's lmms-eval score contradicts the row's line, or None."""
    scores = {
        key: entry[SCORE_KEY]
        for key, entry in row.items()
        if isinstance(entry, dict)
        and SCORE_KEY in entry
        and isinstance(entry.get(RESULT_KEY), dict)
    }
    return score_problem(scores, line)


def _line(sample: Any, where: str) -> dict[str, Any] | None:
    """The result line a row holds under its metrics; None when it holds none. Every metric
    holds the same line (`process_results`): a row whose metrics hold different lines cannot
    say which is the episode's, and is refused, naming it (`where`)."""
    if not isinstance(sample, dict):
        return None
    held = []
    for metric in headline_metrics(oeg=False):
        entry = sample.get(metric.key)
        line = entry.get(RESULT_KEY) if isinstance(entry, dict) else None
        if isinstance(line, dict) and isinstance(line.get("scenario"), str):
            held.append((metric.key, line))
    for key, line in held[1:]:
        if line != held[0][1]:
            raise ProactiveBenchError(
                f"{where}: its metrics hold different result lines ({held[0][0]} and {key}): "
                "which is the episode's cannot be told; nothing imported"
            )
    return held[0][1] if held else None
