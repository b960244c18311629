"""A fake OpenAI-compatible chat-completions server for offline tests (yours, ours) and benchmarks.

Test a client of an OpenAI-compatible API (an agent, a judge, an adapter, `openai:` runs)
without a model: `with FakeOpenAI(respond=lambda body: "A") as server:` serves on
`server.url` (`http://127.0.0.1:PORT/v1`: `/chat/completions` and `/models`) until the block
ends, then `server.chat_requests` holds what the client sent (headers, JSON body, the fault
it got). `respond` scripts the answer from the request body; `answers` maps a request's
`fingerprint(messages)` to its answer; neither given, the answer is one of the options the
last user turn shows, picked by a hash of the model name and the messages, and a judge's
request (the protocol's judge system prompt, `run.judge.judge_messages`) gets a verdict in the
format the judge parses: a 0 or 1 per correct answer, by a hash of the request, so that an
offline open-ended run scores some episodes and not others. `ServerConfig` lists every knob
(latency, faults, `Retry-After`, an API key to require, raw responses).

Answers are a deterministic function of the request (model, message texts, image bytes), so a
run against it is reproducible whatever the concurrency, the retries or the replica that served
a turn. Faults are injected by a schedule (the first requests) or a seeded probability: HTTP
500, 429 with `Retry-After`, 400, a hang longer than the client's timeout, a connection closed
before or in the middle of the response, malformed JSON, empty `choices`, missing content.

An `aiohttp.web` application on its own event loop: hundreds of concurrent requests that each
wait for the configured latency cost it little CPU, so that a benchmark measures the client.
Run it in a thread (`FakeOpenAI`) or, to share the CPU with a client as a real server would,
in another process (`ServerProcess`, or `python -m proactivebench.testing.server --port 8011
--latency 0.05`, which prints `URL <base url>` and serves until Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import base64
import contextlib
import hashlib
import json
import random
import re
import signal
import socket
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from aiohttp import web

from proactivebench.benchmark.protocol import oeg_strings
from proactivebench.core.texts import dumps

#: Every fault the server can inject; "http400" is the only one a client must not retry.
FAULTS = (
    "http500",
    "http429",
    "timeout",
    "drop",
    "disconnect",
    "malformed",
    "empty",
    "no_content",
)
NON_RETRYABLE = ("http400",)

_OPTION_LINE = re.compile(r"^([A-Z])\. (.+)$", re.MULTILINE)


@dataclass
class ServerConfig:
    """What the server answers and how badly it behaves."""

    #: Seconds each chat request takes before its answer.
    latency: float = 0.0
    #: Probability that a chat request (after the schedule) gets a fault from `fault_kinds`.
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = FAULTS
    #: Faults (or None) for the first chat requests, in arrival order.
    schedule: list[str | None] = field(default_factory=list)
    seed: int = 0
    #: The `Retry-After` header value sent with 429s (seconds or an HTTP date).
    retry_after: str = "0.2"
    #: How long a "timeout" fault keeps the client waiting (longer than its timeout).
    hang: float = 2.0
    #: When set, requests must carry `Authorization: Bearer <api_key>`.
    api_key: str | None = None
    #: Oracle mode: the answer for a request fingerprint (see `fingerprint`).
    answers: dict[str, str] = field(default_factory=dict)
    #: Scripted mode: a function of the request body that returns the answer (wins over both).
    respond: Callable[[dict[str, Any]], str] | None = None
    #: Raw mode: a function of the request's path and body that returns the whole response
    #: as sent (status, headers, body bytes), untouched: no JSON, no encoding, no compression
    #: added (wins over the others; faults still come first).
    raw: Callable[[str, dict[str, Any]], Raw] | None = None
    #: Hold the first chat requests until this many are in flight at once (or `hang` seconds
    #: pass), then answer every request at once: a peak a test can count on, not a race.
    gather: int = 0
    #: Keep every request (headers and body) in `FakeOpenAI.requests` for assertions.
    record: bool = True
    model_id: str = "fake-vlm"


@dataclass
class Raw:
    """A response sent byte for byte: what a broken or hostile server may answer."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    method: str
    path: str
    #: Header names lowercased.
    headers: dict[str, str]
    body: Any
    fault: str | None
    time: float


# ----- what the server answers ------------------------------------------------------------------


def decode_data_url(url: str) -> tuple[str, bytes]:
    """(mime type, bytes) of a `data:<mime>;base64,<payload>` URL; ValueError otherwise."""
    match = re.match(r"data:([\w/+.-]+);base64,(.*)\Z", url, re.DOTALL)
    if not match:
        raise ValueError(f"not a base64 data URL: {url[:40]!r}")
    return match.group(1), base64.b64decode(match.group(2), validate=True)


def _image_digest(url: str) -> str:
    # The data URL stands for its bytes one to one (base64 is a bijection): hashing it is as
    # good as hashing the decoded image, and cheaper for a server that should cost the client
    # under test no CPU.
    return hashlib.sha256(url.encode()).hexdigest()


def fingerprint(messages: list[dict[str, Any]]) -> str:
    """A hash of what a model sees: roles, texts, and every image (as its data URL)."""
    seen: list[Any] = []
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for part in parts:
            if part.get("type") == "image_url":
                seen.append([message.get("role"), "image", _image_digest(part["image_url"]["url"])])
            else:
                seen.append([message.get("role"), "text", part.get("text")])
    return hashlib.sha256(dumps(seen).encode()).hexdigest()


def _image_count(messages: list[dict[str, Any]]) -> int:
    return sum(
        part.get("type") == "image_url"
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


def hashed_answer(model: str, messages: list[dict[str, Any]]) -> str:
    """One of the shown options, chosen by a hash; as a letter, "B. text" or the bare text."""
    digest = hashlib.sha256(f"{model}\n{fingerprint(messages)}".encode()).digest()
    options = _OPTION_LINE.findall(last_user_text(messages))
    if not options:
        return "A"
    letter, text = options[int.from_bytes(digest[:4], "big") % len(options)]
    return [letter, f"{letter}. {text}", text][digest[4] % 3]


@cache
def _judge_request() -> tuple[str, re.Pattern[str]]:
    """The judge's system prompt and a pattern of its user turn, both from the protocol's
    strings (the template's literal text escaped, each `{field}` a named group)."""
    strings = oeg_strings()
    pattern = "".join(
        re.escape(literal) + (f"(?P<{name}>.*?)" if name else "")
        for literal, name, _, _ in string.Formatter().parse(strings["judge_user_template"])
    )
    return strings["judge_system_prompt"], re.compile(pattern, re.DOTALL)


def judge_verdict(body: dict[str, Any]) -> str | None:
    """A judge's answer to a judge's request (None for any other request): a 0 or 1 per
    correct answer shown, each by a hash of the model, the messages and the seed (a vote's
    own), on the last line as the judge parses it."""
    messages = body.get("messages") or []
    system, user = _judge_request()
    if not messages or messages[0].get("role") != "system":
        return None
    if messages[0].get("content") != system:
        return None
    shown = user.fullmatch(last_user_text(messages))
    if shown is None:
        return None
    try:
        answers = ast.literal_eval(shown["correct_answers"])
    except (ValueError, SyntaxError):
        return None
    if not isinstance(answers, list):
        return None
    # As many marks as `parse_verdict` expects: an entry is empty only where its part was.
    count = sum(1 for answer in answers if answer)
    if not count:
        return None
    seen = f"{body.get('model', '')}\n{fingerprint(messages)}\n{body.get('seed')}"
    digest = hashlib.sha256(seen.encode()).digest()
    marks = ",".join(str(digest[i % len(digest)] & 1) for i in range(count))
    return f"Each correct answer, by a hash of the request:\n{marks}"


def is_reasoning_name(model: str) -> bool:
    """OpenAI's reasoning models, by name, as the real API treats them."""
    return re.match(r"(o1|o3|o4|gpt-5)($|[-.])", model.rsplit("/", 1)[-1]) is not None


def reasoning_refusal(body: dict[str, Any]) -> dict[str, Any] | None:
    """The real API's 400 for what a reasoning model refuses: `max_tokens`, a temperature or
    top-p other than the default."""
    if not is_reasoning_name(str(body.get("model", ""))):
        return None
    if "max_tokens" in body:
        return {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }
    for name in ("temperature", "top_p"):
        if name in body and body[name] != 1:
            return {
                "message": f"Unsupported value: '{name}' does not support {body[name]} with this "
                "model. Only the default (1) value is supported.",
                "type": "invalid_request_error",
                "param": name,
                "code": "unsupported_value",
            }
    return None


def closed_port_url() -> str:
    """The base URL of a port nothing listens on (a server that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# ----- the HTTP side ----------------------------------------------------------------------------


class FakeOpenAI:
    """The server on 127.0.0.1 and a free port, on an event loop in a background thread."""

    def __init__(self, config: ServerConfig | None = None, **options: Any) -> None:
        self.config = config or ServerConfig(**options)
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._count = 0
        self.in_flight = 0
        #: Most chat requests handled at once: shows the client's concurrency.
        self.peak_in_flight = 0
        self._gate_deadline: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None

    # ----- lifecycle ------------------------------------------------------------------------------

    def start(self, port: int = 0) -> FakeOpenAI:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(port), self._loop).result(timeout=10)
        return self

    async def _serve(self, port: int) -> None:
        app = web.Application(client_max_size=256 << 20)
        app.router.add_route("GET", "/{path:.*}", self._get)
        app.router.add_route("POST", "/{path:.*}", self._post)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        self._port = self._runner.addresses[0][1]

    def stop(self) -> None:
        loop, runner = self._loop, self._runner
        if loop is None or runner is None:
            return
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        assert self._thread is not None
        self._thread.join(timeout=10)
        loop.close()
        self._loop = self._runner = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port it listens (or, once stopped, listened) on."""
        assert self._port is not None, "server not started"
        return self._port

    @property
    def url(self) -> str:
        """The base URL a client appends `/chat/completions` to."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ----- requests -------------------------------------------------------------------------------

    async def _get(self, request: web.Request) -> web.StreamResponse:
        self.record(request, None, None)
        if not request.path.rstrip("/").endswith("/models"):
            return _json(404, {"error": {"message": f"no route {request.path}"}})
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        return _json(200, {"object": "list", "data": [{"id": self.config.model_id}]})

    async def _post(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        if not request.path.rstrip("/").endswith("/chat/completions"):
            self.record(request, None, None)
            return _json(404, {"error": {"message": f"no route {request.path}"}})
        try:
            body = json.loads(raw)
        except ValueError:
            self.record(request, None, None)
            return _json(400, {"error": {"message": "request body is not JSON"}})
        fault = self.next_fault()
        self.record(request, body, fault)
        refused = reasoning_refusal(body)
        if refused is not None:
            return _json(400, {"error": refused})
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        with self.busy():
            await self._gathered()
            if self.config.latency:
                await asyncio.sleep(self.config.latency)
            if fault is not None:
                return await self._fault(request, fault)
            if self.config.raw is not None:
                sent = self.config.raw(request.path, body)
                return web.Response(status=sent.status, body=sent.body, headers=sent.headers)
            if body.get("stream"):
                return await self._stream(request, self.completion(body))
            return _json(200, self.completion(body))

    async def _stream(self, request: web.Request, completion: dict[str, Any]) -> web.StreamResponse:
        """The completion as server-sent events (`"stream": true`), as OpenAI sends them: the
        content in a delta, the finish reason, the usage in a last chunk, then `[DONE]`."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        choice = completion["choices"][0]
        head = {k: completion[k] for k in ("id", "created", "model")}
        chunks = [
            {"choices": [{"index": 0, "delta": {**choice["message"]}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
            {"choices": [], "usage": completion["usage"]},
        ]
        for chunk in chunks:
            event = {**head, "object": "chat.completion.chunk", **chunk}
            await response.write(f"data: {dumps(event)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    def _refusal(self, request: web.Request) -> web.Response | None:
        key = self.config.api_key
        if key is None or request.headers.get("authorization") == f"Bearer {key}":
            return None
        got = request.headers.get("authorization", "").removeprefix("Bearer ")
        # Echo the key as some servers do: a client must keep it out of its messages.
        return _json(401, {"error": {"message": f"Incorrect API key provided: {got}."}})

    async def _fault(self, request: web.Request, kind: str) -> web.StreamResponse:
        config = self.config
        if kind == "http500":
            return _json(500, {"error": {"message": "internal error (injected)"}})
        if kind == "http429":
            return _json(
                429,
                {"error": {"message": "rate limited (injected)"}},
                {"retry-after": config.retry_after},
            )
        if kind == "http400":
            return _json(400, {"error": {"message": "invalid image (injected)"}})
        if kind == "malformed":
            return web.Response(
                status=200,
                body=b'{"id": "x", "choices": [{"message": ',
                content_type="application/json",
            )
        if kind == "empty":
            return _json(200, {"id": "x", "object": "chat.completion", "choices": []})
        if kind == "no_content":
            return _json(200, {"choices": [{"index": 0, "message": {"role": "assistant"}}]})
        if kind == "timeout":
            await asyncio.sleep(config.hang)
        elif kind == "drop":  # a response cut short: headers, then part of the body
            data = b'{"choices": [{"message": {"content": "A"}}]}'
            response = web.StreamResponse(status=200)
            response.content_length = len(data)
            await response.prepare(request)
            await response.write(data[:10])
        # "disconnect" (and a "timeout" that is over): close without (the rest of) a response.
        assert request.transport is not None
        request.transport.close()
        raise asyncio.CancelledError  # nothing more goes out on this connection

    # ----- behaviour ------------------------------------------------------------------------------

    @property
    def chat_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def next_fault(self) -> str | None:
        with self._lock:
            index = self._count
            self._count += 1
        config = self.config
        if index < len(config.schedule):
            return config.schedule[index]
        if config.fault_rate <= 0:
            return None
        rng = random.Random(f"{config.seed}:{index}")
        return rng.choice(config.fault_kinds) if rng.random() < config.fault_rate else None

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _gathered(self) -> None:
        """Wait until `gather` requests were in flight together once (or `hang` passed since
        the first request: then the gate stays open, the shortfall shown by the peak)."""
        if self._gate_deadline is None:
            self._gate_deadline = time.monotonic() + self.config.hang
        while self.peak_in_flight < self.config.gather and time.monotonic() < self._gate_deadline:
            await asyncio.sleep(0.005)

    def record(self, request: web.Request, body: Any, fault: str | None) -> None:
        if not self.config.record:
            return
        headers = {k.lower(): v for k, v in request.headers.items()}
        entry = Recorded(request.method, request.path, headers, body, fault, time.monotonic())
        with self._lock:
            self.requests.append(entry)

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        model = str(body.get("model", ""))
        if self.config.respond is not None:
            answer = self.config.respond(body)
        else:
            answer = (
                self.config.answers.get(fingerprint(messages))
                or judge_verdict(body)
                or hashed_answer(model, messages)
            )
        prompt_tokens = len(last_user_text(messages)) // 4 + 256 * _image_count(messages)
        completion_tokens = max(1, len(answer) // 4)
        details = {}
        if is_reasoning_name(model):  # hidden reasoning, counted in the completion
            details = {"completion_tokens_details": {"reasoning_tokens": 64}}
            completion_tokens += 64
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                **details,
            },
        }


def _json(status: int, obj: Any, extra: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, body=dumps(obj).encode(), content_type="application/json", headers=extra
    )


# ----- in another process -----------------------------------------------------------------------


class ServerProcess:
    """The server in a child process, so that it competes for the CPU like a real one."""

    def __init__(self, latency: float = 0.0, answers: Path | None = None) -> None:
        self.args = [
            sys.executable, "-m", __spec__.name if __spec__ else "proactivebench.testing.server",
            "--latency", str(latency),
            "--until-stdin-closes",
        ]  # fmt: skip
        if answers is not None:
            self.args += ["--answers", str(answers)]
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> ServerProcess:
        self.process = subprocess.Popen(
            self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("URL "):
            self.process.kill()
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.url = line.split()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the child stops when its stdin closes
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m proactivebench.testing.server",
        description=__doc__.splitlines()[0],
        epilog="Prints 'URL <base url>' once listening, then serves until Ctrl-C or SIGTERM "
        "(or, with --until-stdin-closes, until its standard input closes).",
    )
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--answers", type=Path, help="JSON object: fingerprint -> answer")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument(
        "--until-stdin-closes",
        action="store_true",
        help="stop when standard input closes: a parent that dies takes the server with it",
    )
    args = parser.parse_args()
    answers = json.loads(args.answers.read_text()) if args.answers else {}
    stop = threading.Event()
    # Before the URL line: a SIGTERM sent as soon as the URL is read must stop it cleanly.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = FakeOpenAI(latency=args.latency, answers=answers, record=False).start(args.port)
    print(f"URL {server.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        if args.until_stdin_closes:
            sys.stdin.read()
        else:  # in the background too, where stdin is closed or /dev/null at once
            while not stop.wait(0.5):
                pass
    server.stop()


if __name__ == "__main__":
    main()
