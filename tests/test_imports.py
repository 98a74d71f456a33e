r"""The import graph of ``botorch_sketch``: no cycles, and the layers it promises.

Every module's imports are read from its source with ``ast`` (nothing is
imported): ``import`` and ``from ... import`` statements at module level and
inside functions and classes, relative ones resolved against the importing
module's package. ``from package import name`` is an import of the submodule
``package.name`` where that is a module, else of ``package``; an import of a
package is an import of its ``__init__``. Imports under ``if TYPE_CHECKING:``
run no code and are left out.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = "botorch_sketch"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE
SKETCHING = f"{PACKAGE}.sketching"
#: Packages of ``botorch_sketch`` that build on ``sketching`` and that it must
#: not import, not even through another module.
ABOVE_SKETCHING = (
    "models",
    "bo",
    "bandits",
    "acquisition",
    "integrations",
    "tune",
)
#: The layers of ``sketching``: each subpackage and what it may import besides
#: itself (``embedding`` <- ``posterior`` <- ``rules`` <- ``online``, and
#: ``posterior`` <- ``linear``).
SKETCHING_LAYERS = {
    "embedding": set(),
    "posterior": {"embedding"},
    "rules": {"embedding", "posterior"},
    "online": {"embedding", "posterior", "rules"},
    "linear": {"embedding", "posterior"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _is_package(module: str) -> bool:
    return _modules()[module].name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    # Every import statement, at any depth, except under ``if TYPE_CHECKING:``
    # (its ``else`` branch does run).
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _resolve(module: str, node: ast.ImportFrom) -> str:
    # The absolute name of ``from <node.module> import ...`` in ``module``.
    if node.level == 0:
        return node.module or ""
    package = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _known(name: str) -> str | None:
    # The module of the package that ``name`` is (None outside the package).
    return name if name in _modules() else None


@cache
def _graph() -> dict[str, dict[str, int]]:
    # module -> {imported module: line of the first such import}.
    graph: dict[str, dict[str, int]] = {}
    for module, path in _modules().items():
        edges: dict[str, int] = {}
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in _import_nodes(tree):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_known(alias.name) for alias in node.names]
            else:
                base = _resolve(module, node)
                for alias in node.names:
                    sub = _known(f"{base}.{alias.name}")
                    targets.append(sub if sub is not None else _known(base))
            for target in targets:
                if target is not None and target != module:
                    edges.setdefault(target, node.lineno)
        graph[module] = edges
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    # One cycle through each strongly connected component of more than one
    # module.
    return [_cycle_in(graph, set(c)) for c in _components(graph)]


def _components(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    # The strongly connected components of more than one module (Tarjan's
    # algorithm, iterative).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _cycle_in(graph: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    # A shortest cycle through the component's first module (breadth first).
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in component:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover


def _describe(path: list[str]) -> str:
    graph = _graph()
    steps = [
        f"{a} -> {b} (line {graph[a][b]} of {_modules()[a].relative_to(ROOT.parent)})"
        for a, b in zip(path, path[1:], strict=False)
    ]
    return "\n    ".join(steps)


def _path_to(start: str, wanted) -> list[str] | None:
    # A shortest import path from ``start`` to a module for which ``wanted``.
    graph = _graph()
    previous: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child in previous:
                    continue
                previous[child] = node
                if wanted(child):
                    path = [child]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return path[::-1]
                following.append(child)
        frontier = following
    return None


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_covers_the_package():
    graph = _graph()
    assert f"{SKETCHING}.posterior.weight_posterior" in graph
    # Resolution: absolute, relative, ``from package import submodule``.
    assert f"{SKETCHING}.posterior" in graph[SKETCHING]
    assert f"{SKETCHING}.posterior.statistics" in graph[f"{SKETCHING}.posterior"]


def test_cycle_detection_reports_the_path():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


def test_no_import_cycles():
    graph = _graph()
    components = _components(graph)
    message = "\n".join(
        f"import cycle (one of those among {', '.join(component)}):\n    "
        + _describe(_cycle_in(graph, set(component)))
        for component in components
    )
    assert not components, message


@pytest.mark.parametrize("package", ABOVE_SKETCHING)
def test_sketching_imports_nothing_from_the_packages_above_it(package):
    # Each import that leaves sketching on a way to the package, with the way.
    above = f"{PACKAGE}.{package}"
    graph = _graph()
    found = []
    for module in sorted(graph):
        if not _in(module, SKETCHING):
            continue
        for target in sorted(graph[module]):
            if _in(target, SKETCHING):
                continue
            if _in(target, above):
                path = [module, target]
            else:
                rest = _path_to(target, lambda name: _in(name, above))
                path = None if rest is None else [module, *rest]
            if path is not None:
                found.append(_describe(path))
    assert not found, f"{SKETCHING} reaches {above}:\n    " + "\n\n    ".join(found)


def test_sketching_subpackages_import_only_the_layers_below_them():
    wrong = []
    for module, edges in sorted(_graph().items()):
        if not _in(module, SKETCHING) or module == SKETCHING:
            continue
        layer = module.split(".")[2]
        assert layer in SKETCHING_LAYERS, f"{module} is in no layer"
        allowed = SKETCHING_LAYERS[layer] | {layer}
        for target in edges:
            if _in(target, SKETCHING):
                other = target.split(".")[2] if target != SKETCHING else None
                if other not in allowed:
                    wrong.append(_describe([module, target]))
    assert not wrong, "imports against the layering:\n    " + "\n    ".join(wrong)


def test_sketching_modules_import_modules_not_subpackages():
    # Inside sketching, a module imports another by its full module path: an
    # import through a subpackage's ``__init__`` runs every module it exports.
    wrong = []
    for module, edges in sorted(_graph().items()):
        if not _in(module, SKETCHING) or _is_package(module):
            continue
        for target in edges:
            if _in(target, SKETCHING) and _is_package(target):
                wrong.append(_describe([module, target]))
    assert not wrong, "imports through a package:\n    " + "\n    ".join(wrong)
