"""CSV radio logs: the lab's ``radio.csv`` (docs/formats/radio.md) and a generic CSV whose
columns and units the user maps (docs/context.md, "Generic CSV").

Rows are read with the standard ``csv`` module so every value keeps its line number (a
quoted field may span lines; ``line`` is where its row starts); the columns are then typed
with polars, and the first value that does not convert is reported as ``file:line``.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from datetime import datetime, timezone

import polars as pl

from hsrtcp.context.schema import RadioLogError, conform, empty_radio

# Fields of the normalized log a generic CSV can map, with their accepted aliases.
FIELDS = ("time", "lat", "lon", "speed", "carrier", "rat", "lac", "cid", "rsrp", "rsrq", "arfcn", "generation")
ALIASES = {"ts": "time", "tac": "lac", "pci": "cid", "latitude": "lat", "longitude": "lon",
           "speed_kmh": "speed", "rsrp_dbm": "rsrp", "rsrq_db": "rsrq", "earfcn": "arfcn",
           "nrarfcn": "arfcn", "uarfcn": "arfcn"}
# Column the generic reader looks for when a field is not mapped (the lab's names first).
DEFAULT_COLUMNS = {"time": ("ts", "time", "timestamp"), "lat": ("lat", "latitude"),
                   "lon": ("lon", "longitude"), "speed": ("speed_kmh", "speed"),
                   "carrier": ("carrier", "operator"), "rat": ("rat", "network_type"),
                   "lac": ("lac", "tac"), "cid": ("cid", "ci", "pci"), "rsrp": ("rsrp_dbm", "rsrp"),
                   "rsrq": ("rsrq_db", "rsrq"), "arfcn": ("arfcn", "earfcn", "nrarfcn", "uarfcn"),
                   "generation": ("generation",)}
# Units a field may be given in -> factor to the normalized unit. Time units are handled apart.
UNITS = {
    "speed": {"km/h": 1.0, "kmh": 1.0, "m/s": 3.6, "mps": 3.6, "mph": 1.609344, "kn": 1.852,
              "knots": 1.852},
    "lat": {"deg": 1.0}, "lon": {"deg": 1.0},
    "rsrp": {"dbm": 1.0}, "rsrq": {"db": 1.0},
}
TIME_UNITS = ("s", "ms", "us", "iso")
UNNAMED_CARRIER = "-"
LAB_COLUMNS = ("ts", "lat", "lon", "speed_kmh", "carrier", "rat", "lac", "cid", "rsrp_dbm", "rsrq_db")
# optional columns of the lab format (a scenario whose handoffs come from a recorded log)
LAB_OPTIONAL = ("arfcn", "generation")


def parse_mapping(text: str | None) -> dict[str, tuple[str, str | None]]:
    """``"time=Timestamp:ms,speed=Speed:m/s,cid=PCI"`` -> ``{field: (column, unit)}``.

    Raises :class:`ValueError` (a usage error) for unknown fields or units, a field mapped
    twice or no column; the message does not name the option (the caller does:
    :mod:`hsrtcp.context.options`)."""
    out: dict[str, tuple[str, str | None]] = {}
    if not text:
        return out
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise ValueError(f"{item!r} is not FIELD=COLUMN[:UNIT]")
        field, col = (x.strip() for x in item.split("=", 1))
        field = ALIASES.get(field.lower(), field.lower())
        if field not in FIELDS:
            raise ValueError(f"unknown field {field!r} (known: {', '.join(FIELDS)}, "
                             f"aliases {', '.join(sorted(ALIASES))})")
        if field in out:
            raise ValueError(f"{field} is mapped twice")
        unit = None
        if field == "time" and ":%" in col:
            # a strptime format (it may hold colons): time=Timestamp:%Y.%m.%d_%H.%M.%S
            col, unit = col.split(":%", 1)
            col, unit = col.strip(), "%" + unit.strip()
            _check_strptime(unit)
        elif ":" in col:
            col, unit = col.rsplit(":", 1)
            col, unit = col.strip(), unit.strip().lower()
            known = TIME_UNITS if field == "time" else tuple(UNITS.get(field, {}))
            if unit not in known:
                shown = ", ".join(known) or "none, the field has no unit"
                if field == "time":
                    shown += " or a strptime format such as %Y.%m.%d_%H.%M.%S"
                raise ValueError(f"unknown unit {unit!r} for {field} (known: {shown})")
        if not col:
            raise ValueError(f"{item!r}: no column name for {field}")
        out[field] = (col, unit)
    return out


def _check_strptime(fmt: str) -> None:
    """A time format must hold a directive and format a known instant (ValueError otherwise)."""
    try:
        datetime(2016, 5, 4, 10, 20, 30).strftime(fmt)
    except ValueError as exc:
        raise ValueError(f"time format {fmt!r}: {exc}") from None


def read_rows(path: str | os.PathLike) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, rows (as strings) and the 1-based line each row starts on. (Radio logs are
    small — 1 Hz, tens of bytes a row — so the file is decoded whole, which lets a decoding
    error name its line.)"""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise RadioLogError(f"{name}: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RadioLogError(f"{name}:{line}: not UTF-8 text (byte {exc.start}): not a CSV radio log?") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise RadioLogError(f"{name}:{line}: NUL byte: not a CSV radio log?")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise RadioLogError(f"{name}:1: empty file (expected a CSV header)")
        header = [h.strip() for h in header]
        if len(set(header)) != len(header):
            raise RadioLogError(f"{name}:1: repeated column names in the header")
        rows, lines = [], []
        start = reader.line_num + 1
        for row in reader:
            if row and any(v.strip() for v in row):
                if len(row) != len(header):
                    raise RadioLogError(f"{name}:{start}: {len(row)} fields, the header has {len(header)}")
                rows.append(row)
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise RadioLogError(f"{name}:{reader.line_num}: {exc}") from None
    return header, rows, lines


def _column(name: str, header, rows, lines, col: str) -> pl.Series:
    i = header.index(col)
    return pl.Series(col, [r[i].strip() or None for r in rows], dtype=pl.String)


def to_number(file: str, s: pl.Series, lines: list[int], what: str, dtype=pl.Float64) -> pl.Series:
    """Cast a string column; the first value that is not a (finite) number is an error.
    ``pl.Int64`` columns are cell identities: :func:`to_identity`."""
    if dtype == pl.Int64:
        return to_identity(file, s, lines, what)
    f = s.cast(pl.Float64, strict=False)
    bad = s.is_not_null() & (f.is_null() | f.is_nan() | f.is_infinite())
    if bad.any():
        i = int(bad.arg_max())
        raise RadioLogError(f"{file}:{lines[i]}: {what} {s[i]!r} is not a number")
    return f


INT64_MAX = 2**63 - 1


def to_identity(file: str, s: pl.Series, lines: list[int], what: str) -> pl.Series:
    """A cell identity column (lac, cid) as Int64: decimal integers 0 … 2^63−1, read exactly
    (not through a float, which rounds above 2^53); ``10.0`` (an exporter's float column) is
    taken below 2^53. Negative, fractional, hexadecimal or larger values are errors naming
    the line: a cell identity that cannot be stored must not stop the tables being written."""
    exact = s.cast(pl.Int64, strict=False)
    f = s.cast(pl.Float64, strict=False)
    whole = (f.is_finite() & (f == f.floor()) & (f.abs() < 2.0**53)).fill_null(False)
    as_float = f.zip_with(whole, pl.Series([None] * len(f), dtype=pl.Float64)).cast(pl.Int64)
    v = exact.zip_with(exact.is_not_null(), as_float)
    bad = ((s.is_not_null() & v.is_null()) | (v < 0)).fill_null(False)
    if bad.any():
        i = int(bad.arg_max())
        t = s[i]
        if re.fullmatch(r"\+?[0-9]+", t):
            why = f"is larger than 2^63-1 ({INT64_MAX})"
        elif re.fullmatch(r"-[0-9.]+", t) or (v[i] is not None and v[i] < 0):
            why = "is negative (a cell identity is >= 0; leave the field empty when it is unknown)"
        elif re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", t):
            why = "is hexadecimal: give cell identities in decimal"
        elif f[i] is not None and math.isfinite(f[i]) and f[i] == math.floor(f[i]):
            why = "is beyond 2^53 in float notation, where it is not exact: write its digits"
        else:
            why = "is not a whole number"
        raise RadioLogError(f"{file}:{lines[i]}: {what} {t!r} {why}")
    return v


def to_generation(file: str, s: pl.Series, lines: list[int], what: str) -> pl.Series:
    """A generation column (2G, 3G, 4G, 5G NSA, 5G SA; hsrtcp.context.generation), normalized;
    any other value is an error naming its line."""
    from hsrtcp.context.generation import check_generation

    out = []
    for i, v in enumerate(s.to_list()):
        try:
            out.append(check_generation(v))
        except ValueError as exc:
            raise RadioLogError(f"{file}:{lines[i]}: {what}: {exc}") from None
    return pl.Series(out, dtype=pl.String)


def _times(file: str, s: pl.Series, lines: list[int], unit: str | None) -> pl.Series:
    """Epoch seconds from epoch numbers (unit s/ms/us), ISO 8601 text or text in a strptime
    format (``%Y.%m.%d_%H.%M.%S``); a time without a zone is UTC."""
    if unit is not None and unit.startswith("%"):
        return strptime_column(file, s, lines, unit)
    if unit in (None, "s", "ms", "us"):
        f = s.cast(pl.Float64, strict=False)
        numeric = not (s.is_not_null() & f.is_null()).any()
        if numeric or unit is not None:
            f = to_number(file, s, lines, "time")
            return f / {None: 1.0, "s": 1.0, "ms": 1e3, "us": 1e6}[unit]
    out = []
    for i, v in enumerate(s.to_list()):
        if v is None:
            out.append(None)
            continue
        try:
            d = datetime.fromisoformat(v)
        except ValueError:
            raise RadioLogError(f"{file}:{lines[i]}: time {v!r} is neither epoch seconds nor "
                                f"ISO 8601 (e.g. 2016-05-04T10:20:30.5+08:00)") from None
        if d.tzinfo is None:
            d = d.replace(tzinfo=timezone.utc)
        out.append(d.timestamp())
    return pl.Series(out, dtype=pl.Float64)


def strptime_column(file: str, s: pl.Series, lines: list[int], fmt: str, what: str = "time") -> pl.Series:
    """Epoch seconds of text times in the strptime format ``fmt`` (no zone: UTC); the first
    value that does not match is an error naming its line."""
    out = []
    for i, v in enumerate(s.to_list()):
        if v is None:
            out.append(None)
            continue
        try:
            d = datetime.strptime(v.strip(), fmt)
        except ValueError:
            raise RadioLogError(f"{file}:{lines[i]}: {what} {v!r} does not match the format {fmt}") from None
        if d.tzinfo is None:
            d = d.replace(tzinfo=timezone.utc)
        out.append(d.timestamp())
    return pl.Series(out, dtype=pl.Float64)


def read_lab(path: str | os.PathLike, t0: float | None = None) -> pl.DataFrame:
    """The lab's radio.csv. ``t0``: epoch of the bundle's time 0 (bundle.md); without it the
    ``ts`` column is taken as epoch seconds (a field log in the lab's format)."""
    file = os.fspath(path)
    header, rows, lines = read_rows(file)
    missing = [c for c in ("ts", "carrier", "rat", "lac", "cid") if c not in header]
    if missing:
        raise RadioLogError(f"{file}:1: missing column(s) {', '.join(missing)} (radio.md needs "
                            f"{', '.join(LAB_COLUMNS)})")
    if not rows:
        return empty_radio()
    cols = {}
    for c in LAB_COLUMNS + LAB_OPTIONAL:
        if c not in header:
            continue
        s = _column(file, header, rows, lines, c)
        if c in ("carrier", "rat"):
            cols[c] = s
        elif c == "generation":
            cols[c] = to_generation(file, s, lines, c)
        else:
            cols[c] = to_number(file, s, lines, c, pl.Int64 if c in ("lac", "cid", "arfcn") else pl.Float64)
    df = pl.DataFrame(cols)
    if t0 is not None:
        df = df.with_columns(pl.col("ts") + t0)
    df = df.with_columns(pl.lit(os.path.basename(file)).alias("source"), pl.Series("line", lines, dtype=pl.Int64))
    return conform(df)


def read_generic(path: str | os.PathLike, mapping: dict[str, tuple[str, str | None]]) -> pl.DataFrame:
    """A CSV with any column names: ``mapping`` (:func:`parse_mapping`) says which column holds
    which field and in which unit; unmapped fields are looked up under their usual names."""
    file = os.fspath(path)
    header, rows, lines = read_rows(file)
    chosen: dict[str, tuple[str, str | None]] = {}
    for field in FIELDS:
        if field in mapping:
            col, unit = mapping[field]
            if col not in header:
                raise RadioLogError(f"{file}:1: no column {col!r} (mapped to {field}); the header "
                                    f"has {', '.join(header)}")
            chosen[field] = (col, unit)
        else:
            for cand in DEFAULT_COLUMNS[field]:
                hit = [h for h in header if h.lower() == cand]
                if hit:
                    chosen[field] = (hit[0], None)
                    break
    if "time" not in chosen:
        raise RadioLogError(f"{file}:1: no time column (map one: --radio-map time=COLUMN[:s|ms|us|iso]); "
                            f"the header has {', '.join(header)}")
    if not ({"lat", "lon"} <= set(chosen) or "speed" in chosen or "cid" in chosen):
        raise RadioLogError(f"{file}:1: neither position (lat, lon), speed nor cell (cid) columns "
                            f"found; map them with --radio-map")
    if ("lat" in chosen) != ("lon" in chosen):
        raise RadioLogError(f"{file}:1: lat and lon must both be given")
    if not rows:
        return empty_radio()
    out: dict[str, pl.Series] = {}
    for field, (col, unit) in chosen.items():
        s = _column(file, header, rows, lines, col)
        if field == "time":
            out["ts"] = _times(file, s, lines, unit)
        elif field in ("carrier", "rat"):
            out[field] = s
        elif field == "generation":
            out[field] = to_generation(file, s, lines, f"generation ({col})")
        elif field in ("lac", "cid", "arfcn"):
            out[field] = to_number(file, s, lines, f"{field} ({col})", pl.Int64)
        else:
            v = to_number(file, s, lines, f"{field} ({col})")
            name = {"speed": "speed_kmh", "rsrp": "rsrp_dbm", "rsrq": "rsrq_db"}.get(field, field)
            out[name] = v * UNITS[field].get(unit or next(iter(UNITS[field])), 1.0)
    df = pl.DataFrame(out).with_columns(pl.lit(os.path.basename(file)).alias("source"),
                                        pl.Series("line", lines, dtype=pl.Int64))
    if "cid" in df.columns and "carrier" not in df.columns:
        # cells without a carrier column: one carrier, named "-"
        df = df.with_columns(pl.when(pl.col("cid").is_not_null()).then(pl.lit(UNNAMED_CARRIER)).alias("carrier"))
    return conform(df)
