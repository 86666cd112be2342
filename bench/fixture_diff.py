#!/usr/bin/env python3
"""Every table of every tests/data capture, from two builds of hsrtcp, compared (issue 37).

    # both sides: a python/ directory whose hsrtcp (and _native) is used
    python bench/fixture_diff.py --old /path/to/main/python --new python
    # or dump one side to a directory, and compare two dumps
    python bench/fixture_diff.py --dump OUT --src python
    python bench/fixture_diff.py --compare OLD_DUMP NEW_DUMP

A refactoring of the core must leave every table bit for bit as it was. Each capture is
analyzed on its own (no vantage, and the vantage its name says), with the packets table;
every client/server pair of the same name and form also as a pair (two-vantage matcher).
Tables are compared with polars ``equals`` (nulls equal to nulls); the counts are printed,
and the exit code is 1 when any table differs or is missing on one side.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def captures() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.is_file() and ".pcap" in p.name)


def pairs(caps: list[Path]) -> list[tuple[Path, Path]]:
    out = []
    for c in caps:
        if ".client." in c.name:
            s = c.with_name(c.name.replace(".client.", ".server."))
            if s.exists():
                out.append((c, s))
    return out


def dump(out: Path) -> None:
    """Runs inside the interpreter whose sys.path holds the build under test."""
    import hsrtcp
    from hsrtcp.errors import InputError

    print(f"hsrtcp from {Path(hsrtcp.__file__).parent}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    caps = captures()
    runs: list[tuple[str, dict]] = []
    for p in caps:
        rel = p.relative_to(DATA).as_posix()
        vantages = [None] + [v for v in ("client", "server") if f".{v}." in p.name]
        for v in vantages:
            runs.append((f"{rel}@{v or 'none'}", {"paths": [p], "vantage": v, "packets": True}))
    for c, s in pairs(caps):
        runs.append((f"{c.relative_to(DATA).as_posix()}@pair", {"client": c, "server": s, "packets": True}))
    for name, kw in runs:
        d = out / name.replace("/", "__")
        d.mkdir(exist_ok=True)
        try:
            ds = hsrtcp.analyze(workers=1, **kw)
        except InputError as e:  # the error text is the result to compare
            (d / "error.txt").write_text(str(e))
            continue
        for t, df in ds.tables().items():
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
