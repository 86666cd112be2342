"""Import cycles of python/hsrtcp, module by module, and the core's one-way layers (issue 37).

test_import_graph.py checks the parts (subpackages, top-level modules) against the layers of
docs/design.md, every import counted. This file looks one level finer and tells two kinds of
import apart, read statically with ast:

- module-level imports run when the module is imported: a cycle among them is a real cycle
  (a partly initialised module, order-dependent ImportErrors). None may exist between modules
  of different parts, and none between modules of one part beyond ALLOWED below, which may
  only shrink: an entry whose cycle is gone fails too, so that it is removed.
- imports inside functions run on first use and close no cycle at import time: they are kept
  apart (``import_graphs`` returns them as a second graph). A cycle they close inside a part
  must be in LAZY_ALLOWED (which may only shrink too); test_import_graph.py forbids those
  between parts, with the package's lazy names and the finer parts of docs/design.md.

Importing ``a.b.c`` runs the ``__init__`` of ``a`` and ``a.b`` first, so it counts as an
import of each package on the way whose ``__init__`` imports anything at module level.

The Rust core: capture/ must not use crate::wire, crate::flow or crate::matcher (the time type
is the crate root's), wire/ must not use crate::flow or crate::matcher, flow/ must not use
crate::matcher (docs/design.md: wire <- flow <- matcher <- bindings <- python), checked by
reading the sources' ``use``/path expressions (comments stripped).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from ._modules import describe, from_module, module_level, source_modules, write_package
from ._modules import strongly_connected as cycles

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"
CORE = ROOT / "crates" / "hsrtcp-core" / "src"

# Module-level cycles inside one part that are kept, each with why (the sorted modules of
# the strongly connected component, as cycles() reports it). None today.
ALLOWED: dict[tuple[str, ...], str] = {}

# Cycles inside one part that close only through imports in functions (no failure at import
# time, but two modules that cannot be understood or tested apart). Found 2026-11-28: eight;
# two broken since: scale.discover <-> scale.manifest (Input and input_id moved down to
# hsrtcp.inputs) and passive.apps <-> passive.quic (the ClientHello parser moved to quic). The rest are in files other work of issue 37 is changing now; each entry
# says what would break it. The list may only shrink.
LAZY_ALLOWED: dict[tuple[str, ...], str] = {
    ("hsrtcp.context.classes", "hsrtcp.context.gnettrack", "hsrtcp.context.readers", "hsrtcp.context.stream"):
        "classes and stream take GAP_S from readers, readers and stream call gnettrack's reader, "
        "gnettrack takes WholeOnly from stream, stream takes classes' _codes: GAP_S and WholeOnly "
        "belong in a module below all four",
    ("hsrtcp.figures.items", "hsrtcp.figures.packets"):
        "items calls packets.at_acks, packets returns items.Made: Made belongs below both",
    ("hsrtcp.lab.compare", "hsrtcp.lab.figures"):
        "compare draws with lab.figures, which calls compare.flow_paths: flow_paths belongs below both",
    ("hsrtcp.lab.scenario.cells", "hsrtcp.lab.scenario.config", "hsrtcp.lab.scenario.fixed",
     "hsrtcp.lab.scenario.linklayer", "hsrtcp.lab.scenario.recorded"):
        "config resolves the linklayer and recorded kinds, which take config's ScenarioError and "
        "value checkers (_err, _num, ...) and cells' Cell; cells builds recorded and fixed areas: "
        "the checkers and Cell belong in a module below the kinds",
    ("hsrtcp.study", "hsrtcp.study.stream"):
        "the package's __init__ runs stream for streamed studies, stream takes Study, flow_frame "
        "and helpers from the __init__: those belong in a module below",
    ("hsrtcp.study.columns", "hsrtcp.study.tables"):
        "columns calls tables.summary_frame, tables calls columns' summarize_flows and "
        "reason_counts: one of the two directions has to go",
}


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imported(node: ast.AST, here: list[str], mods: dict[str, Path], root: str) -> list[str]:
    """The package's modules ``node`` imports (a name imported from a package that is not a
    submodule is an import of the package)."""
    if isinstance(node, ast.Import):
        found = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = from_module(node, here)
        found = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    else:
        return []
    out = []
    for t in found:
        while t and t not in mods and "." in t:  # `import hsrtcp.x.y` of a name, not a module
            t = t.rsplit(".", 1)[0]
        if t in mods and (t == root or t.startswith(root + ".")):
            out.append(t)
    return out


def import_graphs(package: Path) -> tuple[dict, dict]:
    """(module-level, function-level) graphs: ``{module: {imported module: ["file:line"]}}``.
    Imports under ``if TYPE_CHECKING:`` are neither (they never run), nor those of a package's
    ``__getattr__`` (its lazy names: imports of whoever uses them, which this reader does not
    follow; test_import_graph.py does)."""
    mods = source_modules(package)
    trees = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in mods.items()}
    here = {m: m.split(".") if mods[m].name == "__init__.py" else m.split(".")[:-1] for m in mods}
    typing_only = {m: {id(n) for top in ast.walk(t) if _is_type_checking(top) for n in ast.walk(top)}
                   for m, t in trees.items()}
    for m, t in trees.items():  # a package's lazy names (its __getattr__) are its users' imports
        if mods[m].name == "__init__.py":
            typing_only[m] |= {id(n) for f in t.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
                               for n in ast.walk(f)}
    top = {m: [n for n in module_level(t) if id(n) not in typing_only[m]] for m, t in trees.items()}
    eager = {m for m in mods if mods[m].name == "__init__.py" and any(_imported(n, here[m], mods, package.name) for n in top[m])}
    level: dict = defaultdict(lambda: defaultdict(list))
    lazy: dict = defaultdict(lambda: defaultdict(list))
    for m, tree in trees.items():
        at_import = {id(n) for n in top[m]}
        for node in ast.walk(tree):
            if id(node) in typing_only[m]:
                continue
            for t in _imported(node, here[m], mods, package.name):
                graph = level if id(node) in at_import else lazy
                site = f"{mods[m].relative_to(package.parent)}:{node.lineno}"
                parts = t.split(".")
                for i in range(1, len(parts)):  # the packages on the way whose __init__ imports
                    pkg = ".".join(parts[:i])
                    if pkg in eager and not m.startswith(pkg + ".") and pkg != m:
                        graph[m][pkg].append(site)
                if t != m:
                    graph[m][t].append(site)
    return level, lazy


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@pytest.fixture(scope="module")
def graphs():
    return import_graphs(PACKAGE)


def test_no_module_level_import_cycle_between_parts(graphs):
    level, _ = graphs
    found = [c for c in cycles(level) if len({part(m) for m in c}) > 1]
    assert not found, ("module-level import cycles across subpackages of hsrtcp (move the shared "
                       "helper down a layer, docs/design.md):\n" + "\n".join(describe(level, c) for c in found))


def test_module_level_cycles_within_a_part_are_only_the_allowed_ones(graphs):
    level, _ = graphs
    found = {c for c in cycles(level) if len({part(m) for m in c}) == 1}
    new = sorted(found - set(ALLOWED))
    gone = sorted(set(ALLOWED) - found)
    assert not new, "module-level import cycles not in ALLOWED:\n" + "\n".join(describe(level, c) for c in new)
    assert not gone, f"ALLOWED lists cycles that no longer exist (remove them): {gone}"


def test_function_level_cycles_within_a_part_are_only_the_allowed_ones(graphs):
    level, lazy = graphs
    both: dict = defaultdict(lambda: defaultdict(list))
    for g in (level, lazy):
        for a, targets in g.items():
            for b, sites in targets.items():
                both[a][b].extend(sites)
    found = {c for c in cycles(both) if len({part(m) for m in c}) == 1} - set(ALLOWED)
    new = sorted(found - set(LAZY_ALLOWED))
    gone = sorted(set(LAZY_ALLOWED) - found)
    assert not new, ("import cycles (through imports in functions) not in LAZY_ALLOWED: move the "
                     "shared part down a module\n" + "\n".join(describe(both, c) for c in new))
    assert not gone, f"LAZY_ALLOWED lists cycles that no longer exist (remove them): {gone}"


# -- the reader itself, on small packages whose cycles are known -----------------------------

def test_the_reader_tells_module_level_from_function_level_imports(tmp_path):
    pkg = write_package(tmp_path / "hsrtcp", {
        "__init__.py": "",
        "a/__init__.py": "", "a/x.py": "from hsrtcp.b import y\n",
        "b/__init__.py": "", "b/y.py": "def f():\n    from hsrtcp.a import x\n",   # lazy: no cycle at import
        "c/__init__.py": "from .z import Z\n", "c/z.py": "from hsrtcp.c.w import W\nclass Z: pass\n",
        "c/w.py": "import hsrtcp.c.z\nW = 1\n",                                     # z <-> w, relative and absolute
        "d/__init__.py": "from hsrtcp.d.v import V\nN = 1\n",
        "d/v.py": "from hsrtcp.d import helpers, N\nV = 1\n", "d/helpers.py": "",   # N from the __init__: d <-> d.v
        "k/__init__.py": "from hsrtcp.k.v import V\n",
        "k/v.py": "from hsrtcp.k import helpers\nV = 1\n", "k/helpers.py": "",     # a submodule only: no cycle
        "e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hsrtcp import f\n",
        "f.py": "from hsrtcp import e\n",                                             # typing-only: no edge back
        "g.py": "class G:\n    from hsrtcp import h\n", "h.py": "import hsrtcp.g\n",  # a class body runs
    })
    level, lazy = import_graphs(pkg)
    assert cycles(level) == [("hsrtcp.c.w", "hsrtcp.c.z"), ("hsrtcp.d", "hsrtcp.d.v"), ("hsrtcp.g", "hsrtcp.h")]
    assert "hsrtcp.a.x" in lazy["hsrtcp.b.y"] and "hsrtcp.b.y" not in lazy["hsrtcp.a.x"]
    assert cycles(level | {"hsrtcp.b.y": {"hsrtcp.a.x": []}}) == [
        ("hsrtcp.a.x", "hsrtcp.b.y"), *cycles(level)]  # the same import at module level closes one
    assert "hsrtcp.f" not in level.get("hsrtcp.e", {})
    assert [c for c in cycles(level) if len({part(m) for m in c}) > 1] == [("hsrtcp.g", "hsrtcp.h")]


# -- the Rust core ---------------------------------------------------------------------------

RUST_RULES = (("capture", ("wire", "flow", "matcher")), ("wire", ("flow", "matcher")), ("flow", ("matcher",)))


def _rust_code(text: str) -> str:
    """The source without comments (line, block and doc comments); strings are kept, which
    can only make the check stricter."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def rust_uses(src: Path, layer: str, banned: tuple[str, ...]) -> list[str]:
    """``file:line: text`` of every path into a banned module: ``crate::flow``, ``super::flow``
    (from wire/'s files, super:: can reach the crate root) and ``crate::{.., flow::X, ..}``."""
    names = "|".join(banned)
    path = re.compile(rf"\b(?:crate|super)::(?:super::)*(?:{names})\b")
    group = re.compile(r"\b(?:crate|super)::(?:super::)*\{([^;]*)", re.S)
    first = re.compile(rf"(?:^|[{{,])\s*(?:{names})\b")
    out = []
    for f in sorted((src / layer).rglob("*.rs")):
        code = _rust_code(f.read_text(encoding="utf-8"))
        hits = [m.start() for m in path.finditer(code)]
        hits += [m.start() for m in group.finditer(code) if first.search(m.group(1))]
        for at in sorted(set(hits)):
            no = code.count("\n", 0, at) + 1
            out.append(f"{f.relative_to(src.parent)}:{no}: {code.splitlines()[no - 1].strip()}")
    return out


@pytest.mark.parametrize("layer,banned", RUST_RULES, ids=[r[0] for r in RUST_RULES])
def test_the_core_layers_point_one_way(layer, banned):
    found = rust_uses(CORE, layer, banned)
    assert not found, f"crates/hsrtcp-core/src/{layer} uses {' or '.join(banned)} (a layer above it):\n" + "\n".join(found)


def test_the_rust_check_sees_a_use_and_ignores_comments(tmp_path):
    (tmp_path / "wire").mkdir()
    (tmp_path / "wire" / "a.rs").write_text("// use crate::flow::X;\n/* crate::matcher */\nuse crate::flowing;\n")
    assert rust_uses(tmp_path, "wire", ("flow", "matcher")) == []
    (tmp_path / "wire" / "b.rs").write_text("fn f() { let _ = crate::matcher::pair(); }\nuse super::flow::Key;\n"
                                            "use crate::{\n    seq::S,\n    flow::{Key, Table},\n};\n")
    assert [s.split(": ", 1)[0] for s in rust_uses(tmp_path, "wire", ("flow", "matcher"))] == [
        f"{tmp_path.name}/wire/b.rs:1", f"{tmp_path.name}/wire/b.rs:2", f"{tmp_path.name}/wire/b.rs:3"]
