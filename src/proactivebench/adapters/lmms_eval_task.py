"""ProactiveBench as an lmms-eval task: `lmms-eval --include_path "$(python -m
proactivebench.tasks)" --tasks proactivebench --model qwen2_5_vl ...` (docs/lmms-eval.md).

A thin adapter, as the Inspect task is. The task's YAML files (`proactivebench/tasks/`: one
subtask per scenario and the `proactivebench` group) name the functions below; each lmms-eval
document is one of our episodes, and the episode is played by the same loop as `proactivebench
eval` (`play_episode.play`). lmms-eval's multi-round generation (`generate_until_multi_round`)
drives it:
the model wrapper asks for round 0 (`doc_to_visual`, `doc_to_text`), and after each answer
calls `doc_to_text` again with every answer so far; we replay the episode with those answers
(`replay`: the episode, the conversation builder and the answer reader stay ours) and return
the turn it then shows (its image and text) or say that it has ended. `process_results` replays
the whole answer list once more and scores the finished line with `benchmark/metrics.py`.

Replaying instead of keeping an episode object between rounds: lmms-eval asks round 0 through
`doc_to_text(doc)` without any round state, and may score a document in another thread; a
replay from the answers alone is the same episode every time (our episodes are deterministic
given the settings' seed), so no state has to live between lmms-eval's calls.

What the wrappers can carry: a round is one user message (its images, then its text) after the
wrapper's own system prompt (lmms_eval/models/simple/qwen2_5_vl.py builds `[system, user]` anew
each round), so a setting that sends earlier turns or demonstrations (`history`, `icl`) is not
offered here; `mode` is multiple choice (the task has no judge).

Configured by two environment variables, since lmms-eval's command line has no task arguments:
`PROACTIVEBENCH_DATA` (the data directory: the official layout or `proactivebench data synth`)
and `PROACTIVEBENCH_SETTINGS` (optional: a JSON object of `proactivebench eval`'s settings,
e.g. `{"limit": 20, "hint": true}`). Needs the `lmms-eval` extra.
"""

from __future__ import annotations

import ast
import os
import threading
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from lmms_eval.api.task import ConfigurableTask
from PIL import Image

from proactivebench.adapters.imported import decoded_as_asked
from proactivebench.benchmark.metrics import (
    Metric,
    episode_scores,
    headline_metrics,
    rate_of,
    values_by_metric,
)
from proactivebench.benchmark.prompting import is_image_part
from proactivebench.benchmark.records import Record
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.results import EpisodeResult
from proactivebench.core.errors import ProactiveBenchError, SettingsError
from proactivebench.core.texts import loads
from proactivebench.data.images import ImageStore
from proactivebench.models.base import ChatRequest, Completion
from proactivebench.run.play_episode import Result, play
from proactivebench.run.selection import choose_episodes
from proactivebench.run.settings import EvalSettings, offered

#: The environment variable that names the data directory.
DATA_ENV = "PROACTIVEBENCH_DATA"
#: The environment variable that holds the run's settings (a JSON object), optional.
SETTINGS_ENV = "PROACTIVEBENCH_SETTINGS"
#: Where each metric's per-document value keeps the episode's `results.jsonl` line (read by
#: `proactivebench import-lmms-eval`); the score itself is under lmms-eval's `score` key.
RESULT_KEY = "result"
SCORE_KEY = "score"
#: The group's name, and its subtasks' prefix (`task_name`).
GROUP = "proactivebench"
TASK_PREFIX = GROUP + "_"

__all__ = [
    "DATA_ENV",
    "RESULT_KEY",
    "SETTINGS_ENV",
    "ProactiveBenchTask",
    "Turn",
    "aggregate_accuracy",
    "aggregate_ps_rate",
    "doc_to_text",
    "doc_to_visual",
    "episode_docs",
    "process_results",
    "replay",
]


def task_name(scenario: str) -> str:
    """The subtask of a scenario: `proactivebench_rod`, `proactivebench_mvp_n`."""
    return TASK_PREFIX + scenario.lower().replace("-", "_")


# ----- the run: data and settings, prepared once per process -----------------------------------


@dataclass
class Plan:
    """What every document's episode needs: the settings, the chosen episodes' records by
    (scenario, id) in the order `eval` plays them, the demonstration pools and the images."""

    data_dir: Path
    settings: EvalSettings
    records: dict[tuple[str, int], Record]
    images: ImageStore


_plans: dict[tuple[str, str], Plan] = {}
_plans_lock = threading.Lock()


def settings_from(text: str) -> EvalSettings:
    """The settings a JSON object names (`PROACTIVEBENCH_SETTINGS`), checked as `eval` checks
    its options; a setting this task cannot honour is refused by name."""
    try:
        values = loads(text) if text.strip() else {}
    except ValueError as exc:
        raise SettingsError(f"{SETTINGS_ENV} is not JSON: {exc}") from None
    if not isinstance(values, dict):
        raise SettingsError(f"{SETTINGS_ENV} must be a JSON object, got {text!r}")
    allowed = {s.name for s in offered(EvalSettings, "lmms-eval")}
    refused = sorted(set(values) - allowed)
    if refused:
        raise SettingsError(
            f"{SETTINGS_ENV}: the lmms-eval task does not offer {', '.join(refused)} (it offers "
            f"{', '.join(sorted(allowed))}; docs/lmms-eval.md says why)"
        )
    return EvalSettings(**values)


def plan() -> Plan:
    """The plan of the data and settings the environment names (made once per process)."""
    data = os.environ.get(DATA_ENV, "")
    if not data:
        raise ProactiveBenchError(
            f"set {DATA_ENV} to the data directory the lmms-eval task plays (the official "
            "layout, or one `proactivebench data synth --out DIR` writes)"
        )
    key = (data, os.environ.get(SETTINGS_ENV, ""))
    with _plans_lock:
        if key not in _plans:
            settings = settings_from(key[1])
            data_dir = Path(data).expanduser().resolve()
            chosen = choose_episodes(data_dir, settings)  # as `proactivebench eval` chooses
            _plans[key] = Plan(
                data_dir=data_dir,
                settings=settings,
                records={(e.record.scenario, e.record.id): e.record for e in chosen.episodes},
                images=chosen.images,
            )
        return _plans[key]


def episode_docs(scenario: str, the_plan: Plan | None = None) -> list[dict[str, Any]]:
    """The lmms-eval documents of one scenario's subtask: one per chosen episode, in `eval`'s
    order. A document names its episode; the images and rounds come from our library."""
    p = the_plan or plan()
    docs = [
        {"scenario": s, "sample_id": i, "answer": record.answer}
        for (s, i), record in p.records.items()
        if s == scenario
    ]
    if not docs:
        raise ProactiveBenchError(
            f"no episode of scenario {scenario!r} to play in {p.data_dir} with these settings "
            f"(choose the scenarios present: --tasks {task_name(scenario)},...)"
        )
    return docs


# ----- replaying an episode from its answers ------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """What the episode shows next: the round's images and its text."""

    images: list[Image.Image]
    text: str


class _Wanted:
    """Awaited by the replay's `ask` once the given answers run out: the driver gets the
    request out of the suspended episode and ends it there."""

    def __init__(self, request: ChatRequest) -> None:
        self.request = request

    def __await__(self) -> Generator[_Wanted, None, Completion]:
        yield self
        raise AssertionError("a replay is never resumed after the answers ran out")


def replay(
    doc: dict[str, Any], answers: Sequence[str], the_plan: Plan | None = None
) -> Turn | Result:
    """The document's episode played by `play_episode.play` with `answers` as the model's
    answers, in order: the next turn it shows (a `Turn`) or, once it has ended, its result
    line."""
    p = the_plan or plan()
    record = p.records.get((str(doc.get("scenario")), doc.get("sample_id")))  # type: ignore[arg-type]
    if record is None:
        raise ProactiveBenchError(
            f"document {doc!r} is not an episode of {p.data_dir} with these settings"
        )
    episode = make_episode(record, **p.settings.episode_options())
    given = iter(answers)

    async def ask(request: ChatRequest) -> Completion:
        answer = next(given, None)
        if answer is None:
            return await _Wanted(request)
        return Completion(answer)

    # Driven by hand, without an event loop: the episode awaits nothing but `ask` (multiple
    # choice needs no judge), so it runs through the given answers synchronously and either
    # finishes or stops at the first request that has no answer yet.
    game = play(episode, ask, p.settings)
    try:
        wanted = game.send(None)
    except StopIteration as finished:
        return finished.value
    game.close()
    if not isinstance(wanted, _Wanted):
        raise AssertionError(f"the episode awaited {wanted!r}, not the model")
    return _turn(wanted.request, p.images)


def _turn(request: ChatRequest, images: ImageStore) -> Turn:
    """The request as one round of a multi-round wrapper: a single user message's images and
    text (the settings that would send more are not offered, see `settings_from`)."""
    messages = request.messages
    if len(messages) != 1 or messages[0].get("role") != "user":
        raise AssertionError("an lmms-eval round carries one user message")
    parts = messages[0]["content"]
    return Turn(
        images=[images.image(part["view"]) for part in parts if is_image_part(part)],
        text="".join(str(part.get("text", "")) for part in parts if not is_image_part(part)),
    )


def _first_turn(doc: dict[str, Any]) -> Turn:
    turn = replay(doc, [])
    if not isinstance(turn, Turn):
        raise AssertionError("an episode shows at least one turn")
    return turn


# ----- lmms-eval's hooks (named by the task YAML) ------------------------------------------------


def doc_to_visual(doc: dict[str, Any]) -> list[Image.Image]:
    """Round 0's images: the episode's first turn."""
    return _first_turn(doc).images


def doc_to_text(
    doc: dict[str, Any],
    lmms_eval_specific_kwargs: dict[str, Any] | None = None,
    previous_output: Sequence[str] | None = None,
    round_idx: int | None = None,
    previous_round_info: Any = None,
) -> str | tuple[list[Image.Image] | None, str, bool, list[str], Any]:
    """Round 0 (no `round_idx`): the first turn's text. Later rounds, as lmms-eval's
    multi-round wrappers call it: (the next turn's images, its text, whether the episode has
    ended, every answer so far, no round info) after replaying the answers so far."""
    if round_idx is None:
        return _first_turn(doc).text
    answers = [a if isinstance(a, str) else "" for a in previous_output or []]
    step = replay(doc, answers)
    if isinstance(step, Turn):
        return step.images, step.text, False, answers, None
    return None, "", True, answers, None


def answers_of(results: Sequence[Any]) -> list[str]:
    """The model's answers, one per round, from what lmms-eval hands `process_results`.

    The multi-round wrappers give one tuple of the rounds' answers per document
    (lmms_eval/models/simple/qwen2_5_vl.py: `res.extend(list(zip(*batched_round_res)))`), and
    lmms-eval 0.7's evaluator passes a list through but turns a tuple into its `str()`
    (lmms_eval/api/instance.py: `unwrap_generation_output`, last line): that text is read back
    as the literal it is. A wrapper that answers once (a plain string) gives one round."""
    rounds: Any = results[0] if results else []
    if isinstance(rounds, str):
        try:
            literal = ast.literal_eval(rounds) if rounds.startswith(("(", "[")) else None
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            literal = None
        rounds = literal if isinstance(literal, tuple | list) else [rounds]
    if not isinstance(rounds, tuple | list):
        rounds = [rounds]
    return [a if isinstance(a, str) else "" for a in rounds]


def process_results(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """The document's scores, one entry per metric of the task: lmms-eval's `score` (on its 0-1
    scale: 1 for a correct episode; the ps rate a count of suggestions) and the episode's
    whole result line, from which `aggregate_*` and `import-lmms-eval` read it."""
    p = plan()
    answers = answers_of(results)
    line = _finished_line(doc, answers, p)
    scores = episode_scores(line, fractions=True) if not line.get("error") else {}
    entries = {}
    for metric in headline_metrics(oeg=False):
        entry: dict[str, Any] = {RESULT_KEY: line}
        if metric.key in scores:
            entry[SCORE_KEY] = scores[metric.key]
        entries[metric.key] = entry
    return entries


def _finished_line(doc: dict[str, Any], answers: list[str], p: Plan) -> dict[str, Any]:
    played = replay(doc, answers, p)
    if isinstance(played, Turn):  # the wrapper stopped asking before the episode ended
        line = EpisodeResult(
            scenario=str(doc["scenario"]),
            sample_id=int(doc["sample_id"]),
            num_turns=len(answers),
            correct_category=str(doc.get("answer", "")),
            error=f"the model wrapper answered {len(answers)} round(s) and stopped before the "
            "episode ended",
        )
        line.settings = p.settings.identity()
        return line.to_json()
    return played.to_json()


def _aggregate(key: str, entries: Iterable[dict[str, Any]]) -> float | None:
    """A scenario's rate by our one rule (`metrics.values_by_metric` and `rate_of`, as
    summary.json's: episodes that ended in an error left out), on lmms-eval's 0-1 scale for a
    percentage."""
    metric: Metric = next(m for m in headline_metrics(oeg=False) if m.key == key)
    lines = [e[RESULT_KEY] for e in entries if not e[RESULT_KEY].get("error")]
    rate = rate_of(metric, values_by_metric([metric], lines)[key])
    if rate is None:
        return None
    return rate / 100 if metric.percent else rate


def aggregate_accuracy(entries: list[dict[str, Any]]) -> float | None:
    """The scenario's accuracy (0-1)."""
    return _aggregate("accuracy", entries)


def aggregate_ps_rate(entries: list[dict[str, Any]]) -> float | None:
    """The scenario's ps rate (proactive suggestions per episode)."""
    return _aggregate("ps_rate", entries)


# ----- the task class --------------------------------------------------------------------------


#: lmms-eval's generation_kwargs that are a decoding of ours (`models.base.Decoding`).
GENERATION_KWARGS = {"max_new_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p"}


class ProactiveBenchTask(ConfigurableTask):
    """lmms-eval's configurable task with our episodes as its documents.

    The YAML names this class (`class: !function ...`), which lmms-eval constructs with the
    YAML's config; the only change is where the documents come from: `episode_docs` of the
    subtask's scenario (`dataset_name`) instead of a Hugging Face dataset."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config={k: v for k, v in config.items() if k != "class"})

    def process_results(self, doc: dict[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        """`process_results`, the line recording the decoding lmms-eval asked with: its
        `--gen_kwargs` override the task's generation_kwargs, and a line saying the protocol's
        decoding would be read as such by every reader of the imported run."""
        entries = process_results(doc, results)
        asked = getattr(self.config, "generation_kwargs", None) or {}
        for entry in entries.values():
            line = entry[RESULT_KEY]
            settings = line.get("settings")
            if isinstance(settings, dict) and isinstance(settings.get("decoding"), dict):
                played = decoded_as_asked(settings["decoding"], asked, GENERATION_KWARGS)
                line["settings"] = {**settings, "decoding": played}
        return entries

    def download(self, dataset_kwargs: dict[str, Any] | None = None) -> None:
        docs = datasets.Dataset.from_list(episode_docs(str(self.config.dataset_name)))
        self.dataset = datasets.DatasetDict({str(self.config.test_split): docs})
        self.dataset_no_image = self.dataset
