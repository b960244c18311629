"""One episode as a terminal transcript: each turn's prompt and options as sent, the answer,
the verdict, the action carried out, and why the episode ended.

Returns rich renderables built from `Text` objects, never from markup strings, so a model's
answer containing "[red]" or ":x:" is printed as written; the caller's console makes control
characters visible (`cli.output.printable`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from proactivebench.benchmark.scenarios.answers import option_letter, read_group
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.report.html import outcome_of, shown_verdict, unjudged
from proactivebench.report.runs import load_run
from proactivebench.run.rundir import read_run_config

VERDICT_STYLES = {
    "correct": "bold green",
    "proactive": "bold yellow",
    "wrong": "bold red",
    "mismatch": "bold red",
}

#: What each way of ending means, for the last line of a transcript (`{player}`: who chose,
#: `player_of`).
END_REASONS = {
    "correct": "{player} chose the correct category",
    "wrong": "{player} chose a wrong option",
    "abstained": "{player} chose an abstaining option",
    "unreadable": "the answer designates no shown option (unreadable)",
    "step_limit": "the step limit was reached",
    "left_video": "the move would have left the video",
    "no_action": "the accepted option names no single action",
    "no_view": "the record has no view to show (a data problem the loader warned about)",
    "invalid_suggestion": "{player} chose a random suggestion of another scenario, which "
    "the environment cannot carry out (--random-suggestions)",
}


def find_episode(run_dir: Path, scenario: str, sample_id: int) -> dict[str, Any]:
    """The latest result line of one episode of a run, or a clear error."""
    run = load_run(run_dir)
    left_out = run.left_out()
    also = f"; {left_out}" if left_out else ""
    lines = run.by_scenario.get(scenario)
    if lines is None:
        known = ", ".join(run.by_scenario) or "none"
        raise ProactiveBenchError(
            f"{run_dir} has no episode of scenario {scenario!r} ({known}){also}"
        )
    for line in lines:
        if line["sample_id"] == sample_id:
            return line
    ids = [x["sample_id"] for x in lines]
    raise ProactiveBenchError(
        f"{run_dir} has no {scenario} episode with sample id {sample_id} "
        f"({len(ids)} episodes, ids {min(ids)}..{max(ids)}){also}"
    )


def short_asking_episode(run_dir: Path) -> dict[str, Any] | None:
    """A short episode that asks before answering (two or three turns), for the demo: the
    first such, in the paper's scenario order; else the shortest scored one."""
    run = load_run(run_dir)
    scored = [x for x in run.lines if not x.get("error") and "trace" in x]
    asking = [x for x in scored if 2 <= len(x["trace"]) <= 3]
    if asking:
        return asking[0]
    return min(scored, key=lambda x: len(x["trace"]), default=None)


def player_of(run_dir: Path) -> str:
    """Who chose in a run's episodes, as its transcripts' last line names them: a person (a
    `human:` run, `proactivebench play`) or the model."""
    model = read_run_config(run_dir).get("model")
    return "the person" if isinstance(model, str) and model.startswith("human:") else "the model"


def transcript(
    line: dict[str, Any], clean: Callable[[str], str] = str, player: str = "the model"
) -> RenderableType:
    """The episode of a result line as text; `clean` makes model text printable; `player`
    names who chose (`player_of`)."""
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"{clean(str(line['scenario']))} sample {line['sample_id']}", style="bold")
    if line.get("correct_category") is not None:
        head.append(f" · answer key: {clean(str(line['correct_category']))}")
    head.append(f" · outcome: {outcome_of(line)}")
    parts.append(head)
    if line.get("demonstrations"):
        parts.append(Text(f"({len(line['demonstrations'])} demonstration(s) sent first)", "dim"))
    if "trace" not in line:
        return Group(*parts, *_oeg(line, clean))
    history = bool((line.get("settings") or {}).get("history"))
    for number, turn in enumerate(line.get("trace") or [], 1):
        parts.append(Text(""))
        title = Text(f"turn {turn.get('turn', number)}", style="bold underline")
        if history and number > 1:
            title.append(f"  (sent with turns 1-{number - 1} and their answers)", style="dim")
        parts.append(title)
        view = Text(f"  image: {clean(str(turn.get('image')))}", style="dim")
        if turn.get("crop") is not None:
            view.append(f" crop {turn['crop']}")
        if turn.get("resize_short_edge"):
            view.append(f" resized to a short edge of {turn['resize_short_edge']}")
        parts.append(view)
        parts.append(Text("  " + clean(str(turn.get("prompt", "")))))
        options = [str(o) for o in turn.get("options") or []]
        read_as = turn.get("read_as")
        answer = str(turn.get("answer", ""))
        chosen = read_group(read_as if isinstance(read_as, str) else answer, options, []).chosen
        suggested = turn.get("random_suggestions") or []
        for index, option in enumerate(options):
            mark = "▶" if option == chosen else " "
            style = "reverse" if option == chosen else ""
            key = " ✓" if option == line.get("correct_category") else ""
            if option in suggested:
                key += " (random suggestion of another scenario)"
            parts.append(
                Text(f"  {mark} {option_letter(index)}. {clean(option)}{key}", style=style)
            )
        answered = Text("  answer: ")
        answered.append(clean(answer) or "(empty)", style="italic")
        parts.append(answered)
        if read_as is not None:
            parts.append(Text(f"  read as: {clean(str(read_as))}", style="dim"))
        parts += _judged_turn(turn, clean)
        verdict = shown_verdict(turn, "")
        outcome = Text("  verdict: ")
        outcome.append(verdict, style=VERDICT_STYLES.get(verdict, "bold"))
        if turn.get("action"):
            outcome.append(f" · action carried out: {clean(str(turn['action']))}")
            if turn.get("random_mapping"):
                outcome.append(" (drawn at random: the suggestion named no offered action)")
        if turn.get("reason"):
            outcome.append(f" · {clean(str(turn['reason']))}")
        parts.append(outcome)
    parts.append(Text(""))
    parts.append(_ending(line, clean, player))
    return Group(*parts)


def _judged_turn(turn: dict[str, Any], clean: Callable[[str], str]) -> list[RenderableType]:
    """A judged turn's valid answers, verdicts and judge outputs (`--mode oeg-multiturn`)."""
    if "valid_answers_text" not in turn:
        return []
    if unjudged(turn):
        return [
            Text("  valid answers: " + clean(str(turn.get("valid_answers_text")))),
            Text("  judge: no verdict (the judge call failed: the error is at the end)"),
        ]
    return [
        Text("  valid answers: " + clean(str(turn.get("valid_answers_text")))),
        Text(
            f"  judge: proactive suggestion {turn.get('proactive_suggestion')}, "
            f"correct category {turn.get('category_prediction')}",
            style="bold",
        ),
        *_judge_outputs(turn, clean),
    ]


def _judge_outputs(judged: dict[str, Any], clean: Callable[[str], str]) -> list[RenderableType]:
    """Each judge output of a line (or a multi-turn turn), one per vote, marked when it held
    no readable verdict (`judge_parsed`): it scored 0s, which its text alone may belie (a run
    of 1s of the wrong length reads as a yes)."""
    outputs = judged.get("judge_outputs") or []
    outputs = outputs if isinstance(outputs, list) else [outputs]
    parsed = judged.get("judge_parsed")
    parsed = parsed if isinstance(parsed, list) else []
    shown: list[RenderableType] = []
    for index, output in enumerate(outputs, 1):
        text = Text(f"  judge output {index}: " + clean(str(output)), style="dim")
        if index <= len(parsed) and parsed[index - 1] is not True:
            text.append(" (no readable verdict: scored 0)", style="yellow")
        shown.append(text)
    return shown


#: The same for a multi-turn open-ended episode, where the judge read free answers: there was
#: no option to choose.
JUDGED_END_REASONS = {
    **END_REASONS,
    "correct": "the judge found the correct category",
    "wrong": "the judge found no valid answer (or a suggestion the state could not carry out)",
    "unreadable": "no judge vote held a readable verdict",
}


def _ending(line: dict[str, Any], clean: Callable[[str], str], player: str) -> Text:
    if line.get("error"):
        return Text(f"ended in an error: {clean(str(line['error']))}", style="bold red")
    reason = line.get("end_reason")
    judged = (line.get("settings") or {}).get("mode") == "oeg-multiturn"
    known = (JUDGED_END_REASONS if judged else END_REASONS).get(str(reason))
    why = known.format(player=player) if known else (str(reason) if reason else "finished")
    result = "correct" if line.get("correct") else "not correct"
    turns = line.get("num_turns", len(line.get("trace") or []))
    return Text(f"ended after {turns} turn(s), {result}: {why}", style="bold")


def _oeg(line: dict[str, Any], clean: Callable[[str], str]) -> list[RenderableType]:
    view = Text(f"  image: {clean(str(line.get('image')))}", style="dim")
    if line.get("crop") is not None:
        view.append(f" crop {clean(str(line['crop']))}")
    judged = _judge_outputs(line, clean)
    if line.get("judge_error"):
        judged.append(
            Text(
                "  verdict kept from an earlier judge (the judge run.json names could not "
                "judge this line): " + clean(str(line["judge_error"])),
                style="yellow",
            )
        )
    return [
        Text(""),
        view,
        Text("  " + clean(str(line.get("prompt", "")))),
        Text("  answer: " + clean(str(line.get("generation") or "(none)"))),
        Text("  valid answers: " + clean(str(line.get("valid_answers_text") or ""))),
        Text(
            f"  judge: proactive suggestion {line.get('proactive_suggestion')}, "
            f"correct category {line.get('category_prediction')}, "
            f"aggregate {line.get('aggregate')}",
            style="bold",
        ),
        *judged,
        *(
            [Text("  error: " + clean(str(line["error"])), style="red")]
            if line.get("error")
            else []
        ),
    ]
