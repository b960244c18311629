"""`train compare`: what training changed, on the scenarios it saw and on those it did not.

The paper's claim is that proactiveness learned on some scenarios carries over to unseen ones,
so the comparison splits the per-scenario gains of two eval runs (base model, tuned model)
into seen and held-out scenarios. Which scenarios were seen comes from the tuned model's
`train_run.json` (written by `train grpo` beside the weights) when the tuned run evaluated a
`hf:DIR` model, or from an explicit held-out list. Scores are `metrics.summarize` of each run's
latest results, so they are the numbers `eval` prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proactivebench.benchmark.metrics import ScenarioScore, summarize
from proactivebench.benchmark.paper_results import paper_table
from proactivebench.benchmark.results import is_oeg_line
from proactivebench.core.errors import (
    DamagedRunError,
    NotARunDirError,
    NothingToDoError,
    ProactiveBenchError,
    RunMismatchError,
)
from proactivebench.core.texts import loads
from proactivebench.report.runs import earlier_verdict
from proactivebench.run.datarecords import other_data
from proactivebench.run.rundir import RUN_CONFIG, RunLines, identity_differences, run_lines
from proactivebench.train.examples import parse_holdout
from proactivebench.train.grpo import RUN_FILE, read_run_file
from proactivebench.train.recipe import proactive_rewards

if TYPE_CHECKING:
    from proactivebench.report.findings import Finding


@dataclass(frozen=True)
class ScenarioGain:
    scenario: str
    #: Trained on (True) or held out (False).
    seen: bool
    base: ScenarioScore
    tuned: ScenarioScore

    @property
    def accuracy_gain(self) -> float:
        return (self.tuned.accuracy or 0.0) - (self.base.accuracy or 0.0)

    @property
    def ps_gain(self) -> float:
        return (self.tuned.ps_rate or 0.0) - (self.base.ps_rate or 0.0)


@dataclass(frozen=True)
class Comparison:
    base_model: str
    tuned_model: str
    rows: list[ScenarioGain]
    #: Where the split into seen and held-out scenarios came from.
    split_source: str
    #: What the user should know: different data or settings, episodes left out.
    notes: list[str] = field(default_factory=list)
    #: Episodes of either run the other did not play (left out of every row).
    left_out: int = 0
    #: The two runs as read (base, tuned), for `not_comparable_notes`.
    runs: tuple[EvalRun, EvalRun] | None = field(default=None, repr=False, compare=False)

    def mean_gain(self, seen: bool) -> tuple[float, float] | None:
        """Unweighted mean accuracy and ps-rate gains over the seen (or held-out) scenarios."""
        rows = [r for r in self.rows if r.seen == seen]
        if not rows:
            return None
        return (
            sum(r.accuracy_gain for r in rows) / len(rows),
            sum(r.ps_gain for r in rows) / len(rows),
        )

    def as_dict(self) -> dict[str, Any]:
        def gains(seen: bool) -> dict[str, float] | None:
            mean = self.mean_gain(seen)
            return None if mean is None else {"accuracy": mean[0], "ps_rate": mean[1]}

        return {
            "base_model": self.base_model,
            "tuned_model": self.tuned_model,
            "split_source": self.split_source,
            "notes": self.notes,
            "scenarios": {
                r.scenario: {
                    "seen": r.seen,
                    "base": r.base.as_dict(),
                    "tuned": r.tuned.as_dict(),
                    "accuracy_gain": r.accuracy_gain,
                    "ps_gain": r.ps_gain,
                }
                for r in self.rows
            },
            "seen_gain": gains(True),
            "held_out_gain": gains(False),
        }


@dataclass(frozen=True)
class EvalRun:
    """One eval run as compare reads it: its directory, run.json and latest result lines."""

    path: Path
    config: dict[str, Any]
    lines: list[dict[str, Any]]
    #: The lines of results.jsonl no reader counts (`rundir.run_lines`), each `file:line: why`.
    rejected: list[str] = field(default_factory=list)

    @property
    def model(self) -> str:
        return str(self.config.get("model", ""))


def _read_run(run_dir: Path) -> EvalRun:
    path = run_dir / RUN_CONFIG
    try:
        config = loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotARunDirError(f"{run_dir} is not an eval run directory (no {RUN_CONFIG})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DamagedRunError(f"{path} is damaged ({exc}); cannot compare this run") from None
    if not isinstance(config, dict):
        raise DamagedRunError(f"{path} is damaged (not a JSON object); cannot compare this run")
    # The readers' one rule (`run_lines`): a pasted or hand-edited line `report` leaves out is
    # left out of the gains too, and named.
    found = run_lines(Path(run_dir), config)
    lines = found.lines
    if not lines:
        raise NothingToDoError(f"{run_dir}: no results to compare")
    if any(map(is_oeg_line, lines)):
        raise ProactiveBenchError(f"{run_dir}: an open-ended run; compare needs MCQA runs")
    return EvalRun(Path(run_dir), config, [dict(line) for line in lines], found.rejected)


def _key(line: dict[str, Any]) -> tuple[str, Any]:
    return (str(line.get("scenario")), line.get("sample_id"))


def shared_lines(base: EvalRun, tuned: EvalRun) -> tuple[list[Any], list[Any], list[str]]:
    """The two runs' results on the episodes both played, and warnings on what differs: the
    settings, and the scenarios or samples only one run has (left out). Runs played on other
    data are refused."""
    notes = []
    why = other_data(base.config, tuned.config, (base.lines, tuned.lines))
    if why is not None:
        # The rule `data filter`, `merge` and `report --vs` apply: another data set's ids
        # name other samples, and gains over them would pair unrelated episodes.
        raise RunMismatchError(
            f"{base.path} and {tuned.path} were played on other data ({why}): their episodes "
            "are not the same samples under the same ids; compare runs played on the same data"
        )
    changes = identity_differences(base.config.get("settings"), tuned.config.get("settings"))
    if changes:
        notes.append(f"the runs used different eval settings ({'; '.join(changes)})")
    for run in (base, tuned):
        # A re-judged run whose judge could not replace some verdicts: its rates mix two
        # judges, as report, --vs and the Hub card say (`report.runs.earlier_verdict`).
        judge = (run.config.get("settings") or {}).get("judge")
        kept = sum(1 for line in run.lines if earlier_verdict(line, judge))
        if kept:
            notes.append(
                f"{kept} line(s) of {run.path} keep an earlier judge's verdict, not the verdict "
                "of the judge its run.json names: its rates mix two judges"
            )
    base_keys = {_key(line) for line in base.lines}
    tuned_keys = {_key(line) for line in tuned.lines}
    played = base_keys & tuned_keys
    for run, keys in ((base, base_keys), (tuned, tuned_keys)):
        dropped = keys - played
        if dropped:
            scenarios = sorted({s for s, _ in dropped})
            notes.append(
                f"{len(dropped)} episode(s) of {run.path} ({', '.join(scenarios)}) are not in "
                "the other run and are left out"
            )
    # An episode that ended in an error has no score: left out of both runs, or each side's
    # rates would be over other episodes (the tuned run's errors out of n, the base's in).
    failed = {_key(line) for run in (base, tuned) for line in run.lines if line.get("error")}
    shared = played - failed
    if played & failed:
        scenarios = sorted({s for s, _ in played & failed})
        notes.append(
            f"{len(played & failed)} episode(s) ended in an error in one run or both "
            f"({', '.join(scenarios)}) and are left out of both"
        )
    return (
        [line for line in base.lines if _key(line) in shared],
        [line for line in tuned.lines if _key(line) in shared],
        notes,
    )


def model_directory(spec: str, run: EvalRun) -> Path | None:
    """The directory of a `hf:DIR` model spec. A relative DIR is relative to wherever eval
    ran; run.json does not say where, so it is looked for from the current directory, then
    from the folders above the run directory and above its data directory (eval is usually
    run from one folder holding all three)."""
    if not spec.startswith("hf:"):
        return None
    given = Path(spec[3:]).expanduser()
    if given.is_absolute():
        return given
    bases = [Path.cwd(), *run.path.resolve().parents]
    data_dir = run.config.get("data_dir")
    if isinstance(data_dir, str):
        bases += list(Path(data_dir).parents)
    for base in dict.fromkeys(bases):
        if (base / given / RUN_FILE).is_file():
            return base / given
    return None


def trained_scenarios(
    model_spec: str, run: EvalRun | None = None
) -> tuple[list[str], list[str], Path] | None:
    """(trained on, held out, where) from `train_run.json` of a `hf:DIR` model, if it has one."""
    if run is None:
        where = Path(model_spec[3:]) if model_spec.startswith("hf:") else None
    else:
        where = model_directory(model_spec, run)
    if where is None:
        return None
    record = read_run_file(where)
    if record is None:
        return None
    return list(record.get("trained_on") or []), list(record.get("held_out") or []), where


def compare_runs(base_dir: Path, tuned_dir: Path, holdout: str | None = None) -> Comparison:
    """Per-scenario gains from `base_dir` to `tuned_dir`, split into seen and held-out, over
    the episodes both runs played."""
    base_run, tuned_run = _read_run(Path(base_dir)), _read_run(Path(tuned_dir))
    base_lines, tuned_lines, notes = shared_lines(base_run, tuned_run)
    notes = [*base_run.rejected, *tuned_run.rejected, *notes]
    if not base_lines:
        raise NothingToDoError("the two runs share no episode (scenario and sample id)")
    base = summarize(base_lines, model=base_run.model).scenarios
    tuned = summarize(tuned_lines, model=tuned_run.model).scenarios
    if holdout is not None:
        held = set(parse_holdout(holdout))
        source = "--holdout"
    else:
        split = trained_scenarios(tuned_run.model, tuned_run)
        if split is None:
            raise ProactiveBenchError(
                f"{tuned_dir}: its model ({tuned_run.model}) has no train_run.json saying what "
                "was held out; name the held-out scenarios with --holdout"
            )
        trained_on, _, where = split
        held = {s for s in tuned if s not in trained_on}
        source = str(where / RUN_FILE)
    rows = [ScenarioGain(s, s not in held, base[s], tuned[s]) for s in tuned if s in base]
    left_out = len(base_run.lines) + len(tuned_run.lines) - 2 * len(base_lines)
    return Comparison(
        base_run.model, tuned_run.model, rows, source, notes, left_out, (base_run, tuned_run)
    )


# ----- the paper's Table 3 beside the runs -------------------------------------------------------

PAPER_TABLE = "table3_grpo"
AVERAGE = "avg"


@dataclass(frozen=True)
class ScoreRow:
    """One row of Table 3's layout: accuracy (%) and ps rate per column (a scenario or `avg`),
    None where the paper printed '-' or the run has no such scenario."""

    label: str
    #: "paper" (a row of the paper's Table 3) or "run" (the user's base or tuned run).
    source: str
    cells: dict[str, tuple[float | None, float | None]]


def paper_columns() -> list[str]:
    """Table 3's columns in the order the paper prints them (in-domain first, `avg` last)."""
    return list(paper_table(PAPER_TABLE)["printed_column_order"])


def paper_rows() -> list[ScoreRow]:
    """Table 3's rows as the paper prints them: per model, the original, rp = 0.5 / 0.75 / 1.0
    and the reference (read from `paper_results.json`)."""
    rows = []
    for row in paper_table(PAPER_TABLE)["rows"]:
        cells = {
            column: (values.get("acc"), values.get("psr"))
            for column, values in row["cells"].items()
        }
        label = f"{row.get('printed_model') or row['model']}: {row['config']}"
        rows.append(ScoreRow(label, "paper", cells))
    return rows


def run_row(label: str, scores: dict[str, ScenarioScore], columns: list[str]) -> ScoreRow:
    """A run's scores in Table 3's columns; `avg` is the unweighted mean over the scenarios of
    those columns that the run has (the paper's over all seven), as the paper averages."""
    cells: dict[str, tuple[float | None, float | None]] = {}
    for column in columns:
        score = scores.get(column)
        if column != AVERAGE and score is not None:
            cells[column] = (score.accuracy, score.ps_rate)
    if cells:
        accuracies = [acc for acc, _ in cells.values() if acc is not None]
        rates = [psr for _, psr in cells.values() if psr is not None]
        cells[AVERAGE] = (
            sum(accuracies) / len(accuracies) if accuracies else None,
            sum(rates) / len(rates) if rates else None,
        )
    return ScoreRow(label, "run", cells)


def beside_paper(comparison: Comparison) -> tuple[list[str], list[ScoreRow]]:
    """Table 3's columns, its rows, then the comparison's base and tuned runs in the same
    columns (on the episodes both runs played)."""
    columns = paper_columns()
    base = {r.scenario: r.base for r in comparison.rows}
    tuned = {r.scenario: r.tuned for r in comparison.rows}
    rows = [
        *paper_rows(),
        run_row(f"base: {comparison.base_model}", base, columns),
        run_row(f"tuned: {comparison.tuned_model}", tuned, columns),
    ]
    return columns, rows


#: The table whose setting Table 3's rows were evaluated in: plain multiple choice on the
#: official test set.
TABLE3_SETTING = "table1_mcqa"


def not_comparable_notes(comparison: Comparison) -> list[str]:
    """Why the rows set beside Table 3 are not comparable with its rows, one line each: a run
    that is not (generated data, partial, settings the table does not have: `report.comparable`,
    the one place that decides it for every table beside the paper's, asked of the runs as
    `compare_runs` read them); rows over only the episodes both runs played; an `avg` over
    other scenarios than Table 3's seven."""
    from proactivebench.benchmark.registry import paper_scenarios
    from proactivebench.report.comparable import not_comparable
    from proactivebench.report.published import counterpart, table_number
    from proactivebench.report.runs import load_run

    assert comparison.runs is not None, "a Comparison of compare_runs"
    notes = []
    for role, run in zip(("base", "tuned"), comparison.runs, strict=True):
        loaded = load_run(run.path, RunLines(run.lines, run.rejected))
        reasons = not_comparable(loaded)
        # Table 3 evaluates as Table 1 does: plain multiple choice on the official test set,
        # the rule report --paper places runs by (`report.published.counterpart`).
        placed = counterpart(loaded)
        if placed != TABLE3_SETTING:
            where = f"{table_number(placed)}'s" if placed else "no table's of the paper"
            reasons.append(
                f"settings the table does not have: its settings are {where}, where Table 3 "
                f"evaluates as {table_number(TABLE3_SETTING)} does"
            )
        if reasons:
            notes.append(
                f"{role} run {run.path} is not comparable with Table 3's rows: "
                + "; ".join(reasons)
            )
    if comparison.left_out:
        notes.append(
            f"the base and tuned rows are over the episodes both runs played "
            f"({comparison.left_out} episode(s) of one run only are left out), not over either "
            "run whole"
        )
    covered = [row.scenario for row in comparison.rows]
    table = paper_scenarios()
    if sorted(covered) != sorted(table):
        notes.append(
            f"the runs' avg covers {', '.join(covered)}; Table 3's covers all {len(table)} "
            f"({', '.join(table)}): their averages are of other terms"
        )
    return notes


def training_finding(comparison: Comparison, rp: float | None = None) -> Finding | None:
    """The paper's finding (v) on the comparison's two runs (`report.findings.
    training_finding`): tuned - base, paired, on the seen and the held-out scenarios, beside
    Table 3's change for proactive reward `rp` (default: the one the tuned model's
    train_run.json records its recipe trained with, else the recipe's default)."""
    from proactivebench.report.findings import training_finding as finding_of
    from proactivebench.report.runs import load_run

    assert comparison.runs is not None, "a Comparison of compare_runs"
    base, tuned = (load_run(run.path, RunLines(run.lines, run.rejected)) for run in comparison.runs)
    base.label, tuned.label = "base", "tuned"
    seen = [row.scenario for row in comparison.rows if row.seen]
    if rp is None:
        rp = recorded_proactive_reward(comparison)
    return finding_of(base, tuned, seen, rp=rp)


def recorded_proactive_reward(comparison: Comparison) -> float | None:
    """The `rp` the tuned model was trained with, as its train_run.json's recipe records it
    (None: no record, or no recipe), so that the finding stands beside Table 3's row of it."""
    assert comparison.runs is not None, "a Comparison of compare_runs"
    tuned = comparison.runs[1]
    where = model_directory(tuned.model, tuned)
    record = read_run_file(where) if where is not None else None
    recipe = (record or {}).get("recipe")
    value = recipe.get("proactive_reward") if isinstance(recipe, dict) else None
    if isinstance(value, int | float) and value in proactive_rewards():
        return float(value)
    return None
