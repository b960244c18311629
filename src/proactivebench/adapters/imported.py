"""What every importer (`import-inspect`, `import-lmms-eval`) does alike once it has the lines of
a log: refuse an episode the log holds twice, write the run, and summarize what the readers
count, so that the table an import ends with is the one `report` gives for the imported run.

An importer copies lines another harness kept; two lines of one episode (logs of two runs
given together, a sample logged twice) cannot both be the run's, and which one counts is not
ours to guess: the import is refused, naming both. What an importer leaves out of a log on
purpose (Inspect's later epochs) is counted in `left_out` and said in one line.

A harness also kept its own per-episode scores beside the line: they are recomputed from the
copied line (`metrics.episode_scores`, as the harness's task computed them) and a disagreement
refuses the import, naming both values: the line was changed after the harness scored it, or
the score was, and which the harness's table counted is not ours to guess either.

Nothing is written until every line and run.json are known writable (a NaN or an infinite
number, which JSON cannot hold, is refused naming where and the field): a run folder half
written by a refused import would refuse the good log afterwards ("exists").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from proactivebench.benchmark.metrics import Summary, episode_scores, headline_metrics, summarize
from proactivebench.benchmark.results import is_oeg_line, result_key, result_order
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.core.paths import write_whole
from proactivebench.core.texts import NotJSONError, dumps
from proactivebench.run.datarecords import records_of
from proactivebench.run.rundir import (
    RESULTS,
    RunLock,
    claim_run_dir,
    jsonl,
    provenance_of,
    read_run_config,
    refuse_rejected,
    run_lines,
    without_provenance,
    write_run_config,
    write_summary,
)
from proactivebench.run.selection_record import Selection, played_keys

#: A line and where it was found in the log (`file:line`, `sample 'ROD-3'`).
Found = tuple[str, dict[str, Any]]


def refuse_twice(found: Sequence[Found], source: str) -> None:
    """Refuse lines that hold one episode twice, naming the episode, where each was found and
    whether they contradict; nothing is written. `source`: the log(s), for the message."""
    first_at: dict[tuple[str, int], Found] = {}
    for where, line in found:
        key = result_key(line)
        if key not in first_at:
            first_at[key] = (where, line)
            continue
        before, earlier = first_at[key]
        same = "the same result" if earlier == line else "different results"
        raise ProactiveBenchError(
            f"an episode twice in {source}: {key[0]} sample {key[1]} at {before} and at "
            f"{where}, with {same} (logs of two runs?); nothing imported"
        )


def score_problem(scores: Mapping[str, Any], line: dict[str, Any]) -> str | None:
    """What a harness's per-episode `scores` (by rate name, on the 0-1 scale of a percentage,
    as `episode_scores(fractions=True)` gives them) say that the copied `line` does not; None
    when they agree. A name that is no rate of ours is not compared."""
    ours = episode_scores(line, is_oeg_line(line), fractions=True)
    rates = {m.key for m in headline_metrics(False) + headline_metrics(True)}
    for key, theirs in scores.items():
        if key not in rates:
            continue
        mine = ours.get(key)
        if not _same_score(theirs, mine):
            shown = "none" if mine is None else repr(mine)
            return f"the harness scored {key} = {theirs!r}, its result line gives {shown}"
    return None


def _same_score(theirs: Any, mine: float | None) -> bool:
    """Equal up to float rounding; a score that is no number never agrees."""
    if mine is None or isinstance(theirs, bool) or not isinstance(theirs, int | float):
        return False
    return math.isclose(theirs, mine, rel_tol=1e-9, abs_tol=1e-12)


def write_imported(
    out: Path,
    identity: dict[str, Any],
    found: Sequence[Found],
    model: str,
    synthetic: bool = False,
    selected: Iterable[tuple[str, int]] = (),
) -> Summary:
    """Write the lines `found` as the run `identity` in `out` (results.jsonl in the paper's
    order, run.json, summary.json) and return the summary of the lines as every reader counts
    them (`run_lines`), the one eval and report give. run.json's selection holds the episodes
    the harness `selected` (what its task listed) and those the lines hold: an episode selected
    and not in the log makes every reader say "partial"; what the data offered is not known.
    `synthetic` when the log names generated data. `found`'s places name a line refused as
    unwritable."""
    lines = [line for _, line in found]
    # Rendered before anything is written: a line JSON cannot hold refuses the import whole.
    for where, line in found:
        _refuse_unwritable(line, where)
    _refuse_unwritable(identity, "the run's run.json")
    text = jsonl(sorted(lines, key=result_order))
    with RunLock(out):
        claim_run_dir(out, identity)
        # A line pasted in later, of an episode the harness did not select, is named by every
        # reader; a selected episode the log lacks is counted short by every reader.
        config = read_run_config(out)
        held = played_keys([*selected, *(result_key(line) for line in lines)])
        chosen = Selection(held.scenarios, held.shard, synthetic)
        write_run_config(
            out, without_provenance(config), provenance_of(config), chosen, records_of(config)
        )
        write_whole(out / RESULTS, text)
        found_lines = run_lines(out, read_run_config(out))
        refuse_rejected(found_lines.rejected, f"{out / RESULTS} holds lines no reader counts")
        summary = summarize(found_lines.lines, model=model)
        write_summary(out, summary)
    return summary


def _refuse_unwritable(value: Any, where: str) -> None:
    """Refuse `value` when JSON cannot hold it, naming `where` and the field (`bonus.x`)."""
    try:
        dumps(value)
    except NotJSONError:
        field = _non_finite(value)
        shown = f"{field[0]} is {field[1]!r}" if field else "a number is not finite"
        raise ProactiveBenchError(
            f"{where}: {shown}, which JSON cannot hold (NaN or infinite); nothing imported"
        ) from None


def _non_finite(value: Any) -> tuple[str, float] | None:
    """The first NaN or infinite number in `value` and its place ("trace.0.answer"), walked
    without recursion (any depth)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        place, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return place or "the value", item
        children: Iterable[tuple[Any, Any]] = ()
        if isinstance(item, dict):
            children = item.items()
        elif isinstance(item, list | tuple):
            children = enumerate(item)
        stack.extend(
            (f"{place}.{key}" if place else str(key), child)
            for key, child in reversed(list(children))
        )
    return None


def decoded_as_asked(
    declared: Mapping[str, Any], asked: Mapping[str, Any], names: Mapping[str, str]
) -> dict[str, Any]:
    """The decoding a harness asked the model with: the run's declared decoding (run.json's
    `settings.decoding`) with what the harness's own settings override (`asked`: Inspect's
    GenerateConfig, lmms-eval's generation_kwargs, whose keys `names` maps to ours). The one
    rule of both importers: a run recorded as decoded by the protocol when the harness's
    command line sampled would be read as such by every reader."""
    played = dict(declared)
    for theirs, ours in names.items():
        value = asked.get(theirs)
        if isinstance(value, int | float) and not isinstance(value, bool):
            played[ours] = value
    return played if played != dict(declared) else dict(declared)


def left_out_text(left_out: Counter[str], source: str) -> str | None:
    """One line on what an import left out of `source` (`left_out`: how many of each kind, by
    what they are); None when it left out nothing."""
    if not left_out:
        return None
    kinds = ", ".join(f"{count} {what}" for what, count in left_out.items())
    return f"left out of {source}: {kinds}"
