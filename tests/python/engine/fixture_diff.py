"""Diagnostic (not a test): analyze every capture of tests/data (each file, subfolders too, alone; and each
STEM.client/STEM.server pair as two vantages) and write every table as Parquet under OUT, so
two builds of the engine can be compared table by table.

    PYTHONPATH=<tree A>/python python tests/python/engine/fixture_diff.py dump OUT_A
    PYTHONPATH=<tree B>/python python tests/python/engine/fixture_diff.py dump OUT_B
    python tests/python/engine/fixture_diff.py diff OUT_A OUT_B

`diff` prints, per (input, table), "same" or the rows that differ (polars equals, row order
kept; packets=True so the packets table is compared too).
"""
import sys
from pathlib import Path

import polars as pl

DATA = Path(__file__).resolve().parents[2] / "data"


def inputs():
    files = sorted(p for p in DATA.rglob("*") if ".pcap" in p.name and p.is_file())
    for p in files:
        yield str(p.relative_to(DATA)).replace("/", "__"), {"paths": [str(p)]}
    for c in files:
        if ".client." in c.name:
            s = c.with_name(c.name.replace(".client.", ".server."))
            if s.exists():
                yield "pair:" + str(c.relative_to(DATA)).split(".client.")[0].replace("/", "__"), {"client": str(c), "server": str(s)}


def dump(out):
    import hsrtcp

    out = Path(out)
    for name, kw in inputs():
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        try:
            ds = hsrtcp.analyze(packets=True, **kw)
        except Exception as e:  # the error itself is the result to compare
            (d / "error.txt").write_text(f"{type(e).__name__}: {e}\n")
            continue
        for t, df in ds.tables().items():
            df.write_parquet(d / f"{t}.parquet")


def diff(a, b):
    a, b = Path(a), Path(b)
    ndiff = 0
    for da in sorted(p for p in a.iterdir() if p.is_dir()):
        db = b / da.name
        names = sorted({p.name for p in da.iterdir()} | {p.name for p in db.iterdir()})
        for n in names:
            pa, pb = da / n, db / n
            if not (pa.exists() and pb.exists()):
                print(f"{da.name} {n}: only in {'A' if pa.exists() else 'B'}")
                ndiff += 1
                continue
            if n.endswith(".txt"):
                same = pa.read_text() == pb.read_text()
            else:
                fa, fb = pl.read_parquet(pa), pl.read_parquet(pb)
                same = fa.equals(fb)
            if same:
                continue
            ndiff += 1
            print(f"{da.name} {n}: DIFFERS")
            if n.endswith(".parquet") and fa.columns == fb.columns and fa.height == fb.height:
                cols = [c for c in fa.columns if not fa[c].equals(fb[c])]
                rows = None
                for c in cols:
                    ne = fa[c].ne_missing(fb[c]) if fa[c].dtype == fb[c].dtype else pl.Series([True] * fa.height)
                    rows = ne if rows is None else rows | ne
                idx = [i for i, v in enumerate(rows) if v] if rows is not None else []
                print(f"   columns {cols}, {len(idx)} rows")
                for i in idx[:8]:
                    print("   A", {c: fa[c][i] for c in cols}, "\n   B", {c: fb[c][i] for c in cols})
            elif n.endswith(".parquet"):
                print(f"   shape A {fa.shape} B {fb.shape}")
                key = [c for c in ("kind", "class", "cause") if c in fa.columns]
                if key:
                    ca = fa.group_by(key).len().sort(key)
                    cb = fb.group_by(key).len().sort(key)
                    print("   A", ca.join(cb, on=key, how="full", suffix="_B").filter(
                        pl.col("len").ne_missing(pl.col("len_B"))).to_dicts())
    print(f"{ndiff} differing tables")


if __name__ == "__main__":
    {"dump": dump, "diff": diff}[sys.argv[1]](*sys.argv[2:])
