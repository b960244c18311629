"""Retries, a circuit breaker and a concurrency limit around any backend: `Resilient`.

A run stacks it as `CachedModel(Resilient(backend))`: cached answers never reach it, every
other request goes through it to the backend. The backend only says which of its failures are
transient (`Model.is_retryable`; by default a `ModelError` marked `retryable`); this wrapper
decides when and how often to try again, so that every backend gets the same policy:

- a transient failure is retried up to `max_retries` times, after an exponential backoff with
  full jitter that honours the server's `Retry-After` (`ModelError.retry_after`); any other
  failure is raised at once, as the backend raised it;
- when `max_consecutive_failures` attempts in a row failed in a way a retry might fix, across
  requests, the run ends (`RunAbort`): the backend is down; its finished episodes are kept and
  a rerun resumes it. A refusal (a failure no retry fixes) fails its own episode and does not
  count. `load_model` sets the limit per backend (its `SpecKind.breaker`: on for `openai` and
  `anthropic`, off for `hf` and `python` unless asked);
- at most `concurrency` calls are in flight at once (None: as many as the caller makes).

What each backend calls transient: `openai` and `anthropic` (`models.http`) timeouts, refused
or dropped connections, 408/425/429, 5xx (Anthropic's 529 among them) and malformed answers;
`python` a `TimeoutError` or `ConnectionError` from the user's function; `hf` nothing (its
failures are bugs or out-of-memory, which a retry repeats).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

from proactivebench.core.errors import (
    ModelError,
    ModelSpecError,
    RunAbort,
    TooManyFailuresError,
    episode_error,
)
from proactivebench.core.ranges import Range
from proactivebench.models.base import ChatRequest, Completion, Model, ModelWrapper
from proactivebench.models.options import Annotated

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with full jitter.

    Full jitter (a uniform draw up to the exponential cap) keeps thousands of episodes that hit
    the same overloaded server at once from retrying in lockstep. A `Retry-After` from the
    server is a floor, honoured up to `max_delay` so that one header cannot stall a run.
    """

    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 60.0

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        if retry_after is not None:
            # Spread the herd a little past the server's floor.
            return min(self.max_delay, retry_after + rng.uniform(0.0, self.base_delay))
        return rng.uniform(0.0, min(self.max_delay, self.base_delay * 2**retry))


#: Used when `Resilient` gets no `retry` policy; read when a wrapper is made, so that tests
#: may swap it for a faster one.
DEFAULT_RETRY = RetryPolicy()
#: Failed attempts in a row that end a run, unless the run says otherwise.
DEFAULT_MAX_CONSECUTIVE_FAILURES = 20


def retry_policy(
    base: RetryPolicy, max_retries: int | None = None, max_delay: float | None = None
) -> RetryPolicy:
    """`base` with the options a run gave (None keeps `base`'s), checked."""
    if max_retries is not None and max_retries < 0:
        raise ModelSpecError(f"max_retries must be >= 0, got {max_retries}")
    if max_delay is not None and (not max_delay or max_delay <= 0):
        raise ModelSpecError(f"max_delay must be positive, got {max_delay!r}")
    return dataclasses.replace(
        base,
        max_retries=base.max_retries if max_retries is None else int(max_retries),
        max_delay=base.max_delay if max_delay is None else float(max_delay),
    )


def failure_reason(exc: Exception) -> str:
    """The fault alone, for the wrapper's messages: a `ModelError`'s `reason` when it has one,
    else how the failure is recorded on an episode."""
    if isinstance(exc, ModelError):
        return exc.reason or str(exc)
    return episode_error(exc)


class Resilient(ModelWrapper):
    """Wraps a backend: each call is retried, bounded and counted as the module says.

    `stats` counts requests (a batch of k requests tried once is k attempts): `requests`
    answered, `attempts` sent to the backend, `retries` among them, and `failures`, requests
    that failed for good. The progress bar shows `retries`.
    """

    def __init__(
        self,
        inner: Model,
        *,
        max_retries: Annotated[int, Range(0)] | None = None,
        max_delay: Annotated[float, Range(0, low_open=True)] | None = None,
        retry: RetryPolicy | None = None,
        concurrency: Annotated[int, Range(1)] | None = None,
        max_consecutive_failures: Annotated[int, Range(0)]
        | None = DEFAULT_MAX_CONSECUTIVE_FAILURES,
        seed: int = 0,
    ) -> None:
        super().__init__(inner)
        self.retry = retry_policy(retry or DEFAULT_RETRY, max_retries, max_delay)
        if concurrency is not None and (not concurrency or concurrency <= 0):
            raise ModelSpecError(f"concurrency must be positive, got {concurrency!r}")
        #: None: as many calls at once as the caller makes (the engine's episodes in flight).
        self.concurrency = None if concurrency is None else int(concurrency)
        if max_consecutive_failures is not None and max_consecutive_failures < 0:
            raise ModelSpecError("max_consecutive_failures must be >= 0 (0: never stop the run)")
        #: 0: never end the run, however many attempts fail.
        self.max_consecutive_failures = int(max_consecutive_failures or 0)
        #: Failed attempts (requests) in a row, across requests; a success resets it.
        self._failing = 0
        self._last_failure = ""
        self._rng = random.Random(seed)
        self._limit: asyncio.Semaphore | contextlib.nullcontext[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stats = {"requests": 0, "attempts": 0, "retries": 0, "failures": 0}

    def __repr__(self) -> str:
        return f"Resilient({self.inner!r})"

    def is_retryable(self, exc: BaseException) -> bool:
        """What gets here failed for good: the retries are spent (or were never due)."""
        return False

    async def aclose(self) -> None:
        await super().aclose()
        self._limit = None
        self._loop = None

    # ----- calls ----------------------------------------------------------------------------

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Batches of at most the backend's `max_batch`, each tried on its own: a request the
        backend answers one at a time is retried alone, not with the others of the call."""
        size = max(1, self.inner.max_batch)
        if len(requests) <= size:
            return await self._call(requests)
        chunks = [requests[start : start + size] for start in range(0, len(requests), size)]
        answers = await asyncio.gather(*(self._call(chunk) for chunk in chunks))
        return [completion for chunk in answers for completion in chunk]

    async def _call(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        attempts = self.retry.max_retries + 1
        last: Exception | None = None
        for attempt in range(attempts):
            self._check_breaker()
            if last is not None:
                self.stats["retries"] += len(requests)
                retry_after = last.retry_after if isinstance(last, ModelError) else None
                delay = self.retry.delay(attempt - 1, retry_after, self._rng)
                reason = failure_reason(last)
                log.info("%s: retry %d in %.2fs after %s", self.name, attempt, delay, reason)
                await asyncio.sleep(delay)
            async with self._call_limit():
                self.stats["attempts"] += len(requests)
                try:
                    completions = await self.inner.generate(requests)
                except RunAbort:
                    raise  # the backend ends the run: not a failed attempt
                except Exception as exc:
                    last = exc
                else:
                    self._failing = 0
                    self.stats["requests"] += len(requests)
                    return completions
            if not self.inner.is_retryable(last):
                self.stats["failures"] += len(requests)
                raise last
            self._failing += len(requests)
            self._last_failure = failure_reason(last)
        self.stats["failures"] += len(requests)
        assert last is not None  # at least one attempt was made, and it failed
        raise self._gave_up(last, attempts) from last

    def _gave_up(self, last: Exception, attempts: int) -> ModelError:
        """The error of a request whose every attempt failed in a way a retry might fix."""
        endpoint = last.endpoint if isinstance(last, ModelError) else None
        where = f" at {endpoint}" if endpoint else ""
        reason = failure_reason(last)
        return ModelError(
            f"{self.name}: gave up after {attempts} attempt{'' if attempts == 1 else 's'}; "
            f"last{where}: {reason}",
            endpoint=endpoint,
            status=last.status if isinstance(last, ModelError) else None,
            retryable=True,
            reason=reason,
        )

    def _check_breaker(self) -> None:
        """End the run when so many attempts in a row failed that the backend is down."""
        limit = self.max_consecutive_failures
        if limit and self._failing >= limit:
            raise TooManyFailuresError(
                f"{self.name}: {self._failing} requests in a row failed (the last: "
                f"{self._last_failure}); the run stops here, its finished episodes are kept, and "
                "rerunning the same command resumes it"
            )

    def _call_limit(self) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        """The call limit of the running event loop (a run is one `asyncio.run`; asyncio
        objects cannot move from one loop to the next)."""
        loop = asyncio.get_running_loop()
        if self._limit is None or self._loop is not loop:
            self._limit = (
                contextlib.nullcontext()
                if self.concurrency is None
                else asyncio.Semaphore(self.concurrency)
            )
            self._loop = loop
        return self._limit
