"""A persistent response cache: the same request to the same model is answered once.

Keys hash the model name, the messages (images by the SHA-256 of their file plus their
transform, so an edited image file misses) and the decoding settings. Values are the
completion text and usage. SQLite in WAL mode, so shards running side by side on one machine
can share one cache file. Reruns, resumed runs and re-scorings become free.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from proactivebench.data.images import ImageStore
from proactivebench.errors import ProactiveBenchError
from proactivebench.models.base import ChatRequest, Completion, Model, ModelWrapper
from proactivebench.prompting import map_image_parts
from proactivebench.scenarios import View

#: Bumped when what a backend sends for the same request changes, so that answers to the old
#: bytes are not reused: 2 = untransformed views sent as their files' own bytes.
KEY_VERSION = 2


def request_key(model_name: str, request: ChatRequest, images: ImageStore | None) -> str:
    """A stable hash of everything that determines the model's answer."""

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
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _require(images: ImageStore | None) -> ImageStore:
    if images is None:
        raise ProactiveBenchError("a request with images needs an image store (bind_images)")
    return images


class ResponseCache:
    """Key → (text, usage) in one SQLite file.

    Each answer is committed at once (about 25 µs without the fsync, see below), so that shards
    sharing the file never wait on each other's open transactions.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._setup()
        except (OSError, sqlite3.Error) as exc:
            raise ProactiveBenchError(
                f"cannot open the response cache {self.path}: {exc} (choose another --cache, "
                "or --no-cache)"
            ) from None

    def _setup(self) -> None:
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

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, usage FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        usage = json.loads(row[1]) if row[1] else None
        return Completion(text=row[0], usage=usage, cached=True)

    def put(self, key: str, completion: Completion) -> None:
        usage = json.dumps(completion.usage) if completion.usage else None
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                (key, completion.text, usage, time.time()),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedModel(ModelWrapper):
    """Wraps a backend: cached requests are answered from the cache, the rest go through.
    Closing it closes the backend's connections, not the cache: that belongs to whoever opened
    it."""

    def __init__(self, inner: Model, cache: ResponseCache) -> None:
        super().__init__(inner)
        self.cache = cache
        self.hits = 0

    @property
    def stats(self) -> dict[str, int]:
        return {**getattr(self.inner, "stats", {}), "cache_hits": self.hits}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        # Keys hash the image files: read in a worker thread, off the event loop.
        keys = await asyncio.to_thread(
            lambda: [request_key(self.inner.cache_name, r, self.images) for r in requests]
        )
        answers: list[Completion | None] = [self.cache.get(k) for k in keys]
        missing = [i for i, a in enumerate(answers) if a is None]
        self.hits += len(requests) - len(missing)
        if missing:
            fresh = await self.inner.generate([requests[i] for i in missing])
            for i, completion in zip(missing, fresh, strict=True):
                self.cache.put(keys[i], completion)
                answers[i] = completion
        return [a for a in answers if a is not None]
