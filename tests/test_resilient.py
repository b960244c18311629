"""The retry wrapper on its own (fake backends), and the `python:` backend through it.

No timing assertions: the policies here wait milliseconds at most, and what is checked is how
many attempts were made, what was raised, and how many calls were in flight at once.
"""

from __future__ import annotations

import asyncio
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from proactivebench.core.errors import ModelError, ModelSpecError, RunAbort, UserCodeError
from proactivebench.models import load_model
from proactivebench.models.base import ChatRequest, Completion, Model
from proactivebench.models.cache import CachedModel, ResponseCache
from proactivebench.models.python_callable import PythonCallable
from proactivebench.models.resilient import Resilient, RetryPolicy

#: Retries at once: nothing here is about how long a backoff is.
NO_WAIT = RetryPolicy(max_retries=3, base_delay=0.0, max_delay=0.001)
REQUEST = ChatRequest([{"role": "user", "content": "Which?"}])


def transient(reason: str = "HTTP 503 Service Unavailable", **extra: Any) -> ModelError:
    return ModelError(
        f"fake: {reason}", endpoint="http://fake/v1", retryable=True, reason=reason, **extra
    )


class Scripted(Model):
    """A backend that fails as its script says, one entry per call, then answers "A"."""

    name = "fake:scripted"
    needs_images = False

    def __init__(self, *faults: Exception | None, max_batch: int = 1) -> None:
        self.faults = list(faults)
        self.max_batch = max_batch
        self.calls: list[int] = []

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls.append(len(requests))
        fault = self.faults.pop(0) if self.faults else None
        if fault is not None:
            raise fault
        return [Completion("A") for _ in requests]


def ask(model: Model, count: int = 1) -> list[Completion]:
    async def run() -> list[Completion]:
        return await model.generate([REQUEST] * count)

    return asyncio.run(run())


@dataclass(frozen=True)
class Recorded(RetryPolicy):
    """Waits nothing, and keeps what each delay was asked from."""

    asked: list[tuple[int, float | None]] = field(default_factory=list)

    def delay(self, retry: int, retry_after: float | None, rng: Any) -> float:
        self.asked.append((retry, retry_after))
        return 0.0


# ----- retries ----------------------------------------------------------------------------------


def test_a_transient_failure_is_retried_until_it_answers() -> None:
    policy = Recorded(max_retries=3)
    inner = Scripted(transient(), transient(retry_after=2.5))
    model = Resilient(inner, retry=policy)
    assert [c.text for c in ask(model)] == ["A"]
    assert inner.calls == [1, 1, 1]
    assert policy.asked == [(0, None), (1, 2.5)]  # the server's Retry-After reaches the policy
    assert model.stats == {"requests": 1, "attempts": 3, "retries": 2, "failures": 0}


def test_retries_stop_at_max_retries_with_one_clear_error() -> None:
    inner = Scripted(*[transient("HTTP 500 Internal Server Error: boom")] * 10)
    model = Resilient(inner, retry=NO_WAIT, max_retries=2)
    with pytest.raises(ModelError) as info:
        ask(model)
    assert str(info.value) == (
        "fake:scripted: gave up after 3 attempts; last at http://fake/v1: "
        "HTTP 500 Internal Server Error: boom"
    )
    assert info.value.retryable and info.value.endpoint == "http://fake/v1"
    assert inner.calls == [1, 1, 1]
    assert model.stats == {"requests": 0, "attempts": 3, "retries": 2, "failures": 1}


def test_without_retries_the_error_counts_one_attempt() -> None:
    inner = Scripted(transient("HTTP 503 Service Unavailable"))
    with pytest.raises(ModelError) as info:
        ask(Resilient(inner, retry=NO_WAIT, max_retries=0))
    assert str(info.value).startswith("fake:scripted: gave up after 1 attempt; last at ")


def test_a_failure_the_backend_calls_final_is_raised_at_once_as_it_is() -> None:
    refusal = ModelError("fake: http://fake/v1 answered HTTP 400 (not retried)", retryable=False)
    bug = KeyError("no such thing")
    for fault in (refusal, bug):
        inner = Scripted(fault)
        model = Resilient(inner, retry=NO_WAIT)
        with pytest.raises(type(fault)) as info:
            ask(model)
        assert info.value is fault and inner.calls == [1]
        assert model.stats == {"requests": 0, "attempts": 1, "retries": 0, "failures": 1}


def test_the_backend_decides_what_is_retryable() -> None:
    class Patient(Scripted):
        def is_retryable(self, exc: BaseException) -> bool:
            return isinstance(exc, LookupError)

    inner = Patient(KeyError("busy"), IndexError("busy"))
    assert [c.text for c in ask(Resilient(inner, retry=NO_WAIT))] == ["A"]
    assert inner.calls == [1, 1, 1]


def test_requests_of_one_call_are_retried_apart_in_batches_the_backend_takes() -> None:
    inner = Scripted(None, transient(), None, max_batch=2)
    model = Resilient(inner, retry=NO_WAIT)
    assert len(ask(model, 5)) == 5
    assert sorted(inner.calls) == [1, 2, 2, 2]  # 2 + 2 + 1, one batch of 2 sent twice
    assert model.stats["retries"] == 2 and model.stats["requests"] == 5


# ----- the breaker ------------------------------------------------------------------------------


def test_the_breaker_ends_the_run_after_so_many_failures_in_a_row() -> None:
    inner = Scripted(*[transient("HTTP 502 Bad Gateway")] * 10)
    model = Resilient(inner, retry=NO_WAIT, max_retries=1, max_consecutive_failures=3)
    with pytest.raises(ModelError, match="gave up after 2 attempts"):
        ask(model)  # failures 1 and 2
    with pytest.raises(RunAbort) as info:
        ask(model)  # failure 3, then the breaker instead of a retry
    assert str(info.value).startswith(
        "fake:scripted: 3 requests in a row failed (the last: HTTP 502 Bad Gateway); "
        "the run stops here"
    )
    assert "rerunning the same command resumes it" in str(info.value)
    assert inner.calls == [1, 1, 1]
    with pytest.raises(RunAbort):
        ask(model)  # every later call too, before it reaches the backend
    assert inner.calls == [1, 1, 1]


def test_a_success_resets_the_breaker_and_refusals_do_not_count() -> None:
    """A refusal is the request's failure, not the backend's: it fails its episode alone."""
    refusal = ModelError("fake: refused", retryable=False)
    inner = Scripted(
        transient(), transient(), None, transient(), refusal, refusal, *[transient()] * 2
    )
    model = Resilient(inner, retry=NO_WAIT, max_retries=0, max_consecutive_failures=3)
    outcomes = (ModelError, ModelError, None, ModelError, ModelError, ModelError, ModelError)
    for expected in (*outcomes, ModelError, RunAbort):
        if expected is None:
            ask(model)
        else:
            with pytest.raises(expected):
                ask(model)
    assert len(inner.calls) == 8


@pytest.mark.parametrize("off", [0, None])
def test_a_breaker_set_to_zero_or_none_never_ends_the_run(off: int | None) -> None:
    inner = Scripted(*[transient()] * 30)
    model = Resilient(inner, retry=NO_WAIT, max_retries=0, max_consecutive_failures=off)
    for _ in range(30):
        with pytest.raises(ModelError):
            ask(model)
    assert len(inner.calls) == 30


# ----- the concurrency limit --------------------------------------------------------------------


class Counting(Scripted):
    """Counts the calls in flight; each stays in flight for a few turns of the loop."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = self.most = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        for _ in range(5):
            await asyncio.sleep(0)
        self.in_flight -= 1
        return await super().generate(requests)


def most_in_flight(concurrency: int | None, calls: int = 20, runs: int = 1) -> int:
    inner = Counting()
    model = Resilient(inner, concurrency=concurrency)

    async def many() -> None:
        await asyncio.gather(*(model.generate([REQUEST]) for _ in range(calls)))

    for _ in range(runs):  # a fresh event loop each time, as successive runs have
        asyncio.run(many())
    assert len(inner.calls) == calls * runs
    return inner.most


def test_the_concurrency_limit_bounds_the_calls_in_flight() -> None:
    assert most_in_flight(None) == 20  # no limit: as many as the caller makes
    assert most_in_flight(3) == 3
    assert most_in_flight(2, runs=2) == 2  # one semaphore per event loop
    for bad in (0, -1):
        with pytest.raises(ModelSpecError, match="concurrency must be positive"):
            Resilient(Scripted(), concurrency=bad)


# ----- what the wrapper passes through ----------------------------------------------------------


def test_the_wrapper_speaks_for_its_backend(tmp_path: Path) -> None:
    class Backend(Scripted):
        name = "fake:backend"
        needs_images = True
        sees_answer_key = True
        events: list[str]

        @property
        def cache_name(self) -> str:
            return "fake:backend@here"

        def request_settings(self) -> dict[str, Any]:
            return {"reasoning": True}

        async def preflight(self) -> None:
            self.events.append("preflight")

        async def aclose(self) -> None:
            self.events.append("aclose")

    inner = Backend(transient(), max_batch=4)
    inner.events = []
    model = Resilient(inner, retry=NO_WAIT)
    assert (model.name, model.cache_name, model.max_batch) == ("fake:backend", inner.cache_name, 4)
    assert model.needs_images and model.sees_answer_key
    assert model.request_settings() == {"reasoning": True}
    store: Any = object()
    model.bind_images(store)
    assert model.images is store and inner.images is store

    async def lifecycle() -> None:
        await model.preflight()
        await model.aclose()

    asyncio.run(lifecycle())
    assert inner.events == ["preflight", "aclose"]
    # Stacked as a run stacks them: the progress bar reads the retries through the cache.
    cache = ResponseCache(tmp_path / "cache.sqlite")
    cached = CachedModel(model, cache)
    cached.bind_images(store)
    ask(cached)
    assert cached.stats["retries"] == 1 and cached.stats["cache_hits"] == 0
    cache.close()


# ----- through load_model: the python backend ---------------------------------------------------


def write_function(directory: Path, body: str) -> Path:
    path = directory / "agent.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_python_function_whose_api_did_not_answer_is_called_again(tmp_path: Path) -> None:
    agent = write_function(
        tmp_path,
        """
        CALLS = []

        def answer(messages, observation):
            CALLS.append(len(messages))
            if len(CALLS) <= 2:
                raise ConnectionRefusedError("the API is down")
            return "B"
        """,
    )
    model = load_model(f"python:{agent}:answer", max_delay=0.001)
    assert isinstance(model, Resilient) and isinstance(model.inner, PythonCallable)
    assert [c.text for c in ask(model)] == ["B"]
    assert model.inner.fn.__globals__["CALLS"] == [1, 1, 1]  # type: ignore[attr-defined]
    assert model.stats == {"requests": 1, "attempts": 3, "retries": 2, "failures": 0}


def test_a_python_function_that_keeps_timing_out_gives_up(tmp_path: Path) -> None:
    agent = write_function(
        tmp_path,
        """
        def answer(messages, observation):
            raise TimeoutError("no answer within 5s")
        """,
    )
    model = load_model(f"python:{agent}:answer", max_retries=2, max_delay=0.001)
    with pytest.raises(ModelError) as info:
        ask(model)
    assert re.fullmatch(
        rf"python:{re.escape(str(agent))}:answer: gave up after 3 attempts; last: "
        rf"TimeoutError: no answer within 5s \(at {re.escape(str(agent))}:3 in answer\)",
        str(info.value),
    ), str(info.value)
    assert model.stats["attempts"] == 3


def test_any_other_exception_from_a_python_function_fails_at_once(tmp_path: Path) -> None:
    agent = write_function(
        tmp_path,
        """
        CALLS = []

        def answer(messages, observation):
            CALLS.append(1)
            raise ValueError("no idea")
        """,
    )
    model = load_model(f"python:{agent}:answer", max_delay=0.001)
    assert isinstance(model, Resilient)
    with pytest.raises(UserCodeError) as info:
        ask(model)
    assert str(info.value) == f"ValueError: no idea (at {agent}:6 in answer)"  # as before
    assert not info.value.retryable
    assert model.inner.fn.__globals__["CALLS"] == [1]  # type: ignore[attr-defined]
    assert model.stats == {"requests": 0, "attempts": 1, "retries": 0, "failures": 1}


def test_every_wrapped_backend_takes_the_wrappers_options(tmp_path: Path) -> None:
    agent = write_function(tmp_path, "def answer(messages, observation):\n    return 'A'\n")
    model = load_model(
        f"python:{agent}:answer", parallel=True, max_retries=1, concurrency=2, max_delay=3
    )
    assert isinstance(model, Resilient) and isinstance(model.inner, PythonCallable)
    assert model.retry.max_retries == 1 and model.retry.max_delay == 3.0
    assert model.concurrency == 2 and model.inner._lock is None
    # A user's function that fails on some inputs ends only those episodes, unless asked.
    assert model.max_consecutive_failures == 0
    again = load_model(f"python:{agent}:answer", max_consecutive_failures=5)
    assert isinstance(again, Resilient) and again.max_consecutive_failures == 5
    with pytest.raises(ModelSpecError) as info:
        load_model(f"python:{agent}:answer", threads=4)
    message = str(info.value)
    assert "unknown option(s) threads for PythonCallable" in message
    assert "parallel" in message and "max_retries" in message and "concurrency" in message
    assert "seed" not in message.split("known:")[1]
    for bad in ({"max_retries": -1}, {"max_consecutive_failures": -1}, {"max_delay": 0}):
        with pytest.raises(ModelSpecError):
            load_model(f"python:{agent}:answer", **bad)
