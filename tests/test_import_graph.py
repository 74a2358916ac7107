"""The import graph of dpcore: no cycle inside the run store (dpcore.runs) or the data layer
(dpcore.data), and no model that imports the run store.

Why: imports point down only (DESIGN.md's layers). A cycle hidden in a function body (safety.py
importing store.py, which imports safety.py) still ties two modules into one concept, and a model
reaching up into `dpcore.runs` makes the models unusable without the run store. So every import
counts here, at module level or inside a function; only `if TYPE_CHECKING:` blocks do not.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpcore"
CHECKED = ("dpcore.runs", "dpcore.data")
# Cycles known and accepted (none today: the sweep ↔ sweep_ray one went with the one job runner).
KNOWN_CYCLES: list[frozenset[str]] = []


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _type_checking(node) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path, modules: dict) -> set[str]:
    """The dpcore modules `name` imports anywhere in its body (a `from pkg import sub` names sub)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))
    return out


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("package", CHECKED)
def test_no_import_cycle_inside(package):
    found = [c for c in cycles(import_graph()) if any(_inside(m, package) for m in c)]
    new = [sorted(c) for c in found if c not in KNOWN_CYCLES]
    assert not new, f"import cycles through {package}: {new}"


def test_models_do_not_import_the_run_store():
    graph = import_graph()
    bad = {m: sorted(t for t in targets if _inside(t, "dpcore.runs"))
           for m, targets in graph.items() if _inside(m, "dpcore.models")}
    assert not {m: t for m, t in bad.items() if t}, bad


def test_the_check_sees_a_cycle_and_a_hidden_import():
    """The graph counts an import inside a function, and `cycles` finds a three-module loop."""
    graph = import_graph()
    assert "dpcore.runs.store" in graph["dpcore.runs.folders"]
    assert "dpcore.models.saved" in graph["dpcore.runs.safety"]  # imported in a function body
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(loop) == [frozenset("abc")]
