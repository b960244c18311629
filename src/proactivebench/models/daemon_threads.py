"""Daemon threads for calls that may never return: a `python:` model's sync function (an API it
calls without a timeout, a deadlock).

`asyncio.to_thread` would hand such a call to the event loop's default executor, whose threads
are joined when the loop closes and again when the interpreter exits: one stuck call kept
Ctrl-C and SIGTERM from ending the run, for ever. These threads are daemons, which neither
waits for: a stuck call is left behind, and what it returns after the run is dropped.

Threads are kept for the next call once theirs returned (starting one per call cost ~70 µs);
a stuck one is simply never free again, and the next call gets a new thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T")

#: A job: the call and what settles its future on the caller's event loop.
_Job = Callable[[], None]


class DaemonThreads:
    """A pool of daemon threads that grows to as many calls as run at once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        #: Threads waiting for a job and not yet promised one.
        self._idle = 0

    def submit(self, job: _Job) -> None:
        """Run `job` in a free thread, or a new one when none is free."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # a waiting thread takes it
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name=self.name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()

    def _free(self) -> None:
        """The calling thread is done with its call: free for the next one. Said before the
        caller hears of the result, so that a call made in answer to it finds this thread."""
        with self._lock:
            self._idle += 1

    async def run(self, call: Callable[[], _T]) -> _T:
        """`call()` in one of the threads, awaited; what it raises is raised here (Ctrl-C in
        the call too, which stops the run)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        context = contextvars.copy_context()

        def settle(value: Any, error: BaseException | None) -> None:
            if future.done():  # the awaiting task was cancelled (Ctrl-C)
                return
            if error is None:
                future.set_result(value)
            else:
                future.set_exception(error)

        def job() -> None:
            value, error = None, None
            try:
                value = context.run(call)
            except BaseException as exc:  # handed to the awaiting coroutine, whatever it is
                error = exc
            self._free()
            with contextlib.suppress(RuntimeError):  # the loop closed: the run is over
                loop.call_soon_threadsafe(settle, value, error)

        self.submit(job)
        return await future
