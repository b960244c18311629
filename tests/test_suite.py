"""`proactivebench paper` and `suite FILE`: experiments side by side in one process.

Against the fake OpenAI server (answers a function of the request) on generated data, with a
`python:` judge for the open-ended experiments. The requests the server receives are counted:
what the suite asks together against what each experiment asks alone is the sharing's saving,
and a rerun asks nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from clirun import ctrl_c_as_in_a_terminal, eval_args, run_cli
from proactivebench.core.errors import ModelError, SettingsError, SuiteFileError
from proactivebench.data.directory import load_dataset
from proactivebench.data.synth import generate
from proactivebench.jobs.suite import paper_suite, parse_suite, read_suite, run_suite
from proactivebench.models import load_model
from proactivebench.models.base import ChatRequest, Completion, Model, ModelWrapper
from proactivebench.models.cache import CachedModel, ResponseCache, Sharing
from proactivebench.run.selection import select_records
from proactivebench.testing.server import FakeOpenAI

PER_SCENARIO = 4
LIMIT = 2
#: How long a wait on a condition may last before the run counts as hung (generous: load).
WAIT_BOUND_S = 600

#: A judge for the `python:` backend: a verdict that depends only on what it is shown.
JUDGE = """
import hashlib

def judge(messages, observation):
    text = messages[-1]["content"]
    entries = text.count(",") + 1
    digests = [hashlib.sha256((text + str(i)).encode()).digest() for i in range(min(entries, 4))]
    return ", ".join(str(d[0] % 2) for d in digests)
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    generate(root, per_scenario=PER_SCENARIO, seed=5)
    return root


@pytest.fixture
def judge_spec(tmp_path: Path) -> str:
    path = tmp_path / "judging.py"
    path.write_text(JUDGE)
    return f"python:{path}:judge"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


def results(run_dir: Path) -> list[dict]:
    path = run_dir / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def episodes_once(run_dir: Path) -> set[tuple[str, int]]:
    """The episodes of a run directory's results, each asserted to be there once."""
    keys = [(r["scenario"], r["sample_id"]) for r in results(run_dir)]
    assert len(keys) == len(set(keys)), f"an episode written twice in {run_dir}"
    return set(keys)


def suite_args(kind: list[str], data: Path, url: str, out: Path, *extra: str) -> list[str]:
    model = ["--model", f"openai:m@{url}", "--model-option", "max_retries=0"]
    return [*kind, "--data", str(data), *model, "--out", str(out), *extra]


def saved_line(text: str) -> tuple[int, int]:
    """(asked, saved) from the command's line about the sharing."""
    line = next(t for t in text.splitlines() if "requests asked" in t)
    words = line.split()
    return int(words[0]), int(words[3])


# ----- the suite file ---------------------------------------------------------------------------


def test_paper_suite_is_the_papers_list() -> None:
    suite = paper_suite()
    ids = [e.id for e in suite.experiments]
    assert ids == [
        "mcqa", "reference", "hint", "unfiltered", "history", "icl1", "icl3", "ablation",
        "oeg", "oeg-hint", "oeg-multiturn",
    ]  # fmt: skip
    by_id = {e.id: e.settings for e in suite.experiments}
    assert by_id["history"].history and by_id["history"].resize_short_edge == 224
    assert by_id["icl3"].icl == 3 and by_id["icl3"].scenarios == ("ROD", "MVP-N")
    assert by_id["ablation"].random_suggestions and by_id["unfiltered"].all_samples
    assert by_id["oeg-hint"].hint and by_id["oeg-hint"].mode == "oeg"
    assert [by_id[i].subset for i in ("oeg", "oeg-hint", "oeg-multiturn")] == [100] * 3
    assert by_id["mcqa"].identity() == by_id["mcqa"].__class__().identity()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[experiment]]\nid = "a"\nhistroy = true\n',
            "experiment 1 ('a'): unknown setting 'histroy'",
        ),
        (
            '[[experiment]]\nid = "a"\nicl = "two"\n',
            "experiment 1 ('a'): setting 'icl': icl must be an integer",
        ),
        (
            '[[experiment]]\nid = "a"\nmode = "chat"\n',
            "experiment 1 ('a'): setting 'mode': unknown mode 'chat'",
        ),
        (
            '[[experiment]]\nid = "a"\nicl = 1\nreference = true\n',
            "experiment 1 ('a'): --icl shows",
        ),
        ('[[experiment]]\npaper = "x"\n', "experiment 1: 'id' must be a name"),
        ('[[experiment]]\nid = "../up"\n', "experiment 1: 'id' must be a name"),
        # OUT/report and OUT/suite.json are the suite's own: an experiment there would mix
        # its run with the suite's report or list (a case-blind file system: any case).
        ('[[experiment]]\nid = "report"\n', "experiment 1: 'id' 'report' is taken"),
        ('[[experiment]]\nid = "Report"\n', "experiment 1: 'id' 'Report' is taken"),
        ('[[experiment]]\nid = "suite.json"\n', "experiment 1: 'id' 'suite.json' is taken"),
        # A scenario no one registered: refused when the file is read, before any run starts.
        (
            '[[experiment]]\nid = "a"\nscenarios = ["ROD", "XYZ"]\n',
            "experiment 1 ('a'): setting 'scenarios': unknown scenario 'XYZ'; choose from ROD",
        ),
        # Nothing named: refused when the file is read, not when the experiment starts after
        # the others played.
        (
            '[[experiment]]\nid = "a"\nscenarios = []\n',
            "experiment 1 ('a'): setting 'scenarios': no scenario named in",
        ),
        (
            '[[experiment]]\nid = "a"\nfilter = "no-such-filter.json"\n',
            "experiment 1 ('a'): setting 'filter': ",
        ),
        # A published table its settings contradict: the run would be ranked among models
        # played otherwise (a hint run among Table 1's zero-shot ones).
        (
            '[[experiment]]\nid = "a"\nhint = true\npublished = "table1_mcqa"\n',
            "experiment 1 ('a'): 'published' 'table1_mcqa': runs of these settings (--mode "
            "mcqa --hint) stand beside table7_hint, not there",
        ),
        (
            '[[experiment]]\nid = "a"\npublished = "table7_hint"\n',
            "'published' 'table7_hint': runs of these settings (--mode mcqa) stand beside "
            "table1_mcqa, not there",
        ),
        (
            '[[experiment]]\nid = "a"\nmode = "oeg"\npublished = "table10_multiturn_oeg"\n',
            "(--mode oeg) stand beside table2_oeg or table8_oeg_agg, not there",
        ),
        (
            '[[experiment]]\nid = "a"\nhistory = true\nhint = true\npublished = "fig8_history"\n',
            "(--mode mcqa --hint --history) stand beside no table or figure of the paper",
        ),
        (
            '[[experiment]]\nid = "a"\nicl = 2\npublished = "fig9_icl"\n',
            "(--mode mcqa --icl) stand beside no table or figure of the paper",
        ),
        # Refused as eval refuses it (one rule, EvalSettings): single-turn open-ended generation
        # has no earlier turns, so the run would be labelled "+history" and play as without.
        (
            '[[experiment]]\nid = "a"\nmode = "oeg"\nhistory = true\n',
            "experiment 1 ('a'): --history sends an episode's earlier turns: --mode oeg plays one "
            "turn",
        ),
        ('[[experiment]]\nid = "a"\n[[experiment]]\nid = "a"\n', "two experiments have the id 'a'"),
        ('[[experiments]]\nid = "a"\n', "unknown key 'experiments'"),
        ("id = ", "is not TOML"),
        ("", "no [[experiment]] table"),
    ],
)
def test_a_bad_suite_file_is_one_error_naming_the_entry_and_key(text: str, message: str) -> None:
    with pytest.raises(SuiteFileError) as caught:
        parse_suite(text, "mine.toml")
    assert str(caught.value).startswith("mine.toml")
    assert message in str(caught.value)


def test_a_choice_that_leaves_nothing_to_run_is_an_error_before_anything_is_written(
    tmp_path: Path, data: Path, capsys
) -> None:
    """`--only`/`--skip` that leave no experiment, or only open-ended ones without --judge,
    would end with nothing done: refused (exit 1; a text naming no id, exit 2), nothing in
    OUT."""
    args = ["paper", "--data", str(data), "--model", "baseline:oracle", "--out", str(tmp_path)]
    for extra, code_wanted, message in [
        (["--only", "mcqa", "--skip", "mcqa"], 1, "--skip leaves out every one --only names"),
        (["--skip", ",".join(e.id for e in paper_suite().experiments)], 1, "every one it holds"),
        (["--only", "oeg,oeg-hint"], 1, "every experiment chosen (oeg, oeg-hint) is open-ended"),
        (["--only", " , "], 2, "Invalid value for --only: names no experiment: ' , '"),
        (["--skip", ","], 2, "Invalid value for --skip: names no experiment: ','"),
        (["--only", ""], 2, "Invalid value for --only: names no experiment: ''"),
        (["--skip", " "], 2, "Invalid value for --skip: names no experiment: ' '"),
    ]:
        code, text = run_cli([*args, *extra], capsys)
        assert (code, "Traceback" in text) == (code_wanted, False), text
        assert message in " ".join(text.split())
        assert not list(tmp_path.iterdir())


def test_a_bad_suite_file_on_the_command_line(tmp_path: Path, data: Path, capsys) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[experiment]]\nid = "x"\nhint = 1\n')
    args = ["suite", str(bad), "--data", str(data), "--model", "baseline:oracle"]
    code, text = run_cli([*args, "--out", str(tmp_path / "o")], capsys)
    assert code == 1
    assert text.strip().splitlines() == [
        f"error: {bad}: experiment 1 ('x'): setting 'hint': hint must be true or false, got 1"
    ]
    assert not (tmp_path / "o").exists()
    bad.write_text('[[experiment]]\nid = "x"\nhint = true\n')
    code, text = run_cli([*args, "--out", str(tmp_path / "o"), "--only", "y"], capsys)
    assert code == 1 and "has no experiment 'y'; its experiments: x" in text


def test_only_and_skip_choose() -> None:
    suite = paper_suite()
    assert [e.id for e in suite.chosen(["hint", "mcqa"])] == ["mcqa", "hint"]
    assert len(suite.chosen(skip=["oeg", "oeg-hint"])) == 9
    with pytest.raises(SettingsError, match="no experiment 'nope'"):
        suite.chosen(["nope"])


def test_subset_is_n_per_scenario_shuffled_by_seed_0(data: Path) -> None:
    dataset = load_dataset(data, ("ROD", "QD"))
    chosen = select_records(dataset, None, subset=3)
    for scenario in ("ROD", "QD"):
        ids = [r.id for r in dataset.records[scenario]]
        random.Random(0).shuffle(ids)  # the reference code's random.seed(0); shuffle
        assert [r.id for r in chosen if r.scenario == scenario] == ids[:3]
    capped = select_records(dataset, 2, subset=3)
    assert [r.id for r in capped] == [
        r.id for s in ("ROD", "QD") for r in [r for r in chosen if r.scenario == s][:2]
    ]


# ----- running ----------------------------------------------------------------------------------


def test_paper_runs_every_experiment_and_a_rerun_asks_nothing(
    data: Path, tmp_path: Path, judge_spec: str, capsys
) -> None:
    out = tmp_path / "paper"
    with FakeOpenAI() as fake:
        args = suite_args(["paper"], data, fake.url, out, "--limit", str(LIMIT))
        args += ["--judge", judge_spec, "--cache", str(tmp_path / "cache.sqlite")]
        code, text = run_cli(args, capsys)
        assert code == 0, text
        first = len(fake.chat_requests)
        for experiment in paper_suite().experiments:
            run = out / experiment.id
            scenarios = experiment.settings.scenarios or tuple(
                s for s in ("ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT", "COCO")
            )
            assert (run / "run.json").is_file() and (run / "summary.json").is_file()
            played = episodes_once(run)
            assert {s for s, _ in played} == set(scenarios), experiment.id
            assert len(played) == LIMIT * len(scenarios), experiment.id
            assert not any(r.get("error") for r in results(run)), experiment.id
        oeg = {(r["scenario"], r["sample_id"]) for r in results(out / "oeg")}
        shuffled = select_records(load_dataset(data), LIMIT, subset=100)
        assert oeg == {(r.scenario, r.id) for r in shuffled}
        assert (out / "report" / "report.html").is_file()
        listed = (out / "report" / "report.md").read_text()
        ends = [line.rsplit("/", 1)[-1] for line in listed.splitlines() if line.startswith("- **")]
        assert ends[:11] == [e.id for e in paper_suite().experiments]
        assert "cp % and ps %: open-ended rows, the answers the judge found" in text
        asked, saved = saved_line(text)
        assert saved > 0  # unfiltered plays mcqa's episodes (synthetic data has no filter)
        assert asked >= first  # the judge's requests are asked too, not of the server
        # A rerun asks nothing and says every experiment is done.
        code, again = run_cli(args, capsys)
        assert code == 0, again
        assert len(fake.chat_requests) == first
        assert saved_line(again) == (0, 0)
        assert all(f"│ {e.id}" in again for e in paper_suite().experiments)


def _asked_alone(suite_file: Path, ids: list[str], data: Path, tmp: Path, capsys) -> int:
    """Requests the server receives for each experiment run alone (a fresh cache each)."""
    total = 0
    for ident in ids:
        with FakeOpenAI() as fake:
            args = suite_args(["suite", str(suite_file)], data, fake.url, tmp / f"alone-{ident}")
            args += ["--only", ident, "--limit", str(LIMIT), "--no-report"]
            code, text = run_cli([*args, "--cache", str(tmp / f"cache-{ident}.sqlite")], capsys)
            assert code == 0, text
            total += len(fake.chat_requests)
    return total


def test_sharing_saves_exactly_the_requests_two_experiments_share(
    data: Path, tmp_path: Path, capsys
) -> None:
    """mcqa and unfiltered play the same episodes (generated data has no test filter): every
    request of one is the other's; history without resizing shares each episode's first turn
    with mcqa, and nothing after; the hint shares nothing. Started together, the shared
    requests are asked at the same moment: each must still be asked once."""
    suite_file = tmp_path / "mine.toml"
    suite_file.write_text(
        '[[experiment]]\nid = "mcqa"\n'
        '[[experiment]]\nid = "unfiltered"\nall_samples = true\n'
        '[[experiment]]\nid = "history"\nhistory = true\n'
        '[[experiment]]\nid = "hint"\nhint = true\n'
    )
    ids = ["mcqa", "unfiltered", "history", "hint"]
    mcqa = _asked_alone(suite_file, ["mcqa"], data, tmp_path, capsys)
    alone = mcqa + _asked_alone(suite_file, ids[1:], data, tmp_path, capsys)
    episodes = 7 * LIMIT
    with FakeOpenAI() as fake:
        args = suite_args(["suite", str(suite_file)], data, fake.url, tmp_path / "all")
        args += ["--limit", str(LIMIT), "--no-report", "--cache", str(tmp_path / "c.sqlite")]
        code, text = run_cli(args, capsys)
        assert code == 0, text
        together = len(fake.chat_requests)
    asked, saved = saved_line(text)
    assert saved == mcqa + episodes  # unfiltered's every request, history's first turns
    assert together == asked == alone - saved
    assert "requests asked; " in text


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_stopped_midway_then_rerun_loses_and_doubles_nothing(
    sig: int, data: Path, tmp_path: Path, capsys
) -> None:
    """Killed outright, or Ctrl-C (which exits 130 saying how to resume), the rerun of the
    same command completes every experiment, no episode lost or written twice."""
    ids = ["mcqa", "hint", "ablation"]
    out = tmp_path / "paper"
    with FakeOpenAI(latency=0.02) as fake:
        args = suite_args(["paper"], data, fake.url, out, "--only", ",".join(ids))
        args += ["--concurrency", "1", "--cache", str(tmp_path / "c.sqlite"), "--no-report"]
        cmd = [sys.executable, "-m", "proactivebench", *args]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        src = Path(__file__).resolve().parents[1] / "src"
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
        process = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            preexec_fn=ctrl_c_as_in_a_terminal,
        )  # fmt: skip

        def written() -> int:
            return sum(
                len((out / i / "results.jsonl").read_text().splitlines())
                for i in ids
                if (out / i / "results.jsonl").is_file()
            )

        # Wait on the lines themselves, never on a clock (the bound only ends a hung run).
        deadline = time.monotonic() + WAIT_BOUND_S
        while written() < 4 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert process.poll() is None, "the suite ended before it could be killed"
        process.send_signal(sig)
        said, _ = process.communicate(timeout=WAIT_BOUND_S)
        if sig == signal.SIGINT:
            assert process.returncode == 130
            assert "interrupted; rerun the same command to resume" in said.decode()
        else:
            assert process.returncode == -signal.SIGKILL
        assert 4 <= written() < 3 * 7 * PER_SCENARIO
        code, text = run_cli(args, capsys)
        assert code == 0, text
    for ident in ids:
        assert len(episodes_once(out / ident)) == 7 * PER_SCENARIO, ident


def test_a_dead_server_fails_the_experiments_it_serves_and_keeps_the_others(
    data: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "paper"
    fake = FakeOpenAI().start()
    try:
        args = suite_args(["paper"], data, fake.url, out, "--limit", str(LIMIT), "--no-report")
        args += ["--cache", str(tmp_path / "c.sqlite")]
        code, text = run_cli([*args, "--only", "mcqa"], capsys)
        assert code == 0, text
        kept = (out / "mcqa" / "results.jsonl").read_bytes()
    finally:
        fake.stop()
    code, text = run_cli([*args, "--only", "mcqa,hint,oeg"], capsys)
    assert code == 1, text
    assert "skipped without --judge (open-ended, judged): oeg" in text
    assert text.count("skipped without --judge") == 1
    assert "error: hint failed: " in text
    assert "failed: hint; the others are intact" in text
    assert "mcqa" not in text.split("failed:")[-1]
    assert (out / "mcqa" / "results.jsonl").read_bytes() == kept
    assert not (out / "oeg").exists()


def test_suite_file_on_the_command_line_reads_the_users_list(
    data: Path, tmp_path: Path, capsys
) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text('[[experiment]]\nid = "two-rod"\nscenarios = ["ROD"]\nlimit = 1\n')
    suite = read_suite(mine)
    assert suite.experiments[0].settings.limit == 1
    args = ["suite", str(mine), "--data", str(data), "--model", "baseline:oracle"]
    code, text = run_cli([*args, "--out", str(tmp_path / "o"), "--limit", "3"], capsys)
    assert code == 0, text
    assert "open-ended rows" not in text  # no row to explain: no caption saying there is
    # The file's limit (1) stands under a larger --limit: the command caps, never raises.
    played = episodes_once(tmp_path / "o" / "two-rod")
    assert len(played) == 1 and next(iter(played))[0] == "ROD"


def test_a_failed_experiment_is_named_and_the_others_finish(
    data: Path, tmp_path: Path, capsys
) -> None:
    """An experiment the data cannot play (more demonstrations than a scenario offers) fails
    alone: the others are played to the end, and the command exits 1 naming it."""
    mine = tmp_path / "mine.toml"
    mine.write_text(
        '[[experiment]]\nid = "plain"\n'
        f'[[experiment]]\nid = "too-many"\nicl = {PER_SCENARIO}\n'
        '[[experiment]]\nid = "hint"\nhint = true\n'
    )
    args = ["suite", str(mine), "--data", str(data), "--model", "baseline:oracle"]
    code, text = run_cli([*args, "--out", str(tmp_path / "o"), "--no-report"], capsys)
    assert code == 1, text
    assert f"error: too-many failed: --icl {PER_SCENARIO} asks for {PER_SCENARIO}" in text
    assert "failed: too-many; the others are intact" in text
    for ident in ("plain", "hint"):
        assert len(episodes_once(tmp_path / "o" / ident)) == 7 * PER_SCENARIO
    assert not (tmp_path / "o" / "too-many" / "results.jsonl").exists()


def test_an_experiment_edited_in_the_file_is_refused_and_its_record_kept(
    data: Path, tmp_path: Path, capsys
) -> None:
    """An id whose settings changed in the file since its run is refused by its run directory
    (exit 1); suite.json goes on describing the run OUT holds (plain, the report's
    reference), not the edited entry, while the other experiments' entries are renewed."""
    mine, out = tmp_path / "mine.toml", tmp_path / "o"
    mine.write_text('[[experiment]]\nid = "a"\n[[experiment]]\nid = "b"\nhint = true\n')
    args = ["suite", str(mine), "--data", str(data), "--model", "baseline:oracle"]
    args += ["--out", str(out), "--no-report"]
    code, text = run_cli([*args, "--limit", "1"], capsys)
    assert code == 0, text
    mine.write_text(
        '[[experiment]]\nid = "a"\nreference = true\n'
        '[[experiment]]\nid = "b"\nhint = true\npaper = "mine"\n'
    )
    code, text = run_cli([*args, "--limit", "2"], capsys)
    assert code == 1 and "a failed: " in text and "settings.reference: false → true" in text
    assert "failed: a; the others are intact. Mend what the error above says" in text
    assert json.loads((out / "suite.json").read_text()) == {
        "experiments": [
            {"id": "a", "paper": "", "published": None, "plain": True, "limit": 1},
            {"id": "b", "paper": "mine", "published": None, "plain": False, "limit": 2},
        ],
        "limit": 2,
        "identity": {
            "data_dir": str(data.resolve()),
            "model": "baseline:oracle",
            "model_settings": None,
        },
    }
    # Refused alone: what the file held before, limit included, stays as it was.
    code, text = run_cli([*args, "--limit", "3", "--only", "a"], capsys)
    assert code == 1 and json.loads((out / "suite.json").read_text())["limit"] == 2


# ----- one request asked once -------------------------------------------------------------------


class Slow(Model):
    """Answers after its gate opens; fails instead when told to."""

    name = "slow"

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail
        self.gate = asyncio.Event()

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls += len(requests)
        await self.gate.wait()
        if self.fail:
            raise ModelError("down")
        return [Completion(text="A") for _ in requests]


def test_a_request_in_flight_is_waited_for_and_a_failed_one_asked_again(tmp_path: Path) -> None:
    """Two runs ask one request at once: the second waits for the first's answer (one call,
    counted as shared); when the first's call fails, the second asks it itself."""
    request = ChatRequest([{"role": "user", "content": "which?"}])

    async def both(first: Slow, second: Slow) -> list:
        sharing = Sharing()
        cache = ResponseCache(tmp_path / f"{first.fail}.sqlite")
        a = CachedModel(first, cache, sharing, "a")
        b = CachedModel(second, cache, sharing, "b")
        asked = asyncio.ensure_future(a.generate([request]))
        await asyncio.sleep(0)  # a's request is in flight
        waiting = asyncio.ensure_future(b.generate([request]))
        await asyncio.sleep(0)
        first.gate.set()
        second.gate.set()
        done = await asyncio.gather(asked, waiting, return_exceptions=True)
        cache.close()
        return [*done, sharing.of("a"), sharing.of("b")]

    first, second = Slow(), Slow()
    a, b, counts_a, counts_b = asyncio.run(both(first, second))
    assert (first.calls, second.calls) == (1, 0)
    assert a[0].text == b[0].text == "A" and b[0].cached and not a[0].cached
    assert (counts_a.asked, counts_a.shared, counts_b.asked, counts_b.shared) == (1, 0, 0, 1)

    first, second = Slow(fail=True), Slow()
    a, b, counts_a, counts_b = asyncio.run(both(first, second))
    assert isinstance(a, ModelError) and b[0].text == "A" and not b[0].cached
    assert (first.calls, second.calls) == (1, 1)
    assert (counts_b.asked, counts_b.shared) == (1, 0)


def test_a_request_shared_counts_once_per_run(tmp_path: Path) -> None:
    """Run b meets a's request three times (two episodes of b ask it alike): alone, b would
    have asked it once and taken it twice from its own cache, so the sharing saved one request,
    not three; a's own repeat saves nothing."""
    request = ChatRequest([{"role": "user", "content": "which?"}])

    async def play() -> tuple:
        sharing = Sharing()
        cache = ResponseCache(tmp_path / "cache.sqlite")
        first, second = Slow(), Slow()
        first.gate.set()
        a = CachedModel(first, cache, sharing, "a")
        b = CachedModel(second, cache, sharing, "b")
        for model in (a, b, b, a, b):
            await model.generate([request])
        cache.close()
        return first.calls + second.calls, sharing.of("a"), sharing.of("b")

    calls, a, b = asyncio.run(play())
    assert calls == 1
    assert (a.asked, a.shared, b.asked, b.shared) == (1, 0, 0, 1)


class Counted(ModelWrapper):
    """A model that counts how often it is closed."""

    closed = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return await self.inner.generate(requests)

    async def aclose(self) -> None:
        self.closed += 1
        await self.inner.aclose()


def test_one_model_instance_is_shared_and_closed_once(data: Path, tmp_path: Path) -> None:
    """A model given as an instance (a local model, loaded once) serves every experiment and
    is closed once, at the end, not by the first experiment that ends while others still ask
    it; the results are those of a model per experiment."""
    suite = parse_suite(
        '[[experiment]]\nid = "plain"\n[[experiment]]\nid = "hint"\nhint = true\n', "t.toml"
    )
    with FakeOpenAI() as fake:
        model = Counted(load_model(f"openai:m@{fake.url}"))
        shared = asyncio.run(
            run_suite(data, suite.experiments, tmp_path / "shared", model=model, limit=LIMIT)
        )
        separate = asyncio.run(
            run_suite(
                data,
                suite.experiments,
                tmp_path / "separate",
                model=lambda: load_model(f"openai:m@{fake.url}"),
                limit=LIMIT,
            )
        )
    assert model.closed == 1
    assert [e.status for e in shared.experiments] == ["done", "done"]
    assert [e.status for e in separate.experiments] == ["done", "done"]
    for ident in ("plain", "hint"):
        ours = {
            (r["scenario"], r["sample_id"]): r["correct"]
            for r in results(tmp_path / "shared" / ident)
        }
        theirs = {
            (r["scenario"], r["sample_id"]): r["correct"]
            for r in results(tmp_path / "separate" / ident)
        }
        assert ours == theirs and len(ours) == 7 * LIMIT


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{broken", "not JSON: Expecting property name"),
        ('{"experiments": [{"id": "../elsewhere"}]}', "not a list of experiments, each with an id"),
        # Every value is checked where suite.json is read (hostile tryout of issue 45: these
        # were taken without a word, a bad limit or flag ignored).
        (
            '{"experiments": [{"id": "hint", "published": 5}]}',
            "experiment 'hint': published is 5, not the key of a paper's table or null",
        ),
        (
            '{"experiments": [{"id": "hint", "published": "table99"}]}',
            "experiment 'hint': published is \"table99\", not the key of a paper's table or null",
        ),
        (
            '{"experiments": [{"id": "a", "limit": -3}]}',
            "experiment 'a': limit is -3, not a count of episodes (1 or more) or null",
        ),
        (
            '{"experiments": [{"id": "a", "limit": "2"}]}',
            "experiment 'a': limit is \"2\", not a count of episodes (1 or more) or null",
        ),
        (
            '{"experiments": [{"id": "a", "plain": "yes"}]}',
            "experiment 'a': plain is \"yes\", not true or false",
        ),
        (
            '{"experiments": [{"id": "a", "paper": 1}]}',
            "experiment 'a': paper is 1, not a text or null",
        ),
        (
            '{"experiments": [{"id": "a"}], "limit": true}',
            "limit is true, not a count of episodes (1 or more) or null",
        ),
        ('{"experiments": [{"id": "a"}, {"id": "a"}]}', "experiment 'a' is listed twice"),
        (  # a NaN parses (Python's json), and is named as the file holds it
            '{"experiments": [{"id": "a", "limit": NaN}]}',
            "experiment 'a': limit is NaN, not a count of episodes (1 or more) or null",
        ),
    ],
)
def test_a_damaged_suite_json_is_named_not_taken_for_a_run_without_run_json(
    tmp_path: Path, capsys, text: str, why: str
) -> None:
    """`report OUT` and `push OUT` of a suite's output whose suite.json is damaged say so,
    instead of "OUT is not a run directory (no run.json)"."""
    from proactivebench.core.errors import DamagedRunError
    from proactivebench.jobs.publish import plan_push

    (tmp_path / "suite.json").write_text(text)
    code, output = run_cli(["report", str(tmp_path)], capsys)
    told = f"error: {tmp_path / 'suite.json'} is damaged ({why}"
    assert code == 1 and told in " ".join(output.split()) and "no run.json" not in output
    with pytest.raises(DamagedRunError, match=r"suite\.json is damaged"):
        plan_push([tmp_path])


def test_a_suites_output_among_runs_is_named_as_a_suite(tmp_path: Path, capsys) -> None:
    """`report OUT RUN` with a suite's output OUT stands OUT by its plain run (told when it
    has none yet), and `--vs OUT` is told that OUT holds experiments, not that it "is not a
    run directory (no run.json)"."""
    out, run = tmp_path / "paper", tmp_path / "run"
    out.mkdir()
    (out / "suite.json").write_text('{"experiments": [{"id": "mcqa"}, {"id": "hint"}]}')
    told = {
        "among": f"error: {out}: its suite has no plain multiple-choice run yet (mcqa, hint)",
        "vs": f"error: {out} holds a suite's experiments (mcqa, hint), not one run",
    }
    for how, args in (("among", [str(out), str(run)]), ("vs", [str(run), "--vs", str(out)])):
        code, text = run_cli(["report", *args, "--out", str(tmp_path / "r")], capsys)
        assert code == 1 and told[how] in " ".join(text.split()) and "no run.json" not in text


def test_a_report_of_runs_any_of_which_is_partial_says_so(
    data: Path, tmp_path: Path, capsys
) -> None:
    """`--limit 1`, then `--only a` without a limit: b still holds one episode per scenario,
    so the record's limit stays 1 and the report says it is partial (it said nothing once the
    last invocation had no --limit). A suite file's own `limit` counts as --limit does."""
    mine, out = tmp_path / "mine.toml", tmp_path / "o"
    mine.write_text(
        '[[experiment]]\nid = "a"\n[[experiment]]\nid = "b"\nhint = true\n'
        '[[experiment]]\nid = "c"\nreference = true\nlimit = 2\n'
    )
    args = ["suite", str(mine), "--data", str(data), "--model", "baseline:oracle"]
    args += ["--out", str(out)]
    code, text = run_cli([*args, "--limit", "1", "--only", "a,b"], capsys)
    assert code == 0, text
    code, text = run_cli([*args, "--only", "a,c"], capsys)
    assert code == 0, text
    record = json.loads((out / "suite.json").read_text())
    assert {e["id"]: e["limit"] for e in record["experiments"]} == {"a": None, "b": 1, "c": 2}
    assert record["limit"] == 2
    # b and c are partial, a is whole: the experiments table names b and c, and no table says
    # that the whole report is (finding 6 of issue 45's hostile tryout).
    markdown = (out / "report" / "report.md").read_text()
    experiments = markdown.split("### Experiments")[1].split("\n### ")[0]
    assert "_b: partial: ROD 1 of" in experiments and "_c: partial: ROD 2 of" in experiments
    assert "_a: partial" not in experiments and "Partial: played" not in markdown
    assert len(episodes_once(out / "b")) == 7 and len(episodes_once(out / "c")) == 14


def test_what_would_fail_every_experiment_is_refused_once_before_anything_is_written(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A data directory that is not there (or holds no record file), an --out that is a file
    or a run directory: one error before anything is written. Before, each experiment failed
    alone ("the others are intact" of none), a suite.json was left in a new OUT, a FileExistsError
    traceback came of a file, and a run directory got experiments inside and the suite's
    report over its own."""
    run = tmp_path / "run"
    code, text = run_cli(eval_args(data, run, "--scenarios", "ROD", "--no-report"), capsys)
    assert code == 0, text
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["paper", "--model", "baseline:oracle", "--only", "mcqa,hint"]
    for data_dir, out, told in [
        (tmp_path / "nowhere", tmp_path / "o", "nowhere: data directory not found"),
        (empty, tmp_path / "o", "empty: no '*_preprocessed.jsonl' files found"),
        (data, run / "results.jsonl", "as a suite's output: it is a file"),
        (data, run, f"{run} is a run directory ({run / 'run.json'}), not a suite's output"),
    ]:
        code, text = run_cli([*args, "--data", str(data_dir), "--out", str(out)], capsys)
        assert code == 1 and "Traceback" not in text and told in " ".join(text.split()), text
        assert not (tmp_path / "o").exists()
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_an_out_holding_another_models_or_datas_experiments_is_refused_before_anything_runs(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A suite's output is one model's experiments on one data set: its report compares each
    experiment with the plain run (the action changes of Figs. 5, 7) and names one model.
    Before, `paper --model B --out OUT` over A's experiments failed only those A had played
    and added B's others beside them, so the report set B's ICL run against A's plain run as
    "the change from the plain run". Now the whole invocation is refused, naming OUT, the
    run.json and what differs; nothing is added or rewritten."""
    out = tmp_path / "o"
    args = ["paper", "--data", str(data), "--out", str(out), "--no-report"]
    code, text = run_cli([*args, "--model", "baseline:oracle", "--only", "mcqa"], capsys)
    assert code == 0, text
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    other_data = tmp_path / "other-data"
    generate(other_data, per_scenario=1, seed=6)
    for changed, told in [
        (["--model", "baseline:random", "--only", "mcqa,hint"], 'model: "baseline:oracle"'),
        (["--model", "baseline:random", "--only", "hint"], 'model: "baseline:oracle"'),
        (["--model", "baseline:oracle", "--only", "hint", "--data", str(other_data)], "data_dir"),
    ]:
        code, text = run_cli([*args, *changed], capsys)
        lines = [line for line in text.splitlines() if line.startswith("error:")]
        assert code == 1 and "Traceback" not in text and len(lines) == 1, text
        assert str(out) in lines[0] and str(out / "mcqa" / "run.json") in lines[0], text
        assert told in lines[0], text
        assert not (out / "hint").exists()
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    # The same model on the same data adds experiments as before.
    code, text = run_cli([*args, "--model", "baseline:oracle", "--only", "hint"], capsys)
    assert code == 0 and len(episodes_once(out / "hint")) == 7 * PER_SCENARIO, text


def test_the_experiments_table_counts_an_interrupted_runs_episodes_and_says_it_stopped(
    data: Path, tmp_path: Path, capsys
) -> None:
    """The experiments table of `report OUT` read each run's counts from summary.json, which
    a run stopped by Ctrl-C before its first end has not written (and a resumed one has
    stale): an interrupted experiment showed 0 episodes while the tables below held its
    episodes, and its status "done". It counts results.jsonl's episodes, and says a run
    whose last invocation was stopped (run.json's provenance) stopped."""
    out = tmp_path / "o"
    args = ["paper", "--data", str(data), "--out", str(out), "--model", "baseline:oracle"]
    code, text = run_cli([*args, "--only", "hint", "--no-report"], capsys)
    assert code == 0, text
    run = out / "hint"
    (run / "summary.json").unlink()
    kept = (run / "results.jsonl").read_text().splitlines(keepends=True)[:3]
    # A line of a sample the run never selected, pasted in: no count holds it (issue 45, item
    # 1: the experiments table counted it, the tables below did not).
    pasted = {**json.loads(kept[0]), "sample_id": 900}
    (run / "results.jsonl").write_text("".join(kept) + json.dumps(pasted) + "\n")
    config = json.loads((run / "run.json").read_text())
    config["provenance"][-1]["stopped_by"] = "interrupted"
    (run / "run.json").write_text(json.dumps(config))
    code, text = run_cli(["report", str(out), "--no-thumb-cache"], capsys)
    assert code == 0, text
    [row] = [
        line
        for line in (out / "report" / "report.md").read_text().splitlines()
        if line.startswith("| hint |")
    ]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "3", row
    assert cells[4].startswith("stopped (interrupted)"), row
    # Ended, but with lines moved out: not "done" either (tryout 7: "done" beside a note
    # saying 10 of 21 were scored).
    config["provenance"][-1].pop("stopped_by")
    (run / "run.json").write_text(json.dumps(config))
    code, text = run_cli(["report", str(out), "--no-thumb-cache"], capsys)
    [row] = [
        line
        for line in (out / "report" / "report.md").read_text().splitlines()
        if line.startswith("| hint |")
    ]
    selected = sum(e["selected"] for e in config["selection"]["scenarios"].values())
    assert f"| partial: 3 of {selected} selected episodes scored |" in row, row


# ----- suite.json: under a lock, never lost ------------------------------------------------------

#: Another invocation recording experiment "b" in OUT (argv 1), which says it tries the lock
#: of OUT by making the file argv 2.
RECORDING_B = """
import sys
from pathlib import Path

from proactivebench.run import rundir
from proactivebench.jobs.suite import parse_suite, record_suite

out, trying = Path(sys.argv[1]), Path(sys.argv[2])
real = rundir.RunLock._acquire

def acquire(self):
    trying.touch()
    return real(self)

rundir.RunLock._acquire = acquire
record_suite(out, parse_suite('[[experiment]]\\nid = "b"\\n', "b.toml").experiments, None)
"""


def other_invocation_before_writing(
    monkeypatch, script: Path, argv: list[str], trying: Path
) -> list[subprocess.Popen]:
    """Make suite.py's next write of suite.json first start `script` (another invocation, with
    `argv`) and wait until it ends or tries the lock of OUT (it makes `trying` then): the
    interleaving of two invocations at once, forced, no timing. Returns where the other
    process will be."""
    from proactivebench.jobs import suite as module

    real = module.write_whole
    other: list[subprocess.Popen] = []

    def write_whole(path: Path, content: str) -> None:
        if not other:
            command = [sys.executable, str(script), *argv, str(trying)]
            other.append(
                subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
            )
            deadline = time.monotonic() + WAIT_BOUND_S
            while other[0].poll() is None and not trying.exists():
                assert time.monotonic() < deadline, "the other invocation hung"
                time.sleep(0.01)
        real(path, content)

    monkeypatch.setattr(module, "write_whole", write_whole)
    return other


def test_two_invocations_recording_one_out_at_once_keep_both_entries(
    tmp_path: Path, monkeypatch
) -> None:
    """Two `paper --only X` into one OUT at once: the second reads suite.json while the first
    is between its reading and its writing. Each entry stays (one was lost when the record
    was read, changed and written without a lock). The interleaving is forced: this process
    stops before writing, starts the other, and writes once the other has ended or waits
    for the lock."""
    from proactivebench.jobs import suite as module

    out, trying, script = tmp_path / "o", tmp_path / "trying", tmp_path / "b.py"
    script.write_text(RECORDING_B)
    other = other_invocation_before_writing(monkeypatch, script, [str(out)], trying)
    module.record_suite(out, parse_suite('[[experiment]]\nid = "a"\n', "a.toml").experiments, None)
    assert other[0].wait(WAIT_BOUND_S) == 0
    record = json.loads((out / "suite.json").read_text())
    assert sorted(e["id"] for e in record["experiments"]) == ["a", "b"]
    assert sorted(p.name for p in out.iterdir()) == ["suite.json"]  # no lock files left


#: Another invocation, `paper` with another model into OUT (argv 1) on the data (argv 2), which
#: says it tries the lock of OUT by making the file argv 3.
PAPER_B = """
import sys
from pathlib import Path

from proactivebench.run import rundir
from proactivebench.cli import main

out, data, trying = sys.argv[1:4]
real = rundir.RunLock._acquire

def acquire(self):
    Path(trying).touch()
    return real(self)

rundir.RunLock._acquire = acquire
sys.argv = ["proactivebench", "paper", "--data", data, "--model", "baseline:random", "--out", out,
            "--only", "hint", "--limit", "1", "--no-report", "--no-cache"]
main()
"""


def test_two_models_started_into_one_out_at_once_cannot_both_play(
    data: Path, tmp_path: Path, monkeypatch
) -> None:
    """Two `paper` of different models into one empty OUT at once (round-2 tryout finding 1):
    the folder's model was checked before its lock was taken, so both passed, both played, and
    the report compared one model's hint run with the other's plain run as "the effect of the
    hint". The check and the recording are one hold of the lock (suite.json names the model):
    the second is refused, naming OUT and the model, and nothing of it is written. The
    interleaving is forced: this invocation stops before writing suite.json, starts the other,
    and writes once the other has ended or waits for the lock."""
    out, trying, script = tmp_path / "o", tmp_path / "trying", tmp_path / "b.py"
    script.write_text(PAPER_B)
    other = other_invocation_before_writing(monkeypatch, script, [str(out), str(data)], trying)
    mcqa = paper_suite().chosen(["mcqa"])
    asyncio.run(run_suite(data, mcqa, out, model=load_model("baseline:oracle"), limit=1))
    told, _ = other[0].communicate(timeout=WAIT_BOUND_S)
    assert other[0].returncode == 1 and "Traceback" not in told, told
    assert 'model: "baseline:oracle"' in " ".join(told.split()), told
    assert not (out / "hint").exists(), told
    record = json.loads((out / "suite.json").read_text())
    assert [e["id"] for e in record["experiments"]] == ["mcqa"]
    assert record["identity"]["model"] == "baseline:oracle"


def test_a_suites_report_of_runs_of_two_models_compares_nothing(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A suite's output holding one model's plain run and another's hint run (made by two
    invocations at once before suite.json named its model, or a run copied in): the report,
    titled by the first model, set the other's hint run against it as "Δ accuracy vs" the
    plain run (+100.0 as the effect of the hint). `report OUT` refuses it, naming the two
    experiments and what differs, and writes no report."""
    out, other = tmp_path / "o", tmp_path / "other"
    args = ["paper", "--data", str(data), "--limit", "1", "--no-report"]
    code, text = run_cli(
        [*args, "--model", "baseline:oracle", "--out", str(out), "--only", "mcqa"], capsys
    )
    assert code == 0, text
    code, text = run_cli(
        [*args, "--model", "baseline:random", "--out", str(other), "--only", "hint"], capsys
    )
    assert code == 0, text
    os.rename(other / "hint", out / "hint")
    record = json.loads((out / "suite.json").read_text())
    record["experiments"] += json.loads((other / "suite.json").read_text())["experiments"]
    (out / "suite.json").write_text(json.dumps(record))
    code, text = run_cli(["report", str(out), "--no-thumb-cache"], capsys)
    told = " ".join(text.split())
    assert code == 1 and "Traceback" not in text, text
    assert "runs of different models or data (mcqa → hint" in told, text
    assert '"baseline:oracle" → "baseline:random"' in told, text
    assert not (out / "report").exists()


#: Another invocation holding a run directory (argv 1): it makes the file argv 2 once it holds
#: it, and lets go once that file is removed (or after WAIT_BOUND_S: a test that died never
#: leaves it holding for ever).
HOLDING = f"""
import sys
import time
from pathlib import Path

from proactivebench.run.rundir import RunLock

deadline = time.monotonic() + {WAIT_BOUND_S}
with RunLock(Path(sys.argv[1])):
    Path(sys.argv[2]).touch()
    while Path(sys.argv[2]).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
"""


def report_rows(out: Path) -> list[str]:
    """The experiments of the suite's report.md, by the rows of its experiments table."""
    text = (out / "report" / "report.md").read_text()
    table = text.split("### Experiments", 1)[1].split("\n\n")[1]  # the table after its heading
    return [line.split("|")[1].strip() for line in table.splitlines()[2:]]


def test_an_experiment_another_invocation_holds_is_left_out_of_the_report_not_a_failure(
    data: Path, tmp_path: Path, capsys
) -> None:
    """`paper --only mcqa` while another invocation still plays `hint` in the same OUT
    (round-2 tryout finding 3): mcqa played well, yet the command exited 1 at its report
    ("OUT/hint is in use by another run"). The report is written without the experiment in
    use, with a warning naming it and that `report OUT` makes it whole once it ends; exit 0.
    Waiting was no choice: the other experiment may play for hours."""
    out, ready, script = tmp_path / "o", tmp_path / "holding", tmp_path / "hold.py"
    script.write_text(HOLDING)
    args = ["paper", "--data", str(data), "--model", "baseline:oracle", "--out", str(out)]
    code, text = run_cli([*args, "--only", "hint", "--limit", "1", "--no-report"], capsys)
    assert code == 0, text
    holder = subprocess.Popen([sys.executable, str(script), str(out / "hint"), str(ready)])
    try:
        deadline = time.monotonic() + WAIT_BOUND_S
        while not ready.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder failed"
            time.sleep(0.01)
        code, text = run_cli([*args, "--only", "mcqa", "--limit", "1"], capsys)
    finally:
        ready.unlink(missing_ok=True)
        holder.wait(WAIT_BOUND_S)
    told = " ".join(text.split())
    assert code == 0 and "Traceback" not in text, text
    assert "experiment 'hint' is left out of this report" in told, text
    assert f"report {out} once that run ends" in told, text
    assert report_rows(out) == ["mcqa"]
    shown = " ".join((out / "report" / "report.md").read_text().split())
    assert (
        "experiment 'hint' is left out of this report" in shown and "in use by another run" in shown
    )
    code, text = run_cli(["report", str(out), "--no-thumb-cache"], capsys)
    assert code == 0 and "left out" not in text, text
    assert sorted(report_rows(out)) == ["hint", "mcqa"]


def test_a_damaged_experiment_is_left_out_of_the_suites_report_with_a_warning(
    data: Path, tmp_path: Path, capsys
) -> None:
    """One experiment's run.json damaged (round-2 tryout finding 7): `report OUT` failed whole
    ("OUT/hint/run.json is damaged"), the healthy experiments got no report, where a missing
    folder or run.json is left out with a warning. A damaged one is too, the warning naming
    the file and why."""
    out = tmp_path / "o"
    args = ["paper", "--data", str(data), "--model", "baseline:oracle", "--out", str(out)]
    code, text = run_cli([*args, "--only", "mcqa,hint", "--limit", "1", "--no-report"], capsys)
    assert code == 0, text
    config = out / "hint" / "run.json"
    config.write_bytes(config.read_bytes()[:100])
    code, text = run_cli(["report", str(out), "--no-thumb-cache"], capsys)
    told = " ".join(text.split())
    assert code == 0 and "Traceback" not in text, text
    assert f"experiment 'hint' is left out of this report: {config} is damaged" in told, text
    assert report_rows(out) == ["mcqa"]
    shown = " ".join((out / "report" / "report.md").read_text().split())
    assert "experiment 'hint' is left out" in shown and "hint/run.json is damaged" in shown


def test_a_suites_experiment_the_paper_has_no_table_for_is_named_in_its_report(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A custom suite's experiment whose settings no table or figure of the paper holds
    (`reference` with `hint`; round-2 tryout finding 8) vanished from the paper's tables
    without a word. The experiments table names it, by the rule that places runs there: a
    `history` run at 224 px (the paper's Fig. 8) and the plain run are placed, so not named."""
    mine, out = tmp_path / "mine.toml", tmp_path / "o"
    mine.write_text(
        '[[experiment]]\nid = "a"\n[[experiment]]\nid = "rh"\nreference = true\nhint = true\n'
        '[[experiment]]\nid = "h"\nhistory = true\nresize_short_edge = 224\n'
    )
    args = ["suite", str(mine), "--data", str(data), "--model", "baseline:oracle"]
    code, text = run_cli([*args, "--out", str(out), "--limit", "1"], capsys)
    assert code == 0, text
    shown = (out / "report" / "report.md").read_text()
    notes = [line for line in shown.splitlines() if "no table or figure of the paper" in line]
    assert notes == [
        "_rh: no table or figure of the paper holds runs of its settings: shown in this report's "
        "own tables (the changes from the plain run, each run's tables) and in its own report "
        "(the last column), not beside the paper's models._"
    ], shown


def test_a_line_level_warning_of_a_suites_plain_run_is_told_once(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A suite whose plain run holds a line of a sample it never selected (sample 900 pasted
    in; round-2 tryout finding 10): the warning that it is not counted appeared twice in the
    terminal and twice under "## Warnings" of report.md, told once for the run and again for
    it as the base every experiment is compared with (`--vs`)."""
    out = tmp_path / "o"
    args = ["paper", "--data", str(data), "--model", "baseline:oracle", "--out", str(out)]
    code, text = run_cli([*args, "--only", "mcqa,hint", "--limit", "1", "--no-report"], capsys)
    assert code == 0, text
    path = out / "mcqa" / "results.jsonl"
    pasted = {**json.loads(path.read_text().splitlines()[0]), "sample_id": 900}
    with path.open("a") as f:
        f.write(json.dumps(pasted) + "\n")
    code, text = run_cli(["report", str(out), "--no-thumb-cache"], capsys)
    assert code == 0, text
    told = [line for line in text.splitlines() if "sample 900 was not selected" in line]
    assert len(told) == 1, text
    shown = (out / "report" / "report.md").read_text()
    assert shown.count("sample 900 was not selected") == 1, shown


class Killed(BaseException):
    """The process killed here: nothing after it runs."""


def test_a_suite_killed_midway_leaves_suite_json_describing_the_runs_out_holds(
    data: Path, tmp_path: Path, monkeypatch
) -> None:
    """An experiment edited in the file since its run is refused by its run directory, and
    suite.json must go on describing the run OUT holds. Killed before the run refused it (or
    before it started), the invocation leaves the old entry, not the edited one (it was
    written when the invocation began and put back only at its end); a new experiment is
    named once its run starts (test_experiments_skipped_or_failed_before_they_start_...)."""
    from proactivebench.jobs import suite as module

    out = tmp_path / "o"
    first = parse_suite('[[experiment]]\nid = "a"\n', "mine.toml").experiments
    asyncio.run(run_suite(data, first, out, model=load_model("baseline:oracle"), limit=1))
    edited = parse_suite(
        '[[experiment]]\nid = "a"\nreference = true\npaper = "edited"\n'
        '[[experiment]]\nid = "b"\nhint = true\n',
        "mine.toml",
    ).experiments

    async def killed(*args: object, **kwargs: object) -> None:
        raise Killed

    monkeypatch.setattr(module, "aevaluate", killed)
    with pytest.raises(Killed):
        asyncio.run(run_suite(data, edited, out, model=load_model("baseline:oracle"), limit=2))
    assert json.loads((out / "suite.json").read_text())["experiments"] == [
        {"id": "a", "paper": "", "published": None, "plain": True, "limit": 1},
    ]


def test_a_path_in_a_suite_file_is_relative_to_the_suite_files_folder(
    tmp_path: Path, monkeypatch
) -> None:
    """`filter = "keep.json"` in sub/mine.toml is sub/keep.json, whatever the current
    directory (and whatever keep.json it holds)."""
    (tmp_path / "sub").mkdir()
    stem = "Realistic-Occlusion-Dataset"  # ROD's data file
    (tmp_path / "sub" / "keep.json").write_text(f'{{"ids": {{"{stem}": [1, 2]}}}}')
    (tmp_path / "keep.json").write_text(f'{{"ids": {{"{stem}": [7]}}}}')
    (tmp_path / "sub" / "mine.toml").write_text('[[experiment]]\nid = "a"\nfilter = "keep.json"\n')
    monkeypatch.chdir(tmp_path)
    for given in (Path("sub/mine.toml"), tmp_path / "sub" / "mine.toml"):
        (experiment,) = read_suite(given).experiments
        assert experiment.settings.sample_filter is not None
        assert dict(experiment.settings.sample_filter.ids) == {stem: frozenset({1, 2})}


def test_every_value_of_a_suite_file_is_checked_before_anything_plays(
    data: Path, tmp_path: Path, capsys
) -> None:
    """A bad value in the last experiment (no scenario named) stops the command before the
    first plays: one error naming the file, the experiment and the key; OUT untouched."""
    mine, out = tmp_path / "mine.toml", tmp_path / "o"
    mine.write_text('[[experiment]]\nid = "a"\n[[experiment]]\nid = "b"\nscenarios = []\n')
    args = ["suite", str(mine), "--data", str(data), "--model", "baseline:oracle"]
    code, text = run_cli([*args, "--out", str(out), "--no-report"], capsys)
    assert code == 1 and "Traceback" not in text
    assert f"{mine}: experiment 2 ('b'): setting 'scenarios': no scenario named" in text
    assert not out.exists()


def test_paper_without_a_report_warns_as_eval_does(data: Path, tmp_path: Path, capsys) -> None:
    """`paper --no-report` of a model whose every answer designates no option: each played
    experiment's warnings, named by its id, as `eval --no-report` gives a run's (issue 45,
    item 5: it printed accuracy 0.0, "done", and not a word)."""
    agent = tmp_path / "agent.py"
    agent.write_text("def answer(messages, observation):\n    return '**The answer is (B)**'\n")
    args = ["paper", "--data", str(data), "--model", f"python:{agent}:answer"]
    args += ["--out", str(tmp_path / "o"), "--only", "mcqa,hint", "--limit", "1", "--no-report"]
    code, text = run_cli(args, capsys)
    assert code == 0, text
    warned = [x for x in text.splitlines() if x.startswith("warning: ")]
    assert [w.split(":")[1].strip() for w in warned] == ["mcqa", "hint"], text
    assert all("designate no shown option (protocol §4) pass 10 %" in w for w in warned)
    assert "ROD (100.0 %)" in warned[0]
    # eval's own words for the same run.
    single = ["eval", "--data", str(data), "--model", f"python:{agent}:answer", "--limit", "1"]
    code, alone = run_cli([*single, "--out", str(tmp_path / "e"), "--no-report"], capsys)
    assert code == 0 and warned[0].replace("warning: mcqa: ", "warning: ") in alone


def test_a_suites_report_names_each_played_experiment_it_leaves_out(
    data: Path, tmp_path: Path, capsys
) -> None:
    """Hostile tryout of issue 45, finding 3: `report OUT` dropped `hint` without a word when
    its run.json was gone (its results.jsonl left), when its folder was gone while suite.json
    listed it, and when suite.json did not list it. Each is a warning naming it, in the
    terminal, at the top of report.md and report.html, and in report.json."""
    import html
    import shutil

    from proactivebench.report.inert import markdown

    mine, out = tmp_path / "mine.toml", tmp_path / "o"
    mine.write_text('[[experiment]]\nid = "mcqa"\n[[experiment]]\nid = "hint"\nhint = true\n')
    args = ["suite", str(mine), "--data", str(data), "--model", "baseline:oracle"]
    code, text = run_cli([*args, "--out", str(out), "--limit", "1", "--no-report"], capsys)
    assert code == 0, text
    record = json.loads((out / "suite.json").read_text())
    no_config, no_folder, not_listed = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for copy in (no_config, no_folder, not_listed):
        shutil.copytree(out, copy)
    (no_config / "hint" / "run.json").unlink()
    shutil.rmtree(no_folder / "hint")
    record["experiments"] = [e for e in record["experiments"] if e["id"] == "mcqa"]
    (not_listed / "suite.json").write_text(json.dumps(record))
    expected = {
        no_config: f"experiment 'hint': {no_config / 'hint'} holds no run.json (7 lines in "
        "results.jsonl): left out of this report",
        no_folder: f"experiment 'hint' of suite.json has no folder ({no_folder / 'hint'}): "
        "left out of this report",
        not_listed: f"{not_listed / 'hint'} is a run folder suite.json does not list: left out "
        f"of this report (report it alone: report {not_listed / 'hint'})",
    }
    for folder, warning in expected.items():
        code, text = run_cli(["report", str(folder)], capsys)
        assert code == 0 and f"warning: {warning}" in " ".join(text.split()), text
        report = folder / "report"
        assert json.loads((report / "report.json").read_text())["warnings"] == [warning]
        top = (report / "report.md").read_text().split("## What the columns mean")[0]
        assert f"- **warning:** {markdown(warning)}" in top.splitlines()
        assert html.escape(warning) in (report / "report.html").read_text()
    # A whole OUT: nothing left out, no warning.
    code, text = run_cli(["report", str(out)], capsys)
    assert code == 0 and "warning" not in text
    assert json.loads((out / "report" / "report.json").read_text())["warnings"] == []


def test_one_experiments_limit_is_no_partial_note_on_the_tables_of_complete_runs(
    data: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile tryout of issue 45, finding 6: `paper --only mcqa --limit 1`, then `paper --only
    hint` whole, on data taken as the paper's: suite.json's `limit` is 1 and every table said
    "Partial: played with --limit 1", Table 7 under a complete hint run it ranked 1/23. Each
    run's partiality is decided per run (`report.comparable.partial`): the experiments table
    names mcqa's, hint's table ranks it with no partial note; all partial, every table says."""
    import shutil

    # Its few samples stand for the paper's whole test set (not measured against its counts).
    monkeypatch.setattr("proactivebench.report.comparable.paper_test_counts", dict)
    official = tmp_path / "data"
    shutil.copytree(data, official)
    (official / "synth_manifest.json").unlink()
    out = tmp_path / "o"
    args = ["paper", "--data", str(official), "--model", "baseline:oracle", "--out", str(out)]
    code, text = run_cli([*args, "--only", "mcqa", "--limit", "1", "--no-report"], capsys)
    assert code == 0, text
    code, text = run_cli([*args, "--only", "hint"], capsys)
    assert code == 0, text
    assert json.loads((out / "suite.json").read_text())["limit"] == 1
    report = json.loads((out / "report" / "report.json").read_text())
    hint = report["paper"]["paper-table7-acc"]
    assert not hint["runs"][0]["not_comparable"] and "rank" in hint["runs"][0]["cells"]["ROD"]
    markdown = (out / "report" / "report.md").read_text()
    assert "Partial: played" not in markdown
    experiments = markdown.split("### Experiments")[1].split("\n### ")[0]
    assert "_mcqa: partial: ROD 1 of" in experiments and "_hint:" not in experiments
    # Every experiment partial: every table says so, with the limit.
    every = tmp_path / "p"
    args[-1] = str(every)
    code, text = run_cli([*args, "--only", "mcqa,hint", "--limit", "1"], capsys)
    assert code == 0, text
    sections = (every / "report" / "report.md").read_text().split("\n### ")[1:]
    assert sections and all("_Partial: played with --limit 1" in s for s in sections)


def test_the_terminal_experiments_table_counts_scored_episodes_and_names_a_partial_average(
    tmp_path: Path,
) -> None:
    """Hostile tryout of issue 45, round 3, finding 4: `paper`'s terminal table showed an
    average over 6 scenarios (every CIT episode an error) as a plain "accuracy (avg)", and
    28 "episodes" where the suite's report counts 22 (scored ones). The header says scored,
    the count is the scored episodes, and the caption names what the average covers as
    eval's table does."""
    from io import StringIO

    from rich.console import Console

    from proactivebench.benchmark.metrics import ScenarioScore, Summary
    from proactivebench.cli.suite import experiments_table
    from proactivebench.jobs.evaluate import RunOutcome
    from proactivebench.jobs.suite import Experiment, ExperimentOutcome
    from proactivebench.run.settings import EvalSettings

    summary = Summary(model="m")
    for name in ("ROD", "VSOD", "MVP-N", "IN-C", "QD", "COCO"):
        summary.scenarios[name] = ScenarioScore(n=3, accuracy=50.0, ps_rate=0.0, errors=1)
    summary.scenarios["CIT"] = ScenarioScore(n=0, errors=4)
    experiment = Experiment(id="mcqa", paper="", settings=EvalSettings())
    outcome = RunOutcome(summary=summary, out_dir=tmp_path, resumed=0)
    entry = ExperimentOutcome(experiment, tmp_path, "episode errors", outcome)
    sink = StringIO()
    Console(file=sink, width=300).print(experiments_table([entry]))
    text = sink.getvalue()
    assert "episodes scored" in text and "—" not in text
    [row] = [line for line in text.splitlines() if "│ mcqa" in line]
    assert [c.strip() for c in row.strip("│ ").split("│")][1:3] == ["18", "50.0"], row
    caption = " ".join(text.split("┘")[-1].split())
    assert caption == "mcqa: (avg) is the average of 6 (ROD, VSOD, MVP-N, IN-C, QD, COCO; no CIT)"


def test_open_ended_rows_of_the_experiments_table_have_their_own_columns(
    tmp_path: Path,
) -> None:
    """Issue 47: an open-ended row put cp and ps under "accuracy (avg)" and "ps rate (avg)".
    Seven scenarios of cp 20 / ps 40 (OEG) and of accuracy 50 / ps rate 0.5 (MCQA): each
    rate in its own column, "—" where a row has none; a table of MCQA rows alone keeps its
    five columns."""
    from io import StringIO

    from rich.console import Console

    from proactivebench.benchmark.metrics import ScenarioScore, Summary
    from proactivebench.cli.suite import experiments_table
    from proactivebench.jobs.evaluate import RunOutcome
    from proactivebench.jobs.suite import Experiment, ExperimentOutcome
    from proactivebench.run.settings import EvalSettings

    def entry(ident: str, **rates: float) -> ExperimentOutcome:
        summary = Summary(model="m")
        for name in ("ROD", "VSOD", "MVP-N", "IN-C", "QD", "CIT", "COCO"):
            summary.scenarios[name] = ScenarioScore(n=2, **rates)
        outcome = RunOutcome(summary=summary, out_dir=tmp_path, resumed=0)
        return ExperimentOutcome(
            Experiment(id=ident, paper="", settings=EvalSettings()), tmp_path, "done", outcome
        )

    mcqa = entry("mcqa", accuracy=50.0, ps_rate=0.5)
    oeg = entry("oeg", cp=20.0, ps=40.0, aggregate=50.0, unjudged=0)

    def rows(entries: list[ExperimentOutcome]) -> dict[str, list[str]]:
        sink = StringIO()
        Console(file=sink, width=300).print(experiments_table(entries))
        text = sink.getvalue()
        found = {}
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip("│┃ ").split("│" if "│" in line else "┃")]
            found[cells[0]] = cells
        return found

    both = rows([mcqa, oeg])
    assert both["experiment"] == [
        "experiment",
        "episodes scored",
        "accuracy (avg)",
        "ps rate (avg)",
        "cp % (avg)",
        "ps % (avg)",
        "status",
    ]
    assert both["mcqa"][1:6] == ["14", "50.0", "0.50", "—", "—"]
    assert both["oeg"][1:6] == ["14", "—", "—", "20.0", "40.0"]
    alone = rows([mcqa])
    assert alone["experiment"][2:] == ["accuracy (avg)", "ps rate (avg)", "status"]


def test_experiments_skipped_or_failed_before_they_start_are_not_recorded(
    data: Path, tmp_path: Path, capsys
) -> None:
    """suite.json lists the experiments whose run started: an open-ended one skipped without
    --judge, or one refused before it played (--icl 3 on 2 other samples), was recorded all
    the same, and every report then warned that it "has no folder", as if results were lost."""
    generate(tmp_path / "few", per_scenario=3, seed=5)
    out = tmp_path / "p"
    args = ["paper", "--data", str(tmp_path / "few"), "--model", "baseline:random"]
    code, text = run_cli([*args, "--out", str(out), "--limit", "2"], capsys)
    assert code == 1 and "skipped: open-ended: needs --judge" in text, text
    assert "icl3 failed" in " ".join(text.split()), text
    listed = [e["id"] for e in json.loads((out / "suite.json").read_text())["experiments"]]
    assert listed and all((out / ident / "run.json").is_file() for ident in listed), listed
    assert not {"oeg", "oeg-hint", "oeg-multiturn", "icl3"} & set(listed)
    code, text = run_cli(["report", str(out)], capsys)
    assert code == 0 and "has no folder" not in text and "left out" not in text, text
