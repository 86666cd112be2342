"""One set of exit codes (issue 37): :class:`hsrtcp.errors.ExitCode` holds them, docs/cli.md's
table lists exactly those, and the command line never writes one as a bare number
(``sys.exit(1)``, ``SystemExit(3)``, ``return 130``), so that a code cannot drift from its
meaning in one command and not in the others."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hsrtcp.errors import ExitCode

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"
# the modules that end commands: the command line, and the corpus run's own (hsrtcp analyze CORPUS)
COMMANDS = sorted((PACKAGE / "cli").glob("*.py")) + [PACKAGE / "scale" / "cli.py", PACKAGE / "scale" / "run.py"]
EXITS = {"exit", "_exit", "SystemExit"}  # sys.exit, os._exit, ctx.exit, raise SystemExit


def _codes() -> dict[str, int]:
    return {k: v for k, v in vars(ExitCode).items() if not k.startswith("_")}


def _bare(node: ast.AST) -> bool:
    """An int literal, or a conditional choosing one (``3 if errors else 0``)."""
    if isinstance(node, ast.IfExp):
        return _bare(node.body) or _bare(node.orelse)
    return isinstance(node, ast.Constant) and type(node.value) is int


def bare_exit_codes(files, root: Path = ROOT, parts=lambda tree: [tree]) -> list[str]:
    """Bare codes in ``files``; ``parts`` picks the parts of a module searched (default: all)."""
    found = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in (n for part in parts(tree) for n in ast.walk(part)):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in EXITS and node.args and _bare(node.args[0]):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Return) and node.value is not None and _bare(node.value):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_command_line_names_every_exit_code():
    assert bare_exit_codes(COMMANDS) == []


def _main_parts(tree: ast.Module) -> list[ast.AST]:
    """A ``python -m`` module's ``main`` functions and its ``if __name__ == "__main__":`` block."""
    return [n for n in tree.body if (isinstance(n, ast.FunctionDef) and n.name == "main")
            or (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))]


def entry_points() -> list[Path]:
    """The package's ``python -m`` entry points. The lab's agents are left out: their exit
    status is a protocol with the harness that starts them (agent-ROLE.error, left.done),
    not a command's exit code."""
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "agent" not in p.name
            and (p.name == "__main__.py" or 'if __name__ == "__main__":' in p.read_text(encoding="utf-8"))]


def test_python_m_entry_points_name_every_exit_code():
    files = entry_points()
    assert {"__main__.py", "docsgen.py", "orderings.py"} <= {p.name for p in files}
    assert bare_exit_codes(files, parts=_main_parts) == []


def test_a_bare_exit_code_is_found(tmp_path):
    p = tmp_path / "cmd.py"
    p.write_text("import sys\ndef a(ok):\n    sys.exit(1)\ndef b(ok):\n    raise SystemExit(0 if ok else 3)\n"
                 "def c():\n    return 130\ndef d(ctx):\n    ctx.exit(ExitCode.OK)\n    return ExitCode.INPUT\n",
                 encoding="utf-8")
    assert sorted(bare_exit_codes([p], tmp_path)) == ["cmd.py:3: sys.exit(1)", "cmd.py:5: SystemExit(0 if ok else 3)",
                                              "cmd.py:7: return 130"]


def test_the_documented_exit_codes_are_exactly_the_enums():
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = sorted(int(m) for m in re.findall(r"^\| (\d+) \|", text, re.M))
    assert documented == sorted(_codes().values())
    assert len(set(_codes().values())) == len(_codes())


def test_the_readme_states_the_same_codes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (f"Exit codes: {ExitCode.OK} success, {ExitCode.USAGE} usage error, {ExitCode.INPUT} input error "
            f"(the\npartial results are still written), {ExitCode.INTERNAL} internal error.") in readme
