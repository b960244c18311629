"""A limit on requests in flight shared by several models and runs: `RequestLimit`.

A run bounds the *episodes* it keeps in flight (`RunOptions.concurrency`); each episode asks
one request at a time, but a judged episode adds its votes and several runs in one process
(the paper's evaluation: a dozen runs of one model) add theirs. `RequestLimit` bounds the
calls that reach the models, over every model wrapped with it (`LimitedModel`), whatever run
they belong to. (A backend's own `concurrency` option, applied by `Resilient`, bounds the
calls to that backend alone.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from proactivebench.models.base import ChatRequest, Completion, Model, ModelWrapper


class RequestLimit:
    """At most `limit` model calls in flight at once (None: no limit), counted over every
    model that goes through it. A batch is one call."""

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and (isinstance(limit, bool) or limit < 1):
            raise ValueError(f"a limit on requests in flight must be at least 1, got {limit!r}")
        self.limit = limit
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def slot(self) -> AbstractAsyncContextManager[object]:
        """One call's place, on the running event loop (asyncio objects cannot move from one
        loop to the next, and each `evaluate` outside a loop runs on a new one)."""
        if self.limit is None:
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.limit), loop
        return self._semaphore


class LimitedModel(ModelWrapper):
    """`inner`, each of whose calls waits for a place within a shared `RequestLimit`."""

    def __init__(self, inner: Model, limit: RequestLimit) -> None:
        super().__init__(inner)
        self.limit = limit

    @property
    def stats(self) -> dict[str, int]:
        return dict(getattr(self.inner, "stats", {}))

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        async with self.limit.slot():
            return await self.inner.generate(requests)
