"""Imports inside python/hsrtcp point one way (issue 37): no two subpackages or top-level
modules import each other, directly or around a loop, and every import goes down the layer
order written in docs/design.md ("Layers of the Python package"). The graph is read with ast
from the source, every import counted: at module level, inside functions (lazy imports are
still dependencies), relative ones, ``importlib.import_module("hsrtcp....")`` with a constant
name, and the package's lazy names (``hsrtcp.analyze`` is a use of ``hsrtcp.api``)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"
DESIGN = ROOT / "docs" / "design.md"


def _modules(package: Path) -> dict[str, Path]:
    """``{dotted name: file}`` of every module under ``package`` (extension modules too)."""
    name = package.name
    out: dict[str, Path] = {}
    for p in sorted(package.rglob("*.py")):
        parts = [name, *p.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    for p in package.glob("*.so"):
        out[f"{name}.{p.name.split('.')[0]}"] = p
    for p in package.glob("*.pyi"):
        out.setdefault(f"{name}.{p.stem}", p)
    return out


def _lazy_names(init: Path, package: str) -> dict[str, set[str]]:
    """The names the package's ``__getattr__`` imports on first use: ``{name: {module}}``."""
    out: dict[str, set[str]] = defaultdict(set)
    for fn in ast.parse(init.read_text(encoding="utf-8")).body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "__getattr__"):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.If):
                continue
            names = [c.value for c in ast.walk(node.test) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            for stmt in node.body:
                for imp in ast.walk(stmt):
                    for target in _targets(imp, package.split("."), package):
                        out.update({n: out[n] | {target} for n in names})
    return out


def _targets(node: ast.AST, here: list[str], package: str, modules: dict | None = None) -> list[str]:
    """Modules of ``package`` that the node imports; ``here`` is the importing module's package."""
    found: list[str] = []
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            up = here[: len(here) - (node.level - 1)]
            base = ".".join([*up, base] if base else up)
        for a in node.names:
            sub = f"{base}.{a.name}"
            found.append(sub if modules is None or sub in modules else base)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
          and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        found = [node.args[0].value]
    return [t for t in found if t == package or t.startswith(package + ".")]


def import_graph(package: Path) -> dict[str, dict[str, list[str]]]:
    """``{importing module: {imported module: ["file:line", ...]}}`` over ``package``."""
    name = package.name
    modules = _modules(package)
    lazy = _lazy_names(package / "__init__.py", name)
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for mod, path in modules.items():
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        where = lambda n: f"{path.relative_to(package.parent)}:{n.lineno}"  # noqa: E731
        imports_root = False
        skip = set()
        if mod == name:  # its own __getattr__ imports are charged to the users of its lazy names
            skip = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
                    for n in ast.walk(f)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            for target in _targets(node, here, name, modules):
                if target == name and isinstance(node, ast.ImportFrom):
                    # `from hsrtcp import analyze`: a lazy name is a use of the module behind it
                    for a in node.names:
                        if f"{name}.{a.name}" not in modules:
                            for t in lazy.get(a.name, {name}):
                                graph[mod][t].append(where(node))
                    continue
                imports_root |= target == name
                graph[mod][target].append(where(node))
        if imports_root:  # `import hsrtcp` ... `hsrtcp.analyze(...)`
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
                    for t in lazy.get(node.attr, ()):
                        graph[mod][t].append(where(node))
    return graph


def unit(module: str) -> str:
    """The subpackage or top-level module a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def unit_graph(graph) -> dict[str, dict[str, list[str]]]:
    """Imports between units, each edge with the import sites behind it."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for a, targets in graph.items():
        for b, sites in targets.items():
            if unit(a) != unit(b):
                out[unit(a)][unit(b)].extend(sites)
    return out


def cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one unit (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(set(edges) | {w for t in edges.values() for w in t}):
        if v not in index:
            visit(v)
    return sorted(out)


def documented_layers(text: str) -> dict[str, int]:
    """``{unit: layer}`` from the first ``text`` block after the heading "Layers of the
    Python package": one line per layer, lowest first, ``N  unit unit ...``."""
    section = text.split("## Layers of the Python package", 1)
    assert len(section) == 2, "docs/design.md has no section 'Layers of the Python package'"
    block = re.search(r"```text\n(.*?)```", section[1], re.S)
    assert block, "the layers section has no ```text block"
    out: dict[str, int] = {}
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        number, *names = line.split()
        for n in names:
            assert n not in out, f"{n} is in two layers"
            out[n] = int(number)
    return out


def _describe(edges, comp: list[str]) -> str:
    lines = [" <-> ".join(comp)]
    for a in comp:
        for b in comp:
            if b in edges.get(a, {}):
                lines.append(f"  {a} -> {b}: {', '.join(sorted(set(edges[a][b]))[:4])}")
    return "\n".join(lines)


def test_no_import_cycle_between_units():
    edges = unit_graph(import_graph(PACKAGE))
    found = cycles(edges)
    assert not found, "import cycles between parts of hsrtcp:\n" + "\n".join(_describe(edges, c) for c in found)


def test_every_import_goes_down_the_documented_layers():
    layers = documented_layers(DESIGN.read_text(encoding="utf-8"))
    edges = unit_graph(import_graph(PACKAGE))
    units = {unit(m) for m in _modules(PACKAGE)}
    assert sorted(units - set(layers)) == [], "parts of hsrtcp missing from docs/design.md's layers"
    assert sorted(set(layers) - units) == [], "docs/design.md names layers' parts hsrtcp does not have"
    upward = [f"{a} (layer {layers[a]}) -> {b} (layer {layers[b]}): {', '.join(sorted(set(sites))[:3])}"
              for a, targets in sorted(edges.items()) for b, sites in sorted(targets.items())
              if layers[b] >= layers[a]]
    assert not upward, "imports that do not go down a layer:\n" + "\n".join(upward)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_the_graph_sees_lazy_relative_and_dynamic_imports(tmp_path):
    # each kind of import closes a loop of its own, so a reader that missed one kind finds fewer
    pkg = _write(tmp_path, {
        "__init__.py": "def __getattr__(name):\n    if name == 'run':\n        from pkg import api\n"
                       "        return api.run\n    raise AttributeError(name)\n",
        "api.py": "from pkg.low import x\n",
        "low.py": "def f():\n    import pkg\n    return pkg.run\n",                       # lazy name
        "a/__init__.py": "", "a/one.py": "def f():\n    from ..b import two\n",        # relative, in a function
        "b/__init__.py": "", "b/two.py": "from pkg.a import one\n",
        "c.py": "import importlib\nM = importlib.import_module('pkg.d')\n",          # dynamic
        "d.py": "from pkg import c\n",
        "e.py": "x = 1\n", "f.py": "from pkg import e, __version__\n",               # no loop: root is a leaf
    })
    edges = unit_graph(import_graph(pkg))
    assert cycles(edges) == [["a", "b"], ["api", "low"], ["c", "d"]]
    assert "pkg" not in edges and "pkg" in edges["f"]


def test_the_layer_table_is_read_as_written():
    text = "## Layers of the Python package\n\nprose\n\n```text\n0  errors units\n1  results\n```\n"
    assert documented_layers(text) == {"errors": 0, "units": 0, "results": 1}
