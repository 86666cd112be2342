"""`hsrtcp query RESULTS... "SQL"`: SQL over result tables with DuckDB (hsrtcp.query).

Every table of every RESULTS directory is a view (flows, events, rtt, series, captures, and
the context or study tables when present); several directories are one view each, with a
column ``results`` naming the directory. docs/query.md is the guide.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import click

FORMATS = ("table", "csv", "json", "parquet")


@click.command()
@click.argument("args", nargs=-1, required=True, metavar='RESULTS... "SQL"')
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="output format; parquet needs -o")
@click.option("-o", "--out", "out", type=click.Path(path_type=Path),
              help="write the result to this file instead of standard output")
@click.option("--schema", "show_schema", is_flag=True,
              help="list the views and their columns (then SQL is not needed)")
@click.option("--limit", type=click.IntRange(0, 2**63 - 2), default=50, show_default=True,  # DuckDB's fetch takes int64
              help="table format: rows printed (0 = all); the other formats write every row")
def query(args, fmt, out, show_schema, limit):
    """Run SQL over the tables of one or more results directories.

    \b
    Examples:
      hsrtcp query out "select flow_id, retransmissions, rtt_mean from flows"
      hsrtcp query runs/a runs/b "select results, class, count(*) from events
                                  where kind = 'retransmission' group by all"
      hsrtcp query out "select * from rtt where method = 'ack'" -f parquet -o rtt_ack.parquet
      hsrtcp query out runs/b --schema
    """
    import duckdb

    from hsrtcp.query import StatementError, connect, read_statement, schema

    if show_schema:
        dirs, sql = list(args), None
    else:
        if len(args) < 2:
            raise click.UsageError('give at least one results directory and the SQL: RESULTS... "SQL"')
        dirs, sql = list(args[:-1]), args[-1]
        try:  # refused before anything runs (docs/query.md, "Read-only")
            sql = read_statement(sql)
        except StatementError as exc:
            raise click.UsageError(f"SQL: {exc}") from None
    if fmt == "parquet" and out is None and not show_schema:
        raise click.UsageError("--format parquet needs -o FILE")
    con = connect(dirs)
    if show_schema:
        _emit(_schema_text(schema(con)), out, dirs)
        return
    try:
        cur = con.execute(sql)
        _write(con, cur, sql, fmt, out, limit, dirs)
    except duckdb.CatalogException as exc:
        _missing_table(con, dirs, exc)
    except duckdb.PermissionException as exc:
        raise click.UsageError(_outside(exc, dirs)) from None
    except duckdb.Error as exc:
        raise click.UsageError(f"SQL: {exc}") from None


def _outside(exc: Exception, dirs: list[str]) -> str:
    """DuckDB's refusal of a file, extension or setting the confined connection does not allow."""
    import re

    m = re.search(r'Cannot access (?:file|directory) "(.*?)"', str(exc))
    given = ", ".join(dirs)
    if m:
        return (f"SQL: {m.group(1)} is not in the results directories given ({given}): query reads "
                f"them and nothing else (no other file, extension or network)")
    return (f"SQL: {str(exc).splitlines()[0].removeprefix('Permission Error: ')}: query reads the results "
            f"directories given ({given}) and nothing else (no other file, extension or network)")


def _missing_table(con, dirs: list[str], exc: Exception) -> None:
    import re

    from hsrtcp.errors import InputError
    from hsrtcp.query import schema
    # the tables a results directory can hold: the core's registry and the Python-written ones
    from hsrtcp.versions import VERSIONS

    m = re.search(r"Table with name (\S+) does not exist", str(exc))
    views = ", ".join(v for v, _ in schema(con))
    if m and m.group(1).strip('"') in VERSIONS:
        name = m.group(1).strip('"')
        raise InputError(f"{', '.join(dirs)}: no {name}.parquet in {'this directory' if len(dirs) == 1 else 'any of them'} "
                         f"(tables: {views})")
    raise click.UsageError(f"SQL: {str(exc).splitlines()[0]} (tables: {views})")


def _schema_text(views) -> str:
    lines = []
    for view, cols in views:
        lines.append(f"{view} ({len(cols)} columns)")
        lines += [f"  {c}: {t}" for c, t in cols]
    return "\n".join(lines)


def _emit(text: str, out: Path | None, dirs: list[str]) -> None:
    if out is None:
        click.echo(text)
    else:
        from hsrtcp.atomic import open_output

        with open_output(out, reads=dirs) as f:
            f.write(text + "\n")


def _write(con, cur, sql: str, fmt: str, out: Path | None, limit: int, dirs: list[str]) -> None:
    """The result in format ``fmt`` on standard output, or with ``-o`` into ``out``."""
    names = [d[0] for d in cur.description]
    if fmt == "table":
        from hsrtcp.report.summary import format_table

        rows = cur.fetchall() if not limit else cur.fetchmany(limit + 1)
        more = len(rows) > limit > 0
        rows = rows[:limit] if limit else rows
        text = format_table([(n, False) for n in names], [[_cell(v) for v in r] for r in rows])
        if more:
            total = con.execute(f"SELECT count(*) FROM (\n{sql}\n)").fetchone()[0]  # \n: ends a -- comment
            text += f"\n({len(rows)} of {total:,} rows shown; --limit 0 for all, or -f csv)"
        _emit(text, out, dirs)
        return
    if out is None:
        _rows(cur, names, fmt, sys.stdout)
    else:
        _copy(con, sql, fmt, out, dirs)


def _copy(con, sql: str, fmt: str, out: Path, dirs: list[str]) -> None:
    """``-o`` in csv, json or parquet: DuckDB's ``COPY`` writes the file, through
    :mod:`hsrtcp.atomic` (never over a table of ``dirs``; a device or pipe is written
    through). The COPY runs on a connection of its own that holds only the result's rows
    (streamed as Arrow batches): the connection over the results reads, never writes."""
    import duckdb

    from hsrtcp.atomic import output_path
    from hsrtcp.query import _sql_str

    # a relation streams its batches (a DB-API result's reader holds them all), on a cursor
    # of its own as ``con`` still holds the first execution; duckdb 1.x: fetch_arrow_reader
    rel = con.cursor().sql(sql)
    batches = (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(100_000)
    writer = duckdb.connect()
    writer.execute("SET enable_progress_bar = false")
    writer.register("result", batches)
    opts = {"csv": "FORMAT csv, HEADER true", "json": "FORMAT json", "parquet": "FORMAT parquet"}[fmt]
    with output_path(out, reads=dirs) as tmp:
        writer.execute(f"COPY result TO {_sql_str(tmp)} ({opts}, USE_TMP_FILE false)")


def _rows(cur, names: list[str], fmt: str, stream) -> None:
    if fmt == "csv":
        w = csv.writer(stream, lineterminator="\n")
        w.writerow(names)
        while batch := cur.fetchmany(10_000):
            w.writerows([["" if v is None else v for v in r] for r in batch])
    else:  # json: one object per line, as DuckDB's COPY writes it
        while batch := cur.fetchmany(10_000):
            for r in batch:
                stream.write(json.dumps(dict(zip(names, r)), default=str) + "\n")


def _cell(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return f"{v:.16g}"
    return str(v)
