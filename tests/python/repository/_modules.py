"""Reading python/hsrtcp with ast, shared by test_import_graph.py and test_import_cycles.py."""

from __future__ import annotations

import ast
from pathlib import Path


def source_modules(package: Path) -> dict[str, Path]:
    """``{dotted name: file}`` of every ``.py`` module under ``package``."""
    out: dict[str, Path] = {}
    for p in sorted(package.rglob("*.py")):
        parts = [package.name, *p.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def module_level(tree: ast.Module):
    """Nodes run on import: all but the bodies of functions (class bodies run, so they count)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def from_module(node: ast.ImportFrom, here: list[str]) -> str:
    """The absolute name of the module a ``from ... import`` reads (``here``: the importing
    module's package, as parts)."""
    base = node.module or ""
    if node.level:
        up = here[: len(here) - (node.level - 1)]
        base = ".".join([*up, base] if base else up)
    return base


def write_package(package: Path, files: dict[str, str]) -> Path:
    """A package directory ``package`` made of ``{relative path: text}`` (for the readers' own tests)."""
    for rel, text in files.items():
        p = package / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return package


def strongly_connected(edges) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one node (iterative Tarjan: no recursion
    limit on a long chain), each a sorted tuple, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    nodes = sorted(set(edges) | {w for t in edges.values() for w in t})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(tuple(sorted(comp)))
    return sorted(out)


def describe(edges, comp) -> str:
    """A cycle ``comp`` for a failure message: its modules, then each edge inside it with
    up to three of the import sites behind it."""
    lines = [" <-> ".join(comp)]
    for a in comp:
        for b in comp:
            if b in edges.get(a, {}):
                lines.append(f"    {a} -> {b}: {', '.join(sorted(set(edges[a][b]))[:3])}")
    return "\n".join(lines)
