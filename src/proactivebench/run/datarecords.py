"""What data a run played, as `run.json` records it (`data_records`), and the one rule that
tells whether two runs played the same data.

    "data_records": {"ROD": "sha256:…", "QD": "sha256:…"}

Per scenario the run played, the digest of its record file (`record_file_digest`, the digest a
`data filter` file carries): sample ids name samples of one data set only, so a run resumed on
other records, or two runs set side by side (`report --vs`, `data filter`, `train compare`),
would pair or mix other samples under the same ids, unsaid. The path alone is not the data: a
moved copy is the same data, and a folder generated again in place is not. A run recorded
before this key existed has no digests; it is told by its `data_dir` alone, as before.
It is a record, not the run's identity: a resume checks it here, never by comparing identities.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from proactivebench.core.errors import RunMismatchError
from proactivebench.core.texts import shown_json
from proactivebench.data.directory import scenario_file
from proactivebench.data.sample_filter import record_file_digest

#: The run.json key.
DATA_RECORDS = "data_records"


def data_records(root: Path, scenarios: Iterable[str]) -> dict[str, str]:
    """The digest of each scenario's record file in `root` (short names), as run.json records
    it; a scenario whose file cannot be read is left out (its reader has said why)."""
    found = {}
    for short in scenarios:
        try:
            found[short] = record_file_digest(scenario_file(root, short))
        except OSError:
            continue
    return found


def records_of(config: Mapping[str, Any]) -> dict[str, str] | None:
    """The digests a run.json records, or None: a run recorded before they were (or a record
    of another shape, which tells nothing)."""
    value = config.get(DATA_RECORDS)
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def changed_since(config: Mapping[str, Any], now: Mapping[str, str]) -> list[str]:
    """The scenarios whose records, as `now` digests them (`data_records` of the data at
    hand), differ from those run.json's `config` says were played; none where it recorded
    no digest (nothing to compare)."""
    before = records_of(config) or {}
    return sorted(s for s, digest in now.items() if before.get(s, digest) != digest)


def joined_records(
    previous: Mapping[str, Any] | None, mine: Mapping[str, str], out: Path, data_dir: Path
) -> dict[str, str]:
    """What a resumed run records: the digests it recorded before, with this invocation's. A
    scenario whose records differ from those the run played is refused, naming the file: its
    lines and the new ones would be of two data sets under one set of ids. A run that recorded
    no digests resumes as before (nothing to compare)."""
    before = records_of(previous or {}) or {}
    changed = changed_since(previous or {}, mine)
    if changed:
        files = ", ".join(str(scenario_file(data_dir, s)) for s in changed)
        raise RunMismatchError(
            f"cannot resume {out}: the records it played changed since ({files} differ from "
            f"the {', '.join(changed)} records in {out / 'run.json'}), so its lines and new "
            "ones would be of two data sets. Use another --out for a run on this data, or "
            "restore the data the run played"
        )
    return {**before, **mine}


def other_data(
    config: Mapping[str, Any],
    other: Mapping[str, Any],
    lines: tuple[Iterable[Mapping[str, Any]], Iterable[Mapping[str, Any]]] | None = None,
) -> str | None:
    """Why two runs did not play the same data (None: they did), by one rule: where both record
    the digests of their record files, a scenario both played whose digests differ; else (a run
    recorded before digests were) a different `data_dir`. Given both runs' result `lines` (the
    readers that pair episodes: `report --vs`, `train compare`), a run that records no data at
    all (an import whose log does not name it) is told by them instead (`other_samples`), and
    so is every pair: a sample both played whose answer differs is another sample."""
    mine, theirs = records_of(config), records_of(other)
    where, elsewhere = config.get("data_dir"), other.get("data_dir")
    if mine is not None and theirs is not None:
        differ = sorted(s for s in mine.keys() & theirs.keys() if mine[s] != theirs[s])
        if differ:
            return f"the {', '.join(differ)} records differ"
    # A run that records no data is told by its lines, where they are given.
    elif where != elsewhere and (lines is None or None not in (where, elsewhere)):
        return f"data {shown_json(where)} vs {shown_json(elsewhere)}"
    return None if lines is None else other_samples(*lines)


def other_samples(
    lines: Iterable[Mapping[str, Any]], other: Iterable[Mapping[str, Any]]
) -> str | None:
    """Why two runs' lines are not of the same samples (None: every sample both hold has the
    same answer, `correct_category`, in both): an id of another data set names another sample."""
    answers = {
        (x.get("scenario"), x.get("sample_id")): x["correct_category"]
        for x in lines
        if x.get("correct_category") is not None
    }
    differ = [
        (key, answers[key], x["correct_category"])
        for x in other
        if x.get("correct_category") is not None
        and (key := (x.get("scenario"), x.get("sample_id"))) in answers
        and answers[key] != x["correct_category"]
    ]
    if not differ:
        return None
    (scenario, sample), one, two = differ[0]
    return (
        f"{len(differ)} sample(s) both played have another answer (the first: {scenario} sample "
        f"{sample}, {shown_json(one)} vs {shown_json(two)})"
    )
