"""Scheduling a run: many episodes in flight, batched requests, finished episodes committed.

Episodes are independent and their turns sequential, so up to `concurrency` workers each play
one episode at a time; a model that accepts batches gets the turns that are ready together
(`Batcher`). Finished episodes go to one writer, which appends them to `results.jsonl` and
fsyncs what finished meanwhile together (group commit), so a crash loses at most the episodes
in flight and the disk never throttles the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sized
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from proactivebench.core.errors import WriteError
from proactivebench.models.base import ChatRequest, Completion, Model
from proactivebench.run.rundir import ResultsFile

if TYPE_CHECKING:
    from proactivebench.run.play_episode import Result

#: What a worker plays: an episode (`eval`), or a result line to judge again (`judge`).
Item = TypeVar("Item")
#: Plays one item, asking the model through the function it is given.
PlayOne = Callable[[Item, Callable[[ChatRequest], Awaitable[Completion]]], Awaitable["Result"]]


class Batcher:
    """Collects the requests that are ready and hands them to the model in batches."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.queue: asyncio.Queue[tuple[ChatRequest, asyncio.Future[Completion]]] = asyncio.Queue()

    async def submit(self, request: ChatRequest) -> Completion:
        if self.model.max_batch <= 1:
            return (await self.model.generate([request]))[0]
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        await self.queue.put((request, future))
        return await future

    async def serve(self) -> None:
        while True:
            batch = [await self.queue.get()]
            # Let the other episodes reach their next request before the batch goes out.
            await asyncio.sleep(0)
            while len(batch) < self.model.max_batch and not self.queue.empty():
                batch.append(self.queue.get_nowait())
            try:
                completions = await self.model.generate([r for r, _ in batch])
                if len(completions) != len(batch):
                    raise RuntimeError(
                        f"model returned {len(completions)} answers for {len(batch)} requests"
                    )
            except Exception as exc:  # the episodes waiting on this batch record the error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), completion in zip(batch, completions, strict=True):
                if not future.done():
                    future.set_result(completion)


class Scheduler(Generic[Item]):
    """Plays episodes (or other items) with `concurrency` workers and commits each
    result as it ends.

    A write error or a bug in a worker ends the run at once; on any end (done, error, Ctrl-C)
    every task is stopped and collected, and episodes that finished but were not written yet
    are written before the scheduler returns.
    """

    def __init__(
        self,
        model: Model,
        play_one: PlayOne[Item],
        results: ResultsFile,
        *,
        concurrency: int,
        on_result: Callable[[Result], None] = lambda result: None,
    ) -> None:
        self.batcher = Batcher(model)
        self.play_one = play_one
        self.results = results
        self.concurrency = concurrency
        self.on_result = on_result
        self.finished: asyncio.Queue[Result] = asyncio.Queue()

    async def run(self, episodes: Iterable[Item]) -> None:
        items = episodes if isinstance(episodes, Sized) else list(episodes)
        pending = iter(items)
        server = asyncio.create_task(self.batcher.serve())
        committer = asyncio.create_task(self._writer())
        # No more workers than items: the bound is on episodes in flight, and a worker per
        # unit of a huge --concurrency (10,000,000) took minutes and gigabytes to start.
        count = min(self.concurrency, len(items))
        workers = [asyncio.create_task(self._worker(pending)) for _ in range(count)]
        joiner: asyncio.Future[Any] | None = None
        try:
            await self._until_done(set(workers), committer)
            joiner = asyncio.ensure_future(self.finished.join())
            await self._until_done({joiner}, committer)
        finally:
            helpers = [server, committer, *workers, *([joiner] if joiner else [])]
            for task in helpers:
                task.cancel()
            # Collect the cancellations, so that no task is left with an unretrieved error.
            await asyncio.gather(*helpers, return_exceptions=True)
            self._write_left()

    async def _worker(self, pending: Iterator[Item]) -> None:
        for episode in pending:  # the workers share one iterator: each episode is played once
            await self.finished.put(await self.play_one(episode, self.batcher.submit))

    async def _writer(self) -> None:
        """Group commit: what finished while the last fsync ran is written and synced together."""
        while True:
            batch = [await self.finished.get()]
            while not self.finished.empty():
                batch.append(self.finished.get_nowait())
            # A failed write (a full disk) raises WriteError and ends the run; the file keeps
            # its whole lines only, so a rerun resumes.
            self.results.write(batch)
            await asyncio.to_thread(self.results.sync)
            for result in batch:
                self.on_result(result)
                self.finished.task_done()

    @staticmethod
    async def _until_done(tasks: set[asyncio.Future[Any]], committer: asyncio.Task[None]) -> None:
        """Wait for `tasks`; a write error (the committer never ends otherwise) or a bug in any
        of them is raised at once."""
        while tasks:
            done, tasks = await asyncio.wait(
                tasks | {committer}, return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                task.result()
            tasks -= {committer}

    def _write_left(self) -> None:
        """Episodes that finished but were not written yet (the run stopped meanwhile)."""
        left = []
        while not self.finished.empty():
            left.append(self.finished.get_nowait())
        if left:
            with contextlib.suppress(WriteError):  # a full disk: the first error is the one told
                self.results.write(left)
                self.results.sync()
