"""Every consumer of a results directory (report, study, plot *, mptcp, model fit) reads it
through the one versioned results reader (hsrtcp.results): a damaged or foreign table is a
message naming the file and the column, exit 3, never a traceback (issue 30, item 9).

The results directories are real: tests/data captures (kernel TCP through the namespace
testbed, a two-path MPTCP download; tests/data/README.md) analyzed by the CLI, one of them
with a radio log so that the context tables are there. The tables are then damaged the way
old, foreign or broken files look: a column dropped, retyped to string, flow_id as Int32 or
Float64, NaN or inf floats, the file cut, other bytes, an empty file, zero rows, metadata of
a newer version or of another table.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hsrtcp
from hsrtcp.cli import main
from hsrtcp.results import CORE_TABLES, MPTCP_TABLES, SCHEMA_KEY, VERSION_KEY, VERSIONS, ResultsDir, doc

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"


def run(args) -> tuple[int, str]:
    """The CLI in-process: exit code and what it wrote to stderr."""
    import matplotlib.pyplot as plt

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
    plt.close("all")
    return code, err.getvalue()


def consumers(res: Path, out: Path) -> dict[str, list]:
    return {
        "report": ["report", res, "-o", out / "r.html"],
        "study": ["study", res, "-o", out / "study", "--min-flows", "1", "--bootstrap", "0", "-q"],
        **{f"plot {k}": ["plot", k, res, "-o", out / f"{k}.png"]
           for k in ("tsg", "throughput", "window", "rtt", "cdf", "model")},
        "mptcp": ["mptcp", res],
        "model fit": ["model", "fit", res, "-o", out / "fit"],
    }


def _radio_log(path: Path, start: float, end: float) -> Path:
    # 300 km/h, one handoff in the middle of the flow (as the report and study tests do)
    first, last, mid = round(start * 1000) - 1000, round(end * 1000) + 1000, round((start + end) / 2 * 1000)
    rows = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    rows += [f"{ms},M,LTE,1,{8 if ms >= mid else 7},300,-80,-10" for ms in range(first, last, 2)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    """``pair``: ack_blackout's two captures with a radio log (flows with matched rows, context
    tables); ``mptcp``: the two-path MPTCP download at the server vantage."""
    base = tmp_path_factory.mktemp("bases")
    client, server = DATA / "ack_blackout.client.pcap", DATA / "ack_blackout.server.pcap"
    f = hsrtcp.analyze([client], vantage="client").flows
    log = _radio_log(base / "radio.csv", float(f["first_ts"].min()), float(f["last_ts"].max()))
    code, err = run(["analyze", "--client", client, "--server", server, "--radio", log, "--radio-map", RMAP,
                     "-q", "--no-plot", "-o", base / "pair"])
    assert code == 0, err
    code, err = run(["analyze", "--vantage", "server", DATA / "mptcp" / "two_paths.client.pcap", "-q", "--no-plot",
                     "-o", base / "mptcp"])
    assert code == 0, err
    return {"pair": base / "pair", "mptcp": base / "mptcp"}


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def rewrite(path: Path, df: pl.DataFrame, metadata: dict | None = None) -> None:
    df.write_parquet(path, metadata=metadata)


def mutate(path: Path, how: str, column: str | None = None, cut: float = 0.5) -> None:
    """Damage one table file in place."""
    if how == "garbage":
        path.write_bytes(b"this is not a Parquet file\n" * 3)
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "cut":
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * cut)])
    else:
        df = pl.read_parquet(path)
        df = {
            "zero rows": lambda: df.clear(),
            "drop": lambda: df.drop(column),
            "string": lambda: df.with_columns(pl.col(column).cast(pl.String)),
            "int32": lambda: df.with_columns(pl.col(column).cast(pl.Int32, strict=False)),
            "float": lambda: df.with_columns(pl.col(column).cast(pl.Float64)),
            "nan": lambda: df.with_columns(pl.lit(float("nan")).alias(column)),
            "inf": lambda: df.with_columns(pl.lit(float("-inf")).alias(column)),
        }[how]()
        rewrite(path, df)


def check_outcome(name: str, res: Path, code: int, err: str) -> None:
    """0, or 3 with a message naming the results directory or a file in it; never an
    internal error (4) or a traceback."""
    assert "Traceback" not in err and "internal error" not in err, f"{name}: {err}"
    assert code in (0, 3), f"{name}: exit {code}: {err}"
    if code == 3:
        assert any(line.startswith("error: ") and str(res) in line for line in err.splitlines()), f"{name}: {err}"


# ------------------------------------------------------------------- the cases, one by one

EVERY = ("report", "study", "plot tsg", "plot throughput", "plot window", "plot rtt", "plot cdf", "plot model",
         "mptcp", "model fit")


@pytest.mark.parametrize("table, column, how, got, want, readers", [
    # a string-typed column where a number is declared
    ("flows", "first_ts", "string", "String", "Float64",
     ("report", "study", "plot tsg", "plot throughput", "plot window", "plot rtt", "mptcp")),
    ("events", "ts", "string", "String", "Float64",
     ("report", "study", "plot tsg", "plot window", "plot rtt", "mptcp")),
    ("series", "bin_s", "string", "String", "Float64", ("report", "plot throughput", "plot cdf", "mptcp")),
    ("rtt", "rtt_s", "string", "String", "Float64", ("report", "plot rtt")),
    ("handoffs", "ts", "string", "String", "Float64", ("study", "plot tsg", "plot window", "plot rtt")),
    # a flow_id that is not UInt64
    ("flows", "flow_id", "int32", "Int32", "UInt64", tuple(c for c in EVERY if c != "plot cdf")),  # cdf: context
    ("series", "flow_id", "float", "Float64", "UInt64",
     ("report", "study", "plot tsg", "plot throughput", "plot window", "plot cdf", "mptcp")),
    ("context", "flow_id", "string", "String", "UInt64", ("report", "study", "plot cdf")),
])
def test_a_column_of_another_type_is_named(bases, tmp_path, table, column, how, got, want, readers):
    res = copy(bases["pair"] if table != "series" or column != "bin_s" else bases["mptcp"], tmp_path / "res")
    mutate(res / f"{table}.parquet", how, column)
    calls = consumers(res, tmp_path)
    for name in readers:
        code, err = run(calls[name])
        assert code == 3, f"{name}: {err}"
        assert f"{res / table}.parquet: column {column} is {got}, expected {want} ({table} schema version " \
               f"{VERSIONS[table]}, {doc(table)})" in err, f"{name}: {err}"
        assert "Traceback" not in err


@pytest.mark.parametrize("table, column, readers", [
    ("flows", "first_ts", ("report", "study", "plot tsg", "plot throughput", "mptcp")),
    ("events", "ts", ("report", "study", "plot tsg", "plot rtt", "mptcp")),
    ("series", "goodput_bytes", ("report", "plot throughput", "plot tsg", "mptcp")),
])
def test_an_older_schema_without_a_column_is_named(bases, tmp_path, table, column, readers):
    res = copy(bases["pair"], tmp_path / "res")
    mutate(res / f"{table}.parquet", "drop", column)
    calls = consumers(res, tmp_path)
    for name in readers:
        code, err = run(calls[name])
        assert code == 3, f"{name}: {err}"
        assert f"{res / table}.parquet: {table} table without the column(s) {column}" in err, f"{name}: {err}"
        assert "re-run hsrtcp analyze" in err and "Traceback" not in err


@pytest.mark.parametrize("table, column", [("flows", "duration_s"), ("flows", "rtt_mean"), ("events", "ts_end"),
                                           ("series", "t_rel"), ("rtt", "rtt_s"), ("rtt", "ts")])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_nan_and_inf_are_read_as_null_and_the_report_is_written(bases, tmp_path, table, column, value):
    """The report's JSON has no NaN ("Out of range float values are not JSON compliant"):
    the reader gives null, which the report shows as missing."""
    res = copy(bases["pair"], tmp_path / "res")
    path = res / f"{table}.parquet"
    rewrite(path, pl.read_parquet(path).with_columns(pl.lit(value).alias(column)))
    code, err = run(["report", res, "-o", tmp_path / "r.html"])
    assert code == 0, err
    assert ResultsDir(res).read(table)[column].null_count() == pl.read_parquet(path).height
    text = (tmp_path / "r.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', text, re.S).group(1).replace("<\\/", "</"))
    if (table, column) == ("flows", "duration_s"):
        cols = {c["key"]: c["values"] for c in data["flow_table"]["columns"]}
        assert cols["duration_s"] == [None] * len(cols["duration_s"])


def test_the_report_json_shows_a_derived_nan_as_null():
    from hsrtcp.report.build import _json_for_html

    assert _json_for_html({"a": [1.5, float("nan")], "b": {"c": float("-inf")}}) == '{"a":[1.5,null],"b":{"c":null}}'


@pytest.mark.parametrize("how", ["empty", "cut", "garbage"])
@pytest.mark.parametrize("table", ["flows", "series", "mptcp"])
def test_mptcp_on_an_empty_cut_or_foreign_table(bases, tmp_path, how, table):
    res = copy(bases["mptcp"], tmp_path / "res")
    mutate(res / f"{table}.parquet", how)
    code, err = run(["mptcp", res])
    assert code == 3, err
    assert f"error: {res / table}.parquet: cannot read as Parquet: " in err
    assert ("an empty file" if how == "empty" else "not a readable Parquet file") in err
    assert "Traceback" not in err


def test_zero_rows_are_a_message_or_an_empty_result(bases, tmp_path):
    res = copy(bases["mptcp"], tmp_path / "res")
    mutate(res / "flows.parquet", "zero rows")
    calls = consumers(res, tmp_path)
    for name in EVERY:
        check_outcome(name, res, *run(calls[name]))
    assert f"error: {res}: no flows analyzed at the server vantage" in run(calls["mptcp"])[1]


def test_types_that_convert_without_loss_are_read_as_declared(bases, tmp_path):
    res = copy(bases["pair"], tmp_path / "res")
    flows = pl.read_parquet(res / "flows.parquet")
    narrow = flows.with_columns(pl.col("epoch").cast(pl.UInt8), pl.col("retransmissions").cast(pl.UInt16),
                                pl.col("rtt_mean").cast(pl.Float32), pl.col("duration_s").cast(pl.Int64))
    rewrite(res / "flows.parquet", narrow)
    read = ResultsDir(res).read("flows")
    assert read.schema == flows.schema
    assert read.equals(narrow.cast(dict(flows.schema)))
    for name in ("report", "study", "plot tsg", "plot throughput", "model fit"):
        code, err = run(consumers(res, tmp_path)[name])
        assert code == 0, f"{name}: {err}"
    rewrite(res / "flows.parquet", flows.with_columns(pl.col("retransmissions").cast(pl.Int64)))  # signed: no
    code, err = run(consumers(res, tmp_path)["report"])
    assert code == 3 and "column retransmissions is Int64, expected UInt64" in err


# ------------------------------------------------------------------- versions

def test_the_versions_are_those_of_the_format_pages():
    from hsrtcp.mptcp.metrics import SCHEMA_VERSION as MPTCP_METRICS

    for table, version in VERSIONS.items():
        title = (ROOT / doc(table)).read_text().splitlines()[0]
        assert re.search(rf"\(.*version {version}\)", title), (table, title)
    assert all(VERSIONS[f"mptcp_{t}"] == MPTCP_METRICS for t in ("instances", "paths", "kt", "rates"))


def test_writers_put_the_version_in_the_parquet_metadata(bases, tmp_path):
    """Every Parquet file of a results directory says its table and schema version: those the
    native writer of ``hsrtcp analyze`` writes (one capture; a pair, with pair_stats) as well
    as the Python writers'. Ran red for the files of ``hsrtcp analyze`` (no metadata)."""
    for table in ("context", "handoffs", "suspensions", "labels", "coverage", "radio"):
        meta = pl.read_parquet_metadata(bases["pair"] / f"{table}.parquet")
        assert (meta[SCHEMA_KEY], meta[VERSION_KEY]) == (table, str(VERSIONS[table]))
    hsrtcp.analyze([DATA / "small_50k.server.pcap"]).write(tmp_path / "w")
    for table in ("flows", "events", "rtt", "series", "captures", "mptcp"):
        meta = pl.read_parquet_metadata(tmp_path / "w" / f"{table}.parquet")
        assert (meta[SCHEMA_KEY], meta[VERSION_KEY]) == (table, str(VERSIONS[table]))
    engine = (*CORE_TABLES, *MPTCP_TABLES)
    for base, tables in (("mptcp", engine), ("pair", (*engine, "pair_stats"))):
        assert {p.stem for p in bases[base].glob("*.parquet")} >= set(tables)
        for table in tables:
            meta = pl.read_parquet_metadata(bases[base] / f"{table}.parquet")
            assert (meta.get(SCHEMA_KEY), meta.get(VERSION_KEY)) == (table, str(VERSIONS[table])), (base, table)
    assert {t: VERSIONS[t] for t in (*engine, "pair_stats")} == {
        "flows": 3, "events": 1, "rtt": 1, "series": 2, "captures": 3, "mptcp": 1, "mptcp_subflows": 1,
        "mptcp_series": 1, "pair_stats": 4}


def test_the_native_module_declares_the_matched_columns_as_the_matcher_writes_them(bases):
    """results.known() takes the two-vantage columns from ``_native.matched_schemas()``; they
    are the columns and types the matcher really writes (run on no input: empty tables), and
    every column of a pair run's flows and series has its declared type."""
    from hsrtcp import _native
    from hsrtcp.results import expected_type, known

    r = _native.analyze_pair("", "", "", "")
    written = {"flows": pl.read_ipc_stream(r["matched"]).schema, "series": pl.read_ipc_stream(r["series"]).schema}
    for table, schema in written.items():
        assert {c: t for c, t in known()[table].items() if c in schema} == dict(schema), table
        assert set(known()[table]) - set(schema) == ({"client_flow_id", "server_flow_id"} if table == "flows"
                                                     else set())
    for table in ("flows", "series", "pair_stats"):
        schema = pl.read_parquet_schema(bases["pair"] / f"{table}.parquet")
        assert {c: expected_type(table, c) for c in schema} == dict(schema), table


def test_a_newer_version_or_another_table_is_refused_a_missing_version_read(bases, tmp_path):
    res = copy(bases["pair"], tmp_path / "res")
    flows = pl.read_parquet(res / "flows.parquet")
    newer = VERSIONS["flows"] + 1
    rewrite(res / "flows.parquet", flows, {SCHEMA_KEY: "flows", VERSION_KEY: str(newer)})
    code, err = run(["study", res, "-o", tmp_path / "s", "-q"])
    assert code == 3
    assert f"flows.parquet: flows schema version {newer} is newer than version {VERSIONS['flows']}" in err
    rewrite(res / "flows.parquet", flows, {SCHEMA_KEY: "events", VERSION_KEY: "1"})
    code, err = run(["plot", "tsg", res, "-o", tmp_path / "x.png"])
    assert code == 3 and "flows.parquet: holds the 'events' table (hsrtcp.schema in its metadata)" in err
    # as an older hsrtcp wrote it (no version) and as an older version says it: read
    for meta in (None, {SCHEMA_KEY: "flows", VERSION_KEY: "1"}):
        rewrite(res / "flows.parquet", flows, meta)
        assert run(["plot", "tsg", res, "-o", tmp_path / "x.png"])[0] == 0


def test_study_of_a_corpus_names_the_damaged_partition(bases, tmp_path):
    corpus = tmp_path / "corpus"
    copy(bases["pair"], corpus / "input=a")
    copy(bases["mptcp"], corpus / "input=b")
    code, err = run(["study", corpus, "-o", tmp_path / "s", "--min-flows", "1", "--bootstrap", "0", "-q"])
    assert code == 0, err
    mutate(corpus / "input=b" / "events.parquet", "string", "ts")
    code, err = run(["study", corpus, "-o", tmp_path / "s2", "-q"])
    assert code == 3
    assert f"{corpus / 'input=b' / 'events.parquet'}: column ts is String, expected Float64" in err


# ------------------------------------------------------------------- the witness

MUTATIONS = ("drop", "string", "int32", "float", "nan", "inf", "cut", "garbage", "empty", "zero rows")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_every_consumer_exits_0_or_3_on_a_damaged_table(bases, data):
    base = data.draw(st.sampled_from(sorted(bases)), label="base")
    tables = sorted(p.stem for p in bases[base].glob("*.parquet"))
    table = data.draw(st.sampled_from(tables), label="table")
    schema = pl.read_parquet_schema(bases[base] / f"{table}.parquet")
    how = data.draw(st.sampled_from(MUTATIONS), label="mutation")
    column, cut = None, 0.5
    if how in ("nan", "inf"):
        floats = [c for c, t in schema.items() if t.is_float()]
        if not floats:
            how = "garbage"
        else:
            column = data.draw(st.sampled_from(floats), label="column")
    elif how in ("int32", "float"):
        column = "flow_id" if "flow_id" in schema and data.draw(st.booleans(), label="flow_id") else \
            data.draw(st.sampled_from([c for c, t in schema.items() if t.is_numeric()] or ["?"]), label="column")
        if column == "?":
            how = "empty"
    elif how in ("drop", "string"):
        column = data.draw(st.sampled_from(list(schema)), label="column")
    elif how == "cut":
        cut = data.draw(st.floats(0.0, 0.999), label="cut")
    with tempfile.TemporaryDirectory() as tmp:
        res = copy(bases[base], Path(tmp) / "res")
        mutate(res / f"{table}.parquet", how, column, cut)
        for name, args in consumers(res, Path(tmp)).items():
            check_outcome(f"{name} ({base}/{table}.parquet, {how} {column or ''})", res, *run(args))


@pytest.mark.parametrize("column, report_note, study_refuses", [
    ("gap_end_ts", True, False),  # the report draws suspensions from their start and end
    ("suspension_s", False, True),  # the study pools their lengths
])
def test_an_optional_table_is_checked_for_the_columns_each_consumer_reads(bases, tmp_path, column, report_note,
                                                                         study_refuses):
    # both take the context tables through results.optional_tables: the report does without one
    # it cannot use (a note on the page), the study refuses it
    res = copy(bases["pair"], tmp_path / "res")
    mutate(res / "suspensions.parquet", "drop", column)
    calls = consumers(res, tmp_path)
    code, err = run(calls["report"])
    assert code == 0, err
    note = f"suspensions.parquet ignored: lacks column(s) {column} (older schema)"
    assert (note in (tmp_path / "r.html").read_text()) == report_note
    code, err = run(calls["study"])
    assert code == (3 if study_refuses else 0), err
    assert (f"{res}/suspensions.parquet: suspensions table without the column(s) {column}" in err) == study_refuses
