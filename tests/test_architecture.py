"""The package's imports run one way: no module imports one that (through others) imports it,
and each layer imports only from the layers below it (docs/architecture.md).

Every import statement counts, at the top of a module, inside a function (a lazy import is
still a dependency) or under `if TYPE_CHECKING:` (it never runs, but a module that needs
another's types depends on it: a circle there is a circle in the design).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "proactivebench"

#: The layers, lowest first: the package's folders, each a layer (docs/architecture.md); a
#: module may import from its own folder and those of the layers below.
LAYERS: list[tuple[str, ...]] = [
    ("core",),
    ("benchmark",),
    ("data",),
    ("models",),
    ("run",),
    ("report",),
    ("train",),
    ("jobs",),
    ("humanplay", "adapters", "testing", "tasks"),
    ("cli",),
]
#: The modules left loose at the top: the public API and `python -m proactivebench`.
LOOSE = {"__init__", "__main__"}
#: At most this many loose modules: the folders are the map.
MAX_LOOSE = 5
#: Folders of data, not code (no layer: nothing imports them).
DATA_FOLDERS = {"spec", "suites", "__pycache__"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in SRC.rglob("*.py")}


def imports_of(path: Path, own: str, known: dict[str, Path]) -> set[str]:
    """The package's modules that `path` imports (a name imported from a package is the
    submodule when one has that name, else the package itself)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in known and m != own}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, name, known) for name, path in known.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2 or parts[1] in LOOSE:
        return None  # the package root and __main__, or proactivebench_verifiers: above all
    for index, names in enumerate(LAYERS):
        if parts[1] in names:
            return index
    raise AssertionError(f"{module} is in no layer's folder: put it in one (docs/architecture.md)")


def test_the_layers_are_the_folders() -> None:
    """Every folder of the package is a layer of LAYERS, every layer a folder, and no more
    than MAX_LOOSE modules lie loose beside them."""
    top = SRC / PACKAGE
    folders = {p.name for p in top.iterdir() if p.is_dir()} - DATA_FOLDERS
    assert folders == {name for names in LAYERS for name in names}
    loose = {p.stem for p in top.glob("*.py")}
    assert loose == LOOSE and len(loose) <= MAX_LOOSE, sorted(loose - LOOSE)


def test_the_finder_sees_a_circle_and_a_lazy_import(tmp_path: Path) -> None:
    """The walker itself: a circle made of a top-level and a function-level import is found;
    an import under TYPE_CHECKING is an edge too."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "import proactivebench.b\n"
        "if TYPE_CHECKING:\n    import proactivebench.c\n"
    )
    (tmp_path / "a.py").write_text(source)
    (tmp_path / "b.py").write_text("def f():\n    from proactivebench import a\n")
    known = {"proactivebench.a": tmp_path / "a.py", "proactivebench.b": tmp_path / "b.py"}
    known["proactivebench.c"] = tmp_path / "c.py"
    a = imports_of(tmp_path / "a.py", "proactivebench.a", known)
    assert a == {"proactivebench.b", "proactivebench.c"}
    cycle = find_cycle({"proactivebench.a": a, "proactivebench.b": {"proactivebench.a"}})
    assert cycle == ["proactivebench.a", "proactivebench.b", "proactivebench.a"]


def test_no_import_circle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_no_upward_import() -> None:
    upward = []
    for module, targets in graph().items():
        here = layer_of(module)
        if here is None:
            continue
        upward += [f"{module} -> {t}" for t in sorted(targets) if (layer_of(t) or 0) > here]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_scenarios_know_nothing_of_models_prompts_or_files() -> None:
    allowed = {
        "proactivebench.benchmark.protocol",
        "proactivebench.benchmark.records",
        "proactivebench.core.errors",
    }
    for module, targets in graph().items():
        if module.startswith("proactivebench.benchmark.scenarios"):
            outside = {t for t in targets if not t.startswith("proactivebench.benchmark.scenarios")}
            assert outside <= allowed, f"{module} imports {sorted(outside - allowed)}"


def test_no_command_module_imports_the_package_that_registers_it() -> None:
    for module, targets in graph().items():
        if module.startswith("proactivebench.cli."):
            assert "proactivebench.cli" not in targets, module


def test_no_file_names_a_module_by_its_earlier_path() -> None:
    """The earlier release's paths (`proactivebench.runner`) are aliases for users, with a
    DeprecationWarning; the project's own code, tests, docs and benchmarks use the new ones."""
    from proactivebench.core.moved import new_name

    dotted = re.compile(r"(?<![\w./])proactivebench(?:\.\w+)+")
    # The short form inside a package, quoted as code: `report.layout`, `data.layout.x`.
    folders = "|".join(name for names in LAYERS for name in names)
    short = re.compile(rf"`((?:{folders})(?:\.\w+)+)")
    found = []
    for where, line in project_lines():
        full = [m[0] for m in dotted.finditer(line)]
        full += [f"{PACKAGE}.{m[1]}" for m in short.finditer(line)]
        found += [f"{where}: {name} (now {new_name(name)})" for name in full if new_name(name)]
    assert not found, "\n".join(found)


def test_every_file_path_named_exists() -> None:
    """A path of ours named in a docstring, comment or doc (`data/layout.py`,
    `proactivebench/errors.py`) names a file that is there: a module moved or renamed leaves
    no pointer to where it was. Paths of other projects and placeholders are not ours."""
    root = SRC.parent
    files = [p.relative_to(root).as_posix() for p in root.rglob("*.py") if ".ci" not in p.parts]
    folders = {name for names in LAYERS for name in names}
    ours = {PACKAGE, "src", "tests", "docs", "benchmarks", "scenarios", *folders}
    path = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w-]+\.py)\b")
    missing = [
        f"{where}: {m[1]}"
        for where, line in project_lines()
        for m in path.finditer(line)
        if m[1].split("/")[0] in ours and not any(f.endswith(m[1]) for f in files)
    ]
    assert not missing, "\n".join(missing)


def project_lines() -> Iterator[tuple[str, str]]:
    """Each line of the project's code, tests, docs and benchmarks ("file:line", text),
    but the alias table and this file, which name the earlier paths on purpose."""
    root = SRC.parent
    kept = {SRC / PACKAGE / "core" / "moved.py", Path(__file__).resolve()}
    paths = [root / "README.md"]
    for folder in ("src", "tests", "docs", "benchmarks"):
        paths += sorted((root / folder).rglob("*"))
    for path in paths:
        if path.suffix not in {".py", ".md", ".toml", ".yaml", ".yml"} or path in kept:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield f"{path.relative_to(root)}:{number}", line


def test_the_earlier_paths_import_the_same_modules_with_a_warning() -> None:
    import importlib
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runner = importlib.import_module("proactivebench.runner")
        base = importlib.import_module("proactivebench.scenarios.base")
    from proactivebench.benchmark.scenarios import base as new_base
    from proactivebench.jobs import evaluate

    assert runner is evaluate and base is new_base
    assert runner.__spec__.name == "proactivebench.jobs.evaluate"
    said = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert "proactivebench.runner moved to proactivebench.jobs.evaluate" in " ".join(said)
