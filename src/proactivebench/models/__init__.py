"""Models behind one protocol, named on the command line by URI-like specs."""

from __future__ import annotations

from typing import Any

from proactivebench.errors import ModelSpecError
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.baselines import BASELINES
from proactivebench.models.replay import Replay

SPEC_HELP = (
    "baseline:oracle|proactive|random|reactive|abstain, replay:FILE, openai:MODEL[@BASE_URL], "
    "hf:PATH_OR_ID, python:MODULE:FUNCTION or python:FILE.py:FUNCTION"
)


def load_model(spec: str, *, seed: int = 0, **options: Any) -> Model:
    """Build the model a spec names, e.g. `baseline:oracle` or `replay:answers.jsonl`."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelSpecError(f"model spec {spec!r} is not KIND:VALUE; known: {SPEC_HELP}")
    if kind in ("baseline", "replay") and options:
        raise ModelSpecError(f"{kind} models take no options (got {', '.join(sorted(options))})")
    if kind == "baseline":
        if rest not in BASELINES:
            raise ModelSpecError(f"unknown baseline {rest!r}; choose from {', '.join(BASELINES)}")
        return BASELINES[rest](seed=seed)
    if kind == "replay":
        return Replay(rest)
    if kind == "openai":
        from proactivebench.models.openai_compat import OpenAICompatible

        return OpenAICompatible.from_spec(rest, seed=seed, **_checked(options, OpenAICompatible))
    if kind == "hf":
        from proactivebench.models.hf import HFModel  # lazy: torch loads only when asked

        return HFModel(rest, seed=seed, **_checked(options, HFModel))
    if kind == "python":
        from proactivebench.models.python_callable import PythonCallable

        return PythonCallable(rest, seed=seed, **_checked(options, PythonCallable))
    raise ModelSpecError(f"unknown model kind {kind!r} in {spec!r}; known: {SPEC_HELP}")


def _checked(options: dict[str, Any], backend: type) -> dict[str, Any]:
    """The options, or one clear error naming those the backend's keyword arguments lack."""
    # Every backend option is a keyword-only argument with a default.
    known = [name for name in backend.__init__.__kwdefaults__ or {} if name != "seed"]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ModelSpecError(
            f"unknown option(s) {', '.join(unknown)} for {backend.__name__}; "
            f"known: {', '.join(known)}"
        )
    return options


__all__ = ["ChatRequest", "Completion", "Decoding", "Model", "load_model"]
