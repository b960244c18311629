"""Any OpenAI-compatible chat-completions server: vLLM, SGLang, Ollama, LM Studio, llama.cpp,
hosted APIs. Spec: `openai:MODEL[@BASE_URL]` (default base URL: the OpenAI API).

Throughput comes from the runner's episodes in flight (`max_batch = 1`): each turn is one HTTP
request, as many at once as episodes in flight, or at most `concurrency` when that is set (to
spare a shared server). Faults that a retry can fix — timeouts, refused or dropped
connections, 429, 5xx, malformed or empty answers — are retried with exponential backoff and
full jitter (honouring `Retry-After`), on another replica when there are several; faults that a
retry cannot fix (other 4xx) fail at once. A request that fails for good raises `ModelError`,
which the runner records as an error on that episode, never as a wrong answer.

The API key is read from an environment variable and only ever sent as a bearer header: it is
not part of `name` (recorded in results), of any error message, or of any log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import logging
import os
import random
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from proactivebench.errors import ModelSpecError
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.errors import ModelError
from proactivebench.scenarios import View

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
IMAGE_FORMATS = {"JPEG": "JPEG", "JPG": "JPEG", "PNG": "PNG"}
BALANCING = ("least-in-flight", "round-robin")
#: Views whose encoding takes less than this (on average) are encoded on the event loop.
INLINE_ENCODE_S = 0.002
#: 4xx statuses worth a retry: request timeout, too early, rate limited.
RETRYABLE_4XX = frozenset({408, 425, 429})


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


#: Used when `load_model` gets no retry options; tests may swap it for a faster one.
DEFAULT_RETRY = RetryPolicy()


def parse_retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, or `Retry-After` as seconds or
    as an HTTP date; None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _timed(function: Callable[..., str], *args: Any) -> tuple[str, float]:
    start = time.perf_counter()
    return function(*args), time.perf_counter() - start


def openai_messages(
    messages: Iterable[dict[str, Any]], data_url: Callable[[View], str]
) -> list[dict[str, Any]]:
    """Our chat messages in the wire shape: image parts become `image_url` parts with the data
    URL `data_url` gives for their view; every other part and field passes through."""
    converted = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            message = {**message, "content": [_wire_part(p, data_url) for p in content]}
        converted.append(message)
    return converted


def _wire_part(part: Any, data_url: Callable[[View], str]) -> Any:
    if isinstance(part, dict) and part.get("type") == "image" and "view" in part:
        return {"type": "image_url", "image_url": {"url": data_url(part["view"])}}
    return part


def _image_views(messages: Iterable[dict[str, Any]]) -> list[View]:
    views: list[View] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "image" and "view" in part:
                    views.append(part["view"])
    return views


def normalize_base_url(url: str) -> str:
    """`http://host/v1/` and `http://host/v1/chat/completions` both mean `http://host/v1`."""
    url = url.strip().rstrip("/")
    suffix = "/chat/completions"
    if url.endswith(suffix):
        url = url[: -len(suffix)]
    if not url.startswith(("http://", "https://")):
        raise ModelSpecError(f"endpoint {url!r} is not an http:// or https:// URL")
    return url


def parse_spec(rest: str) -> tuple[str, str | None]:
    """`MODEL@URL` -> (MODEL, URL); `MODEL` -> (MODEL, None). Model names may contain '@'."""
    model, sep, url = rest.rpartition("@")
    if sep and url.startswith(("http://", "https://")) and model:
        return model, url
    return rest, None


@dataclass
class _Replica:
    """One base URL and what balancing needs to know about it."""

    url: str
    in_flight: int = 0
    #: Parsed once: httpx would parse the string again for every request.
    endpoint: httpx.URL = field(init=False)
    sent: int = 0
    #: Consecutive transient failures; a replica that keeps failing is avoided for a while.
    failures: int = 0
    down_until: float = 0.0

    def __post_init__(self) -> None:
        self.endpoint = httpx.URL(f"{self.url}/chat/completions")

    def failed(self) -> None:
        self.failures += 1
        self.down_until = time.monotonic() + min(30.0, 0.25 * 2 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.failures = 0
        self.down_until = 0.0


class _Replicas:
    """Spreads requests over base URLs; a retry goes to another replica when there is one."""

    def __init__(self, urls: Sequence[str], strategy: str) -> None:
        self.replicas = [_Replica(u) for u in urls]
        self.strategy = strategy
        self._cursor = 0

    def pick(self, avoid: _Replica | None = None) -> _Replica:
        candidates = [r for r in self.replicas if r is not avoid] or self.replicas
        now = time.monotonic()
        healthy = [r for r in candidates if r.down_until <= now] or candidates
        if self.strategy == "round-robin":
            n = len(self.replicas)
            for step in range(n):
                replica = self.replicas[(self._cursor + step) % n]
                if replica in healthy:
                    self._cursor = (self._cursor + step + 1) % n
                    return replica
        return min(healthy, key=lambda r: (r.in_flight, r.sent))


@dataclass
class _Failure:
    """Why one attempt failed, and whether another attempt may succeed."""

    reason: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None


@dataclass
class _Answer:
    completion: Completion


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One certificate store for every client: loading it costs ~25 ms each time."""
    return httpx.create_ssl_context()


class _Clients:
    """Many small `httpx.AsyncClient`s instead of one with a big pool, added as needed.

    httpcore 1.0's pool scans all its connections (several times) for every request it
    assigns, so its CPU cost per request grows with the pool size (encode/httpcore#1035). At
    64 requests in flight against a 50 ms server, one pool of 64 connections cost ~8.6 ms of
    client CPU per request (~110 requests/s on two cores); sixteen pools of four ~0.7 ms
    (~1000 requests/s). Each request goes to the client with the fewest requests in flight;
    a new client is made when they are all full, so the pools follow the load that the
    runner's episodes in flight create.
    """

    POOL_SIZE = 4

    def __init__(self, headers: dict[str, str], timeout: float) -> None:
        self.headers = headers
        self.timeout = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        self.clients: list[httpx.AsyncClient] = []
        self.busy: list[int] = []

    def _least_busy(self) -> int:
        if self.clients:
            index = min(range(len(self.clients)), key=self.busy.__getitem__)
            if self.busy[index] < self.POOL_SIZE:
                return index
        size = self.POOL_SIZE
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self.clients.append(
            httpx.AsyncClient(
                headers=self.headers, timeout=self.timeout, limits=limits, verify=_tls_context()
            )
        )
        self.busy.append(0)
        return len(self.clients) - 1

    async def post(self, url: httpx.URL, content: bytes) -> httpx.Response:
        index = self._least_busy()
        self.busy[index] += 1
        try:
            return await self.clients[index].post(
                url, content=content, headers={"content-type": "application/json"}
            )
        finally:
            self.busy[index] -= 1

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


class OpenAICompatible(Model):
    """A chat model behind one or more OpenAI-compatible `/chat/completions` endpoints."""

    needs_images = True
    max_batch = 1

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        endpoints: str | Sequence[str] | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        image_format: str = "JPEG",
        jpeg_quality: int = 90,
        timeout: float = 120.0,
        concurrency: int | None = None,
        max_retries: int | None = None,
        max_delay: float | None = None,
        retry: RetryPolicy | None = None,
        balance: str = "least-in-flight",
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        seed: int = 0,
    ) -> None:
        if not model:
            raise ModelSpecError("openai model spec needs a model name: openai:MODEL[@URL]")
        self.model = model
        self.urls = _endpoint_list(base_url, endpoints)
        self.api_key_env = api_key_env
        self.image_format = _image_format(image_format)
        self.jpeg_quality = jpeg_quality
        self.name = _model_name(model, self.image_format, jpeg_quality)
        self.timeout = _positive("timeout", timeout)
        # None: as many requests at once as the runner has episodes in flight.
        self.concurrency = (
            None if concurrency is None else int(_positive("concurrency", concurrency))
        )
        self.retry = _retry_policy(retry or DEFAULT_RETRY, max_retries, max_delay)
        if balance not in BALANCING:
            raise ModelSpecError(f"unknown balancing {balance!r}; choose from {BALANCING}")
        self.extra_body = dict(extra_body or {})
        self._headers = dict(headers or {})
        # Read once and kept private: never part of `name`, `repr`, messages or logs.
        self._api_key = os.environ.get(api_key_env) or None
        self._replicas = _Replicas(self.urls, balance)
        self._rng = random.Random(seed)
        #: Moving average of the seconds one view takes to decode and encode.
        self._encode_s = 0.0
        self._client: _Clients | None = None
        self._limit: asyncio.Semaphore | contextlib.nullcontext[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Counters a progress bar can read: completed requests, attempts, retries, give-ups.
        self.stats = {"requests": 0, "attempts": 0, "retries": 0, "failures": 0}

    @classmethod
    def from_spec(cls, rest: str, **options: Any) -> OpenAICompatible:
        """Build from the part of `openai:MODEL[@URL]` after the colon."""
        model, url = parse_spec(rest)
        return cls(model, url, **options)

    def __repr__(self) -> str:
        return f"OpenAICompatible(model={self.model!r}, endpoints={self.urls!r})"

    @property
    def requests_by_endpoint(self) -> dict[str, int]:
        """How many attempts each replica received."""
        return {r.url: r.sent for r in self._replicas.replicas}

    # ----- the protocol -----------------------------------------------------------------------

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if len(requests) == 1:  # the runner's case (max_batch = 1): no task per request
            return [await self._complete(requests[0])]
        return list(await asyncio.gather(*(self._complete(r) for r in requests)))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        self._client = None
        self._limit = None
        self._loop = None

    # ----- one request --------------------------------------------------------------------------

    async def _complete(self, request: ChatRequest) -> Completion:
        messages = await self._wire_messages(request.messages)
        payload = json.dumps(self._body(messages, request.decoding)).encode("utf-8")
        avoid: _Replica | None = None
        last = _Failure("no attempt made", retryable=False)
        replica = self._replicas.pick()
        for attempt in range(self.retry.max_retries + 1):
            if attempt:
                self.stats["retries"] += 1
                delay = self.retry.delay(attempt - 1, last.retry_after, self._rng)
                log.info("%s: retry %d in %.2fs after %s", self.name, attempt, delay, last.reason)
                await asyncio.sleep(delay)
                replica = self._replicas.pick(avoid)
            outcome = await self._attempt(replica, payload)
            if isinstance(outcome, _Answer):
                self.stats["requests"] += 1
                return outcome.completion
            last = outcome
            if not last.retryable:
                self.stats["failures"] += 1
                raise ModelError(
                    f"{self.name}: {replica.url} answered {last.reason} (not retried)",
                    endpoint=replica.url,
                    status=last.status,
                )
            avoid = replica
        self.stats["failures"] += 1
        attempts = self.retry.max_retries + 1
        raise ModelError(
            f"{self.name}: gave up after {attempts} attempts; last at {replica.url}: {last.reason}",
            endpoint=replica.url,
            status=last.status,
            retryable=True,
        )

    def _body(self, messages: list[dict[str, Any]], decoding: Decoding) -> dict[str, Any]:
        """Backend extras first, so the run's decoding settings (recorded in run.json) win."""
        return {"model": self.model, "messages": messages, **self.extra_body, **decoding.as_dict()}

    async def _attempt(self, replica: _Replica, payload: bytes) -> _Answer | _Failure:
        client, limit = self._session()
        async with limit:
            self.stats["attempts"] += 1
            replica.in_flight += 1
            replica.sent += 1
            start = time.perf_counter()
            try:
                async with asyncio.timeout(self.timeout):
                    response = await client.post(replica.endpoint, payload)
            except (TimeoutError, httpx.TimeoutException):
                outcome: _Answer | _Failure = _Failure(
                    f"no answer within {self.timeout:g}s (timeout)", retryable=True
                )
            except httpx.TransportError as exc:
                outcome = _Failure(self._scrub(_transport_reason(exc)), retryable=True)
            else:
                outcome = self._read(response, time.perf_counter() - start)
            finally:
                replica.in_flight -= 1
        if isinstance(outcome, _Answer):
            replica.succeeded()
        elif outcome.retryable:
            replica.failed()
        return outcome

    def _read(self, response: httpx.Response, latency: float) -> _Answer | _Failure:
        """A completion from a 200 with a usable body; otherwise why not."""
        status = response.status_code
        if status >= 400:
            return self._http_failure(response)
        if status != 200:
            return _Failure(f"unexpected HTTP {status}", retryable=True, status=status)
        try:
            data = response.json()
        except ValueError:
            return _Failure("malformed JSON in the response", retryable=True, status=status)
        text = _content(data)
        if isinstance(text, _Failure):
            text.status = status
            return text
        return _Answer(Completion(text, usage=_usage(data), latency_s=latency))

    def _http_failure(self, response: httpx.Response) -> _Failure:
        status = response.status_code
        reason = f"HTTP {status} {response.reason_phrase}".rstrip()
        detail = _error_detail(response)
        if detail:
            reason += f": {detail}"
        if status in (401, 403):
            reason += f" (check the API key in ${self.api_key_env})"
        retryable = status in RETRYABLE_4XX or status >= 500
        return _Failure(
            self._scrub(reason),
            retryable=retryable,
            status=status,
            retry_after=parse_retry_after(response.headers) if retryable else None,
        )

    def _scrub(self, text: str) -> str:
        """Servers may echo what they got; never let the key reach a message."""
        return text.replace(self._api_key, "***") if self._api_key else text

    # ----- images and connections -------------------------------------------------------------

    async def _wire_messages(self, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        urls = {view: await self._data_url(view) for view in _image_views(messages)}
        return openai_messages(messages, urls.__getitem__)

    async def _data_url(self, view: View) -> str:
        if self.images is None:
            raise ModelError(f"{self.name}: no image store bound (call bind_images first)")
        encode = functools.partial(
            _timed, self.images.data_url, view, self.image_format, self.jpeg_quality
        )
        # Large images are decoded and encoded in a worker thread (Pillow releases the GIL),
        # so that the event loop keeps serving the other requests meanwhile; small ones inline,
        # since handing them to a thread costs more CPU than the work itself.
        if self._encode_s < INLINE_ENCODE_S:
            url, seconds = encode()
        else:
            url, seconds = await asyncio.to_thread(encode)
        self._encode_s = 0.8 * self._encode_s + 0.2 * seconds
        return url

    def _session(self) -> tuple[_Clients, asyncio.Semaphore | contextlib.nullcontext[None]]:
        """The clients and request limit of the running event loop (a run is one
        `asyncio.run`; asyncio objects cannot move from one loop to the next)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._limit is None or self._loop is not loop:
            headers = dict(self._headers)
            if self._api_key:
                headers["authorization"] = f"Bearer {self._api_key}"
            self._client = _Clients(headers, self.timeout)
            self._limit = (
                contextlib.nullcontext()
                if self.concurrency is None
                else asyncio.Semaphore(self.concurrency)
            )
            self._loop = loop
        return self._client, self._limit


# ----- response reading ---------------------------------------------------------------------


def _content(data: Any) -> str | _Failure:
    """The first choice's text; a string or a list of text parts (some servers send those)."""
    if not isinstance(data, dict):
        return _Failure("response is not a JSON object", retryable=True)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return _Failure("response has no choices", retryable=True)
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return "".join(t for t in texts if isinstance(t, str))
    return _Failure("response has no message content", retryable=True)


def _usage(data: dict[str, Any]) -> dict[str, int] | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    counts = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    return counts or None


def _error_detail(response: httpx.Response, limit: int = 300) -> str:
    """The server's own words: `error.message` of an OpenAI-style body, else the text."""
    try:
        data = response.json()
    except ValueError:
        return " ".join(response.text.split())[:limit]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message")
        if isinstance(error, str):
            return " ".join(error.split())[:limit]
    return ""


def _transport_reason(exc: httpx.TransportError) -> str:
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect (server down or unreachable?): {detail}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection dropped: {detail}"
    if isinstance(exc, httpx.NetworkError):
        return f"network error: {detail}"
    return f"{type(exc).__name__}: {detail}"


# ----- option checks ------------------------------------------------------------------------


def _model_name(model: str, image_format: str, jpeg_quality: int) -> str:
    """`openai:MODEL`, plus the image encoding when it is not the default JPEG at 90.

    The name keys run directories and the response cache, so it changes with what the model
    sees (the encoded pixels) but not with where it is served: a run moved to another server
    or spread over more replicas still resumes.
    """
    if image_format == "JPEG" and jpeg_quality == 90:
        return f"openai:{model}"
    encoding = "png" if image_format == "PNG" else f"jpeg{jpeg_quality}"
    return f"openai:{model}[{encoding}]"


def _endpoint_list(base_url: str | None, endpoints: str | Sequence[str] | None) -> list[str]:
    """The spec's URL (if any) first, then `endpoints`; duplicates dropped, order kept."""
    urls: list[str] = [base_url] if base_url else []
    if isinstance(endpoints, str):
        urls.extend(u for u in endpoints.split(",") if u.strip())
    elif endpoints:
        urls.extend(endpoints)
    normalized = list(dict.fromkeys(normalize_base_url(u) for u in urls))
    return normalized or [DEFAULT_BASE_URL]


def _image_format(name: str) -> str:
    fmt = IMAGE_FORMATS.get(name.upper())
    if fmt is None:
        raise ModelSpecError(f"unknown image format {name!r}; choose from jpeg, png")
    return fmt


def _positive(label: str, value: float) -> float:
    if not value or value <= 0:
        raise ModelSpecError(f"{label} must be positive, got {value!r}")
    return float(value)


def _retry_policy(
    base: RetryPolicy, max_retries: int | None, max_delay: float | None
) -> RetryPolicy:
    if max_retries is not None and max_retries < 0:
        raise ModelSpecError(f"max_retries must be >= 0, got {max_retries}")
    return RetryPolicy(
        max_retries=base.max_retries if max_retries is None else int(max_retries),
        base_delay=base.base_delay,
        max_delay=base.max_delay if max_delay is None else _positive("max_delay", max_delay),
    )
