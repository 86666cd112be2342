"""Golden tables: every table of every tests/data capture, as committed content digests.

    python -m hsrtcp.testing.golden            # compare with tests/data/golden/tables.json
    python -m hsrtcp.testing.golden --update   # rewrite it (only with an explained behaviour change)

The run list (the one in the tree; bench/fixture_diff.py uses it too): each capture analyzed
on its own with no vantage and with the vantage its name says, and each client/server pair
of the same name and form as a pair (two-vantage matcher); the packets table always. A run
that raises :class:`hsrtcp.errors.InputError` has that message as its result.

A table is kept as its row count, its columns in order with their dtypes and, per column, a
sha256 (first 12 hex digits) over a canonical byte form of its values (validity, then little-endian fixed-width
values or length-prefixed UTF-8; floats by their bits, NaN as one NaN). It depends on no hash
seed or polars version, only on the values. The tests/data directory is written as
``tests/data/`` in string values, so that the digests do not depend on where the tree is.
docs/testing.md says when to regenerate.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hsrtcp.errors import ExitCode

FORMAT = 1
DIGEST_HEX = 12  # 48 bits per column: enough to see a change, small enough to commit


def data_dir() -> Path:
    from hsrtcp.testing.fixtures import data_dir as _data_dir

    return _data_dir()


def expected_path() -> Path:
    return data_dir() / "golden" / "tables.json"


def captures(data: Path | None = None) -> list[Path]:
    data = data or data_dir()
    return sorted(p for p in data.rglob("*") if p.is_file() and ".pcap" in p.name)


def pairs(caps: list[Path]) -> list[tuple[Path, Path]]:
    out = []
    for c in caps:
        if ".client." in c.name:
            s = c.with_name(c.name.replace(".client.", ".server."))
            if s.exists():
                out.append((c, s))
    return out


@dataclass(frozen=True)
class Run:
    name: str  # "<path under tests/data>@none|client|server|pair"
    kwargs: dict = field(hash=False, compare=False)


def runs(data: Path | None = None) -> list[Run]:
    """Every run, in a fixed order: singles (per capture: none, then its named vantage), then pairs."""
    data = data or data_dir()
    caps = captures(data)
    out: list[Run] = []
    for p in caps:
        rel = p.relative_to(data).as_posix()
        for v in [None] + [v for v in ("client", "server") if f".{v}." in p.name]:
            out.append(Run(f"{rel}@{v or 'none'}", {"paths": [p], "vantage": v, "packets": True}))
    for c, s in pairs(caps):
        out.append(Run(f"{c.relative_to(data).as_posix()}@pair", {"client": c, "server": s, "packets": True}))
    return out


def run_tables(run: Run):
    """The run's tables ``{name: DataFrame}``, or the text of the InputError it raised."""
    import hsrtcp
    from hsrtcp.errors import InputError

    try:
        return hsrtcp.analyze(workers=1, **run.kwargs).tables()
    except InputError as e:
        return str(e)


# -- digests -------------------------------------------------------------------------------

def dtype_name(dtype) -> str:
    """A dtype spelled from its parts (not polars' repr, which changes between versions)."""
    import polars as pl

    if isinstance(dtype, pl.List):
        return f"List[{dtype_name(dtype.inner)}]"
    if isinstance(dtype, pl.Array):
        return f"Array[{dtype_name(dtype.inner)};{dtype.size}]"
    if isinstance(dtype, pl.Struct):
        return "Struct{" + ",".join(f"{f.name}:{dtype_name(f.dtype)}" for f in dtype.fields) + "}"
    if isinstance(dtype, pl.Datetime):
        return f"Datetime[{dtype.time_unit},{dtype.time_zone}]"
    if isinstance(dtype, pl.Duration):
        return f"Duration[{dtype.time_unit}]"
    return dtype.base_type().__name__ if hasattr(dtype, "base_type") else type(dtype).__name__


def _feed(h, s) -> None:
    """Canonical bytes of a Series into hash ``h``."""
    import numpy as np
    import polars as pl

    dt = s.dtype
    h.update(s.is_not_null().cast(pl.UInt8).to_numpy().tobytes())
    if dt == pl.Boolean:
        h.update(s.fill_null(False).cast(pl.UInt8).to_numpy().tobytes())
    elif dt.is_float():
        a = s.fill_null(0.0).to_numpy()
        a = np.where(np.isnan(a), np.nan, a)  # every NaN as one bit pattern
        h.update(a.astype(a.dtype.newbyteorder("<")).tobytes())
    elif dt.is_integer():
        a = s.fill_null(0).to_numpy()
        h.update(a.astype(a.dtype.newbyteorder("<")).tobytes())
    elif dt in (pl.String, pl.Categorical) or isinstance(dt, pl.Enum):
        enc = [v.encode("utf-8") for v in s.cast(pl.String).fill_null("").to_list()]
        h.update(np.array([len(b) for b in enc], dtype="<u8").tobytes())
        h.update(b"".join(enc))
    elif dt == pl.Binary:
        enc = [b or b"" for b in s.to_list()]
        h.update(np.array([len(b) for b in enc], dtype="<u8").tobytes())
        h.update(b"".join(enc))
    elif isinstance(dt, (pl.List, pl.Array)):
        h.update(np.array(s.list.len().fill_null(0).to_list() if isinstance(dt, pl.List)
                          else [0 if v is None else dt.size for v in s.to_list()], dtype="<u8").tobytes())
        inner = pl.Series(s.to_arrow().flatten()) if len(s) else pl.Series([], dtype=dt.inner)
        _feed(h, inner.cast(dt.inner))
    elif isinstance(dt, pl.Struct):
        for f in s.struct.unnest().iter_columns():
            _feed(h, f)
    elif dt.is_temporal():
        _feed(h, s.to_physical())
    elif dt == pl.Null:
        pass
    else:  # a dtype this does not know: its values as text (still exact for the types above)
        _feed(h, s.cast(pl.String))


def column_digest(s) -> str:
    h = hashlib.sha256()
    _feed(h, s)
    return h.hexdigest()[:DIGEST_HEX]


def _placeless(df, data: Path):
    """String columns with the tests/data directory written as ``tests/data/``."""
    import polars as pl

    prefix = str(data.resolve()) + os.sep
    cols = [c for c, d in df.schema.items() if d == pl.String]
    if not cols:
        return df
    return df.with_columns(pl.col(cols).str.replace_all(prefix, "tests/data/", literal=True))


def table_digest(df, data: Path | None = None) -> dict:
    """``{"rows": n, "schema": [[column, dtype], ...] in table order, "digests": [...] alike}``."""
    df = _placeless(df, data or data_dir())
    return {"rows": df.height, "schema": [[c, dtype_name(d)] for c, d in df.schema.items()],
            "digests": [column_digest(s) for s in df.iter_columns()]}


def run_digest(run: Run, data: Path | None = None) -> dict:
    data = data or data_dir()
    result = run_tables(run)
    if isinstance(result, str):
        return {"error": result.replace(str(data.resolve()) + os.sep, "tests/data/")}
    return {"tables": {t: table_digest(df, data) for t, df in sorted(result.items())}}


# -- comparison ----------------------------------------------------------------------------

def differences(name: str, expected: dict | None, actual: dict) -> list[str]:
    """What differs between a run's committed and computed digests, one line per finding;
    empty when equal. Lines name the run, the table, the row counts and the columns."""
    if expected is None:
        return [f"{name}: not in the golden file (a new capture? regenerate: docs/testing.md)"]
    out = []
    if expected.get("error") != actual.get("error"):
        out.append(f"{name}: error {expected.get('error')!r} -> {actual.get('error')!r}")
    et, at = expected.get("tables", {}), actual.get("tables", {})
    for t in sorted(set(et) | set(at)):
        if t not in at:
            out.append(f"{name} {t}: table missing ({et[t]['rows']} rows expected)")
            continue
        if t not in et:
            out.append(f"{name} {t}: table not expected ({at[t]['rows']} rows)")
            continue
        e, a = et[t], at[t]
        ec = {c: (d, h) for (c, d), h in zip(e["schema"], e["digests"])}
        ac = {c: (d, h) for (c, d), h in zip(a["schema"], a["digests"])}
        changed = [c for c in sorted(set(ec) & set(ac)) if ec[c] != ac[c]]
        gone, new = sorted(set(ec) - set(ac)), sorted(set(ac) - set(ec))
        parts = []
        if changed:
            parts.append("columns differ: " + ", ".join(changed))
            dtypes = [f"{c} {ec[c][0]} -> {ac[c][0]}" for c in changed if ec[c][0] != ac[c][0]]
            if dtypes:
                parts.append("dtypes changed: " + ", ".join(dtypes))
        if gone:
            parts.append("columns missing: " + ", ".join(gone))
        if new:
            parts.append("columns not expected: " + ", ".join(new))
        if not (gone or new) and list(ec) != list(ac):
            parts.append("column order differs")
        if parts or e["rows"] != a["rows"]:
            out.append(f"{name} {t}: rows {e['rows']} expected, {a['rows']} now; "
                       + ("; ".join(parts) or "columns equal"))
    return out


# On disk each distinct schema is written once ("schemas", named by table and a digest of
# the schema) and a table's digests are one string in its schema's order: 12 schemas serve
# about 1,500 tables, a third of the size of a column-by-column file.

def _schema_id(table: str, schema: list) -> str:
    return f"{table}/{hashlib.sha256(json.dumps(schema).encode()).hexdigest()[:8]}"


def to_file(digests: dict) -> dict:
    schemas: dict[str, list] = {}
    out: dict[str, dict] = {}
    for run, r in digests.items():
        if "tables" not in r:
            out[run] = r
            continue
        tables = {}
        for t, d in r["tables"].items():
            sid = _schema_id(t, d["schema"])
            schemas[sid] = d["schema"]
            tables[t] = {"rows": d["rows"], "schema": sid, "digests": " ".join(d["digests"])}
        out[run] = {"tables": tables}
    return {"format": FORMAT,
            "about": "content digests of every table of every tests/data run: python -m hsrtcp.testing.golden; "
                     "docs/testing.md",
            "schemas": schemas, "runs": out}


def from_file(doc: dict) -> dict:
    schemas = doc["schemas"]
    out = {}
    for run, r in doc["runs"].items():
        if "tables" in r:
            r = {"tables": {t: {"rows": d["rows"], "schema": schemas[d["schema"]], "digests": d["digests"].split()}
                            for t, d in r["tables"].items()}}
        out[run] = r
    return out


def load(path: Path | None = None) -> dict:
    """The committed digests, ``{run: {"tables": {table: table_digest}} or {"error": text}}``."""
    path = path or expected_path()
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path}: golden format {doc.get('format')!r}, this code reads {FORMAT}")
    return from_file(doc)


def dump(digests: dict, path: Path) -> None:
    from hsrtcp.atomic import open_output

    with open_output(path) as f:
        f.write(json.dumps(to_file(digests), indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hsrtcp.testing.golden", description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="rewrite the golden file from this build")
    ap.add_argument("--file", type=Path, help="golden file (default tests/data/golden/tables.json)")
    ap.add_argument("-k", dest="only", help="only the runs whose name contains this text")
    a = ap.parse_args(argv)
    path = a.file or expected_path()
    data = data_dir()
    todo = [r for r in runs(data) if not a.only or a.only in r.name]
    if a.update and a.only:
        ap.error("--update rewrites the whole file: no -k")
    digests = {r.name: run_digest(r, data) for r in todo}
    if a.update:
        dump(digests, path)
        tables = sum(len(d.get("tables", {})) for d in digests.values())
        print(f"{path}: {len(digests)} runs, {tables} tables")
        return ExitCode.OK
    expected = load(path)
    found = [line for r in todo for line in differences(r.name, expected.get(r.name), digests[r.name])]
    if not a.only:
        found += [f"{n}: in the golden file, no longer a run" for n in sorted(set(expected) - set(digests))]
    print("\n".join(found) if found else f"{len(todo)} runs: every table as committed")
    return ExitCode.FAILED if found else ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
