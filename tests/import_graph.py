"""The import graph of a package, read from its source with ``ast`` (nothing is imported).

Shared by ``tests/test_architecture.py`` (the layer contract) and
``tools/architecture_report.py`` (module sizes and import cycles). Every import
statement counts wherever it is written: at module level, inside a function or
class, or under ``if TYPE_CHECKING:`` (each edge says which), because a lazy
import is a dependency all the same. Relative imports are resolved against the
importing module's package. ``from a import b`` is an edge to the module
``a.b`` when that module exists in the package, else to ``a``. Importing
``a.b`` is not counted as importing the package ``a`` (its ``__init__``), the
convention import-linter follows too: otherwise every submodule would form a
cycle with its own package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: Folders inside the package that hold data, not code.
SKIP_DIRS = ("__pycache__", "_data")


@dataclass(frozen=True, order=True)
class Import:
    """One import statement's edge: ``source`` imports ``target`` at ``path``:``line``."""

    source: str
    target: str
    path: str
    line: int
    #: "module" (runs on import), "function" (inside a def or class body, runs
    #: when called) or "type-checking" (under ``if TYPE_CHECKING:``, never runs)
    kind: str

    def describe(self) -> str:
        where = {"module": "", "function": " (inside a function)", "type-checking": " (under TYPE_CHECKING)"}
        return f"{self.path}:{self.line}: {self.source} imports {self.target}{where[self.kind]}"


@dataclass(frozen=True)
class Package:
    """The modules of one package: name -> source file, lines, and the import edges inside the package."""

    root: Path
    name: str
    files: dict[str, Path]
    lines: dict[str, int]
    imports: tuple[Import, ...]

    def edges(self, kinds: Iterable[str] = ("module", "function", "type-checking")) -> dict[str, set[str]]:
        """Adjacency of the package's own modules (imports of other distributions left out)."""
        wanted = set(kinds)
        graph: dict[str, set[str]] = {m: set() for m in self.files}
        for imp in self.imports:
            if imp.kind in wanted and imp.target in self.files:
                graph[imp.source].add(imp.target)
        return graph

    def cycles(self, kinds: Iterable[str] = ("module", "function", "type-checking")) -> list[list[str]]:
        """Strongly connected components of more than one module (or a module importing itself), largest first."""
        graph = self.edges(kinds)
        found = [sorted(c) for c in strongly_connected(graph) if len(c) > 1 or next(iter(c)) in graph[next(iter(c))]]
        return sorted(found, key=lambda c: (-len(c), c))


    def shortest_cycle(self, start: str, kinds: Iterable[str] = ("module", "function", "type-checking")) -> list[Import]:
        """The fewest imports that lead from ``start`` back to itself (empty when there is no such cycle)."""
        wanted = set(kinds)
        first: dict[tuple[str, str], Import] = {}
        for imp in self.imports:
            if imp.kind in wanted and imp.target in self.files:
                first.setdefault((imp.source, imp.target), imp)
        graph = self.edges(kinds)
        came: dict[str, str] = {}
        frontier = [start]
        while frontier:
            following: list[str] = []
            for node in frontier:
                for nxt in sorted(graph[node]):
                    if nxt == start:
                        path = [node]
                        while path[-1] != start:
                            path.append(came[path[-1]])
                        hops = [start, *reversed(path[:-1]), start] if node != start else [start, start]
                        return [first[(a, b)] for a, b in zip(hops, hops[1:])]
                    if nxt not in came:
                        came[nxt] = node
                        following.append(nxt)
            frontier = following
        return []


def module_name(root: Path, package: str, path: Path) -> str:
    """``root/calc/rolling.py`` -> ``policylint.calc.rolling``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module named by a ``from`` import (``from . import x`` -> the package)."""
    if not node.level:
        return node.module or ""
    base = source.split(".") if is_package else source.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of a module, with where it runs."""

    def walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, kind
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                yield from walk(child, "type-checking" if kind == "type-checking" else "function")
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), "type-checking")
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), kind)
            else:
                yield from walk(child, kind)

    yield from walk(tree, "module")


def read_package(root: Path, name: str | None = None) -> Package:
    """Parse every module under ``root`` (the package folder) and collect its imports."""
    root = Path(root)
    package = name or root.name
    files: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        if any(part in SKIP_DIRS for part in path.relative_to(root).parts):
            continue
        files[module_name(root, package, path)] = path
    lines: dict[str, int] = {}
    imports: list[Import] = []
    for source, path in files.items():
        text = path.read_text(encoding="utf-8")
        lines[source] = len(text.splitlines())
        shown = path.relative_to(root.parent).as_posix()
        is_package = path.name == "__init__.py"
        for node, kind in _statements(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(source, is_package, node)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names
                ]
            for target in dict.fromkeys(targets):
                imports.append(Import(source, target, shown, node.lineno, kind))
    return Package(root, package, files, lines, tuple(sorted(imports)))


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
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
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                found.append(component)
    return found


def in_layer(module: str, prefixes: Iterable[str]) -> bool:
    """Whether ``module`` is one of ``prefixes`` or inside one of them (a package)."""
    return any(module == p or module.startswith(p + ".") for p in prefixes)
