#!/usr/bin/env python3
"""Every table of every tests/data capture, analyzed by two builds, compared row for row.

    python bench/compare_tables.py --base /path/to/other/python [--packets] [--pairs]

Runs `python -m hsrtcp analyze CAPTURE -o DIR -q --no-plot` (with `--packets`: also
`--packets`; with `--pairs`: each X.client/X.server fixture pair as `--client X --server Y`)
once with this tree's package (python/ of this repository) and once with the package found
at `--base` (for example the main worktree's python/ with its own native module), then
compares every Parquet table with polars `equals` (values, nulls, types) and the exit codes.
Prints the differing tables and exits 1 if any differ. A speed change must leave the results
alone: this is its witness.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CAPTURE_SUFFIXES = (".pcap", ".pcap.gz", ".pcapng", ".pcapng.gz")


def run(python_dir: Path, args: list[str], out: Path) -> int:
    env = dict(os.environ, PYTHONPATH=str(python_dir))
    cmd = [sys.executable, "-m", "hsrtcp", "analyze", *args, "-o", str(out), "-q", "--no-plot"]
    return subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def same_dir(a: Path, b: Path) -> list[str]:
    import polars as pl

    diffs = []
    names = sorted({p.name for p in a.glob("*.parquet")} | {p.name for p in b.glob("*.parquet")})
    for n in names:
        if not (a / n).exists() or not (b / n).exists():
            diffs.append(f"{n}: only in one")
            continue
        x, y = pl.read_parquet(a / n), pl.read_parquet(b / n)
        if x.schema != y.schema or not x.equals(y, null_equal=True):
            diffs.append(f"{n}: differs ({x.height} vs {y.height} rows)")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="python/ directory of the other build")
    ap.add_argument("--packets", action="store_true")
    ap.add_argument("--pairs", action="store_true")
    a = ap.parse_args()
    jobs = []
    if a.pairs:
        for c in sorted(DATA.glob("*.client.pcap*")):
            s = c.with_name(c.name.replace(".client.", ".server."))
            if s.exists():
                jobs.append((c.name, ["--client", str(c), "--server", str(s)]))
    else:
        for p in sorted(DATA.rglob("*")):
            if p.is_file() and p.name.endswith(CAPTURE_SUFFIXES):
                jobs.append((str(p.relative_to(DATA)), [str(p)]))
    extra = ["--packets"] if a.packets else []
    bad, tables = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, args) in enumerate(jobs):
            outs = [Path(tmp) / f"{i}-{k}" for k in ("this", "base")]
            codes = [run(ROOT / "python", args + extra, outs[0]), run(a.base, args + extra, outs[1])]
            diffs = same_dir(outs[0], outs[1])
            tables += len(list(outs[0].glob("*.parquet")))
            if codes[0] != codes[1]:
                diffs.append(f"exit {codes[0]} vs {codes[1]}")
            if diffs:
                bad += 1
                print(f"{name}: {'; '.join(diffs)}")
    print(f"{len(jobs)} inputs, {tables} tables compared, {bad} inputs differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
