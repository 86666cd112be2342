"""`hsrtcp query` reads the results directories it is given and nothing else (issue 30,
item 2; docs/query.md "Read-only"): one read statement, refused before it runs otherwise,
on a DuckDB connection that cannot open another file, write one, install or load an
extension, or change its own settings. The witnesses are real files outside the results
(a canary whose content must never come out, directories whose listing must not change)."""

from __future__ import annotations

import contextlib
import gc
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsrtcp import query
from hsrtcp.cli import main

SECRET = "canary-3f9d1c secret line"


@pytest.fixture(scope="module")
def site(drops, tmp_path_factory) -> Path:
    """base/res: a copy of the drops results, with a symlink res/up -> base/outside;
    base/outside/canary.csv and base/canary.txt: files the statements aim at."""
    base = tmp_path_factory.mktemp("site")
    shutil.copytree(drops, base / "res")
    (base / "outside").mkdir()
    for f in (base / "outside" / "canary.csv", base / "canary.txt"):
        f.write_text(f"name,value\n{SECRET},1\n")
    os.symlink(base / "outside", base / "res" / "up")
    return base


def listing(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.lstat().st_size) for p in root.rglob("*"))


def run(*args) -> tuple[int, str, str]:
    """The command line in this process (hypothesis runs hundreds of them)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsrtcp", "query", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def lit(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


# -- the statements of the issue ----------------------------------------------------------

ISSUE = {
    "read_csv": "select * from read_csv({canary})",
    "read_csv /etc/passwd": "select * from read_csv('/etc/passwd', sep = ':')",
    "read_text": "select * from read_text({canary})",
    "glob": "select * from glob({outside_glob})",
    "glob /etc": "select * from glob('/etc/*')",
    "copy to": "copy (select * from flows) to {target}",
    "copy into the results": "copy flows to {inside_target}",
    "export database": "export database {target_dir}",
    "attach": "attach {target_db} as x",
    "install httpfs": "install httpfs",
    "two statements": "select 1; copy (select 2) to {target}",
    "create": "create table t as select * from read_csv({canary})",
    "set": "set enable_external_access = true",
}


def paths(site: Path) -> dict[str, str]:
    res, out = site / "res", site / "outside"
    return {"canary": lit(str(out / "canary.csv")), "outside_glob": lit(str(out / "*")),
            "target": lit(str(site / "written.csv")), "inside_target": lit(str(res / "written.csv")),
            "target_dir": lit(str(site / "exported")), "target_db": lit(str(site / "attached.db"))}


@pytest.mark.parametrize("name", list(ISSUE))
def test_the_issue_statements_are_refused_with_nothing_read_or_written(site, name):
    before = listing(site)
    p = cli(site / "res", ISSUE[name].format(**paths(site)))
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and p.stdout == ""
    assert SECRET not in p.stderr and "root:" not in p.stderr
    assert listing(site) == before


def test_what_is_refused_says_why(site):
    p = cli(site / "res", "install httpfs")
    assert "only a read statement" in p.stderr and "not INSTALL" in p.stderr
    p = cli(site / "res", "select 1; select 2")
    assert "one statement only" in p.stderr and "has 2" in p.stderr
    p = cli(site / "res", f"select * from read_text({lit(str(site / 'canary.txt'))})")
    assert f"{site / 'canary.txt'} is not in the results directories given" in p.stderr


@pytest.mark.parametrize("sql", ["", ";", "   ", " ;; ", "/* only a comment */"])
def test_no_statement_is_a_usage_error(site, sql):
    code, out, err = run("query", site / "res", sql)
    assert code == 2 and "no SQL statement given" in err and "Traceback" not in err


@pytest.mark.parametrize("limit", ["99999999999999999999999", str(2**63 - 1), "-1"])
def test_a_limit_beyond_what_duckdb_fetches_is_a_usage_error(site, limit):
    code, out, err = run("query", site / "res", "select 1", "--limit", limit)
    assert code == 2 and "Invalid value for '--limit'" in err and "Traceback" not in err


def test_the_results_still_read_every_way(site):
    """The views, a table function over a file of the results, and a statement ending in
    ';' and a comment (the row count nests it as a subquery)."""
    res = site / "res"
    n = len(query.sql([res], "select * from rtt"))
    code, out, err = run("query", res, f"select count(*) n from read_parquet({lit(str(res / 'rtt.parquet'))})",
                         "-f", "csv")
    assert code == 0 and out.splitlines()[1] == str(n), err
    code, out, err = run("query", res, "select * from rtt; -- every row", "--limit", "3")
    assert code == 0, err
    assert f"(3 of {n:,} rows shown" in out
    code, out, err = run("query", res, "with r as (select * from rtt) from r select count(*) n;", "-f", "csv")
    assert code == 0 and out.splitlines()[1] == str(n), err


def test_a_symlink_in_the_results_does_not_lead_out(site):
    """res/up points outside: DuckDB resolves the link and the file is not in the results."""
    code, out, err = run("query", site / "res", f"select * from read_text({lit(str(site / 'res' / 'up' / 'canary.csv'))})")
    assert code == 2 and SECRET not in out + err, (out, err)


def test_the_python_connection_is_confined_and_locked(site):
    res = site / "res"
    con = query.connect([res])
    with pytest.raises(duckdb.PermissionException):
        con.sql(f"select * from read_text({lit(str(site / 'canary.txt'))})").fetchall()
    with pytest.raises(duckdb.Error, match="locked"):
        con.execute("set enable_external_access = true")
    with pytest.raises(query.StatementError, match="not COPY"):
        query.sql([res], f"copy flows to {lit(str(site / 'written.csv'))}")
    spill = con.execute("select current_setting('temp_directory')").fetchall()[0][0]
    assert Path(spill).is_dir() and not str(spill).startswith(str(res))
    del con
    gc.collect()
    assert not Path(spill).exists()  # DuckDB's spill directory goes with the connection
    # opting out gives DuckDB's defaults back
    free = query.connect([res], confined=False)
    assert SECRET in free.sql(f"select content from read_text({lit(str(site / 'canary.txt'))})").fetchall()[0][0]


# -- random statements aimed outside the results -----------------------------------------

READERS = ["read_csv", "read_csv_auto", "read_text", "read_blob", "read_json", "read_json_auto", "read_ndjson",
           "read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema", "sniff_csv", "glob"]
TEMPLATES = [
    "select * from {fn}({p})",
    "select count(*) from {fn}([{p}, {p}])",
    "from {fn}({p}) select *",
    "with x as (select * from {fn}({p})) select * from x",
    "select * from flows, {fn}({p})",
    "select * from {p}",
    "select * from {qp}",
    "describe select * from {fn}({p})",
    "summarize select * from {fn}({p})",
    "copy (select * from {fn}({p})) to {w}",
    "copy flows to {w} (format {fmt})",
    "copy flows from {p}",
    "export database {w}",
    "import database {p}",
    "attach {w} as x",
    "attach {p}",
    "install httpfs",
    "force install httpfs",
    "install {p}",
    "load {p}",
    "create table t as select * from {fn}({p})",
    "create view v as select * from {fn}({p})",
    "insert into flows select * from {fn}({p})",
    "set allowed_directories = [{p}]",
    "set enable_external_access = true",
    "reset lock_configuration",
    "pragma enable_profiling",
    "call {fn}({p})",
    "select 1; copy (select 2) to {w}",
    "select * from {fn}({p}); select 1",
]


@st.composite
def aimed_outside(draw, site: Path) -> str:
    res, out = site / "res", site / "outside"
    canary = out / "canary.csv"
    read = draw(st.sampled_from([
        str(canary), str(site / "canary.txt"), os.path.relpath(canary), f"{res}/../outside/canary.csv",
        f"{res}//..//outside/./canary.csv", f"{res}/up/canary.csv", f"file://{canary}", str(out / "*"),
        str(out / "c*.csv"), str(site / "**" / "canary.*"), str(out) + "/", "/etc/passwd", "~/.bashrc",
        f"{res}/../canary.txt", "https://example.invalid/x.csv", "s3://bucket/x.parquet",
    ]))
    write = draw(st.sampled_from([
        str(site / "written.csv"), str(out / "new.parquet"), str(res / "written.csv"),
        str(res / "input=evil" / "flows.parquet"), f"{res}/../written.json", str(site / "db.duckdb"),
        str(res / "flows.parquet"),
    ]))
    template = draw(st.sampled_from(TEMPLATES))
    # keywords and function names in any case; paths as they are (case matters on disk)
    parts = template.split("{")
    cased = []
    for i, part in enumerate(parts):
        head, _, tail = part.partition("}") if i else ("", "", part)
        flips = draw(st.lists(st.booleans(), min_size=len(tail), max_size=len(tail)))
        tail = "".join(c.upper() if f else c.lower() for c, f in zip(tail, flips))
        cased.append(("{" + head + "}" if i else "") + tail)
    space = draw(st.sampled_from([" ", "\n", "\t", " /* x */ ", "  "]))
    sql = "".join(cased).replace(" ", space) if draw(st.booleans()) else "".join(cased)
    fn = draw(st.sampled_from(READERS))
    fn = "".join(c.upper() if draw(st.booleans()) else c for c in fn)
    ending = draw(st.sampled_from(["", ";", " ; ", "; -- done", "\n"]))
    return sql.format(fn=fn, p=lit(read), qp='"' + read.replace('"', '""') + '"', w=lit(write),
                      fmt=draw(st.sampled_from(["csv", "parquet", "json"]))) + ending


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=st.data())
def test_no_statement_reads_or_writes_outside_the_results(site, data):
    before = listing(site)
    sql = data.draw(aimed_outside(site), label="sql")
    fmt = data.draw(st.sampled_from(["table", "csv", "json"]), label="format")
    code, out, err = run("query", site / "res", sql, "-f", fmt)
    assert "Traceback" not in err
    assert SECRET not in out + err and "root:" not in out + err
    if code == 0:
        # DESCRIBE only binds: the fixed columns of sniff_csv or glob need no file opened
        assert sql.lstrip().lower().startswith("describe"), (sql, out, err)
        assert "canary" not in out and "outside" not in out, out
    else:
        assert code in (2, 3), (sql, code, out, err)
        assert out == ""
    assert listing(site) == before, sql
