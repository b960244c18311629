"""The error classes: the tree that `proactivebench.core.errors` documents is the classes' own, and
each cause a caller acts on raises its own class (a script tells causes apart by type, never
by a message's words), a subclass of the one it was before so that `except` clauses written
for the older, broader class still catch it."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

import proactivebench
from clirun import held_by_another_process
from handmade import full_dataset
from proactivebench.core import errors
from proactivebench.core.errors import (
    CredentialsMissingError,
    DamagedRunError,
    LaunchError,
    NotARunDirError,
    NothingToDoError,
    ProactiveBenchError,
    RunAbort,
    RunDirError,
    RunDirInUseError,
    ServerUnreachableError,
    SettingsError,
    TooManyFailuresError,
)
from proactivebench.jobs.evaluate import evaluate
from proactivebench.jobs.launch import detect_launch
from proactivebench.jobs.rejudge import rejudge
from proactivebench.models import load_model
from proactivebench.models.openai_compat import OpenAICompatible
from proactivebench.models.resilient import Resilient, RetryPolicy
from proactivebench.run.judge import Judge
from proactivebench.run.rundir import RunLock, make_run_dir, merge_runs, read_run_config
from proactivebench.run.settings import EvalSettings
from proactivebench.testing.server import FakeOpenAI, closed_port_url

#: A class's name in the module docstring's tree: "├── Name", "└── Name" or the root alone.
TREE_LINE = re.compile(r"^( *)(?:[│ ]*[├└]── )?([A-Z]\w+)\s{2,}\S")


def documented_tree() -> dict[str, str | None]:
    """Each class named in the tree of `errors.__doc__`, and the class it hangs under."""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        found = TREE_LINE.match(line)
        if found is None or not line.startswith("    "):
            continue
        column = line.index(found[2])
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[found[2]] = stack[-1][1] if stack else None
        stack.append((column, found[2]))
    return parents


def test_the_documented_tree_is_the_class_hierarchy() -> None:
    defined = {
        name: cls
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, ProactiveBenchError) and cls.__module__ == errors.__name__
    }
    tree = documented_tree()
    assert set(tree) == set(defined)
    for name, cls in defined.items():
        parent = cls.__bases__[0].__name__ if cls is not ProactiveBenchError else None
        assert tree[name] == parent, name


def test_every_error_class_is_exported() -> None:
    for name, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, ProactiveBenchError):
            assert getattr(proactivebench, name) is cls
            assert name in proactivebench.__all__


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_dataset(tmp_path_factory.mktemp("data"))


def test_run_directory_causes(data: Path, tmp_path: Path) -> None:
    with pytest.raises(NotARunDirError, match=r"no run\.json"):
        read_run_config(tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(NotARunDirError, match="it is a file"):
        make_run_dir(tmp_path / "file")
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "run.json").write_text("[1]\n")
    with pytest.raises(DamagedRunError, match="not a JSON object"):
        read_run_config(damaged)
    with (
        held_by_another_process(tmp_path / "held") as pid,
        pytest.raises(RunDirInUseError, match=f"PID {pid}"),
        RunLock(tmp_path / "held"),
    ):
        pass
    for cls in (NotARunDirError, DamagedRunError, RunDirInUseError, errors.RunMismatchError):
        assert issubclass(cls, RunDirError)


def test_nothing_to_do_and_settings(data: Path, tmp_path: Path) -> None:
    with pytest.raises(NothingToDoError, match="at least one run directory"):
        merge_runs([], tmp_path / "merged")
    run = tmp_path / "mcqa"
    evaluate(data, load_model("baseline:oracle"), run)
    judge = Judge(load_model(f"openai:j@{closed_port_url()}"))  # never asked: nothing to judge
    with pytest.raises(NothingToDoError, match="no open-ended"):
        rejudge(run, judge)
    with pytest.raises(SettingsError, match="open-ended generation has no --icl"):
        EvalSettings(mode="oeg", icl=1)
    with pytest.raises(SettingsError, match="must be >= 0"):
        EvalSettings(icl=-1)


def test_why_a_run_aborts(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ServerUnreachableError, match="server unreachable"):
        evaluate(data, load_model(f"openai:m@{closed_port_url()}"), tmp_path / "down")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(CredentialsMissingError, match=r"\$OPENAI_API_KEY is not set"):
        evaluate(data, load_model("openai:gpt-4o"), tmp_path / "hosted")
    fast = RetryPolicy(max_retries=0, base_delay=0.01, max_delay=0.01)
    with FakeOpenAI(fault_rate=1.0, fault_kinds=("http500",)) as fake:
        failing = Resilient(
            OpenAICompatible("m", endpoints=[fake.url]), retry=fast, max_consecutive_failures=3
        )
        with pytest.raises(TooManyFailuresError, match="3 requests in a row failed"):
            evaluate(data, failing, tmp_path / "failing", concurrency=1)
    for cls in (ServerUnreachableError, CredentialsMissingError, TooManyFailuresError):
        assert issubclass(cls, RunAbort)


def test_an_unusable_launcher_environment() -> None:
    with pytest.raises(LaunchError, match="RANK and WORLD_SIZE must both be integers"):
        detect_launch({"RANK": "x", "WORLD_SIZE": "2"})
    with pytest.raises(LaunchError, match="outside WORLD_SIZE"):
        detect_launch({"RANK": "3", "WORLD_SIZE": "2"})


def test_messages_are_unchanged_by_the_classes(tmp_path: Path) -> None:
    """The same words as before the leaf classes (scripts may have matched them)."""
    (tmp_path / "run.json").write_text(json.dumps([]))
    with pytest.raises(DamagedRunError) as info:
        read_run_config(tmp_path)
    assert str(info.value) == f"{tmp_path / 'run.json'} is damaged (not a JSON object)"
