"""Any OpenAI-compatible chat-completions server: vLLM, SGLang, Ollama, LM Studio, llama.cpp,
hosted APIs. Spec: `openai:MODEL[@BASE_URL]` (default base URL: the OpenAI API).

Throughput comes from the runner's episodes in flight (`max_batch = 1`): each turn is one HTTP
request, as many at once as episodes in flight. Each `generate` call makes one attempt per
request; a failed one raises `ModelError` saying whether a retry can fix it (`retryable`:
timeouts, refused or dropped connections, 429, 5xx, malformed or empty answers; not other 4xx,
a body longer than `max_response_bytes` or a redirect to another server) and what the server's
`Retry-After` asked for. A body is read a chunk at a time, decompressed as it comes, and no
further than its limit; a redirect is followed only within the server it was sent to, so that
the request's images go nowhere else. `load_model` wraps the backend in
`models.resilient.Resilient`, which retries, bounds the requests in flight (`concurrency`) and
ends a run whose server is down; this module keeps the wire format, the HTTP session, the
preflight and the replica balancing, which sends a request that failed on one replica to
another when there are several. A request that fails for good is recorded by the runner as an
error on that episode, never as a wrong answer.

The API key is read from an environment variable and only ever sent as a bearer header: it is
not part of `name` (recorded in results), of any error message, or of any log line.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import os
import re
import sys
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from proactivebench.errors import (
    CredentialsMissingError,
    ModelError,
    ModelSpecError,
    ServerUnreachableError,
)
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.options import Annotated, Range
from proactivebench.prompting import image_views, map_image_parts
from proactivebench.scenarios import View
from proactivebench.texts import decode, dumps, loads

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
IMAGE_FORMATS = {"JPEG": "JPEG", "JPG": "JPEG", "PNG": "PNG"}
BALANCING = ("least-in-flight", "round-robin")
CACHE_SCOPES = ("endpoints", "model")
#: OpenAI's reasoning models by name (the last part of the name, e.g. `openai/o4-mini`).
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
#: Tokens a reasoning model may spend thinking, on top of the answer's limit.
DEFAULT_REASONING_BUDGET = 8192
#: How servers say that a parameter or value is not accepted by this model.
_UNSUPPORTED = re.compile(r"unsupported (parameter|value)|not supported with this model", re.I)
#: 4xx statuses worth a retry: request timeout, too early, rate limited.
RETRYABLE_4XX = frozenset({408, 425, 429})
#: The most bytes of one response body read (after decompression) unless `max_response_bytes`
#: says: far above any answer, a reasoning model's included, far below a gzip bomb's.
DEFAULT_MAX_RESPONSE_BYTES = 16 << 20
#: Bytes read at a time: a body is never read further than its limit plus one of these.
READ_CHUNK = 64 << 10
#: Redirects to the same server (scheme, host and port) followed one after another.
MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
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


def openai_messages(
    messages: Iterable[dict[str, Any]], data_url: Callable[[View], str]
) -> list[dict[str, Any]]:
    """Our chat messages in the wire shape: image parts become `image_url` parts with the data
    URL `data_url` gives for their view; every other part and field passes through."""
    return map_image_parts(
        messages, lambda view: {"type": "image_url", "image_url": {"url": data_url(view)}}
    )


#: Stands for a data URL in the JSON of a request until the URL is spliced in.
_URL_SLOT = "\x00image-url\x00"
_URL_SLOT_JSON = dumps(_URL_SLOT)


def encode_body(body: dict[str, Any], urls: Sequence[str]) -> bytes | None:
    """`body` as JSON bytes, its `_URL_SLOT` strings replaced by `urls` in order.

    A data URL is 100-200 KB of base64, which needs no escaping; splicing it in costs a copy,
    where `json.dumps` would scan every character again for every request (0.4-0.8 ms of a
    turn). None when the slots cannot be found one for one (a text containing the slot).
    """
    pieces = dumps(body).split(_URL_SLOT_JSON)
    if len(pieces) != len(urls) + 1:
        return None
    joined = [pieces[0]]
    for url, piece in zip(urls, pieces[1:], strict=True):
        joined += ['"', url, '"', piece]
    return "".join(joined).encode("ascii")


def _plain_http_elsewhere(url: str) -> bool:
    """Whether `url` is plain http:// to a host other than this machine."""
    parts = urllib.parse.urlsplit(url)
    local = parts.hostname in ("localhost", "::1") or (parts.hostname or "").startswith("127.")
    return parts.scheme == "http" and not local


def is_reasoning_model(model: str) -> bool:
    """Whether `model` is one of OpenAI's reasoning models by its name (o1, o3, o4, gpt-5)."""
    name = model.rsplit("/", 1)[-1].lower()
    return any(name == p or name.startswith((f"{p}-", f"{p}.")) for p in REASONING_PREFIXES)


def normalize_base_url(url: str) -> str:
    """`http://host/v1/` and `http://host/v1/chat/completions` both mean `http://host/v1`."""
    url = url.strip().rstrip("/")
    suffix = "/chat/completions"
    if url.endswith(suffix):
        url = url[: -len(suffix)]
    if not url.startswith(("http://", "https://")):
        raise ModelSpecError(f"endpoint {url!r} is not an http:// or https:// URL")
    try:  # every later look at the URL (its origin, proxy, credentials) takes it apart again
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # a port that is no number, or out of range, raises only when read
    except ValueError as exc:
        raise ModelSpecError(f"endpoint {url!r} is not a valid URL: {exc}") from None
    if not parts.hostname:
        raise ModelSpecError(f"endpoint {url!r} names no host")
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
    endpoint: str = field(init=False)
    sent: int = 0
    #: Consecutive transient failures; a replica that keeps failing is avoided for a while.
    failures: int = 0
    down_until: float = 0.0

    def __post_init__(self) -> None:
        self.endpoint = f"{self.url}/chat/completions"

    def failed(self) -> None:
        self.failures += 1
        self.down_until = time.monotonic() + min(30.0, 0.25 * 2 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.failures = 0
        self.down_until = 0.0


class _Replicas:
    """Spreads requests over base URLs; a retry goes to another replica when there is one.

    The retry wrapper sends a failed request again as the same `ChatRequest` object, so the
    replica it failed at is remembered by the request's identity (weakly: a request that is
    given up on is forgotten with it), and its next attempt avoids that replica. A replica
    that keeps failing is set aside for a while for every request (`_Replica.failed`).
    """

    def __init__(self, urls: Sequence[str], strategy: str) -> None:
        self.replicas = [_Replica(u) for u in urls]
        self.strategy = strategy
        self._cursor = 0
        #: id(request) -> (the request, weakly; the replica where it failed last).
        self._failed_at: dict[int, tuple[weakref.ref[ChatRequest], _Replica]] = {}

    def pick(self, request: ChatRequest | None = None) -> _Replica:
        """A replica for `request`: not the one where it failed last, when there are others."""
        avoid = self._avoid(request) if len(self.replicas) > 1 else None
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

    def failed(self, replica: _Replica, request: ChatRequest) -> None:
        """`request` failed at `replica` in a way a retry may fix."""
        replica.failed()
        if len(self.replicas) > 1:
            key = id(request)
            forget = functools.partial(self._forget, key)
            self._failed_at[key] = (weakref.ref(request, forget), replica)

    def succeeded(self, replica: _Replica, request: ChatRequest) -> None:
        replica.succeeded()
        self._failed_at.pop(id(request), None)

    def _avoid(self, request: ChatRequest | None) -> _Replica | None:
        entry = self._failed_at.get(id(request)) if request is not None else None
        if entry is None or entry[0]() is not request:
            return None  # never failed, or another request that now has the same id
        return entry[1]

    def _forget(self, key: int, ref: weakref.ref[ChatRequest]) -> None:
        entry = self._failed_at.get(key)
        if entry is not None and entry[0] is ref:
            del self._failed_at[key]


@dataclass
class _Failure:
    """Why one attempt failed, and whether another attempt may succeed."""

    reason: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None


def _import_aiohttp() -> None:
    """Import aiohttp (a quarter of a second: it loads TLS certificates) off the main thread.

    A backend starts this when it is made, so that the import overlaps with loading the data
    and checking its images; the first request then finds the module loaded, or waits on
    Python's import lock for the rest of it.
    """
    import aiohttp  # noqa: F401


def _prefetch_aiohttp() -> None:
    if "aiohttp" not in sys.modules:
        threading.Thread(target=_import_aiohttp, name="import-aiohttp", daemon=True).start()


@dataclass
class _Response:
    """What a response said, read while its connection was held: its body whole, or its first
    bytes when it was longer than the backend's limit (`complete` False)."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes
    charset: str | None = None
    complete: bool = True
    #: Where a redirect to another server pointed (not followed).
    location: str | None = None

    @property
    def text(self) -> str:
        return decode(self.body, self.charset)


def origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port: who receives what is sent to `url`."""
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _redirect_target(url: str, response: Any) -> str | None:
    """Where a redirect points (absolute), or None for any other response."""
    location = response.headers.get("location")
    if response.status not in REDIRECTS or location is None:
        return None
    return urllib.parse.urljoin(url, location)


async def _read_body(response: Any, limit: int) -> tuple[bytes, bool]:
    """The body, decoded from its `Content-Encoding` a chunk at a time, and whether it was
    read whole: reading stops once it is longer than `limit`, so that a body of any size (a
    gzip bomb: 1 MB that inflates to 1 GB) costs at most `limit` plus one chunk."""
    body = bytearray()
    async for chunk in response.content.iter_chunked(READ_CHUNK):
        body += chunk
        if len(body) > limit:
            return bytes(body), False
    return bytes(body), True


class _Session:
    """One `aiohttp` session (one connection pool) for the requests of one event loop.

    aiohttp, not httpx: at 64 requests in flight against a 50 ms server with 100 KB bodies,
    httpx spent 1.4 ms of client CPU per request and aiohttp 0.5 ms (see benchmarks/README.md).
    The pool has no limit of its own: the runner's episodes in flight (or the retry wrapper's
    `concurrency`) bound the connections. Connecting gets its own short timeout; the whole
    attempt is bounded by the backend's `timeout`.
    """

    def __init__(self, headers: dict[str, str], connect_timeout: float) -> None:
        import aiohttp

        self.aiohttp = aiohttp
        self.connect_timeout = connect_timeout
        # TLS: aiohttp's default context, i.e. the system's certificates (SSL_CERT_FILE and
        # SSL_CERT_DIR choose others).
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            headers={**headers, "content-type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout),
        )
        self._proxies: dict[str, str | None] = {}

    def proxy(self, url: str) -> str | None:
        """The proxy that HTTP(S)_PROXY and NO_PROXY choose for `url`, looked up once per
        endpoint (aiohttp's `trust_env` looks it up again for every request: 0.6 ms)."""
        if url not in self._proxies:
            import urllib.request  # slow to import, and only needed here

            parts = urllib.parse.urlsplit(url)
            proxy = urllib.request.getproxies().get(parts.scheme)
            bypass = proxy and urllib.request.proxy_bypass(parts.hostname or "")
            self._proxies[url] = None if bypass else proxy
        return self._proxies[url]

    async def post(self, url: str, content: bytes, limit: int) -> _Response:
        """The response, its body read up to `limit` bytes; `_TransportError` when no
        response came.

        Redirects to the same server are followed (the request sent again as it was); one
        to another server is not, since the request's images would go there: the redirect
        is the response, with the `location` it pointed to.
        """
        aiohttp = self.aiohttp
        try:
            for _ in range(MAX_REDIRECTS + 1):
                async with self.session.post(
                    url, data=content, proxy=self.proxy(url), allow_redirects=False
                ) as response:
                    target = _redirect_target(url, response)
                    if target is not None and origin(target) == origin(url):
                        url = target
                        continue
                    body, complete = await _read_body(response, limit)
                    return _Response(
                        response.status,
                        response.reason or "",
                        response.headers,
                        body,
                        charset=response.charset,
                        complete=complete,
                        location=target,
                    )
            raise _TransportError(f"more than {MAX_REDIRECTS} redirects in a row")
        except aiohttp.ConnectionTimeoutError:
            raise _TransportError(
                f"cannot connect within {self.connect_timeout:g}s (server down or unreachable?)"
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise _TransportError(f"cannot connect (server down or unreachable?): {exc}") from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            raise _TransportError(f"connection dropped: {_dropped(exc)}") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise _TransportError(f"{type(exc).__name__}: {exc}") from None

    async def probe(self, url: str, timeout: float) -> str | None:
        """Why `url` cannot be reached within `timeout`, or None if it answered at all."""
        aiohttp = self.aiohttp
        try:
            async with asyncio.timeout(timeout):
                # Any answer will do: a redirect is not followed, the body not read.
                async with self.session.get(url, proxy=self.proxy(url), allow_redirects=False):
                    pass
        except TimeoutError:
            return f"no answer within {timeout:g}s"
        except (aiohttp.ClientError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    async def aclose(self) -> None:
        await self.session.close()


def _dropped(exc: BaseException) -> str:
    """aiohttp's words for a connection that ended early: a body cut short wraps the repr of
    the parser's error (`<ContentLengthError: 400, message='...'>`, whose 400 is no HTTP
    status), so that error's own message is taken."""
    message = getattr(exc.__cause__, "message", None)
    if isinstance(message, str) and message:
        return message
    return str(exc) or type(exc).__name__


class _TransportError(Exception):
    """No HTTP response: the connection failed, dropped, or was refused."""


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
        jpeg_quality: Annotated[int, Range(lowest=0, highest=100)] = 90,
        timeout: Annotated[float, Range(above=0)] = 120.0,
        connect_timeout: Annotated[float, Range(above=0)] = 10.0,
        balance: str = "least-in-flight",
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        reasoning: bool | None = None,
        reasoning_budget: Annotated[int, Range(lowest=1)] = DEFAULT_REASONING_BUDGET,
        reasoning_effort: str | None = None,
        cache_scope: str = "endpoints",
        max_response_bytes: Annotated[int, Range(lowest=1)] = DEFAULT_MAX_RESPONSE_BYTES,
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
        self.connect_timeout = _positive("connect_timeout", connect_timeout)
        #: A longer body (after decompression) fails its request, and is not read further.
        self.max_response_bytes = int(_positive("max_response_bytes", max_response_bytes))
        if balance not in BALANCING:
            raise ModelSpecError(f"unknown balancing {balance!r}; choose from {BALANCING}")
        self.extra_body = _extra_body(extra_body)
        #: A reasoning model (OpenAI's o-series, GPT-5) takes `max_completion_tokens` and only
        #: its default temperature, and spends hidden tokens before it answers.
        self.reasoning = is_reasoning_model(model) if reasoning is None else bool(reasoning)
        self.reasoning_budget = int(_positive("reasoning_budget", reasoning_budget))
        self.reasoning_effort = reasoning_effort
        if cache_scope not in CACHE_SCOPES:
            raise ModelSpecError(f"unknown cache_scope {cache_scope!r}; choose from {CACHE_SCOPES}")
        self.cache_scope = cache_scope
        self._headers = _headers(headers)
        # Read once and kept private: never part of `name`, `repr`, messages or logs.
        self._api_key = _api_key(api_key_env)
        if self._api_key:
            for url in self.urls:
                if _plain_http_elsewhere(url):
                    log.warning(
                        "the API key in $%s goes to %s over plain http://", api_key_env, url
                    )
        self._replicas = _Replicas(self.urls, balance)
        #: Moving average of the seconds one view takes to decode and encode.
        self._client: _Session | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        _prefetch_aiohttp()

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
        """One attempt per request; a failed one raises `ModelError` (see the module)."""
        if len(requests) == 1:  # the runner's case (max_batch = 1): no task per request
            return [await self._attempt(requests[0])]
        return list(await asyncio.gather(*(self._attempt(r) for r in requests)))

    async def preflight(self) -> None:
        """GET `/models` of every endpoint within the connect timeout, before the run.

        Any HTTP answer (a 404 too: not every server lists models) shows a server is there. When
        none answers, the run ends at once; a replica that does not answer is set aside for a
        while and the run goes on with the others.
        """
        self._check_key()
        client = self._session()
        replicas = self._replicas.replicas
        failures = [await client.probe(f"{r.url}/models", self.connect_timeout) for r in replicas]
        down = [(r, why) for r, why in zip(replicas, failures, strict=True) if why is not None]
        if len(down) == len(replicas):
            where = "; ".join(f"{r.url}: {why}" for r, why in down)
            raise ServerUnreachableError(self._scrub(f"server unreachable: {where}"))
        for replica, why in down:
            replica.failed()
            log.warning("%s", self._scrub(f"replica {replica.url} is unreachable ({why})"))

    def _check_key(self) -> None:
        """The hosted API without a key fails every request: say so once, before the run."""
        host = urllib.parse.urlsplit(DEFAULT_BASE_URL).hostname
        hosted = [u for u in self.urls if urllib.parse.urlsplit(u).hostname == host]
        keyed = self._api_key or any(k.lower() == "authorization" for k in self._headers)
        if hosted and not keyed:
            given, example = "no server URL given", f"{self.model}@http://127.0.0.1:8000/v1"
            name, at, address = self.model.rpartition("@")
            if at and name and address:  # `m@host:port`: an address without its scheme?
                given += (
                    f": {address!r} after '@' is no http:// or https:// URL, so it was taken "
                    f"as part of the model name {self.model!r}"
                )
                scheme = "://" in address  # another scheme (ftp://): no guess at the address
                example = f"{name}@http://{'127.0.0.1:8000/v1' if scheme else address}"
            raise CredentialsMissingError(
                f"{self.name} goes to the hosted API at {hosted[0]} ({given}) and "
                f"${self.api_key_env} is not set: set it, or name your server, e.g. "
                f"openai:{example}"
            )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        self._client = None
        self._loop = None

    # ----- one request --------------------------------------------------------------------------

    @property
    def cache_name(self) -> str:
        """The name and the set of endpoints: two servers that serve models of one name do
        not share answers, unless `cache_scope="model"` says they are the same model."""
        if self.cache_scope == "model":
            return self.name
        return f"{self.name}@{'|'.join(sorted(self.urls))}"

    def answer_inputs(self, request: ChatRequest) -> dict[str, Any]:
        """What the body sends beyond the messages and the run's decoding: `extra_body` and a
        reasoning model's budget and effort, so that `reasoning_effort=high` is not answered
        with what `low` said. Neither set (most runs): nothing, and keys are as before."""
        sent: dict[str, Any] = {}
        if self.extra_body:
            sent["extra_body"] = self.extra_body
        if self.reasoning:
            sent.update(self.request_settings())
        return sent

    def sent_extras(self) -> dict[str, Any]:
        """`extra_body`, when there is one (each invocation's provenance entry)."""
        return {"extra_body": self.extra_body} if self.extra_body else {}

    def request_settings(self) -> dict[str, Any]:
        """How a reasoning model's requests are shaped (recorded in run.json)."""
        if not self.reasoning:
            return {}
        return {
            "reasoning": True,
            "reasoning_budget": self.reasoning_budget,
            "reasoning_effort": self.reasoning_effort,
        }

    @property
    def endpoints(self) -> list[str]:
        """The endpoints' URLs without user or password."""
        return [_without_credentials(url) for url in self.urls]

    def _body(self, messages: list[dict[str, Any]], decoding: Decoding) -> dict[str, Any]:
        """Backend extras first, so the run's decoding settings (recorded in run.json) win."""
        settings = self.sent_decoding(decoding)
        return {"model": self.model, "messages": messages, **self.extra_body, **settings}

    def sent_decoding(self, decoding: Decoding) -> dict[str, Any]:
        """A reasoning model gets `max_completion_tokens`: the answer's token limit plus a
        budget for the hidden reasoning (`reasoning_budget`), and no temperature or top-p,
        which those models refuse.
        """
        settings = decoding.as_dict()
        if self.reasoning:
            answer_tokens = settings.pop("max_tokens")
            settings.pop("temperature", None)
            settings.pop("top_p", None)
            settings["max_completion_tokens"] = answer_tokens + self.reasoning_budget
            if self.reasoning_effort:
                settings["reasoning_effort"] = self.reasoning_effort
        return settings

    async def _attempt(self, request: ChatRequest) -> Completion:
        """One POST of `request` to a replica: its completion, or `ModelError` saying why not
        and whether another attempt may succeed."""
        payload = await self._payload(request)
        client = self._session()
        replica = self._replicas.pick(request)
        replica.in_flight += 1
        replica.sent += 1
        start = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout):
                response = await client.post(replica.endpoint, payload, self.max_response_bytes)
        except TimeoutError:
            outcome: Completion | _Failure = _Failure(
                f"no answer within {self.timeout:g}s (timeout)", retryable=True
            )
        except _TransportError as exc:
            outcome = _Failure(self._scrub(str(exc)), retryable=True)
        else:
            outcome = self._read(response, time.perf_counter() - start)
        finally:
            replica.in_flight -= 1
        if isinstance(outcome, Completion):
            self._replicas.succeeded(replica, request)
            return outcome
        if outcome.retryable:  # a refusal says nothing about the replica's health
            self._replicas.failed(replica, request)
        raise self._error(replica, outcome)

    def _error(self, replica: _Replica, failure: _Failure) -> ModelError:
        """A failed attempt as the retry wrapper reads it; a fault no retry can fix says so
        in its message, which is then the episode's error as it stands."""
        if failure.retryable:
            message = f"{self.name}: {replica.url}: {failure.reason}"
        else:
            message = f"{self.name}: {replica.url} answered {failure.reason} (not retried)"
        return ModelError(
            message,
            endpoint=replica.url,
            status=failure.status,
            retryable=failure.retryable,
            retry_after=failure.retry_after,
            reason=failure.reason,
        )

    def _read(self, response: _Response, latency: float) -> Completion | _Failure:
        """A completion from a 200 with a usable body; otherwise why not."""
        status = response.status
        if response.location is not None:
            return _Failure(
                f"HTTP {status}, a redirect to another server ({response.location}); not "
                "followed, since the request's images would go there: name that URL in the "
                "model spec if it is the server meant",
                retryable=False,
                status=status,
            )
        if status >= 400:
            return self._http_failure(response)
        if not response.complete:
            return _Failure(
                f"a body longer than max_response_bytes={self.max_response_bytes} (reading "
                f"stopped after {len(response.body)} bytes; raise the limit with --model-option "
                "max_response_bytes=N if such answers are meant)",
                retryable=False,
                status=status,
            )
        if status != 200:
            return _Failure(f"unexpected HTTP {status}", retryable=True, status=status)
        try:
            data = loads(response.text)
        except ValueError:
            return _Failure("malformed JSON in the response", retryable=True, status=status)
        text = _content(data)
        if isinstance(text, _Failure):
            text.status = status
            return text
        # A server may echo what it got: the key never reaches results or the cache.
        return Completion(self._scrub(text), usage=_usage(data), latency_s=latency)

    def _http_failure(self, response: _Response) -> _Failure:
        status = response.status
        reason = f"HTTP {status} {response.reason}".rstrip()
        detail = _error_detail(response)
        if detail:
            reason += f": {detail}"
        if status in (401, 403):
            reason += f" (check the API key in ${self.api_key_env})"
        if status == 400 and _UNSUPPORTED.search(detail):
            switch = "false" if self.reasoning else "true"
            reason += (
                f" (set --model-option reasoning={switch}: a reasoning model takes "
                "max_completion_tokens and no temperature; other models the opposite)"
            )
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

    async def _payload(self, request: ChatRequest) -> bytes:
        """The request body as sent: JSON with every image part as a data URL."""
        views = image_views(request.messages)
        urls = await self._data_urls(views)
        slotted = openai_messages(request.messages, lambda view: _URL_SLOT)
        payload = encode_body(self._body(slotted, request.decoding), urls)
        if payload is None:
            by_view = dict(zip(views, urls, strict=True))
            wire = openai_messages(request.messages, by_view.__getitem__)
            payload = dumps(self._body(wire, request.decoding)).encode("utf-8")
        return payload

    async def _data_urls(self, views: list[View]) -> list[str]:
        if not views:
            return []
        images = self.images
        if images is None:
            raise ModelError(f"{self.name}: no image store bound (call bind_images first)")
        fmt, quality = self.image_format, self.jpeg_quality
        # History, repeated views and files read for the cache key a moment ago: a lookup or
        # a base64 pass of bytes in memory.
        ready = [images.ready_data_url(view, fmt, quality) for view in views]
        missing = [view for view, url in zip(views, ready, strict=True) if url is None]
        if not missing:
            return ready  # type: ignore[return-value]
        # File reads, and for a transformed view a decode and an encode, in one worker-thread
        # hop for the request: the event loop keeps serving the other requests (and their
        # connect timeouts) however large or slow the files are.
        made = iter(
            await asyncio.to_thread(lambda: [images.data_url(v, fmt, quality) for v in missing])
        )
        return [url if url is not None else next(made) for url in ready]

    def _session(self) -> _Session:
        """The session of the running event loop (a run is one `asyncio.run`; asyncio objects
        cannot move from one loop to the next)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            headers = dict(self._headers)
            if self._api_key:
                headers["authorization"] = f"Bearer {self._api_key}"
            self._client = _Session(headers, min(self.timeout, self.connect_timeout))
            self._loop = loop
        return self._client


# ----- response reading ---------------------------------------------------------------------


def _content(data: Any) -> str | _Failure:
    """The first choice's text; a string or a list of text parts (some servers send those).
    A refusal (`content` null, `refusal` text: OpenAI's hosted models) is the model's answer as
    any other text it answers with: asked again, the same request gets the same refusal."""
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
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if content is None and isinstance(refusal, str) and refusal:
        return refusal
    if content is None and isinstance(first, dict) and first.get("finish_reason") == "length":
        # What the same request will get again (vLLM's reasoning parser cut off mid-thought).
        return _Failure(
            "HTTP 200 with no text: the generation reached its token limit (finish_reason "
            "'length') before any answer; a reasoning model may spend it all thinking: raise "
            "--max-tokens (--judge-max-tokens for a judge)",
            retryable=False,
        )
    return _Failure("response has no message content", retryable=True)


def _usage(data: dict[str, Any]) -> dict[str, int] | None:
    """The token counts, with the reasoning tokens of `completion_tokens_details` when the
    server reports them (they are part of `completion_tokens`)."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    counts = {k: v for k, v in usage.items() if _is_count(v)}
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    if _is_count(reasoning):
        counts["reasoning_tokens"] = reasoning
    return counts or None


def _is_count(value: Any) -> bool:
    """A number of tokens: an integer >= 0 (not a flag, a fraction or a text), since the
    report sums them."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _error_detail(response: _Response, limit: int = 300) -> str:
    """The server's own words: `error.message` of an OpenAI-style body, else the text."""
    text = response.text
    try:
        data = loads(text)
    except ValueError:
        return " ".join(text.split())[:limit]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message")
        if isinstance(error, str):
            return " ".join(error.split())[:limit]
    return ""


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


def _without_credentials(url: str) -> str:
    """`url` with any `user:password@` taken out."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _endpoint_list(base_url: str | None, endpoints: str | Sequence[str] | None) -> list[str]:
    """The spec's URL (if any) first, then `endpoints`; duplicates dropped, order kept."""
    urls: list[str] = [base_url] if base_url else []
    if isinstance(endpoints, str):
        urls.extend(u for u in endpoints.split(",") if u.strip())
    elif endpoints:
        urls.extend(endpoints)
    normalized = list(dict.fromkeys(normalize_base_url(u) for u in urls))
    return normalized or [DEFAULT_BASE_URL]


#: Keys of the body that `extra_body` may not set, and why: what the request is.
_OWN_KEYS = {
    "model": "the spec names the model",
    "messages": "the episode makes the messages",
    "stream": "the answer is read as one JSON body",
}


def _extra_body(extra_body: dict[str, Any] | None) -> dict[str, Any]:
    """`extra_body`, merged over each request's body: refused where it would send the
    request to another model than run.json names, replace the episode's messages, or make
    the answer a stream of events."""
    extra = dict(extra_body or {})
    for key, why in _OWN_KEYS.items():
        if key in extra:
            raise ModelSpecError(f"openai option extra_body may not set {key!r}: {why}")
    return extra


def _api_key(variable: str) -> str | None:
    """The key in `$variable`, without the whitespace around it (a key file saved with
    Windows line ends leaves a carriage return in `$(cat key.txt)`), or None when unset; one
    with a control character inside is refused, since no header can carry it (the key
    itself is never shown)."""
    key = (os.environ.get(variable) or "").strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise ModelSpecError(
            f"${variable} holds a control character (a line break?) inside the key, which "
            "cannot be sent in a header"
        )
    return key or None


#: An HTTP header name (RFC 9110 `token`).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: Headers that frame the body, which the transport writes.
_FRAMING = {"content-length", "transfer-encoding"}


def _headers(headers: dict[str, str] | None) -> dict[str, str]:
    """`headers`, refused where it could not go onto a request as given: a name that is no
    HTTP token, a control character in a value (a line break would start another header),
    or the body's framing, which is the request's own."""
    checked = dict(headers or {})
    for name, value in checked.items():
        if not _HEADER_NAME.fullmatch(name):
            raise ModelSpecError(f"openai option headers: {name!r} is no header name")
        if name.lower() in _FRAMING:
            raise ModelSpecError(f"openai option headers: header {name!r} is the request's own")
        if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value):
            raise ModelSpecError(
                f"openai option headers: header {name!r} has a control character in its value"
            )
    return checked


def _image_format(name: str) -> str:
    fmt = IMAGE_FORMATS.get(name.upper())
    if fmt is None:
        raise ModelSpecError(f"unknown image format {name!r}; choose from jpeg, png")
    return fmt


def _positive(label: str, value: float) -> float:
    if not value or value <= 0:
        raise ModelSpecError(f"{label} must be positive, got {value!r}")
    return float(value)
