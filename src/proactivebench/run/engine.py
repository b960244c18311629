"""The run engine: what every job does around the items it plays.

A job (`evaluate.aevaluate` plays episodes, `rejudge.rejudge` judges result lines again) says
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

from proactivebench.core.errors import RunMismatchError
from proactivebench.core.provenance import now, software
from proactivebench.data.checked import CheckedImages
from proactivebench.models.base import Decoding, Model
from proactivebench.models.cache import CachedModel, ResponseCache, Sharing
from proactivebench.models.limited import LimitedModel, RequestLimit
from proactivebench.run.judge import Judge
from proactivebench.run.play_episode import Result
from proactivebench.run.rundir import RUN_CONFIG, ResultsFile, RunLock, provenance_of
from proactivebench.run.scheduler import PlayOne, Scheduler
from proactivebench.run.selection import DataChecks
from proactivebench.run.settings import RunOptions

Item = TypeVar("Item")


#: The provenance keys of the digest of a `python:` model's and judge's code
#: (`Model.code_digest`), recorded by each invocation that asked them.
CODE = "code"
JUDGE_CODE = "judge_code"
#: The keys every entry of an invocation that asked a model (a judge) has: the entry whose
#: `CODE` (`JUDGE_CODE`) is that model's (judge's) code as last run.
_ASKED = {CODE: "endpoints", JUDGE_CODE: "judge_endpoints"}


#: A provenance entry's key for what selected the invocation's episodes: the selection
#: settings as given (`EvalSettings.selected_by`) and its `shard` ([I, N]); run.json's
#: `selection` records only the ids chosen, from which no command plays them again.
SELECTED_BY = "selected_by"


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
        selected_by: dict[str, Any] | None = None,
    ) -> None:
        self.entry: dict[str, Any] = {"command": command} if command else {}
        self.entry.update(started=now(), ended=None)
        if selected_by is not None:  # the options that chose its episodes (`SELECTED_BY`)
            self.entry[SELECTED_BY] = selected_by
        if model is not None and decoding is not None:
            self.entry["endpoints"] = model.endpoints
            self.entry["decoding_sent"] = model.sent_decoding(decoding)
            self.entry.update(model.sent_extras())
            if model.code_digest is not None:
                self.entry[CODE] = model.code_digest
        if judge is not None:
            self.entry["judge_endpoints"] = judge.model.endpoints
            self.entry["judge_decoding_sent"] = judge.model.sent_decoding(judge.decoding)
            self.entry.update({f"judge_{k}": v for k, v in judge.model.sent_extras().items()})
            if judge.model.code_digest is not None:
                self.entry[JUDGE_CODE] = judge.model.code_digest
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


def recorded_code(config: dict[str, Any], key: str) -> str | None:
    """The code digest (`key`: `CODE` or `JUDGE_CODE`) recorded by the latest invocation of
    `config` (a run.json) that asked that model: None when it recorded none (another backend,
    or a run written before digests were recorded: nothing to compare)."""
    asked = [e for e in provenance_of(config) if _ASKED[key] in e]
    code = asked[-1].get(key) if asked else None
    return code if isinstance(code, str) else None


def code_stamp(model: Model, judge: Judge | None) -> dict[str, str]:
    """The digests of the user's code behind `model` and `judge`, for what must change when
    that code does (`FinishedRun`'s stamp); empty for other backends."""
    codes = {CODE: model.code_digest, JUDGE_CODE: judge.model.code_digest if judge else None}
    return {k: v for k, v in codes.items() if v is not None}


def refuse_edited_code(
    out: Path, config: dict[str, Any], model: Model, judge: Judge | None
) -> None:
    """Refuse to resume the run of `config` (`out`'s run.json) when the code of its `python:`
    model or judge changed since it last played: its lines would mix two versions' answers
    under one name."""
    for key, asked in ((CODE, model), (JUDGE_CODE, judge.model if judge else None)):
        now = asked.code_digest if asked is not None else None
        before = recorded_code(config, key)
        if asked is None or now is None or before is None or now == before:
            continue
        raise RunMismatchError(
            f"{out} holds a run of {asked.name} as its code was before ({out / RUN_CONFIG}: "
            f"provenance {key} {before} → {now}): the code was edited since, and resuming "
            "would mix the answers of both versions. Use another --out for the edited code, "
            "or restore the code to resume"
        )


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
                concurrency=self.options.concurrency,
                on_result=on_result,
            )
            await scheduler.run(items)
        finally:
            for model in models:
                await model.aclose()
            if self.cache is not None:
                self.cache.flush()  # the answers of the last moments, kept for a rerun
