"""The run engine's two limits, seen from the server: episodes in flight (`--concurrency`,
`RunOptions.concurrency`) and requests in flight over several runs of one engine
(`RunOptions.requests_in_flight`).

An episode asks one request at a time, so the requests a fake server holds at once are the
episodes in flight. The server holds the first requests until as many as the test expects are
in flight together (`gather`), so that the peak it counts is the limit, not a race: with fewer
in flight it gives up after `hang` seconds and the peak shows the shortfall.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from proactivebench import EvalSettings, RunOptions, aevaluate, evaluate, load_model
from proactivebench.core.errors import SettingsError
from proactivebench.data.synth import generate
from proactivebench.models.cache import ResponseCache
from proactivebench.run import scheduler
from proactivebench.run.engine import RunEngine
from proactivebench.run.rundir import read_results
from proactivebench.testing.server import FakeOpenAI


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    generate(root, per_scenario=4, scenarios=["ROD", "QD"])
    return root


def test_eval_keeps_concurrency_episodes_in_flight(data: Path, tmp_path: Path, capsys) -> None:
    with FakeOpenAI(gather=3, hang=5.0, latency=0.05) as fake:
        args = ["eval", "--data", str(data), "--model", f"openai:m@{fake.url}"]
        args += ["--concurrency", "3", "--out", str(tmp_path / "run"), "--no-report"]
        code, text = run_cli([*args, "--no-cache"], capsys)
        assert code == 0, text
        assert fake.peak_in_flight == 3
    assert len(read_results(tmp_path / "run" / "results.jsonl")) == 8


def test_a_concurrency_above_the_episodes_starts_a_worker_per_episode(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--concurrency bounds the episodes in flight; it is not a number of workers to start
    whatever there is to play: 10,000,000 for 21 episodes took 165 s and 9.8 GB before the
    first one. Here 100,000 for 8 episodes: the scheduler starts 8 workers, its answer
    server and its writer, and nothing else."""
    started: list[str] = []
    create_task = asyncio.create_task

    def counted(coroutine: Any, **options: Any) -> asyncio.Task[Any]:
        started.append(coroutine.__qualname__)
        return create_task(coroutine, **options)

    monkeypatch.setattr(scheduler.asyncio, "create_task", counted)
    options = RunOptions(concurrency=100_000)
    evaluate(data, load_model("baseline:oracle"), tmp_path / "run", options=options)
    assert len(read_results(tmp_path / "run" / "results.jsonl")) == 8
    assert sorted(started) == sorted(
        ["Batcher.serve", "Scheduler._writer", *["Scheduler._worker"] * 8]
    ), started


def test_runs_of_one_engine_share_its_limit_on_requests(data: Path, tmp_path: Path) -> None:
    options = RunOptions(concurrency=4, requests_in_flight=2)
    with FakeOpenAI(gather=2, hang=5.0, latency=0.05) as fake:
        engine = RunEngine(options, ResponseCache(tmp_path / "cache.sqlite"))

        async def both() -> list:
            runs = (
                aevaluate(data, load_model(f"openai:m@{fake.url}"), tmp_path / name, engine=engine)
                for name in ("a", "b")
            )
            return await asyncio.gather(*runs)

        outcomes = asyncio.run(both())
        engine.cache.close()
        # Eight episodes could be in flight (two runs of four); the engine lets two requests out.
        assert fake.peak_in_flight == 2
    assert [o.summary.as_dict()["scenarios"] for o in outcomes] == [
        outcomes[0].summary.as_dict()["scenarios"]
    ] * 2
    assert all(len(read_results(tmp_path / n / "results.jsonl")) == 8 for n in ("a", "b"))


def test_options_are_given_once(data: Path, tmp_path: Path) -> None:
    model = load_model("baseline:oracle")
    with pytest.raises(SettingsError, match="disagree"):
        evaluate(data, model, tmp_path / "a", options=RunOptions(concurrency=2), concurrency=3)
    with pytest.raises(SettingsError, match="own options and cache"):
        evaluate(data, model, tmp_path / "b", engine=RunEngine(), options=RunOptions())
    outcome = evaluate(data, model, tmp_path / "c", EvalSettings(), options=RunOptions(2))
    assert outcome.played == 8
