"""The Python API is typed (issue 39): a py.typed marker and a stub for the compiled core
whose every name, parameter and default is the built module's."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import hsrtcp
from hsrtcp import _native

PKG = Path(hsrtcp.__file__).resolve().parent
STUB = PKG / "_native.pyi"


def _public(names) -> set[str]:
    return {n for n in names if not n.startswith("_") or n == "__version__"}


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, object]]:
    args = fn.args.posonlyargs + fn.args.args
    defaults = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    out = []
    for a, d in zip(args, defaults):
        if a.arg == "self":
            continue
        out.append((a.arg, inspect.Parameter.empty if d is None else ast.literal_eval(d)))
    return out


def _runtime_params(obj) -> list[tuple[str, object]]:
    sig = inspect.signature(obj)
    return [(p.name, p.default) for p in sig.parameters.values() if p.name != "self"]


def _methods(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> dict[str, ast.FunctionDef]:
    """The methods a stub class declares or takes from its stub bases (its own win)."""
    out = {}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            out.update(_methods(classes[base.id], classes))
    out.update({n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)})
    return out


def test_py_typed_marker_and_stub_ship_in_the_package():
    assert (PKG / "py.typed").is_file()
    assert STUB.is_file()


def test_native_stub_matches_the_built_module():
    tree = ast.parse(STUB.read_text(), filename=str(STUB))
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    values = {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    stub_names = _public(set(funcs) | set(classes) | values)
    assert stub_names == _public(n for n in vars(_native) if not (n.startswith("__") and n != "__version__")), \
        "names in the stub and in hsrtcp._native differ"
    checked = 0
    for name, fn in funcs.items():
        assert _stub_params(fn) == _runtime_params(getattr(_native, name)), name
        checked += 1
    for cname, cls in classes.items():
        if cname not in _public(classes):
            continue  # a stub-only base: checked as part of each class that names it
        runtime = getattr(_native, cname)
        methods = _methods(cls, classes)
        assert _public(methods) == _public(n for n in vars(runtime) if not n.startswith("__")), cname
        assert _stub_params(methods["__init__"]) == _runtime_params(runtime), f"{cname}()"
        for mname, fn in methods.items():
            if mname != "__init__":
                assert _stub_params(fn) == _runtime_params(getattr(runtime, mname)), f"{cname}.{mname}"
                checked += 1
    assert checked >= 12
