"""The package's modules that this environment cannot import still have their imports from the
package checked here.

A module that needs, at import time, a third-party package this environment lacks (the lmms-eval
task, `adapters/lmms_eval_task.py`, without `lmms_eval`: CI tests it in a venv of its own,
.ci/run) is never imported by this suite, so a name renamed or removed elsewhere in the package
would break it unseen. For each such module, found from the source (its module-level imports,
and those of the package's modules it imports, against what is installed here), every
`proactivebench` module it imports must exist and every name it imports from one must be
defined there: wherever it is imported, at the top or inside a function.

Checked: `import proactivebench.X` and `from proactivebench.X import NAME` (NAME an attribute of
X or a submodule). Not checked: attributes used through an imported module (`X.NAME`).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

from test_architecture import PACKAGE, modules


def runs_at_import(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that importing the module runs whatever happens: those of its top
    level (not under `if` — `TYPE_CHECKING` never runs — nor guarded by `try`)."""
    return [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]


def imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules one statement imports (for `from X import a`, X and, were it one, X.a)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []  # relative: the package has none
    return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]


def is_installed(name: str) -> bool:
    """Whether the top-level package of `name` (outside ours) can be found here."""
    top = name.split(".")[0]
    return top in sys.stdlib_module_names or importlib.util.find_spec(top) is not None


def unimportable(known: dict[str, Path]) -> dict[str, str]:
    """The modules of `known` that cannot be imported here, each with why: the missing
    third-party package it imports at its top, or the package's module it imports (or the
    package it is in) that cannot be imported itself."""
    needs: dict[str, set[str]] = {}
    missing: dict[str, str] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = {m for node in runs_at_import(tree) for m in imported_modules(node)}
        parents = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}
        needs[name] = {m for m in own | parents if m in known and m != name}
        lacking = sorted(m for m in own if m.split(".")[0] != PACKAGE and not is_installed(m))
        if lacking:
            missing[name] = f"needs {lacking[0].split('.')[0]}"
    changed = True
    while changed:  # what needs a module that cannot be imported cannot be imported either
        changed = False
        for name, wanted in needs.items():
            blocked = sorted(wanted & missing.keys())
            if name not in missing and blocked:
                missing[name] = f"needs {blocked[0]}"
                changed = True
    return missing


def top_level_names(path: Path) -> set[str]:
    """What a module defines at its top (functions, classes, assignments, imports, also under
    `if` and `try`), read from its source: for a module of the package that cannot be imported
    here either."""
    names: set[str] = set()
    pending: list[ast.stmt] = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.If | ast.Try | ast.With):
            pending += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                pending += handler.body
    return names


def broken_imports(path: Path, known: dict[str, Path], cannot: set[str]) -> list[str]:
    """Every import of `path` from the package that would fail: a module that is not among
    the package's (`known`, from the source tree), a name its module does not define. A
    module of `cannot` is read, not imported."""
    broken: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE and alias.name not in known:
                    broken.append((node.lineno, f"no module {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            source = node.module or ""
            if source in cannot:
                defined = top_level_names(known[source])
            elif source in known:
                defined = set(dir(importlib.import_module(source)))
            else:
                broken.append((node.lineno, f"no module {source}"))
                continue
            for alias in node.names:
                name = alias.name
                if name not in defined and not hasattr_lazily(source, name, known, cannot):
                    broken.append((node.lineno, f"{source} has no {name}"))
    return [f"line {line}: {what}" for line, what in sorted(broken)]


def hasattr_lazily(source: str, name: str, known: dict[str, Path], cannot: set[str]) -> bool:
    """A name `dir` does not list but `from source import name` finds all the same: a
    submodule, or one a package's `__getattr__` loads on first use."""
    if f"{source}.{name}" in known:
        return True
    return source not in cannot and hasattr(importlib.import_module(source), name)


KNOWN = modules()
CANNOT = unimportable(KNOWN)


def test_the_finder_follows_missing_packages_through_the_package(tmp_path: Path) -> None:
    """A module that imports a missing package at its top cannot be imported, nor one that
    imports it, nor a module of a package whose `__init__` cannot; an import under
    TYPE_CHECKING, in a `try`, inside a function or of an installed package does not count."""
    files = {
        "proactivebench.a": "import no_such_dist_pb.sub\n",
        "proactivebench.b": "from proactivebench.a import thing\n",
        "proactivebench.c": (
            "from typing import TYPE_CHECKING\nimport json\nimport pytest\n"
            "if TYPE_CHECKING:\n    import no_such_dist_pb\n"
            "try:\n    import no_such_dist_pb\nexcept ImportError:\n    pass\n"
            "def f():\n    import no_such_dist_pb\n"
        ),
        "proactivebench.d": "from proactivebench import c\n",
        "proactivebench.e": "from proactivebench import b\n",
        "proactivebench.e.inner": "x = 1\n",
    }
    known = {}
    for name, source in files.items():
        known[name] = tmp_path / f"{name}.py"
        known[name].write_text(source)
    assert unimportable(known) == {
        "proactivebench.a": "needs no_such_dist_pb",
        "proactivebench.b": "needs proactivebench.a",
        "proactivebench.e": "needs proactivebench.b",
        "proactivebench.e.inner": "needs proactivebench.e",
    }


def test_the_checker_names_each_broken_import(tmp_path: Path) -> None:
    """Renamed names, missing modules and names of a module read from its source are told,
    with their lines; a submodule, a lazily exported name and what exists pass."""
    other = tmp_path / "other.py"
    other.write_text("import json\nfrom x import y as z\nclass Kept: ...\nLIMIT: int = 3\n")
    module = tmp_path / "mod.py"
    module.write_text(
        "from proactivebench.benchmark.metrics import rate_of, rate_off\n"
        "import proactivebench.no_such_module\n"
        "def later():\n"
        "    from proactivebench.no_such_package.inner import x\n"
        "    from proactivebench.data import images\n"
        "    from proactivebench import evaluate, benchmark\n"
        "    from proactivebench.other import Kept, LIMIT, z, json, Gone\n"
    )
    known = {**KNOWN, "proactivebench.other": other}
    assert broken_imports(module, known, {"proactivebench.other"}) == [
        "line 1: proactivebench.benchmark.metrics has no rate_off",
        "line 2: no module proactivebench.no_such_module",
        "line 4: no module proactivebench.no_such_package.inner",
        "line 7: proactivebench.other has no Gone",
    ]


def test_the_lmms_eval_task_is_checked_where_lmms_eval_is_missing() -> None:
    """The case that happened: without lmms_eval the task module is among those checked."""
    if importlib.util.find_spec("lmms_eval") is not None:
        pytest.skip("lmms_eval is installed: the task is imported by its own tests")
    assert CANNOT["proactivebench.adapters.lmms_eval_task"] == "needs lmms_eval"


@pytest.mark.parametrize("name", sorted(CANNOT))
def test_imports_from_the_package_resolve(name: str) -> None:
    """Everything the module imports from ours exists, and the module indeed fails to import
    here for want of a package outside ours (else its own tests would import it)."""
    broken = broken_imports(KNOWN[name], KNOWN, set(CANNOT))
    assert not broken, f"{name} ({CANNOT[name]}, so no test imports it):\n" + "\n".join(broken)
    with pytest.raises(ModuleNotFoundError) as failed:
        importlib.import_module(name)
    assert (failed.value.name or PACKAGE).split(".")[0] != PACKAGE, failed.value
