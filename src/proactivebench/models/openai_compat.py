"""Any OpenAI-compatible chat-completions server: vLLM, SGLang, Ollama, LM Studio, llama.cpp,
hosted APIs. Spec: `openai:MODEL[@BASE_URL]` (default base URL: the OpenAI API).

Throughput comes from the engine's episodes in flight (`max_batch = 1`): each turn is one HTTP
request, as many at once as episodes in flight. This module keeps the OpenAI wire format: the
request's body (`/chat/completions`, images as data URLs, a reasoning model's
`max_completion_tokens`), the answer's text and usage, and the options of that format
(`extra_body`, `reasoning`). The transport (the session, replicas, redirects, proxies, the
body's size limit, `Retry-After`, the API key's keeping, which failures are retryable) is
`models.http.HTTPBackend`'s; `load_model` wraps the backend in `models.resilient.Resilient`,
which retries, bounds the requests in flight (`concurrency`) and ends a run whose server is
down. A request that fails for good is recorded by the engine as an error on that episode,
never as a wrong answer.

The API key is read from an environment variable and only ever sent as a bearer header: it is
not part of `name` (recorded in results), of any error message, or of any log line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from proactivebench.benchmark.prompting import map_image_parts
from proactivebench.benchmark.scenarios import View
from proactivebench.core.ranges import Range
from proactivebench.core.texts import dumps
from proactivebench.models.base import ChatRequest, Decoding, usage_counts
from proactivebench.models.http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    SLOT,
    Failure,
    HTTPBackend,
    checked_extra_body,
    encode_body,
    parse_spec,
    positive,
)
from proactivebench.models.options import Annotated

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
#: OpenAI's reasoning models by name (the last part of the name, e.g. `openai/o4-mini`).
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
#: Tokens a reasoning model may spend thinking, on top of the answer's limit.
DEFAULT_REASONING_BUDGET = 8192
#: How servers say that a parameter or value is not accepted by this model.
_UNSUPPORTED = re.compile(r"unsupported (parameter|value)|not supported with this model", re.I)


def openai_messages(
    messages: Iterable[dict[str, Any]], data_url: Callable[[View], str]
) -> list[dict[str, Any]]:
    """Our chat messages in the wire shape: image parts become `image_url` parts with the data
    URL `data_url` gives for their view; every other part and field passes through."""
    return map_image_parts(
        messages, lambda view: {"type": "image_url", "image_url": {"url": data_url(view)}}
    )


def is_reasoning_model(model: str) -> bool:
    """Whether `model` is one of OpenAI's reasoning models by its name (o1, o3, o4, gpt-5)."""
    name = model.rsplit("/", 1)[-1].lower()
    return any(name == p or name.startswith((f"{p}-", f"{p}.")) for p in REASONING_PREFIXES)


class OpenAICompatible(HTTPBackend):
    """A chat model behind one or more OpenAI-compatible `/chat/completions` endpoints."""

    kind = "openai"
    path = "/chat/completions"
    default_url = DEFAULT_BASE_URL
    key_header = "authorization"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        endpoints: str | Sequence[str] | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        image_format: str = "JPEG",
        jpeg_quality: Annotated[int, Range(0, 100)] = 90,
        timeout: Annotated[float, Range(0, low_open=True)] = 120.0,
        connect_timeout: Annotated[float, Range(0, low_open=True)] = 10.0,
        balance: str = "least-in-flight",
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        reasoning: bool | None = None,
        reasoning_budget: Annotated[int, Range(1)] = DEFAULT_REASONING_BUDGET,
        reasoning_effort: str | None = None,
        cache_scope: str = "endpoints",
        max_response_bytes: Annotated[int, Range(1)] = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        super().__init__(
            model,
            base_url,
            endpoints=endpoints,
            api_key_env=api_key_env,
            image_format=image_format,
            jpeg_quality=jpeg_quality,
            timeout=timeout,
            connect_timeout=connect_timeout,
            balance=balance,
            headers=headers,
            cache_scope=cache_scope,
            max_response_bytes=max_response_bytes,
        )
        self.extra_body = checked_extra_body(extra_body, self.kind)
        #: A reasoning model (OpenAI's o-series, GPT-5) takes `max_completion_tokens` and only
        #: its default temperature, and spends hidden tokens before it answers.
        self.reasoning = is_reasoning_model(model) if reasoning is None else bool(reasoning)
        self.reasoning_budget = int(positive("reasoning_budget", reasoning_budget))
        self.reasoning_effort = reasoning_effort

    @classmethod
    def from_spec(cls, rest: str, **options: Any) -> OpenAICompatible:
        """Build from the part of `openai:MODEL[@URL]` after the colon."""
        model, url = parse_spec(rest)
        return cls(model, url, **options)

    def __repr__(self) -> str:
        return f"OpenAICompatible(model={self.model!r}, endpoints={self.urls!r})"

    # ----- what the run records -------------------------------------------------------------

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

    # ----- the wire format ------------------------------------------------------------------

    def _body(self, messages: list[dict[str, Any]], decoding: Decoding) -> dict[str, Any]:
        """Backend extras first, so the run's decoding settings (recorded in run.json) win."""
        settings = self.sent_decoding(decoding)
        return {"model": self.model, "messages": messages, **self.extra_body, **settings}

    async def _payload(self, request: ChatRequest) -> bytes:
        """The request body as sent: JSON with every image part as a data URL."""
        views, urls = await self._request_images(request)
        slotted = openai_messages(request.messages, lambda view: SLOT)
        payload = encode_body(self._body(slotted, request.decoding), urls)
        if payload is None:
            by_view = dict(zip(views, urls, strict=True))
            wire = openai_messages(request.messages, by_view.__getitem__)
            payload = dumps(self._body(wire, request.decoding)).encode("utf-8")
        return payload

    def _answer(self, data: Any) -> tuple[str, dict[str, int] | None] | Failure:
        text = _content(data)
        if isinstance(text, Failure):
            return text
        return text, usage_counts(data.get("usage"))

    def _hint(self, status: int, detail: str) -> str:
        hint = super()._hint(status, detail)
        if status == 400 and _UNSUPPORTED.search(detail):
            switch = "false" if self.reasoning else "true"
            hint += (
                f" (set --model-option reasoning={switch}: a reasoning model takes "
                "max_completion_tokens and no temperature; other models the opposite)"
            )
        return hint


# ----- response reading ---------------------------------------------------------------------


def _content(data: Any) -> str | Failure:
    """The first choice's text; a string or a list of text parts (some servers send those).
    A refusal (`content` null, `refusal` text: OpenAI's hosted models) is the model's answer as
    any other text it answers with: asked again, the same request gets the same refusal."""
    if not isinstance(data, dict):
        return Failure("response is not a JSON object", retryable=True)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return Failure("response has no choices", retryable=True)
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
        return Failure(
            "HTTP 200 with no text: the generation reached its token limit (finish_reason "
            "'length') before any answer; a reasoning model may spend it all thinking: raise "
            "--max-tokens (--judge-max-tokens for a judge)",
            retryable=False,
        )
    return Failure("response has no message content", retryable=True)


# ----- option checks ------------------------------------------------------------------------


#: Keys of the body that `extra_body` may not set, and why: what the request is.
