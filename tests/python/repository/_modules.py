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


def write_package(package: Path, files: dict[str, str]) -> Path:
    """A package directory ``package`` made of ``{relative path: text}`` (for the readers' own tests)."""
    for rel, text in files.items():
        p = package / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return package
