"""Models behind one protocol (`base.Model`), named on the command line by URI-like specs:
every spec kind is declared here (`SPEC_KINDS`), and `load_model` builds one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proactivebench.core.errors import ModelSpecError
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.baselines import BASELINES
from proactivebench.models.options import check_options
from proactivebench.models.replay import Replay
from proactivebench.models.resilient import DEFAULT_MAX_CONSECUTIVE_FAILURES, Resilient


@dataclass(frozen=True)
class SpecKind:
    """One kind of model spec (`KIND:VALUE`): the one table from which `load_model` builds a
    model, the `--model` help and `proactivebench list` read, so that a kind added here is
    known everywhere."""

    kind: str
    #: The spec's form(s) as the help shows it, e.g. ``openai:MODEL[@BASE_URL]``.
    form: str
    doc: str
    #: Builds the model from the spec's VALUE, the run's seed and the options; None: not a
    #: model `eval` can play (a person plays in the browser, through `play`).
    build: Callable[[str, int, dict[str, Any]], Model] | None
    #: Whether it can judge an open-ended run (baselines and replay read turns, not requests).
    judge: bool = False
    #: Whether it takes options (`--model-option`): the wrapped backends do.
    options: bool = True
    #: The extra whose packages it needs, if any.
    extra: str | None = None
    #: Whether its runs are of a model with a parameter count (a point of the report's size
    #: plot): not a baseline policy nor a person, whose reports say nothing of sizes.
    sized: bool = True
    #: Failed calls in a row that end a run unless `max_consecutive_failures` says (0:
    #: never), for a backend wrapped in `Resilient`: a server that fails 20 requests in a row
    #: is down, and every later request would fail too; a local model's or a user's
    #: function's failures are usually particular to an input (a bug on one scenario, out of
    #: memory on a long prompt), so each ends only its episode.
    breaker: int = 0


def _baseline(rest: str, seed: int, options: dict[str, Any]) -> Model:
    if rest not in BASELINES:
        raise ModelSpecError(f"unknown baseline {rest!r}; choose from {', '.join(BASELINES)}")
    return BASELINES[rest](seed=seed)


def _replay(rest: str, seed: int, options: dict[str, Any]) -> Model:
    return Replay(rest)


def _openai(rest: str, seed: int, options: dict[str, Any]) -> Model:
    from proactivebench.models.openai_compat import OpenAICompatible

    own, wrapper = _checked(options, OpenAICompatible, "openai")
    return _resilient(OpenAICompatible.from_spec(rest, **own), "openai", wrapper, seed)


def _anthropic(rest: str, seed: int, options: dict[str, Any]) -> Model:
    from proactivebench.models.anthropic import AnthropicMessages

    own, wrapper = _checked(options, AnthropicMessages, "anthropic")
    return _resilient(AnthropicMessages.from_spec(rest, **own), "anthropic", wrapper, seed)


def _hf(rest: str, seed: int, options: dict[str, Any]) -> Model:
    from proactivebench.models.hf import HFModel  # lazy: torch loads only when asked

    own, wrapper = _checked(options, HFModel, "hf")
    return _resilient(HFModel(rest, seed=seed, **own), "hf", wrapper, seed)


def _python(rest: str, seed: int, options: dict[str, Any]) -> Model:
    from proactivebench.models.python_callable import PythonCallable

    own, wrapper = _checked(options, PythonCallable, "python")
    return _resilient(PythonCallable(rest, seed=seed, **own), "python", wrapper, seed)


#: Every model spec kind, in the order the help lists them.
SPEC_KINDS: tuple[SpecKind, ...] = (
    SpecKind(
        "baseline",
        f"baseline:{'|'.join(BASELINES)}",
        "a built-in baseline policy (reads the episode's answer key)",
        _baseline,
        options=False,
        sized=False,
    ),
    SpecKind("replay", "replay:FILE", "answers replayed from a JSONL file", _replay, options=False),
    SpecKind(
        "openai",
        "openai:MODEL[@BASE_URL]",
        "an OpenAI-compatible chat server (vLLM, SGLang, OpenAI...)",
        _openai,
        judge=True,
        breaker=DEFAULT_MAX_CONSECUTIVE_FAILURES,
    ),
    SpecKind(
        "anthropic",
        "anthropic:MODEL[@BASE_URL]",
        "Anthropic's Messages API (Claude; key in $ANTHROPIC_API_KEY)",
        _anthropic,
        judge=True,
        breaker=DEFAULT_MAX_CONSECUTIVE_FAILURES,
    ),
    SpecKind(
        "hf",
        "hf:PATH_OR_ID",
        "a local transformers vision-language model",
        _hf,
        judge=True,
        extra="hf",
    ),
    SpecKind(
        "python",
        "python:MODULE:FUNCTION or python:FILE.py:FUNCTION",
        "your own Python function",
        _python,
        judge=True,
    ),
    SpecKind(
        "human",
        "human:NAME",
        "a person, who plays in the browser (`proactivebench play --annotator NAME`)",
        None,
        options=False,
        sized=False,
    ),
)
SPEC_KIND = {k.kind: k for k in SPEC_KINDS}

SPEC_HELP = ", ".join(k.form for k in SPEC_KINDS if k.build is not None)
#: The specs a judge may be: baselines and replay read episode turns, not a judge's requests.
JUDGE_SPEC_HELP = ", ".join(k.form for k in SPEC_KINDS if k.judge)


def load_model(spec: str, *, seed: int = 0, **options: Any) -> Model:
    """Build the model a spec names, e.g. `baseline:oracle` or `replay:answers.jsonl`.

    `openai`, `anthropic`, `hf` and `python` backends come wrapped in `Resilient` (retries,
    the breaker, the concurrency limit), whose options they accept beside their own.
    """
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelSpecError(f"model spec {spec!r} is not KIND:VALUE; known: {SPEC_HELP}")
    known = SPEC_KIND.get(kind)
    if known is None:
        raise ModelSpecError(f"unknown model kind {kind!r} in {spec!r}; known: {SPEC_HELP}")
    if known.build is None:
        raise ModelSpecError(
            f"{spec} is a person: they play in the browser with `proactivebench play "
            f"--annotator {rest}`, not through eval"
        )
    if not known.options and options:
        raise ModelSpecError(f"{kind} models take no options (got {', '.join(sorted(options))})")
    return known.build(rest, seed, dict(options))


def _resilient(backend: Model, kind: str, options: dict[str, Any], seed: int) -> Resilient:
    """`backend` in the retry wrapper, whose breaker is its kind's (`SpecKind.breaker`)
    unless the options say."""
    options.setdefault("max_consecutive_failures", SPEC_KIND[kind].breaker)
    return Resilient(backend, seed=seed, **options)


def _option_names(function: Any) -> list[str]:
    """The keyword-only arguments of `function` (every option has a default), but the seed,
    which comes from the run's `--seed`."""
    return [name for name in function.__kwdefaults__ or {} if name != "seed"]


def _checked(
    options: dict[str, Any], backend: type, kind: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The backend's options and the wrapper's, each of the type and in the range its
    signature declares (`models.options`), or one clear error naming the option: an unknown
    one, or a value such as `timeout=NaN` that would fail every request."""
    own = _option_names(backend.__init__)
    wrapper = [name for name in _option_names(Resilient.__init__) if name not in own]
    unknown = sorted(set(options) - set(own) - set(wrapper))
    if unknown:
        raise ModelSpecError(
            f"unknown option(s) {', '.join(unknown)} for {backend.__name__}; "
            f"known: {', '.join([*own, *wrapper])}"
        )
    return (
        check_options(backend.__init__, {k: v for k, v in options.items() if k in own}, kind),
        check_options(Resilient.__init__, {k: v for k, v in options.items() if k not in own}, kind),
    )


__all__ = [
    "JUDGE_SPEC_HELP",
    "SPEC_HELP",
    "SPEC_KINDS",
    "ChatRequest",
    "Completion",
    "Decoding",
    "Model",
    "Resilient",
    "SpecKind",
    "load_model",
]
