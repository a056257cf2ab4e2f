"""The import graph of the project's own packages, read from their source with `ast`.

Every import of one of our modules counts, wherever it is written: at module level, inside
a function or method, under `if TYPE_CHECKING:`. An import moved into a function still ties
the two modules together; it only postpones the failure to the first call.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

# Importing one of these means the module declares cloud or cluster resources.
RESOURCE_PACKAGES = frozenset({"pulumi_kubernetes", "pulumi_openstack", "pulumi_random"})


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}  ({self.file}:{self.line}: {self.text})"


@dataclass
class Module:
    name: str
    file: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.file.name == "__init__.py"


def load_modules(root: Path, packages: Mapping[str, str]) -> dict[str, Module]:
    """Every module of the packages (import name -> directory under root), by dotted name."""
    modules = {}
    for package, folder in packages.items():
        for file in sorted((root / folder).rglob("*.py")):
            parts = (package, *file.relative_to(root / folder).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = Module(name, file, ast.parse(file.read_text(), filename=str(file)))
    return modules


def _ours(name: str, modules: dict[str, Module]) -> Optional[str]:
    """The module an import of `name` loads, if it is ours: the longest prefix we hold
    (`from pkg.mod import func` loads pkg.mod)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def _imported(module: Module, node: ast.stmt, modules: dict[str, Module]) -> list[str]:
    """Our modules one import statement loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
            anchor = package[: len(package) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        # `from pkg import name` loads the module pkg.name when there is one, else pkg itself.
        names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    found = (_ours(n, modules) for n in names)
    return sorted({m for m in found if m is not None})


def import_edges(modules: dict[str, Module], root: Path) -> list[Edge]:
    edges = []
    for module in modules.values():
        lines = module.file.read_text().splitlines()
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(module, node, modules):
                    edges.append(Edge(module.name, target, str(module.file.relative_to(root)), node.lineno,
                                      lines[node.lineno - 1].strip()))
    return edges


def _components(nodes: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(succ.get(start, ())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(succ.get(target, ()))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(sorted(component))
    return out


def _path(edges: list[Edge], start: str, goal: str, within: Optional[set[str]] = None) -> Optional[list[Edge]]:
    """The shortest chain of imports from start to goal (through `within` only, if given)."""
    by_source: dict[str, list[Edge]] = {}
    for e in edges:
        if within is None or (e.source in within and e.target in within):
            by_source.setdefault(e.source, []).append(e)
    came: dict[str, Edge] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for e in by_source.get(node, ()):
            if e.target == goal:
                chain = [e]
                while chain[0].source != start:
                    chain.insert(0, came[chain[0].source])
                return chain
            if e.target not in came and e.target != start:
                came[e.target] = e
                queue.append(e.target)
    return None


def cycles(edges: list[Edge]) -> list[list[Edge]]:
    """Every self-import, and for each import between two modules of one strongly connected
    component the shortest cycle through it (each cycle once); each cycle is the chain of
    imports in order, the last one closing it."""
    succ: dict[str, list[str]] = {}
    for e in edges:
        succ.setdefault(e.source, []).append(e.target)
    nodes = sorted(set(succ) | {e.target for e in edges})
    found = [[e] for e in edges if e.source == e.target]
    seen: set[frozenset[Edge]] = set()
    for component in _components(nodes, succ):
        members = set(component)
        for e in edges:
            if len(members) > 1 and e.source in members and e.target in members and e.source != e.target:
                cycle = [e, *_path(edges, e.target, e.source, members)]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append(cycle)
    return found


def format_cycle(cycle: list[Edge]) -> str:
    members = " -> ".join([cycle[0].source, *(e.target for e in cycle)])
    steps = "\n".join(f"    {e}" for e in cycle)
    return f"{members}\n{steps}\n  closed by {cycle[-1].file}:{cycle[-1].line}"


def reachable(edges: list[Edge], start: str) -> set[str]:
    """Every module start imports, directly or through others (start excluded)."""
    seen: set[str] = set()
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for e in edges:
            if e.source == node and e.target not in seen and e.target != start:
                seen.add(e.target)
                queue.append(e.target)
    return seen


def import_chain(edges: list[Edge], start: str, goal: str) -> list[Edge]:
    return _path(edges, start, goal) or []


def builds_resources(module: Module) -> bool:
    """Imports a resource provider's SDK, or defines a component resource."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in RESOURCE_PACKAGES for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in RESOURCE_PACKAGES:
            return True
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).split(".")[-1] == "ComponentResource" for b in node.bases):
            return True
    return False
