"""The model protocol: an async batch of chat requests in, texts out.

Every backend (baselines, replayed answers, HTTP servers, local `transformers` models, a user's
callable) implements `Model.generate`. A request carries the chat messages *and* the current
observation: real models only see the messages; baselines read the observation's answer key,
which is how an oracle can play the benchmark without an image ever being decoded.
"""

from __future__ import annotations

import abc
import functools
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from proactivebench.benchmark.protocol import mcqa_strings
from proactivebench.benchmark.scenarios import Observation
from proactivebench.core.errors import ModelError, ModelSpecError, ProactiveBenchError
from proactivebench.core.ranges import Range
from proactivebench.core.texts import storable
from proactivebench.data.images import ImageStore
from proactivebench.models.options import check_option, finite_json


@dataclass(frozen=True)
class Decoding:
    """Decoding settings; greedy with the protocol's 50 new tokens unless overridden.

    `temperature=None` sends none: the server's (or the model's own) default applies, as the
    reference does for open-ended generation.

    The annotations declare each setting's type and range, checked whenever one is made
    (the command line's `--temperature` and `--top-p` check theirs by the same declaration,
    `decoding_field`): a NaN or a negative temperature would be sent to a server, which JSON
    cannot carry, and written into `run.json`.
    """

    max_tokens: Annotated[int, Range(1)] = field(
        default_factory=lambda: int(mcqa_strings()["max_new_tokens"])
    )
    temperature: Annotated[float, Range(0)] | None = 0.0
    top_p: Annotated[float, Range(0, 1, low_open=True)] | None = None
    #: Backend-specific extras (e.g. `{"seed": 1}`), passed through untouched.
    extra: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        for name in ("max_tokens", "temperature", "top_p"):
            check_option(name, decoding_field(name), getattr(self, name))
        if not finite_json(dict(self.extra)):
            raise ModelSpecError(f"decoding extras must be finite JSON, got {dict(self.extra)!r}")

    def as_dict(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"max_tokens": self.max_tokens}
        if self.temperature is not None:
            settings["temperature"] = self.temperature
        if self.top_p is not None:
            settings["top_p"] = self.top_p
        settings.update(dict(self.extra))
        return settings

    def with_extra(self, **extra: Any) -> Decoding:
        """The same settings with these extras added (or replaced)."""
        return replace(self, extra=tuple({**dict(self.extra), **extra}.items()))


@functools.cache
def decoding_field(name: str) -> Any:
    """The declared type (with its range) of one of `Decoding`'s settings."""
    return typing.get_type_hints(Decoding, include_extras=True)[name]


@dataclass(frozen=True)
class ChatRequest:
    messages: Sequence[dict[str, Any]]
    #: The episode's turn the request answers; None for requests outside an episode (a judge).
    observation: Observation | None = None
    decoding: Decoding = field(default_factory=Decoding)


def episode_turn(request: ChatRequest, model: str) -> Observation:
    """The observation of a request that must come from an episode (baselines, replay)."""
    if request.observation is None:
        raise ProactiveBenchError(f"{model} answers episode turns only, not free-standing requests")
    return request.observation


#: The token counts a result line's `usage` names alike whatever the backend: what the report
#: sums per kind, so that two backends' runs share its columns.
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens")


def is_count(value: Any) -> bool:
    """A number of tokens: an integer >= 0 (not a flag, a fraction or a text), since the
    report sums them."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def usage_counts(
    usage: Any, sums: Mapping[str, Sequence[str]] | None = None
) -> dict[str, int] | None:
    """A backend's token counts as result lines keep them: the one place their names are
    made the report's (`USAGE_KEYS`).

    Counts only (`is_count`: whatever else a server reports is left out). `sums` maps a
    report name to the backend's names whose counts make it (Anthropic's `input_tokens`,
    `cache_creation_input_tokens` and `cache_read_input_tokens` are its `prompt_tokens`);
    those names are replaced, and `total_tokens` is added as prompt plus completion when the
    backend gives none. Other counts keep their names (an OpenAI-compatible server's are the
    report's already), and the `reasoning_tokens` of `completion_tokens_details` (part of
    `completion_tokens`) is kept when reported. None when no count is left.
    """
    if not isinstance(usage, Mapping):
        return None
    counts = {k: v for k, v in usage.items() if isinstance(k, str) and is_count(v)}
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
    if is_count(reasoning):
        counts["reasoning_tokens"] = reasoning
    if sums:
        renamed = {k: v for k, v in counts.items() if not any(k in s for s in sums.values())}
        for name, parts in sums.items():
            found = [counts[p] for p in parts if p in counts]
            if found:
                renamed[name] = sum(found)
        if "total_tokens" not in renamed and {"prompt_tokens", "completion_tokens"} <= set(renamed):
            renamed["total_tokens"] = renamed["prompt_tokens"] + renamed["completion_tokens"]
        counts = renamed
    return counts or None


@dataclass
class Completion:
    text: str
    #: Token counts by the report's names (`usage_counts`: prompt_tokens, completion_tokens).
    usage: dict[str, int] | None = None
    #: Seconds the backend took for this answer (for a batch: the whole batch).
    latency_s: float = 0.0
    #: Answered from the response cache, not by the model.
    cached: bool = False

    def __post_init__(self) -> None:
        # Every backend's answer (a judge's too) is made here, so here it becomes storable
        # (`texts.storable`): one lone surrogate would otherwise crash the results writer.
        if isinstance(self.text, str):
            self.text = storable(self.text)


class Model(abc.ABC):
    """A chat model that answers a batch of requests."""

    #: Stable identifier, recorded in results and used in cache keys.
    name: str = "model"
    #: Whether requests must carry decodable images (False for baselines and replay).
    needs_images: bool = True
    #: Whether the request's observation keeps its answer key (the built-in baselines only:
    #: any other model, a user's function included, sees the turn as a model would).
    sees_answer_key: bool = False
    #: Whether the model answers free-standing requests (the messages alone, no episode turn):
    #: what a judge must do. False for the baselines and replay, which read the turn instead.
    answers_requests: bool = True
    #: How many requests one `generate` call takes at most (1: no batching).
    max_batch: int = 1
    #: Where image parts' views are decoded and encoded; set by `evaluate` (`bind_images`).
    images: ImageStore | None = None

    @property
    def cache_name(self) -> str:
        """Who answers, for the response cache's keys: by default the model's name."""
        return self.name

    @property
    def cacheable(self) -> bool:
        """Whether the response cache may answer for this model: only when its answer is a
        function of what the cache keys (`cache_name`, the messages, the decoding and
        `answer_inputs`). By default a model that reads images (a real model) is, and one
        that reads none is taken to play from the observation, which is not in its key: not
        cached. A backend says otherwise by setting `cacheable`."""
        return self.needs_images

    def answer_inputs(self, request: ChatRequest) -> dict[str, Any]:
        """What, besides the messages and the decoding, this backend's answer to `request`
        depends on (the observation, a seed): part of the response cache's key, so that a
        cached answer is the one the backend would give. Most backends read the messages
        only: none."""
        return {}

    def request_settings(self) -> dict[str, Any]:
        """Backend settings that change what the model is asked (recorded in run.json when
        there are any); most backends have none."""
        return {}

    def sent_decoding(self, decoding: Decoding) -> dict[str, Any]:
        """The decoding parameters this backend really sends for `decoding` (run.json's
        provenance): by default all of them; a backend that drops or renames some says so."""
        return decoding.as_dict()

    def sent_extras(self) -> dict[str, Any]:
        """What else this backend sends that may change its answers but is not part of the
        run's identity (an `openai` model's `extra_body`), for run.json's provenance entry
        of each invocation; most backends: nothing."""
        return {}

    @property
    def endpoints(self) -> list[str]:
        """Where requests go (run.json's provenance, never with a credential); none for
        local backends."""
        return []

    @property
    def code_digest(self) -> str | None:
        """A digest of the user's code that answers (a `python:` model's), recorded in each
        invocation's provenance entry so that a resume with edited code is told; None for
        backends whose code is not the user's."""
        return None

    def bind_images(self, store: ImageStore) -> None:
        """Give the backend the data set's shared image cache before a run."""
        self.images = store

    @abc.abstractmethod
    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One completion per request, in order."""

    def is_retryable(self, exc: BaseException) -> bool:
        """Whether `exc`, raised by one `generate` call, is a fault another attempt may fix.

        The retry wrapper (`models.resilient.Resilient`) asks this of the backend it wraps: a
        backend says what is transient, the wrapper decides when and how often to try again.
        By default a `ModelError` marked `retryable`; anything else fails at once.
        """
        return isinstance(exc, ModelError) and exc.retryable

    async def preflight(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Check, before a run, that the model can be reached; raise `RunAbort` if not."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release connections or devices."""


class ModelWrapper(Model):
    """A model that stands in front of another (`inner`): it answers as that model, for the
    run directory and the cache (name, settings, what its requests need), and passes the
    image cache, the preflight and the closing through. `CachedModel` and `Resilient` are
    such layers: `CachedModel(Resilient(backend))`."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.needs_images = inner.needs_images
        self.sees_answer_key = inner.sees_answer_key
        self.answers_requests = inner.answers_requests
        self.max_batch = inner.max_batch

    @property
    def cache_name(self) -> str:
        return self.inner.cache_name

    @property
    def cacheable(self) -> bool:
        return self.inner.cacheable

    def answer_inputs(self, request: ChatRequest) -> dict[str, Any]:
        return self.inner.answer_inputs(request)

    def request_settings(self) -> dict[str, Any]:
        return self.inner.request_settings()

    def sent_decoding(self, decoding: Decoding) -> dict[str, Any]:
        return self.inner.sent_decoding(decoding)

    def sent_extras(self) -> dict[str, Any]:
        return self.inner.sent_extras()

    @property
    def endpoints(self) -> list[str]:
        return self.inner.endpoints

    @property
    def code_digest(self) -> str | None:
        return self.inner.code_digest

    def bind_images(self, store: ImageStore) -> None:
        super().bind_images(store)
        self.inner.bind_images(store)

    async def preflight(self) -> None:
        await self.inner.preflight()

    async def aclose(self) -> None:
        await self.inner.aclose()
