"""Anthropic's Messages API (Claude). Spec: `anthropic:MODEL[@BASE_URL]` (default base URL:
`https://api.anthropic.com/v1`; a request is POSTed to `BASE_URL/messages`).

The wire format only; the transport (sessions, replicas, redirects, proxies, the body's size
limit, `Retry-After`, the key's keeping) is `models.http.HTTPBackend`'s, as for `openai:`:

- the system prompt goes apart, in the body's `system`, never among the `messages`;
- an image is a base64 block, `{"type": "image", "source": {"type": "base64", "media_type":
  "image/jpeg", "data": ...}}`, of the media type its bytes are (a view of an untransformed
  PNG, WebP or GIF file is sent as that file);
- `max_tokens` is always sent (the API requires it); the run's temperature and top-p when set;
  no `seed`, which the API does not take;
- the answer is the text of the response's `text` blocks (a thinking block is not the answer);
  no text because the generation reached `max_tokens` is not retried: the same request gets
  the same;
- its usage (`input_tokens` and the cache's input tokens, `output_tokens`) is counted as the
  report's `prompt_tokens` and `completion_tokens` (`base.usage_counts`);
- 429 (rate limited), 529 (overloaded) and 5xx are retried, honouring `retry-after`; a 429
  that says the organization's spend limit is reached is not, nor any other 4xx.

The key is read from `$ANTHROPIC_API_KEY` (`api_key_env`) and only ever sent in the
`x-api-key` header, with `anthropic-version` (`API_VERSION`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from proactivebench.benchmark.prompting import is_image_part
from proactivebench.core.ranges import Range
from proactivebench.core.texts import dumps, loads
from proactivebench.models.base import ChatRequest, Decoding, usage_counts
from proactivebench.models.http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    EXTRA_BODY_REFUSED,
    SLOT,
    Failure,
    HTTPBackend,
    Response,
    checked_extra_body,
    encode_body,
    parse_spec,
    split_data_url,
)
from proactivebench.models.options import Annotated

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_API_KEY_ENV = "ANTHROPIC_API_KEY"
#: The API version every request names (`anthropic-version`); a `headers` option may name
#: another.
API_VERSION = "2023-06-01"
#: The report's token counts from the API's `usage`: its input tokens are those not read from
#: or written to the prompt cache, so all three make the prompt.
USAGE = {
    "prompt_tokens": ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
    "completion_tokens": ("output_tokens",),
}
#: Decoding extras the API refuses ("Extra inputs are not permitted"): a judge's votes carry
#: a seed.
UNSENT_DECODING = ("seed",)
#: Keys of the body that `extra_body` may not set, and why: what the request is.
#: What `extra_body` may not set: the body's own keys, and the system prompt the episode sets.
_REFUSED = {**EXTRA_BODY_REFUSED, "system": "the episode's system prompt goes there"}


def anthropic_messages(
    messages: Iterable[dict[str, Any]], image: Any
) -> tuple[str | None, list[dict[str, Any]]]:
    """Our chat messages in the wire shape: (the system prompt, the other messages).

    System messages' texts are joined into the one `system` string; each image part becomes
    the block `image(view)` returns; every other part and field passes through.
    """
    system: list[str] = []
    wire: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "system":
            system.append(_text(content))
            continue
        if isinstance(content, list):
            content = [image(p["view"]) if is_image_part(p) else p for p in content]
        wire.append({**message, "content": content})
    return ("\n\n".join(system) if system else None), wire


def image_block(media_type: str, data: str) -> dict[str, Any]:
    """An image as the Messages API takes it inline."""
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class AnthropicMessages(HTTPBackend):
    """A Claude model (or any server of the Messages API) behind one or more base URLs."""

    kind = "anthropic"
    path = "/messages"
    default_url = DEFAULT_BASE_URL
    key_header = "x-api-key"

    # Each option spelled out, as openai's: `load_model` checks a user's options against
    # this signature (type, range, unknown names), not HTTPBackend's.
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
        self.extra_body = checked_extra_body(extra_body, self.kind, _REFUSED)

    @classmethod
    def from_spec(cls, rest: str, **options: Any) -> AnthropicMessages:
        """Build from the part of `anthropic:MODEL[@URL]` after the colon."""
        model, url = parse_spec(rest)
        return cls(model, url, **options)

    # ----- what the run records -------------------------------------------------------------

    def answer_inputs(self, request: ChatRequest) -> dict[str, Any]:
        """`extra_body` (a `thinking` budget, `top_k`) when there is one."""
        return {"extra_body": self.extra_body} if self.extra_body else {}

    def sent_extras(self) -> dict[str, Any]:
        return {"extra_body": self.extra_body} if self.extra_body else {}

    def sent_decoding(self, decoding: Decoding) -> dict[str, Any]:
        """The run's decoding but a `seed`, which the API does not take."""
        return {k: v for k, v in decoding.as_dict().items() if k not in UNSENT_DECODING}

    # ----- the wire format ------------------------------------------------------------------

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def base_headers(self) -> dict[str, str]:
        return {"anthropic-version": API_VERSION}

    def _body(self, messages: Any, decoding: Decoding) -> dict[str, Any]:
        """Backend extras first, so the run's decoding settings (recorded in run.json) win."""
        system, wire = messages
        body: dict[str, Any] = {"model": self.model, "messages": wire}
        if system is not None:
            body["system"] = system
        return {**body, **self.extra_body, **self.sent_decoding(decoding)}

    async def _payload(self, request: ChatRequest) -> bytes:
        """The request body as sent: JSON with every image part as a base64 block."""
        views, urls = await self._request_images(request)
        parts = [split_data_url(url) for url in urls]
        types = iter([media_type for media_type, _ in parts])
        slotted = anthropic_messages(request.messages, lambda view: image_block(next(types), SLOT))
        payload = encode_body(self._body(slotted, request.decoding), [d for _, d in parts])
        if payload is None:
            by_view = dict(zip(views, parts, strict=True))
            wire = anthropic_messages(request.messages, lambda v: image_block(*by_view[v]))
            payload = dumps(self._body(wire, request.decoding)).encode("utf-8")
        return payload

    def _answer(self, data: Any) -> tuple[str, dict[str, int] | None] | Failure:
        text = _content(data)
        if isinstance(text, Failure):
            return text
        return text, usage_counts(data.get("usage"), USAGE)

    def _retryable_status(self, status: int, response: Response) -> bool:
        """As documented: 429, 529 (overloaded) and other 5xx are; a 429 that says the spend
        limit is reached is not (it lasts until the limit is raised), nor other 4xx."""
        if status == 429 and _error_code(response) == "enforced_spend_limit_reached":
            return False
        return super()._retryable_status(status, response)

    def _hint(self, status: int, detail: str) -> str:
        hint = super()._hint(status, detail)
        if status == 400 and "max_tokens" in detail:
            hint += " (--max-tokens sets it; a thinking budget must stay below it)"
        return hint


# ----- response reading ---------------------------------------------------------------------


def _content(data: Any) -> str | Failure:
    """The text of the response's `text` blocks. No text and a `refusal` stop: the model's
    answer is the empty text (asked again, it refuses again); no text because of
    `max_tokens`: not retried."""
    if not isinstance(data, dict):
        return Failure("response is not a JSON object", retryable=True)
    content = data.get("content")
    if not isinstance(content, list):
        return Failure("response has no content", retryable=True)
    texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    if texts and all(isinstance(t, str) for t in texts):
        return "".join(t for t in texts if isinstance(t, str))
    stop = data.get("stop_reason")
    if not texts and stop == "refusal":
        return ""
    if not texts and stop == "max_tokens":
        return Failure(
            "HTTP 200 with no text: the generation reached its token limit (stop_reason "
            "'max_tokens') before any answer; a model that thinks may spend it all thinking: "
            "raise --max-tokens (--judge-max-tokens for a judge)",
            retryable=False,
        )
    return Failure("response has no text content", retryable=True)


def _error_code(response: Response) -> str | None:
    """`error.details.error_code` of an error body, if any."""
    try:
        data = loads(response.text)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else None
