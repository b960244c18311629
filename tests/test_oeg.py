"""Open-ended generation (docs/protocol.md §6): the requests, the judge's parsing, and a whole
run against the local server acting as both the model and the judge, checked against rates
computed by hand. Expected strings are built here from protocol.json, not from the package."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from clirun import ctrl_c_here, run_cli
from handmade import full_dataset
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.run.judge import Judge, judge_messages, parse_verdict
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings
from proactivebench.testing.server import FakeOpenAI, Raw, last_user_text

PROTOCOL = json.loads(
    (Path(__file__).parents[1] / "src/proactivebench/spec/protocol.json").read_text()
)
OEG = PROTOCOL["oeg"]

#: What the tested model says, by the record prompt of `handmade` it was asked.
GENERATIONS = {
    "What object is behind the blocks?": "I would move the blocks first.",  # ROD
    "What is the object?": "It is a dog.",  # VSOD
    "Which object is this?": "I cannot tell.",  # MVP-N
    "What is in the image?": "Please deblur the image.",  # IN-C
    "What does the drawing show?": "Add more details to the drawing; maybe a dog.",  # QD
    "What object is being used?": "Rewind the video, please.",  # CIT
    "What is the main object?": "An apple.",  # COCO
}

#: Rates (ps, cp, aggregate in %) by hand: the judge below marks an entry when the generation
#: contains it (case-insensitive). ROD: "Move the blocks" of [blocks, camera] -> ps. VSOD:
#: "dog" after 3 moves -> cp. MVP-N: nothing. IN-C: sample 2 needs "Deblur the image" (ps),
#: sample 3 "Increase the brightness" (none). QD: [details.., dog] -> ps and cp. CIT: the
#: rewind is listed (once or twice) among the first two entries of both samples -> ps. COCO:
#: [camera, farther, apple] -> cp.
EXPECTED = {
    "ROD": (100.0, 0.0, 100.0),
    "VSOD": (0.0, 100.0, 100.0),
    "MVP-N": (0.0, 0.0, 0.0),
    "IN-C": (50.0, 0.0, 50.0),
    "QD": (100.0, 100.0, 100.0),
    "CIT": (100.0, 0.0, 100.0),
    "COCO": (0.0, 100.0, 100.0),
}


def respond(body: dict[str, Any]) -> str:
    """The server's answer: a judge's verdict (after reasoning) or the model's generation."""
    messages = body["messages"]
    if messages[0]["role"] == "system":
        user = messages[1]["content"]
        entries = ast.literal_eval(user.split("### Correct Answers (List):\n")[1].split("\n###")[0])
        output = user.split("### System Output:\n")[1].lower()
        marks = ", ".join("1" if e and e.lower() in output else "0" for e in entries)
        return f"<think>Checking {len(entries)} answers, 1 by 1.</think>\n{marks}"
    text = last_user_text(messages)
    return next(g for prompt, g in GENERATIONS.items() if prompt in text)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def oeg_run(data: Path, url: str, run: Path, **settings: Any) -> Any:
    model = load_model(f"openai:tested@{url}")
    judge = Judge(load_model(f"openai:judge@{url}"), votes=settings.pop("votes", 1))
    return evaluate(data, model, run, EvalSettings(mode="oeg", **settings), judge=judge)


# ----- requests --------------------------------------------------------------------------------


@pytest.mark.parametrize("hint", [False, True])
def test_model_and_judge_requests_are_exactly_the_protocols(
    data: Path, tmp_path: Path, hint: bool
) -> None:
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, tmp_path / "run", scenarios=("VSOD",), hint=hint, limit=1)
        model_body, judge_body = (r.body for r in fake.chat_requests)
    # The tested model: the first frame, then the pre-prompt and prompt (and the OEG suffix);
    # no options, no temperature, a large token limit.
    vsod = PROTOCOL["scenarios"]["VSOD"]
    prompt = f"{vsod['pre_prompt']} What is the object?" + (OEG["hint_suffix"] if hint else "")
    (message,) = model_body["messages"]
    assert [p["type"] for p in message["content"]] == ["image_url", "text"]
    assert message["content"][1]["text"] == prompt
    assert "temperature" not in model_body and model_body["max_tokens"] == 32768
    # The judge: the protocol's system prompt and user template; the entries of the fixed list
    # with the correct category, as a Python list.
    entries = ["Wait for the occlusion to disappear", "Rewind the video", "Move the camera", "dog"]
    user = OEG["judge_user_template"].format(
        user_prompt=prompt, correct_answers=str(entries), generated_answer="It is a dog."
    )
    assert judge_body["messages"] == [
        {"role": "system", "content": OEG["judge_system_prompt"]},
        {"role": "user", "content": user},
    ]
    assert judge_body["model"] == "judge" and "temperature" not in judge_body
    (line,) = read_results(tmp_path / "run" / "results.jsonl")
    assert line["prompt"] == prompt and line["valid_answers"] == entries
    assert (line["proactive_suggestion"], line["category_prediction"], line["aggregate"]) == (
        0,
        1,
        1,
    )


def test_judge_messages_fill_the_template_with_the_entries() -> None:
    messages = judge_messages("Q?", "Move the blocks, Move the camera.", "I'd move them.")
    assert "['Move the blocks', 'Move the camera']" in messages[1]["content"]


# ----- parsing the judge -------------------------------------------------------------------

ROD_VALID = "Move the blocks, Move the camera."  # two entries, both proactive
VSOD_VALID = "Wait for the occlusion to disappear, Rewind the video, Move the camera, dog."


@pytest.mark.parametrize(
    ("output", "valid", "scenario", "expected"),
    [
        ("<think>The user asks about 2 things: 1, 0?</think>\n1, 0", ROD_VALID, "ROD", (1, 0, 1)),
        ("reasoning that lost its opening tag</think>0, 0", ROD_VALID, "ROD", (0, 0, 0)),
        ("0, 0, 0, 1", VSOD_VALID, "VSOD", (0, 1, 1)),
        ("1, 0, 0, 0", VSOD_VALID, "VSOD", (1, 0, 1)),
        ("1, 0, 1", ROD_VALID, "ROD", (0, 0, 0)),  # wrong length: everything 0
        ("I cannot decide.", ROD_VALID, "ROD", (0, 0, 0)),  # no verdict
        ("0,\n 0 ,1,\t1", VSOD_VALID, "VSOD", (1, 1, 1)),  # spaces and newlines inside
        ("1, 1\nThat is all.", ROD_VALID, "ROD", (1, 0, 1)),  # words after the verdict line
        ("1, 1\nSee point 1.", ROD_VALID, "ROD", (0, 0, 0)),  # a 1 after it is the last run
        ("0, 0\n1, 0", ROD_VALID, "ROD", (1, 0, 1)),  # the last run wins
    ],
)
def test_judge_output_parsing(output, valid, scenario, expected) -> None:
    verdict = parse_verdict(valid, output, scenario)
    assert (verdict.proactive_suggestion, verdict.category_prediction, verdict.aggregate) == (
        expected
    )


def test_empty_entries_do_not_count_towards_the_length() -> None:
    # An empty part between commas is not an entry the judge must mark...
    valid = "Move the camera, , Move farther from the object."
    assert parse_verdict(valid, "1, 0", "COCO").aggregate == 1
    assert parse_verdict(valid, "1, 0, 0", "COCO").aggregate == 0
    # ...but a part that held only a dot still counts, as in the reference (it is shown to the
    # judge as an empty string once the dots are removed).
    assert parse_verdict(
        "Move the camera, Move farther from the object, .", "1, 0, 0", "COCO"
    ).parsed


def test_votes_take_the_majority_and_report_agreement() -> None:
    outputs = ["1, 0", "1, 0", "0, 0"]
    judgement = Judge.decide(ROD_VALID, outputs, "ROD")
    assert judgement.verdict.proactive_suggestion == 1
    assert judgement.agreement == pytest.approx(2 / 3)
    # Each field by its own majority: (ps, cp) votes (1, 0), (0, 1), (1, 1) give (1, 1),
    # which one vote in three gave; two votes in four are a tie, which is 0.
    split = Judge.decide(VSOD_VALID, ["1, 0, 0, 0", "0, 0, 0, 1", "1, 0, 0, 1"], "VSOD")
    assert (split.verdict.aggregate, split.verdict.category_prediction) == (1, 1)
    assert split.agreement == pytest.approx(1 / 3)
    tie = Judge.decide(ROD_VALID, ["1, 0", "0, 0"], "ROD")
    assert tie.verdict.aggregate == 0 and tie.agreement == 0.5


# ----- a whole run -------------------------------------------------------------------------


def test_oeg_run_gives_the_hand_computed_rates_and_judge_reruns_without_the_model(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with FakeOpenAI(respond=respond) as fake:
        outcome = oeg_run(data, fake.url, run, votes=3)
        rates = {k: (s.ps, s.cp, s.aggregate) for k, s in outcome.summary.scenarios.items()}
        assert rates == EXPECTED
        assert all(s.agreement == 100.0 for s in outcome.summary.scenarios.values())
        asked = len(fake.chat_requests)
        assert asked == 15 * (1 + 3)  # one generation and three votes per episode
        selected = json.loads((run / "run.json").read_text())["selection"]
        assert sum(s["selected"] for s in selected["scenarios"].values()) == 15
        # Judge again, in place: the same rates; no generation is asked for.
        code, text = run_cli(
            ["judge", str(run), "--judge", f"openai:judge@{fake.url}", "--no-cache"], capsys
        )
        assert code == 0 and "aggregate %" in text
        again = [r.body for r in fake.chat_requests[asked:]]
    assert len(again) == 15 and all(b["messages"][0]["role"] == "system" for b in again)
    lines = read_results(run / "results.jsonl")
    assert len(lines) == 15 and all(len(line["judge_outputs"]) == 1 for line in lines)
    summary = json.loads((run / "summary.json").read_text())
    for short, (ps, cp, aggregate) in EXPECTED.items():
        assert summary["scenarios"][short]["aggregate"] == aggregate
        assert (summary["scenarios"][short]["ps"], summary["scenarios"][short]["cp"]) == (ps, cp)
    config = json.loads((run / "run.json").read_text())
    assert config["settings"]["mode"] == "oeg" and config["settings"]["judge"]["votes"] == 1
    assert config["selection"] == selected  # judging keeps what the run selected


def test_oeg_needs_a_judge_and_mcqa_takes_none(data: Path, tmp_path: Path, capsys) -> None:
    args = ["eval", "--data", str(data), "--model", "baseline:oracle", "--out", str(tmp_path)]
    code, text = run_cli([*args, "--mode", "oeg"], capsys)
    assert code != 0 and "needs a judge" in text and "Traceback" not in text


def test_an_oeg_run_resumes_episodes_whose_judge_failed(data: Path, tmp_path: Path) -> None:
    run, settings = tmp_path / "run", EvalSettings(mode="oeg", scenarios=("ROD", "QD"))
    with (
        FakeOpenAI(respond=respond) as fake,
        FakeOpenAI(fault_rate=1.0, fault_kinds=("http500",)) as bad,
    ):
        model = load_model(f"openai:tested@{fake.url}")
        failing = load_model(f"openai:judge@{bad.url}", max_retries=0)
        first = evaluate(data, model, run, settings, judge=Judge(failing))
        assert sum(first.errors.values()) == 4
        assert all(e.startswith("judge: ") for e in first.errors)
        second = evaluate(
            data, model, run, settings, judge=Judge(load_model(f"openai:judge@{fake.url}"))
        )
    assert not second.errors
    rates = {k: (s.ps, s.cp, s.aggregate) for k, s in second.summary.scenarios.items()}
    assert rates == {k: EXPECTED[k] for k in ("ROD", "QD")}


# ----- judge outputs without a verdict ----------------------------------------------------------

CUT_OFF = "<think>Let me check each: 1, 1. Hmm, actually…"


@pytest.mark.parametrize(
    "output",
    [
        CUT_OFF,  # reasoning cut short: nothing visible
        "Sure.<think>1, 1",  # a verdict inside an unclosed block is no verdict either
        "1, 1\nConfidence: 0.9",  # the last run is "0": of the wrong length
        "sí, sí",
        "1, 1, 1",
    ],
)
def test_an_output_without_a_readable_verdict_is_an_unparsed_vote(output: str) -> None:
    verdict = parse_verdict(ROD_VALID, output, "ROD")
    assert not verdict.parsed and verdict.aggregate == 0
    judgement = Judge.decide(ROD_VALID, ["1, 0", output, "1, 0"], "ROD")
    assert judgement.parsed == (True, False, True)
    assert judgement.verdict.aggregate == 1 and judgement.agreement == pytest.approx(2 / 3)
    # Votes that all say nothing do not agree on anything.
    assert Judge.decide(ROD_VALID, [output] * 3, "ROD").agreement == 0


def unreadable_judge(body: dict[str, Any]) -> str:
    """`respond`, but the judge's reasoning is cut off on ROD and it answers in Spanish on QD."""
    if body["messages"][0]["role"] == "system":
        user = body["messages"][1]["content"]
        if "Move the blocks" in user:
            return CUT_OFF
        if "Add details" in user or "details" in user.lower():
            return "sí, sí"
    return respond(body)


def judged_unreadably(data: Path, run: Path, scenarios: str, capsys: Any) -> str:
    """An open-ended run of `scenarios` into `run`, judged by `unreadable_judge`; its output."""
    with FakeOpenAI(respond=unreadable_judge) as fake:
        args = ["eval", "--data", str(data), "--model", f"openai:tested@{fake.url}"]
        args += ["--out", str(run), "--mode", "oeg", "--judge", f"openai:judge@{fake.url}"]
        code, text = run_cli([*args, "--scenarios", scenarios, "--no-cache"], capsys)
    assert code == 0, text
    return text


def test_unparsed_judge_outputs_are_recorded_counted_and_warned_about(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    text = judged_unreadably(data, run, "ROD,QD,VSOD", capsys)
    parsed: dict[str, list[list[bool]]] = {}
    for line in read_results(run / "results.jsonl"):
        parsed.setdefault(line["scenario"], []).append(line["judge_parsed"])
    assert parsed == {"ROD": [[False]] * 2, "VSOD": [[True]] * 2, "QD": [[False]] * 2}
    scenarios = json.loads((run / "summary.json").read_text())["scenarios"]
    # The cut-off reasoning "1, 1" is no verdict: ROD scores 0, not 100.
    assert scenarios["ROD"]["ps"] == 0.0 and scenarios["ROD"]["unparsed"] == 100.0
    assert scenarios["QD"]["unparsed"] == 100.0 and scenarios["VSOD"]["unparsed"] == 0.0
    # One vote agrees with itself: no agreement is given.
    assert not any("agreement" in s for s in scenarios.values())
    assert "unparsed %" in text and "judges agree %" in text
    assert "judge outputs that hold no readable verdict" in text
    assert "ROD (100.0 %), QD (100.0 %)" in text and "VSOD (" not in text
    for page in ("report.md", "report.html"):
        assert "unparsed %" in (run / "report" / page).read_text()


def test_judged_lines_without_judge_parsed_or_their_judge_are_named(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A judge whose outputs hold no verdict, its lines' `judge_parsed` then removed: the
    100 % unparsed warning must not vanish behind plain 0.0 rates. `report` names the lines
    that do not record which votes held a verdict (unparsed % leaves them out: "—"). A line
    whose settings lost the judge its run names is not taken as that judge's: named, not
    counted."""
    run = tmp_path / "run"
    judged_unreadably(data, run, "ROD,QD", capsys)
    lines = read_results(run / "results.jsonl")
    stripped = [{k: v for k, v in line.items() if k != "judge_parsed"} for line in lines]
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in stripped))
    code, text = run_cli(["report", str(run)], capsys)
    said = " ".join(text.split())
    assert code == 0, text
    assert "4 judged line(s) do not record which judge votes held a verdict" in said, said
    assert "in ROD (2), QD (2)" in said
    built = json.loads((run / "report" / "report.json").read_text())["runs"][0]["scenarios"]
    assert built["ROD"]["unparsed"] is None and built["ROD"]["n"] == 2
    for page in ("report.md", "report.html"):
        assert (
            "do not record which judge votes held a verdict" in (run / "report" / page).read_text()
        )
    # A line of the judged run whose settings name no judge: whose verdict is it?
    first, *rest = lines
    first = {**first, "settings": {k: v for k, v in first["settings"].items() if k != "judge"}}
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [first, *rest]))
    code, text = run_cli(["report", str(run)], capsys)
    said = " ".join(text.split())
    assert code == 0, text
    assert "records no judge in its settings" in said, said
    built = json.loads((run / "report" / "report.json").read_text())["runs"][0]["scenarios"]
    assert (
        built[first["scenario"]]["n"] == 1
        and built["QD" if first["scenario"] == "ROD" else "ROD"]["n"] == 2
    )


def test_show_marks_the_votes_without_a_verdict(data: Path, tmp_path: Path, capsys) -> None:
    """`show` prints each judge output; one that held no readable verdict scored 0s, which
    its text may belie (ROD's cut-off reasoning ends in "1, 1"): it is marked as such."""
    run = tmp_path / "run"
    judged_unreadably(data, run, "ROD,VSOD", capsys)
    ids = {line["scenario"]: line["sample_id"] for line in read_results(run / "results.jsonl")}
    code, text = run_cli(["show", str(run), "ROD", str(ids["ROD"])], capsys)
    assert code == 0 and "(no readable verdict: scored 0)" in text, text
    code, text = run_cli(["show", str(run), "VSOD", str(ids["VSOD"])], capsys)
    assert code == 0 and "judge output 1:" in text and "no readable verdict" not in text


# ----- judging again ------------------------------------------------------------------------


def judge_args(run: Path, url: str, name: str = "judge", *extra: str) -> list[str]:
    return ["judge", str(run), "--judge", f"openai:{name}@{url}", "--no-cache", *extra]


def test_a_failing_judge_keeps_the_verdicts_it_could_not_replace(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with (
        FakeOpenAI(respond=respond) as fake,
        FakeOpenAI(fault_rate=1.0, fault_kinds=("http500",)) as bad,
    ):
        oeg_run(data, fake.url, run, scenarios=("ROD", "QD"))
        before = (run / "results.jsonl").read_text()
        failing = judge_args(run, bad.url, "other-judge", "--judge-option", "max_retries=0")
        code, text = run_cli(failing, capsys)
        assert code == 3, text
        assert f"judging 4 of 4 lines of {run} in place" in text
        # Not one verdict of the new judge: the run is left as it was (run.json would
        # otherwise name a judge that judged nothing, and refuse the earlier one).
        assert "no line could be judged" in text and "left as it was" in text
        assert "rerun the same command" in text and "HTTP 500" in text
        assert (run / "results.jsonl").read_text() == before
        assert not (run / "results.previous.jsonl").exists()
        assert "other-judge" not in (run / "run.json").read_text()
        # A rerun with a judge that answers judges the four lines, and only those.
        asked = len(fake.chat_requests)
        code, text = run_cli(judge_args(run, fake.url, "other-judge"), capsys)
        assert code == 0, text
        assert len(fake.chat_requests) == asked + 4
        code, text = run_cli(judge_args(run, fake.url, "other-judge"), capsys)
        assert code == 0 and "judging 0 of 4 lines" in text
        assert len(fake.chat_requests) == asked + 4
    lines = read_results(run / "results.jsonl")
    assert not any("judge_error" in line for line in lines)
    assert {line["settings"]["judge"]["judge"] for line in lines} == {"openai:other-judge"}


def test_an_oeg_run_whose_judge_always_failed_keeps_its_layout(data: Path, tmp_path: Path) -> None:
    from rich.console import Console

    from proactivebench.cli.output import summary_table

    with FakeOpenAI(respond=respond) as fake, FakeOpenAI(fault_rate=1.0) as bad:
        model = load_model(f"openai:tested@{fake.url}")
        failing = Judge(load_model(f"openai:judge@{bad.url}", max_retries=0))
        settings = EvalSettings(mode="oeg", scenarios=("ROD",))
        outcome = evaluate(data, model, tmp_path / "run", settings, judge=failing)
    assert outcome.summary.oeg and outcome.summary.unjudged == 2
    console = Console(width=200, record=True)
    console.print(summary_table(outcome.summary))
    assert "aggregate %" in console.export_text() and "accuracy" not in console.export_text()


def test_judge_takes_the_run_lock_of_the_directory_it_writes(
    data: Path, tmp_path: Path, capsys
) -> None:
    from clirun import held_by_another_process

    run, other = tmp_path / "run", tmp_path / "other"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run, scenarios=("ROD",))
        before = (run / "results.jsonl").read_text()
        for target, extra in ((run, ()), (other, ("--out", str(other)))):
            with held_by_another_process(target) as pid:  # an eval into it is running
                code, text = run_cli(judge_args(run, fake.url, "j2", *extra), capsys)
            assert code == 1 and "is in use by another run" in text and f"PID {pid}" in text
            assert "Traceback" not in text
        assert (run / "results.jsonl").read_text() == before
        assert not (other / "results.jsonl").exists()
        code, text = run_cli(judge_args(run, fake.url, "j2", "--out", str(other)), capsys)
    assert code == 0, text
    assert (run / "results.jsonl").read_text() == before
    assert len(read_results(other / "results.jsonl")) == 2
    # The re-judging is an invocation of its own in run.json's provenance, after eval's.
    config = json.loads((other / "run.json").read_text())
    entries = config["provenance"]
    assert [e.get("command") for e in entries] == [None, "judge"]
    assert entries[-1]["judge_endpoints"] == [fake.url] and entries[-1]["ended"]


def test_judge_refuses_lines_that_are_not_the_runs(data: Path, tmp_path: Path, capsys) -> None:
    """run.json edited by hand (hint: true over lines played without): judging would stamp
    the new verdicts' lines with settings they were not played with. Refused as eval's resume
    refuses, naming the lines; the run is left byte for byte."""
    run = tmp_path / "run"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run, scenarios=("ROD",))
        config = json.loads((run / "run.json").read_text())
        config["settings"]["hint"] = True
        (run / "run.json").write_text(json.dumps(config))
        before = {p.name: p.read_bytes() for p in run.iterdir()}
        code, text = run_cli(judge_args(run, fake.url, "j2"), capsys)
    assert code == 1 and "Traceback" not in text
    assert f"cannot judge {run}: its results hold lines that are not this run's" in text
    played = "played with other settings than the run's: hint: False (run.json: True)"
    assert f"{run / 'results.jsonl'}:1: {played}" in text
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_judge_out_never_replaces_another_run(data: Path, tmp_path: Path, capsys) -> None:
    """`judge RUN --out DIR` writes DIR's run.json and results.jsonl: a DIR holding another
    run (here a multiple-choice run of the oracle), or lines of no known run, is refused and
    left byte for byte; a DIR an earlier judging of RUN wrote is judged again."""
    run, mcqa, orphan, copy = (tmp_path / name for name in ("run", "mcqa", "orphan", "copy"))
    args = ["eval", "--data", str(data), "--model", "baseline:oracle", "--scenarios", "ROD"]
    code, text = run_cli([*args, "--out", str(mcqa), "--no-report"], capsys)
    assert code == 0, text
    orphan.mkdir()
    (orphan / "results.jsonl").write_bytes((mcqa / "results.jsonl").read_bytes())
    files = {d: {p.name: p.read_bytes() for p in d.iterdir()} for d in (mcqa, orphan)}
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run, scenarios=("ROD",))
        code, text = run_cli(judge_args(run, fake.url, "j2", "--out", str(mcqa)), capsys)
        assert code == 1 and "Traceback" not in text
        assert f"{mcqa} holds another run than {run}" in " ".join(text.split())
        assert 'model: "baseline:oracle" → "openai:tested"' in text
        code, text = run_cli(judge_args(run, fake.url, "j2", "--out", str(orphan)), capsys)
        assert code == 1 and "has result lines but" in " ".join(text.split())
        assert {d: {p.name: p.read_bytes() for p in d.iterdir()} for d in files} == files
        # Into a new directory, then again there with the same judge and with another.
        for name in ("j2", "j2", "j3"):
            code, text = run_cli(judge_args(run, fake.url, name, "--out", str(copy)), capsys)
            assert code == 0, text
    config = json.loads((copy / "run.json").read_text())
    assert config["settings"]["judge"]["judge"] == "openai:j3"
    assert len(read_results(copy / "results.jsonl")) == 2


@pytest.mark.parametrize("spec", ["baseline:oracle", "baseline:random"])
def test_a_judge_that_cannot_judge_is_refused_before_the_model_is_loaded(
    data: Path, tmp_path: Path, capsys, spec: str
) -> None:
    # The tested model would fail to load: the judge is refused first.
    args = ["eval", "--data", str(data), "--model", "python:/nowhere/agent.py:answer"]
    args += ["--out", str(tmp_path / "run"), "--mode", "oeg", "--judge", spec]
    code, text = run_cli(args, capsys)
    assert code == 1 and f"{spec} cannot judge" in text and "nowhere" not in text
    assert not (tmp_path / "run").exists()
    code, text = run_cli(["judge", str(tmp_path), "--judge", spec], capsys)
    assert code == 1 and f"{spec} cannot judge" in text and "Traceback" not in text


# ----- judging many lines at once ----------------------------------------------------------

#: Each line's verdict (ps, cp) by hand, by scenario in sample id order (see EXPECTED).
VERDICTS = {
    "ROD": [(1, 0), (1, 0)],
    "VSOD": [(0, 1), (0, 1)],
    "MVP-N": [(0, 0), (0, 0)],
    "IN-C": [(1, 0), (0, 0)],
    "QD": [(1, 1), (1, 1)],
    "CIT": [(1, 0), (1, 0)],
    "COCO": [(0, 1), (0, 1), (0, 1)],
}


def voting_judge(body: dict[str, Any]) -> str:
    """`respond`'s judge, but its third vote (seed 2) marks nothing: the majority is the
    honest verdict, agreed by 2 of 3 votes unless that verdict is itself all zeros."""
    honest = respond(body)
    if body.get("seed") != 2:
        return honest
    return ", ".join("0" for _ in honest.rsplit("\n", 1)[-1].split(","))


def verdicts_of(lines: list[dict[str, Any]]) -> dict[str, list[tuple[int, int]]]:
    found: dict[str, list[tuple[int, int]]] = {}
    for line in sorted(lines, key=lambda x: x["sample_id"]):
        verdict = (line["proactive_suggestion"], line["category_prediction"])
        found.setdefault(line["scenario"], []).append(verdict)
    return found


def test_judging_lines_at_once_gives_what_one_at_a_time_gives(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run)
    outputs = {}
    for concurrency in ("1", "8"):
        out = tmp_path / f"c{concurrency}"
        with FakeOpenAI(respond=voting_judge, latency=0.05) as judge:
            args = judge_args(run, judge.url, "voter", "--judge-votes", "3", "--out", str(out))
            code, text = run_cli([*args, "--concurrency", concurrency, "--no-report"], capsys)
            assert code == 0, text
            peak = judge.peak_in_flight
        # One line at a time: its three votes together; eight lines: more, never over 8 x 3.
        assert peak == 3 if concurrency == "1" else 3 < peak <= 24
        outputs[concurrency] = ((out / "results.jsonl").read_text(), (out / "summary.json"))
        assert not (out / "results.judging.jsonl").exists()
    one, many = outputs["1"], outputs["8"]
    assert many[0] == one[0] and many[1].read_text() == one[1].read_text()
    lines = read_results(tmp_path / "c8" / "results.jsonl")
    assert verdicts_of(lines) == VERDICTS
    for line in lines:
        unanimous = (line["proactive_suggestion"], line["category_prediction"]) == (0, 0)
        assert line["judge_agreement"] == (1.0 if unanimous else 0.6667)
        assert line["judge_outputs"][:2] == [line["judge_outputs"][0]] * 2
        assert line["judge_outputs"][2].startswith("0")  # the votes in seed order
    # The lines keep the file's order: the paper's scenario order, then sample id.
    assert [x["scenario"] for x in lines] == [k for k, v in VERDICTS.items() for _ in v]


def test_an_oeg_run_asks_the_votes_of_an_episode_together(data: Path, tmp_path: Path) -> None:
    settings = EvalSettings(mode="oeg", scenarios=("ROD", "QD"))
    with (
        FakeOpenAI(respond=respond) as fake,
        FakeOpenAI(respond=voting_judge, latency=0.1) as judge_server,
    ):
        model = load_model(f"openai:tested@{fake.url}")
        judge = Judge(load_model(f"openai:judge@{judge_server.url}"), votes=3)
        outcome = evaluate(data, model, tmp_path / "run", settings, judge=judge, concurrency=1)
        assert judge_server.peak_in_flight == 3
    assert not outcome.errors
    assert verdicts_of(read_results(tmp_path / "run" / "results.jsonl")) == {
        k: VERDICTS[k] for k in ("ROD", "QD")
    }


#: A judge for the `python:` backend: `respond`'s verdicts; each call appends a line to CALLS,
#: and the call numbered INTERRUPT_AT presses Ctrl-C (once: it removes its marker).
INTERRUPTING_JUDGE = """
import asyncio, signal, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_oeg import respond

CALLS, MARK, INTERRUPT_AT = Path({calls!r}), Path({mark!r}), {at}

async def judge(messages, observation):
    with CALLS.open("a") as f:
        f.write("call\\n")
    count = len(CALLS.read_text().splitlines())
    if count == INTERRUPT_AT and MARK.exists():
        MARK.unlink()
        signal.raise_signal(signal.SIGINT)
        await asyncio.sleep(30)  # cancelled by the Ctrl-C
    await asyncio.sleep(0)
    return respond({{"messages": messages}})
"""


def test_an_interrupted_judge_goes_on_from_the_lines_it_judged(
    data: Path, tmp_path: Path, capsys
) -> None:
    run, calls, mark = tmp_path / "run", tmp_path / "calls.log", tmp_path / "interrupt"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run)
    before = (run / "results.jsonl").read_text()
    source = INTERRUPTING_JUDGE.format(
        tests=str(Path(__file__).parent), calls=str(calls), mark=str(mark), at=8
    )
    (tmp_path / "judging.py").write_text(source)
    mark.touch()
    args = ["judge", str(run), "--judge", f"python:{tmp_path / 'judging.py'}:judge"]
    args += ["--no-cache", "--no-report", "--concurrency", "2"]
    with ctrl_c_here():
        code, text = run_cli(args, capsys)
    assert code == 130 and "interrupted; rerun the same command" in text, text
    assert "Traceback" not in text
    # The results file is untouched; the lines judged so far are kept beside it.
    assert (run / "results.jsonl").read_text() == before
    so_far = read_results(run / "results.judging.jsonl")
    assert 1 <= len(so_far) < 15
    assert len({(x["scenario"], x["sample_id"]) for x in so_far}) == len(so_far)
    # The report says a judging waits there (it said nothing: tryout 12).
    code, text = run_cli(["report", str(run), "--out", str(tmp_path / "rep")], capsys)
    told = " ".join(text.split())
    assert code == 0 and "a judging of this run was stopped before its end" in told, text
    asked = len(calls.read_text().splitlines())
    code, text = run_cli(args, capsys)
    assert code == 0, text
    left = 15 - len(so_far)
    assert f"judging {left} of 15 lines" in text and f"{len(so_far)} more were judged" in text
    # Only the lines not judged yet are asked about; each line is in the results once.
    assert len(calls.read_text().splitlines()) == asked + left
    lines = read_results(run / "results.jsonl")
    assert len(lines) == 15 and len({(x["scenario"], x["sample_id"]) for x in lines}) == 15
    assert verdicts_of(lines) == VERDICTS
    assert {x["settings"]["judge"]["judge"] for x in lines} == {args[3]}
    assert not (run / "results.judging.jsonl").exists()
    assert (run / "results.previous.jsonl").read_text() == before


def erring_judge(path: str, body: dict[str, Any]) -> Raw:
    """A judge server that refuses the ROD lines (HTTP 400), answers QD's in a language the
    verdict reader does not read, and the others as `voting_judge` does."""
    user = body["messages"][1]["content"] if len(body["messages"]) > 1 else ""
    if "Move the blocks" in user:
        return Raw(json.dumps({"error": {"message": "prompt too long"}}).encode(), status=400)
    answer = "sí, sí" if "details" in user.lower() else voting_judge(body)
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]}
    return Raw(json.dumps(completion).encode(), headers={"Content-Type": "application/json"})


def test_a_judge_that_fails_or_talks_nonsense_at_once_gets_one_message_per_line(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run)
    old = {(x["scenario"], x["sample_id"]): x for x in read_results(run / "results.jsonl")}
    with FakeOpenAI(raw=erring_judge, latency=0.02) as judge:
        args = judge_args(run, judge.url, "erring", "--judge-votes", "2", "--no-report")
        code, text = run_cli(
            [*args, "--concurrency", "6", "--judge-option", "max_retries=0"], capsys
        )
        assert judge.peak_in_flight > 1
    assert code == 3 and "Traceback" not in text, text
    assert "2 line(s) could not be judged (2 kept their previous verdict)" in text
    assert "prompt too long" in text and "unparsed %" in text
    lines = read_results(run / "results.jsonl")
    assert len(lines) == 15
    for line in lines:
        key = (line["scenario"], line["sample_id"])
        if line["scenario"] == "ROD":  # refused: the earlier verdict, and why it stays
            assert "prompt too long" in line["judge_error"] and "error" not in line
            assert {k: v for k, v in line.items() if k != "judge_error"} == old[key]
        elif line["scenario"] == "QD":  # no readable verdict: scored 0, marked unparsed
            assert line["judge_parsed"] == [False, False] and line["aggregate"] == 0
        else:
            assert line["judge_parsed"] == [True, True] and "judge_error" not in line
    expected = {k: v for k, v in VERDICTS.items() if k not in ("ROD", "QD")}
    assert {k: v for k, v in verdicts_of(lines).items() if k in expected} == expected


def test_judge_spreads_its_requests_over_the_judge_endpoints(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run)
    with (
        FakeOpenAI(respond=voting_judge, latency=0.05) as first,
        FakeOpenAI(respond=voting_judge, latency=0.05) as second,
    ):
        args = judge_args(run, first.url, "voter", "--judge-votes", "3", "--no-report")
        args += ["--judge-option", f"endpoints={second.url}", "--concurrency", "4"]
        code, text = run_cli(args, capsys)
        served = (len(first.chat_requests), len(second.chat_requests))
    assert code == 0, text
    assert sum(served) == 15 * 3 and min(served) > 0
    assert verdicts_of(read_results(run / "results.jsonl")) == VERDICTS


#: A `python:` judge that calls `sys.exit(0)` on the ROD lines and judges the others as
#: `respond` does.
EXITING_JUDGE = """
import sys
sys.path.insert(0, {tests!r})
from test_oeg import respond

def judge(messages, observation):
    if "Move the blocks" in str(messages):
        sys.exit(0)
    return respond({{"messages": messages}})
"""


def test_a_python_judge_that_exits_fails_its_lines_not_the_tool(
    data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "run"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run)
    (tmp_path / "exiting.py").write_text(EXITING_JUDGE.format(tests=str(Path(__file__).parent)))
    args = ["judge", str(run), "--judge", f"python:{tmp_path / 'exiting.py'}:judge"]
    code, text = run_cli([*args, "--no-cache", "--no-report"], capsys)
    assert code == 3 and "line(s) could not be judged" in text, text
    lines = read_results(run / "results.jsonl")
    assert len(lines) == 15
    for line in lines:
        if line["scenario"] == "ROD":
            assert "SystemExit: the code called sys.exit(0)" in line["judge_error"]
        else:
            assert "judge_error" not in line


#: A model that names its sample, and judges: one that marks the first entry, one that fails
#: on one sample's generation (FAIL: its id).
NAMED = """
import os


def answer(messages, observation):
    return f"sample {observation.sample_id}: please move it"


def judge(messages, observation):
    return "1" + ", 0" * messages[1]["content"].split("(List):")[1].count(",")


def flaky(messages, observation):
    failing = os.environ.get("NAMED_JUDGE_FAILS_ON", "FAIL")
    if f"sample {failing}:" in messages[1]["content"]:
        raise RuntimeError("judge down")
    return judge(messages, observation)
"""


def judged_run(data: Path, tmp_path: Path, capsys, *extra: str) -> tuple[Path, str, list[str]]:
    """An open-ended QD run of the `NAMED` agent and judge: (run, the python: spec, eval's
    arguments without --out)."""
    (tmp_path / "named.py").write_text(NAMED)
    run, named = tmp_path / "run", f"python:{tmp_path / 'named.py'}"
    args = ["eval", "--data", str(data), "--model", f"{named}:answer", "--judge"]
    args += [f"{named}:judge", "--mode", "oeg", "--scenarios", "QD", "--no-cache"]
    code, text = run_cli([*args, *extra, "--out", str(run)], capsys)
    assert code == 0, text
    return run, named, args


def test_a_judge_failing_on_some_lines_keeps_their_verdicts(
    data: Path, tmp_path: Path, capsys
) -> None:
    """Some lines judged, one failing: the failing line keeps its earlier verdict and says
    why (`judge_error`), the others take the new judge, and run.json names the new judge
    (a rerun of the same command retries the failed line)."""
    run, named, _ = judged_run(data, tmp_path, capsys, "--no-report")
    old = {x["sample_id"]: x for x in read_results(run / "results.jsonl")}
    assert len(old) > 1
    failing = min(old)
    (tmp_path / "named.py").write_text(NAMED.replace("FAIL", str(failing)))
    code, text = run_cli(["judge", str(run), "--judge", f"{named}:flaky", "--no-cache"], capsys)
    assert code == 3 and "1 line(s) could not be judged (1 kept their previous verdict" in text
    lines = {x["sample_id"]: x for x in read_results(run / "results.jsonl")}
    assert "judge down" in lines[failing]["judge_error"]
    assert {k: v for k, v in lines[failing].items() if k != "judge_error"} == old[failing]
    others = [line for sample, line in lines.items() if sample != failing]
    assert {line["settings"]["judge"]["judge"] for line in others} == {f"{named}:flaky"}
    assert f"{named}:flaky" in (run / "run.json").read_text()


def test_a_report_warns_of_lines_scored_by_an_earlier_judge(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A line the new judge could not judge keeps the earlier judge's verdict while run.json
    names the new judge: `report` says so and where, or its table would pass a mix of two
    judges for the new judge's rates."""
    run, named, _ = judged_run(data, tmp_path, capsys, "--no-report")
    code, text = run_cli(["report", str(run)], capsys)
    assert code == 0 and "earlier judge" not in text
    failing = min(x["sample_id"] for x in read_results(run / "results.jsonl"))
    (tmp_path / "named.py").write_text(NAMED.replace("FAIL", str(failing)))
    again = ["judge", str(run), "--judge", f"{named}:flaky", "--no-cache", "--no-report"]
    code, text = run_cli(again, capsys)
    assert code == 3, text
    code, text = run_cli(["report", str(run)], capsys)
    said = " ".join(text.split())
    assert code == 0, text
    assert "1 line(s) keep an earlier judge's verdict" in said and "in QD (1)" in said
    # `show` of that line says whose verdict it shows, and why the new judge gave none.
    code, text = run_cli(["show", str(run), "QD", str(failing)], capsys)
    said = " ".join(text.split())
    assert code == 0 and "verdict kept from an earlier judge" in said and "judge down" in said


def test_retrying_a_judge_keeps_the_earlier_judges_results_as_the_previous_ones(
    data: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge that failed on a line is rerun, as the command says, to retry it: the rerun
    replaces results this judge wrote, so `results.previous.jsonl` must still hold the
    earlier judge's verdicts (it is the only copy of them left), not this judge's."""
    run, named, _ = judged_run(data, tmp_path, capsys, "--no-report")
    original = (run / "results.jsonl").read_text()
    failing = min(x["sample_id"] for x in read_results(run / "results.jsonl"))
    # The judge fails on one line (its code unchanged: an edited judge is another judge).
    monkeypatch.setenv("NAMED_JUDGE_FAILS_ON", str(failing))
    again = ["judge", str(run), "--judge", f"{named}:flaky", "--no-cache", "--no-report"]
    code, text = run_cli(again, capsys)
    assert code == 3, text
    assert (run / "results.previous.jsonl").read_text() == original
    monkeypatch.delenv("NAMED_JUDGE_FAILS_ON")  # the judge answers again: the retry
    code, text = run_cli(again, capsys)
    assert code == 0, text
    assert (run / "results.previous.jsonl").read_text() == original
    assert "the earlier judge's results stay in" in " ".join(text.split())
    lines = read_results(run / "results.jsonl")
    assert {line["settings"]["judge"]["judge"] for line in lines} == {f"{named}:flaky"}
    # Nothing left to judge: the backup still holds the earlier judge's results.
    code, text = run_cli(again, capsys)
    assert code == 0 and (run / "results.previous.jsonl").read_text() == original
    # Another judge's turn: now the flaky judge's results are the ones one judge back.
    judged = (run / "results.jsonl").read_text()
    code, text = run_cli(["judge", str(run), "--judge", f"{named}:judge", "--no-cache"], capsys)
    assert code == 0, text
    assert (run / "results.previous.jsonl").read_text() == judged


#: A judge whose every vote marks each entry MARK ("1" or "0"): editing MARK edits its code.
MARKING = """
def judge(messages, observation):
    entries = messages[1]["content"].split("(List):")[1].split("###")[0].count(",") + 1
    return ", ".join([{mark!r}] * entries)
"""


def test_a_judge_edited_between_reruns_is_another_judge(data: Path, tmp_path: Path, capsys) -> None:
    """A `python:` judge edited between two `judge` runs of one run is another judge, though
    its name is the same: every line takes the edited code's verdict (none is left with the
    earlier code's as if it were the new one's), and `results.previous.jsonl` holds the earlier
    code's results, one judge back. run.json's provenance records each code's digest."""
    run = judged_run(data, tmp_path, capsys, "--no-report")[0]
    marking = tmp_path / "marking.py"
    again = ["judge", str(run), "--judge", f"python:{marking}:judge", "--no-cache", "--no-report"]
    marking.write_text(MARKING.format(mark="1"))
    code, text = run_cli(again, capsys)
    assert code == 0, text
    ones = (run / "results.jsonl").read_text()
    assert {o for x in read_results(run / "results.jsonl") for o in x["judge_outputs"]} == {"1, 1"}
    # (Another size: Python's bytecode cache would take a file of one size and second as it.)
    marking.write_text(MARKING.format(mark="0") + "# edited\n")
    code, text = run_cli(again, capsys)
    assert code == 0, text
    lines = read_results(run / "results.jsonl")
    assert {o for x in lines for o in x["judge_outputs"]} == {"0, 0"}
    assert (run / "results.previous.jsonl").read_text() == ones
    codes = [e.get("judge_code") for e in json.loads((run / "run.json").read_text())["provenance"]]
    assert len(set(codes[-2:])) == 2 and None not in codes


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            ["--mode", "oeg"],
            "error: open-ended generation needs a judge: add --judge SPEC (--mode oeg)",
        ),
        (
            ["--judge", "JUDGE"],
            "error: multiple choice takes no judge: --judge is for --mode oeg or oeg-multiturn",
        ),
    ],
    ids=["oeg-without-judge", "mcqa-with-judge"],
)
def test_a_judge_missing_or_out_of_place_is_told_apart(
    data: Path, tmp_path: Path, capsys, extra: list[str], said: str
) -> None:
    """The refusal says which of the two mistakes was made, not both at once."""
    (tmp_path / "x.py").write_text("def f(messages, observation):\n    return '1,0'\n")
    args = ["eval", "--data", str(data), "--out", str(tmp_path / "run"), "--no-report"]
    extra = [f"python:{tmp_path / 'x.py'}:f" if word == "JUDGE" else word for word in extra]
    code, text = run_cli([*args, "--model", "baseline:oracle", *extra], capsys)
    assert code == 1 and said in text, text


class Crash(BaseException):
    """A process killed at this point: nothing after it runs (not an error anything catches)."""


#: The steps of a re-judging's finish that write a file recording what the run holds, in
#: `rejudge`'s namespace; a crash is simulated before each, and after the last.
FINISH_STEPS = ("_keep_previous", "write_results", "write_run_config", "write_summary")


@pytest.mark.parametrize(
    ("step", "after"), [*((s, False) for s in FINISH_STEPS), (FINISH_STEPS[-1], True)]
)
def test_a_judge_killed_at_any_step_of_its_finish_loses_no_judges_verdicts(
    data: Path, tmp_path: Path, capsys, monkeypatch, step: str, after: bool
) -> None:
    """A run judged by one judge, then by another that is killed at a step of writing its
    results (before it, or after the last), then rerun: the earlier judge's results stay in
    `results.previous.jsonl` (its only copy), and the run ends as one judging without a
    crash leaves it: every line and run.json name the new judge, with its verdicts."""
    from proactivebench.jobs import rejudge as module

    run, named, _ = judged_run(data, tmp_path, capsys, "--no-report")
    original = (run / "results.jsonl").read_text()
    again = ["judge", str(run), "--judge", f"{named}:flaky", "--no-cache", "--no-report"]
    real = getattr(module, step)

    def crash(*args: Any, **kwargs: Any) -> Any:
        if after:
            real(*args, **kwargs)
        raise Crash(step)

    monkeypatch.setattr(module, step, crash)
    with pytest.raises(Crash):
        run_cli(again, capsys)
    monkeypatch.undo()
    # The journal goes last: until then the rerun takes its verdicts instead of asking again.
    assert (run / "results.judging.jsonl").exists()
    # Left so, the run's numbers are one judge's, or the report says they mix two.
    judges = {line["settings"]["judge"]["judge"] for line in read_results(run / "results.jsonl")}
    named_judge = json.loads((run / "run.json").read_text())["settings"]["judge"]["judge"]
    code, text = run_cli(["report", str(run)], capsys)
    mixed = "line(s) keep an earlier judge's verdict" in " ".join(text.split())
    assert code == 0 and mixed == (judges != {named_judge}), text
    code, text = run_cli(again, capsys)
    assert code == 0, text
    assert (run / "results.previous.jsonl").read_text() == original
    lines = read_results(run / "results.jsonl")
    assert len(lines) == len(read_results(tmp_path / "run" / "results.previous.jsonl"))
    assert {line["settings"]["judge"]["judge"] for line in lines} == {f"{named}:flaky"}
    config = json.loads((run / "run.json").read_text())
    assert config["settings"]["judge"]["judge"] == f"{named}:flaky"
    assert not (run / "results.judging.jsonl").exists()


def _refused_by_every_writer(
    run: Path, named: str, args: list[str], folder: Path, kind: str, capsys
) -> None:
    """`judge --out`, `eval --out` and `merge --out` into `folder` each exit 1 naming it as
    `kind`, and leave it byte for byte (or not there, as it was)."""
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    existed = folder.exists()
    for command in (
        ["judge", str(run), "--judge", f"{named}:judge", "--no-cache", "--out", str(folder)],
        [*args, "--out", str(folder)],
        ["merge", str(run), "--out", str(folder)],
    ):
        code, text = run_cli(command, capsys)
        said = " ".join(text.split())
        assert code == 1 and "Traceback" not in text, (command, text)
        assert f"cannot write a run into {folder}: it is {kind}" in said, (command, text)
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
        assert folder.exists() == existed, (command, folder)


def test_no_writer_of_a_run_takes_a_suites_output_or_a_report_folder(
    data: Path, tmp_path: Path, capsys
) -> None:
    """`judge --out`, `eval --out` and `merge --out` into a suite's output (its suite.json),
    a report folder (a run's report/) or a folder of runs are refused before anything is
    written there: a run written over them would be taken for the suite, sit inside a report,
    or hide the runs beside it."""
    run, named, args = judged_run(data, tmp_path, capsys)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "suite.json").write_text('{"experiments": []}\n')
    folders = [(suite, "a suite's output"), (run / "report", "a report folder")]
    for folder, kind in [*folders, (tmp_path, f"a folder of runs ({run / 'run.json'})")]:
        _refused_by_every_writer(run, named, args, folder, kind, capsys)


def test_no_writer_of_a_run_takes_a_report_folder_to_be_or_a_data_directory(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A run's or suite's report folder not written yet (`RUN/report`, `OUT/report`: the next
    `report` writes there, over or beside the run) and a data directory (it holds a scenario's
    record file) are refused by `judge --out`, `eval --out` and `merge --out` before anything
    is written there."""
    run, named, args = judged_run(data, tmp_path, capsys, "--no-report")
    assert not (run / "report").exists()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "suite.json").write_text('{"experiments": []}\n')
    copy = full_dataset(tmp_path / "data")
    cases = [
        (run / "report", f"the folder the report of {run} is written to"),
        (suite / "report", f"the folder the report of {suite} is written to"),
        (copy, f"a data directory ({copy / 'Realistic-Occlusion-Dataset_preprocessed.jsonl'})"),
    ]
    for folder, kind in cases:
        _refused_by_every_writer(run, named, args, folder, kind, capsys)


def test_the_files_that_mark_a_folder_not_a_run_are_the_suites_and_the_reports() -> None:
    """`rundir.NOT_A_RUN` names the files the suite and the report write by these names."""
    from proactivebench.jobs.publish import REPORT_FILES
    from proactivebench.jobs.suite import SUITE_RECORD
    from proactivebench.report.build import BUILT_FROM
    from proactivebench.run.rundir import NOT_A_RUN

    assert set(NOT_A_RUN) == {SUITE_RECORD, *REPORT_FILES, BUILT_FROM}


def test_another_judge_says_it_discards_an_interrupted_judges_verdicts(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A judging interrupted (Ctrl-C) leaves its verdicts in results.judging.jsonl; another
    judge asked then does not take them and removes the journal: it says so, naming the
    interrupted judge and how many verdicts it held."""
    run, calls, mark = tmp_path / "run", tmp_path / "calls.log", tmp_path / "interrupt"
    with FakeOpenAI(respond=respond) as fake:
        oeg_run(data, fake.url, run)
        source = INTERRUPTING_JUDGE.format(
            tests=str(Path(__file__).parent), calls=str(calls), mark=str(mark), at=8
        )
        (tmp_path / "judging.py").write_text(source)
        mark.touch()
        first = f"python:{tmp_path / 'judging.py'}:judge"
        args = ["judge", str(run), "--judge", first, "--no-cache", "--no-report"]
        with ctrl_c_here():
            code, text = run_cli([*args, "--concurrency", "2"], capsys)
        assert code == 130, text
        held = len(read_results(run / "results.judging.jsonl"))
        assert held >= 1
        code, text = run_cli(judge_args(run, fake.url, "j2", "--no-report"), capsys)
    said = " ".join(text.split())
    assert code == 0, text
    assert f"the interrupted judging by {first} held {held} verdict(s)" in said
    assert "discarded, since another judge was asked" in said
    assert not (run / "results.judging.jsonl").exists()
