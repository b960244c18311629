"""The Inspect AI task against `proactivebench eval`: the same answers give the same scores.

Scripted answers (the oracle's move, or a fixed letter) are computed here by playing our
episodes with the answer key; `mockllm` gives them to the Inspect task in sample order, and a
replay file gives them to `proactivebench eval`. Per scenario, accuracy and ps rate must agree,
and `import-inspect` of the Inspect log must give the direct run's summary.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from clirun import run_cli
from proactivebench.adapters.inspect_log import import_inspect_log
from proactivebench.adapters.inspect_task import proactivebench
from proactivebench.benchmark.metrics import episode_scores
from proactivebench.benchmark.protocol import scenario_strings
from proactivebench.benchmark.registry import make_episode
from proactivebench.benchmark.scenarios import Episode
from proactivebench.benchmark.scenarios.answers import Choice
from proactivebench.data.directory import load_dataset
from proactivebench.data.synth import generate
from resultlines import flipped
from scripted import Played, direct_run, lines, scripts

# Inspect's retry policy uses a tenacity argument that tenacity deprecates: not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter:DeprecationWarning")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    generate(root, per_scenario=3, seed=3)
    return root


@pytest.fixture(autouse=True)
def _inspect_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inspect's traces and caches go to the test's directory, not the user's."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def mock_outputs(played: Played) -> list[ModelOutput]:
    outputs = []
    for _, _, answers in played:
        for text in answers:
            output = ModelOutput.from_content("mockllm/model", text)
            output.usage = ModelUsage(input_tokens=10, output_tokens=1, total_tokens=11)
            outputs.append(output)
    return outputs


def run_inspect(data: Path, logs: Path, played: Played, **params: Any) -> EvalLog:
    model = get_model("mockllm/model", custom_outputs=mock_outputs(played))
    # One sample at a time: mockllm hands out its outputs in the order they are asked for.
    (log,) = inspect_eval(
        proactivebench(data=str(data), **params),
        model=model,
        max_samples=1,
        display="none",
        log_dir=str(logs),
    )
    assert log.status == "success", log.error
    return log


def inspect_scores(log: EvalLog) -> dict[str, tuple[float, float]]:
    """Per scenario (accuracy, ps rate), as the log's grouped metrics report them."""
    metrics = {s.name: {k: v.value for k, v in s.metrics.items()} for s in log.results.scores}
    scenarios = [k.removeprefix("grouped_") for k in metrics["accuracy"] if k != "grouped_all"]
    return {
        s: (metrics["accuracy"][f"grouped_{s}"], metrics["ps_rate"][f"grouped_{s}"])
        for s in scenarios
    }


def scores_of(summary: dict[str, Any]) -> dict[str, tuple[float, float]]:
    return {k: (v["accuracy"], v["ps_rate"]) for k, v in summary["scenarios"].items()}


@pytest.mark.parametrize(
    ("params", "flags"),
    [
        ({}, []),
        ({"hint": True}, ["--hint"]),
        ({"history": True}, ["--history"]),
        ({"reference": True}, ["--reference"]),
        (
            {"icl": 1, "option_order": "shuffled", "seed": 5},
            ["--icl", "1", "--option-order", "shuffled", "--seed", "5"],
        ),
    ],
    ids=["plain", "hint", "history", "reference", "icl-shuffled"],
)
def test_inspect_task_scores_equal_a_replayed_eval(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    params: dict[str, Any],
    flags: list[str],
) -> None:
    options = {k: params[k] for k in ("hint", "reference", "option_order", "seed") if k in params}
    played = scripts(data, **options)
    log = run_inspect(data, tmp_path / "logs", played, **params)
    direct = direct_run(data, tmp_path / "direct", played, flags, capsys)

    got = inspect_scores(log)
    expected = scores_of(direct)
    assert set(got) == set(expected)
    # Inspect's scale: accuracy 0-1 (our tables' percent / 100); the ps rate a count as ours.
    for scenario, (accuracy, ps_rate) in expected.items():
        assert got[scenario] == (pytest.approx(accuracy / 100), pytest.approx(ps_rate)), scenario
    assert set(got) == {"ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT", "COCO"}
    # The scripts make both outcomes and more than one turn happen, so the equality means
    # something: every episode's outcome and length are compared through the means.
    assert all(a > 0 for a, _ in got.values()) and any(a < 1 for a, _ in got.values())
    assert all(a <= 1 for a, _ in got.values())
    if params.get("reference"):  # one clear turn: nothing to suggest
        assert all(ps == 0 for _, ps in got.values())
    else:
        assert any(ps > 0 for _, ps in got.values())

    # The log holds the whole episode: the demonstrations, then one user turn (image +
    # question) and one answer per turn; every request as sent, with history the earlier
    # turns too.
    turns = {f"{s}-{i}": len(a) for s, i, a in played}
    assert len(log.samples) == len(played)
    for sample in log.samples:
        n = turns[str(sample.id)]
        line = sample.scores["proactive_score"].metadata["result"]
        shown = 2 * sum(len(d["turns"]) for d in line.get("demonstrations", []))
        assert bool(shown) == bool(params.get("icl"))
        assert [m.role for m in sample.messages] == ["user", "assistant"] * (shown // 2 + n)
        first = sample.messages[shown].content
        image = first[0].image  # the log stores each distinct image once, as an attachment
        image = sample.attachments.get(image.removeprefix("attachment://"), image)
        assert first[0].type == "image" and image.startswith("data:image/")
        assert first[1].type == "text" and "Options:" in first[1].text
        requests = [len(e.input) for e in sample.events if e.event == "model"]
        past = [2 * k for k in range(n)] if params.get("history") else [0] * n
        assert requests == [shown + p + 1 for p in past]

    # import-inspect turns the log into a run whose summary is the direct run's.
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", str(log.location), "--out", str(run)], capsys)
    assert code == 0, text
    assert "±" in text  # the table eval prints: estimates with their half-widths
    imported = json.loads((run / "summary.json").read_text())
    assert imported["scenarios"] == direct["scenarios"]
    assert imported["average"] == direct["average"]
    # Line for line the same, but for the token counts that only the mock model reports.
    assert lines(run) == lines(tmp_path / "direct")


def test_import_inspect_without_inspect_says_which_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if not installed
    code, text = run_cli(["import-inspect", str(tmp_path / "x.eval"), "--out", "r"], capsys)
    assert code != 0 and ".[inspect]" in text and "Traceback" not in text


def test_import_inspect_refuses_what_is_not_a_proactivebench_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing.eval"
    code, text = run_cli(["import-inspect", str(missing), "--out", str(tmp_path / "r")], capsys)
    assert code != 0 and "no Inspect log" in text and "Traceback" not in text
    garbage = tmp_path / "garbage.eval"
    garbage.write_bytes(b"not a zip")
    code, text = run_cli(["import-inspect", str(garbage), "--out", str(tmp_path / "r")], capsys)
    assert code != 0 and "cannot read the Inspect log" in text and "Traceback" not in text
    other = Task(dataset=[Sample(input="hello")], name="greeting")
    (log,) = inspect_eval(
        other,
        model=get_model("mockllm/model", custom_outputs=mock_outputs([("", 0, ["hi"])])),
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    code, text = run_cli(["import-inspect", log.location, "--out", str(tmp_path / "r")], capsys)
    assert code != 0 and "not of 'proactivebench/proactivebench'" in text
    assert not (tmp_path / "r").exists()


def test_the_task_refuses_bad_settings_with_one_message(data: Path) -> None:
    from proactivebench.core.errors import ProactiveBenchError

    with pytest.raises(ProactiveBenchError, match="option_order"):
        proactivebench(data=str(data), option_order="sideways")
    with pytest.raises(ProactiveBenchError, match="--icl"):
        proactivebench(data=str(data), reference=True, icl=2)
    with pytest.raises(ProactiveBenchError, match="mode=oeg-multiturn is not offered"):
        proactivebench(data=str(data), mode="oeg-multiturn")
    # Parameters given from Python as strings or out of range (the tryout's cases).
    bad = [
        ({"hint": "false"}, "hint must be true or false, got 'false'"),
        ({"limit": -1}, "limit must be >= 1, got -1"),
        ({"resize_short_edge": -5}, "resize_short_edge must be >= 1"),
        ({"icl": "abc"}, "icl must be an integer, got 'abc'"),
        ({"judge_votes": 0}, "judge_votes must be an integer >= 1"),
    ]
    for parameters, message in bad:
        with pytest.raises(ProactiveBenchError, match=re.escape(message)):
            proactivebench(data=str(data), **parameters)


def test_open_ended_generation_is_judged_by_the_judge_role(data: Path, tmp_path: Path) -> None:
    """OEG: the judge is Inspect's `judge` model role. Its scripted verdicts mark the first
    valid entry for even samples and the last one for odd ones; the protocol's count of
    intervention entries (spec §6) says whether a mark is a suggestion or the category."""
    generations, verdicts = [], []
    expected: dict[str, list[tuple[int, int]]] = {}
    for records in load_dataset(data).records.values():
        for index, record in enumerate(records):
            entries = [e for e in make_episode(record).oeg_answers().split(",") if e.strip()]
            marked = 0 if index % 2 == 0 else len(entries) - 1
            marks = ["1" if i == marked else "0" for i in range(len(entries))]
            generations.append(f"generation {record.scenario} {record.id}")
            verdicts.append(", ".join(marks))
            proactive = marked < scenario_strings(record.scenario).oeg_proactive_count
            expected.setdefault(record.scenario, []).append((int(proactive), int(not proactive)))
    model = get_model("mockllm/model", custom_outputs=mock_outputs([("", 0, generations)]))
    judge = get_model("mockllm/judge", custom_outputs=mock_outputs([("", 0, verdicts)]))
    (log,) = inspect_eval(
        proactivebench(data=str(data), mode="oeg"),
        model=model,
        model_roles={"judge": judge},
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    metrics = {s.name: {k: v.value for k, v in s.metrics.items()} for s in log.results.scores}
    for scenario, marks in expected.items():
        ps = sum(p for p, _ in marks) / len(marks)  # Inspect's 0-1 scale
        cp = sum(c for _, c in marks) / len(marks)
        assert metrics["ps"][f"grouped_{scenario}"] == pytest.approx(ps), scenario
        assert metrics["cp"][f"grouped_{scenario}"] == pytest.approx(cp), scenario
        assert metrics["aggregate"][f"grouped_{scenario}"] == pytest.approx(1.0), scenario
    assert {m[0] for marks in expected.values() for m in marks} == {0, 1}  # both kinds occur
    line = log.samples[0].scores["proactive_oeg_score"].metadata["result"]
    assert line["generation"] == f"generation {line['scenario']} {line['sample_id']}"
    assert len(line["judge_outputs"]) == 1
    summary = import_inspect_log(log.location, tmp_path / "imported").summary
    for scenario, marks in expected.items():
        assert summary.scenarios[scenario].ps == pytest.approx(
            100 * sum(p for p, _ in marks) / len(marks)
        )


def test_a_rule_change_in_scenarios_reaches_the_task(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task keeps no rule of its own: make every answer unreadable to the episodes, and
    the oracle's answers end every Inspect episode as unreadable."""
    played = scripts(data, policies=("oracle",))
    monkeypatch.setattr(Episode, "read", lambda self, answer: Choice("unreadable"))
    log = run_inspect(data, tmp_path / "logs", [(s, i, a[:1]) for s, i, a in played])
    assert {a for a, _ in inspect_scores(log).values()} == {0.0}
    ends = {s.scores["proactive_score"].metadata["result"]["end_reason"] for s in log.samples}
    assert ends == {"unreadable"}


def test_a_failed_model_call_is_an_inspect_sample_error_and_an_error_line(
    data: Path, tmp_path: Path
) -> None:
    """Inspect decides what a failed call means (here: no retry, the run goes on); the
    imported run records the sample as an error, left out of the scores, as `eval` does.
    (Which of the two samples Inspect starts first is its choice.)"""

    def outputs() -> Iterator[ModelOutput]:
        yield from mock_outputs([("", 0, ["no idea"])])  # unreadable: one turn, any sample
        raise RuntimeError("the server went away")

    model = get_model("mockllm/model", custom_outputs=outputs())
    (log,) = inspect_eval(
        proactivebench(data=str(data), scenarios="ROD,QD", limit=1),
        model=model,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
        fail_on_error=False,
        retry_on_error=0,
    )
    failed = [s for s in log.samples if s.error is not None]
    assert len(failed) == 1 and "the server went away" in failed[0].error.message
    summary = import_inspect_log(log.location, tmp_path / "imported").summary
    scores = {k: (v.n, v.errors) for k, v in summary.scenarios.items()}
    played = "QD" if failed[0].metadata["scenario"] == "ROD" else "ROD"
    assert scores == {failed[0].metadata["scenario"]: (0, 1), played: (1, 0)}


def test_import_inspect_is_refused_while_another_process_holds_the_run(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clirun import held_by_another_process

    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=1)
    run = tmp_path / "imported"
    args = ["import-inspect", str(log.location), "--out", str(run)]
    with held_by_another_process(run) as pid:
        code, text = run_cli(args, capsys)
    assert code == 1 and "in use by another run" in text and f"PID {pid}" in text, text
    assert not (run / "results.jsonl").exists()
    assert run_cli(args, capsys)[0] == 0


def test_a_failed_inspect_run_is_imported_with_its_reason_and_what_is_missing(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Inspect stops a run at its first sample error (`fail_on_error`): the log says "error",
    holds the sample that failed, one cancelled beside it, and not the samples never started.
    The import says why, what is missing, and exits 3 as `eval` does for failed episodes."""

    def outputs() -> Iterator[ModelOutput]:
        yield from mock_outputs([("", 0, ["no idea"])])
        raise RuntimeError("the server went away")

    (log,) = inspect_eval(
        proactivebench(data=str(data), scenarios="ROD,QD"),
        model=get_model("mockllm/model", custom_outputs=outputs()),
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
        retry_on_error=0,
    )
    assert log.status == "error"
    present = {str(s.id) for s in log.samples}
    errored = [s for s in log.samples if s.error is not None]
    missing = [i for i in log.eval.dataset.sample_ids if i not in present]
    assert errored and missing  # the case this test is about
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", log.location, "--out", str(run)], capsys)
    assert code == 3, text
    assert "the Inspect run ended with status 'error'" in text
    assert "the server went away" in text
    assert f"{len(errored)} sample(s) ended in an error" in text and "Most common (" in text
    assert f"{len(missing)} of the task's {len(log.eval.dataset.sample_ids)} samples" in text
    assert missing[0] in text
    assert "eval-retry" in text
    # What the log holds is imported all the same; the errors are counted apart.
    summary = json.loads((run / "summary.json").read_text())
    assert sum(s["errors"] for s in summary["scenarios"].values()) == len(errored)


def rewritten(log: EvalLog, path: Path, **changes: Any) -> str:
    """`log` with `changes`, written by Inspect's own writer (as a cancelled run leaves it)."""
    from inspect_ai.log import write_eval_log

    changed = log.model_copy(update=changes)
    write_eval_log(changed, str(path))
    return str(path)


def test_an_interrupted_inspect_log_names_its_missing_samples_and_an_empty_one_is_refused(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (log,) = inspect_eval(
        proactivebench(data=str(data), scenarios="ROD,QD"),
        model=get_model("mockllm/model", custom_outputs=mock_outputs([("", 0, ["?"] * 6)])),
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success" and len(log.samples) == 6
    cancelled = rewritten(
        log, tmp_path / "cancelled.eval", status="cancelled", samples=log.samples[:2]
    )
    code, text = run_cli(["import-inspect", cancelled, "--out", str(tmp_path / "r1")], capsys)
    assert code == 3, text
    assert "the Inspect run ended with status 'cancelled'" in text
    assert "4 of the task's 6 samples are not in the log" in text
    kept = {str(s.id) for s in log.samples[:2]}
    first_missing = next(i for i in log.eval.dataset.sample_ids if i not in kept)
    assert first_missing in text
    assert "ended in an error" not in text
    assert json.loads((tmp_path / "r1" / "summary.json").read_text())["scenarios"]
    empty = rewritten(log, tmp_path / "empty.eval", status="cancelled", samples=[])
    code, text = run_cli(["import-inspect", empty, "--out", str(tmp_path / "r2")], capsys)
    assert code == 1, text
    assert "no finished sample to import" in text and "status 'cancelled'" in text
    assert "Traceback" not in text and not (tmp_path / "r2").exists()
    # A kept sample whose id is renamed in the log is still its episode, imported and counted:
    # not "missing" (it was compared by the id's text: "5 of the task's 6 ... (ROD-0, ...").
    renamed = log.samples[0].model_copy(deep=True, update={"id": "weird-id-999"})
    odd = rewritten(
        log, tmp_path / "renamed.eval", status="cancelled", samples=[renamed, log.samples[1]]
    )
    code, text = run_cli(["import-inspect", odd, "--out", str(tmp_path / "r3")], capsys)
    assert code == 3, text
    flat = " ".join(text.split())
    assert "4 of the task's 6 samples are not in the log" in flat, text
    assert f"{log.samples[0].id}," not in flat and f"{log.samples[0].id})" not in flat, text


def test_a_damaged_result_line_in_the_log_is_refused_before_anything_is_written(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The import copies each score's line: one that no reader could count (here a
    num_turns that is not a number) was a traceback after results.jsonl was written, which
    left a half-written run that refused the good log afterwards ("exists")."""
    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=1, scenarios="ROD")
    sample = log.samples[0].model_copy(deep=True)
    score = next(iter(sample.scores.values()))
    score.metadata["result"]["num_turns"] = "x"
    damaged = rewritten(log, tmp_path / "damaged.eval", samples=[sample])
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", damaged, "--out", str(run)], capsys)
    assert code == 1 and "Traceback" not in text, text
    assert f"sample {sample.id!r}: not a result line (num_turns must be" in text, text
    assert not run.exists()
    assert run_cli(["import-inspect", str(log.location), "--out", str(run)], capsys)[0] == 0


def test_an_imported_run_records_the_episodes_its_task_selected_as_its_selection(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """run.json's `selection` of an imported run holds the task's episodes (what the data
    offered unknown): a line of another sample pasted in afterwards is named and not counted
    by `report`, without the data at hand (it was counted: the import recorded no selection)."""
    from proactivebench.report.comparable import not_comparable
    from proactivebench.report.runs import load_run
    from proactivebench.run.selection_record import parse_id_ranges

    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=2, scenarios="ROD")
    run = tmp_path / "imported"
    assert run_cli(["import-inspect", str(log.location), "--out", str(run)], capsys)[0] == 0
    written = (run / "results.jsonl").read_text().splitlines()
    ids = {json.loads(line)["sample_id"] for line in written}
    selection = json.loads((run / "run.json").read_text())["selection"]
    assert selection["scenarios"].keys() == {"ROD"} and len(ids) == 2
    assert selection["scenarios"]["ROD"]["available"] is None
    # The task's data directory is at hand and generated (data synth): recorded as such, so
    # report --paper says "generated data" and "comparability unknown", and ranks it nowhere.
    assert selection["synthetic"] is True
    reasons = not_comparable(load_run(run))
    assert reasons[0] == "generated data (data synth), not the paper's", reasons
    assert reasons[1].startswith("comparability unknown: what the data offered is not recorded")
    assert parse_id_ranges(selection["scenarios"]["ROD"]["ids"]) == ids
    pasted = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    pasted["sample_id"] = 900
    with (run / "results.jsonl").open("a") as out:
        out.write(json.dumps(pasted) + "\n")
    loaded = load_run(run)
    assert len(loaded.lines) == 2
    assert any("ROD sample 900 was not selected" in r for r in loaded.rejected)


def test_a_log_holding_an_episode_twice_is_refused_and_later_epochs_are_said(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log with one episode twice, its results contradicting, was imported whole (both lines
    counted, exit 0) while `report` on the same run counted neither: refused now, naming both
    samples, as import-lmms-eval refuses it (one rule, `adapters.imported`). Samples of a
    later epoch, left out silently, are counted in one line; the table then is report's."""
    from proactivebench.benchmark.metrics import summarize
    from proactivebench.report.runs import load_run

    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=2, scenarios="ROD")
    assert len(log.samples) == 2
    twin = log.samples[0].model_copy(deep=True, update={"id": "ROD-twin"})
    score = next(iter(twin.scores.values()))
    line = score.metadata["result"]
    line.update(flipped(line))
    score.value = episode_scores(line, fractions=True)  # as a second run's scorer gives it
    doubled = rewritten(log, tmp_path / "doubled.eval", samples=[*log.samples, twin])
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", doubled, "--out", str(run)], capsys)
    flat = " ".join(text.split())
    assert code == 1 and "Traceback" not in text, text
    assert f"an episode twice in {doubled}: ROD sample {line['sample_id']}" in flat, text
    assert f"sample {log.samples[0].id!r}" in flat and "'ROD-twin'" in flat, text
    assert "different results" in flat and "nothing imported" in flat, text
    assert not run.exists()

    again = log.samples[0].model_copy(deep=True, update={"epoch": 2})
    epochs = rewritten(log, tmp_path / "epochs.eval", samples=[*log.samples, again])
    code, text = run_cli(["import-inspect", epochs, "--out", str(run)], capsys)
    assert code == 0, text
    flat = " ".join(text.split())
    assert f"left out of {epochs}: 1 sample(s) of epochs after the first" in flat, text
    summary = json.loads((run / "summary.json").read_text())
    assert summary["scenarios"]["ROD"]["n"] == 2
    reported = summarize(load_run(run).lines, model=log.eval.model).as_dict()
    assert summary == reported


def test_a_line_that_is_not_an_episode_of_the_logs_task_is_refused_naming_the_sample(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sample whose line is of another episode than its id names, of a sample the task never
    had (QD 900) or of a scenario the task never had (CIT, in a task of ROD and QD) was imported
    (QD n grew, "average of 3"): the selection an import records is what its lines hold, so no
    later reader could flag them. Refused now, naming the sample; nothing written."""
    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=1, scenarios="ROD,QD")
    first = log.samples[0]

    def extra(name: str, **change: Any) -> Any:
        sample = first.model_copy(deep=True, update={"id": name})
        next(iter(sample.scores.values())).metadata["result"].update(change)
        return sample

    cases = [
        (
            {"samples": [*log.samples, extra("ROD-900", scenario="QD", sample_id=900)]},
            "sample 'ROD-900': its result line is QD sample 900, not the sample it is logged as",
        ),
        (
            {"samples": [*log.samples, extra("QD-900", scenario="QD", sample_id=900)]},
            "sample 'QD-900': QD sample 900 is not one of the task's samples",
        ),
        (
            {"samples": [*log.samples, extra("odd", scenario="CIT")]},
            "sample 'odd': scenario 'CIT' is not one of the task's (ROD, QD)",
        ),
    ]
    for number, (changes, message) in enumerate(cases):
        changed = rewritten(log, tmp_path / f"changed{number}.eval", **changes)
        run = tmp_path / f"imported{number}"
        code, text = run_cli(["import-inspect", changed, "--out", str(run)], capsys)
        flat = " ".join(text.split())
        assert code == 1 and "Traceback" not in text, text
        assert f"{changed}: {message}" in flat and "nothing imported" in flat, text
        assert not run.exists()


def test_a_score_that_contradicts_its_line_is_refused_naming_both(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Inspect's own score of a sample (its accuracy flipped) was ignored: the run counted the
    line, Inspect's table the score. Recomputed from the line (`episode_scores`, as the task's
    scorer computes it) and compared: a disagreement refuses, naming the sample and both."""
    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=1, scenarios="ROD")
    sample = log.samples[0].model_copy(deep=True)
    score = next(iter(sample.scores.values()))
    mine = score.value["accuracy"]
    score.value["accuracy"] = 1.0 - mine
    changed = rewritten(log, tmp_path / "rescored.eval", samples=[sample])
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", changed, "--out", str(run)], capsys)
    flat = " ".join(text.split())
    assert code == 1 and "Traceback" not in text, text
    expected = f"the harness scored accuracy = {1.0 - mine!r}, its result line gives {mine!r}"
    assert f"sample {sample.id!r}: {expected}" in flat and "nothing imported" in flat, text
    assert not run.exists()


def test_scores_holding_different_lines_are_refused_whatever_their_order(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second scorer appended to a sample (`inspect score --action append`) holding another
    line: the first score holding a line was copied, so the run said 100 % or 0 % by the order
    Inspect kept the scores in. Refused in either order, naming the sample and both scorers;
    the same line in two scores is one episode, imported."""
    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=1, scenarios="ROD")
    sample = log.samples[0]
    (name, ours), *_ = sample.scores.items()
    other = ours.model_copy(deep=True)
    other.metadata["result"] = flipped(ours.metadata["result"])
    other.value = episode_scores(other.metadata["result"], fractions=True)
    orders = [{name: ours, "second": other}, {"second": other, name: ours}]
    for number, scores in enumerate(orders):
        changed = sample.model_copy(update={"scores": scores})
        path = rewritten(log, tmp_path / f"two{number}.eval", samples=[changed])
        run = tmp_path / f"imported{number}"
        code, text = run_cli(["import-inspect", path, "--out", str(run)], capsys)
        flat = " ".join(text.split())
        assert code == 1 and "Traceback" not in text, text
        first, second = scores
        expected = f"{path}: sample {sample.id!r}: its scores hold different result lines"
        assert f"{expected} ({first} and {second})" in flat and "nothing imported" in flat, text
        assert not run.exists()
    same = sample.model_copy(update={"scores": {name: ours, "second": ours.model_copy()}})
    path = rewritten(log, tmp_path / "same.eval", samples=[same])
    code, text = run_cli(["import-inspect", path, "--out", str(tmp_path / "same")], capsys)
    assert code == 0, text


def test_a_score_of_one_value_is_checked_against_the_lines_accuracy(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A score whose value is one number (0.0) beside a correct line was not compared at all
    (only a value per rate was): read as the headline rate, accuracy, and compared."""
    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=1, scenarios="ROD")
    sample = log.samples[0].model_copy(deep=True)
    score = next(iter(sample.scores.values()))
    mine = score.value["accuracy"]
    score.value = 1.0 - mine
    path = rewritten(log, tmp_path / "scalar.eval", samples=[sample])
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", path, "--out", str(run)], capsys)
    flat = " ".join(text.split())
    assert code == 1 and "Traceback" not in text, text
    expected = f"the harness scored accuracy = {1.0 - mine!r}, its result line gives {mine!r}"
    assert f"sample {sample.id!r}: {expected}" in flat, text
    assert not run.exists()
    score.value = mine
    path = rewritten(log, tmp_path / "agrees.eval", samples=[sample])
    assert run_cli(["import-inspect", path, "--out", str(run)], capsys)[0] == 0


def test_a_partial_log_is_recorded_as_partial_for_every_reader(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log lacking some of the task's samples (cancelled, or a sample only in epoch 2) was
    recorded with the episodes it held as the run's selection: the import said what was
    missing, but `report` and `push`'s card called the run whole. run.json now records what
    the task selected, so every reader counts the missing episodes short."""
    from proactivebench.report.comparable import partial
    from proactivebench.report.runs import load_run
    from proactivebench.run.selection_record import parse_id_ranges

    (log,) = inspect_eval(
        proactivebench(data=str(data), scenarios="ROD,QD"),
        model=get_model("mockllm/model", custom_outputs=mock_outputs([("", 0, ["?"] * 6)])),
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success" and len(log.samples) == 6
    later = log.samples[1].model_copy(update={"epoch": 2})
    cases = {
        "cancelled": {"status": "cancelled", "samples": log.samples[:4]},
        "epoch2": {"samples": [log.samples[0], later, *log.samples[2:]]},
    }
    for name, changes in cases.items():
        path = rewritten(log, tmp_path / f"{name}.eval", **changes)
        run = tmp_path / name
        code, text = run_cli(["import-inspect", path, "--out", str(run)], capsys)
        assert code == 3, text
        selection = json.loads((run / "run.json").read_text())["selection"]["scenarios"]
        assert {k: parse_id_ranges(v["ids"]) for k, v in selection.items()} == {
            "ROD": {0, 1, 2},
            "QD": {0, 1, 2},
        }, name
        held = Counter(s.metadata["scenario"] for s in changes["samples"] if s.epoch == 1)
        short = [
            f"{scenario} {held[scenario]} of 3 selected episodes scored"
            for scenario in ("ROD", "QD")
            if held[scenario] < 3
        ]
        assert partial(load_run(run)) == ["partial: " + ", ".join(short)], name


def test_a_line_json_cannot_hold_is_refused_before_anything_is_written(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line holding an infinite number failed while writing: "nothing was written", yet
    run.json was left, and the same import into that folder was refused afterwards. Now it is
    refused before anything is written, naming the sample and the field."""
    log = run_inspect(data, tmp_path / "logs", scripts(data), limit=1, scenarios="ROD")
    sample = log.samples[0].model_copy(deep=True)
    next(iter(sample.scores.values())).metadata["result"]["bonus"] = {"x": float("inf")}
    path = rewritten(log, tmp_path / "inf.eval", samples=[sample])
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", path, "--out", str(run)], capsys)
    flat = " ".join(text.split())
    assert code == 1 and "Traceback" not in text, text
    assert f"{path}: sample {sample.id!r}: bonus.x is inf" in flat and "nothing imported" in flat
    assert not run.exists()
    assert run_cli(["import-inspect", str(log.location), "--out", str(run)], capsys)[0] == 0


def test_an_imported_run_records_the_decoding_inspect_asked_with(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inspect eval --temperature 1.0` overrides the task's decoding: the import recorded the
    protocol's (the task's declaration) in run.json and every line, so the card, `data
    filter` and `report --paper` read a sampled run as decoded by the protocol."""
    from proactivebench.report.comparable import decoding_apart
    from proactivebench.report.runs import load_run

    played = scripts(data)
    model = get_model("mockllm/model", custom_outputs=mock_outputs(played))
    (log,) = inspect_eval(
        proactivebench(data=str(data), limit=1, scenarios="ROD"),
        model=model,
        max_samples=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
        temperature=1.0,
    )
    run = tmp_path / "imported"
    code, text = run_cli(["import-inspect", str(log.location), "--out", str(run)], capsys)
    assert code == 0, text
    decoding = json.loads((run / "run.json").read_text())["settings"]["decoding"]
    assert decoding["temperature"] == 1.0
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert {x["settings"]["decoding"]["temperature"] for x in lines} == {1.0}
    assert "temperature" in (decoding_apart(load_run(run)) or "")
