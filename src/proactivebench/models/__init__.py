"""Models behind one protocol, named on the command line by URI-like specs."""

from __future__ import annotations

from proactivebench.errors import ModelSpecError
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.baselines import BASELINES
from proactivebench.models.replay import Replay

SPEC_HELP = "baseline:oracle|random|reactive|abstain, replay:FILE"


def load_model(spec: str, *, seed: int = 0) -> Model:
    """Build the model a spec names, e.g. `baseline:oracle` or `replay:answers.jsonl`."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelSpecError(f"model spec {spec!r} is not KIND:VALUE; known: {SPEC_HELP}")
    if kind == "baseline":
        if rest not in BASELINES:
            raise ModelSpecError(f"unknown baseline {rest!r}; choose from {', '.join(BASELINES)}")
        return BASELINES[rest](seed=seed)
    if kind == "replay":
        return Replay(rest)
    raise ModelSpecError(f"unknown model kind {kind!r} in {spec!r}; known: {SPEC_HELP}")


__all__ = ["ChatRequest", "Completion", "Decoding", "Model", "load_model"]
