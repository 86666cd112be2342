"""SQL over result directories with DuckDB: every table a view, many directories as one.

    import hsrtcp.query
    con = hsrtcp.query.connect(["runs/a", "runs/b"])
    con.sql("select results, count(*) from flows group by all").pl()

Every ``*.parquet`` file at the top of a results directory is a table: the five of
`hsrtcp analyze` (flows, events, rtt, series, captures), the two-vantage ``pair_stats``,
the context tables (radio, handoffs, context, suspensions, coverage, labels) and the tables
of a study directory. Each table becomes a view over the files of that name in all the
directories given, read with ``read_parquet([...], union_by_name = true)`` (a column that only
some directories have is null in the others: results of older versions still query), plus a
hive-style partition column ``results``: the directory's name, or the path as given when
two directories share a name. ``flow_id`` is unique only within one directory, so joins of
several directories use ``(results, flow_id)``.

A corpus results directory (`hsrtcp analyze CORPUS -o RESULTS`, docs/scale.md) holds one
partition per input, ``input=<id>/flows.parquet`` and so on, besides its ``inputs`` and
``failures`` tables: every partition's table joins its view, with the hive column ``input``
(DuckDB reads the files where they are; nothing is loaded first). Within a corpus,
``flow_id`` is unique per input: join on ``(results, input, flow_id)``.

The connection reads the given directories and nothing else (Reliability rules in
docs/design.md): DuckDB's external access is off, with the directories as its only allowed
ones, extensions are neither installed nor loaded, and the configuration is locked, so no
statement can read another file, write one, reach the network or undo the settings.
:func:`read_statement` admits one read statement (a ``SELECT``: also ``WITH``, ``FROM``,
``VALUES``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``) before anything runs.
"""

from __future__ import annotations

import os

from hsrtcp.errors import InputError

PARTITION = "results"


class StatementError(ValueError):
    """SQL that :func:`read_statement` refuses: not exactly one read statement."""


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def labels(dirs: list[str]) -> dict[str, str]:
    """Directory -> its ``results`` value (its name; the normalised path when names clash)."""
    names = [os.path.basename(os.path.normpath(d)) or os.path.normpath(d) for d in dirs]
    clash = {n for n in names if names.count(n) > 1}
    return {d: (os.path.normpath(d) if n in clash else n) for d, n in zip(dirs, names)}


def tables(dirs: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Table name -> its (Parquet file, directory) pairs, in the order of ``dirs``;
    InputError for a missing directory or one without any table. The tables of a corpus's
    partitions are in :func:`partition_tables`."""
    found: dict[str, list[tuple[str, str]]] = {}
    for d in dirs:
        if not os.path.isdir(d):
            what = "is a file, not" if os.path.exists(d) else "no such"
            raise InputError(f"{d}: {what} results directory (the -o of hsrtcp analyze)")
        names = sorted(f for f in os.listdir(d) if f.endswith(".parquet") and not f.startswith("."))
        if not names:
            raise InputError(f"{d}: no Parquet tables in this directory (is it the -o of hsrtcp analyze?)")
        for f in names:
            found.setdefault(f[: -len(".parquet")], []).append((os.path.join(d, f), d))
    return found


def partition_tables(d: str) -> dict[str, list[str]]:
    """Table name -> its files in the ``input=<id>`` partitions of corpus directory ``d``
    (empty for a single run's directory), partitions by name."""
    found: dict[str, list[str]] = {}
    with os.scandir(d) as it:
        parts = sorted(e.path for e in it if e.name.startswith("input=") and e.is_dir())
    for part in parts:
        for f in sorted(os.listdir(part)):
            if f.endswith(".parquet") and not f.startswith("."):
                found.setdefault(f[: -len(".parquet")], []).append(os.path.join(part, f))
    return found


def connect(dirs: list[str | os.PathLike], con=None, *, confined: bool = True):
    """A DuckDB connection with one view per table of ``dirs``: a new in-memory one that
    reads nothing but ``dirs`` (``confined=False``: DuckDB's defaults), or ``con``, used
    with the settings it has."""
    import duckdb

    dirs = [os.fspath(d) for d in dirs]
    if not dirs:
        raise InputError("no results directory given")
    if len(set(map(os.path.normpath, dirs))) != len(dirs):
        raise InputError("the same results directory is given twice")
    label = labels(dirs)
    top = tables(dirs)
    if con is None:
        con = duckdb.connect()
        if confined:
            _confine(con, dirs)
    corpus = {d: partition_tables(d) for d in dirs}
    _check_versions(con, {**{f: name for name, pairs in top.items() for f, _ in pairs},
                          **{f: name for parts in corpus.values() for name, fs in parts.items() for f in fs}})
    for name in sorted(set(top) | {t for parts in corpus.values() for t in parts}):
        pairs = top.get(name, [])
        selects, files = [], [f for f, _ in pairs]
        if pairs:
            case = " ".join(f"WHEN {_sql_str(f)} THEN {_sql_str(label[d])}" for f, d in pairs)
            selects.append(f"SELECT * EXCLUDE (filename), CASE filename {case} END AS {PARTITION} "
                           f"FROM read_parquet([{', '.join(_sql_str(f) for f in files)}], union_by_name = true, "
                           f"filename = true)")
        for d in dirs:
            part_files = corpus[d].get(name)
            if part_files:  # one select per corpus: its partitions' files, with their hive column `input`
                files += part_files
                selects.append(f"SELECT *, {_sql_str(label[d])} AS {PARTITION} "
                               f"FROM read_parquet([{', '.join(_sql_str(f) for f in part_files)}], "
                               f"union_by_name = true, hive_partitioning = true)")
        union = " UNION ALL BY NAME ".join(selects)
        try:
            if name == "flows":  # with every row's short name (hsrtcp.results.flow_names)
                cols = {r[0] for r in con.execute(f"DESCRIBE {union}").fetchall()}
                union = names_sql(union, cols)
            con.execute(f"CREATE OR REPLACE VIEW {_ident(name)} AS {union}")
        except duckdb.Error as exc:
            raise InputError(_which_file(con, files, exc)) from None
    if "flows" in top or any("flows" in parts for parts in corpus.values()):
        con.execute(f"CREATE OR REPLACE VIEW connections AS {connections_sql(_columns(con, 'flows'))}")
    return con


def _check_versions(con, files: dict[str, str]) -> None:
    """Refuses a file (``{path: table}``) whose metadata names a schema version newer than
    this hsrtcp reads (hsrtcp.versions, the check every results reader makes); files of
    older versions query as they are (the columns added since are null). Read by DuckDB
    from the files' footers: no polars."""
    import duckdb

    from hsrtcp.versions import SCHEMA_KEY, VERSION_KEY, file_version

    if not files:
        return
    try:
        rows = con.execute(f"SELECT file_name, decode(key), decode(value) FROM parquet_kv_metadata("
                           f"[{', '.join(_sql_str(f) for f in files)}]) WHERE key IN (?::BLOB, ?::BLOB)",
                           [SCHEMA_KEY, VERSION_KEY]).fetchall()
    except duckdb.Error as exc:
        raise InputError(_which_file(con, list(files), exc)) from None
    meta: dict[str, dict[str, str]] = {}
    for f, key, value in rows:
        meta.setdefault(f, {})[key] = value
    for f, m in meta.items():
        file_version(f, m.get(SCHEMA_KEY, files.get(f, "")), m)


def _columns(con, view: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE {_ident(view)}").fetchall()]


def names_sql(raw: str, cols: set[str]) -> str:
    """The rows of the flows relation ``raw`` with ``short_id`` and ``connection`` first: the
    names of :func:`hsrtcp.results.flow_names` (the same order, numbered per ``results``
    directory; a test keeps both equal)."""
    keys = [k for k in (PARTITION, "input") if k in cols]
    on = lambda a, b: " AND ".join(f"{a}.{k} IS NOT DISTINCT FROM {b}.{k}" for k in keys)  # noqa: E731
    k = ", ".join(keys)
    linked = "client_flow_id" in cols and "server_flow_id" in cols
    links = (f"SELECT {k}, flow_id, min(m) AS m FROM ("
             + " UNION ALL ".join(f"SELECT {k}, {side} AS flow_id, flow_id AS m FROM _f "
                                  f"WHERE vantage = 'matched' AND {side} IS NOT NULL"
                                  for side in ("client_flow_id", "server_flow_id"))
             + f") GROUP BY {k}, flow_id") if linked else \
        f"SELECT {k}, flow_id, flow_id AS m FROM _f WHERE false"
    per_dir = f"PARTITION BY {PARTITION} " if PARTITION in keys else ""
    by_input = "input NULLS LAST, " if "input" in keys else ""
    return f"""WITH _raw AS ({raw}),
_f AS (SELECT {k}, flow_id, CAST(vantage AS VARCHAR) AS vantage, CAST(first_ts AS DOUBLE) AS first_ts
       {', client_flow_id, server_flow_id' if linked else ''} FROM _raw),
_l AS ({links}),
_r AS (SELECT {', '.join(f'_f.{x}' for x in keys)}, _f.flow_id, _f.vantage, _f.first_ts, coalesce(_l.m, _f.flow_id) AS conn
       FROM _f LEFT JOIN _l ON {on('_f', '_l')} AND _f.flow_id = _l.flow_id),
_c AS (SELECT {k}, conn, count(*) AS n,
       row_number() OVER ({per_dir}ORDER BY min(first_ts) NULLS LAST, {by_input}min(flow_id)) AS no
       FROM _r GROUP BY {k}, conn),
_n AS (SELECT {', '.join(f'_r.{x}' for x in keys)}, _r.flow_id, 'f' || _c.no AS connection,
       'f' || _c.no || CASE WHEN _c.n > 1 THEN CASE _r.vantage WHEN 'client' THEN 'c' WHEN 'server' THEN 's'
                                                 WHEN 'matched' THEN 'm' ELSE '' END ELSE '' END AS short_id
       FROM _r JOIN _c ON {on('_r', '_c')} AND _r.conn = _c.conn)
SELECT _n.short_id, _n.connection, _raw.* FROM _raw LEFT JOIN _n ON {on('_raw', '_n')} AND _raw.flow_id = _n.flow_id"""


#: the metrics each vantage's row gives the connections view (client_*, server_*, unknown_*)
SIDE_METRICS = ("short_id", "flow_id", "capture", "data_dir", "duration_s", "c2s_packets", "s2c_packets", "c2s_payload_bytes", "s2c_payload_bytes",
                "retransmissions", "timeouts", "spurious_timeouts", "rtt_mean", "goodput_bytes", "end_reason",
                "truncated")
#: the two-capture metrics of the matched row (docs/formats/matched.md)
MATCHED_METRICS = ("short_id", "flow_id", "pairing", "p_d", "lost_data_packets", "data_packets_sent", "p_a",
                   "lost_ack_packets", "ack_packets_sent", "ack_burst_loss", "q", "rto_sequences",
                   "spurious_timeouts_2v", "spurious_timeouts_ack_loss", "spurious_timeouts_rto_estimation",
                   "spurious_rto_rate", "rto_bias_mean_s", "owd_down_median_s", "owd_up_median_s",
                   "establishment_time_s", "clock_offset_s", "clock_offset_uncertainty_s")


def connections_sql(cols: list[str], flows: str = "flows") -> str:
    """One row per connection of the view ``flows`` (with the names of :func:`names_sql`):
    its name and identity, then each vantage's row side by side (``client_*``, ``server_*``;
    ``unknown_*`` for a single capture whose side is not known) and the matched row's
    two-capture metrics (``matched_*``). A row's side is its vantage, else the side
    hsrtcp found its capture next to (flows.capture_near)."""
    have = set(cols)
    keys = [k for k in (PARTITION, "input") if k in have]
    near = "CAST(capture_near AS VARCHAR)" if "capture_near" in have else "NULL"
    side = (f"CASE WHEN CAST(vantage AS VARCHAR) IN ('client', 'server', 'matched') THEN CAST(vantage AS VARCHAR) "
            f"ELSE coalesce({near}, 'unknown') END")

    def pick(prefix: str, side_name: str, metrics) -> list[str]:
        return [f"any_value({_ident(m)}) FILTER (WHERE _side = '{side_name}') AS {_ident(prefix + m)}"
                if m in have else f"NULL AS {_ident(prefix + m)}" for m in metrics]

    ident = [f"any_value({c} ORDER BY _rank) AS {c}" for c in ("client_addr", "client_port", "server_addr",
                                                                 "server_port") if c in have]
    cells = [*keys, "connection", "count(*) AS rows", "min(first_ts) AS first_ts", "max(last_ts) AS last_ts", *ident,
             *pick("client_", "client", SIDE_METRICS), *pick("server_", "server", SIDE_METRICS),
             *pick("unknown_", "unknown", SIDE_METRICS), *pick("matched_", "matched", MATCHED_METRICS)]
    group = ", ".join([*keys, "connection"])
    order = ", ".join([*keys[:1], "min(first_ts) NULLS LAST", *keys[1:], "min(flow_id)"])  # the names' order
    # identity from the server's row, the matched row, then the client's (NAT: the server sees the public side)
    rank = "CASE _side WHEN 'server' THEN 0 WHEN 'matched' THEN 1 WHEN 'client' THEN 2 ELSE 3 END"
    return (f"SELECT {', '.join(cells)} FROM (SELECT *, {side} AS _side, {rank.replace('_side', side)} AS _rank "
            f"FROM {_ident(flows)}) GROUP BY {group} ORDER BY {order}")


def _confine(con, dirs: list[str]) -> None:
    """Lock ``con`` to reading ``dirs`` (and a private directory for DuckDB's spill files)."""
    import shutil
    import tempfile
    import weakref

    # DuckDB's default spill directory is ./.tmp, which its allowed list then includes
    spill = tempfile.mkdtemp(prefix="hsrtcp-query-")
    weakref.finalize(con, shutil.rmtree, spill, ignore_errors=True)
    allowed = ", ".join(_sql_str(os.path.abspath(d)) for d in dirs)
    settings = ["autoinstall_known_extensions = false", "autoload_known_extensions = false",
                "enable_progress_bar = false", f"temp_directory = {_sql_str(spill)}",
                f"allowed_directories = [{allowed}]",
                "enable_external_access = false", "lock_configuration = true"]
    import duckdb

    for setting in settings:
        try:
            con.execute(f"SET {setting}")
        except duckdb.Error as exc:  # allowed_directories needs duckdb 1.2: never run unconfined
            raise RuntimeError(f"duckdb {duckdb.__version__} cannot confine the query connection "
                               f"(SET {setting}: {str(exc).splitlines()[0]}); hsrtcp query needs duckdb >= 1.2") from None


def read_statement(text: str) -> str:
    """The one read statement of ``text``, without its final ``;``: StatementError for no
    statement, several, or one that is not a ``SELECT`` (``COPY``, ``ATTACH``, ``INSTALL``,
    ``SET``, ``CREATE``, ``PRAGMA``, ...), all found by DuckDB's own parser, nothing run."""
    import duckdb

    try:
        found = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise StatementError(str(exc).strip()) from None
    if not found:
        raise StatementError("no SQL statement given")
    if len(found) > 1:
        raise StatementError(f"one statement only; this SQL has {len(found)} (separated by ';')")
    if found[0].type == duckdb.StatementType.MULTI and _keyword(found[0].query) in ("PIVOT", "SELECT", "WITH", "FROM"):
        raise StatementError("a PIVOT needs its values listed here (PIVOT ... ON column IN (value, ...)): "
                             "without them DuckDB creates a type first, and nothing is created over the results")
    if found[0].type != duckdb.StatementType.SELECT:
        raise StatementError(f"only a read statement runs here (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, "
                             f"SUMMARIZE), not {_keyword(found[0].query)}: the results are read-only")
    return _without_terminator(found[0].query)


def _keyword(stmt: str) -> str:
    """The statement's first word (INSTALL, not DuckDB's type LOAD)."""
    import duckdb

    raw = stmt.encode()
    for pos, kind in duckdb.tokenize(stmt):
        if kind != duckdb.token_type.comment:
            return raw[pos:].split(maxsplit=1)[0].decode(errors="replace").upper()
    return "?"


def _without_terminator(stmt: str) -> str:
    """``stmt`` without its trailing ``;`` (and what follows), so that it nests as a subquery."""
    import duckdb

    raw = stmt.encode()
    end = len(raw)
    for pos, kind in reversed(duckdb.tokenize(stmt)):  # positions are byte offsets
        if kind == duckdb.token_type.comment:
            continue
        if kind == duckdb.token_type.operator and raw[pos:pos + 1] == b";":
            end = pos
            continue
        break
    return raw[:end].decode().rstrip()


def _which_file(con, files: list[str], exc: Exception) -> str:
    """The error of the first file that does not read on its own (or the union's error)."""
    import duckdb

    for f in files:
        try:
            con.execute(f"DESCRIBE SELECT * FROM read_parquet({_sql_str(f)})")
        except duckdb.Error as e:
            return f"{f}: not a readable Parquet file ({str(e).splitlines()[0]})"
    return f"{', '.join(files)}: cannot be read as one table ({str(exc).splitlines()[0]})"


def schema(con) -> list[tuple[str, list[tuple[str, str]]]]:
    """(view, [(column, type), ...]) for every view, by name."""
    views = [r[0] for r in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name").fetchall()]
    return [(v, [(c, t) for c, t, *_ in con.execute(f"DESCRIBE {_ident(v)}").fetchall()]) for v in views]


def sql(dirs: list[str | os.PathLike], query: str):
    """The result of ``query`` (one read statement) over ``dirs`` as a polars DataFrame."""
    return connect(dirs).sql(read_statement(query)).pl()
