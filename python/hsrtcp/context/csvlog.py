"""CSV radio logs: the lab's ``radio.csv`` (docs/formats/radio.md) and a generic CSV whose
columns and units the user maps (docs/context.md, "Generic CSV").

The file is streamed in blocks (:func:`iter_rows`): every row keeps its line number (a
quoted field may span lines; ``line`` is where its row starts), each block's columns are typed
with polars, and the first value that does not convert is reported as ``file:line``. Memory is
one block of text plus the typed frame, whatever the file's size; a line longer than
:data:`MAX_LINE_BYTES` is an error naming it.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone

import numpy as np
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
# the lab columns that are numbers: cell identities exact as Int64, the others Float64
LAB_NUMBERS = {c: pl.Int64 if c in ("lac", "cid", "arfcn") else pl.Float64
               for c in LAB_COLUMNS + LAB_OPTIONAL if c not in ("carrier", "rat", "generation")}


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


# Longest line a CSV radio log may have, in bytes without the line end (docs/formats/radio.md).
# A sample is ~70 bytes (a G-NetTrack row ~600); the bound keeps what one line can cost bounded.
MAX_LINE_BYTES = 1 << 20
# Bytes read at a time: the reader holds one block (plus one line) of text, never the file.
BLOCK_BYTES = 2 << 20
# Rows per chunk on the exact (csv module) path.
EXACT_ROWS = 65536
_BOM = b"\xef\xbb\xbf"


def iter_rows(path: str | os.PathLike, types: dict | None = None) -> Iterator:
    """Stream a CSV log: yields the header (stripped names) first, then chunks ``(frame,
    lines)``: ``frame`` the chunk's rows as String columns named by the header (values
    stripped, empty = null; rows with no value left out), ``lines`` the 1-based line each row
    starts on (an Int64 Series). Memory is one block of the file, whatever its size.

    Blocks without a quote, a blank line or a line of another field count go through polars'
    CSV parser; any other block through the ``csv`` module (a quoted field may span lines:
    ``line`` is where its row starts), from the first quote on to the end of the file. A
    line longer than :data:`MAX_LINE_BYTES`, bytes that are not UTF-8, a NUL byte or a field
    count that differs from the header are errors naming the file and the line.

    ``types``: column -> Float64 or Int64 for the polars path to parse at once (a radio
    log's numbers; a block where any value does not parse plainly is read as text, so that
    the caller's conversion names the value); the frame's dtypes say which were."""
    name = os.fspath(path)
    try:
        fh = open(name, "rb")
    except OSError as exc:
        raise RadioLogError(f"{name}: {exc.strerror}") from exc
    with fh:
        first = fh.readline(MAX_LINE_BYTES + 1)
        if first.startswith(_BOM):
            first = first[len(_BOM):]
        if not first:
            raise RadioLogError(f"{name}:1: empty file (expected a CSV header)")
        if b'"' in first or b"\r" in first.rstrip(b"\r\n"):  # quotes, a bare CR: the exact path
            yield from _exact_rows(name, _lines(name, first, fh, 1), None)
            return
        _line_ok(name, first, 1)
        text = _decode(name, first, 1)
        header = [h.strip() for h in next(csv.reader([text]), [])]
        _check_header(name, header)
        yield header
        line = 2          # line of the block's first byte
        rest = b""        # an unfinished line carried to the next block
        while True:
            block = fh.read(BLOCK_BYTES)
            data = rest + block if rest else block
            if not data:
                return
            cut = len(data) if not block else data.rfind(b"\n") + 1
            if cut == 0:  # no line end in the block: one long line
                _line_ok(name, data, line)
                rest = data
                continue
            piece, rest = data[:cut], data[cut:]
            ends = int(np.count_nonzero(np.frombuffer(piece, dtype=np.uint8) == 10))  # (bytes.count: 3x slower)
            _line_ok(name, rest, line + ends)
            if b'"' in piece:
                # a quoted field may run over the block's end: the csv module from here on
                yield from _exact_rows(name, _lines(name, piece + rest, fh, line), header, line)
                return
            yield from _fast_rows(name, piece, line, header, types)
            line += ends


def _line_ok(name: str, raw: bytes, line: int) -> None:
    """An error when ``raw`` (one line, its end included if it has one) exceeds the bound."""
    n = len(raw) - (1 if raw.endswith(b"\n") else 0) - (1 if raw.endswith(b"\r\n") else 0)
    if n > MAX_LINE_BYTES:
        raise RadioLogError(f"{name}:{line}: line longer than {MAX_LINE_BYTES} bytes (the bound of a CSV "
                            f"radio log, docs/formats/radio.md): not a radio log, or a damaged one?")


def _decode(name: str, raw: bytes, line: int) -> str:
    """``raw`` (lines starting at ``line``) as text: UTF-8 without NUL, else an error naming the line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = line + raw.count(b"\n", 0, exc.start)
        raise RadioLogError(f"{name}:{at}: not UTF-8 text: not a CSV radio log?") from None
    if "\x00" in text:
        at = line + text.count("\n", 0, text.index("\x00"))
        raise RadioLogError(f"{name}:{at}: NUL byte: not a CSV radio log?")
    return text


def _check_header(name: str, header: list[str]) -> None:
    if len(set(header)) != len(header):
        raise RadioLogError(f"{name}:1: repeated column names in the header")


def _lines(name: str, prefix: bytes, fh, line: int) -> Iterator[str]:
    """Text lines from ``prefix`` and then the rest of ``fh``, each within the bound."""
    buf = io.BytesIO(prefix)
    while True:
        raw = buf.readline(MAX_LINE_BYTES + 2)
        if raw and not raw.endswith(b"\n"):  # the end of prefix: its line goes on in the file
            raw += fh.readline(MAX_LINE_BYTES + 2 - len(raw))
        if not raw:
            break
        if line == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        _line_ok(name, raw, line)
        yield from io.StringIO(_decode(name, raw, line), newline="")  # (a bare CR ends a line too)
        line += 1
    while raw := fh.readline(MAX_LINE_BYTES + 2):
        _line_ok(name, raw, line)
        yield from io.StringIO(_decode(name, raw, line), newline="")
        line += 1


def _exact_rows(name: str, lines: Iterator[str], header: list[str] | None, first: int = 1) -> Iterator:
    """Rows through the csv module from ``lines`` (the header first when ``header`` is None),
    in chunks of :data:`EXACT_ROWS` rows."""
    reader = csv.reader(lines)
    base = 0 if header is None else first - 1
    try:
        if header is None:
            got = next(reader, None)
            if got is None:
                raise RadioLogError(f"{name}:1: empty file (expected a CSV header)")
            header = [h.strip() for h in got]
            _check_header(name, header)
            yield header
        rows, at = [], []
        start = base + reader.line_num + 1
        for row in reader:
            if row and any(v.strip() for v in row):
                if len(row) != len(header):
                    raise RadioLogError(f"{name}:{start}: {len(row)} fields, the header has {len(header)}")
                rows.append(row)
                at.append(start)
                if len(rows) >= EXACT_ROWS:
                    yield _chunk(header, rows, at)
                    rows, at = [], []
            start = base + reader.line_num + 1
        if rows:
            yield _chunk(header, rows, at)
    except csv.Error as exc:
        raise RadioLogError(f"{name}:{base + reader.line_num}: {exc}") from None


def _chunk(header: list[str], rows: list[list[str]], at: list[int]) -> tuple[pl.DataFrame, pl.Series]:
    cols = zip(*rows)
    frame = pl.DataFrame({h: pl.Series(h, list(c), dtype=pl.String) for h, c in zip(header, cols)})
    return _stripped(frame), pl.Series("line", at, dtype=pl.Int64)


def _stripped(frame: pl.DataFrame) -> pl.DataFrame:
    """Values stripped, empty ones null."""
    stripped = (pl.col(c).str.strip_chars() for c in frame.columns)
    return frame.with_columns(pl.when(e != "").then(e).alias(c) for c, e in zip(frame.columns, stripped))


def _fast_rows(name: str, piece: bytes, line: int, header: list[str], types: dict | None = None) -> Iterator:
    """Rows of ``piece`` (whole lines, no quote) through polars; a block with a blank line, a
    bare CR (a line end to the csv module) or a line of another field count through the csv
    module, which skips the one and names the other."""
    a = np.frombuffer(piece, dtype=np.uint8)
    ascii_only = not (a >= 128).any()
    if ascii_only:
        if 0 in a:
            _decode(name, piece, line)  # names the NUL's line
    else:
        _decode(name, piece, line)
    ends = np.flatnonzero(a == 10)
    if not piece.endswith(b"\n"):
        ends = np.append(ends, len(piece))
    starts = np.concatenate(([0], ends[:-1] + 1))
    cr = (ends > starts) & (a[np.maximum(ends - 1, 0)] == 13)
    long = ends - starts - cr > MAX_LINE_BYTES
    if long.any():
        i = int(np.argmax(long))
        _line_ok(name, piece[starts[i]:ends[i]], line + i)
    commas = np.flatnonzero(a == 44)
    per_line = np.searchsorted(commas, ends) - np.searchsorted(commas, starts)
    blank = (ends - starts == 0) | ((ends - starts == 1) & (a[np.minimum(starts, len(a) - 1)] == 13))
    bare_cr = b"\r" in piece and piece.count(b"\r") != piece.count(b"\r\n")  # (most logs have no CR)
    if bare_cr or blank.any() or (per_line != len(header) - 1).any():
        yield from _exact_rows(name, io.StringIO(piece.decode("utf-8"), newline=""), header, line)
        return
    lines = pl.Series("line", np.arange(line, line + len(starts), dtype=np.int64))
    # whitespace to strip (str.strip's: ASCII blanks, separators 28-31, non-ASCII spaces)?
    spaces = not ascii_only or ((a == 32) | (a == 9) | (a == 11) | (a == 12) | ((a >= 28) & (a <= 31))).any()
    frame = _typed(piece, header, types) if types and not spaces and 43 not in a else None  # (43: '+')
    if frame is not None:
        yield frame, lines
        return
    frame = pl.read_csv(piece, has_header=False, quote_char=None, schema={h: pl.String for h in header})
    if spaces:
        frame = _stripped(frame)
        keep = frame.select(pl.any_horizontal(pl.col(c).is_not_null() for c in header)).to_series()
        if not keep.all():
            frame, lines = frame.filter(keep), lines.filter(keep)
    yield frame, lines


def _typed(piece: bytes, header: list[str], types: dict) -> pl.DataFrame | None:
    """``piece`` with the ``types`` columns parsed as numbers by polars' reader (one pass, no
    text columns: less CPU and less memory a block than text then casts, issue 32); None when
    a value would not pass :func:`to_number` / :func:`to_identity` as it is (not a number,
    NaN, infinite, a negative identity): the text path then names it. Plain decimal text
    parses to the same value either way (the same parser as a cast)."""
    schema = {h: types.get(h, pl.String) for h in header}
    try:
        frame = pl.read_csv(piece, has_header=False, quote_char=None, schema=schema)
    except pl.exceptions.PolarsError:
        return None
    # every value plain: identities >= 0, other numbers finite (one pass over the block)
    plain = [(pl.col(c) >= 0) if t == pl.Int64 else pl.col(c).is_finite()
             for c, t in types.items() if c in frame.columns]
    if plain and not frame.select(pl.all_horizontal(e.fill_null(True).all() for e in plain)).item():
        return None
    return frame


def convert_columns(jobs: dict[str, Callable[[], pl.Series]]) -> dict[str, pl.Series]:
    """Each column of a block converted by its job; when several columns hold a bad value the
    error of the earliest line is raised, not the first column's (a user mends a log from the
    top)."""
    out, errors = {}, []
    for name, job in jobs.items():
        try:
            out[name] = job()
        except RadioLogError as exc:
            if exc.line is None:
                raise
            errors.append(exc)
    if errors:
        raise min(errors, key=lambda e: e.line)
    return out


def to_number(file: str, s: pl.Series, lines: list[int], what: str, dtype=pl.Float64) -> pl.Series:
    """Cast a string column; the first value that is not a (finite) number is an error.
    ``pl.Int64`` columns are cell identities: :func:`to_identity`."""
    if dtype == pl.Int64:
        return to_identity(file, s, lines, what)
    f = s.cast(pl.Float64, strict=False)
    bad = s.is_not_null() & (f.is_null() | f.is_nan() | f.is_infinite())
    if bad.any():
        i = int(bad.arg_max())
        raise RadioLogError(f"{file}:{lines[i]}: {what} {s[i]!r} is not a number", line=lines[i])
    return f


INT64_MAX = 2**63 - 1


def to_identity(file: str, s: pl.Series, lines: list[int], what: str) -> pl.Series:
    """A cell identity column (lac, cid) as Int64: decimal integers 0 … 2^63−1, read exactly
    (not through a float, which rounds above 2^53); ``10.0`` (an exporter's float column) is
    taken below 2^53. Negative, fractional, hexadecimal or larger values are errors naming
    the line: a cell identity that cannot be stored must not stop the tables being written."""
    exact = s.cast(pl.Int64, strict=False)
    if exact.null_count() == s.null_count() and not (exact < 0).any():
        return exact  # all decimal integers >= 0 (a log's usual column): nothing below changes them
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
        raise RadioLogError(f"{file}:{lines[i]}: {what} {t!r} {why}", line=lines[i])
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
            raise RadioLogError(f"{file}:{lines[i]}: {what}: {exc}", line=lines[i]) from None
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
    return _epochs(file, s, lines, datetime.fromisoformat,
                   lambda v: f"time {v!r} is neither epoch seconds nor ISO 8601 (e.g. 2016-05-04T10:20:30.5+08:00)")


def _epochs(file: str, s: pl.Series, lines: list[int], parse, wrong) -> pl.Series:
    """Epoch seconds of ``parse(value)`` (a datetime; no zone: UTC) per value; the first that
    ``parse`` refuses is an error naming its line, ``wrong(value)`` saying what is wrong."""
    out = []
    for i, v in enumerate(s.to_list()):
        if v is None:
            out.append(None)
            continue
        try:
            d = parse(v)
        except ValueError:
            raise RadioLogError(f"{file}:{lines[i]}: {wrong(v)}", line=lines[i]) from None
        if d.tzinfo is None:
            d = d.replace(tzinfo=timezone.utc)
        out.append(d.timestamp())
    return pl.Series(out, dtype=pl.Float64)


def strptime_column(file: str, s: pl.Series, lines: list[int], fmt: str, what: str = "time") -> pl.Series:
    """Epoch seconds of text times in the strptime format ``fmt`` (no zone: UTC); the first
    value that does not match is an error naming its line."""
    return _epochs(file, s, lines, lambda v: datetime.strptime(v.strip(), fmt),
                   lambda v: f"{what} {v!r} does not match the format {fmt}")


def read_lab(path: str | os.PathLike, t0: float | None = None) -> pl.DataFrame:
    """The lab's radio.csv. ``t0``: epoch of the bundle's time 0 (bundle.md); without it the
    ``ts`` column is taken as epoch seconds (a field log in the lab's format)."""
    frames = list(iter_lab(path, t0))
    return pl.concat(frames, rechunk=False) if frames else empty_radio()


def iter_lab(path: str | os.PathLike, t0: float | None = None) -> Iterator[pl.DataFrame]:
    """:func:`read_lab` block by block: normalized frames in file order."""
    file = os.fspath(path)
    chunks = iter_rows(file, LAB_NUMBERS)
    header = next(chunks)
    missing = [c for c in ("ts", "carrier", "rat", "lac", "cid") if c not in header]
    if missing:
        chunks.close()
        raise RadioLogError(f"{file}:1: missing column(s) {', '.join(missing)} (radio.md needs "
                            f"{', '.join(LAB_COLUMNS)})")
    source = os.path.basename(file)
    for rows, lines in chunks:
        jobs = {}
        for c in LAB_COLUMNS + LAB_OPTIONAL:
            if c not in header:
                continue
            s = rows.get_column(c)
            if c in ("carrier", "rat") or (s.dtype != pl.String and c in LAB_NUMBERS):
                jobs[c] = lambda s=s: s  # (a number column the reader parsed: checked there)
            elif c == "generation":
                jobs[c] = lambda s=s, c=c: to_generation(file, s, lines, c)
            else:
                ty = pl.Int64 if c in ("lac", "cid", "arfcn") else pl.Float64
                jobs[c] = lambda s=s, c=c, ty=ty: to_number(file, s, lines, c, ty)
        df = pl.DataFrame(convert_columns(jobs)).with_columns(lines, pl.lit(source).alias("source"))
        if t0 is not None:
            df = df.with_columns(pl.col("ts") + t0)
        yield conform(df)  # block by block: no operation on the whole frame


def read_generic(path: str | os.PathLike, mapping: dict[str, tuple[str, str | None]]) -> pl.DataFrame:
    """A CSV with any column names: ``mapping`` (:func:`parse_mapping`) says which column holds
    which field and in which unit; unmapped fields are looked up under their usual names."""
    frames = list(iter_generic(path, mapping))
    return pl.concat(frames, rechunk=False) if frames else empty_radio()


def iter_generic(path: str | os.PathLike, mapping: dict[str, tuple[str, str | None]]) -> Iterator[pl.DataFrame]:
    """:func:`read_generic` block by block: normalized frames in file order."""
    file = os.fspath(path)
    chunks = iter_rows(file)
    header = next(chunks)
    try:
        chosen = _choose(file, header, mapping)
    except RadioLogError:
        chunks.close()
        raise
    for rows, lines in chunks:
        jobs = {}
        for field, (col, unit) in chosen.items():
            s = rows.get_column(col)
            what = f"{field} ({col})"
            if field == "time":
                jobs["ts"] = lambda s=s, unit=unit: _times(file, s, lines, unit)
            elif field in ("carrier", "rat"):
                jobs[field] = lambda s=s: s
            elif field == "generation":
                jobs[field] = lambda s=s, what=f"generation ({col})": to_generation(file, s, lines, what)
            elif field in ("lac", "cid", "arfcn"):
                jobs[field] = lambda s=s, what=what: to_number(file, s, lines, what, pl.Int64)
            else:
                name = {"speed": "speed_kmh", "rsrp": "rsrp_dbm", "rsrq": "rsrq_db"}.get(field, field)
                scale = UNITS[field].get(unit or next(iter(UNITS[field])), 1.0)
                jobs[name] = lambda s=s, what=what, scale=scale: to_number(file, s, lines, what) * scale
        df = pl.DataFrame(convert_columns(jobs)).with_columns(lines, pl.lit(os.path.basename(file)).alias("source"))
        if "cid" in df.columns and "carrier" not in df.columns:
            # cells without a carrier column: one carrier, named "-"
            df = df.with_columns(pl.when(pl.col("cid").is_not_null()).then(pl.lit(UNNAMED_CARRIER)).alias("carrier"))
        yield conform(df)


def _choose(file: str, header: list[str], mapping: dict) -> dict[str, tuple[str, str | None]]:
    """Which column holds which field (and its unit): the mapping's, else the usual names."""
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
    return chosen
