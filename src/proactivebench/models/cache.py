"""A persistent response cache: the same request to the same model is answered once.

Keys hash who answers (`Model.cache_name`: the name, and what else tells two models of one
name apart: an `openai` model's endpoints, a `python:` function's code, an `hf:` checkpoint's
weights), the messages (images by the SHA-256 of their file plus their transform, so an
edited image file misses), the decoding settings, and whatever else the backend's answer
depends on (`Model.answer_inputs`: a `python:` function's observation, a sampling `hf:`
model's seed, an `openai:` body's extras and reasoning settings). A backend whose answer is
not a function of these is not `cacheable` (the baselines, replay, a person): the cache never
answers for it. Values are the completion text and usage.
SQLite in WAL mode, so shards running side by side on one machine can share one cache file.
Reruns, resumed runs and re-scorings become free.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proactivebench.benchmark.prompting import image_views, map_image_parts
from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import ForeignFileError, ProactiveBenchError, WriteError
from proactivebench.core.paths import not_our_database, refuse_linked_database
from proactivebench.core.texts import dumps
from proactivebench.data.images import ImageStore
from proactivebench.models.base import ChatRequest, Completion, Model, ModelWrapper

log = logging.getLogger(__name__)

#: Bumped when what a backend sends for the same request changes, so that answers to the old
#: bytes are not reused: 2 = untransformed views sent as their files' own bytes.
KEY_VERSION = 2


def request_key(
    model_name: str,
    request: ChatRequest,
    images: ImageStore | None,
    inputs: dict[str, Any] | None = None,
) -> str:
    """A stable hash of everything that determines the model's answer: who answers, the
    messages, the decoding, and `inputs`, what else the backend's answer depends on
    (`Model.answer_inputs`)."""

    def canonical(view: View) -> dict[str, Any]:
        return {
            "type": "image",
            "sha256": _require(images).file_hash(view),
            "crop": list(view.crop) if view.crop else None,
            "resize_short_edge": view.resize_short_edge,
        }

    messages = map_image_parts(request.messages, canonical)
    payload = {
        "version": KEY_VERSION,
        "model": model_name,
        "messages": messages,
        "decoding": request.decoding.as_dict(),
    }
    if inputs:  # absent for backends that read the messages only: their keys stay as they were
        payload["inputs"] = inputs
    blob = dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _require(images: ImageStore | None) -> ImageStore:
    if images is None:
        raise ProactiveBenchError("a request with images needs an image store (bind_images)")
    return images


#: Seconds a read or write waits for another process's transaction on the cache file (shards
#: sharing it, a tool browsing it) before it gives up on that answer.
BUSY_TIMEOUT_S = 30.0

#: Answers written together: at most this many, or those of this many seconds (`ResponseCache`).
WRITE_GROUP = 64
WRITE_AFTER_S = 0.25

#: The table of a response cache: a database without it is another program's, left alone.
_TABLES = frozenset({"responses"})

#: SQLite's primary result codes for a file that is not (or no longer) a sound database.
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}


def _is_damage(exc: sqlite3.Error) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _DAMAGED


class ResponseCache:
    """Key → (text, usage) in one SQLite file.

    Answers are written in groups (`flush`: up to `WRITE_GROUP` answers, or those of the last
    `WRITE_AFTER_S`, in one short transaction; one commit per answer cost more client CPU than
    a fast server's whole turn), and no transaction stays open between groups, so that shards
    sharing the file never wait on each other for long. A run flushes when it ends (Ctrl-C
    included) and `close` does; a process killed outright loses at most the last group, which
    a rerun asks again.

    A cache only saves model calls, so none of its faults may fail an episode:

    - a damaged database (`PRAGMA quick_check` at open, or a read or write that finds it
      later) is set aside as `<name>.damaged-<time>` with one warning naming both, and a fresh
      cache takes its place: the run goes on, the rerun too;
    - a file busy with another process's transaction is waited for (`busy_timeout`, 30 s);
    - a read or write that still fails (busy past that, disk full, read-only) is a miss, or an
      answer not kept: the model is asked, and each kind of failure is told once.

    A path that cannot be opened at all (a directory, no permission), or that holds a file of
    something else (not SQLite, another program's database: `paths.not_our_database`, left as
    it is), is the user's choice of `--cache` to correct: that ends the run before it starts.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._told: set[str] = set()
        self._db: sqlite3.Connection | None = None
        #: Answers not written yet (key -> row), and when the oldest of them came.
        self._pending: dict[str, tuple[str, str | None, float]] = {}
        self._pending_since = 0.0
        #: The file the connection opened (device, inode): set aside only if still that one.
        self._file: tuple[int, int] | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open(check=True)
        except (OSError, sqlite3.Error, ForeignFileError) as exc:
            why = exc.problem if isinstance(exc, ForeignFileError) else _why_not(self.path, exc)
            raise ProactiveBenchError(
                f"cannot open the response cache {self.path}: {why} "
                "(choose another --cache, or --no-cache)"
            ) from None

    def _open(self, check: bool) -> None:
        """Connect, check the file (unless it was just created fresh), and set it up; a damaged
        file is set aside and replaced by a fresh one."""
        self._connect()
        assert self._db is not None
        try:
            foreign = not_our_database(self.path, self._db, _TABLES.__contains__)
            if foreign is not None:
                self._db.close()
                self._db = None
                raise ForeignFileError(self.path, foreign)
            problem = self._quick_check() if check else None
            if problem is None:
                self._setup()
                return
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc):
                raise
            problem = str(exc)
        self._set_aside(problem)
        self._connect()
        self._setup()

    def _connect(self) -> None:
        refuse_linked_database(self.path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=self.busy_timeout)
        stat = self.path.stat()
        self._file = (stat.st_dev, stat.st_ino)

    def _quick_check(self) -> str | None:
        """What is wrong with the file, or None. Reads every page once (about a second per
        gigabyte): the price of finding damage once, not in every episode."""
        assert self._db is not None
        rows = [row[0] for row in self._db.execute("PRAGMA quick_check(3)").fetchall()]
        return None if rows == ["ok"] else "; ".join(map(str, rows))

    def _setup(self) -> None:
        assert self._db is not None
        self._db.execute("PRAGMA journal_mode=WAL")
        # Commits go to the write-ahead log without an fsync each (one per answer would stall
        # the event loop); the file stays consistent, and at worst a power cut loses the last
        # answers, which a rerun asks again.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses "
            "(key TEXT PRIMARY KEY, text TEXT NOT NULL, usage TEXT, created REAL)"
        )
        self._db.commit()

    def _set_aside(self, problem: str) -> None:
        """Rename the damaged file (and its write-ahead log) out of the way, unless another
        process sharing it did so already, and say so once."""
        if self._db is not None:
            self._db.close()
            self._db = None
        aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        while aside.exists():
            aside = aside.with_name(aside.name + "+")
        try:
            stat = self.path.stat()
            if (stat.st_dev, stat.st_ino) == self._file:
                for suffix in ("-wal", "-shm", ""):  # the database itself last
                    source = Path(f"{self.path}{suffix}")
                    if source.exists():
                        source.rename(f"{aside}{suffix}")
        except FileNotFoundError:
            pass  # set aside by another process
        log.warning(
            "the response cache %s is damaged (%s): set aside as %s; answers are asked again "
            "and kept in a fresh cache",
            self.path,
            problem,
            aside,
        )

    def _fault(self, action: str, exc: sqlite3.Error) -> None:
        """A read or write that failed: a damaged file is replaced; anything else is told once
        (per kind) and the answer is asked of the model, or not kept."""
        if _is_damage(exc):
            try:
                self._set_aside(str(exc))
                self._open(check=False)
            except (OSError, sqlite3.Error, WriteError) as again:  # a link, another file
                self._db = None  # no cache for the rest of this run
                log.warning(
                    "the response cache %s cannot be reopened (%s): the run goes on without it",
                    self.path,
                    again,
                )
            return
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.rollback()
        told = f"{action}: {exc}"
        if told not in self._told:
            self._told.add(told)
            log.warning(
                "the response cache %s could not be %s (%s, shown once): the model is asked "
                "instead%s",
                self.path,
                action,
                exc,
                "" if action == "read" else "; its answers are not kept",
            )

    def get(self, key: str) -> Completion | None:
        with self._lock:
            pending = self._pending.get(key)
            row = pending[:2] if pending is not None else None
            if row is None and self._db is not None:
                try:
                    row = self._db.execute(
                        "SELECT text, usage FROM responses WHERE key = ?", (key,)
                    ).fetchone()
                except sqlite3.Error as exc:
                    self._fault("read", exc)
                    return None
        if row is None:
            return None
        completion = _completion(*row)
        if completion is None:  # asked again: its answer replaces the entry
            with self._lock:
                told = "unusable" not in self._told
                self._told.add("unusable")
            if told:
                log.warning(
                    "the response cache %s holds entries it cannot use (an answer that is not "
                    "text, or token counts that are not JSON counts; shown once): those "
                    "requests are asked again, and their answers replace them",
                    self.path,
                )
        return completion

    def put(self, key: str, completion: Completion) -> None:
        usage = dumps(completion.usage) if completion.usage else None
        now = time.time()
        with self._lock:
            if self._db is None:
                return
            if not self._pending:
                self._pending_since = now
            self._pending[key] = (completion.text, usage, now)
            if len(self._pending) >= WRITE_GROUP or now - self._pending_since >= WRITE_AFTER_S:
                self._write_pending()

    def flush(self) -> None:
        """Write the answers not written yet."""
        with self._lock:
            self._write_pending()

    def _write_pending(self) -> None:
        rows = [(key, *row) for key, row in self._pending.items()]
        self._pending.clear()
        if not rows or self._db is None:
            return
        try:
            with self._db:  # one transaction: committed, or rolled back on an error
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows)
        except sqlite3.Error as exc:
            self._fault("written", exc)

    def close(self) -> None:
        with self._lock:
            self._write_pending()
            if self._db is not None:
                self._db.close()
                self._db = None


def _completion(text: Any, usage: Any) -> Completion | None:
    """A cached answer from its row, or None for a row we did not write as it is (the text
    a blob or NULL, the usage not a JSON object of counts): a cache only saves model calls,
    so such an entry is a miss, never an episode's error."""
    if not isinstance(text, str) or not (usage is None or isinstance(usage, str)):
        return None
    counts = None
    if usage:
        try:
            counts = json.loads(usage)
        except ValueError:
            return None
        well_formed = isinstance(counts, dict) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in counts.values()
        )
        if not well_formed:
            return None
    return Completion(text=text, usage=counts, cached=True)


def _why_not(path: Path, exc: OSError | sqlite3.Error) -> str:
    """Why the cache at `path` cannot be opened, in words: a folder in its place, a file in
    the place of one of its folders (SQLite and `mkdir` say neither plainly)."""
    if path.is_dir():
        return "it is a folder"
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        return f"{blocking} is a file, not a folder"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


@dataclass
class RunAsks:
    """What one run of a `Sharing` asked: requests sent to the model, and answers it took from
    a request another run of the same process asked (from the cache or while in flight)."""

    asked: int = 0
    shared: int = 0


class Sharing:
    """The requests of several runs of one process (one `engine.RunEngine`) that share a cache.

    An identical request asked by two runs at the same moment (the first turn of the same
    episode in two experiments of the paper) would miss the cache twice: the second waits for
    the first one's answer instead (`CachedModel`), so that it is asked once. And it counts,
    per run, the requests sent and the answers taken from another run's request, the requests
    the sharing saved (`proactivebench paper` says how many). The keys it remembers are this
    process's: a rerun starts afresh, its answers from earlier invocations are plain hits.
    """

    def __init__(self) -> None:
        #: Who first asked each request in this process.
        self._asked_by: dict[str, str] = {}
        #: Requests in flight: the answer the others wait for.
        self._asking: dict[str, asyncio.Future[Completion]] = {}
        #: The requests each run has had, asked or taken: a run alone asks each once (its own
        #: repeats are hits of its own cache), so only its first use of another's counts.
        self._had: set[tuple[str, str]] = set()
        self.runs: dict[str, RunAsks] = {}

    def of(self, run: str) -> RunAsks:
        return self.runs.setdefault(run, RunAsks())

    def asking(self, key: str) -> asyncio.Future[Completion] | None:
        """The answer to `key` being asked on this event loop, if it is."""
        future = self._asking.get(key)
        if future is None or future.get_loop() is not asyncio.get_running_loop():
            return None
        return future

    def start(self, key: str, run: str) -> asyncio.Future[Completion] | None:
        """Say that `run` asks `key` now (None: another of its requests in this batch does)."""
        self.of(run).asked += 1
        self._asked_by.setdefault(key, run)
        self._had.add((run, key))
        if self.asking(key) is not None:
            return None
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._asking[key] = future
        return future

    def end(self, key: str, future: asyncio.Future[Completion], answer: Completion | None) -> None:
        """The answer to `key` (None: the request failed, and whoever waits asks it itself)."""
        if self._asking.get(key) is future:
            del self._asking[key]
        if future.done():
            return
        if answer is None:
            future.cancel()
        else:
            future.set_result(answer)

    def took(self, key: str, run: str) -> None:
        """`run` was answered from the cache: counted as shared if another run asked it here
        and `run` had not had it yet (alone, it would have asked it once)."""
        if (run, key) in self._had:
            return
        self._had.add((run, key))
        if self._asked_by.get(key, run) != run:
            self.of(run).shared += 1

    @property
    def asked(self) -> int:
        return sum(r.asked for r in self.runs.values())

    @property
    def shared(self) -> int:
        return sum(r.shared for r in self.runs.values())


class CachedModel(ModelWrapper):
    """Wraps a backend: cached requests are answered from the cache, the rest go through.
    Closing it closes the backend's connections, not the cache: that belongs to whoever opened
    it. Only a `cacheable` backend may be wrapped: a cached answer must be the one the
    backend would have given. With a `sharing` (several runs of one engine), a request
    another run is asking right now is waited for, not asked again; `run` names this run in it.
    """

    def __init__(
        self,
        inner: Model,
        cache: ResponseCache,
        sharing: Sharing | None = None,
        run: str = "",
    ) -> None:
        if not inner.cacheable:
            raise ProactiveBenchError(f"{inner.name} is not cacheable: its answers are not kept")
        super().__init__(inner)
        self.cache = cache
        self.hits = 0
        self.sharing = sharing
        self.run = run

    @property
    def stats(self) -> dict[str, int]:
        return {**getattr(self.inner, "stats", {}), "cache_hits": self.hits}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        def keys_of() -> list[str]:
            name = self.inner.cache_name
            return [
                request_key(name, r, self.images, self.inner.answer_inputs(r)) for r in requests
            ]

        # Keys hash the image files: a file not hashed yet is read in a worker thread, off the
        # event loop; hashes already known are a lookup, made inline (a thread costs more).
        views = [v for r in requests for v in image_views(r.messages)]
        if not views or (self.images is not None and self.images.hashed(views)):
            keys = keys_of()
        else:
            keys = await asyncio.to_thread(keys_of)
        answers: list[Completion | None] = [self.cache.get(k) for k in keys]
        missing = [i for i, a in enumerate(answers) if a is None]
        self.hits += len(requests) - len(missing)
        if self.sharing is not None:
            for key, answer in zip(keys, answers, strict=True):
                if answer is not None:
                    self.sharing.took(key, self.run)
            await self._share(requests, keys, answers, missing, self.sharing)
        elif missing:
            fresh = await self.inner.generate([requests[i] for i in missing])
            for i, completion in zip(missing, fresh, strict=True):
                self.cache.put(keys[i], completion)
                answers[i] = completion
        return [a for a in answers if a is not None]

    async def _share(
        self,
        requests: Sequence[ChatRequest],
        keys: list[str],
        answers: list[Completion | None],
        missing: list[int],
        sharing: Sharing,
    ) -> None:
        """Fill `answers[missing]`: those another run is asking are waited for, the rest
        asked (and told to `sharing`, for the others to wait on)."""
        waits = {i: sharing.asking(keys[i]) for i in missing}
        ask = [i for i in missing if waits[i] is None]
        mine = {i: sharing.start(keys[i], self.run) for i in ask}
        try:
            fresh = await self.inner.generate([requests[i] for i in ask]) if ask else []
        except BaseException:
            for i, future in mine.items():
                if future is not None:
                    sharing.end(keys[i], future, None)
            raise
        for i, completion in zip(ask, fresh, strict=True):
            self.cache.put(keys[i], completion)
            answers[i] = completion
            future = mine[i]
            if future is not None:
                sharing.end(keys[i], future, completion)
        for i, waited in waits.items():
            if waited is None:
                continue
            try:
                answer = await asyncio.shield(waited)
            except asyncio.CancelledError:
                if not waited.cancelled():
                    raise  # this run is cancelled, not the one it waited for
                answer = (await self.inner.generate([requests[i]]))[0]  # that one failed
                self.cache.put(keys[i], answer)
                sharing.of(self.run).asked += 1
                answers[i] = answer
                continue
            self.hits += 1
            sharing.took(keys[i], self.run)
            answers[i] = dataclasses.replace(answer, cached=True, latency_s=0.0)
