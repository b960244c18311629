"""What this installation knows, for `proactivebench list`: the scenarios (and, given a data
directory, the records of each and how many the official filter keeps), the built-in
baselines, the model spec kinds, the paper's experiments and the optional extras installed.

Every section is read from the one place that declares it (the scenario registry,
`models.BASELINES`, `models.SPEC_KINDS`, `suite.paper_suite()`, the package's own metadata),
so the listing cannot drift from what the commands accept. Nothing heavy is imported: an
extra counts as installed when the top-level module of each of its requirements can be
found (`importlib.util.find_spec`), never imported (torch would take seconds).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from proactivebench.benchmark.registry import scenario, scenario_names
from proactivebench.core.errors import DataError, DataErrors
from proactivebench.data.directory import (
    apply_official_filter,
    is_synthetic,
    read_records,
    scenario_file,
    scenarios_present,
)
from proactivebench.jobs.suite import paper_suite
from proactivebench.models import SPEC_KINDS
from proactivebench.models.baselines import BASELINES
from proactivebench.run.settings import EvalSettings, offered

DISTRIBUTION = "proactivebench"


@dataclass(frozen=True)
class ScenarioEntry:
    short: str
    #: The data file's stem: `<stem>_preprocessed.jsonl` in a data directory.
    stem: str
    file: str
    in_paper: bool
    #: With a data directory: the records its file holds (None: no file for it there).
    records: int | None = None
    #: With a data directory: the records the official test filter keeps of them.
    official: int | None = None


@dataclass(frozen=True)
class ExperimentEntry:
    id: str
    paper: str
    #: The settings it changes from `eval`'s defaults, by their names in settings.py.
    settings: dict[str, Any]


@dataclass(frozen=True)
class ExtraEntry:
    name: str
    installed: bool
    #: The top-level modules of its requirements that cannot be found.
    missing: tuple[str, ...]


@dataclass(frozen=True)
class Catalog:
    scenarios: list[ScenarioEntry]
    baselines: list[dict[str, str]]
    model_kinds: list[dict[str, Any]]
    experiments: list[ExperimentEntry]
    extras: list[ExtraEntry]
    #: The data directory counted, and whether our generator made it (then `eval` plays
    #: every record: the official filter is for the published data).
    data: str | None = None
    synthetic: bool | None = None

    def to_json(self) -> dict[str, Any]:
        """The catalog as `list --json` prints it."""
        return asdict(self)


#: A data directory with no record file: most likely the wrong folder (one above the data, an
#: image folder), whose every count would otherwise show as "-" unsaid.
_NO_RECORDS = (
    "no record file here: a data directory holds one '<stem>_preprocessed.jsonl' per scenario "
    "(e.g. QuickDraw_preprocessed.jsonl); `proactivebench data download` or `data synth` "
    "makes one"
)


def scenario_entries(data_dir: str | os.PathLike[str] | None = None) -> list[ScenarioEntry]:
    """Every registered scenario, in order; with `data_dir`, its records there and how many
    the official filter keeps (a malformed file raises `DataErrors`, as `eval` would; a
    folder without any record file, a `DataError`)."""
    root = None if data_dir is None else Path(data_dir)
    present = set(scenarios_present(root)) if root is not None else set()
    if root is not None and not present:
        raise DataError(_NO_RECORDS, path=str(root))
    entries = []
    for short in scenario_names():
        strings = scenario(short).strings
        records = official = None
        if root is not None and short in present:
            found, problems = read_records(scenario_file(root, short), short)
            if problems:
                raise DataErrors(problems)
            records, official = len(found), len(apply_official_filter(found, short))
        entries.append(
            ScenarioEntry(
                short,
                strings.stem,
                strings.dataset_file,
                scenario(short).in_paper,
                records,
                official,
            )
        )
    return entries


def baseline_entries() -> list[dict[str, str]]:
    """The built-in baselines (`baseline:NAME`) and what each plays, from its docstring."""
    return [
        {"spec": f"baseline:{name}", "doc": _first_line(policy.__doc__)}
        for name, policy in BASELINES.items()
    ]


def model_kind_entries() -> list[dict[str, Any]]:
    """The model spec kinds of `models.SPEC_KINDS`, in its order."""
    return [
        {
            "kind": k.kind,
            "form": k.form,
            "doc": k.doc,
            "eval": k.build is not None,
            "judge": k.judge,
            "extra": k.extra,
        }
        for k in SPEC_KINDS
    ]


def experiment_entries() -> list[ExperimentEntry]:
    """The paper's experiments (the shipped suite), each with the settings it changes."""
    default = EvalSettings()
    names = [s.name for s in offered(EvalSettings, "cli")]
    return [
        ExperimentEntry(
            e.id,
            e.paper,
            {
                name: _plain(getattr(e.settings, name))
                for name in names
                if getattr(e.settings, name) != getattr(default, name)
            },
        )
        for e in paper_suite().experiments
    ]


def extra_entries() -> list[ExtraEntry]:
    """Each optional extra the package declares, and whether its requirements can be imported."""
    metadata = importlib.metadata.metadata(DISTRIBUTION)
    extras = metadata.get_all("Provides-Extra") or []
    requires = metadata.get_all("Requires-Dist") or []
    modules = _modules_of_distributions()
    entries = []
    for extra in extras:
        needed = _requirements(extra, requires, set())
        wanted = [modules.get(_normalise(name), [name.replace("-", "_")]) for name in needed]
        missing = tuple(
            sorted({m for tops in wanted for m in tops if importlib.util.find_spec(m) is None})
        )
        entries.append(ExtraEntry(extra, not missing, missing))
    return entries


def catalog(data_dir: str | os.PathLike[str] | None = None) -> Catalog:
    """Everything `proactivebench list` shows."""
    return Catalog(
        scenarios=scenario_entries(data_dir),
        baselines=baseline_entries(),
        model_kinds=model_kind_entries(),
        experiments=experiment_entries(),
        extras=extra_entries(),
        data=None if data_dir is None else str(data_dir),
        synthetic=None if data_dir is None else is_synthetic(Path(data_dir)),
    )


# ----- helpers ----------------------------------------------------------------------------------

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _requirements(extra: str, requires: list[str], seen: set[str]) -> list[str]:
    """The distribution names `extra` requires, the package's own extras it names expanded
    (`train` requires `proactivebench[hf]`, so torch too)."""
    seen.add(extra)
    names: list[str] = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        found = _EXTRA_MARKER.search(marker)
        if found is None or _normalise(found.group(1)) != _normalise(extra):
            continue
        match = _NAME.match(requirement)
        if match is None:
            continue
        name, inner = match.group(1), match.group(2)
        if _normalise(name) == DISTRIBUTION:
            for sub in (inner or "").split(","):
                if sub.strip() and sub.strip() not in seen:
                    names += _requirements(sub.strip(), requires, seen)
        else:
            names.append(name)
    return names


def _modules_of_distributions() -> dict[str, list[str]]:
    """Installed distributions (normalised names) to their top-level modules (`pyyaml` is
    `yaml`); a requirement not installed is looked for under its own name."""
    modules: dict[str, list[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        if not module.isidentifier():  # a RECORD's "../bin" or a data folder, no module
            continue
        for dist in dists:
            modules.setdefault(_normalise(dist), []).append(module)
    return modules


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _first_line(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _plain(value: Any) -> Any:
    """A setting's value as JSON holds it (tuples as lists, nested settings as dicts)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value
