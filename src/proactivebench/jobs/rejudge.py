"""`rejudge`: a finished open-ended run judged again, without asking the tested model.

A job beside `evaluate.evaluate`, run by the same engine (`engine.RunEngine`): its items are the
run's result lines that need the new judge's verdict, and one is played by `oeg.rejudge_line`
(a failed judge call never replaces a verdict). Each judged line is journalled as it ends, so
that an interrupted re-judging goes on where it stopped.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.benchmark.metrics import Summary, is_unjudged, summarize
from proactivebench.benchmark.results import is_oeg_line, result_key, result_order
from proactivebench.core.errors import NothingToDoError, RunMismatchError
from proactivebench.core.paths import read_file, write_whole
from proactivebench.models.base import ChatRequest, Completion
from proactivebench.run.datarecords import records_of
from proactivebench.run.engine import JUDGE_CODE, Provenance, RunEngine, recorded_code
from proactivebench.run.judge import Judge, judged_settings
from proactivebench.run.oeg import Ask, as_it_is, needs_judging, rejudge_line
from proactivebench.run.oeg_multiturn import (
    as_it_is_multiturn,
    needs_rejudging,
    rejudge_multiturn_line,
    verdicts_changed,
)
from proactivebench.run.play_episode import Result
from proactivebench.run.rundir import (
    JUDGED_SO_FAR,
    RESULTS,
    RUN_CONFIG,
    ResultsFile,
    identity_differences,
    provenance_of,
    read_results,
    read_run_config,
    refuse_not_a_run,
    refuse_orphan_lines,
    refuse_rejected,
    run_lines,
    without_provenance,
    write_results,
    write_run_config,
    write_summary,
)
from proactivebench.run.selection_record import Selection, selection_of
from proactivebench.run.settings import RunOptions, run_options

#: The results file that `rejudge` replaced, kept beside the new one (one generation back).
PREVIOUS_RESULTS = "results.previous.jsonl"


@dataclass
class RejudgeOutcome:
    """What `rejudge` did: the new summary, where it wrote, and what it could not judge."""

    summary: Summary
    out_dir: Path
    #: The results file it replaced, kept as `PREVIOUS_RESULTS` (None when there was none).
    previous: Path | None = None
    #: Why lines could not be judged (the judge's errors, by message).
    failures: Counter[str] = field(default_factory=Counter)
    #: Of those lines, how many kept an earlier judge's verdict.
    kept: int = 0
    #: Multi-turn open-ended lines whose verdicts changed, left out of the results: `eval`
    #: with the same judge plays those episodes again (docs/protocol.md §6).
    replay: int = 0
    #: Not one line got a verdict of the new judge (every call failed): nothing was written,
    #: and the run still says it was judged by its earlier judge, as its lines do.
    untouched: bool = False
    #: Verdicts an interrupted judging by another judge left in `JUDGED_SO_FAR`, by that
    #: judge: not taken (another judge was asked), and gone with the journal at the end.
    discarded: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class _Way:
    """How lines of one mode are re-judged: which need it, judging one, keeping one as it is."""

    needs: Callable[[dict[str, Any], dict[str, Any]], bool]
    judge_one: Callable[..., Awaitable[Result]]
    as_it_is: Callable[[dict[str, Any], dict[str, Any]], Result]


ONE_TURN = _Way(needs_judging, rejudge_line, as_it_is)
MULTITURN = _Way(needs_rejudging, rejudge_multiturn_line, as_it_is_multiturn)


def rejudge(
    run_dir: str | os.PathLike[str],
    judge: Judge,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    concurrency: int | None = None,
    options: RunOptions | None = None,
    engine: RunEngine | None = None,
    on_start: Callable[[int, int, int], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> RejudgeOutcome:
    """Judge a finished OEG run again with `judge`, into `out_dir` (default: in place).

    The tested model is not asked again: its generations are read from the results file.
    `options` (or `concurrency` alone) say how many lines are judged at once, as `eval` plays
    episodes (the scheduler's workers; a judge that takes batches gets the votes of several
    lines together), each with its votes asked together; the results do not depend on it.
    `engine` (a `RunEngine`, e.g. one shared with other runs, and its response cache) runs it;
    by default one of `options` without a cache. `run.json` and every newly judged line
    record the new judge; when not one line got its verdict, nothing is written
    (`RejudgeOutcome.untouched`). The directory written is held with the run lock from the reading
    to the writing, as `eval` holds it. Each judged line is appended to `JUDGED_SO_FAR` as it
    ends, so that a rerun after Ctrl-C or a crash asks only about the others; at the end the
    results file it replaces is kept as `PREVIOUS_RESULTS` (unless that holds an earlier
    judge's results this judge replaced before: `backup_stays`) and the new one is written whole
    (temporary file, then rename). `on_start(to_judge, lines, judged_before)` is called once
    the judge answered its preflight, before it is asked (`judged_before`: lines an
    interrupted `rejudge` of the same judge judged), and `on_result(line)` as each line is
    judged. Lines the judge could not judge are counted (`RejudgeOutcome.failures`); a judge
    that cannot be reached ends it at once (`RunAbort`), with the results file untouched.
    """
    engine = engine or RunEngine(run_options(options, concurrency))
    run = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run
    with engine.claim(out):
        config = identity = read_run_config(run)
        multiturn = identity.get("settings", {}).get("mode") == "oeg-multiturn"
        way = MULTITURN if multiturn else ONE_TURN
        # The lines as every reader that counts takes them: one played with other settings
        # than run.json's (a hand edit) would otherwise be judged and stamped with them.
        found = run_lines(run, identity)
        refuse_rejected(
            found.rejected,
            f"cannot judge {run}: its results hold lines that are not this run's. Move them "
            f"out of {run / RESULTS}, or mend {run / RUN_CONFIG}",
        )
        lines = found.lines
        if not lines or not all(is_oeg_line(line) != multiturn for line in lines):
            raise NothingToDoError(
                f"{run} holds no open-ended (--mode oeg or oeg-multiturn) results to judge"
            )
        played = {result_key(line): line for line in lines}
        settings = judged_settings(identity.get("settings", {}), judge)
        identity = {**identity, "settings": settings}
        if out.resolve() != run.resolve():
            _refuse_another_run(out, run, without_provenance(identity))
        so_far = read_results(out / JUDGED_SO_FAR)
        discarded = _other_judges(so_far, settings)
        edited = _edited_judge(config, judge)
        if edited:  # its verdicts so far cannot be told from the edited code's: asked again
            discarded += _edited_verdicts(so_far, settings, judge)
            so_far = []
        lines, before = _judged_before(lines, so_far, settings, way.needs)
        todo = [
            line for line in lines if way.needs(line, settings) or (edited and way.needs(line, {}))
        ]

        def started() -> None:
            if on_start:
                on_start(len(todo), len(lines), before)

        if not todo:
            started()
        # Re-judging is recorded in run.json's provenance as an invocation of its own.
        provenance = Provenance(command="judge", judge=judge)
        judged = _judge_lines(
            todo,
            engine,
            engine.judge(judge),
            settings,
            out / JUDGED_SO_FAR,
            on_result,
            started,
            functools.partial(way.judge_one, again=True) if edited else way.judge_one,
        )
        results = [judged.get(result_key(line)) or way.as_it_is(line, settings) for line in lines]
        ordered = sorted((r.to_json() for r in results), key=result_order)
        # Whether the judge gave one verdict, asked before the episodes it changed are left
        # out: a judge whose verdicts change every episode judged, and must say so.
        verdicts = any(_judged_by(line, settings) for line in ordered)
        # A multi-turn episode whose verdicts changed would have gone otherwise: its line is
        # left out, for `eval` with this judge to play again (docs/protocol.md §6).
        replay = {
            result_key(line)
            for line in ordered
            if multiturn and verdicts_changed(played[result_key(line)], line)
        }
        ordered = [line for line in ordered if result_key(line) not in replay]
        provenance.end()
        outcome = RejudgeOutcome(summarize(ordered, model=str(identity.get("model", ""))), out)
        outcome.replay = len(replay)
        outcome.discarded = discarded
        for line in ordered:
            if is_unjudged(line) and (not multiturn or line.get("judge_error")):
                outcome.failures[line.get("judge_error") or line["error"]] += 1
                outcome.kept += bool(line.get("judge_error"))
        if todo and not verdicts:
            # Writing now would name a judge in run.json that gave no verdict: the run could
            # then resume with neither judge. Leave it as it was; a rerun asks again. (A judge
            # whose verdicts left every episode out gave verdicts: the run is written, with
            # no line, for `eval` with this judge to play them all again.)
            outcome.untouched = True
            (out / JUDGED_SO_FAR).unlink(missing_ok=True)
            return outcome
        history = [*provenance_of(identity), provenance.stamped()]
        selection = selection_of(identity, run / RUN_CONFIG)
        outcome.previous = _finish(
            out, judge, identity, history, selection, ordered, outcome.summary
        )
    return outcome


def _finish(
    out: Path,
    judge: Judge,
    identity: dict[str, Any],
    history: list[dict[str, Any]],
    selection: Selection | None,
    ordered: list[dict[str, Any]],
    summary: Summary,
) -> Path | None:
    """Write the re-judged run into `out`, in an order that a crash at any step leaves every
    judge's verdicts somewhere and the rerun of the command finishing alike: the backup first,
    then run.json naming the new judge (from then on `backup_stays`: a rerun keeps that
    backup, the earlier judge's only copy, instead of copying this judge's results over it),
    then the results, the summary, and last the journal removed (until then a rerun takes its
    verdicts). Returns where the results before this judge are kept."""
    previous = _keep_previous(out, judge)
    write_run_config(out, without_provenance(identity), history, selection, records_of(identity))
    write_results(out / RESULTS, ordered)
    write_summary(out, summary)
    (out / JUDGED_SO_FAR).unlink(missing_ok=True)
    return previous


def _refuse_another_run(out: Path, run: Path, identity: dict[str, Any]) -> None:
    """`out` (another directory than `run`) may hold nothing yet, an interrupted judging's
    journal, or `run` judged there before (by any judge: judging it again replaces its
    verdicts, as in place). Another run's directory, or result lines of no known run, would
    lose their run.json and results: refused, naming what differs, as is a suite's output or a
    report folder (`refuse_not_a_run`)."""
    refuse_not_a_run(out)
    if not (out / RUN_CONFIG).exists():
        refuse_orphan_lines(out)
        return
    held = without_provenance(read_run_config(out))
    if _without_judge(held) != _without_judge(identity):
        changes = "; ".join(identity_differences(_without_judge(held), _without_judge(identity)))
        raise RunMismatchError(
            f"{out} holds another run than {run} ({out / RUN_CONFIG}: {changes}); judging "
            "would replace its results. Give --out a new directory (or the one an earlier "
            "judging of this run wrote)"
        )


def _without_judge(identity: dict[str, Any]) -> dict[str, Any]:
    """A run's identity less its judge: what a judged copy shares with the run it copies."""
    settings = identity.get("settings")
    if not isinstance(settings, dict):
        return identity
    return {**identity, "settings": {k: v for k, v in settings.items() if k != "judge"}}


def _edited_judge(config: dict[str, Any], judge: Judge) -> bool:
    """Whether `config` (a run.json) names `judge` as its judge but recorded other code for it
    (a `python:` judge edited since it judged): another judge, whose verdicts are all asked
    again. A run that recorded no code (an older run, another backend) has nothing to compare."""
    held = config.get("settings")
    if not isinstance(held, dict) or held.get("judge") != judge.identity():
        return False
    before, now = recorded_code(config, JUDGE_CODE), judge.model.code_digest
    return before is not None and now is not None and before != now


def _edited_verdicts(
    so_far: list[dict[str, Any]], settings: dict[str, Any], judge: Judge
) -> Counter[str]:
    """The verdicts of an interrupted judging (`so_far`) under this judge's settings, which an
    edited judge does not take (they may be the earlier code's): named, as other judges' are."""
    found = sum(
        1 for line in so_far if line.get("settings") == settings and _judged_by(line, settings)
    )
    return Counter(
        {f"{judge.model.name} (before its code was edited, or not told apart)": found}
        if found
        else {}
    )


def _judged_by(line: dict[str, Any], settings: dict[str, Any]) -> bool:
    """Whether `line` holds a verdict of the judge whose run settings are `settings`."""
    return (
        line.get("settings") == settings and not line.get("judge_error") and not line.get("error")
    )


def _other_judges(so_far: list[dict[str, Any]], settings: dict[str, Any]) -> Counter[str]:
    """The verdicts in `so_far` (an interrupted judging's journal) of other judges than the
    one whose run settings are `settings`, counted by judge: this judging never takes them,
    and removes the journal when it ends, so they must be named, not lost in silence."""
    found: Counter[str] = Counter()
    for line in so_far:
        held = line.get("settings")
        if held == settings or not isinstance(held, dict) or not _judged_by(line, held):
            continue
        judge = held.get("judge")
        found[str(judge.get("judge")) if isinstance(judge, dict) else "another judge"] += 1
    return found


def _judged_before(
    lines: list[dict[str, Any]],
    so_far: list[dict[str, Any]],
    settings: dict[str, Any],
    needs: Callable[[dict[str, Any], dict[str, Any]], bool] = needs_judging,
) -> tuple[list[dict[str, Any]], int]:
    """`lines` with those an interrupted `rejudge` judged (`JUDGED_SO_FAR`) in their place,
    and how many: only verdicts of this judge (`settings`), on the same generation of the
    same prompt, count; anything else there (a failed call, another judge's or another
    run's line) is asked again."""
    by_key = {result_key(line): index for index, line in enumerate(lines)}
    merged, taken = list(lines), set()
    for line in so_far:
        index = by_key.get(result_key(line))
        if index is None or needs(line, settings) or line.get("settings") != settings:
            continue
        if _judged_text(line) != _judged_text(lines[index]):
            continue
        merged[index] = line
        taken.add(index)
    return merged, len(taken)


#: What a verdict is about: a line judged before counts only if these are unchanged (of the
#: line, and of each turn of a multi-turn line).
_JUDGED_TEXT = ("prompt", "generation", "valid_answers_text")
_JUDGED_TURN_TEXT = ("prompt", "answer", "valid_answers_text")


def _judged_text(line: dict[str, Any]) -> list[Any]:
    turns = [t for t in line.get("trace") or [] if isinstance(t, dict)]
    return [
        [line.get(k) for k in _JUDGED_TEXT],
        [[t.get(k) for k in _JUDGED_TURN_TEXT] for t in turns],
    ]


def _judge_lines(
    todo: list[dict[str, Any]],
    engine: RunEngine,
    judge: Judge,
    settings: dict[str, Any],
    so_far: Path,
    on_result: Callable[[Result], None] | None,
    started: Callable[[], None] = lambda: None,
    judge_line: Callable[..., Awaitable[Result]] = rejudge_line,
) -> dict[tuple[str, int], Result]:
    """Judge `todo` as the engine plays items, each line appended to `so_far` as it ends
    (the scheduler's group commit); the results by line. `started` is called once the judge
    answered its preflight (a judge that cannot be reached shows no progress first)."""
    judged: dict[tuple[str, int], Result] = {}
    if not todo:
        return judged

    def keep(result: Result) -> None:
        judged[(result.scenario, result.sample_id)] = result
        if on_result:
            on_result(result)

    async def judge_one(line: dict[str, Any], submit: Ask) -> Result:
        async def ask_votes(requests: Sequence[ChatRequest]) -> list[Completion]:
            return list(await asyncio.gather(*(submit(r) for r in requests)))

        return await judge_line(line, judge, ask_votes, settings)

    journal = ResultsFile(so_far)
    try:
        asyncio.run(
            engine.play(todo, judge_one, journal, [judge.model], on_ready=started, on_result=keep)
        )
    finally:
        journal.close()
    return judged


def backup_stays(out: str | os.PathLike[str], judge: Judge) -> bool:
    """Whether `rejudge` with `judge` into `out` leaves `out`'s `PREVIOUS_RESULTS` as it is.

    "One generation back" is one judge back: when `out`'s results are already this judge's
    (its run.json names it, with the same code for a `python:` judge: a rerun that retries
    the lines the judge could not judge, or one that finds nothing left to judge), the backup
    there holds the earlier judge's verdicts,
    the only copy of them left; replacing it with this judge's own lines would lose them.
    """
    where = Path(out)
    if not (where / PREVIOUS_RESULTS).exists() or not (where / RUN_CONFIG).exists():
        return False
    config = read_run_config(where)
    held = config.get("settings")
    same = isinstance(held, dict) and held.get("judge") == judge.identity()
    return same and not _edited_judge(config, judge)


def _keep_previous(out: Path, judge: Judge) -> Path | None:
    """Keep the results `rejudge` is about to replace in `out` as `PREVIOUS_RESULTS` (unless
    `backup_stays`); where the results before this judge are kept (None: nowhere)."""
    kept = out / PREVIOUS_RESULTS
    return kept if backup_stays(out, judge) else _keep(out / RESULTS, kept)


def _keep(path: Path, kept: Path) -> Path | None:
    """Copy `path` to `kept` whole (a crash leaves the old copy or the new one)."""
    if not path.exists():
        return None
    write_whole(kept, read_file(path))
    return kept
