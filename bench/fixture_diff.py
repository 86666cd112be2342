#!/usr/bin/env python3
"""Every table of every tests/data capture, from two builds of hsrtcp, compared (issue 37).

    # both sides: a python/ directory whose hsrtcp (and _native) is used
    python bench/fixture_diff.py --old /path/to/main/python --new python
    # or dump one side to a directory, and compare two dumps
    python bench/fixture_diff.py --dump OUT --src python
    python bench/fixture_diff.py --compare OLD_DUMP NEW_DUMP

A refactoring of the core must leave every table bit for bit as it was. The runs are those
of hsrtcp.testing.golden (python/hsrtcp/testing/golden.py), whose test checks one build
against committed digests (tests/python/golden/); this script compares two builds' tables.
Tables are compared with polars ``equals`` (nulls equal to nulls); the counts are printed,
and the exit code is 1 when any table differs or is missing on one side.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def _golden():
    """The run list of this tree (python/hsrtcp/testing/golden.py), loaded from its file: the
    build under test may be an older one without it. It imports hsrtcp only when it runs."""
    spec = importlib.util.spec_from_file_location("_hsrtcp_golden", ROOT / "python" / "hsrtcp" / "testing" / "golden.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


def dump(out: Path) -> None:
    """Runs inside the interpreter whose sys.path holds the build under test."""
    import hsrtcp

    golden = _golden()
    print(f"hsrtcp from {Path(hsrtcp.__file__).parent}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    for run in golden.runs(DATA):
        d = out / run.name.replace("/", "__")
        d.mkdir(exist_ok=True)
        tables = golden.run_tables(run)
        if isinstance(tables, str):  # the InputError's text is the result to compare
            (d / "error.txt").write_text(tables)
            continue
        for t, df in tables.items():
            df.write_parquet(d / f"{t}.parquet")


def compare(old: Path, new: Path) -> int:
    import polars as pl

    same = differ = missing = 0
    names = sorted({p.relative_to(old) for p in old.rglob("*") if p.is_file()}
                   | {p.relative_to(new) for p in new.rglob("*") if p.is_file()})
    for rel in names:
        a, b = old / rel, new / rel
        if not (a.exists() and b.exists()):
            missing += 1
            print(f"MISSING {rel} (old {a.exists()}, new {b.exists()})")
            continue
        if rel.suffix == ".txt":
            ok = a.read_text() == b.read_text()
        else:
            da, db = pl.read_parquet(a), pl.read_parquet(b)
            ok = da.schema == db.schema and da.equals(db, null_equal=True)
        if ok:
            same += 1
        else:
            differ += 1
            print(f"DIFFERS {rel}")
    runs = len({r.parts[0] for r in names})
    print(f"{runs} runs, {len(names)} tables: {same} identical, {differ} differ, {missing} missing on one side")
    return 1 if differ or missing else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, help="python/ directory of the reference build")
    ap.add_argument("--new", type=Path, help="python/ directory of the build under test")
    ap.add_argument("--dump", type=Path, help="write one build's tables here")
    ap.add_argument("--src", type=Path, help="with --dump: python/ directory to import hsrtcp from")
    ap.add_argument("--compare", type=Path, nargs=2, metavar=("OLD", "NEW"))
    a = ap.parse_args()
    if a.dump:
        if a.src:
            sys.path.insert(0, str(a.src.resolve()))
        dump(a.dump)
        return 0
    if a.compare:
        return compare(*a.compare)
    if not (a.old and a.new):
        ap.error("give --old and --new, or --dump, or --compare")
    with tempfile.TemporaryDirectory() as tmp:
        for side, src in (("old", a.old), ("new", a.new)):
            subprocess.run([sys.executable, __file__, "--dump", str(Path(tmp) / side), "--src", str(src.resolve())],
                           check=True)
        return compare(Path(tmp) / "old", Path(tmp) / "new")


if __name__ == "__main__":
    sys.exit(main())
