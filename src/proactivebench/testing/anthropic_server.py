"""A stand-in for Anthropic's Messages API, for offline tests of `anthropic:` runs (or any
client of that API): `FakeAnthropic`.

`with FakeAnthropic(respond=lambda body: "A") as server:` serves on `server.url`
(`http://127.0.0.1:PORT/v1`: `POST /messages`, `GET /models`) until the block ends; then
`server.message_requests` holds what the client sent (headers, JSON body, the fault it got).
It is `FakeOpenAI` (`testing.server`) speaking the other wire format, with the same knobs
(`ServerConfig`: `respond`, `answers`, latency, a fault `schedule` or `fault_rate`, an API
key to require, `raw` responses). Without `respond` or `answers` a request gets the answer
`FakeOpenAI` gives the same request in the OpenAI shape (one of the shown options, by a hash
of the model and what it sees).

What the real API refuses, it refuses, so that a client that gets the shape wrong fails
here: a body without `max_tokens` or `messages`, a `system` role among the messages, an
image that is not a base64 block of a media type it takes, a request without
`anthropic-version`, and (with `api_key` set) one whose `x-api-key` is another. Faults:
everything `FakeOpenAI` injects, its HTTP errors in Anthropic's error shape, plus "http529"
(`overloaded_error`, with `retry-after`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from proactivebench.testing.server import (
    FakeOpenAI,
    Recorded,
    ServerConfig,
    _json,
    fingerprint,
    hashed_answer,
    last_user_text,
)

#: What the stand-in can inject besides `testing.server.FAULTS`; "http529" is retryable.
ANTHROPIC_FAULTS = ("http529",)
#: The image media types the Messages API takes.
MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
#: The error `type` of each injected status, as the API names them.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error as the API sends it."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_shape(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages as `FakeOpenAI` sees them (system first, images as data URLs),
    so that both stand-ins answer one request alike."""
    messages: list[dict[str, Any]] = []
    if body.get("system") is not None:
        messages.append({"role": "system", "content": body["system"]})
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = [_openai_part(p) for p in content]
        messages.append({**message, "content": content})
    return messages


def _openai_part(part: Any) -> Any:
    if isinstance(part, dict) and part.get("type") == "image":
        source = part.get("source") or {}
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    return part


def shape_error(body: Any) -> str | None:
    """What the real API would say is wrong with the request's body, or None."""
    if not isinstance(body, dict):
        return "body must be a JSON object"
    if "max_tokens" not in body:
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required"
    for n, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant"):
            return (
                f"messages.{n}.role: Input should be 'user' or 'assistant' (a system prompt "
                "goes in the top-level `system`)"
            )
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "image":
                source = part.get("source") or {}
                if source.get("type") != "base64" or not isinstance(source.get("data"), str):
                    return f"messages.{n}: image source must be a base64 block"
                if source.get("media_type") not in MEDIA_TYPES:
                    return f"messages.{n}: image media_type {source.get('media_type')!r}"
    return None


class FakeAnthropic(FakeOpenAI):
    """The Messages API stand-in on 127.0.0.1 and a free port (see the module)."""

    def __init__(self, config: ServerConfig | None = None, **options: Any) -> None:
        super().__init__(config, **options)

    def __enter__(self) -> FakeAnthropic:
        self.start()
        return self

    @property
    def message_requests(self) -> list[Recorded]:
        """The requests to `/messages`, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path.rstrip("/").endswith("/messages")]

    @property
    def chat_requests(self) -> list[Recorded]:
        """The same as `message_requests` (the name `FakeOpenAI`'s users know)."""
        return self.message_requests

    async def _post(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        if not request.path.rstrip("/").endswith("/messages"):
            self.record(request, None, None)
            return _json(404, error_body(404, f"no route {request.path}"))
        try:
            body = json.loads(raw)
        except ValueError:
            self.record(request, None, None)
            return _json(400, error_body(400, "request body is not JSON"))
        fault = self.next_fault()
        self.record(request, body, fault)
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        if "anthropic-version" not in request.headers:
            return _json(400, error_body(400, "anthropic-version: header is required"))
        wrong = shape_error(body)
        if wrong is not None:
            return _json(400, error_body(400, wrong))
        with self.busy():
            await self._gathered()
            if self.config.latency:
                await asyncio.sleep(self.config.latency)
            if fault is not None:
                return await self._fault(request, fault)
            if self.config.raw is not None:
                sent = self.config.raw(request.path, body)
                return web.Response(status=sent.status, body=sent.body, headers=sent.headers)
            return _json(200, self.completion(body))

    def _refusal(self, request: web.Request) -> web.Response | None:
        key = self.config.api_key
        got = request.headers.get("x-api-key", "")
        if key is None or got == key:
            return None
        # Echo the key as some servers do: a client must keep it out of its messages.
        return _json(401, error_body(401, f"invalid x-api-key: {got}"))

    async def _fault(self, request: web.Request, kind: str) -> web.StreamResponse:
        after = {"retry-after": self.config.retry_after}
        if kind == "http529":
            return _json(529, error_body(529, "Overloaded (injected)"), after)
        if kind == "http429":
            return _json(429, error_body(429, "rate limited (injected)"), after)
        if kind == "http500":
            return _json(500, error_body(500, "internal error (injected)"))
        if kind == "http400":
            return _json(400, error_body(400, "invalid image (injected)"))
        if kind == "empty":
            return _json(200, {"type": "message", "role": "assistant", "content": []})
        if kind == "no_content":
            return _json(200, {"type": "message", "role": "assistant"})
        return await super()._fault(request, kind)

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = openai_shape(body)
        model = str(body.get("model", ""))
        if self.config.respond is not None:
            answer = self.config.respond(body)
        else:
            answer = self.config.answers.get(fingerprint(messages)) or hashed_answer(
                model, messages
            )
        images = sum(
            isinstance(p, dict) and p.get("type") == "image_url"
            for m in messages
            if isinstance(m.get("content"), list)
            for p in m["content"]
        )
        input_tokens = len(last_user_text(messages)) // 4 + 256 * images
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": max(1, len(answer) // 4),
            },
        }
