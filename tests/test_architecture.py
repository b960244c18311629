"""The package's imports run one way: no module imports one that (through others) imports it,
and each layer imports only from the layers below it (docs/architecture.md).

Every import statement counts, at the top of a module, inside a function (a lazy import is
still a dependency) or under `if TYPE_CHECKING:` (it never runs, but a module that needs
another's types depends on it: a circle there is a circle in the design).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "proactivebench"

#: The layers, lowest first; a module may import from its own layer and those below.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "escapes", "paper", "paths", "protocol", "provenance", "ranges", "records", "texts"),
    ("scenarios", "data", "registry"),
    (
        "prompting",
        "models",
        "judge",
        "demonstrations",
        "metrics",
        "stats",
        "results",
        "selected",
        "datarecords",
    ),
    ("settings", "oeg", "oeg_multiturn", "play", "selection", "rundir", "scheduler", "engine"),
    (
        "runner",
        "rejudge",
        "report",
        "train",
        "demo",
        "launch",
        "humanplay",
        "filtering",
        "suite",
        "publish",
    ),
    ("catalog",),
    ("adapters", "testing", "tasks"),
    ("cli", "__main__"),
]


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
    if parts[0] != PACKAGE or len(parts) < 2:
        return None  # the package root, or proactivebench_verifiers: above everything
    for index, names in enumerate(LAYERS):
        if parts[1] in names:
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to the architecture)")


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
    allowed = {"proactivebench.protocol", "proactivebench.records", "proactivebench.errors"}
    for module, targets in graph().items():
        if module.startswith("proactivebench.scenarios"):
            outside = {t for t in targets if not t.startswith("proactivebench.scenarios")}
            assert outside <= allowed, f"{module} imports {sorted(outside - allowed)}"


def test_no_command_module_imports_the_package_that_registers_it() -> None:
    for module, targets in graph().items():
        if module.startswith("proactivebench.cli."):
            assert "proactivebench.cli" not in targets, module
