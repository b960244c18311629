"""The module paths of the release before the layer folders, kept for one release.

The loose top-level modules moved into `core/`, `benchmark/`, `run/` and `jobs/`, and seven were
renamed where names collided (`MOVED`; three of them inside `data/` and `report/`); a user's
`import proactivebench.runner` or `from proactivebench.scenarios.base import Episode` still
works, with a `DeprecationWarning` naming the new path, and gives the very module (one object
under both names: a class of one is the class of the other). Removed in the next release."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

#: Old path (under `proactivebench.`) -> new path; a package's modules follow it.
MOVED: dict[str, str] = {
    "errors": "core.errors",
    "escapes": "core.escapes",
    "paths": "core.paths",
    "provenance": "core.provenance",
    "texts": "core.texts",
    "stats": "core.stats",
    "ranges": "core.ranges",
    "protocol": "benchmark.protocol",
    "paper": "benchmark.paper_results",
    "records": "benchmark.records",
    "registry": "benchmark.registry",
    "scenarios": "benchmark.scenarios",
    "prompting": "benchmark.prompting",
    "demonstrations": "benchmark.demonstrations",
    "results": "benchmark.results",
    "metrics": "benchmark.metrics",
    "settings": "run.settings",
    "selection": "run.selection",
    "selected": "run.selection_record",
    "datarecords": "run.datarecords",
    "judge": "run.judge",
    "oeg": "run.oeg",
    "oeg_multiturn": "run.oeg_multiturn",
    "play": "run.play_episode",
    "scheduler": "run.scheduler",
    "engine": "run.engine",
    "rundir": "run.rundir",
    "runner": "jobs.evaluate",
    "rejudge": "jobs.rejudge",
    "launch": "jobs.launch",
    "suite": "jobs.suite",
    "filtering": "jobs.filtering",
    "publish": "jobs.publish",
    "demo": "jobs.demo",
    "catalog": "jobs.catalog",
    "data.layout": "data.directory",
    "report.text": "report.inert",
    "report.layout": "report.paper_layout",
}

PACKAGE = "proactivebench"


def new_name(name: str) -> str | None:
    """The module's path now, for a path of the earlier release (None: not a moved one)."""
    if not name.startswith(PACKAGE + "."):
        return None
    rest = name[len(PACKAGE) + 1 :]
    for old, new in MOVED.items():
        if rest == old or rest.startswith(old + "."):
            return f"{PACKAGE}.{new}{rest[len(old) :]}"
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module at its new path: the same object, under both names."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old path's spec on it: the module keeps its own.
        module.__spec__ = self.spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Put the finder first on `sys.meta_path` (once): before the path finder, which would
    find a submodule of an old package path as a second copy of the module."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
