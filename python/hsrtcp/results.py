"""The one reader of results directories: every consumer (``report``, ``study``, ``plot``,
``mptcp``, ``model fit``, :meth:`hsrtcp.Dataset.read`) opens the tables through
:class:`ResultsDir`, which checks each table against its versioned schema before anything
else reads it (docs/formats/output.md, "Reading results").

Expected schemas come from the code that writes the tables, never from a copy kept here:

- the engine's tables (flows, events, rtt, series, captures, mptcp*, pair_stats): the
  columns the Rust core declares (``hsrtcp._native.schemas()``, the lists docs/formats/
  documents); the two-vantage columns of flows and series (docs/formats/matched.md): the
  matcher's declared columns (``hsrtcp._native.matched_schemas()``);
- the context tables (radio, context, handoffs, suspensions, labels, coverage): the schemas
  their writers in :mod:`hsrtcp.context` use; the MPTCP instance metrics: those of
  :mod:`hsrtcp.mptcp.metrics`.

The version of each schema is :data:`VERSIONS` (the title of the table's docs/formats page;
a test keeps both equal): for the engine's tables the core's own (``hsrtcp._native.
schema_versions()``), whose Parquet writer puts it in every file it writes. The other
writers put it in each Parquet file's key-value metadata with :func:`metadata`
(``hsrtcp.schema`` = table, ``hsrtcp.schema_version`` = N).

Opening a table reads its footer only and refuses, with :class:`~hsrtcp.errors.InputError`
naming file and column: a missing file, an empty, cut or non-Parquet file, a file that says
it holds another table or a newer schema version, a column the consumer reads that is absent
(an older or different schema), and a column whose type is not the declared one. Compatible
types are read as the declared type: any narrower integer or float where a float is
declared, a narrower integer of the same signedness (or unsigned into signed), a column of
nulls. Ids (``flow_id``, ``*_flow_id``) are UInt64 in every table. A file without a version
is read as the current version when its columns pass these checks. An older version is read
as it is: the columns added since are absent, which the consumers that can do without them
handle as they always did (``series`` without ``bin_s``: 1-s bins, with a note); a consumer
that needs one refuses the file with a message naming it.

A corpus results directory (``hsrtcp analyze CORPUS``: one ``input=<id>`` partition per
input) is read as one through :class:`Corpus`: each partition checked as above, each table
its partitions' rows stacked with an ``input`` column (the report, the figures); so are the
many results directories of a study, each row tagged with its directory (``result``).

Reading turns NaN and ±inf floats into null: the tables' contract is "missing is null"
(the engine never writes either), and the consumers, JSON in the report above all, rely on it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.schemas import CLIENT, MATCHED, SERVER
from hsrtcp.versions import DOCS, SCHEMA_KEY, VERSION_KEY, VERSIONS, doc, file_version  # noqa: F401 - the reader's names


def _native_module():
    try:
        from hsrtcp import _native
    except ImportError:  # pragma: no cover - without a build only the Python tables are known
        return None
    return _native


#: the tables every ``hsrtcp analyze`` writes
CORE_TABLES = ("flows", "events", "rtt", "series", "captures")
#: the core's MPTCP tables, written by every analysis (empty without MPTCP)
MPTCP_TABLES = ("mptcp", "mptcp_subflows", "mptcp_series")

_NATIVE_TYPES = {"uint64": pl.UInt64, "uint32": pl.UInt32, "int64": pl.Int64, "float64": pl.Float64, "string": pl.String,
                 "bool": pl.Boolean}
_SIGNED = (pl.Int8, pl.Int16, pl.Int32, pl.Int64)
_UNSIGNED = (pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)


def metadata(table: str) -> dict[str, str]:
    """The key-value metadata a writer puts into ``table``'s Parquet file."""
    return {SCHEMA_KEY: table, VERSION_KEY: str(VERSIONS[table])}


def is_id(column: str) -> bool:
    return column == "flow_id" or column.endswith("_flow_id")


@cache
def declared() -> dict[str, dict[str, pl.DataType]]:
    """``{table: {column: type}}``: the columns every writer of the table writes."""
    out: dict[str, dict[str, pl.DataType]] = {}
    native = _native_module()
    if native is not None:
        for table, cols in native.schemas().items():
            out[table] = {name: _NATIVE_TYPES[ty] for name, ty, _doc in cols}
    from hsrtcp.schemas import (CONTEXT_SCHEMA, COVERAGE_SCHEMA, HANDOFF_SCHEMA, LABEL_SCHEMA, RADIO_SCHEMA,
                                SUSPENSION_SCHEMA, TRUTH_CAPACITY_SCHEMA, TRUTH_EVENTS_SCHEMA)

    out.update(truth_events=dict(TRUTH_EVENTS_SCHEMA), truth_capacity=dict(TRUTH_CAPACITY_SCHEMA))
    out.update(context=dict(CONTEXT_SCHEMA), handoffs=dict(HANDOFF_SCHEMA), labels=dict(LABEL_SCHEMA),
               suspensions=dict(SUSPENSION_SCHEMA), coverage=dict(COVERAGE_SCHEMA),
               radio=dict(RADIO_SCHEMA, run_id=pl.String))
    return out


@cache
def known() -> dict[str, dict[str, pl.DataType]]:
    """Types of columns a table may have beyond :func:`declared` (checked when present, never
    added): the two-vantage columns of flows and series, the instance metrics' typed columns."""
    out: dict[str, dict[str, pl.DataType]] = {}
    native = _native_module()
    if native is not None:
        for table, cols in native.matched_schemas().items():
            out[table] = {name: _NATIVE_TYPES[ty] for name, ty, _doc in cols}
    from hsrtcp.schemas import MPTCP_INSTANCE_TYPES, MPTCP_KT_SCHEMA, MPTCP_PATH_TYPES, MPTCP_RATE_SCHEMA

    out.update(mptcp_instances=dict(MPTCP_INSTANCE_TYPES), mptcp_paths=dict(MPTCP_PATH_TYPES),
               mptcp_kt=dict(MPTCP_KT_SCHEMA), mptcp_rates=dict(MPTCP_RATE_SCHEMA))
    return out


def expected_type(table: str, column: str) -> pl.DataType | None:
    t = declared().get(table, {}).get(column)
    if t is None:
        t = known().get(table, {}).get(column)
    if t is None and is_id(column):
        t = pl.UInt64
    return t


def compatible(got: pl.DataType, want: pl.DataType) -> bool:
    """Whether a column of type ``got`` reads as ``want`` without losing anything."""
    if got == want or got == pl.Null:
        return True
    if want == pl.Float64:
        return got.is_numeric()
    if want == pl.Int64:
        return any(got == t for t in (*_SIGNED[:-1], *_UNSIGNED[:-1]))
    if want == pl.UInt64:
        return any(got == t for t in _UNSIGNED[:-1])
    if want == pl.String:
        return isinstance(got, (pl.Categorical, pl.Enum))
    return False


def partitions(path: str | os.PathLike) -> list[str]:
    """A corpus results directory (``hsrtcp analyze CORPUS``, docs/scale.md) as its
    partitions ``path/input=<id>``, each one result; any other directory as itself."""
    d = os.fspath(path)
    if os.path.isfile(os.path.join(d, "flows.parquet")) or not os.path.isdir(d):
        return [d]
    parts = sorted(os.path.join(d, p) for p in os.listdir(d)
                   if p.startswith("input=") and os.path.isfile(os.path.join(d, p, "flows.parquet")))
    return parts or [d]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _footer(path: str) -> tuple[pl.Schema, dict[str, str]]:
    """Columns and key-value metadata of a Parquet file (its footer only)."""
    try:
        schema = pl.read_parquet_schema(path)
        if hasattr(pl, "read_parquet_metadata"):
            meta = pl.read_parquet_metadata(path)
        else:  # polars < 1.17
            import pyarrow.parquet as pq

            meta = {k.decode(): v.decode() for k, v in (pq.read_metadata(path).metadata or {}).items()}
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001 - polars raises several types for bad files
        size = os.path.getsize(path) if os.path.isfile(path) else None
        what = "an empty file" if size == 0 else "not a readable Parquet file (cut short, or other bytes)"
        raise InputError(f"{path}: cannot read as Parquet: {what} ({_first_line(exc)})") from None
    return schema, meta


def _lab_runs(path: str) -> bool:
    """A lab bundle (manifest.json) or a campaign folder (campaign.toml) given where results belong."""
    from hsrtcp.bundle import has_manifest

    return has_manifest(path) or os.path.isfile(os.path.join(path, "campaign.toml"))


class Table:
    """One table's file, checked: its schema as the reader delivers it."""

    def __init__(self, table: str, path: str, schema: pl.Schema, version: int | None):
        self.table, self.path, self.file_schema, self.version = table, path, schema, version
        self.casts: dict[str, pl.DataType] = {}
        self.wrong: dict[str, tuple[pl.DataType, pl.DataType]] = {}
        for col, got in schema.items():
            want = expected_type(table, col)
            if want is None or got == want:
                continue
            if compatible(got, want):
                self.casts[col] = want
            else:
                self.wrong[col] = (got, want)
        self.read_schema = pl.Schema({c: self.casts.get(c, t) for c, t in schema.items()})

    def described(self) -> str:
        if self.table not in VERSIONS:
            return f"the {self.table} table"
        return f"{self.table} schema version {VERSIONS[self.table]}, {doc(self.table)}"

    def schema(self) -> pl.Schema:
        """Column types as read: compatible columns as their declared type (a column of
        another type as it is; reading it is an error)."""
        return self.read_schema

    def require(self, columns, as_float=()) -> None:
        """An error naming the file for a column of ``columns`` it lacks (an older or other
        schema, said first) or one of another type than declared; ``as_float``: columns the
        consumer takes as numbers whatever their declared type (any numeric type will do)."""
        missing = [c for c in columns if c not in self.file_schema]
        if missing:
            shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
            written = (f"the file says schema version {self.version}" if self.version is not None
                       else "written by an older hsrtcp or another program")
            raise InputError(f"{self.path}: {self.table} table without the column(s) {shown}: an older or "
                             f"different schema than {self.described()} ({written}); "
                             f"re-run hsrtcp analyze with this hsrtcp")
        for col in columns:
            if col in as_float and not is_id(col):
                if not (self.file_schema[col].is_numeric() or self.file_schema[col] == pl.Null):
                    raise InputError(f"{self.path}: column {col} is {self.file_schema[col]}, expected a number "
                                     f"({self.described()})")
            elif col in self.wrong:
                got, want = self.wrong[col]
                raise InputError(f"{self.path}: column {col} is {got}, expected {want} ({self.described()})")

    def expr(self, col: str, as_float: bool = False) -> pl.Expr:
        """``col`` as read: its declared type (Float64 with ``as_float``), NaN and ±inf as null."""
        e = pl.col(col)
        if as_float and not is_id(col):
            if self.file_schema[col] != pl.Float64:
                e = e.cast(pl.Float64)
        elif col in self.casts:
            e = e.cast(self.casts[col])
        if as_float or self.read_schema[col].is_float():
            e = pl.when(e.is_finite()).then(e)
        return e.alias(col)


class ResultsDir:
    """A results directory (the ``-o`` of ``hsrtcp analyze``, plus the context, study or
    MPTCP tables written next to them), each table checked when first opened.

    ``frames``: tables already in memory (name -> DataFrame), checked the same way and used
    instead of files (``path`` then only names them in messages)."""

    def __init__(self, path: str | os.PathLike, frames: dict[str, pl.DataFrame] | None = None,
                 files: dict[str, str | os.PathLike] | None = None):
        """``files``: the file of a table where it is not ``path/<table>.parquet``."""
        self.path = os.fspath(path)
        self.frames = frames
        self.files = {t: os.fspath(f) for t, f in (files or {}).items()}
        if frames is None and not os.path.isdir(self.path):
            what = "is a file, not" if os.path.exists(self.path) else "no such"
            raise InputError(f"{self.path}: {what} results directory (the -o of hsrtcp analyze)")
        # a study directory's tables (docs/formats/study.md) share names with context tables
        # (suspensions, coverage) but not their schemas
        self.study = frames is None and os.path.isfile(os.path.join(self.path, "study.json"))
        self._tables: dict[str, Table] = {}

    def file(self, table: str) -> str:
        return self.files.get(table) or os.path.join(self.path, f"{table}.parquet")

    def has(self, table: str) -> bool:
        if self.frames is not None:
            return table in self.frames
        return os.path.isfile(self.file(table))

    def open(self, table: str) -> Table:
        """The checked table (an :class:`InputError` naming the file when it cannot be used)."""
        if table in self._tables:
            return self._tables[table]
        f = self.file(table)
        if self.frames is not None:
            if table not in self.frames:
                raise InputError(f"{f}: missing table {table!r}")
            t = Table(table, f, self.frames[table].schema, None)
        else:
            if not os.path.isfile(f):
                hint = (" (every hsrtcp analyze writes it: is this a results directory of hsrtcp analyze?)"
                        if table in CORE_TABLES else "")
                if table in CORE_TABLES and _lab_runs(self.path):  # bundles, not results (issue 38)
                    hint = (f" ({self.path} holds lab runs, not results: `hsrtcp analyze RUN -o OUT` reads a "
                            f"run, `hsrtcp compare {self.path} -o OUT` compares a campaign's arms)")
                raise InputError(f"{f}: missing table {table!r}{hint}")
            schema, meta = _footer(f)
            name = f"study.{table}" if self.study else table
            t = Table(name, f, schema, _version(f, name, meta))
        self._tables[table] = t
        return t

    def schema(self, table: str) -> pl.Schema:
        """The checked column types of ``table`` as read."""
        return self.open(table).schema()

    def require(self, table: str, columns) -> None:
        """InputError naming the file if ``table`` lacks one of ``columns`` (an older schema)."""
        self.open(table).require(columns)

    def scan(self, table: str, columns=None, optional=(), as_float=()) -> pl.LazyFrame:
        """A lazy scan of ``columns`` (required) and ``optional`` columns (when present) of
        ``table``, each checked (:meth:`Table.require`); without ``columns``, every column
        of the file. ``as_float``: columns read as Float64 from any numeric type."""
        t = self.open(table)
        cols = t.file_schema.names() if columns is None else list(columns)
        cols = list(dict.fromkeys([*cols, *(c for c in optional if c in t.file_schema)]))
        t.require(cols, as_float)
        lf = pl.scan_parquet(t.path) if self.frames is None else self.frames[table].lazy()
        return lf.select([t.expr(c, c in as_float) for c in cols])

    def read(self, table: str, columns=None, flow_id: int | None = None, optional=(), as_float=()) -> pl.DataFrame:
        """Like :meth:`scan`, read; only the rows of ``flow_id`` when given."""
        lf = self.scan(table, columns, optional, as_float)
        if flow_id is not None:
            lf = lf.filter(pl.col("flow_id") == flow_id)
        return collect(lf, self.file(table))

    def complete(self, tables) -> None:
        """InputError naming the directory when one of ``tables`` (those every ``hsrtcp
        analyze`` writes, say) has no file: checked before any is opened."""
        for table in tables:
            if not self.has(table):
                d = Path(self.path)
                raise InputError(f"{d}: not a complete hsrtcp results directory: {table}.parquet is "
                                 f"missing (write it with hsrtcp analyze ... -o {d})")

    def optional(self, table: str, columns, flow_id: int | None = None) -> pl.DataFrame | None:
        """:meth:`read` for a table that may be absent (None then); a present table without
        the columns is still an error."""
        if not self.has(table):
            return None
        return self.read(table, columns, flow_id)


def input_id(part: str) -> str:
    """A corpus partition ``input=<id>`` as its id; a plain results directory as its name."""
    name = os.path.basename(os.path.normpath(part))
    return name.removeprefix("input=")


class Corpus(ResultsDir):
    """Results directories read as one: each table is its parts' rows stacked, in order,
    with a column ``tag`` naming each row's part (a flow_id repeats across parts: ``tag,
    flow_id`` is a row's key); each part's table is checked as a results directory's.

    - ``Corpus(path)``: a corpus results directory (``hsrtcp analyze CORPUS``, docs/scale.md:
      one ``input=<id>`` partition per input; ``parts``: some of them), tagged ``input`` =
      the id (the report, the figures);
    - ``Corpus(parts=dirs, tag="result")``: any results directories, a corpus given among
      them as its partitions, each tagged with its path (the study). None given, or one given
      twice, is an :class:`InputError`."""

    def __init__(self, path: str | os.PathLike | None = None, parts: list[str] | None = None, tag: str = "input"):
        self.tag = tag
        self.root = None if path is None else os.fspath(path)
        if self.root is not None:
            super().__init__(self.root)
            parts = partitions(self.root) if parts is None else parts
            self.parts = {input_id(p): ResultsDir(p) for p in map(os.fspath, parts)}
            return
        if not parts:
            raise InputError("no results directory given")
        names = [p for d in parts for p in partitions(d)]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise InputError(f"results directory given twice: {', '.join(dup)}")
        # no directory of its own (frames: nothing to check at this level); the parts are checked
        super().__init__(", ".join(names), frames={})
        self.parts = {n: ResultsDir(n) for n in names}

    def file(self, table: str) -> str:
        if self.root is None:
            return ", ".join(p.file(table) for p in self.parts.values())
        return os.path.join(self.root, "input=*", f"{table}.parquet")

    def has(self, table: str) -> bool:
        return any(p.has(table) for p in self.parts.values())

    def open(self, table: str) -> Table:
        """The first part's table (its schema stands for all: one analysis wrote them)."""
        return next((p for p in self.parts.values() if p.has(table)), next(iter(self.parts.values()))).open(table)

    def _scans(self, table: str, columns, optional, as_float) -> list[tuple[ResultsDir, pl.LazyFrame]]:
        scans = [(p, p.scan(table, columns, optional, as_float).with_columns(pl.lit(name).alias(self.tag)))
                 for name, p in self.parts.items() if p.has(table)]
        if not scans:  # no part holds it: the first part's refusal names the file and says why
            next(iter(self.parts.values())).open(table)
        return scans

    def scan(self, table: str, columns=None, optional=(), as_float=()) -> pl.LazyFrame:
        return pl.concat([lf for _, lf in self._scans(table, columns, optional, as_float)], how="diagonal_relaxed")

    def read(self, table: str, columns=None, flow_id: int | None = None, optional=(), as_float=()) -> pl.DataFrame:
        """Like :meth:`scan`, read, the parts at once; a read error names the part's file."""
        scans = [(p, lf if flow_id is None else lf.filter(pl.col("flow_id") == flow_id))
                 for p, lf in self._scans(table, columns, optional, as_float)]
        try:
            frames = pl.collect_all([lf for _, lf in scans])
        except (pl.exceptions.ComputeError, OSError):  # which part: each read alone says
            frames = [collect(lf, p.file(table)) for p, lf in scans]
        return pl.concat(frames, how="diagonal_relaxed")

    def complete(self, tables) -> None:
        """:meth:`ResultsDir.complete` of every part, in order."""
        for p in self.parts.values():
            p.complete(tables)

    def read_names(self) -> pl.DataFrame:
        """``input, flow_id, short_id, connection, connection_no`` of every flows row: the
        corpus's names (:func:`flow_names` over all inputs)."""
        return flow_names(self.read("flows", list(NAME_COLUMNS), optional=["client_flow_id", "server_flow_id"]))


def collect(lf: pl.LazyFrame, where: str) -> pl.DataFrame:
    """``lf`` collected; a read error (a damaged page behind an intact footer) names ``where``."""
    try:
        return lf.collect()
    except (pl.exceptions.ComputeError, OSError) as exc:
        raise InputError(f"{where}: cannot read: {_first_line(exc)}") from None


def no_nulls(df: pl.DataFrame, columns, where: str) -> None:
    """An error naming ``where`` when a column that is never missing in an intact table (a
    flow's first packet time, a bin's start) is null or was not a finite number."""
    for col in columns:
        bad = df.filter(pl.col(col).is_null())
        if bad.height:
            which = f" (flow_id {bad['flow_id'][0]})" if "flow_id" in bad.columns else ""
            raise InputError(f"{where}: column {col} is null or not a finite number in {bad.height} row(s){which}: "
                             "the table is damaged; re-run hsrtcp analyze")


_version = file_version


def read_table(path: str | os.PathLike, table: str | None = None, columns=None, require=(), optional=(),
               as_float=()) -> pl.DataFrame:
    """One table file read on its own, checked as ``table`` (default: the file's stem);
    ``require``: columns it must have when read whole; the rest as :meth:`ResultsDir.read`."""
    p = Path(path)
    table = table or p.stem
    res = ResultsDir(p.parent, files={table: p})
    res.require(table, require)
    return res.read(table, columns, optional=optional, as_float=as_float)


# ---------------------------------------------------------------- what a consumer reads
#
# The report (hsrtcp.report.inputs) and the study (hsrtcp.study.load) read the same tables of
# one or many results directories, stacked by :class:`Corpus`; both hold them as
# :class:`Tables` and take the optional ones through :func:`optional_tables`. What differs
# stays with each: the report renumbers a corpus's flow ids and reads flows' other columns for
# the drilled-down flows only, the study tags every row with its directory (``result``).

@dataclass(kw_only=True)
class Tables:
    """The tables a consumer reads: ``flows`` in memory (the columns it asked for), the large
    ``series`` and ``events`` as lazy scans (filtered and projected before anything is
    read), a context table None where no directory had it (or the consumer skipped it)."""

    flows: pl.DataFrame
    series: pl.LazyFrame
    events: pl.LazyFrame
    context: pl.DataFrame | None = None
    labels: pl.DataFrame | None = None
    handoffs: pl.DataFrame | None = None
    suspensions: pl.DataFrame | None = None
    coverage: pl.DataFrame | None = None
    #: what was missing or odd, one sentence each (the consumer shows them)
    notes: list[str] = field(default_factory=list)


def optional_tables(res: ResultsDir, columns: dict[str, tuple[str, ...]],
                    notes: list[str] | None = None) -> dict[str, pl.DataFrame]:
    """``{table: frame}``: each table of ``columns`` (context tables, :class:`Tables`) that
    ``res`` holds, read whole. A table without one of the columns given for it: with
    ``notes``, skipped with a note saying so; without, the :class:`InputError` of
    :meth:`ResultsDir.require`."""
    out = {}
    for name, cols in columns.items():
        if not res.has(name):
            continue
        if notes is None:
            res.require(name, cols)
        else:
            lacking = [c for c in cols if c not in res.open(name).file_schema]
            if lacking:
                notes.append(f"{name}.parquet ignored: lacks column(s) {', '.join(lacking)} (older schema)")
                continue
        out[name] = res.read(name)
    return out


# ---------------------------------------------------------------- flow names (issue 31)
#
# The engine's flow ids are 13-19 digit integers (the capture's index in the high bits,
# the matched rows' bit 62): above 2^53 for JSON readers and too long to type. Every flows
# row gets a short name derived here, at read time, so every consumer shows the same one:
#
# - connections (a matched row with the client and server rows it links, else one row) are
#   numbered f1, f2, ... by their first packet (the earliest first_ts of their rows), then
#   (corpus partition,) smallest flow_id;
# - a connection of one row names it f<N>; of several, each row is f<N> plus its vantage's
#   letter: f<N>c (client), f<N>s (server), f<N>m (matched).
#
# Names never look like an integer, so `--flow` tells them from long ids.

#: flows columns the names need (client_flow_id/server_flow_id, input: when present)
NAME_COLUMNS = ("flow_id", "vantage", "first_ts")
_LETTER = {CLIENT: "c", SERVER: "s", MATCHED: "m"}


def flow_names(flows: pl.DataFrame) -> pl.DataFrame:
    """``[input,] flow_id, short_id, connection, connection_no``: the name of every row of
    ``flows`` (one results directory, or a corpus's partitions stacked with an ``input``
    column) and of its connection (the order above; docs/query.md, "Flow names")."""
    keys = ["input"] if "input" in flows.columns else []
    cols = flows.columns
    base = flows.select(*keys, "flow_id", pl.col("vantage").cast(pl.String), pl.col("first_ts").cast(pl.Float64),
                        *(pl.col(c) for c in ("client_flow_id", "server_flow_id") if c in cols))
    # each row's connection: its own id, or the matched row that links it
    conn = base.select(*keys, "flow_id", pl.col("flow_id").alias("conn"))
    if "client_flow_id" in cols and "server_flow_id" in cols:
        links = pl.concat([
            base.filter(pl.col("vantage") == MATCHED).select(*keys, pl.col(side).alias("flow_id"),
                                                               pl.col("flow_id").alias("_m"))
            for side in ("client_flow_id", "server_flow_id")]).drop_nulls("flow_id")
        links = links.group_by([*keys, "flow_id"]).agg(pl.col("_m").min())  # (linked twice: not written by hsrtcp)
        conn = (conn.join(links, on=[*keys, "flow_id"], how="left")
                .with_columns(pl.coalesce("_m", "conn").alias("conn")).drop("_m"))
    rows = base.select(*keys, "flow_id", "vantage", "first_ts").join(conn, on=[*keys, "flow_id"], how="left")
    order = (rows.group_by([*keys, "conn"])
             .agg(pl.col("first_ts").min().alias("_t"), pl.col("flow_id").min().alias("_id"), pl.len().alias("_n"))
             # a null first_ts (a damaged row) sorts last rather than failing the names
             .sort(["_t", *keys, "_id"], nulls_last=True)
             .with_row_index("connection_no", offset=1))
    rows = rows.join(order.select(*keys, "conn", "connection_no", "_n"), on=[*keys, "conn"], how="left")
    letter = pl.col("vantage").replace_strict(_LETTER, default="", return_dtype=pl.String).fill_null("")
    rows = rows.with_columns(
        pl.format("f{}", "connection_no").alias("connection"),
        pl.when(pl.col("_n") > 1).then(pl.format("f{}{}", "connection_no", letter))
        .otherwise(pl.format("f{}", "connection_no")).alias("short_id"))
    # two rows of one connection with the same letter (not written by hsrtcp): named apart by their order
    dup = rows.select(pl.col("short_id").is_duplicated()).to_series()
    if dup.any():
        rank = pl.col("flow_id").rank("ordinal").over([*keys, "short_id"])
        rows = rows.with_columns(pl.when(pl.col("short_id").is_duplicated())
                                 .then(pl.format("{}.{}", "short_id", rank)).otherwise("short_id").alias("short_id"))
    return rows.select(*keys, "flow_id", "short_id", "connection", pl.col("connection_no").cast(pl.UInt32))


def with_names(flows: pl.DataFrame) -> pl.DataFrame:
    """``flows`` with ``short_id`` and ``connection`` columns (:func:`flow_names`) first."""
    keys = ["input"] if "input" in flows.columns else []
    names = flow_names(flows).select(*keys, "flow_id", "short_id", "connection")
    out = flows.drop([c for c in ("short_id", "connection") if c in flows.columns])
    out = out.join(names, on=[*keys, "flow_id"], how="left", maintain_order="left")
    return out.select("short_id", "connection", *[c for c in out.columns if c not in ("short_id", "connection")])


_SHORT = r"f[1-9][0-9]*(?:[csm](?:\.[1-9][0-9]*)?)?"
_ENDPOINT = r"(?:\[(?P<{0}a6>[0-9A-Fa-f:.]+)\]|(?P<{0}a4>[0-9.]+)):(?P<{0}p>[0-9]{{1,5}})"


def parse_flow(spec) -> tuple[str, object]:
    """What a ``--flow`` value names: ``("id", int)``, ``("short", "f3s")`` or ``("tuple",
    (addr, port, addr, port))``; ValueError saying the three forms for anything else."""
    import ipaddress
    import re

    if isinstance(spec, bool):
        raise ValueError(f"{spec!r} is not a flow")
    if isinstance(spec, int):
        if not 0 <= spec < 2**64:
            raise ValueError(f"flow id {spec} is out of range (0 .. 2^64-1)")
        return "id", spec
    text = str(spec).strip()
    if re.fullmatch(r"[0-9]+", text):
        return parse_flow(int(text))
    if re.fullmatch(_SHORT, text, flags=re.IGNORECASE):
        return "short", text.lower()
    m = re.fullmatch(_ENDPOINT.format("x") + r"-" + _ENDPOINT.format("y"), text)
    if m:
        ends = []
        for side in "xy":
            addr, port = m[f"{side}a6"] or m[f"{side}a4"], int(m[f"{side}p"])
            try:
                addr = str(ipaddress.ip_address(addr))  # the flows table's spelling (compressed IPv6)
            except ValueError:
                raise ValueError(f"{text!r}: {addr!r} is not an IP address") from None
            if port > 65535:
                raise ValueError(f"{text!r}: port {port} is out of range")
            ends.append((addr, port))
        return "tuple", (*ends[0], *ends[1])
    raise ValueError(f"{text!r} names no flow: give its short id (f3, f3s; the summary and the connections "
                     f"view list them), its 4-tuple (10.0.1.2:41068-10.0.2.2:5201, [2001:db8::1]:443-[...]:5201) "
                     f"or its flow_id (1099511627776)")


def select_flow(flows: pl.DataFrame, spec, where: str) -> dict:
    """The flows row ``spec`` names (:func:`parse_flow`), as a dict with its ``short_id``
    and ``connection`` (those of ``flows`` when it has them, else :func:`flow_names`). A connection's name or 4-tuple selects its matched row when it has
    one, else its only row; InputError naming ``where`` for a name that matches nothing,
    and for a 4-tuple of several connections (each listed by name)."""
    kind, value = parse_flow(spec)
    # names already there (a corpus partition: the corpus's) are kept
    named = flows if {"short_id", "connection"} <= set(flows.columns) else with_names(flows)
    if kind == "id":
        sel = named.filter(pl.col("flow_id") == value)
        if sel.height > 1:  # a corpus: flow ids repeat across its inputs
            raise InputError(f"{where}: flow_id {value} is in {sel.height} inputs of this corpus "
                             f"({_listed(sel)}): give the short id")
    elif kind == "short":
        sel = named.filter(pl.col("short_id") == value)
        if sel.is_empty():
            sel = _primary(named.filter(pl.col("connection") == value))
    else:
        ca, cp, sa, sp = value
        same = ((pl.col("client_addr") == ca) & (pl.col("client_port") == cp)
                & (pl.col("server_addr") == sa) & (pl.col("server_port") == sp))
        turned = ((pl.col("client_addr") == sa) & (pl.col("client_port") == sp)
                  & (pl.col("server_addr") == ca) & (pl.col("server_port") == cp))
        hit = named.filter(same | turned)["connection"].unique(maintain_order=True).to_list()
        if len(hit) > 1:
            conns = named.filter(pl.col("connection").is_in(hit))
            raise InputError(f"{where}: {spec} is the 4-tuple of {len(hit)} connections "
                             f"({_listed(_primary_each(conns))}): give one of their short ids")
        sel = _primary(named.filter(pl.col("connection").is_in(hit)))
    if sel.is_empty():
        conns = named["connection"].unique(maintain_order=True).to_list()
        shown = ", ".join(conns[:8]) + (", ..." if len(conns) > 8 else "")
        what = {"id": "flow_id", "short": "short id", "tuple": "4-tuple"}[kind]
        raise InputError(f"{where}: no flow with {what} {spec} ({len(conns)} connection(s): {shown}; "
                         f"their rows in `hsrtcp query RESULTS \"from connections\"`)")
    return sel.row(0, named=True)


def _primary(rows: pl.DataFrame) -> pl.DataFrame:
    """The connection's row a name selects: its matched row, else its first row."""
    m = rows.filter(pl.col("vantage") == MATCHED)
    return m.head(1) if m.height else rows.sort("flow_id").head(1)


def _primary_each(rows: pl.DataFrame) -> pl.DataFrame:
    return pl.concat([_primary(g) for _, g in rows.group_by("connection", maintain_order=True)])


def _listed(rows: pl.DataFrame) -> str:
    out = []
    for r in rows.head(8).iter_rows(named=True):
        extra = f", input {r['input']}" if r.get("input") is not None else ""
        extra += f", epoch {r['epoch']}" if r.get("epoch") is not None else ""
        out.append(f"{r['short_id']} (flow_id {r['flow_id']}{extra})")
    return "; ".join(out) + (" ..." if rows.height > 8 else "")
