"""Benchmark metrics of docs/protocol.md §4 and §6.

MCQA, per scenario: accuracy = mean(correct) x 100 and ps rate = mean(turns - 1), the mean
number of proactive suggestions per episode (a count, not a percentage). Each rate is the mean
of one episode score (`accuracy_score`, `ps_rate_score`, ...), defined here only. Open-ended
generation, per scenario: the rates (mean x 100) of episodes whose judged answer holds a
proactive suggestion (ps), a correct category (cp), or either (aggregate), the judges'
agreement (none with a single vote: one vote agrees with itself, which says nothing), the share
of judge votes that held no readable verdict (unparsed) and how many lines the latest judge
could not judge (unjudged). Episodes that ended in an error are counted apart and never scored
as wrong; a scenario with none scored has no rates (None). The average row is the unweighted
mean over the scenarios that have rates, as the paper reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from proactivebench.registry import paper_scenarios, scenario_order
from proactivebench.results import is_oeg_line


@dataclass(frozen=True)
class ScenarioScore:
    n: int
    #: MCQA: accuracy (%) and ps rate (suggestions per episode); None for an OEG run.
    accuracy: float | None = None
    ps_rate: float | None = None
    errors: int = 0
    #: OEG: % of episodes with a proactive suggestion, a correct category, either; the mean
    #: share of judge votes that agreed with the majority. None for an MCQA run.
    ps: float | None = None
    cp: float | None = None
    aggregate: float | None = None
    agreement: float | None = None
    #: OEG: % of judge votes whose output held no readable verdict (scored 0, as the reference
    #: scores them); lines may predate the record and then do not count.
    unparsed: float | None = None
    #: OEG: lines the latest judge could not judge (its call failed): those that kept an
    #: earlier judge's verdict and those left with no verdict (also in `errors`).
    unjudged: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


_RATES = ("accuracy", "ps_rate", "ps", "cp", "aggregate", "agreement", "unparsed")


@dataclass
class Summary:
    model: str
    scenarios: dict[str, ScenarioScore] = field(default_factory=dict)

    @property
    def oeg(self) -> bool:
        """An open-ended run's summary, even when no line of it was scored."""
        return any(
            s.aggregate is not None or s.unjudged is not None for s in self.scenarios.values()
        )

    @property
    def unjudged(self) -> int:
        """Lines the latest judge could not judge, over every scenario."""
        return sum(s.unjudged or 0 for s in self.scenarios.values())

    @property
    def average(self) -> ScenarioScore | None:
        scored = [s for s in self.scenarios.values() if s.n]
        if not scored:
            return None
        means: dict[str, float | None] = {}
        for name in _RATES:
            values = [getattr(s, name) for s in scored if getattr(s, name) is not None]
            means[name] = sum(values) / len(values) if values else None
        return ScenarioScore(
            n=sum(s.n for s in scored),
            errors=sum(s.errors for s in self.scenarios.values()),
            unjudged=self.unjudged if self.oeg else None,
            **means,  # type: ignore[arg-type]
        )

    @property
    def covered(self) -> list[str]:
        """The scenarios the average covers: those with at least one scored episode."""
        return [name for name, score in self.scenarios.items() if score.n]

    @property
    def average_label(self) -> str:
        """The average row's name: which scenarios it covers, unless all seven."""
        missing = [name for name, score in self.scenarios.items() if not score.n]
        return average_label(self.covered, missing)

    def as_dict(self) -> dict[str, Any]:
        average = self.average
        return {
            "model": self.model,
            "scenarios": {k: v.as_dict() for k, v in self.scenarios.items()},
            "average": average.as_dict() if average else None,
        }


def average_label(covers: Sequence[str], missing: Sequence[str] = ()) -> str:
    """ "average" over all seven scenarios; otherwise which scenarios the average covers
    (and those that had no value), so that averages over different sets are never read as
    alike."""
    if not missing and sorted(covers) == sorted(paper_scenarios()):
        return "average"
    shown = f"average of {len(covers)} ({', '.join(covers) or 'none'}"
    return shown + (f"; no {', '.join(missing)})" if missing else ")")


# ----- the score of one episode ----------------------------------------------------------------
#
# Each rate is the mean of its scored episodes' scores, and these functions are its one
# definition: `summarize` (summary.json, the terminal), the report (report.measures, with
# intervals) and the Inspect adapter all average them. A score is on the scale shown: 100 or
# 0 for a percentage, a count for the ps rate. A line missing a field scores as if it were 0.

Line = Mapping[str, Any]


def accuracy_score(line: Line) -> float:
    """MCQA accuracy (%): 100 for an episode that ended on the correct category, else 0."""
    return 100.0 if line.get("correct") else 0.0


def ps_rate_score(line: Line) -> float:
    """MCQA ps rate: the episode's proactive suggestions (accepted interventions), turns - 1."""
    return float(line.get("num_turns", 0) - 1)


def ps_score(line: Line) -> float:
    """OEG ps (%): 100 when the judge found a proactive suggestion in the answer, else 0."""
    return 100.0 * float(line.get("proactive_suggestion") or 0)


def cp_score(line: Line) -> float:
    """OEG cp (%): 100 when the judge found the correct category in the answer, else 0."""
    return 100.0 * float(line.get("category_prediction") or 0)


def aggregate_score(line: Line) -> float:
    """OEG aggregate (%): 100 when the answer holds either, else 0."""
    return 100.0 * float(line.get("aggregate") or 0)


def agreement_score(line: Line) -> float | None:
    """OEG judges' agreement (%): the share of votes that agreed with the majority; None (the
    line does not count) when no agreement was recorded or the line had a single vote (its
    agreement with itself, 100 %, would read as a finding)."""
    if "judge_agreement" not in line or len(line.get("judge_outputs") or ()) < 2:
        return None
    return 100.0 * line["judge_agreement"]


def unparsed_score(line: Line) -> float | None:
    """OEG unparsed (%): the share of the line's judge votes whose output held no readable
    verdict (`judge_parsed`); None for a line that does not record it."""
    parsed = line.get("judge_parsed")
    if not isinstance(parsed, list) or not parsed:
        return None
    return 100.0 * sum(p is not True for p in parsed) / len(parsed)


def is_unjudged(line: Line) -> bool:
    """Whether the latest judge could not judge the line: its call failed, and the line kept
    an earlier verdict (`judge_error`) or has none (an error of the judge)."""
    error = line.get("error")
    return bool(line.get("judge_error")) or (isinstance(error, str) and error.startswith("judge: "))


#: The rates of `ScenarioScore` and the episode score each is the mean of.
MCQA_SCORES: dict[str, Callable[[Line], float | None]] = {
    "accuracy": accuracy_score,
    "ps_rate": ps_rate_score,
}
OEG_SCORES: dict[str, Callable[[Line], float | None]] = {
    "ps": ps_score,
    "cp": cp_score,
    "aggregate": aggregate_score,
    "agreement": agreement_score,
    "unparsed": unparsed_score,
}


def episode_scores(line: Line, oeg: bool = False) -> dict[str, float]:
    """Every score of one scored episode (a line without an error), by rate name: accuracy
    and ps_rate for MCQA; ps, cp, aggregate and, when recorded, agreement and unparsed for
    OEG."""
    scores = {key: score(line) for key, score in (OEG_SCORES if oeg else MCQA_SCORES).items()}
    return {key: value for key, value in scores.items() if value is not None}


def rate(score: Callable[[Line], float | None], lines: Iterable[Line]) -> float | None:
    """The mean of `score` over `lines` (scored episodes), leaving out those it gives None.
    None for no values: a scenario whose episodes all ended in errors has no rate (shown as
    "—"), never 0."""
    values = [v for v in map(score, lines) if v is not None]
    return sum(values) / len(values) if values else None


def summarize(results: Iterable[dict[str, Any]], model: str = "") -> Summary:
    """Score result lines (as in `results.jsonl`) per scenario, in the paper's order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault(r["scenario"], []).append(r)
    summary = Summary(model=model)
    for short in scenario_order(groups):
        lines = groups[short]
        ok = [r for r in lines if not r.get("error")]
        # Open-ended generation, judged: an OEG line says so even when it holds only an error.
        oeg = any(map(is_oeg_line, lines))
        rates = {
            key: rate(score, ok) for key, score in (OEG_SCORES if oeg else MCQA_SCORES).items()
        }
        summary.scenarios[short] = ScenarioScore(
            n=len(ok),
            errors=len(lines) - len(ok),
            unjudged=sum(map(is_unjudged, lines)) if oeg else None,
            **rates,
        )
    return summary
