"""`hsrtcp query` and hsrtcp.query: DuckDB views over result directories. The witness is
polars reading the same Parquet files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import polars as pl
import pytest

from hsrtcp import query

TABLES = ("flows", "events", "rtt", "series", "captures")


def concat(dirs, table: str) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(d / f"{table}.parquet").with_columns(results=pl.lit(d.name))
                      for d in dirs], how="diagonal_relaxed")


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsrtcp", "query", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("table", TABLES)
def test_two_directories_are_one_view_equal_to_the_polars_concat(drops, pair, table):
    """pair has two-vantage columns drops lacks: union_by_name fills them with nulls."""
    got = query.sql([drops, pair], f"select * from {table}")
    if table == "flows":  # the flows view adds every row's name (test_names.py checks them)
        got = got.drop("short_id", "connection")
    want = concat([drops, pair], table)
    assert sorted(got.columns) == sorted(want.columns)
    key = [c for c in ("results", "flow_id", "ts", "bin", "capture", "kind", "class", "method", "dir") if c in want.columns]
    got = got.select(want.columns).sort(key, nulls_last=True)
    want = want.sort(key, nulls_last=True)
    assert got.height == want.height > 0
    assert got.equals(want), table


def test_results_column_and_clashing_names(drops, pair, tmp_path):
    twin = tmp_path / "x" / drops.name
    shutil.copytree(drops, twin)
    got = query.sql([drops, twin], "select results, count(*) n from flows group by all order by 1")
    assert sorted(got["results"].to_list()) == sorted([str(drops), str(twin)])
    got = query.sql([drops, pair], "select distinct results from events order by 1")
    assert got["results"].to_list() == sorted([drops.name, pair.name])


def test_context_tables_become_views(drops, tmp_path):
    d = tmp_path / "ctx"
    shutil.copytree(drops, d)
    pl.DataFrame({"carrier": ["A"], "ts": [1.0], "system": ["intra"]}).write_parquet(d / "handoffs.parquet")
    con = query.connect([d])
    assert con.sql("select carrier, results from handoffs").fetchall() == [("A", "ctx")]
    views = dict(query.schema(con))
    assert set(TABLES) | {"handoffs"} <= set(views)
    assert [c for c, _ in views["flows"]] == ["short_id", "connection", *pl.read_parquet_schema(d / "flows.parquet").names(),
                                              "results"]


def test_formats(drops, pair, tmp_path):
    sql = "select results, flow_id, vantage, retransmissions, rtt_mean from flows order by results, flow_id"
    want = query.sql([drops, pair], sql)
    p = cli(drops, pair, sql, "-f", "csv")
    assert p.returncode == 0, p.stderr
    (tmp_path / "o.csv").write_text(p.stdout)
    got = pl.read_csv(tmp_path / "o.csv", schema=want.schema)
    assert got.equals(want)
    assert cli(drops, pair, sql, "-f", "csv", "-o", tmp_path / "f.csv").returncode == 0
    assert pl.read_csv(tmp_path / "f.csv", schema=want.schema).equals(want)
    p = cli(drops, pair, sql, "--format", "json")
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["flow_id"] for r in rows] == want["flow_id"].to_list()
    assert [r["rtt_mean"] for r in rows] == want["rtt_mean"].to_list()
    assert cli(drops, pair, sql, "-f", "json", "-o", tmp_path / "f.json").returncode == 0
    assert pl.read_ndjson(tmp_path / "f.json")["flow_id"].to_list() == want["flow_id"].to_list()
    assert cli(drops, pair, sql, "-f", "parquet", "-o", tmp_path / "f.parquet").returncode == 0
    assert pl.read_parquet(tmp_path / "f.parquet").equals(want)
    p = cli(drops, pair, sql)  # table
    lines = p.stdout.splitlines()
    assert lines[0].split() == want.columns and len(lines) == 2 + want.height
    assert lines[2].split()[1] == str(want["flow_id"][0])
    p = cli(drops, "select * from rtt", "--limit", "3")
    assert len(p.stdout.splitlines()) == 2 + 3 + 1 and "rows shown" in p.stdout


def test_schema_listing(drops):
    p = cli(drops, "--schema")
    assert p.returncode == 0, p.stderr
    for t in TABLES:
        assert f"{t} (" in p.stdout
    assert "  flow_id: UBIGINT" in p.stdout and "  results: VARCHAR" in p.stdout


def check(p, code, *words):
    assert p.returncode == code, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in p.stderr, (w, p.stderr)


def test_bad_input(drops, tmp_path):
    check(cli(tmp_path / "nope", "select 1"), 3, "no such results directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    check(cli(empty, "select 1"), 3, "no Parquet tables")
    bad = tmp_path / "bad"
    shutil.copytree(drops, bad)
    (bad / "events.parquet").write_bytes(b"not parquet at all")
    check(cli(drops, bad, "select count(*) from flows"), 3, str(bad / "events.parquet"), "not a readable Parquet")
    check(cli(drops, "select * from nosuch"), 2, "nosuch", "tables: captures, connections, events, flows, mptcp, mptcp_series, mptcp_subflows, rtt, series")
    # a table of the formats that the directory does not have: an input problem
    check(cli(drops, "select * from handoffs"), 3, "no handoffs.parquet", "tables: captures")
    missing = tmp_path / "norrt"
    shutil.copytree(drops, missing)
    (missing / "rtt.parquet").unlink()
    check(cli(missing, "select count(*) from rtt"), 3, "no rtt.parquet")
    check(cli(drops, "selec 1"), 2, "syntax error")
    check(cli(drops, "select 1", "-f", "parquet"), 2, "needs -o")
    check(cli(drops), 2)


def test_an_older_results_directory_still_queries(drops, tmp_path):
    """A directory whose events lack columns (an older schema) unions with a current one;
    the missing columns are null there."""
    old = tmp_path / "old"
    shutil.copytree(drops, old)
    pl.read_parquet(old / "events.parquet").drop("cause").write_parquet(old / "events.parquet")
    got = query.sql([drops, old], "select results, count(cause) c, count(*) n from events group by 1 order by 1")
    rows = {r["results"]: r for r in got.to_dicts()}
    assert rows["old"]["c"] == 0 and rows["old"]["n"] == rows[drops.name]["n"]
