"""The import contract of DESIGN section 2, read from the source with ``ast`` (nothing imported).

Rules, each a function returning the violations it finds (empty: the rule holds):
- :func:`cycles`: no cycle among module-level imports, those under ``if TYPE_CHECKING:``
  included. A package ``__init__`` is left out: it may only re-export (checked by
  :func:`init_bodies`), and importing a submodule runs it first by Python's rules anyway.
- :func:`ring_violations`: every import, at module level or inside a function, points to a
  component of a lower rank, or to its own component. Ranks (DESIGN section 2, with
  ``encode < {reader, writer}`` because the writer turns Arrow into jobs through ``encode``)::

      {errors, lazy} < format < options < {layout, workers} < {arrow, crypto} < {io, pool}
      < {encode, predicate} < {reader, writer} < live < compaction < skipping < table
      < {dataset, inspect} < {spark, daemon} < cli < testing   (``streamwrite.__main__``: cli)

  (``cli`` sits above ``daemon`` because ``streamwrite serve`` runs it. ``predicate``, the
  filter expressions and their three-valued pruning, sits below the reader because
  ``ParquetFile.read(filters=)`` prunes row groups and pages; ``skipping``, the table's
  skipping store, sits below ``table`` because every commit and compaction maintains it.)
  Two components of one rank do not import each other; ``cli``, ``spark``, ``daemon`` and
  ``testing`` may import the top-level package (the public API), nothing else may.
- :func:`banned_imports`: ring 1 (``format``, ``layout``) and the modules below it import no
  numpy, pyarrow, anyio, cryptography, fsspec or ``workers``; ``workers`` imports no anyio.
- :func:`outer_violations`: ``cli``, ``spark`` and ``daemon`` import only the public API
  (``streamwrite`` itself, ``streamwrite.errors`` and the public subpackages) and their own
  package.
- :func:`longest_chain`: the deepest chain of module-level imports between product modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("streamwrite", "workers")

RANKS: dict[str, int] = {
    "errors": 0,
    "lazy": 0,
    "format": 1,
    "options": 2,
    "layout": 3,
    "workers": 3,
    "arrow": 4,
    "crypto": 4,
    "io": 5,
    "pool": 5,
    "encode": 6,
    "predicate": 6,
    "reader": 7,
    "writer": 7,
    "live": 8,
    "compaction": 9,
    "skipping": 10,
    "table": 11,
    "dataset": 12,
    "inspect": 12,
    "spark": 13,
    "daemon": 13,
    "cli": 14,
    "testing": 15,
}
"""Rank of each component (the first name under ``streamwrite``, or ``workers``)."""

BANNED: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        ("errors", "lazy", "format", "options", "layout"),
        frozenset({"numpy", "pyarrow", "anyio", "cryptography", "fsspec", "workers"}),
    ),
    "workers": frozenset({"anyio", "fsspec", "aiohttp"}),
}
"""Top-level packages a component must not import (third-party, or ``workers``)."""

OUTER = frozenset({"cli", "spark", "daemon"})
PUBLIC_MODULES = frozenset(
    {
        "streamwrite",
        "streamwrite.errors",
        "streamwrite.crypto",
        "streamwrite.daemon",
        "streamwrite.inspect",
        "streamwrite.testing",
        "streamwrite.lazy",
    }
)
"""What the outer components may import of the product, besides their own package
(``streamwrite.lazy`` is the re-export machinery every public package ``__init__`` uses)."""


@dataclass(frozen=True)
class Import:
    """One import statement's target, as found in ``importer``'s source."""

    importer: str
    target: str
    line: int
    module_level: bool


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


def find_modules(root: Path) -> dict[str, Module]:
    """Every module of :data:`PACKAGES` under ``root`` (the repository), by dotted name."""
    modules: dict[str, Module] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            modules[".".join(parts)] = Module(".".join(parts), path, is_package)
    return modules


def _owner(name: str, modules: dict[str, Module]) -> str | None:
    """The module that ``name`` (a module, or a name inside one) belongs to."""
    while name not in modules:
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return name


def _targets(module: Module, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.name.split(".")
        if not module.is_package:
            base.pop()
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join([*base, *([node.module] if node.module else [])])
    else:
        prefix = node.module or ""
    return [f"{prefix}.{alias.name}" for alias in node.names] or [prefix]


def _imports(module: Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of the module, and whether it runs at module level."""

    def walk(
        node: ast.AST, module_level: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, module_level
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, False)
            else:
                yield from walk(child, module_level)

    yield from walk(ast.parse(module.path.read_text(), str(module.path)), True)


def collect(root: Path) -> tuple[dict[str, Module], list[Import], dict[str, set[str]]]:
    """Modules, their imports of product modules, and their third-party top-level imports."""
    modules = find_modules(root)
    found: list[Import] = []
    external: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for node, module_level in _imports(module):
            for target in _targets(module, node):
                owner = _owner(target, modules)
                if owner is None:
                    external[module.name].add(target.split(".")[0])
                elif owner != module.name:
                    found.append(Import(module.name, owner, node.lineno, module_level))
    return modules, found, external


def component(name: str) -> str:
    """``streamwrite.table.core`` -> ``table``; ``workers.chunk`` -> ``workers``."""
    parts = name.split(".")
    if parts[0] == "workers":
        return "workers"
    if len(parts) == 1:
        return "streamwrite"
    return "cli" if parts[1] == "__main__" else parts[1]


def _module_graph(modules: dict[str, Module], found: list[Import]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {n: set() for n, m in modules.items() if not m.is_package}
    for imp in found:
        if imp.module_level and imp.importer in graph and imp.target in graph:
            graph[imp.importer].add(imp.target)
    return graph


def cycles(root: Path) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or self-imports."""
    modules, found, _ = collect(root)
    graph = _module_graph(modules, found)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []

    def visit(start: str) -> None:
        # iterative Tarjan: (node, iterator over its successors)
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    result.append(sorted(members))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return result


def ring_violations(root: Path) -> list[str]:
    """Imports that point outward (to a higher rank, or across one rank)."""
    _, found, _ = collect(root)
    problems = []
    for imp in found:
        source, target = component(imp.importer), component(imp.target)
        if source == "streamwrite" or source == target:
            continue  # the top-level __init__ re-exports lazily
        if target == "streamwrite":
            if source not in OUTER | {"testing"}:
                problems.append(f"{imp.importer}:{imp.line} imports the top-level package")
            continue
        if source not in RANKS or target not in RANKS:
            problems.append(f"{imp.importer}:{imp.line} -> {imp.target}: no rank for it")
        elif RANKS[target] >= RANKS[source]:
            problems.append(
                f"{imp.importer}:{imp.line} imports {imp.target} ({source} rank {RANKS[source]} "
                f"-> {target} rank {RANKS[target]})"
            )
    return problems


def banned_imports(root: Path) -> list[str]:
    """Third-party (or ``workers``) imports a component must not make."""
    modules, found, external = collect(root)
    problems = []
    for name in modules:
        banned = BANNED.get(component(name), frozenset())
        problems += [f"{name} imports {pkg}" for pkg in sorted(external[name] & banned)]
    problems += [
        f"{imp.importer}:{imp.line} imports {imp.target}"
        for imp in found
        if "workers" in BANNED.get(component(imp.importer), frozenset())
        and component(imp.target) == "workers"
    ]
    return problems


def outer_violations(root: Path) -> list[str]:
    """Imports by ``cli``/``spark``/``daemon`` of anything but the public API."""
    _, found, _ = collect(root)
    return [
        f"{imp.importer}:{imp.line} imports {imp.target}"
        for imp in found
        if component(imp.importer) in OUTER
        and imp.target not in PUBLIC_MODULES
        and component(imp.target) != component(imp.importer)
    ]


def init_bodies(root: Path) -> list[str]:
    """Package ``__init__`` modules that do more than re-export."""
    problems = []
    for module in find_modules(root).values():
        if not module.is_package:
            continue
        for node in ast.parse(module.path.read_text()).body:
            allowed = isinstance(
                node, ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign | ast.If
            )
            allowed |= isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            allowed |= isinstance(node, ast.FunctionDef) and node.name in {"__getattr__", "__dir__"}
            if not allowed:
                problems.append(f"{module.name}:{node.lineno} {type(node).__name__}")
    return problems


def longest_chain(root: Path) -> list[str]:
    """The longest chain of module-level imports between product modules (a DAG is assumed)."""
    modules, found, _ = collect(root)
    graph = _module_graph(modules, found)
    best: dict[str, list[str]] = {}

    def chain(name: str, seen: frozenset[str]) -> list[str]:
        if name in best:
            return best[name]
        longest: list[str] = []
        for succ in graph[name]:
            if succ not in seen:
                candidate = chain(succ, seen | {name})
                if len(candidate) > len(longest):
                    longest = candidate
        best[name] = [name, *longest]
        return best[name]

    return max((chain(name, frozenset()) for name in sorted(graph)), key=len)
