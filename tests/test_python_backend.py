"""The `python:` backend: a user's function, sync or async, named by module or by file."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

# Loaded here, once: `_restore_import_state` unloads what a test imported, and numpy (which
# `eval` loads for its table) cannot be loaded twice in one process.
import proactivebench.report  # noqa: F401
from clirun import eval_args, run_cli
from handmade import full_dataset
from proactivebench.benchmark.prompting import user_turn
from proactivebench.benchmark.registry import make_episode, paper_scenarios
from proactivebench.core.errors import ProactiveBenchError
from proactivebench.data.directory import load_dataset
from proactivebench.data.images import ImageStore
from proactivebench.jobs.evaluate import evaluate
from proactivebench.models import load_model
from proactivebench.models.base import ChatRequest
from proactivebench.models.daemon_threads import DaemonThreads
from proactivebench.models.python_callable import PythonCallable
from proactivebench.models.resilient import Resilient
from proactivebench.run.rundir import read_results

#: How long a wait on a condition may last before the run counts as hung (generous: load).
HANG_BOUND_S = 120


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def ORACLE(data: Path) -> str:
    """A user's function that wins every episode without the answer key, which it never gets:
    it knows each record's category, and in ROD (nothing visible at first) moves once."""
    answers = {
        f"{short}:{record.id}": record.answer
        for short, records in load_dataset(data).records.items()
        for record in records
    }
    return f"""
ANSWERS = {answers!r}

def best(observation):
    assert not observation.correct_actions and not observation.correct_categories
    if observation.scenario == "ROD" and observation.turn == 1:
        return "A"
    return ANSWERS[f"{{observation.scenario}}:{{observation.sample_id}}"]
"""


@pytest.fixture(autouse=True)
def _restore_import_state(monkeypatch: pytest.MonkeyPatch, tmp_path_factory):
    """User modules imported by a test (files under the tests' temporary folders), and
    sys.path entries it adds, do not outlive it. Only those: a library module that a test
    happened to import first (`concurrent.futures.process`, by a report's thumbnail pool)
    stays, since objects of it live on elsewhere (a later pool could no longer pickle its
    worker function: "not the same object as concurrent.futures.process._process_worker")."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    temporary = tmp_path_factory.getbasetemp().resolve()
    for name in set(sys.modules) - before:
        where = getattr(sys.modules[name], "__file__", None)
        if where and temporary in Path(where).resolve().parents:
            del sys.modules[name]


def write_module(directory: Path, body: str, name: str | None = None) -> Path:
    name = name or f"agent_{uuid.uuid4().hex[:8]}"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


def outcomes(run: Path) -> dict[tuple[str, int], dict]:
    return {(r["scenario"], r["sample_id"]): r for r in read_results(run / "results.jsonl")}


def test_sync_function_from_a_module(data: Path, tmp_path: Path, monkeypatch, ORACLE: str) -> None:
    module = write_module(
        tmp_path, ORACLE + "\ndef answer(messages, observation):\n    return best(observation)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    model = load_model(f"python:{module.stem}:answer")
    assert model.name == f"python:{module.stem}:answer"
    outcome = evaluate(data, model, tmp_path / "run")
    results = outcomes(tmp_path / "run")
    assert len(results) == 15 and all(r["correct"] is True for r in results.values())
    assert set(outcome.summary.scenarios) == set(paper_scenarios())


def test_async_function_from_a_file_sees_messages_and_images(
    data: Path, tmp_path: Path, ORACLE: str
) -> None:
    module = write_module(
        tmp_path,
        ORACLE
        + """
import asyncio
SEEN = []

async def answer(messages, observation):
    await asyncio.sleep(0)
    SEEN.append(messages)
    return best(observation)
""",
    )
    model = load_model(f"python:{module}:answer")
    evaluate(data, model, tmp_path / "run")
    assert all(r["correct"] is True for r in outcomes(tmp_path / "run").values())
    assert isinstance(model, Resilient) and isinstance(model.inner, PythonCallable)
    seen = model.inner.fn.__globals__["SEEN"]  # type: ignore[attr-defined]
    assert len(seen) == sum(r["num_turns"] for r in outcomes(tmp_path / "run").values())
    image_part, text_part = seen[0][0]["content"]
    assert seen[0][0]["role"] == "user" and text_part["type"] == "text"
    assert image_part["type"] == "image" and image_part["image"].mode == "RGB"
    expected = ImageStore(data).image(image_part["view"])
    assert image_part["image"].tobytes() == expected.tobytes()


def test_function_in_the_current_directory_is_importable(tmp_path: Path, monkeypatch) -> None:
    module = write_module(tmp_path, "def answer(messages, observation):\n    return 'A'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_model(f"python:{module.stem}:answer").name.endswith(":answer")


def test_exceptions_and_bad_returns_are_episode_errors(
    data: Path, tmp_path: Path, ORACLE: str
) -> None:
    module = write_module(
        tmp_path,
        ORACLE
        + """
def answer(messages, observation):
    if observation.scenario == "ROD":
        raise ValueError("no idea about blocks")
    if observation.scenario == "QD":
        return None
    return best(observation)
""",
    )
    evaluate(data, load_model(f"python:{module}:answer"), tmp_path / "run")
    for (scenario, _), result in outcomes(tmp_path / "run").items():
        if scenario == "ROD":
            # The user's exception, and where in their code it was raised.
            error = result["error"]
            where = re.fullmatch(
                r"ValueError: no idea about blocks \(at (.+):(\d+) in answer\)", error
            )
            assert where, error
            source = Path(where[1]).read_text().splitlines()
            assert "raise ValueError" in source[int(where[2]) - 1]
        elif scenario == "QD":
            assert (
                result["error"].startswith("TypeError:") and "returned NoneType" in result["error"]
            )
        else:
            assert "error" not in result and result["correct"] is True


def test_sync_calls_take_turns_unless_parallel(data: Path, tmp_path: Path) -> None:
    module = write_module(
        tmp_path,
        """
import threading, time
LOCK = threading.Lock()
STATE = {"inside": 0, "most": 0}

def answer(messages, observation):
    with LOCK:
        STATE["inside"] += 1
        STATE["most"] = max(STATE["most"], STATE["inside"])
    time.sleep(0.02)
    with LOCK:
        STATE["inside"] -= 1
    return "A"
""",
    )
    obs = make_episode(load_dataset(data).records["ROD"][0]).reset()
    request = ChatRequest([user_turn(obs)], obs)

    def most_at_once(parallel: bool) -> int:
        model = PythonCallable(f"{module}:answer", parallel=parallel)
        model.bind_images(ImageStore(data))
        state = model.fn.__globals__["STATE"]  # type: ignore[attr-defined]
        state["most"] = 0

        async def many() -> None:
            await asyncio.gather(*(model.generate([request]) for _ in range(4)))

        asyncio.run(many())
        return state["most"]

    assert most_at_once(parallel=False) == 1
    assert most_at_once(parallel=True) > 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("python:no_such_module_xyz:answer", "module 'no_such_module_xyz' not found"),
        ("python:missing/agent.py:answer", "file not found"),
        ("python:json:no_such_function", "has no attribute 'no_such_function'"),
        ("python:json:__doc__", "is not callable"),
        ("python:json", "needs MODULE:FUNCTION"),
        # There, but no file of Python code: named for what it is, not "not found".
        ("python:/dev/null:answer", r"python model file /dev/null is not a regular file"),
        ("python:/tmp/:answer", r"python model file /tmp is not a regular file"),
    ],
)
def test_bad_specs_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(ProactiveBenchError, match=message):
        load_model(spec)


def test_a_module_that_fails_to_import_is_a_clear_error(tmp_path: Path) -> None:
    broken = write_module(tmp_path, "import no_such_dependency_xyz\n")
    with pytest.raises(ProactiveBenchError, match=r"importing .* failed: No module named"):
        load_model(f"python:{broken}:answer")
    raising = write_module(tmp_path, "raise RuntimeError('boom')\n")
    with pytest.raises(ProactiveBenchError, match="failed: RuntimeError: boom"):
        load_model(f"python:{raising}:answer")
    with pytest.raises(ProactiveBenchError, match="unknown option"):
        load_model("python:json:dumps", threads=4)


def test_cli_runs_a_python_function_and_reports_a_bad_one(
    data: Path, tmp_path: Path, capsys, ORACLE: str
) -> None:
    module = write_module(
        tmp_path, ORACLE + "\ndef answer(messages, observation):\n    return best(observation)\n"
    )
    args = eval_args(data, tmp_path / "run", "--limit", "1")
    args[args.index("baseline:oracle")] = f"python:{module}:answer"
    code, text = run_cli(args, capsys)
    assert code == 0 and "100.0" in text
    args[args.index(f"python:{module}:answer")] = f"python:{module}:nope"
    code, text = run_cli(args, capsys)
    assert code != 0 and "has no attribute 'nope'" in text and "Traceback" not in text


@pytest.mark.parametrize(
    "body",
    [
        "def answer(observation):\n    return 'A'\n",
        "def answer():\n    return 'A'\n",
        "def answer(messages, observation, history):\n    return 'A'\n",
        "def answer(messages, *, observation):\n    return 'A'\n",
        "async def answer(observation):\n    return 'A'\n",
        "class Agent:\n    def __call__(self, observation):\n        return 'A'\n\n"
        "answer = Agent()\n",
    ],
)
def test_a_function_of_another_signature_is_refused_before_the_run(
    data: Path, tmp_path: Path, capsys, body: str
) -> None:
    module = write_module(tmp_path, body)
    args = eval_args(data, tmp_path / "run", "--limit", "1")
    args[args.index("baseline:oracle")] = f"python:{module}:answer"
    code, text = run_cli(args, capsys)
    assert code == 1 and "Traceback" not in text, text
    assert "answer(messages, observation)" in text and str(module) in text
    assert not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.parametrize(
    "body",
    [
        "def answer(messages, observation):\n    return 'A'\n",
        "def answer(*args):\n    return 'A'\n",
        "def answer(messages, observation=None, *, temperature=0.0):\n    return 'A'\n",
        "def answer(messages, *rest, **options):\n    return 'A'\n",
        "async def answer(messages, observation):\n    return 'A'\n",
        "class Agent:\n    async def __call__(self, messages, observation):\n        return 'A'\n\n"
        "answer = Agent()\n",
        "import functools\ndef reply(prefix, messages, observation):\n    return prefix\n\n"
        "answer = functools.partial(reply, 'A')\n",
    ],
)
def test_every_signature_the_calling_convention_fits_is_accepted(
    data: Path, tmp_path: Path, body: str
) -> None:
    module = write_module(tmp_path, body)
    evaluate(data, load_model(f"python:{module}:answer"), tmp_path / "run")
    assert all(not r.get("error") for r in outcomes(tmp_path / "run").values())


class OwnStop(BaseException):
    """A BaseException of the user's own, neither an Exception nor Ctrl-C."""


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_an_agent_that_exits_is_an_episode_error_not_the_end_of_the_tool(
    data: Path, tmp_path: Path, capsys, kind: str, ORACLE: str
) -> None:
    module = write_module(
        tmp_path,
        ORACLE
        + f"""
import sys

class OwnStop(BaseException):
    pass

{kind} answer(messages, observation):
    if observation.scenario == "ROD":
        raise SystemExit(0)
    if observation.scenario == "QD":
        sys.exit("bye")
    if observation.scenario == "VSOD":
        raise OwnStop("stop")
    return best(observation)
""",
    )
    args = eval_args(data, tmp_path / "run", "--no-cache", "--no-report")
    args[args.index("baseline:oracle")] = f"python:{module}:answer"
    code, text = run_cli(args, capsys)
    # Exit 3 (episodes in error); the tracebacks shown are the user's frames only.
    assert code == 3 and "src/proactivebench/" not in text and "asyncio" not in text
    results = outcomes(tmp_path / "run")
    assert len(results) == 15  # every episode played and written
    for (scenario, _), result in results.items():
        error = result.get("error", "")
        if scenario == "ROD":
            assert error.startswith("SystemExit: the code called sys.exit(0) (at "), error
        elif scenario == "QD":
            assert error.startswith("SystemExit: the code called sys.exit('bye') (at "), error
        elif scenario == "VSOD":
            assert error.startswith("OwnStop: stop (at "), error
        else:
            assert not error and result["correct"] is True


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_a_cancelled_error_of_the_agents_own_is_an_episode_error(
    data: Path, tmp_path: Path, capsys, kind: str, ORACLE: str
) -> None:
    """`asyncio.CancelledError` raised by the function itself (a library it calls that was
    cancelled inside, a timeout of its own) while the run is not stopping is the function's
    failure, as any other exception: its episode is an error and the run goes on. It ended
    the run with a traceback."""
    module = write_module(
        tmp_path,
        ORACLE
        + f"""
import asyncio

{kind} answer(messages, observation):
    if observation.scenario == "QD":
        raise asyncio.CancelledError("gave up")
    return best(observation)
""",
    )
    args = eval_args(data, tmp_path / "run", "--no-cache", "--no-report")
    args[args.index("baseline:oracle")] = f"python:{module}:answer"
    code, text = run_cli(args, capsys)
    assert code == 3, text  # the run went on to its end: episodes in error
    results = outcomes(tmp_path / "run")
    assert len(results) == 15
    for (scenario, _), result in results.items():
        if scenario == "QD":
            assert result["error"].startswith("CancelledError: gave up (at "), result
        else:
            assert "error" not in result and result["correct"] is True


def test_ctrl_c_in_an_agent_still_stops_the_run(data: Path, tmp_path: Path) -> None:
    module = write_module(
        tmp_path, "def answer(messages, observation):\n    raise KeyboardInterrupt\n"
    )
    with pytest.raises(KeyboardInterrupt):
        evaluate(data, load_model(f"python:{module}:answer"), tmp_path / "run")
    assert read_results(tmp_path / "run" / "results.jsonl") == []


def test_a_module_that_exits_at_import_is_a_clear_error(data: Path, tmp_path: Path, capsys) -> None:
    module = write_module(tmp_path, "import sys\nsys.exit(0)\n")
    args = eval_args(data, tmp_path / "run")
    args[args.index("baseline:oracle")] = f"python:{module}:answer"
    code, text = run_cli(args, capsys)
    assert code != 0 and "Traceback" not in text
    assert f"importing {str(module)!r} failed: SystemExit: the code called sys.exit(0)" in text


def test_daemon_threads_are_reused_and_a_stuck_call_holds_up_no_other() -> None:
    """Calls one after another take the same thread; a call that never returns keeps its
    thread, and the next call gets another one instead of waiting behind it."""
    pool = DaemonThreads(f"test-{uuid.uuid4().hex[:8]}")
    stuck, entered = threading.Event(), threading.Event()

    def never_returns() -> None:
        entered.set()
        stuck.wait()

    def ours() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == pool.name]

    async def calls() -> list[str]:
        done = [await pool.run(lambda: threading.current_thread().name) for _ in range(20)]
        waiting = asyncio.ensure_future(pool.run(never_returns))
        await asyncio.to_thread(entered.wait)
        # The bound only ends a wait that would never end: a pool that queued it behind.
        done.append(await asyncio.wait_for(pool.run(lambda: "after the stuck one"), HANG_BOUND_S))
        waiting.cancel()
        return done

    try:
        done = asyncio.run(calls())
        assert done[-1] == "after the stuck one" and set(done[:-1]) == {pool.name}
        assert len(ours()) == 2  # the first (reused 20 times, then stuck) and one more
        assert all(t.daemon for t in ours())
    finally:
        stuck.set()


def test_sigterm_stops_a_run_whose_sync_agent_never_returns(data: Path, tmp_path: Path) -> None:
    """A sync function stuck in a call (a dead API without a timeout, a deadlock) runs in a
    worker thread no one can stop: SIGTERM (or Ctrl-C) must still end the run with its message
    and exit code, not wait on that thread at the exit. The function is told to block only
    after it wrote its marker, so the signal reaches a run whose call is stuck."""
    marker = tmp_path / "stuck"
    module = write_module(
        tmp_path,
        f"""
import threading
from pathlib import Path

def answer(messages, observation):
    Path({str(marker)!r}).touch()
    threading.Event().wait()  # never set: the call never returns
""",
    )
    env = dict(os.environ, PROACTIVEBENCH_CACHE=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    args = eval_args(data, tmp_path / "run", "--no-cache", "--no-report", "--scenarios", "ROD")
    args[args.index("baseline:oracle")] = f"python:{module}:answer"
    process = subprocess.Popen(
        [sys.executable, "-m", "proactivebench", *args], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        # On the condition, never a clock; the bound only ends a run that never got there.
        deadline = time.monotonic() + HANG_BOUND_S
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.exists() and process.poll() is None, "the function was never called"
        process.send_signal(signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=HANG_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail("after SIGTERM the run waits for ever on the stuck call")
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 143, stderr.decode()
    assert "interrupted; rerun the same command to resume" in stderr.decode()


# ----- what an agent sees in open-ended modes ---------------------------------------------------

#: An agent that answers with every text its observation holds (options, categories, prompt,
#: nested fields): were the options or the answer key there, it would name the category.
PEEKING = """
import dataclasses, json, pathlib
SEEN = pathlib.Path(__file__).with_name("seen.jsonl")

def texts(value):
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in texts(v)]
    return []

def answer(messages, observation):
    shown = dataclasses.asdict(observation)
    with SEEN.open("a") as out:
        out.write(json.dumps(shown) + "\\n")
    return "I see: " + "; ".join(texts(shown))
"""

#: A judge that marks each valid answer the generation contains (case-insensitive).
CONTAINS_JUDGE = """
import ast

def judge(messages, observation):
    user = messages[1]["content"]
    entries = ast.literal_eval(user.split("### Correct Answers (List):\\n")[1].split("\\n###")[0])
    output = user.split("### System Output:\\n")[1].lower()
    return ", ".join("1" if e and e.lower() in output else "0" for e in entries)
"""


@pytest.mark.parametrize("hint", [False, True], ids=["plain", "hint"])
@pytest.mark.parametrize("mode", ["oeg", "oeg-multiturn"])
def test_an_open_ended_agent_sees_no_option_and_no_category(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, mode: str, hint: bool
) -> None:
    """The protocol asks open-ended questions without options (docs/protocol.md §6): a
    `python:` agent's observation holds what the model is shown, the question (with a hint,
    the open-ended one) and the view.
    An agent that repeats all it was handed never names the category (nothing shown holds it
    on this data, checked first), so it is never judged right by it."""
    from proactivebench.data.synth import generate
    from proactivebench.run.judge import Judge
    from proactivebench.run.settings import EvalSettings

    root = tmp_path_factory.mktemp("synth-oeg")
    generate(root, per_scenario=2, seed=3, split="test")
    records = {(s, r.id): r for s, rs in load_dataset(root).records.items() for r in rs}
    agent = write_module(tmp_path, PEEKING)
    judging = write_module(tmp_path, CONTAINS_JUDGE)
    model = load_model(f"python:{agent}:answer")
    judge = Judge(load_model(f"python:{judging}:judge"))
    run = tmp_path / "run"
    evaluate(root, model, run, EvalSettings(mode=mode, hint=hint), judge=judge)
    seen = [json.loads(x) for x in (tmp_path / "seen.jsonl").read_text().splitlines()]
    assert {(o["scenario"], o["sample_id"]) for o in seen} == set(records)
    for shown in seen:
        answer = records[(shown["scenario"], shown["sample_id"])].answer.lower()
        assert shown["options"] == shown["categories"] == shown["action_options"] == []
        assert shown["correct_categories"] == shown["correct_actions"] == []
        assert answer not in json.dumps(shown).lower(), shown
    lines = outcomes(run)
    assert len(lines) == len(records) and not any(x.get("error") for x in lines.values())
    # Each turn the agent was asked the open-ended question its line records, not another.
    asked = sorted((o["scenario"], o["sample_id"], o["turn"], o["prompt"]) for o in seen)
    if mode == "oeg":
        assert all(x["category_prediction"] == 0 for x in lines.values())
        recorded = [(s, i, 1, x["prompt"]) for (s, i), x in lines.items()]
    else:
        assert not any(x["correct"] for x in lines.values())
        recorded = [
            (s, i, t["turn"], t["prompt"]) for (s, i), x in lines.items() for t in x["trace"]
        ]
    assert asked == sorted(recorded)


#: An agent whose answer to every turn is ANSWER: editing it is editing the agent's code.
ANSWERING = "def agent(messages, observation):\n    return {answer!r}\n"


def test_a_resume_with_edited_agent_code_is_refused_and_an_older_run_still_resumes(
    data: Path, tmp_path: Path, capsys
) -> None:
    """An agent edited between a `--limit` run and its resume would give the run's lines of
    two versions of the code under one name: run.json's provenance records the code's digest
    (the one the response cache keys on), and a resume with another refuses, naming the file.
    A complete run is not answered from its note of completion either. A run.json written
    before the digest was recorded has nothing to compare: it resumes."""
    agent, run = tmp_path / "ag.py", tmp_path / "run"
    agent.write_text(ANSWERING.format(answer="A"))
    args = eval_args(data, run, "--no-cache", "--no-report", "--limit", "1")
    args[args.index("baseline:oracle")] = f"python:{agent}:agent"
    code, text = run_cli(args, capsys)
    assert code == 0, text
    config = json.loads((run / "run.json").read_text())
    first = config["provenance"][-1]["code"]
    assert first == PythonCallable(f"{agent}:agent").code_hash
    before = (run / "results.jsonl").read_text()
    agent.write_text(ANSWERING.format(answer="E"))
    whole = args[: args.index("--limit")]
    code, text = run_cli(whole, capsys)
    assert code != 0 and "Traceback" not in text, text
    said = " ".join(text.split())
    assert str(run / "run.json") in said and "code" in said and "another --out" in said
    assert (run / "results.jsonl").read_text() == before
    # The whole run played with the first code, then a rerun with the edited one: refused too.
    agent.write_text(ANSWERING.format(answer="A"))
    code, text = run_cli(whole, capsys)
    assert code == 0, text
    complete = (run / "results.jsonl").read_text()
    agent.write_text(ANSWERING.format(answer="E"))
    code, text = run_cli(whole, capsys)
    assert code != 0 and "another --out" in " ".join(text.split()), text
    assert (run / "results.jsonl").read_text() == complete
    # A run.json of a version that recorded no digest: nothing to compare, the resume plays.
    old = tmp_path / "old"
    old.mkdir()
    (old / "results.jsonl").write_text(before)
    config["provenance"] = [
        {k: v for k, v in e.items() if k != "code"} for e in config["provenance"]
    ]
    (old / "run.json").write_text(json.dumps(config))
    code, text = run_cli(
        [*whole[: whole.index("--out") + 1], str(old), *whole[whole.index("--out") + 2 :]], capsys
    )
    assert code == 0, text
    assert {r["scenario"] for r in read_results(old / "results.jsonl")} == set(paper_scenarios())
