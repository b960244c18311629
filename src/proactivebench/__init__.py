"""proactivebench: measure, and train, proactiveness in multimodal LLMs (ProactiveBench).

The public API, as docs/python.md uses it (its reference: docs/api/)::

    from proactivebench import EvalSettings, evaluate, load_model

    outcome = evaluate("data/", load_model("baseline:oracle"), "runs/oracle", EvalSettings())

Everything listed in `__all__` is importable from here; each name lives in the module that
`_EXPORTS` names (docs/architecture.md has the module map). The names are loaded when first
used, so that `import proactivebench` (and the command line's start-up) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name -> the module that defines it.
_EXPORTS = {
    # Running the benchmark
    "evaluate": "proactivebench.runner",
    "aevaluate": "proactivebench.runner",
    "RunOutcome": "proactivebench.runner",
    "EvalSettings": "proactivebench.settings",
    "RunOptions": "proactivebench.settings",
    # Models
    "load_model": "proactivebench.models",
    "Model": "proactivebench.models.base",
    "ChatRequest": "proactivebench.models.base",
    "Completion": "proactivebench.models.base",
    "Decoding": "proactivebench.models.base",
    "ResponseCache": "proactivebench.models.cache",
    "Judge": "proactivebench.judge",
    # Data and episodes
    "load_dataset": "proactivebench.data.layout",
    "make_episode": "proactivebench.registry",
    "register_scenario": "proactivebench.registry",
    "unregister_scenario": "proactivebench.registry",
    "ScenarioInfo": "proactivebench.registry",
    "Episode": "proactivebench.scenarios",
    "Observation": "proactivebench.scenarios",
    "View": "proactivebench.scenarios",
    # Results
    "EpisodeResult": "proactivebench.results",
    "OEGResult": "proactivebench.results",
    "TurnRecord": "proactivebench.results",
    "Summary": "proactivebench.metrics",
    "read_results": "proactivebench.rundir",
    "read_episodes": "proactivebench.rundir",
    "merge_runs": "proactivebench.rundir",
    "write_report": "proactivebench.report",
    # Errors (their hierarchy: proactivebench.errors)
    "ProactiveBenchError": "proactivebench.errors",
    "DataError": "proactivebench.errors",
    "DataErrors": "proactivebench.errors",
    "ModelSpecError": "proactivebench.errors",
    "ModelError": "proactivebench.errors",
    "RunAbort": "proactivebench.errors",
    "RunMismatchError": "proactivebench.errors",
    "DownloadError": "proactivebench.errors",
    "PushError": "proactivebench.errors",
    "HFBackendError": "proactivebench.errors",
    "ImageError": "proactivebench.errors",
    "TrainError": "proactivebench.errors",
    "UserCodeError": "proactivebench.errors",
    "SettingsError": "proactivebench.errors",
    "SuiteFileError": "proactivebench.errors",
    "NothingToDoError": "proactivebench.errors",
    "RunDirError": "proactivebench.errors",
    "NotARunDirError": "proactivebench.errors",
    "DamagedRunError": "proactivebench.errors",
    "RunDirInUseError": "proactivebench.errors",
    "ForeignLinesError": "proactivebench.errors",
    "ServerUnreachableError": "proactivebench.errors",
    "CredentialsMissingError": "proactivebench.errors",
    "TooManyFailuresError": "proactivebench.errors",
    "LaunchError": "proactivebench.errors",
    "WriteError": "proactivebench.errors",
    "LinkRefusedError": "proactivebench.errors",
    "ForeignFileError": "proactivebench.errors",
}

__all__ = [
    "ChatRequest",
    "Completion",
    "CredentialsMissingError",
    "DamagedRunError",
    "DataError",
    "DataErrors",
    "Decoding",
    "DownloadError",
    "Episode",
    "EpisodeResult",
    "EvalSettings",
    "ForeignFileError",
    "ForeignLinesError",
    "HFBackendError",
    "ImageError",
    "Judge",
    "LaunchError",
    "LinkRefusedError",
    "Model",
    "ModelError",
    "ModelSpecError",
    "NotARunDirError",
    "NothingToDoError",
    "OEGResult",
    "Observation",
    "ProactiveBenchError",
    "PushError",
    "ResponseCache",
    "RunAbort",
    "RunDirError",
    "RunDirInUseError",
    "RunMismatchError",
    "RunOptions",
    "RunOutcome",
    "ScenarioInfo",
    "ServerUnreachableError",
    "SettingsError",
    "SuiteFileError",
    "Summary",
    "TooManyFailuresError",
    "TrainError",
    "TurnRecord",
    "UserCodeError",
    "View",
    "WriteError",
    "aevaluate",
    "evaluate",
    "load_dataset",
    "load_model",
    "make_episode",
    "merge_runs",
    "read_episodes",
    "read_results",
    "register_scenario",
    "unregister_scenario",
    "write_report",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'proactivebench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:  # what type checkers and editors see
    from proactivebench.data.layout import load_dataset
    from proactivebench.errors import (
        CredentialsMissingError,
        DamagedRunError,
        DataError,
        DataErrors,
        DownloadError,
        ForeignFileError,
        ForeignLinesError,
        HFBackendError,
        ImageError,
        LaunchError,
        LinkRefusedError,
        ModelError,
        ModelSpecError,
        NotARunDirError,
        NothingToDoError,
        ProactiveBenchError,
        PushError,
        RunAbort,
        RunDirError,
        RunDirInUseError,
        RunMismatchError,
        ServerUnreachableError,
        SettingsError,
        SuiteFileError,
        TooManyFailuresError,
        TrainError,
        UserCodeError,
        WriteError,
    )
    from proactivebench.judge import Judge
    from proactivebench.metrics import Summary
    from proactivebench.models import load_model
    from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
    from proactivebench.models.cache import ResponseCache
    from proactivebench.registry import (
        ScenarioInfo,
        make_episode,
        register_scenario,
        unregister_scenario,
    )
    from proactivebench.report import write_report
    from proactivebench.results import EpisodeResult, OEGResult, TurnRecord
    from proactivebench.rundir import merge_runs, read_episodes, read_results
    from proactivebench.runner import RunOutcome, aevaluate, evaluate
    from proactivebench.scenarios import Episode, Observation, View
    from proactivebench.settings import EvalSettings, RunOptions
