"""What a run's `results.jsonl` holds: one typed record per finished episode.

Its lines are the JSON of `EpisodeResult` (multiple choice, one `TurnRecord` per turn) or of
`OEGResult` (open-ended, judged): the contract that the reports, the training comparison and
users' scripts read. How lines are written, read back, resumed and merged is `rundir`'s job.

The texts that came from outside (answers, judge outputs, errors) are stored capped
(`texts.capped`: beginning and end, and a marker with the original length between them); the
episode was played and scored with the whole text.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from proactivebench.benchmark.registry import scenario_rank
from proactivebench.benchmark.scenarios.answers import read_group
from proactivebench.benchmark.scenarios.base import VERDICTS, EndReason
from proactivebench.core.texts import capped

# ----- records --------------------------------------------------------------------------------


@dataclass
class TurnRecord:
    """One turn of an episode: what was shown, what the model answered, what it meant."""

    turn: int
    #: The view: the image relative to the data dir, and its transforms.
    image: str
    crop: list[float] | None
    prompt: str
    options: list[str]
    #: The model's raw answer.
    answer: str
    #: correct, proactive, wrong or mismatch (docs/protocol.md §4).
    verdict: str
    resize_short_edge: int | None = None
    #: The action carried out (a proactive turn) and why a turn failed in a special way.
    action: str | None = None
    reason: str | None = None
    #: What the backend reported: token counts and seconds; `cached` when the response cache
    #: answered instead of the model.
    usage: dict[str, int] | None = None
    latency_s: float | None = None
    cached: bool = False
    #: What was read when lenient extraction changed the answer (docs: --answer-extraction).
    read_as: str | None = None
    #: The other scenarios' interventions shown in place of this turn's own, in the order of
    #: the interventions they replace (--random-suggestions; absent otherwise).
    random_suggestions: list[str] | None = None
    #: A judged turn of multi-turn open-ended generation (`--mode oeg-multiturn`, docs/
    #: protocol.md §6): the valid answers at this state, every judge output (one per vote),
    #: which of them parsed, the majority's 0/1 verdicts and the votes' agreement; absent on
    #: multiple-choice turns.
    valid_answers_text: str | None = None
    judge_outputs: list[str] | None = None
    judge_parsed: list[bool] | None = None
    proactive_suggestion: int | None = None
    category_prediction: int | None = None
    judge_agreement: float | None = None
    #: True when the suggestion named no action the state offers, and `action` was drawn at
    #: random among the valid ones (by the run's seed, per sample and turn).
    random_mapping: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The trace entry of `results.jsonl`: fixed fields first, optional ones when set."""
        entry: dict[str, Any] = {
            "turn": self.turn,
            "image": self.image,
            "crop": self.crop,
            "prompt": self.prompt,
            "options": self.options,
            "answer": capped(self.answer),
            "verdict": self.verdict,
        }
        optional = (
            "resize_short_edge",
            "action",
            "reason",
            "usage",
            "latency_s",
            "read_as",
            "random_suggestions",
        )
        for key in optional:
            value = getattr(self, key)
            if value is not None:
                entry[key] = capped(value) if key == "read_as" else value
        if self.cached:
            entry["cached"] = True
        for key in _JUDGED_TURN_FIELDS:
            value = getattr(self, key)
            if value is not None:
                entry[key] = [capped(o) for o in value] if key == "judge_outputs" else value
        return entry

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> TurnRecord:
        known = {k: entry[k] for k in _TURN_FIELDS if k in entry}
        return cls(**known)


_TURN_FIELDS = tuple(TurnRecord.__dataclass_fields__)
#: The judged turn's fields, written after the others (only when set).
_JUDGED_TURN_FIELDS = _TURN_FIELDS[_TURN_FIELDS.index("valid_answers_text") :]


@dataclass
class EpisodeResult:
    """One finished episode: a line of `results.jsonl`.

    `error` is set instead of `correct` when the model could not be asked (after its retries):
    such episodes are left out of the metrics and played again by a rerun.
    """

    scenario: str
    sample_id: int
    num_turns: int
    trace: list[TurnRecord] = field(default_factory=list)
    correct: bool | None = None
    error: str | None = None
    #: Why the episode ended (`scenarios.base.EndReason`); None for an error.
    end_reason: str | None = None
    #: The record's answer, so that a line explains itself.
    correct_category: str | None = None
    #: The run's settings (`EvalSettings.identity`), so that no report can mix runs.
    settings: dict[str, Any] | None = None
    #: The in-context examples shown before the episode, once: each a sample id and its
    #: turns (view, prompt, options, the oracle's answer). With the trace they give back the
    #: exact messages of every request.
    demonstrations: list[dict[str, Any]] | None = None
    #: Multi-turn open-ended generation: why the latest judge (`proactivebench judge`) could
    #: not judge this line, which kept its earlier judge's verdicts (`settings` name it).
    judge_error: str | None = None

    @property
    def proactive_suggestions(self) -> int:
        return self.num_turns - 1

    def to_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {"scenario": self.scenario, "sample_id": self.sample_id}
        if self.error is not None:
            line.update(error=capped(self.error), num_turns=self.num_turns)
        else:
            line.update(
                correct=self.correct,
                num_turns=self.num_turns,
                proactive_suggestions=self.proactive_suggestions,
            )
        line["trace"] = [t.to_json() for t in self.trace]
        if self.end_reason is not None:
            line["end_reason"] = self.end_reason
        if self.correct_category is not None:
            line["correct_category"] = self.correct_category
        if self.settings is not None:
            line["settings"] = self.settings
        if self.demonstrations:
            line["demonstrations"] = self.demonstrations
        if self.judge_error is not None:
            line["judge_error"] = capped(self.judge_error)
        return line

    @classmethod
    def from_json(cls, line: dict[str, Any]) -> EpisodeResult:
        return cls(
            scenario=line["scenario"],
            sample_id=line["sample_id"],
            num_turns=line.get("num_turns", 0),
            trace=[TurnRecord.from_json(t) for t in line.get("trace", [])],
            correct=line.get("correct"),
            error=line.get("error"),
            end_reason=line.get("end_reason"),
            correct_category=line.get("correct_category"),
            settings=line.get("settings"),
            demonstrations=line.get("demonstrations"),
            judge_error=line.get("judge_error"),
        )


@dataclass
class OEGResult:
    """One open-ended episode (docs/protocol.md §6): a line of an OEG run's `results.jsonl`.

    `error` is set instead of the verdict when the model or the judge could not be asked.
    """

    scenario: str
    sample_id: int
    #: The view the model saw (image relative to the data dir) and the question as sent.
    image: str
    prompt: str
    #: COCO's crop of the image.
    crop: list[float] | None = None
    #: The model's text, the valid answers as text and as the entries shown to the judge, and
    #: every judge output (one per vote).
    generation: str | None = None
    valid_answers_text: str | None = None
    valid_answers: list[str] | None = None
    judge_outputs: list[str] = field(default_factory=list)
    proactive_suggestion: int | None = None
    category_prediction: int | None = None
    aggregate: int | None = None
    #: Share of the votes that agreed with the majority (with one vote: 1; reports show no
    #: agreement for a single vote).
    judge_agreement: float | None = None
    #: Per vote, whether its output held a readable verdict (an unparsed vote scores 0).
    judge_parsed: list[bool] = field(default_factory=list)
    #: Why the latest judge could not judge this line, which kept an earlier judge's verdict
    #: (`settings` name that judge); `proactivebench judge` retries it.
    judge_error: str | None = None
    error: str | None = None
    correct_category: str | None = None
    usage: dict[str, int] | None = None
    latency_s: float | None = None
    #: True when the response cache gave the generation (absent otherwise).
    cached: bool | None = None
    settings: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        line = {k: v for k, v in vars(self).items() if v is not None and v != []}
        for key in ("generation", "error"):
            if key in line:
                line[key] = capped(line[key])
        if self.judge_outputs:
            line["judge_outputs"] = [capped(o) for o in self.judge_outputs]
        return line

    @classmethod
    def from_json(cls, line: dict[str, Any]) -> OEGResult:
        return cls(**{k: line[k] for k in _OEG_FIELDS if k in line})


_OEG_FIELDS = tuple(OEGResult.__dataclass_fields__)


def cached_answers(lines: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(model answers, how many of them the response cache gave) over result lines: a table
    made from cached answers says so, since it did not ask the model."""
    answers = cached = 0
    for line in lines:
        if is_oeg_line(line):
            turns = [line] if line.get("generation") is not None else []
        else:
            turns = [t for t in line.get("trace", ()) if isinstance(t, dict) and "answer" in t]
        answers += len(turns)
        cached += sum(t.get("cached") is True for t in turns)
    return answers, cached


def chosen_option(turn: Mapping[str, Any]) -> str | None:
    """The shown option a trace entry's answer designates (what lenient extraction read, when
    it changed the answer), read as docs/protocol.md §4 reads it against the options in the
    order shown; None when it designates none. Lines do not store it: it is read back."""
    read_as, answer = turn.get("read_as"), turn.get("answer")
    text = read_as if isinstance(read_as, str) else answer
    options = turn.get("options")
    if not isinstance(text, str) or not isinstance(options, list):
        return None
    shown = [str(option) for option in options]
    return read_group(text, shown, []).chosen


def is_oeg_line(line: Mapping[str, Any]) -> bool:
    """Whether a line is an open-ended episode's: it holds the prompt (or the judge's
    aggregate) where an MCQA line holds its trace. The one rule every reader uses."""
    return "trace" not in line and ("prompt" in line or "aggregate" in line)


# ----- the shape of a line ---------------------------------------------------------------------

#: More turns than any scenario plays (COCO's longest walk is a few dozen): a count above it
#: is not a count of turns (`10**400` parses as a Python int).
MAX_TURNS = 1000
#: More tokens than one request can hold (a million times the longest contexts served): a
#: count above it, or below 0, is not a token count, and the report sums them.
MAX_TOKENS = 10**12


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _shown(value: Any) -> str:
    """A field's value for a message: short, whatever it holds."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value has the type a record's field declares (`hint`): a whole number
    is never a bool, a number may be a whole one, a list's items fit its item type."""
    if hint is Any:
        return True
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(_fits(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return _is_int(value)
    if hint is float:
        return _is_finite(value)
    if hint is str:
        return isinstance(value, str)
    origin = typing.get_origin(hint) or hint
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0] if args else Any) for v in value)
    if origin is dict or (isinstance(hint, type) and hint.__module__ == __name__):
        return isinstance(value, dict)  # an object: its own fields are checked apart
    return True


def _kind_name(hint: Any) -> str:
    """How a message names a field's type: "a whole number", "a list of texts", ..."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is list:
        return f"a list of {_KIND_NAMES.get(args[0], ('', 'objects'))[1]}"
    if len(args) == 1 and typing.get_origin(hint) is not dict:
        return _kind_name(args[0])  # X | None
    return _KIND_NAMES.get(hint, ("an object", ""))[0]


#: A type as one value and as the items of a list.
_KIND_NAMES: dict[Any, tuple[str, str]] = {
    bool: ("true or false", "true or false values"),
    int: ("a whole number", "whole numbers"),
    float: ("a number", "numbers"),
    str: ("a text", "texts"),
}


def _fields_problem(record: Mapping[str, Any], kind: type, where: str = "") -> str | None:
    """The first field of `record` whose value is not of the type `kind` (a record class
    here) declares for it: every field a writer gives a type is read by some table or
    metric as that type (`"num_turns": "3"`, `"end_reason": 5`, `"answer": [1]`)."""
    hints = _hints(kind)
    for key, value in record.items():
        hint = hints.get(key)
        if hint is not None and not _fits(value, hint):
            return f"{where}{key} must be {_kind_name(hint)}, not {_shown(value)}"
    return None


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(kind: type) -> dict[str, Any]:
    """The declared type of each field of a record class, resolved once."""
    if kind not in _HINTS:
        _HINTS[kind] = typing.get_type_hints(kind)
    return _HINTS[kind]


def shape_problem(line: Any) -> str | None:
    """Why a parsed line cannot be a result line (None when it can): the fields every reader
    counts or indexes have the type and range the writers give them, so that a hand-edited or
    foreign line is named where it is read, instead of a traceback deep in a report or a
    `"correct": "yes"` read as a correct episode."""
    if (
        not isinstance(line, dict)
        or not isinstance(line.get("scenario"), str)
        or not _is_int(line.get("sample_id"))
    ):
        return "needs a scenario and a sample_id"
    if line.get("error") is not None and not isinstance(line["error"], str):
        return f"error must be a string, not {_shown(line['error'])}"
    if line.get("settings") is not None and not isinstance(line["settings"], dict):
        return f"settings must be an object, not {_shown(line['settings'])}"
    if is_oeg_line(line):
        return _oeg_problem(line) or _fields_problem(line, OEGResult) or _oeg_contradiction(line)
    return _mcqa_problem(line) or _fields_problem(line, EpisodeResult) or _mcqa_contradiction(line)


#: Why an episode can end, as the scenarios declare it (`scenarios.base.EndReason`).
END_REASONS: tuple[str, ...] = typing.get_args(EndReason)


def _mcqa_contradiction(line: dict[str, Any]) -> str | None:
    """Fields of one multiple-choice line that contradict each other as no writer writes them
    (`play_episode.play_episode`, `oeg_multiturn`): each is read by its own rate, so a line that
    says correct and abstained, or five turns in a one-turn trace, gives a table that cannot
    be."""
    trace = line.get("trace", [])
    for number, turn in enumerate(trace, 1):
        verdict = turn.get("verdict")
        if verdict not in VERDICTS:
            known = ", ".join(VERDICTS)
            return f"turn {number}: verdict must be one of {known}, not {_shown(verdict)}"
    end = line.get("end_reason")
    if end is not None and end not in END_REASONS:
        return f"end_reason must be one of {', '.join(END_REASONS)}, not {_shown(end)}"
    if line.get("error") is not None:
        return None  # an error line stops where the episode failed: its counts are not read
    return _finished_contradiction(line, trace)


def _finished_contradiction(line: dict[str, Any], trace: list[dict[str, Any]]) -> str | None:
    """`_mcqa_contradiction` for a finished line: its verdict, ending, turns and suggestions
    tell one story (an episode ends at its first correct turn, with end_reason correct)."""
    correct, turns, end = line["correct"], line.get("num_turns", 0), line.get("end_reason")
    if end is not None and correct != (end == "correct"):
        return f"correct is {_shown(correct)} but end_reason is {_shown(end)}"
    if "trace" in line and turns != len(trace):
        return f"num_turns is {turns} but the trace holds {len(trace)} turn(s)"
    last = trace[-1].get("verdict") if trace else None
    if trace and correct != (last == "correct"):
        return f"correct is {_shown(correct)} but the last turn's verdict is {_shown(last)}"
    if any(turn.get("verdict") == "correct" for turn in trace[:-1]):
        return "a turn before the last has the verdict correct (an episode ends at it)"
    if "proactive_suggestions" in line:
        suggestions = line["proactive_suggestions"]
        if not _is_int(suggestions) or suggestions != turns - 1:
            return (
                f"proactive_suggestions must be num_turns - 1 ({turns - 1}), "
                f"not {_shown(suggestions)}"
            )
    return None


def _oeg_contradiction(line: dict[str, Any]) -> str | None:
    """An open-ended line's aggregate is ps or cp (docs/protocol.md §6): one that differs
    would make the aggregate rate fall below the ps rate, a table that cannot be."""
    ps, cp, aggregate = (line.get(key) for key in _VERDICTS)
    if None in (ps, cp, aggregate) or aggregate == int(ps or cp):
        return None
    return (
        f"aggregate must be proactive_suggestion or category_prediction ({int(ps or cp)}), "
        f"not {aggregate}"
    )


def _request_problem(request: dict[str, Any], where: str = "") -> str | None:
    """What the report reads of one request (a turn, an open-ended line): its token counts, an
    object (count by kind) or absent, which it sums by kind; and the view it showed, whose
    thumbnail it makes: the image a path (text), the crop four numbers, the resize a count."""
    usage = request.get("usage")
    if usage is not None and not isinstance(usage, dict):
        return f"{where}usage must be an object of token counts, not {_shown(usage)}"
    for kind, count in (usage or {}).items():
        if not (_is_int(count) and 0 <= count <= MAX_TOKENS):
            return (
                f"{where}usage's {kind} must be a whole number from 0 to {MAX_TOKENS:.0e}, "
                f"not {_shown(count)}"
            )
    image = request.get("image")
    if image is not None and not isinstance(image, str):
        return f"{where}image must be a path (text), not {_shown(image)}"
    crop = request.get("crop")
    if crop is not None and not (
        isinstance(crop, list) and len(crop) == 4 and all(_is_finite(c) for c in crop)
    ):
        return f"{where}crop must be four numbers (left, top, right, bottom), not {_shown(crop)}"
    resize = request.get("resize_short_edge")
    if resize is not None and not (_is_int(resize) and resize >= 1):
        return f"{where}resize_short_edge must be a whole number >= 1, not {_shown(resize)}"
    return None


def _demonstrations_problem(line: dict[str, Any]) -> str | None:
    """In-context demonstrations: a list of objects whose turns are requests as above."""
    demos = line.get("demonstrations")
    if demos is None:
        return None
    if not isinstance(demos, list) or not all(isinstance(d, dict) for d in demos):
        return f"demonstrations must be a list of objects, not {_shown(demos)}"
    for number, demo in enumerate(demos, 1):
        turns = demo.get("turns") or []
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            return f"demonstration {number}: turns must be a list of objects, not {_shown(turns)}"
        for turn in turns:
            problem = _request_problem(turn, f"demonstration {number}: ")
            if problem is not None:
                return problem
    return None


def _mcqa_problem(line: dict[str, Any]) -> str | None:
    turns = line.get("num_turns", 0)
    if not _is_int(turns) or not 0 <= turns <= MAX_TURNS:
        return f"num_turns must be a whole number from 0 to {MAX_TURNS}, not {_shown(turns)}"
    if line.get("error") is None and turns < 1:
        return "a finished episode has at least one turn (num_turns 0)"
    correct = line.get("correct")
    if not (isinstance(correct, bool) or (correct is None and line.get("error") is not None)):
        return f"correct must be true or false, not {_shown(correct)}"
    trace = line.get("trace", [])
    if not isinstance(trace, list) or not all(isinstance(t, dict) for t in trace):
        return f"trace must be a list of turns (objects), not {_shown(trace)}"
    for number, turn in enumerate(trace, 1):
        where = f"turn {number}: "
        problem = _request_problem(turn, where) or _fields_problem(turn, TurnRecord, where)
        if problem is not None:
            return problem
    return _demonstrations_problem(line)


#: OEG fields a summary counts: the judge's 0/1 verdicts.
_VERDICTS = ("proactive_suggestion", "category_prediction", "aggregate")


def _oeg_problem(line: dict[str, Any]) -> str | None:
    for key in _VERDICTS:
        value = line.get(key)
        if value is not None and (not _is_int(value) or value not in (0, 1)):
            return f"{key} must be 0 or 1, not {_shown(value)}"
    agreement = line.get("judge_agreement")
    if agreement is not None and (
        isinstance(agreement, bool)
        or not isinstance(agreement, (int, float))
        or not 0 <= agreement <= 1
    ):
        return f"judge_agreement must be a number from 0 to 1, not {_shown(agreement)}"
    for key in ("judge_outputs", "judge_parsed"):
        kind = str if key == "judge_outputs" else bool
        value = line.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
            return f"{key} must be a list of {kind.__name__}, not {_shown(value)}"
    return _request_problem(line)


def settings_problem(
    line: dict[str, Any],
    settings: dict[str, Any],
    *,
    whose: str = "the run's",
    source: str = "run.json",
) -> str | None:
    """How a line's recorded settings differ from its run's (`run.json`'s `settings`; an
    importer, with no run.json yet, names its own `whose`/`source`), None when they agree or
    the line records none (lines written before they were recorded). The judge is left out:
    a re-judged run keeps an earlier judge's verdict on the lines the new judge could not
    judge, and those lines name that judge; but a line of a judged run must name one (every
    writer recorded it)."""
    recorded = line.get("settings")
    if recorded is None:
        return None
    if "judge" in settings and "judge" not in recorded:  # whose verdict it holds: unsaid
        return f"records no judge in its settings ({source}: judge {_shown(settings['judge'])})"
    mine = {k: v for k, v in recorded.items() if k != "judge"}
    run = {k: v for k, v in settings.items() if k != "judge"}
    if mine == run:
        return None
    differ = [
        f"{k}: {_shown(mine.get(k))} ({source}: {_shown(run.get(k))})"
        for k in dict.fromkeys([*run, *mine])
        if mine.get(k) != run.get(k)
    ]
    return f"played with other settings than {whose}: " + "; ".join(differ)


def mode_problem(
    line: dict[str, Any], settings: dict[str, Any], *, source: str = "run.json"
) -> str | None:
    """Why a line is not of its run's kind (None when it is, or when the run records no
    settings): an open-ended line in a multiple-choice run was counted as a wrong, abstained
    episode, and a multiple-choice line in an open-ended run in n but in no rate. Lines of
    `oeg-multiturn` are multiple-choice episodes moved by judged turns: shaped as those."""
    if not settings:
        return None
    mode = settings.get("mode", "mcqa")
    if is_oeg_line(line) == (mode == "oeg"):
        return None
    kind = "an open-ended" if is_oeg_line(line) else "a multiple-choice"
    return f"{kind} episode's line, in a run of mode {_shown(mode)} ({source})"


def result_key(result: dict[str, Any]) -> tuple[str, int]:
    return result["scenario"], result["sample_id"]


def result_order(result: dict[str, Any]) -> tuple[int, int]:
    """The paper's scenario order, then sample id."""
    return scenario_rank(result["scenario"]), result["sample_id"]
