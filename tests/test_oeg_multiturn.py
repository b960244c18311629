"""Multi-turn open-ended generation (`--mode oeg-multiturn`, docs/protocol.md §6, paper Table
10): scripted judge verdicts turn by turn -> turns, accuracy and ps rate computed by hand; the
random mapping of a suggestion that names no offered action, reproducible by the seed and
recorded; a named action carried out; the step limit; history sent; re-judging, which keeps
the episodes judged as before and leaves the others for `eval` to play again.

The tested model says which sample and turn it is at; the judge (a `python:` function) reads
that from the generation and answers the verdict the test scripted for it.
"""

from __future__ import annotations

import json
import random
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from proactivebench import load_dataset, make_episode
from proactivebench.benchmark.metrics import choices, metric
from proactivebench.benchmark.prompting import request_messages
from proactivebench.data.synth import generate
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.report.measures import measure_run, unreadable_warnings
from proactivebench.report.runs import load_run
from proactivebench.report.tables import run_table
from proactivebench.run.judge import Judge
from proactivebench.run.rundir import read_results
from proactivebench.run.settings import EvalSettings

#: What the model says at each turn: its place, and (for ROD) a sentence that may name an
#: action. `SAY` maps "scenario:sample" to that sentence (default: none).
AGENT = """
import json, pathlib
SAY = json.loads(pathlib.Path(__file__).with_name("say.json").read_text())
SEEN = pathlib.Path(__file__).with_name("seen.jsonl")

def answer(messages, observation):
    with SEEN.open("a") as out:
        out.write(json.dumps({"sample": observation.sample_id, "turn": observation.turn,
                              "messages": [[p.get("text") if isinstance(p, dict) else p
                                            for p in (m["content"] if isinstance(m["content"], list)
                                                      else [m["content"]])]
                                           for m in messages],
                              "roles": [m["role"] for m in messages]}) + "\\n")
    place = f"{observation.scenario}:{observation.sample_id}:{observation.turn}"
    return f"[{place}] " + SAY.get(f"{observation.scenario}:{observation.sample_id}", "Hmm.")
"""

#: The judge: the verdict scripted for the place the generation names. "ps": the first entry
#: (an intervention); "cp": the last (the category); "none": nothing; "bad": no verdict.
JUDGE = """
import ast, json, pathlib
SCRIPT = json.loads(pathlib.Path(__file__).with_name("script.json").read_text())

def judge(messages, observation):
    user = messages[1]["content"]
    entries = ast.literal_eval(user.split("### Correct Answers (List):\\n")[1].split("\\n###")[0])
    output = user.split("### System Output:\\n")[1]
    place = output.split("[")[1].split("]")[0]
    scenario, sample, turn = place.split(":")
    verdicts = SCRIPT.get(f"{scenario}:{sample}", [])
    verdict = verdicts[min(int(turn), len(verdicts)) - 1] if verdicts else "ps"
    if verdict == "bad":
        return "I cannot decide."
    marks = ["0"] * len(entries)
    if verdict == "ps":
        marks[0] = "1"
    elif verdict == "cp":
        marks[-1] = "1"
    return ", ".join(marks)
"""

#: JUDGE, but its call on QD sample 1's turn 2 fails.
FAILING_JUDGE = JUDGE.replace(
    '    if verdict == "bad":',
    '    if place == "QD:1:2":\n        raise RuntimeError("judge down")\n    if verdict == "bad":',
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    generate(root, per_scenario=5, scenarios=["QD", "ROD"], seed=2)
    return root


def play(
    data: Path,
    tmp: Path,
    script: dict[str, list[str]],
    say: dict[str, str] | None = None,
    judge_source: str = JUDGE,
    **settings: Any,
) -> dict[tuple[str, int], dict[str, Any]]:
    """Run the scripted model and judge; the lines by (scenario, sample)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "agent.py").write_text(AGENT)
    (tmp / "judging.py").write_text(judge_source)
    (tmp / "script.json").write_text(json.dumps(script))
    (tmp / "say.json").write_text(json.dumps(say or {}))
    model = load_model(f"python:{tmp / 'agent.py'}:answer")
    judge = Judge(load_model(f"python:{tmp / 'judging.py'}:judge"))
    run = tmp / "run"
    settings = {"mode": "oeg-multiturn", "all_samples": True, **settings}
    evaluate(data, model, run, EvalSettings(**settings), judge=judge)
    return {(x["scenario"], x["sample_id"]): x for x in read_results(run / "results.jsonl")}


def records(data: Path, scenario: str) -> dict[int, Any]:
    return {r.id: r for r in load_dataset(data, [scenario], all_samples=True).records[scenario]}


def test_verdict_sequences_give_turns_accuracy_and_ps_rate(data: Path, tmp_path: Path) -> None:
    qd = records(data, "QD")
    script = {
        "QD:0": ["cp"],  # correct at once: 1 turn, 0 suggestions
        "QD:1": ["ps", "ps", "cp"],  # two suggestions carried out, then correct: 3 turns
        "QD:2": ["ps", "none"],  # a suggestion, then nothing the judge accepts: wrong, 2 turns
        "QD:3": ["bad"],  # no readable verdict: unreadable, 1 turn
        "QD:4": ["ps"],  # suggestions until QD's last turn, which offers no action: wrong
    }
    lines = play(data, tmp_path, script, scenarios=("QD",))
    last = qd[4].num_images  # QD's step limit: one turn per drawing stage
    expected = {0: (True, 1, "correct"), 1: (True, 3, "correct"), 2: (False, 2, "wrong")}
    expected |= {3: (False, 1, "unreadable"), 4: (False, last, "wrong")}
    for sample, (correct, turns, end) in expected.items():
        line = lines[("QD", sample)]
        assert (line["correct"], line["num_turns"], line["end_reason"]) == (correct, turns, end)
        assert line["proactive_suggestions"] == turns - 1
    verdicts = [t["verdict"] for t in lines[("QD", 1)]["trace"]]
    assert verdicts == ["proactive", "proactive", "correct"]
    assert lines[("QD", 3)]["trace"][0]["verdict"] == "mismatch"
    assert (
        lines[("QD", 4)]["trace"][-1]["reason"] == "the state offers no valid action to carry out"
    )
    # Each turn keeps its judge output and 0/1 verdicts, judged against that state's answers.
    turn = lines[("QD", 1)]["trace"][2]
    assert (turn["proactive_suggestion"], turn["category_prediction"]) == (0, 1)
    assert turn["valid_answers_text"].endswith(qd[1].answer + ".")
    assert turn["options"] == [] and turn["judge_parsed"] == [True]
    # summary.json: MCQA's rates, by hand. Accuracy 2/5; ps rate (0 + 2 + 1 + 0 + last-1) / 5.
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())["scenarios"]["QD"]
    assert summary["accuracy"] == pytest.approx(40.0)
    assert summary["ps_rate"] == pytest.approx((0 + 2 + 1 + 0 + last - 1) / 5)
    # OEG's measures per turn (the report's): by hand, from the scripts above.
    per_turn = {
        "first_turn_ps": [0, 100, 100, 0, 100],
        "first_turn_cp": [100, 0, 0, 0, 0],
        "turn_ps": [0, 200 / 3, 50, 0, 100],
        "turn_cp": [100, 100 / 3, 0, 0, 0],
        "turn_unparsed": [0, 0, 0, 100, 0],
    }
    for key, values in per_turn.items():
        found = [metric(key).value(lines[("QD", i)]) for i in range(5)]
        assert found == pytest.approx(values), key
    assert json.loads((tmp_path / "run" / "run.json").read_text())["settings"]["mode"] == (
        "oeg-multiturn"
    )
    # The action shares read each judged turn from its verdict (protocol §9): no turn
    # abstains, a suggestion is proactive (carried out or, at QD's last turn, not), nothing
    # accepted is a wrong category, no readable vote is unreadable.
    kinds = {i: [c["choice"] for c in choices(lines[("QD", i)])] for i in range(5)}
    assert kinds == {
        0: ["category"],
        1: ["proactive", "proactive", "category"],
        2: ["proactive", "category"],
        3: ["unreadable"],
        4: ["proactive"] * last,
    }
    # One episode in five ended unreadable: the warning blames the judge's format, not the
    # answer format (free text has no option to designate).
    measures = measure_run(load_run(tmp_path / "run"), n_resamples=10)
    (warning,) = unreadable_warnings(measures)
    assert warning.startswith("episodes ended by a turn whose judge votes held no readable")
    assert "QD (20.0 %)" in warning and "--answer-extraction" not in warning
    # The run's table in the report shows the measures per turn, the values above.
    table = run_table(measures)
    qd_row = next(row for row in table.rows if row[0].text == "QD")
    for key, values in per_turn.items():
        cell = qd_row[table.columns.index(metric(key).heading)]
        assert cell.value == pytest.approx(sum(values) / 5), key


def test_the_random_mapping_is_drawn_by_the_seed_and_recorded(data: Path, tmp_path: Path) -> None:
    """ROD offers two moves every turn; "Hmm." names neither, so each suggestion is mapped to
    one drawn from the state's valid options by Random("oeg-multiturn:SEED:ROD:ID:TURN")."""
    rod = records(data, "ROD")
    runs = {
        name: play(data, tmp_path / name, {}, scenarios=("ROD",), seed=seed)
        for name, seed in (("a", 7), ("b", 7), ("c", 8))
    }
    actions = {
        name: {k: [t.get("action") for t in x["trace"]] for k, x in lines.items()}
        for name, lines in runs.items()
    }
    assert actions["a"] == actions["b"]  # the same seed, the same actions
    assert actions["a"] != actions["c"]
    for (scenario, sample), line in runs["a"].items():
        episode = make_episode(rod[sample])
        for turn in line["trace"]:
            obs = episode.observation
            drawn = random.Random(f"oeg-multiturn:7:{scenario}:{sample}:{obs.turn}")
            option = drawn.choice(list(obs.correct_actions))
            assert turn["random_mapping"] is True
            assert turn["action"] == ("LEFT" if "left" in option else "RIGHT")
            episode.step(option)
        assert line["end_reason"] == "step_limit"  # ROD moves until its step limit
        assert line["num_turns"] == rod[sample].num_images


def test_a_suggestion_naming_an_offered_action_carries_it_out(data: Path, tmp_path: Path) -> None:
    say = {f"ROD:{i}": "Please move the blocks to the right." for i in range(5)}
    lines = play(data, tmp_path, {"ROD:0": ["ps", "ps", "cp"]}, say, scenarios=("ROD",))
    line = lines[("ROD", 0)]
    assert [t.get("action") for t in line["trace"]] == ["RIGHT", "RIGHT", None]
    assert not any("random_mapping" in t for t in line["trace"])
    assert (line["correct"], line["num_turns"]) == (True, 3)
    # ROD's first view hides the object: moves only; later states add the category.
    answer = records(data, "ROD")[0].answer
    texts = [t["valid_answers_text"] for t in line["trace"]]
    assert (
        texts
        == ["Move the blocks, Move the camera."]
        + [f"Move the blocks, Move the camera, {answer}."] * 2
    )


@pytest.mark.parametrize("history", [False, True])
def test_history_sends_the_earlier_turns(data: Path, tmp_path: Path, history: bool) -> None:
    script = {"QD:1": ["ps", "ps", "cp"]}
    lines = play(data, tmp_path, script, scenarios=("QD",), limit=2, history=history)
    seen = [json.loads(x) for x in (tmp_path / "seen.jsonl").read_text().splitlines()]
    third = next(s for s in seen if s["sample"] == 1 and s["turn"] == 3)
    # The line gives back the exact messages of each request (`show`, the viewer).
    rebuilt = request_messages(lines[("QD", 1)], 3)
    assert [m["role"] for m in rebuilt] == third["roles"]
    assert [
        [p.get("text") if isinstance(p, dict) else p for p in m["content"]]
        if isinstance(m["content"], list)
        else [m["content"]]
        for m in rebuilt
    ] == third["messages"]
    if not history:
        assert third["roles"] == ["user"]
        return
    assert third["roles"] == ["user", "assistant"] * 2 + ["user"]
    # The earlier turns: the image and the open-ended question (no options), and the answers.
    assert third["messages"][1] == ["[QD:1:1] Hmm."] and third["messages"][3] == ["[QD:1:2] Hmm."]
    assert third["messages"][0][0] is None and "\nA." not in third["messages"][0][1]


def test_rejudging_keeps_unchanged_episodes_and_replays_the_others(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A second judge that agrees with the first on every turn but QD:1's second: `judge`
    keeps the other lines (with the new judge's outputs), leaves QD:1 out, and `eval` with
    the new judge plays QD:1 again from its first turn, ending where the new verdict leads."""
    first = {"QD:0": ["cp"], "QD:1": ["ps", "ps", "cp"], "QD:2": ["ps", "none"]}
    lines = play(data, tmp_path, first, scenarios=("QD",), limit=3)
    assert lines[("QD", 1)]["num_turns"] == 3
    other = tmp_path / "other"
    other.mkdir()
    (other / "judging.py").write_text(JUDGE)
    second = {**first, "QD:1": ["ps", "cp"]}
    (other / "script.json").write_text(json.dumps(second))
    spec = f"python:{other / 'judging.py'}:judge"
    run = tmp_path / "run"
    code, text = run_cli(["judge", str(run), "--judge", spec, "--no-cache"], capsys)
    assert code == 0, text
    assert "1 multi-turn episode(s) were judged otherwise" in " ".join(text.split())
    judged = {(x["scenario"], x["sample_id"]): x for x in read_results(run / "results.jsonl")}
    assert set(judged) == {("QD", 0), ("QD", 2)}
    new_judge = json.loads((run / "run.json").read_text())["settings"]["judge"]
    assert new_judge["judge"] == spec
    for key, line in judged.items():
        assert line["settings"]["judge"] == new_judge
        assert [t["verdict"] for t in line["trace"]] == [t["verdict"] for t in lines[key]["trace"]]
    # eval with the new judge plays QD:1 again: ps, then cp at the second turn.
    model = load_model(f"python:{tmp_path / 'agent.py'}:answer")
    judge = Judge(load_model(spec))
    settings = EvalSettings(mode="oeg-multiturn", all_samples=True, scenarios=("QD",), limit=3)
    evaluate(data, model, run, settings, judge=judge)
    replayed = {(x["scenario"], x["sample_id"]): x for x in read_results(run / "results.jsonl")}
    assert set(replayed) == {("QD", 0), ("QD", 1), ("QD", 2)}
    line = replayed[("QD", 1)]
    assert (line["correct"], line["num_turns"], line["settings"]["judge"]) == (True, 2, new_judge)


def test_rejudging_with_the_same_verdicts_keeps_every_episode(
    data: Path, tmp_path: Path, capsys
) -> None:
    script = {"QD:0": ["cp"], "QD:1": ["ps", "bad"]}
    lines = play(data, tmp_path, script, scenarios=("QD",), limit=2)
    other = tmp_path / "other"
    other.mkdir()
    (other / "judging.py").write_text(JUDGE)
    (other / "script.json").write_text(json.dumps(script))
    run = tmp_path / "run"
    spec = f"python:{other / 'judging.py'}:judge"
    code, text = run_cli(["judge", str(run), "--judge", spec, "--no-cache"], capsys)
    assert code == 0 and "judged otherwise" not in text, text
    judged = {(x["scenario"], x["sample_id"]): x for x in read_results(run / "results.jsonl")}
    assert set(judged) == set(lines)
    assert judged[("QD", 1)]["end_reason"] == "unreadable"


def test_a_failed_judge_call_keeps_the_line_for_the_next_judge_command(
    data: Path, tmp_path: Path, capsys
) -> None:
    script = {"QD:0": ["cp"], "QD:1": ["ps", "cp"]}
    lines = play(data, tmp_path, script, scenarios=("QD",), limit=2)
    other = tmp_path / "other"
    other.mkdir()
    (other / "judging.py").write_text(FAILING_JUDGE)
    (other / "script.json").write_text(json.dumps(script))
    run = tmp_path / "run"
    spec = f"python:{other / 'judging.py'}:judge"
    code, text = run_cli(["judge", str(run), "--judge", spec, "--no-cache"], capsys)
    assert code == 3 and "could not be judged" in text and "Traceback" not in text, text
    judged = {(x["scenario"], x["sample_id"]): x for x in read_results(run / "results.jsonl")}
    assert set(judged) == set(lines)  # kept: the verdicts it had still stand
    kept = judged[("QD", 1)]
    assert "judge down" in kept["judge_error"]
    assert kept["settings"] == lines[("QD", 1)]["settings"]  # the earlier judge's
    assert judged[("QD", 0)]["settings"]["judge"]["judge"] == spec


def test_the_mode_needs_a_judge_and_no_icl() -> None:
    from proactivebench.core.errors import SettingsError

    with pytest.raises(SettingsError, match="--icl"):
        EvalSettings(mode="oeg-multiturn", icl=1)
    assert EvalSettings(mode="oeg-multiturn").decoding.max_tokens == 32768


def test_a_judge_that_judges_nothing_leaves_the_run_as_it_was(
    data: Path, tmp_path: Path, capsys
) -> None:
    """Every call of the new judge fails: no line holds its verdict, so run.json must not
    name it (the run would then resume with neither judge); nothing is rewritten."""
    script = {"QD:0": ["cp"], "QD:1": ["ps", "cp"]}
    play(data, tmp_path, script, scenarios=("QD",), limit=2)
    run = tmp_path / "run"
    before = {name: (run / name).read_bytes() for name in ("run.json", "results.jsonl")}
    other = tmp_path / "other"
    other.mkdir()
    (other / "judging.py").write_text(
        "def judge(messages, observation):\n    raise RuntimeError('judge down')\n"
    )
    spec = f"python:{other / 'judging.py'}:judge"
    code, text = run_cli(["judge", str(run), "--judge", spec, "--no-cache"], capsys)
    assert code == 3 and "no line could be judged" in text and "judge down" in text, text
    assert "Traceback" not in text
    assert {name: (run / name).read_bytes() for name in before} == before
    assert not (run / "results.previous.jsonl").exists()
    # The earlier judge still resumes the run (nothing to play: every episode is there).
    code, text = run_cli(
        [
            "eval",
            "--data",
            str(data),
            "--model",
            f"python:{tmp_path / 'agent.py'}:answer",
            "--judge",
            f"python:{tmp_path / 'judging.py'}:judge",
            "--mode",
            "oeg-multiturn",
            "--all-samples",
            "--scenarios",
            "QD",
            "--limit",
            "2",
            "--out",
            str(run),
            "--no-cache",
            "--no-report",
        ],
        capsys,
    )
    assert code == 0, text


def test_show_says_what_the_judge_found(data: Path, tmp_path: Path, capsys) -> None:
    play(data, tmp_path, {"QD:0": ["ps", "none"], "QD:1": ["bad"]}, scenarios=("QD",), limit=2)
    endings = {
        "0": "ended after 2 turn(s), not correct: the judge found no valid answer",
        "1": "ended after 1 turn(s), not correct: no judge vote held a readable verdict",
    }
    for sample, ending in endings.items():
        code, text = run_cli(["show", str(tmp_path / "run"), "QD", sample], capsys)
        assert code == 0 and ending in text and "option" not in text.split("ended after")[1]


def test_show_says_a_turn_whose_judge_call_failed_was_not_judged(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A judge call that fails ends the episode in an error after the turn's answer was
    recorded: that turn holds no verdict, and `show` and the report's viewer say so instead
    of the placeholder "mismatch" (which reads as the judge having found the answer wrong)."""
    script = {"QD:1": ["ps", "cp"]}
    lines = play(data, tmp_path, script, judge_source=FAILING_JUDGE, scenarios=("QD",), limit=2)
    assert "judge down" in lines[("QD", 1)]["error"]
    code, text = run_cli(["show", str(tmp_path / "run"), "QD", "1"], capsys)
    assert code == 0, text
    first, second = text.split("turn 2")
    assert "verdict: proactive" in first
    assert "verdict: not judged" in second and "mismatch" not in second
    assert "judge: no verdict (the judge call failed" in second
    # The report's episode viewer says the same (its data: one JSON block per scenario).
    code, text = run_cli(["report", str(tmp_path / "run"), "--out", str(tmp_path / "r")], capsys)
    assert code == 0, text
    assert '"not judged"' in (tmp_path / "r" / "report.html").read_text()


def test_a_judge_whose_verdicts_change_every_episode_says_they_need_playing_again(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A second judge that decides otherwise at a turn of every episode gave verdicts on every
    line: not "no line could be judged, rerun" (a rerun got the same every time), but the run
    written judged by it with no line, the earlier lines kept as results.previous.jsonl, and
    the `eval` that plays the episodes again named; that eval plays both, as the new judge
    leads."""
    first = {"QD:0": ["ps", "cp"], "QD:1": ["ps", "ps", "cp"]}
    play(data, tmp_path, first, scenarios=("QD",), limit=2)
    run = tmp_path / "run"
    before = (run / "results.jsonl").read_bytes()
    other = tmp_path / "other"
    other.mkdir()
    (other / "judging.py").write_text(JUDGE)
    (other / "script.json").write_text(json.dumps({"QD:0": ["cp"], "QD:1": ["none"]}))
    spec = f"python:{other / 'judging.py'}:judge"
    code, text = run_cli(["judge", str(run), "--judge", spec, "--no-cache"], capsys)
    said = " ".join(text.split())
    assert code == 0 and "Traceback" not in text, text
    assert "no line could be judged" not in said and "rerun the same command" not in said
    assert "2 multi-turn episode(s) were judged otherwise" in said
    assert f"--model python:{tmp_path / 'agent.py'}:answer" in said and spec in said
    assert (run / "results.previous.jsonl").read_bytes() == before
    assert read_results(run / "results.jsonl") == []
    assert json.loads((run / "run.json").read_text())["settings"]["judge"]["judge"] == spec
    model = load_model(f"python:{tmp_path / 'agent.py'}:answer")
    settings = EvalSettings(mode="oeg-multiturn", all_samples=True, scenarios=("QD",), limit=2)
    evaluate(data, model, run, settings, judge=Judge(load_model(spec)))
    replayed = {x["sample_id"]: x for x in read_results(run / "results.jsonl")}
    assert {k: (x["correct"], x["num_turns"]) for k, x in replayed.items()} == {
        0: (True, 1),
        1: (False, 1),
    }


def test_the_printed_eval_plays_again_only_what_the_run_selected(
    data: Path, tmp_path: Path, capsys
) -> None:
    """Tryout: the `eval` that `judge` printed for the episodes judged otherwise left out the
    run's --limit and --scenarios (run.json recorded only the ids they chose): run, it played
    every episode of the data. It now carries the run's selection as given, so it plays the
    run's episodes again and no other."""
    first = {"QD:0": ["ps", "cp"], "QD:1": ["ps", "ps", "cp"], "ROD:0": ["cp"], "ROD:1": ["cp"]}
    played = play(data, tmp_path, first, scenarios=("QD", "ROD"), limit=2, seed=4)
    run = tmp_path / "run"
    other = tmp_path / "other"
    other.mkdir()
    (other / "judging.py").write_text(JUDGE)
    (other / "script.json").write_text(json.dumps({key: ["none"] for key in first}))
    spec = f"python:{other / 'judging.py'}:judge"
    code, text = run_cli(["judge", str(run), "--judge", spec, "--no-cache"], capsys)
    said = " ".join(text.split())
    assert code == 0 and "4 multi-turn episode(s) were judged otherwise" in said, text
    command = shlex.split(said.split("Play them again with the new judge")[1].split(": ", 1)[1])
    command = command[: command.index("--out") + 2]  # what follows is the judging's other output
    assert command[-1] == str(run) and command[:2] == ["proactivebench", "eval"], command
    for option in ("--scenarios QD,ROD", "--limit 2", "--all-samples", "--seed 4", "--judge"):
        assert option in " ".join(command), command
    code, text = run_cli([*command[1:], "--no-report", "--no-cache"], capsys)
    assert code == 0, text
    replayed = {(x["scenario"], x["sample_id"]) for x in read_results(run / "results.jsonl")}
    assert replayed == set(played) == {("QD", 0), ("QD", 1), ("ROD", 0), ("ROD", 1)}


def test_runs_of_two_judges_side_by_side_say_so(data: Path, tmp_path: Path, capsys) -> None:
    """A run re-judged by another judge, set beside the first (`report --vs`, a suite's
    tables), showed differences that are the judges' with no word; `train compare` did not say
    that a run's rates mixed two judges (a verdict the new judge could not replace)."""
    script = {"QD:0": ["cp"], "QD:1": ["ps", "cp"]}
    play(data, tmp_path, script, scenarios=("QD",), limit=2)
    run, before = tmp_path / "run", tmp_path / "before"
    shutil.copytree(run, before)
    other = tmp_path / "other"
    other.mkdir()
    (other / "judging.py").write_text(FAILING_JUDGE)
    (other / "script.json").write_text(json.dumps(script))
    spec = f"python:{other / 'judging.py'}:judge"
    code, text = run_cli(["judge", str(run), "--judge", spec, "--no-cache", "--no-report"], capsys)
    assert code == 3, text
    code, text = run_cli(
        ["report", str(run), "--vs", str(before), "--out", str(tmp_path / "vs")], capsys
    )
    assert code == 0 and "warning: the judged runs name different judges (" in text, text
    assert "compare the judges as much as the runs" in " ".join(text.split())
    pytest.importorskip("datasets")
    from proactivebench.train.compare import compare_runs

    notes = compare_runs(before, run, holdout="ROD").notes
    assert f"1 line(s) of {run} keep an earlier judge's verdict" in " | ".join(notes)
