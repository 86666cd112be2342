"""Imports inside python/hsrtcp point one way (issue 37): no two parts (subpackages, top-level
modules) import each other, directly or around a loop, and every import goes down the layer
order written in docs/design.md ("Layers of the Python package"), where a few modules of a
package that spans layers have places of their own (``lab.truth``). The graph is read with
ast from the source, every import counted: at module level, inside functions (lazy imports
are still dependencies), relative ones, ``importlib.import_module("hsrtcp....")`` with a
constant name, the ``__init__`` of each package on the way when it imports something, and
packages' lazy names (``hsrtcp.analyze`` is a use of ``hsrtcp.api``)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from ._modules import describe, from_module, module_level, source_modules, strongly_connected, write_package

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"
DESIGN = ROOT / "docs" / "design.md"


def _modules(package: Path) -> dict[str, Path]:
    """``{dotted name: file}`` of every module under ``package`` (extension modules too)."""
    name = package.name
    out = source_modules(package)
    for p in package.glob("*.so"):
        out[f"{name}.{p.name.split('.')[0]}"] = p
    for p in package.glob("*.pyi"):
        out.setdefault(f"{name}.{p.stem}", p)
    return out


def _lazy_names(tree: ast.Module, package: str) -> dict[str, set[str]]:
    """The names a package's ``__getattr__`` imports on first use: ``{name: {module}}``."""
    out: dict[str, set[str]] = defaultdict(set)
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "__getattr__"):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.If):
                continue
            names = [c.value for c in ast.walk(node.test) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            for stmt in node.body:
                for imp in ast.walk(stmt):
                    for target in _targets(imp, package.split("."), package.split(".")[0]):
                        for n in names:
                            out[n].add(target)
    return out


def _targets(node: ast.AST, here: list[str], package: str, modules: dict | None = None) -> list[str]:
    """Modules of ``package`` that the node imports; ``here`` is the importing module's package."""
    found: list[str] = []
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = from_module(node, here)
        for a in node.names:
            sub = f"{base}.{a.name}"
            found.append(sub if modules is None or sub in modules else base)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
          and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        found = [node.args[0].value]
    return [t for t in found if t == package or t.startswith(package + ".")]


def import_graph(package: Path) -> dict[str, dict[str, list[str]]]:
    """``{importing module: {imported module: ["file:line", ...]}}`` over ``package``.

    Importing ``a.b.c`` runs the ``__init__`` of ``a`` and ``a.b`` first: an import counts as
    one of those packages too when its ``__init__`` imports anything on being imported. A
    package's lazy names (its ``__getattr__``) count as imports of the modules behind them,
    charged to whoever uses them, not to the package."""
    name = package.name
    modules = _modules(package)
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in modules.items() if p.suffix == ".py"}
    inits = {m for m, p in modules.items() if p.name == "__init__.py"}
    lazy = {m: _lazy_names(trees[m], m) for m in inits}
    eager = {m for m in inits if any(_targets(n, m.split("."), name, modules) for n in module_level(trees[m]))}
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for mod, tree in trees.items():
        path = modules[mod]
        here = mod.split(".") if mod in inits else mod.split(".")[:-1]
        where = lambda n: f"{path.relative_to(package.parent)}:{n.lineno}"  # noqa: E731

        def add(target: str, node: ast.AST) -> None:
            parts = target.split(".")
            for i in range(1, len(parts)):  # the packages on the way that do something
                if ".".join(parts[:i]) in eager:
                    graph[mod][".".join(parts[:i])].append(where(node))
            graph[mod][target].append(where(node))

        skip = set()
        if mod in inits:  # its own __getattr__'s imports are charged to the users of its lazy names
            skip = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
                    for n in ast.walk(f)}
        attr_of = set()  # packages imported whole (`import hsrtcp`): their lazy names used as attributes
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            for target in _targets(node, here, name, modules):
                if isinstance(node, ast.ImportFrom) and target in lazy:
                    # `from hsrtcp import analyze`: a lazy name is a use of the module behind it
                    for a in node.names:
                        if f"{target}.{a.name}" not in modules:
                            for t in lazy[target].get(a.name, {target}):
                                add(t, node)
                    continue
                if isinstance(node, ast.Import) and target in lazy:
                    attr_of.add(target)
                add(target, node)
        for node in ast.walk(tree):  # `import hsrtcp` ... `hsrtcp.analyze(...)`
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in attr_of:
                for t in lazy[node.value.id].get(node.attr, ()):
                    add(t, node)
    return graph


def unit(module: str, fine: frozenset[str] = frozenset()) -> str:
    """The part a module belongs to: its subpackage or top-level module, or the finer part
    ``fine`` names (``lab.truth``: a module, or subpackage, placed on its own)."""
    parts = module.split(".")
    if len(parts) > 2 and f"{parts[1]}.{parts[2]}" in fine:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else parts[0]


def unit_graph(graph, fine: frozenset[str] = frozenset()) -> dict[str, dict[str, list[str]]]:
    """Imports between parts, each edge with the import sites behind it."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for a, targets in graph.items():
        for b, sites in targets.items():
            ua, ub = unit(a, fine), unit(b, fine)
            if ua != ub:
                out[ua][ub].extend(sites)
    return out


def cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one unit, each sorted."""
    return [list(c) for c in strongly_connected(edges)]


def documented_layers(text: str) -> dict[str, tuple[int, int]]:
    """``{part: (layer, place)}`` from the first ``text`` block after the heading "Layers of
    the Python package": one line per layer, lowest first, ``N  part part ...``; within a
    line, a part may import only the parts left of it."""
    section = text.split("## Layers of the Python package", 1)
    assert len(section) == 2, "docs/design.md has no section 'Layers of the Python package'"
    block = re.search(r"```text\n(.*?)```", section[1], re.S)
    assert block, "the layers section has no ```text block"
    out: dict[str, tuple[int, int]] = {}
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        number, *names = line.split()
        for i, n in enumerate(names):
            assert n not in out, f"{n} is in two places"
            out[n] = (int(number), i)
    return out


def _layers() -> dict[str, int]:
    return documented_layers(DESIGN.read_text(encoding="utf-8"))


def _fine(layers: dict[str, int]) -> frozenset[str]:
    return frozenset(n for n in layers if "." in n)


def test_no_import_cycle_between_units():
    edges = unit_graph(import_graph(PACKAGE), _fine(_layers()))
    found = cycles(edges)
    assert not found, "import cycles between parts of hsrtcp:\n" + "\n".join(describe(edges, c) for c in found)


def test_every_import_goes_down_the_documented_layers():
    layers = _layers()
    fine = _fine(layers)
    edges = unit_graph(import_graph(PACKAGE), fine)
    units = {unit(m, fine) for m in _modules(PACKAGE)}
    assert sorted(units - set(layers)) == [], "parts of hsrtcp missing from docs/design.md's layers"
    assert sorted(set(layers) - units) == [], "docs/design.md names layers' parts hsrtcp does not have"
    upward = [f"{a} (layer {layers[a][0]}) -> {b} (layer {layers[b][0]}): {', '.join(sorted(set(sites))[:3])}"
              for a, targets in sorted(edges.items()) for b, sites in sorted(targets.items())
              if layers[b] >= layers[a]]
    assert not upward, ("imports that do not go down a layer, or left within one (docs/design.md, "
                        "'Layers of the Python package'):\n" + "\n".join(upward))


def test_the_graph_sees_lazy_relative_and_dynamic_imports(tmp_path):
    # each kind of import closes a loop of its own, so a reader that missed one kind finds fewer
    pkg = write_package(tmp_path / "pkg", {
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


def test_a_package_init_that_imports_counts_and_finer_parts_split_a_package(tmp_path):
    pkg = write_package(tmp_path / "pkg", {
        "__init__.py": "",
        "ctx/__init__.py": "from pkg.ctx.enrich import write\n",  # importing ctx.readers runs this
        "ctx/readers.py": "x = 1\n", "ctx/enrich.py": "def write():\n    from pkg.lab.truth import t\n",
        "lab/__init__.py": "", "lab/truth.py": "from pkg.lab.scenario import s\n",
        "lab/scenario.py": "def s():\n    from pkg.ctx.readers import x\n",
        "lab/compare.py": "from pkg.ctx import enrich\n",
    })
    g = import_graph(pkg)
    assert "pkg.ctx" in g["pkg.lab.scenario"]  # through the package's __init__
    assert "pkg" not in g["pkg.lab.scenario"]  # (an __init__ that imports nothing is no edge)
    fine = frozenset({"ctx.enrich", "lab.truth", "lab.scenario"})
    assert cycles(unit_graph(g)) == [["ctx", "lab"]]
    # split finer, the loop still closes through ctx's __init__, which imports enrich
    assert cycles(unit_graph(g, fine)) == [["ctx", "ctx.enrich", "lab.scenario", "lab.truth"]]
    (pkg / "ctx/__init__.py").write_text("", encoding="utf-8")
    assert cycles(unit_graph(import_graph(pkg), fine)) == []


def test_the_layer_table_is_read_as_written():
    text = "## Layers of the Python package\n\nprose\n\n```text\n0  errors units\n1  results\n```\n"
    layers = documented_layers(text)
    assert layers == {"errors": (0, 0), "units": (0, 1), "results": (1, 0)}
    assert layers["errors"] < layers["units"] < layers["results"]
