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

from proactivebench.core.moved import install

# The module paths of the earlier release (core/moved.py: MOVED) still import, with a
# DeprecationWarning, for one release (docs/architecture.md).
install()

#: Public name -> the module that defines it.
_EXPORTS = {
    # Running the benchmark
    "evaluate": "proactivebench.jobs.evaluate",
    "aevaluate": "proactivebench.jobs.evaluate",
    "RunOutcome": "proactivebench.jobs.evaluate",
    "EvalSettings": "proactivebench.run.settings",
    "RunOptions": "proactivebench.run.settings",
    # Models
    "load_model": "proactivebench.models",
    "Model": "proactivebench.models.base",
    "ChatRequest": "proactivebench.models.base",
    "Completion": "proactivebench.models.base",
    "Decoding": "proactivebench.models.base",
    "ResponseCache": "proactivebench.models.cache",
    "Judge": "proactivebench.run.judge",
    # Data and episodes
    "load_dataset": "proactivebench.data.directory",
    "make_episode": "proactivebench.benchmark.registry",
    "register_scenario": "proactivebench.benchmark.registry",
    "unregister_scenario": "proactivebench.benchmark.registry",
    "ScenarioInfo": "proactivebench.benchmark.registry",
    "Episode": "proactivebench.benchmark.scenarios",
    "Observation": "proactivebench.benchmark.scenarios",
    "View": "proactivebench.benchmark.scenarios",
    # Results
    "EpisodeResult": "proactivebench.benchmark.results",
    "OEGResult": "proactivebench.benchmark.results",
    "TurnRecord": "proactivebench.benchmark.results",
    "Summary": "proactivebench.benchmark.metrics",
    "read_results": "proactivebench.run.rundir",
    "read_episodes": "proactivebench.run.rundir",
    "merge_runs": "proactivebench.run.rundir",
    "write_report": "proactivebench.report",
    # Errors (their hierarchy: proactivebench.core.errors)
    "ProactiveBenchError": "proactivebench.core.errors",
    "DataError": "proactivebench.core.errors",
    "DataErrors": "proactivebench.core.errors",
    "ModelSpecError": "proactivebench.core.errors",
    "ModelError": "proactivebench.core.errors",
    "RunAbort": "proactivebench.core.errors",
    "RunMismatchError": "proactivebench.core.errors",
    "DownloadError": "proactivebench.core.errors",
    "PushError": "proactivebench.core.errors",
    "HFBackendError": "proactivebench.core.errors",
    "ImageError": "proactivebench.core.errors",
    "TrainError": "proactivebench.core.errors",
    "UserCodeError": "proactivebench.core.errors",
    "SettingsError": "proactivebench.core.errors",
    "SuiteFileError": "proactivebench.core.errors",
    "NothingToDoError": "proactivebench.core.errors",
    "RunDirError": "proactivebench.core.errors",
    "NotARunDirError": "proactivebench.core.errors",
    "DamagedRunError": "proactivebench.core.errors",
    "RunDirInUseError": "proactivebench.core.errors",
    "ForeignLinesError": "proactivebench.core.errors",
    "ServerUnreachableError": "proactivebench.core.errors",
    "CredentialsMissingError": "proactivebench.core.errors",
    "TooManyFailuresError": "proactivebench.core.errors",
    "LaunchError": "proactivebench.core.errors",
    "WriteError": "proactivebench.core.errors",
    "LinkRefusedError": "proactivebench.core.errors",
    "ForeignFileError": "proactivebench.core.errors",
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
    from proactivebench.benchmark.metrics import Summary
    from proactivebench.benchmark.registry import (
        ScenarioInfo,
        make_episode,
        register_scenario,
        unregister_scenario,
    )
    from proactivebench.benchmark.results import EpisodeResult, OEGResult, TurnRecord
    from proactivebench.benchmark.scenarios import Episode, Observation, View
    from proactivebench.core.errors import (
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
    from proactivebench.data.directory import load_dataset
    from proactivebench.jobs.evaluate import RunOutcome, aevaluate, evaluate
    from proactivebench.models import load_model
    from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
    from proactivebench.models.cache import ResponseCache
    from proactivebench.report import write_report
    from proactivebench.run.judge import Judge
    from proactivebench.run.rundir import merge_runs, read_episodes, read_results
    from proactivebench.run.settings import EvalSettings, RunOptions
