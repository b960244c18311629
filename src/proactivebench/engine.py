"""The run engine: what every job does around the items it plays.

A job (`runner.aevaluate` plays episodes, `rejudge.rejudge` judges result lines again) says
which items it plays and how one is played; the engine does the rest, the same way for each:

- the run directory's lock (`claim`), held from the first read to the last write;
- the models as a run asks them (`model`, `judge`): behind the response cache when their
  answers can be kept, within the limit on requests in flight;
- one provenance entry per invocation (`Provenance`), for `run.json`;
- preflight, the scheduler with its episodes in flight and group commit, and the closing of
  connections and the flush of the cache however the run ends (`play`).

One engine may drive several runs at once in one process (`asyncio.gather` of several
`aevaluate(..., engine=engine)`): they share its cache and its limit on requests in flight
(`RunOptions.requests_in_flight`), while each keeps `RunOptions.concurrency` episodes in
flight.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from proactivebench.data.checked import CheckedImages
from proactivebench.judge import Judge
from proactivebench.models.base import Decoding, Model
from proactivebench.models.cache import CachedModel, ResponseCache, Sharing
from proactivebench.models.limited import LimitedModel, RequestLimit
from proactivebench.play import Result
from proactivebench.provenance import now, software
from proactivebench.rundir import ResultsFile, RunLock
from proactivebench.scheduler import PlayOne, Scheduler
from proactivebench.selection import DataChecks
from proactivebench.settings import RunOptions

Item = TypeVar("Item")


class Provenance:
    """One invocation's entry in `run.json`'s provenance: when it started and ended, the
    endpoints and decoding it sent, and the software (package version, git commit: asked once,
    when first written, since it may run git). Never part of a run's identity."""

    def __init__(
        self,
        *,
        command: str | None = None,
        model: Model | None = None,
        decoding: Decoding | None = None,
        judge: Judge | None = None,
    ) -> None:
        self.entry: dict[str, Any] = {"command": command} if command else {}
        self.entry.update(started=now(), ended=None)
        if model is not None and decoding is not None:
            self.entry["endpoints"] = model.endpoints
            self.entry["decoding_sent"] = model.sent_decoding(decoding)
            self.entry.update(model.sent_extras())
        if judge is not None:
            self.entry["judge_endpoints"] = judge.model.endpoints
            self.entry["judge_decoding_sent"] = judge.model.sent_decoding(judge.decoding)
            self.entry.update({f"judge_{k}": v for k, v in judge.model.sent_extras().items()})
        self._software = False

    def stamped(self) -> dict[str, Any]:
        """The entry to write now (with the software, found the first time)."""
        if not self._software:
            self.entry.update(software())
            self._software = True
        return self.entry

    def end(self, **counts: Any) -> None:
        """Mark the end of the invocation (and what it wrote)."""
        self.entry["ended"] = now()
        self.entry.update(counts)


class RunEngine:
    """Runs jobs as `options` say, with the response cache `cache` (it stays open: what the
    caller opened, the caller closes)."""

    def __init__(
        self,
        options: RunOptions | None = None,
        cache: ResponseCache | None = None,
        checks: DataChecks | None = None,
    ):
        self.options = options or RunOptions()
        self.cache = cache
        #: What the checks before its runs found, shared by them; the image headers that
        #: passed are remembered beside the response cache, when there is one.
        self.checks = checks or DataChecks(CheckedImages.beside(cache.path) if cache else None)
        self.requests = RequestLimit(self.options.requests_in_flight)
        #: The requests of this engine's runs: one asked by two runs at once is asked once,
        #: and each run's requests sent and answers taken from another run's are counted.
        self.sharing = Sharing()

    @staticmethod
    @contextmanager
    def claim(out: Path) -> Iterator[None]:
        """Hold the run directory `out` against every other writer (`rundir.RunLock`)."""
        with RunLock(out):
            yield

    def model(self, model: Model, run: str = "") -> Model:
        """`model` as a run asks it: within the limit on requests in flight, and behind the
        response cache when its answers are a function of the request (`Model.cacheable`:
        not the baselines', replay's or a person's), its requests counted in `sharing` under
        `run` (the run directory)."""
        if self.requests.limit is not None:
            model = LimitedModel(model, self.requests)
        if self.cache is not None and model.cacheable:
            model = CachedModel(model, self.cache, self.sharing, run)
        return model

    def judge(self, judge: Judge, run: str = "") -> Judge:
        """`judge` with its model as a run asks it (`model`)."""
        return judge.with_model(self.model(judge.model, run))

    async def play(
        self,
        items: Iterable[Item],
        play_one: PlayOne[Item],
        results: ResultsFile,
        models: Sequence[Model],
        *,
        on_ready: Callable[[], None] = lambda: None,
        on_result: Callable[[Result], None] = lambda result: None,
    ) -> None:
        """Check that every model (the first batches the requests) can be reached, call
        `on_ready`, then play `items` with `options.concurrency` in flight, each result
        appended to `results` as it ends. However it ends, the connections this event loop
        opened are released (the models stay usable) and the cache keeps what it was told."""
        try:
            for model in models:
                await model.preflight()
            # Only now: a run that cannot start (server unreachable, no API key) shows no
            # progress, as if it had begun, before its error.
            on_ready()
            scheduler = Scheduler(
                models[0],
                play_one,
                results,
                episodes_in_flight=self.options.episodes_in_flight,
                on_result=on_result,
            )
            await scheduler.run(items)
        finally:
            for model in models:
                await model.aclose()
            if self.cache is not None:
                self.cache.flush()  # the answers of the last moments, kept for a rerun
