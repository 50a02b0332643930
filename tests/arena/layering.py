"""The import graph of ``arena`` and ``referee``, read from the source (``ast``), and the layers it must keep.

Kept apart from the tests so that a planted upward import can be checked against the same rules
(``test_arena_layers.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The arena's layers, bottom up: a unit (a package, or a module at the top of ``arena``) imports only units of
# its own rank or below. docs/arena.md draws the same map.
ARENA_RANKS: Mapping[str, int] = {
    "arena": 0,  # the package root re-exports the model's errors
    "arena.model": 0,
    "arena.sandbox": 1,
    "arena.store": 2,
    "arena.metrics": 3,
    "arena.bots": 4,
    "arena.rating": 5,
    "arena.play": 6,
    "arena.views": 7,
    "arena.service": 8,
    "arena.api": 9,
    "arena.web": 9,
    "arena.cli": 10,
}
# The referee: the pure engine at the top of the package, the match machinery and the command line above it.
REFEREE_RANKS: Mapping[str, int] = {"referee": 0, "referee.match": 1, "referee.cli": 2, "referee.command": 2}


@dataclass(frozen=True)
class Import:
    importer: str  # a module's dotted name
    imported: str  # the dotted name it imports (a module, or a name in one)
    line: int


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(name: str, source: str, is_package: bool = False) -> list[Import]:
    """Every import statement of a module, at any depth (a function's lazy import counts too), but not the
    ones under ``if TYPE_CHECKING:``, which never run."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    package = name if is_package else name.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.extend(Import(name, a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found.append(Import(name, base, node.lineno))
            found.extend(Import(name, f"{base}.{a.name}", node.lineno) for a in node.names)
    return found


def read_tree(*tops: str, root: Path = ROOT) -> dict[str, tuple[str, bool]]:
    """Module name -> (source, is a package) of every module under the given top-level packages."""
    return {
        module_name(p, root): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for top in tops
        for p in sorted((root / top).rglob("*.py"))
    }


def unit_of(name: str, ranks: Mapping[str, int]) -> str | None:
    """The longest unit of ``ranks`` that ``name`` is in."""
    best = None
    for unit in ranks:
        if (name == unit or name.startswith(unit + ".")) and (best is None or len(unit) > len(best)):
            best = unit
    return best


def upward_imports(modules: Mapping[str, tuple[str, bool]], ranks: Mapping[str, int]) -> list[str]:
    """Each import of a higher layer by a lower one, as ``importer:line imports imported (rank a < b)``."""
    out = []
    for name, (source, is_package) in modules.items():
        mine = unit_of(name, ranks)
        if mine is None:
            out.append(f"{name} is in no layer: give its package a rank")
            continue
        for imp in imports_of(name, source, is_package):
            theirs = unit_of(imp.imported, ranks)
            if theirs is not None and ranks[theirs] > ranks[mine]:
                out.append(
                    f"{name}:{imp.line} imports {imp.imported}"
                    f" ({mine} is layer {ranks[mine]}, {theirs} {ranks[theirs]})"
                )
    return sorted(set(out))


def cycles(modules: Mapping[str, tuple[str, bool]]) -> list[list[str]]:
    """The circles of the module graph (strongly connected components of more than one module)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (source, is_package) in modules.items():
        for imp in imports_of(name, source, is_package):
            target = imp.imported if imp.imported in modules else imp.imported.rpartition(".")[0]
            # A package's __init__ re-exporting its own modules is not a circle of the code.
            if target in modules and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return _strongly_connected(graph)


def _strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the graph is small, so recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found
