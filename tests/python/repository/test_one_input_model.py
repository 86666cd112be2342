"""One input model and one bundle reader (issue 37): ``hsrtcp.inputs.Input`` is the only
``class Input`` of the package; ``hsrtcp.bundle`` the only place that finds a run bundle's
captures, without lab imports. There were two, the corpus run's (scale) and the context's (context.enrich), with
different field names for the same things (``source`` a field in one, a property in the
other; ``input_id`` an int in one, ``id`` a string in the other)."""

from __future__ import annotations

import ast
from pathlib import Path

from hsrtcp.context.enrich import describe_inputs
from hsrtcp.inputs import Input
from hsrtcp.scale.discover import discover

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"
DATA = ROOT / "tests" / "data"


def input_classes(package: Path) -> list[str]:
    """``file:line`` of every class named Input under ``package``."""
    return [f"{p.relative_to(package).as_posix()}:{n.lineno}"
            for p in sorted(package.rglob("*.py"))
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p)))
            if isinstance(n, ast.ClassDef) and n.name == "Input"]


def test_there_is_one_input_class():
    assert [c.rpartition(":")[0] for c in input_classes(PACKAGE)] == ["inputs.py"]


def test_a_second_input_class_is_found(tmp_path):
    (tmp_path / "a.py").write_text("class Input:\n    pass\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "c.py").write_text("def f():\n    class Input:\n        pass\n")
    assert input_classes(tmp_path) == ["a.py:1", "b/c.py:2"]


def test_the_corpus_and_the_context_make_the_same_inputs(tmp_path):
    """A capture discovered in a corpus and the same capture described for its context are
    one kind of object, named alike."""
    cap = DATA / "multi_concurrent.server.pcap"
    (tmp_path / "a.pcap").write_bytes(cap.read_bytes())
    [corpus] = discover(str(tmp_path))
    [ctx] = describe_inputs([str(tmp_path / "a.pcap")])
    assert type(corpus) is type(ctx) is Input
    assert (corpus.kind, corpus.files, corpus.source) == (ctx.kind, ctx.files, ctx.source) \
        == ("capture", [str(tmp_path / "a.pcap")], str(tmp_path / "a.pcap"))
    assert (ctx.number, ctx.captures, ctx.labels) == (0, {str(tmp_path / "a.pcap"): None},
                                                      {"capture": str(tmp_path / "a.pcap")})
    [c2, pair] = describe_inputs([str(cap)], [str(tmp_path / "a.pcap")], [str(cap)])
    assert (c2.number, pair.number, pair.kind, pair.source) == (
        0, 1, "pair", f"{tmp_path / 'a.pcap'} + {cap}")


def defined(package: Path, names: set[str]) -> list[str]:
    """``file:name`` of every function among ``names`` defined under ``package``."""
    return [f"{p.relative_to(package).as_posix()}:{n.name}"
            for p in sorted(package.rglob("*.py"))
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p)))
            if isinstance(n, ast.FunctionDef) and n.name in names]


def test_one_bundle_reader_without_lab_imports():
    """The reader of run bundles sits below the analysis (it was in pair.py, beside the
    two-vantage join); the lab, which writes bundles, is not needed to read one."""
    assert defined(PACKAGE, {"is_bundle", "bundle_pairs"}) == ["bundle.py:bundle_pairs", "bundle.py:is_bundle"]
    tree = ast.parse((PACKAGE / "bundle.py").read_text(encoding="utf-8"))
    assert "read_manifest" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}  # (scale's: a corpus CSV)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | \
        {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not [m for m in imported if m.startswith("hsrtcp.lab")]
    assert imported & {"hsrtcp.errors"}  # (the imports are read: the check can fail)


def manifest_readers(package: Path) -> list[str]:
    """``file:line`` of every use of the name ``"manifest.json"`` as a value (a path part: a
    docstring or a message that mentions the file is not one), below ``package``."""
    out = []
    for p in sorted(package.rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"), str(p))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        out += [f"{p.relative_to(package).as_posix()}:{n.lineno}" for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and n.value == "manifest.json" and id(n) not in docs]
    return out


_READS = {"read_text", "read_bytes", "open"}


def _holds_manifest(node: ast.AST, names: set[str]) -> bool:
    """``node`` names the manifest: the string itself or a variable that holds a path to it."""
    return any((isinstance(n, ast.Constant) and n.value == "manifest.json")
               or (isinstance(n, ast.Name) and n.id in names) for n in ast.walk(node))


def _manifest_names(scope: ast.AST, names: set[str], statements) -> set[str]:
    """``names`` and every variable of ``scope`` assigned from them (``mpath = d / MANIFEST``)."""
    names = set(names)
    while True:
        more = {t.id for n in statements if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
                and _holds_manifest(n.value, names)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        if more <= names:
            return names
        names |= more


def manifest_opens(package: Path) -> list[str]:
    """``file:line`` of every place that opens or reads a path to the manifest (``open``,
    ``read_text``, ``read_bytes`` on the file name or on a variable holding a path to it,
    ``MANIFEST`` as imported from hsrtcp.bundle included): a reader that takes the name from
    hsrtcp.bundle and parses the file itself."""
    out = set()
    for p in sorted(package.rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"), str(p))
        imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and n.module == "hsrtcp.bundle" for a in n.names if a.name == "MANIFEST"}
        top = _manifest_names(tree, imported, tree.body)
        for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
            names = top if scope is tree else _manifest_names(scope, top, list(ast.walk(scope)))
            for n in ast.walk(scope):
                f = getattr(n, "func", None)
                if (isinstance(f, ast.Attribute) and f.attr in _READS and _holds_manifest(f.value, names)) or \
                        (isinstance(f, ast.Name) and f.id == "open" and n.args and _holds_manifest(n.args[0], names)):
                    out.add((p.relative_to(package).as_posix(), n.lineno))
    return [f"{f}:{line}" for f, line in sorted(out)]


def test_the_bundle_manifest_is_read_in_one_place():
    """Every reader of a bundle's manifest goes through ``hsrtcp.bundle`` (seven modules
    opened manifest.json themselves, each with its own errors); the lab's writer takes the
    name from there too."""
    assert [r.rpartition(":")[0] for r in manifest_readers(PACKAGE)] == ["bundle.py"]
    # and none takes the name from there to open the file itself: only bundle.py's manifest
    # (lab/bundle.py's check, the writer's own verification, reads through it too)
    opened = sorted({r.rpartition(":")[0] for r in manifest_opens(PACKAGE)})
    assert opened == ["bundle.py"], manifest_opens(PACKAGE)


def test_a_second_manifest_reader_is_found(tmp_path):
    (tmp_path / "a.py").write_text('"""Reads manifest.json."""\nimport json\n'
                                   'def f(d):\n    """manifest.json"""\n    return json.loads((d / "manifest.json").read_text())\n')
    assert manifest_readers(tmp_path) == ["a.py:5"]


def test_a_manifest_opened_through_the_shared_name_is_found(tmp_path):
    """A reader that imports the name and parses the file is one (directly or through a
    variable); a path used only in a message or a test for the file's presence is not."""
    (tmp_path / "a.py").write_text(
        "import json\nfrom hsrtcp.bundle import MANIFEST as M\n"
        "def f(d):\n    return json.loads((d / M).read_text())\n"
        "def g(d):\n    mpath = d / M\n    with open(mpath) as fh:\n        return json.load(fh)\n"
        "def h(d):\n    p = d / M\n    if not p.is_file():\n        raise ValueError(f'{p}: missing')\n")
    (tmp_path / "b.py").write_text('MANIFEST = "hsrtcp-manifest.txt"\ndef f(d):\n    return (d / MANIFEST).read_text()\n')
    assert manifest_opens(tmp_path) == ["a.py:4", "a.py:7"]
