"""The import graph of dpcore: no cycle anywhere in the package, no model that imports the run
store, and no run-store module that imports the jobs.

Why: imports point down only (docs/architecture.md's layers). A cycle hidden in a function body
(safety.py importing store.py, which imports safety.py) still ties two modules into one concept, a
model reaching up into `dpcore.runs` makes the models unusable without the run store, and the run
store reaching up into `dpcore.jobs` (the runner, the queue, the sweeps) makes opening a saved run
load the machinery that trains one. So every
import counts here, at module level or inside a function; only `if TYPE_CHECKING:` blocks do not.
`from pkg import x` reads pkg's namespace, so it counts as importing the package `__init__` too
(and x, when x is a module): a module that its own package's `__init__` imports and that imports
through that `__init__` is a cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dpcore"


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
            found.add(base)  # the package's __init__ runs, or is read, whatever is imported from it
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules)
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


def test_no_import_cycle_in_dpcore():
    found = [sorted(c) for c in cycles(import_graph())]
    assert not found, f"import cycles in dpcore: {found}"


def test_models_do_not_import_the_run_store():
    graph = import_graph()
    bad = {m: sorted(t for t in targets if _inside(t, "dpcore.runs"))
           for m, targets in graph.items() if _inside(m, "dpcore.models")}
    assert not {m: t for m, t in bad.items() if t}, bad


def test_the_run_store_does_not_import_the_jobs():
    graph = import_graph()
    store = [m for m in graph if _inside(m, "dpcore.runs")]
    assert "dpcore.runs.store" in store and "dpcore.jobs.runner" in graph  # both packages are seen
    bad = {m: sorted(t for t in graph[m] if _inside(t, "dpcore.jobs")) for m in store}
    assert not {m: t for m, t in bad.items() if t}, bad


def test_the_check_sees_a_cycle_and_a_hidden_import():
    """The graph counts an import inside a function and a package `__init__` read by `from pkg import`,
    and `cycles` finds a three-module loop."""
    graph = import_graph()
    assert "dpcore.runs.store" in graph["dpcore.runs.folders"]
    assert "dpcore.models.saved" in graph["dpcore.runs.safety"]  # imported in a function body
    assert "dpcore.privacy" not in graph["dpcore.runs.safety"]  # `from dpcore.privacy.x import` names x only,
    assert "dpcore.classroom" in graph["dpcore.ui.workspace"]  # `from dpcore.classroom import y` the __init__
    loop = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(loop) == [frozenset("abc")]
