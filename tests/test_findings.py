"""The paper's findings on one model's runs (issue 48, `report/findings.py`).

Each statistic is checked against a value known by construction: result lines written by hand
(`paperruns.mcqa_line`: so many correct, so many suggestions), or a `python:` agent whose
behaviour changes only with the hint, whose effect is computed here by playing the same policy
on the same episodes. Every paper figure shown is computed here again from paper_results.json,
read as a file, never through `paper_results.py`.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from paperruns import mcqa_line, sample_ids, write_run
from proactivebench.benchmark.registry import make_episode
from proactivebench.core.stats import Interval
from proactivebench.data.directory import load_dataset
from proactivebench.data.synth import generate
from proactivebench.report.findings import (
    Finding,
    Statistic,
    finding_line,
    findings_dict,
    rank_among,
    size_finding,
    stated,
    suite_findings,
    training_finding,
)
from proactivebench.report.inert import markdown as md
from proactivebench.report.measures import measure_run
from proactivebench.report.runs import Run, load_run, load_runs

PAPER = json.loads(
    (Path(__file__).parents[1] / "src/proactivebench/spec/paper_results.json").read_text()
)
TABLES = PAPER["tables"]
#: The models Figs. 3 and 6 average: every model but GPT-5.2 (PAPER_AUDIT.md §2).
NOT_IN_FIGURES = {"GPT-5.2"}


def row_mean(table: str, model: str, metric: str, scenarios: list[str]) -> float:
    cells = next(r["cells"] for r in TABLES[table]["rows"] if r["model"] == model)
    return sum(cells[s][metric] for s in scenarios) / len(scenarios)


def paper_differences(
    table: str, base: str, metric: str, scenarios: list[str], figure_subset: bool
) -> list[float]:
    """Each paper model's `table` - `base` on `metric`, its mean over `scenarios`."""
    models = [r["model"] for r in TABLES[table]["rows"]]
    bases = {r["model"] for r in TABLES[base]["rows"]}
    return [
        row_mean(table, m, metric, scenarios) - row_mean(base, m, metric, scenarios)
        for m in models
        if m in bases and not (figure_subset and m in NOT_IN_FIGURES)
    ]


def run_of(root: Path, name: str, lines: list[dict[str, Any]], **settings: Any) -> Run:
    run = load_run(write_run(root, name, lines, "m", settings))
    run.label = name
    return run


def by_name(findings: list[Finding], ident: str) -> Finding:
    return next(f for f in findings if f.id == ident)


def stat(finding: Finding, name: str) -> Statistic:
    return next(s for s in finding.statistics if s.name == name)


# ----- hand-written runs ------------------------------------------------------------------------

#: Episodes per scenario of the hand-written runs.
N = 40


def plain_lines(scenarios: tuple[str, ...], right: int) -> list[dict[str, Any]]:
    """`right` of N correct per scenario, no suggestion."""
    return [
        mcqa_line(s, sample, i < right, 0)
        for s in scenarios
        for i, sample in enumerate(sample_ids(s, N))
    ]


def test_the_hint_finding_gives_the_constructed_difference_beside_table7_minus_table1(
    tmp_path: Path,
) -> None:
    """mcqa: 10 of 40 right, no suggestion; hint: 22 of 40 right, the first 30 with 2
    suggestions: +30.0 points and +1.50 suggestions per episode in each scenario, so on
    average. The paper's figure is the mean over Fig. 6's models of Table 7 - Table 1 on the
    same two scenarios, and the model's rank is its place among them."""
    scenarios = ("ROD", "QD")
    mcqa = run_of(tmp_path, "mcqa", plain_lines(scenarios, 10))
    hint_lines = [
        mcqa_line(s, sample, i < 22, 2 if i < 30 else 0)
        for s in scenarios
        for i, sample in enumerate(sample_ids(s, N))
    ]
    hint = run_of(tmp_path, "hint", hint_lines, hint=True)
    finding = by_name(suite_findings({"mcqa": mcqa, "hint": hint}), "hint")
    accuracy, ps = stat(finding, "accuracy"), stat(finding, "ps rate")
    assert accuracy.value is not None and ps.value is not None
    assert accuracy.value.estimate == pytest.approx(30.0)
    assert ps.value.estimate == pytest.approx(1.5)
    for value, truth in ((accuracy.value, 30.0), (ps.value, 1.5)):
        assert 0 < value.low <= truth <= value.high
    assert accuracy.episodes == ps.episodes == 2 * N
    assert accuracy.compared == ("hint", "mcqa") and accuracy.scenarios == scenarios
    for s, metric in ((accuracy, "acc"), (ps, "psr")):
        theirs = paper_differences("table7_hint", "table1_mcqa", metric, list(scenarios), True)
        assert s.paper is not None
        assert s.paper.value == pytest.approx(sum(theirs) / len(theirs))
        assert s.paper.models == len(theirs) == 21
    own = accuracy.value.estimate
    theirs = paper_differences("table7_hint", "table1_mcqa", "acc", list(scenarios), True)
    assert accuracy.paper is not None
    assert accuracy.paper.rank == (1 + sum(t > own for t in theirs), len(theirs) + 1)
    # The ps rate has no better direction (a blind asker gains most): no place among them.
    assert ps.paper is not None and ps.paper.rank is None
    assert finding.number == "iii" and not finding.not_comparable
    paper_acc = f"{stat(finding, 'accuracy').paper.value:+.1f}"  # type: ignore[union-attr]
    assert finding.sentence.startswith("With the hint, accuracy +30.0 points [")
    assert "on the same 80 episodes; the paper's models gained accuracy " + paper_acc in (
        finding.sentence
    )
    assert "cannot tell" not in finding.sentence
    json.dumps(findings_dict([finding]))  # JSON-able as it stands


def test_a_change_that_cancels_out_is_one_the_run_cannot_tell(tmp_path: Path) -> None:
    """hint gains 5 episodes and loses 5 others in each scenario, and suggests once in 5
    episodes where mcqa suggested once in 5 others: both differences are 0 by construction,
    their intervals hold 0 and the sentence says the run cannot tell."""
    scenarios = ("ROD", "VSOD")
    base, changed = [], []
    for s in scenarios:
        for i, sample in enumerate(sample_ids(s, N)):
            base.append(mcqa_line(s, sample, i < 5, 1 if 10 <= i < 15 else 0))
            changed.append(mcqa_line(s, sample, 5 <= i < 10, 1 if 15 <= i < 20 else 0))
    findings = suite_findings(
        {
            "mcqa": run_of(tmp_path, "mcqa", base),
            "hint": run_of(tmp_path, "hint", changed, hint=True),
        }
    )
    finding = by_name(findings, "hint")
    for s in finding.statistics:
        assert s.value is not None and s.value.estimate == pytest.approx(0.0)
        assert s.value.low < 0 < s.value.high
    assert finding.sentence.count("which this run cannot tell from no change") == 2
    assert finding.as_dict()["statistics"][0]["undecided"] is True


def test_findings_of_experiments_not_played_are_left_out(tmp_path: Path) -> None:
    mcqa = run_of(tmp_path, "mcqa", plain_lines(("ROD",), 3))
    assert [f.id for f in suite_findings({"mcqa": mcqa})] == ["proactive"]
    assert suite_findings({"hint": mcqa}) == []  # no plain run: nothing to set against
    failed = [{**line, "error": "server down"} for line in mcqa.lines]
    assert suite_findings({"mcqa": run_of(tmp_path / "e", "mcqa", failed), "hint": mcqa}) == []


def test_a_run_without_its_experiments_setting_or_on_other_data_is_not_paired(
    tmp_path: Path,
) -> None:
    """Hostile tryout: a run put in the history folder that has the hint (no history) was
    reported as the history's effect; an experiment played on other data than the plain run
    (records of the same ids, other samples) was paired. Each finding says why instead."""
    lines = plain_lines(("ROD",), 10)
    mcqa = run_of(tmp_path, "mcqa", lines)
    history = run_of(tmp_path, "history", lines, hint=True)
    hint = run_of(tmp_path, "hint", lines, hint=True)
    for run, digest in ((mcqa, "aaa"), (hint, "bbb")):
        run.config["data_records"] = {"ROD": digest}
    found = {f.id: f for f in suite_findings({"mcqa": mcqa, "history": history, "hint": hint})}
    assert found["history"].statistics == ()
    assert found["history"].sentence == (
        "Not computed: history does not have the setting it is named for (history = true)."
    )
    assert found["hint"].statistics == ()
    assert found["hint"].sentence == (
        "Not computed: hint and mcqa were played on other data (the ROD records differ): "
        "not paired."
    )


def test_what_the_episodes_allow_is_not_replayed_on_data_changed_since(tmp_path: Path) -> None:
    """Hostile tryout: the proactive baseline was replayed on whatever data lay at the run's
    path, though its records were no longer those the run played (run.json's digests)."""
    data = tmp_path / "data"
    generate(data, per_scenario=2, seed=1, scenarios=["ROD"])
    mcqa = run_of(tmp_path, "mcqa", plain_lines(("ROD",), 2))
    mcqa.config["data_dir"] = str(data)
    mcqa.config["data_records"] = {"ROD": "a digest of other records"}
    finding = by_name(suite_findings({"mcqa": mcqa}), "proactive")
    assert [s.name for s in finding.statistics] == ["ps rate"]
    assert finding.notes == (
        f"what the episodes allow is not computed: the data at {data} is not what mcqa "
        "played (the ROD records differ)",
    )


def test_history_and_icl_stand_beside_the_figures_printed_averages(tmp_path: Path) -> None:
    """Figs. 8 and 9 print averages only: history's figure is Fig. 8's history average
    minus its zero-shot one (accuracy) and minus the zero-shot ps rate of §4.3's text; ICL's
    is Fig. 9's change on the scenarios the run covers (here ROD alone). No rank: no row per
    model."""
    mcqa = run_of(tmp_path, "mcqa", plain_lines(("ROD",), 10))
    history = run_of(tmp_path, "history", plain_lines(("ROD",), 4), history=True)
    icl = run_of(tmp_path, "icl1", plain_lines(("ROD",), 12), icl=1)
    icl3 = run_of(tmp_path, "icl3", plain_lines(("ROD",), 12), icl=3)
    findings = suite_findings({"mcqa": mcqa, "history": history, "icl1": icl, "icl3": icl3})
    rows = {r["config"]: r["cells"] for r in TABLES["fig8_history"]["rows"]}
    text = next(t for t in PAPER["text_numbers"] if t["where"] == "sec. 4.3 (history)")
    expected = {
        "accuracy": rows["(a) acc, history"]["avg"]["acc"]
        - rows["(a) acc, zero-shot"]["avg"]["acc"],
        "ps rate": rows["(b) psr, history"]["avg"]["psr"] - text["values"]["psr_zero_shot"],
    }
    history_finding = by_name(findings, "history")
    for name, value in expected.items():
        paper = stat(history_finding, name).paper
        assert paper is not None and paper.value == pytest.approx(value) and paper.rank is None
    assert stat(history_finding, "accuracy").value.estimate == pytest.approx(-15.0)  # type: ignore[union-attr]
    assert any("all seven scenarios" in n for n in history_finding.notes)
    nine = {r["config"]: r["cells"] for r in TABLES["fig9_icl"]["rows"]}
    for shots, panel in ((1, "(a) 1 sample"), (3, "(b) 3 samples")):
        shot_finding = by_name(findings, f"icl{shots}")
        for name, metric in (("accuracy", "acc"), ("ps rate", "psr")):
            want = nine[f"{panel}, icl"]["ROD"][metric] - nine[f"{panel}, zero-shot"]["ROD"][metric]
            assert stat(shot_finding, name).paper.value == pytest.approx(want)  # type: ignore[union-attr]
    icl_finding = by_name(findings, "icl1")
    assert stat(icl_finding, "accuracy").value.estimate == pytest.approx(5.0)  # type: ignore[union-attr]
    assert icl_finding.number == history_finding.number == "iv"


def test_the_reference_gap_and_multiturn_stand_beside_their_tables(tmp_path: Path) -> None:
    """mcqa 8 of 40 right, reference 36 of 40: -70.0 points beside the mean of Table 1 -
    Table 6 over Fig. 3's models; oeg-multiturn 2 of 40 right: -15.0 beside Table 10 -
    Table 1 over Table 10's twelve models."""
    scenarios = ("ROD", "COCO")
    mcqa = run_of(tmp_path, "mcqa", plain_lines(scenarios, 8))
    reference = run_of(tmp_path, "reference", plain_lines(scenarios, 36), reference=True)
    multiturn = run_of(tmp_path, "mt", plain_lines(scenarios, 2), mode="oeg-multiturn")
    findings = suite_findings({"mcqa": mcqa, "reference": reference, "oeg-multiturn": multiturn})
    gap = stat(by_name(findings, "proactive"), "accuracy - reference")
    assert gap.value is not None and gap.value.estimate == pytest.approx(-70.0)
    theirs = paper_differences("table1_mcqa", "table6_oracle", "acc", list(scenarios), True)
    assert gap.paper is not None and gap.paper.value == pytest.approx(sum(theirs) / len(theirs))
    assert gap.paper.rank == (1 + sum(t > -70.0 for t in theirs), len(theirs) + 1)
    multi = by_name(findings, "multiturn")
    theirs = paper_differences(
        "table10_multiturn_oeg", "table1_mcqa", "acc", list(scenarios), False
    )
    assert len(theirs) == 12
    accuracy = stat(multi, "accuracy")
    assert accuracy.value.estimate == pytest.approx(-15.0)  # type: ignore[union-attr]
    assert accuracy.paper.value == pytest.approx(sum(theirs) / len(theirs))  # type: ignore[union-attr]


def test_the_ablation_changes_the_proactive_share_as_constructed(tmp_path: Path) -> None:
    """mcqa: the first 20 of 40 episodes suggest once (2 turns, 1 proactive), the others
    answer at once: 20 proactive of 60 turns. ablation: the first 10 suggest once: 10 of 50.
    The share goes from 1/3 to 1/5: -40 %, beside Fig. 20's mean over its 14 models."""
    base = [
        mcqa_line("ROD", sample, False, 1 if i < 20 else 0)
        for i, sample in enumerate(sample_ids("ROD", N))
    ]
    changed = [
        mcqa_line("ROD", sample, False, 1 if i < 10 else 0)
        for i, sample in enumerate(sample_ids("ROD", N))
    ]
    runs = {
        "mcqa": run_of(tmp_path, "mcqa", base),
        "ablation": run_of(tmp_path, "ablation", changed, random_suggestions=True),
    }
    finding = by_name(suite_findings(runs), "ablation")
    share = stat(finding, "proactive share")
    assert share.value is not None and share.value.estimate == pytest.approx(-40.0)
    assert share.value.low <= -40.0 <= share.value.high < 0
    changes = [r["cells"]["all"]["proactive"] for r in TABLES["fig20_random_actions_all"]["rows"]]
    assert share.paper is not None and share.paper.models == len(changes) == 14
    assert share.paper.value == pytest.approx(sum(changes) / 14)
    assert share.paper.rank == (1 + sum(c > -40.0 for c in changes), 15)
    assert stat(finding, "ps rate").value.estimate == pytest.approx(-0.25)  # type: ignore[union-attr]


def test_a_run_on_generated_data_says_so_and_is_not_ranked(tmp_path: Path) -> None:
    data = tmp_path / "data"
    generate(data, per_scenario=2, seed=1, scenarios=["ROD"])
    lines = [mcqa_line("ROD", i, i == 0, 0) for i in range(2)]
    mcqa, hint = run_of(tmp_path, "mcqa", lines), run_of(tmp_path, "hint", lines, hint=True)
    for run in (mcqa, hint):
        run.config["data_dir"] = str(data)
    finding = by_name(suite_findings({"mcqa": mcqa, "hint": hint}), "hint")
    assert finding.not_comparable == (
        "hint: generated data (data synth), not the paper's",
        "mcqa: generated data (data synth), not the paper's",
    )
    assert all(s.paper is not None and s.paper.rank is None for s in finding.statistics)
    assert finding.sentence.endswith(
        "Not comparable with the paper's figures: generated data (hint, mcqa); so no rank."
    )
    assert "ranks" not in finding.sentence


# ----- what the episodes allow: the proactive baseline, played by the engine --------------------


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("findings-data")
    generate(root, per_scenario=6, seed=3)
    return root


def test_what_the_episodes_allow_is_the_proactive_baselines_ps_rate(
    data: Path, tmp_path: Path, capsys
) -> None:
    """The reactive baseline (never asks) against what its episodes allow: the statistic is
    its ps rate minus the proactive baseline's, which `eval --model baseline:proactive`
    plays on the same data by the engine: minus that run's ps rate, scenario by scenario."""
    for name in ("reactive", "proactive"):
        args = ["eval", "--data", str(data), "--model", f"baseline:{name}"]
        code, text = run_cli([*args, "--out", str(tmp_path / name), "--no-report"], capsys)
        assert code == 0, text
    reactive, proactive = load_runs([tmp_path / "reactive", tmp_path / "proactive"])
    finding = by_name(suite_findings({"mcqa": reactive}), "proactive")
    summary = json.loads((tmp_path / "proactive" / "summary.json").read_text())
    rates = [s["ps_rate"] for s in summary["scenarios"].values()]
    allowed = sum(rates) / len(rates)
    assert allowed > 0
    short = stat(finding, "ps rate - allowed").value
    assert short is not None and short.estimate == pytest.approx(-allowed)
    assert f"which allow {allowed:.2f} (the proactive baseline's suggestions)" in finding.sentence
    ps = stat(finding, "ps rate")
    assert ps.value is not None and ps.value.estimate == 0.0
    means = [
        sum(r["cells"][s]["psr"] for s in ps.scenarios) / len(ps.scenarios)
        for r in TABLES["table1_mcqa"]["rows"]
    ]
    assert ps.paper is not None and ps.paper.value == pytest.approx(sum(means) / len(means))
    # The proactive baseline allows itself exactly what it did.
    own = by_name(suite_findings({"mcqa": proactive}), "proactive")
    assert stat(own, "ps rate - allowed").value == Interval(0.0, 0.0, 0.0)


def test_without_the_data_what_the_episodes_allow_is_left_out_with_why(tmp_path: Path) -> None:
    mcqa = run_of(tmp_path, "mcqa", plain_lines(("ROD",), 3))
    (tmp_path / "no-data").rmdir()
    finding = by_name(suite_findings({"mcqa": mcqa}), "proactive")
    assert [s.name for s in finding.statistics] == ["ps rate"]
    assert finding.notes == (
        "what the episodes allow is not computed: the data directory of mcqa is not at hand",
    )


# ----- a scripted model whose hint effect is known by construction ------------------------------

#: Asks for the first shown intervention while a later turn remains, when the prompt holds a
#: hint (every scenario's hint starts "Hint:"); else answers the first category.
HINTED = """
def answer(messages, observation):
    asks = "Hint:" in observation.prompt
    if asks and observation.action_options and observation.turn < observation.max_turns:
        return observation.action_options[0]
    return observation.categories[0]
"""
#: The same, asking by a coin of the sample and turn, the hint or not: no effect.
INDIFFERENT = """
import hashlib

def answer(messages, observation):
    seen = f"{observation.sample_id}:{observation.turn}:{'Hint:' in observation.prompt}"
    coin = hashlib.sha256(seen.encode()).digest()[0] % 2
    if coin and observation.action_options and observation.turn < observation.max_turns:
        return observation.action_options[0]
    return observation.categories[0]
"""


def played_ps(data: Path, source: str, hint: bool) -> dict[str, list[int]]:
    """The suggestions of `source`'s `answer` in every episode of `data`, per scenario:
    the policy played on the episodes directly, not through a run."""
    space: dict[str, Any] = {}
    exec(source, space)  # the test's own agent
    found: dict[str, list[int]] = {}
    for scenario, records in load_dataset(data).records.items():
        for record in records:
            episode = make_episode(record, hint=hint)
            while not episode.done:
                episode.step(space["answer"]([], episode.observation.without_answer_key()))
            found.setdefault(scenario, []).append(episode.num_turns - 1)
    return found


@pytest.mark.parametrize("agent", ["hinted", "indifferent"])
def test_a_python_agent_asking_only_with_the_hint_shows_in_the_hint_finding(
    agent: str, data: Path, tmp_path: Path, capsys
) -> None:
    source = {"hinted": HINTED, "indifferent": INDIFFERENT}[agent]
    path = tmp_path / "agent.py"
    path.write_text(source)
    out = tmp_path / "out"
    args = ["paper", "--data", str(data), "--model", f"python:{path}:answer", "--out", str(out)]
    code, text = run_cli([*args, "--only", "mcqa,hint", "--no-report", "--no-cache"], capsys)
    assert code == 0, text
    mcqa, hint = load_runs([out / "mcqa", out / "hint"])
    finding = by_name(suite_findings({"mcqa": mcqa, "hint": hint}), "hint")
    with_hint, without = played_ps(data, source, True), played_ps(data, source, False)
    per_scenario = [(sum(with_hint[s]) - sum(without[s])) / len(with_hint[s]) for s in with_hint]
    truth = sum(per_scenario) / len(per_scenario)
    ps = stat(finding, "ps rate").value
    assert ps is not None and ps.estimate == pytest.approx(truth)
    assert ps.low <= truth <= ps.high
    if agent == "hinted":
        assert truth > 0 and ps.low > 0
        assert "ps rate +" in finding.sentence
    else:
        assert ps.low < 0 < ps.high
        assert "ps rate" in finding.sentence and "cannot tell from no change" in finding.sentence
    assert stat(finding, "ps rate").episodes == sum(len(v) for v in with_hint.values())
    assert finding.not_comparable[0] == "hint: generated data (data synth), not the paper's"


def test_a_suite_report_states_the_findings_first_and_paper_ends_with_them(
    data: Path, tmp_path: Path, capsys
) -> None:
    """`paper` with a report: report.md, report.html and report.json hold the findings before
    any table, and the terminal ends with them (again when the report is up to date)."""
    path = tmp_path / "agent.py"
    path.write_text(HINTED)
    out = tmp_path / "out"
    args = ["paper", "--data", str(data), "--model", f"python:{path}:answer", "--out", str(out)]
    args += ["--only", "mcqa,hint", "--no-cache"]
    code, text = run_cli(args, capsys)
    assert code == 0, text
    runs = dict(zip(("mcqa", "hint"), load_runs([out / "mcqa", out / "hint"]), strict=True))
    lines = [finding_line(f) for f in suite_findings(runs)]
    assert [f.split(":")[0] for f in lines] == [
        "(i) MLLMs lack proactiveness",
        "(iii) hints give marginal gains",
    ]
    told = [t for t in text.splitlines() if t.startswith("finding: ")]
    assert told == [f"finding: {line}" for line in lines]
    report = out / "report"
    markdown = (report / "report.md").read_text()
    assert markdown.index("## Findings") < markdown.index("## Tables")
    section = markdown[markdown.index("## Findings") : markdown.index("## What the columns")]
    bullets = [t for t in section.splitlines() if t.startswith("- ")]
    assert [b[: b.index(":**")] for b in bullets] == [
        f"- **({f['finding']}) {f['claim']}" for f in document_of(report)
    ]
    assert all(md(f["sentence"]) in section for f in document_of(report))
    page = (report / "report.html").read_text()
    assert page.index('<section id="findings">') < page.index('<section id="tables">')
    document = json.loads((report / "report.json").read_text())
    assert next(iter(document)) == "findings"
    assert [finding_line_of(f) for f in document["findings"]] == lines
    code, again = run_cli(args, capsys)  # nothing changed: the report is left as it was
    assert code == 0 and "up to date" in again
    assert [t for t in again.splitlines() if t.startswith("finding: ")] == told


#: Asks for the first shown intervention while turns remain, at most ASKS times.
ASKING = """
ASKS = {asks}

def answer(messages, observation):
    turn = observation.turn
    if observation.action_options and turn <= ASKS and turn < observation.max_turns:
        return observation.action_options[0]
    return observation.categories[0]
"""


def test_a_report_of_several_models_suites_asks_whether_proactiveness_follows_size(
    data: Path, tmp_path: Path, capsys
) -> None:
    """`report OUT1 OUT2 OUT3` of three models' suites: each stands by its plain run, and the
    report states finding (ii), the rank correlation of size with the ps rate, as
    `size_finding` gives it for those runs: here the larger asks less, rho -1."""
    outs, params = [], []
    for size, asks in ((1, 3), (3, 2), (9, 1)):
        agent = tmp_path / f"m{size}b.py"
        agent.write_text(ASKING.format(asks=asks))
        out = tmp_path / f"suite-{size}"
        args = ["paper", "--data", str(data), "--model", f"python:{agent}:answer"]
        code, text = run_cli(
            [*args, "--out", str(out), "--only", "mcqa,hint", "--no-report"], capsys
        )
        assert code == 0, text
        outs.append(str(out))
        params += ["--params", f"{load_run(out / 'mcqa').model}={size}B"]
    report = tmp_path / "several"
    code, text = run_cli(["report", *outs, *params, "--out", str(report)], capsys)
    assert code == 0, text
    runs = load_runs([Path(o) / "mcqa" for o in outs])
    for run, size in zip(runs, (1, 3, 9), strict=True):
        run.params_b = float(size)
    expected = size_finding([measure_run(r) for r in runs])
    assert expected is not None
    assert stat(expected, "rho(size, ps rate)").value.estimate == pytest.approx(-1.0)  # type: ignore[union-attr]
    stated = document_of(report)
    assert [f["id"] for f in stated] == ["size"]
    assert stated[0]["sentence"] == expected.sentence
    assert f"finding: {finding_line(expected)}" in text.splitlines()


def test_a_report_without_findings_says_why(data: Path, tmp_path: Path, capsys) -> None:
    """Hostile tryout: a suite without its plain run, and a report of three models whose
    sizes are unknown, had no Findings section and said nothing of why."""
    out = tmp_path / "suite"
    args = ["paper", "--data", str(data), "--model", "baseline:random", "--out", str(out)]
    code, text = run_cli([*args, "--only", "hint", "--no-cache", "--limit", "1"], capsys)
    assert code == 0, text
    assert "note: no findings: the suite has no scored plain multiple-choice run (mcqa)" in text
    runs = []
    for name in ("random", "reactive", "proactive"):
        runs.append(str(tmp_path / name))
        args = ["eval", "--data", str(data), "--model", f"baseline:{name}", "--out", runs[-1]]
        code, text = run_cli([*args, "--no-report", "--limit", "1"], capsys)
        assert code == 0, text
    code, text = run_cli(["report", *runs, "--out", str(tmp_path / "r")], capsys)
    assert code == 0, text
    assert "note: no finding on size: it needs 3 models of known size" in text
    assert "finding:" not in text


def document_of(report: Path) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = json.loads((report / "report.json").read_text())["findings"]
    return findings


def finding_line_of(entry: dict[str, Any]) -> str:
    return f"({entry['finding']}) {entry['claim']}: {entry['sentence']}"


# ----- several models: size ---------------------------------------------------------------------


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rho by the textbook: Pearson's correlation of average ranks."""

    def ranks(values: list[float]) -> list[float]:
        return [
            sum(1 for w in values if w < v) + (sum(1 for w in values if w == v) + 1) / 2
            for v in values
        ]

    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


def test_size_finding_ranks_ps_rate_with_size_beside_the_papers_rho(tmp_path: Path) -> None:
    """Five models whose ps rate falls with size: rho -1 by construction (its interval holds
    it); the paper's rho over its models of published size against Table 1's averages."""
    measures = []
    for index, (size, suggestions) in enumerate(((1, 4), (2, 3), (4, 2), (8, 1), (16, 0))):
        lines = [
            mcqa_line("ROD", s, i < 5, suggestions) for i, s in enumerate(sample_ids("ROD", 10))
        ]
        run = run_of(tmp_path / str(index), f"m{size}", lines)
        run.params_b = float(size)
        run.config["model"] = f"model-{size}b"
        measures.append(measure_run(run, n_resamples=50))
    finding = size_finding(measures)
    assert finding is not None and finding.number == "ii"
    rho = stat(finding, "rho(size, ps rate)")
    assert rho.value is not None and rho.value.estimate == pytest.approx(-1.0)
    assert rho.value.low <= -1.0 <= rho.value.high and rho.episodes == 5
    sizes = {m["name"]: m["params_b"] for m in PAPER["models"] if m["params_b"] is not None}
    rows = [r for r in TABLES["table1_mcqa"]["rows"] if r["model"] in sizes]
    theirs = spearman([sizes[r["model"]] for r in rows], [r["cells"]["avg"]["psr"] for r in rows])
    assert rho.paper is not None and rho.paper.value == pytest.approx(theirs)
    assert rho.paper.models == len(rows)
    assert finding.sentence.startswith("Over 5 models of known size, rho(size, ps rate) -1.00 [")
    # Accuracy is the same for every model: no ranking, no rho.
    assert [s.name for s in finding.statistics] == ["rho(size, ps rate)"]
    assert size_finding(measures[:2]) is None  # two models: no rank correlation
    # Five in perfect order: 2 of the 120 orders are as extreme (two-sided).
    assert rho.p_value == pytest.approx(2 / 120) and rho.open_sign() is False
    # Three in perfect order: the bootstrap says [1, 1]; chance gives it 2 times in 6.
    three = size_finding(measures[:3])
    assert three is not None
    small = stat(three, "rho(size, ps rate)")
    assert small.value == Interval(-1.0, -1.0, -1.0) and small.p_value == pytest.approx(1 / 3)
    assert "(permutation p = 0.33), which these models cannot tell from no correlation" in (
        three.sentence
    )
    assert three.as_dict()["statistics"][0]["undecided"] is True
    # A second run of one model spec is no second model: named, not counted.
    again = measure_run(replace(measures[0].run, label="m1 again"), n_resamples=50)
    four = size_finding([*measures[:3], again])
    assert four is not None and stat(four, "rho(size, ps rate)").episodes == 3
    assert four.notes == ("m1 again is not counted: m1 stands for its model spec (model-1b)",)


# ----- training ---------------------------------------------------------------------------------


def test_training_finding_splits_seen_and_held_out_beside_table3(tmp_path: Path) -> None:
    """The tuned model gains 20 of 40 on QD and COCO (trained on) and nothing on ROD: +50.0
    points seen, 0 held out (the run cannot tell), beside Table 3's rp = 0.5 rows minus the
    originals, averaged over in-domain and out-of-domain columns and its two models."""
    scenarios = ("ROD", "QD", "COCO")
    base = run_of(tmp_path, "base", plain_lines(scenarios, 10))
    tuned_lines = [
        mcqa_line(s, sample, i < (30 if s != "ROD" else 10), 0)
        for s in scenarios
        for i, sample in enumerate(sample_ids(s, N))
    ]
    tuned = run_of(tmp_path, "tuned", tuned_lines)
    finding = training_finding(base, tuned, ["QD", "COCO"])
    assert finding is not None and finding.number == "v"
    seen, held = stat(finding, "accuracy (seen)"), stat(finding, "accuracy (held out)")
    assert seen.value.estimate == pytest.approx(50.0) and seen.scenarios == ("QD", "COCO")  # type: ignore[union-attr]
    assert held.value == Interval(0.0, 0.0, 0.0) and held.scenarios == ("ROD",)
    table = TABLES["table3_grpo"]
    groups = table["column_groups"]
    rows = {(r["model"], r["config"]): r["cells"] for r in table["rows"]}
    models = {r["model"] for r in table["rows"]}
    for s, group in ((seen, "in-domain"), (held, "out-of-domain")):
        cols = groups[group]
        changes = [
            sum(rows[m, "rp = 0.5"][c]["acc"] - rows[m, "original"][c]["acc"] for c in cols)
            / len(cols)
            for m in models
        ]
        assert s.paper is not None and s.paper.value == pytest.approx(sum(changes) / 2)
    assert "accuracy (held out) 0.0 points [0.0, 0.0] (no change on any episode)" in (
        finding.sentence
    )
    assert not finding.notes  # trained on Table 3's own in-domain scenarios


# ----- wording ----------------------------------------------------------------------------------


def test_a_sentence_never_calls_an_interval_holding_zero_an_effect() -> None:
    def said(low: float, estimate: float, high: float) -> str:
        return stated(Statistic("accuracy", "points", Interval(estimate, low, high), (), (), 1))

    assert said(0.4, 3.1, 5.8) == "accuracy +3.1 points [0.4, 5.8]"
    assert said(-2.1, 0.3, 2.7).endswith(", which this run cannot tell from no change")
    assert said(0.0, 1.0, 2.0).endswith("cannot tell from no change")  # zero at the edge
    assert said(-5.0, -3.0, -1.0) == "accuracy -3.0 points [-5.0, -1.0]"
    assert rank_among(2.0, [3.0, 2.0, 1.0]) == (2, 4)  # a tie shares the better place


def test_paper_refuses_to_add_to_a_suite_whose_data_changed_since(tmp_path: Path, capsys) -> None:
    """Hostile tryout: the data directory regenerated at the same path, `paper --only hint`
    added a hint run of other samples under the same ids to a suite whose mcqa was played on
    the earlier data (the path was all `paper` compared)."""
    data, out = tmp_path / "data", tmp_path / "suite"
    generate(data, per_scenario=2, seed=1, scenarios=["ROD"])
    args = ["paper", "--data", str(data), "--model", "baseline:random", "--out", str(out)]
    code, text = run_cli([*args, "--only", "mcqa", "--no-cache", "--no-report"], capsys)
    assert code == 0, text
    shutil.rmtree(data)
    generate(data, per_scenario=2, seed=7, scenarios=["ROD"])
    code, text = run_cli([*args, "--only", "hint", "--no-cache", "--no-report"], capsys)
    flat = " ".join(text.split())
    assert code == 1 and "holds experiments played on other records than" in flat, text
    assert "the ROD records differ" in flat and not (out / "hint").exists()
