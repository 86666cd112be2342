"""One atomic writer (issue 37): a file the package replaces in place is written by
``hsrtcp.atomic`` (a temporary name beside it, flushed, renamed over it, removed on any
failure, disk errors as OutputError). Written by hand it was a ``.tmp`` file renamed in eight
places, each without the flush or the clean-up. This finds a rename or ``os.replace`` of a
temporary name, or any ``os.replace``, outside the places that move something else."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "hsrtcp"

# file (relative to the package) -> why it renames by itself
MOVES = {
    "atomic.py": "the writer",
    "output.py": "a results directory's tables and their manifest, committed together",
    "pcapio.py": "rewrite_pcap: pcapio stands left of atomic on its layer (docs/design.md)",
    "scale/run.py": "a corpus partition (a directory) set aside",
    "scale/tasks.py": "a staged partition (a directory) swapped in",
    "context/enrich.py": "a streamed table's one part file moved to the table's name",
    "testing/netbed.py": "the unshifted client capture kept aside",
}


def renames(root: Path) -> list[str]:
    """``file:line`` (relative to ``root``) of every ``os.replace(...)`` and every
    ``X.replace(...)`` / ``X.rename(...)`` whose receiver or first argument names a
    temporary file."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr in ("replace", "rename")):
                continue
            receiver = ast.unparse(n.func.value)
            first = ast.unparse(n.args[0]) if n.args else ""
            if receiver == "os" or "tmp" in receiver.lower() or "tmp" in first.lower():
                found.append(f"{path.relative_to(root).as_posix()}:{n.lineno}")
    return found


def test_files_are_replaced_only_through_the_atomic_writer():
    found = renames(PACKAGE)
    assert [f for f in found if f.rpartition(":")[0] not in MOVES] == []
    # every listed place still renames (an entry whose rename is gone is removed)
    assert sorted({f.rpartition(":")[0] for f in found}) == sorted(MOVES)


def test_a_hand_written_replace_is_found(tmp_path):
    (tmp_path / "a.py").write_text(
        "import os\nfrom pathlib import Path\n"
        "def f(p):\n    tmp = p.with_suffix('.tmp')\n    tmp.write_text('x')\n    tmp.rename(p)\n"
        "def g(p, q):\n    os.replace(q, p)\n"
        "def h(p):\n    Path(str(p) + '.tmp').replace(p)\n"
        "def k(s):\n    return s.replace('a', 'b')\n")  # a string's replace is not a file's
    assert renames(tmp_path) == ["a.py:6", "a.py:8", "a.py:10"]
