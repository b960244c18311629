"""A run directory counts only its own lines (issue 29): lines of other settings, of episodes
the data does not hold, contradicting finished lines, malformed fields and a results file
without run.json are refused by eval and named and left out by report and merge; and an eval
with a smaller --limit never turns the whole run's summary into a subset's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.report.runs import load_run
from proactivebench.run.rundir import merge_runs, read_results
from resultlines import flipped


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def abstain_run(data: Path, run: Path, capsys, *extra: str) -> list[dict]:
    """A plain run of the abstaining baseline on ROD (accuracy 0: nothing is correct)."""
    args = eval_args(data, run, "--scenarios", "ROD", "--no-report", *extra)
    args[args.index("baseline:oracle")] = "baseline:abstain"
    code, _ = run_cli(args, capsys)
    assert code == 0
    return read_results(run / "results.jsonl")


def append(run: Path, *lines: dict | str) -> int:
    """Append lines; the number of the first appended one."""
    path = run / "results.jsonl"
    before = len(path.read_text().splitlines())
    with path.open("a") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return before + 1


def resume(data: Path, run: Path, capsys) -> tuple[int, str]:
    args = eval_args(data, run, "--scenarios", "ROD", "--no-report")
    args[args.index("baseline:oracle")] = "baseline:abstain"
    return run_cli(args, capsys)


def test_a_line_of_other_settings_is_refused_by_eval_and_left_out_by_report(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    pasted = {**flipped(first), "settings": {**first["settings"], "hint": True}}
    number = append(run, pasted)
    code, text = resume(data, run, capsys)
    assert code == 1 and "Traceback" not in text
    assert f"results.jsonl:{number}:" in text and "hint: True (run.json: False)" in text
    loaded = load_run(run)
    assert [x.get("correct") for x in loaded.lines] == [False, False]  # ROD stays at 0 %
    assert (
        len(loaded.rejected) == 1
        and f":{number}: played with other settings" in (loaded.rejected[0])
    )


def test_lines_of_episodes_the_data_does_not_hold_are_refused(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    number = append(run, {**first, "sample_id": 900}, {**first, "scenario": "FOO"})
    code, text = resume(data, run, capsys)
    assert code == 1
    assert f"results.jsonl:{number}: the data holds no ROD sample 900" in text
    assert f"results.jsonl:{number + 1}: scenario 'FOO' is not one of" in text
    loaded = load_run(run)  # the report cannot read the data's ids, but knows the scenarios
    assert loaded.scenarios == ["ROD"]
    assert any(f":{number + 1}: scenario 'FOO'" in r for r in loaded.rejected)


def test_contradicting_finished_lines_count_neither(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    first, second = abstain_run(data, run, capsys)
    number = append(run, flipped(first), dict(second))  # a same copy is harmless
    code, text = resume(data, run, capsys)
    assert code == 1 and f"results.jsonl:1, {number}: different finished results for ROD" in text
    loaded = load_run(run)
    assert [x["sample_id"] for x in loaded.lines] == [second["sample_id"]]
    out = tmp_path / "merged"
    summary = merge_runs([run], out, partial=True)
    assert summary.scenarios["ROD"].n == 1 and summary.scenarios["ROD"].accuracy == 0.0


def test_a_copy_of_a_finished_line_is_counted_once_and_named(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A line pasted twice was counted once without a word: the file held 3 finished lines
    and every table said n 2 (push published both copies beside a card of n 2)."""
    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    number = append(run, first)
    loaded = load_run(run)
    assert len(loaded.lines) == 2
    assert loaded.rejected == [
        f"{run / 'results.jsonl'}:{number}: a copy of line 1 (ROD sample {first['sample_id']}); "
        "not counted"
    ]


def test_results_without_run_json_are_not_adopted(data: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    abstain_run(data, run, capsys)
    (run / "run.json").unlink()
    (run / ".finished.json").unlink(missing_ok=True)
    code, text = resume(data, run, capsys)
    assert code == 1 and "has no run.json" in text
    assert not (run / "run.json").exists()


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("num_turns", "3", "num_turns must be a whole number"),
        ("num_turns", 10**400, "num_turns must be a whole number"),
        ("trace", "x", "trace must be a list"),
        ("correct", "yes", "correct must be true or false"),
    ],
)
def test_malformed_fields_are_named_errors(
    data: Path, tmp_path: Path, capsys, field: str, value: object, why: str
) -> None:
    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    # Written by hand: json.dumps writes 10**400 as the digits a foreign writer would.
    shown = str(value) if isinstance(value, int) else json.dumps(value)
    line = json.dumps({**first, field: 0}).replace(f'"{field}": 0', f'"{field}": {shown}')
    number = append(run, line)
    with pytest.raises(ProactiveBenchError, match=f"results.jsonl:{number}: .*{why}"):
        read_results(run / "results.jsonl")
    code, text = resume(data, run, capsys)
    assert code == 1 and why in text and "Traceback" not in text
    loaded = load_run(run)
    assert len(loaded.lines) == 2 and sum(bool(x.get("correct")) for x in loaded.lines) == 0
    assert len(loaded.rejected) == 1 and why in loaded.rejected[0]


def test_a_smaller_limit_never_makes_the_summary_a_subsets(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    abstain_run(data, run, capsys)
    whole = json.loads((run / "summary.json").read_text())
    assert whole["scenarios"]["ROD"]["n"] == 2
    args = eval_args(data, run, "--scenarios", "ROD", "--limit", "1", "--no-report")
    args[args.index("baseline:oracle")] = "baseline:abstain"
    code, text = run_cli(args, capsys)
    assert code == 0
    assert json.loads((run / "summary.json").read_text()) == whole
    assert "this selection chose 1 of the run's 2 episodes" in text
    rod_row = next(row for row in text.splitlines() if row.strip("│┃ ").startswith("ROD"))
    assert rod_row.split("│")[2].strip() == "2"  # the table's n: the whole run, as summary.json


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("usage", "x", "usage must be an object of token counts, not 'x'"),
        ("image", 5, "image must be a path (text), not 5"),
        ("crop", "zz", "crop must be four numbers (left, top, right, bottom), not 'zz'"),
        ("crop", [1, 2], "crop must be four numbers"),
        ("crop", [1, 2, 3, True], "crop must be four numbers"),
        ("resize_short_edge", 0, "resize_short_edge must be a whole number >= 1, not 0"),
    ],
)
def test_a_turn_field_the_report_reads_of_the_wrong_shape_is_named_not_a_traceback(
    data: Path, tmp_path: Path, capsys, field: str, value: object, why: str
) -> None:
    """A turn's token counts or view fields of a shape no writer gives them (a hand edit)
    make a line the report leaves out and names; they were an AttributeError while summing
    token counts, a TypeError while making a thumbnail."""
    from proactivebench.benchmark.results import shape_problem

    run = tmp_path / "run"
    first = abstain_run(data, run, capsys)[0]
    turn = {**first["trace"][0], field: value}
    number = append(run, {**first, "trace": [turn]})
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 0 and "Traceback" not in text
    assert f"results.jsonl:{number}: not a result line (turn 1: {why}" in " ".join(text.split())
    # The open-ended line is its own turn; a demonstration's turns are turns too.
    oeg = {"scenario": "QD", "sample_id": 0, "prompt": "What?", field: value}
    assert (shape_problem(oeg) or "").startswith(why)
    shown = {**first, "demonstrations": [{"sample_id": 3, "turns": [turn]}]}
    assert (shape_problem(shown) or "").startswith(f"demonstration 1: {why}")
    assert shape_problem({**first, "demonstrations": [5]}) == (
        "demonstrations must be a list of objects, not [5]"
    )
    assert shape_problem({**first, "demonstrations": [{"turns": first["trace"]}]}) is None


def rewrite(run: Path, lines: list[dict]) -> None:
    """Replace the run's results with `lines` (a hand edit)."""
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (run / ".finished.json").unlink(missing_ok=True)


def test_a_line_without_end_reason_is_named_not_counted_as_not_abstaining(
    data: Path, tmp_path: Path, capsys
) -> None:
    """The abstaining baseline abstains on every episode (abstained 100 %): a line whose
    end_reason was taken out would have counted as an episode that did not abstain (50 %)."""
    run = tmp_path / "run"
    first, second = abstain_run(data, run, capsys)
    assert first["end_reason"] == second["end_reason"] == "abstained"
    rewrite(run, [{k: v for k, v in first.items() if k != "end_reason"}, second])
    loaded = load_run(run)
    assert [x["sample_id"] for x in loaded.lines] == [second["sample_id"]]
    assert len(loaded.rejected) == 1
    assert "results.jsonl:1: lacks end_reason, which abstained %" in loaded.rejected[0]
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 0 and "lacks end_reason" in text
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert "results.jsonl:1: lacks end_reason" in json.dumps(report)


def test_a_line_without_its_correct_category_is_named(data: Path, tmp_path: Path, capsys) -> None:
    """The action distribution reads the episode's correct_category (a refused intervention
    is told from a wrong category by it)."""
    run = tmp_path / "run"
    first, second = abstain_run(data, run, capsys)
    rewrite(run, [first, {k: v for k, v in second.items() if k != "correct_category"}])
    loaded = load_run(run)
    assert [x["sample_id"] for x in loaded.lines] == [first["sample_id"]]
    assert (
        "results.jsonl:2: lacks correct_category, which the action distribution read"
        in loaded.rejected[0]
    )


def test_a_line_written_before_lines_recorded_their_settings_still_counts(
    data: Path, tmp_path: Path, capsys
) -> None:
    """Lines of the first version recorded neither settings nor end_reason: they count, and
    a rate that reads end_reason leaves them out instead of reading them as 0."""
    from proactivebench.benchmark.metrics import MCQA_METRICS, rate_of, values_by_metric

    run = tmp_path / "run"
    first, second = abstain_run(data, run, capsys)
    old = [
        {k: v for k, v in x.items() if k not in ("end_reason", "settings")} for x in (first, second)
    ]
    rewrite(run, [old[0], second])
    loaded = load_run(run)
    assert len(loaded.lines) == 2 and not loaded.rejected
    abstained = next(m for m in MCQA_METRICS if m.key == "abstained")
    assert rate_of(abstained, values_by_metric([abstained], loaded.lines)["abstained"]) == 100.0
    assert values_by_metric([abstained], old)["abstained"] == []  # no value, not 0


def oeg_run(run: Path, lines: list[dict]) -> None:
    """An open-ended run written by hand: run.json and `lines`."""
    run.mkdir()
    settings = {"mode": "oeg"}
    (run / "run.json").write_text(json.dumps({"model": "m", "settings": settings}))
    rewrite(run, [{"prompt": "What?", "settings": settings, **x} for x in lines])


def verdicts(sample_id: int, ps: int, cp: int) -> dict:
    return {
        "scenario": "QD",
        "sample_id": sample_id,
        "proactive_suggestion": ps,
        "category_prediction": cp,
        "aggregate": ps | cp,
        "judge_agreement": 1.0,
    }


def test_an_open_ended_line_without_a_verdict_is_named_not_counted_as_0(
    tmp_path: Path,
) -> None:
    """Two answers with a suggestion, one naming only the category: ps 66.7 %. Without its
    proactive_suggestion the first line would have made ps 33.3 % beside aggregate 100 %."""
    from proactivebench.benchmark.metrics import summarize
    from proactivebench.run.rundir import run_lines

    run = tmp_path / "run"
    lines = [verdicts(0, 1, 0), verdicts(1, 1, 0), verdicts(2, 0, 1)]
    oeg_run(run, lines)
    whole = summarize(run_lines(run, {"settings": {"mode": "oeg"}}).lines).scenarios["QD"]
    assert (whole.n, round(whole.ps or 0, 1), whole.aggregate) == (3, 66.7, 100.0)
    del lines[0]["proactive_suggestion"]
    oeg_run(tmp_path / "edited", lines)
    found = run_lines(tmp_path / "edited", {"settings": {"mode": "oeg"}})
    score = summarize(found.lines).scenarios["QD"]
    assert (score.n, score.ps, score.cp, score.aggregate) == (2, 50.0, 50.0, 100.0)
    assert len(found.rejected) == 1
    assert "results.jsonl:1: lacks proactive_suggestion, which ps % read" in found.rejected[0]


def test_a_line_of_the_other_mode_is_named_not_counted(data: Path, tmp_path: Path, capsys) -> None:
    """An open-ended line in a multiple-choice run was counted as a wrong, abstained episode
    (accuracy down, abstained up, the run ranked); a multiple-choice line in an open-ended run
    in n but in no rate. Each is named and left out; eval refuses to resume over it."""
    from proactivebench.benchmark.metrics import summarize
    from proactivebench.run.rundir import run_lines

    run = tmp_path / "mcqa"
    first = abstain_run(data, run, capsys)[0]
    number = append(run, {**verdicts(first["sample_id"], 1, 1), "scenario": "ROD", "prompt": "?"})
    code, text = resume(data, run, capsys)
    assert code == 1 and f"results.jsonl:{number}: an open-ended episode's line" in text
    loaded = load_run(run)
    assert len(loaded.lines) == 2 and [x.get("correct") for x in loaded.lines] == [False] * 2
    assert "in a run of mode 'mcqa' (run.json)" in loaded.rejected[0]
    oeg_run(tmp_path / "oeg", [verdicts(0, 1, 0), verdicts(1, 1, 0)])
    append(
        tmp_path / "oeg", {**first, "scenario": "QD", "sample_id": 2, "settings": {"mode": "oeg"}}
    )
    found = run_lines(tmp_path / "oeg", {"settings": {"mode": "oeg"}})
    score = summarize(found.lines).scenarios["QD"]
    assert (score.n, score.ps) == (2, 100.0)
    assert (
        "results.jsonl:3: a multiple-choice episode's line, in a run of mode 'oeg'"
        in (found.rejected[0])
    )


@pytest.mark.parametrize(
    ("where", "field", "value", "why"),
    [
        ("line", "end_reason", 5, "end_reason must be a text, not 5"),
        ("line", "correct_category", ["a"], "correct_category must be a text, not ['a']"),
        ("turn", "answer", [1], "turn 1: answer must be a text, not [1]"),
        ("turn", "verdict", None, "turn 1: verdict must be a text, not None"),
        ("turn", "options", "ab", "turn 1: options must be a list of texts, not 'ab'"),
        ("turn", "latency_s", "1", "turn 1: latency_s must be a number, not '1'"),
    ],
)
def test_every_field_a_writer_types_is_checked_where_lines_are_read(
    data: Path, tmp_path: Path, capsys, where: str, field: str, value: object, why: str
) -> None:
    """A field of another type than every writer gives it (each typed in `results`' record
    classes) is named and not counted, where it used to pass into the tables."""
    run = tmp_path / "run"
    first, second = abstain_run(data, run, capsys)
    if where == "turn":
        first = {**first, "trace": [{**first["trace"][0], field: value}]}
    else:
        first = {**first, field: value}
    rewrite(run, [first, second])
    loaded = load_run(run)
    assert len(loaded.lines) == 1 and len(loaded.rejected) == 1
    assert f"results.jsonl:1: not a result line ({why})" in loaded.rejected[0]


def test_an_open_ended_field_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    from proactivebench.run.rundir import run_lines

    oeg_run(tmp_path / "run", [{**verdicts(0, 1, 0), "generation": 5}, verdicts(1, 1, 0)])
    found = run_lines(tmp_path / "run", {"settings": {"mode": "oeg"}})
    assert [x["sample_id"] for x in found.lines] == [1]
    assert "generation must be a text, not 5" in found.rejected[0]


def test_a_judged_turn_without_a_verdict_is_named_not_counted_as_0(tmp_path: Path) -> None:
    """Multi-turn open-ended lines, each one judged turn naming the category (turns with cp:
    100 %): a turn whose category_prediction was taken out would have counted as 0 (50 %)."""
    from proactivebench.benchmark.metrics import OEG_MULTITURN_METRICS, values_by_metric
    from proactivebench.run.rundir import run_lines

    settings = {"mode": "oeg-multiturn"}
    turn = {
        "turn": 1,
        "verdict": "correct",
        "valid_answers_text": "1. cat",
        "proactive_suggestion": 0,
    }
    lines = [
        {
            "scenario": "QD",
            "sample_id": sample_id,
            "correct": True,
            "num_turns": 1,
            "trace": [{**turn, "category_prediction": 1} if sample_id else turn],
            "end_reason": "correct",
            "correct_category": "cat",
            "settings": settings,
        }
        for sample_id in (0, 1)
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"model": "m", "settings": settings}))
    rewrite(run, lines)
    found = run_lines(run, {"settings": settings})
    turn_cp = next(m for m in OEG_MULTITURN_METRICS if m.key == "turn_cp")
    assert values_by_metric([turn_cp], found.lines)["turn_cp"] == [100.0]
    assert len(found.rejected) == 1
    assert "results.jsonl:1: lacks turn 1's category_prediction, which" in found.rejected[0]


AGENT = '''
import random

def answer(messages, observation):
    """Now an option, now free text, now a failure: every kind of line a run writes."""
    draw = random.Random(repr(messages)[-300:])
    if draw.random() < 0.1:
        raise RuntimeError("the agent failed")
    options = list(getattr(observation, "options", None) or [])
    if options and draw.random() < 0.8:
        return draw.choice(options)
    return draw.choice(["no idea", "Move it to the left; a banana", "It is a cat.", "A"])
'''

JUDGE = '''
import ast, random

def judge(messages, observation):
    """A verdict of the right length, drawn per output (now and then none at all)."""
    user = messages[1]["content"]
    entries = ast.literal_eval(user.split("### Correct Answers (List):\\n")[1].split("\\n###")[0])
    draw = random.Random(user)
    if draw.random() < 0.1:
        return "no verdict here"
    return ", ".join(str(int(draw.random() < 0.4)) for _ in entries)
'''


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--hint"],
        ["--reference"],
        ["--random-actions"],
        ["--random-suggestions"],
        ["--icl", "1"],
        ["--history", "--answer-extraction", "lenient"],
        ["--mode", "oeg", "--judge", "JUDGE"],
        ["--mode", "oeg-multiturn", "--judge", "JUDGE"],
    ],
    ids=lambda extra: " ".join(extra).replace("JUDGE", "python") or "plain",
)
@pytest.mark.parametrize("model", ["agent", "baseline:random", "baseline:oracle"])
def test_every_line_a_writer_writes_passes_the_readers_checks(
    data: Path, tmp_path: Path, capsys, extra: list[str], model: str
) -> None:
    """The checks of a line's shape and consistency (`results.shape_problem`) refuse no line a
    run writes: every scenario, every mode and setting, finished and error lines alike."""
    from proactivebench.run.rundir import read_run_config, run_lines

    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "judging.py").write_text(JUDGE)
    if model == "agent":
        model = f"python:{tmp_path / 'agent.py'}:answer"
    extra = [f"python:{tmp_path / 'judging.py'}:judge" if e == "JUDGE" else e for e in extra]
    run = tmp_path / "run"
    args = ["eval", "--data", str(data), "--model", model, "--out", str(run), "--no-report"]
    code, text = run_cli([*args, "--no-cache", *extra], capsys)
    assert code == 0 or (code == 3 and "ended in an error" in text), text  # 3: error lines
    found = run_lines(run, read_run_config(run))
    written = read_results(run / "results.jsonl")
    assert found.rejected == [] and len(found.lines) == len(written) > 0


def _turn_usage(line: dict, usage: dict) -> dict:
    return {**line, "trace": [{**line["trace"][0], "usage": usage}]}


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (
            lambda x: {**x, "trace": [{**x["trace"][0], "verdict": "bogus"}]},
            "turn 1: verdict must be one of correct, proactive, wrong, mismatch, not 'bogus'",
        ),
        (
            lambda x: {**x, "end_reason": "bogus"},
            "end_reason must be one of correct, wrong, abstained, unreadable",
        ),
        (
            lambda x: {**x, "correct": True},
            "correct is True but end_reason is 'abstained'",
        ),
        (
            lambda x: {**x, "correct": True, "end_reason": "correct"},
            "correct is True but the last turn's verdict is 'wrong'",
        ),
        (
            lambda x: {
                **x,
                "num_turns": 2,
                "proactive_suggestions": 1,
                "trace": [{**x["trace"][0], "verdict": "correct"}, x["trace"][0]],
            },
            "a turn before the last has the verdict correct (an episode ends at it)",
        ),
        (
            lambda x: {**x, "num_turns": 5, "proactive_suggestions": 4},
            "num_turns is 5 but the trace holds 1 turn(s)",
        ),
        (
            lambda x: {**x, "proactive_suggestions": True},
            "proactive_suggestions must be num_turns - 1 (0), not True",
        ),
        (
            lambda x: {**x, "proactive_suggestions": 3},
            "proactive_suggestions must be num_turns - 1 (0), not 3",
        ),
        (
            lambda x: _turn_usage(x, {"prompt_tokens": -10}),
            "turn 1: usage's prompt_tokens must be a whole number from 0 to 1e+12, not -10",
        ),
        (
            lambda x: _turn_usage(x, {"prompt_tokens": 1e308}),
            "turn 1: usage's prompt_tokens must be a whole number from 0 to 1e+12, not 1e+308",
        ),
        (
            lambda x: _turn_usage(x, {"prompt_tokens": 10**300}),
            "turn 1: usage's prompt_tokens must be a whole number from 0 to 1e+12",
        ),
    ],
    ids=[
        "verdict",
        "end_reason",
        "correct-abstained",
        "correct-last-verdict",
        "correct-before-last",
        "num_turns-trace",
        "suggestions-bool",
        "suggestions-count",
        "usage-negative",
        "usage-float",
        "usage-huge",
    ],
)
def test_a_line_that_contradicts_itself_is_named_not_counted(
    data: Path, tmp_path: Path, capsys, edit, why: str
) -> None:
    """The abstaining baseline on ROD: two one-turn lines, wrong and abstained (accuracy 0 %,
    abstained 100 %, ps rate 0). A line whose fields contradict each other, as no writer
    writes them, would have made a table that cannot be (accuracy 50 % beside abstained
    100 %, a ps rate of 2 with nobody asking, a token sum of -10): it is named, not counted."""
    run = tmp_path / "run"
    first, second = abstain_run(data, run, capsys)
    assert first["end_reason"] == "abstained" and first["trace"][0]["verdict"] == "wrong"
    rewrite(run, [edit(first), second])
    loaded = load_run(run)
    assert [x["sample_id"] for x in loaded.lines] == [second["sample_id"]]
    assert len(loaded.rejected) == 1 and "results.jsonl:1: not a result line" in loaded.rejected[0]
    assert why in loaded.rejected[0], loaded.rejected[0]
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "r")], capsys)
    assert code == 0 and why in text and "Traceback" not in text


def test_an_open_ended_aggregate_that_is_not_ps_or_cp_is_named(tmp_path: Path) -> None:
    """aggregate = ps or cp (docs/protocol.md §6): a line with a suggestion and aggregate 0
    would have put the aggregate rate below the ps rate."""
    from proactivebench.run.rundir import run_lines

    oeg_run(tmp_path / "run", [{**verdicts(0, 1, 0), "aggregate": 0}, verdicts(1, 1, 1)])
    found = run_lines(tmp_path / "run", {"settings": {"mode": "oeg"}})
    assert [x["sample_id"] for x in found.lines] == [1]
    assert (
        "aggregate must be proactive_suggestion or category_prediction (1), not 0"
        in (found.rejected[0])
    )
