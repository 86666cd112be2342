"""Every table of every tests/data run against its committed digests (issue 37: a refactoring
of the core leaves every output bit for bit as it was). The run list and the digests are
hsrtcp.testing.golden's; tests/data/golden/tables.json is regenerated only with an explained
behaviour change (docs/testing.md)."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.testing import golden

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "golden" / "tables.json"
SMALL = "nano.client.pcap@none"  # one flow, 259 packets: the run the perturbation tests use


@pytest.fixture(scope="module")
def committed() -> dict:
    return golden.load(GOLDEN)


@pytest.fixture(scope="module")
def small_run() -> golden.Run:
    return next(r for r in golden.runs(DATA) if r.name == SMALL)


@pytest.mark.slow
def test_every_table_of_every_fixture_run_is_as_committed(committed):
    # about 10 s of CPU for all ~160 runs: one case, which lists every difference at once
    runs = golden.runs(DATA)
    found = [line for r in runs for line in golden.differences(r.name, committed.get(r.name), golden.run_digest(r, DATA))]
    found += [f"{n}: in the golden file, no longer a run" for n in sorted(set(committed) - {r.name for r in runs})]
    assert not found, (f"{len(found)} differences from tests/data/golden/tables.json:\n" + "\n".join(found[:40])
                       + ("\n..." if len(found) > 40 else "")
                       + "\nAn intended, explained change: python -m hsrtcp.testing.golden --update (docs/testing.md)")


def test_the_golden_file_covers_tables_of_every_kind(committed):
    # a file regenerated from a broken build (every run an error, or no tables) would pass
    # the test above against itself; the kinds and sizes below are those of today's fixtures
    tables = {t for r in committed.values() for t in r.get("tables", {})}
    assert {"flows", "events", "rtt", "series", "captures", "packets", "mptcp", "mptcp_subflows"} <= tables
    assert not [n for n, r in committed.items() if "error" in r]
    assert len(committed) >= 150
    packets = sum(r["tables"]["packets"]["rows"] for r in committed.values())
    assert packets > 100_000


def _one_changed(df: pl.DataFrame, column: str, row: int, value) -> pl.DataFrame:
    values = df[column].to_list()
    values[row] = value
    return df.with_columns(pl.Series(column, values, dtype=df[column].dtype))


def test_one_changed_value_is_reported_as_its_run_table_and_column(committed, small_run):
    tables = golden.run_tables(small_run)
    digest = lambda tabs: {"tables": {t: golden.table_digest(df, DATA) for t, df in tabs.items()}}  # noqa: E731
    assert golden.differences(SMALL, committed[SMALL], digest(tables)) == []

    # the smallest change a float can have: one ulp in one row
    rtt = tables["rtt"]
    col = next(c for c, d in rtt.schema.items() if d == pl.Float64 and rtt[c].null_count() == 0)
    x = rtt[col][3]
    bumped = dict(tables, rtt=_one_changed(rtt, col, 3, float(np.nextafter(x, math.inf))))
    rows = rtt.height
    assert golden.differences(SMALL, committed[SMALL], digest(bumped)) == [
        f"{SMALL} rtt: rows {rows} expected, {rows} now; columns differ: {col}"]

    # a null where a zero was, in the one flow
    flows = tables["flows"]
    zero = "retrans_rto"
    assert flows[zero].to_list() == [0]
    nulled = dict(tables, flows=_one_changed(flows, zero, 0, None))
    assert golden.differences(SMALL, committed[SMALL], digest(nulled)) == [
        f"{SMALL} flows: rows 1 expected, 1 now; columns differ: {zero}"]

    # one row less: the counts, and every column whose values moved
    shorter = dict(tables, events=tables["events"].head(-1))
    (line,) = golden.differences(SMALL, committed[SMALL], digest(shorter))
    n = tables["events"].height
    assert line.startswith(f"{SMALL} events: rows {n} expected, {n - 1} now; columns differ: ")


def test_a_perturbed_golden_file_fails_the_check_naming_run_table_and_column(tmp_path, capsys):
    doc = json.loads(GOLDEN.read_text(encoding="utf-8"))
    entry = doc["runs"][SMALL]["tables"]["flows"]
    schema = doc["schemas"][entry["schema"]]
    digests = entry["digests"].split()
    i = [c for c, _ in schema].index("s2c_payload_bytes")
    digests[i] = "0" * len(digests[i])
    entry["digests"] = " ".join(digests)
    perturbed = tmp_path / "tables.json"
    perturbed.write_text(json.dumps(doc), encoding="utf-8")

    assert golden.main(["--file", str(GOLDEN), "-k", "nano.client"]) == 0
    capsys.readouterr()
    assert golden.main(["--file", str(perturbed), "-k", "nano.client"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{SMALL} flows: rows 1 expected, 1 now; columns differ: s2c_payload_bytes"]


def test_dtype_changes_and_schema_changes_are_named():
    a = {"tables": {"t": golden.table_digest(pl.DataFrame({"x": [1, 2], "y": ["a", "b"]}), DATA)}}
    b = {"tables": {"t": golden.table_digest(pl.DataFrame({"x": pl.Series([1, 2], dtype=pl.UInt64),
                                                           "z": [0.5, 1.5]}), DATA)}}
    assert golden.differences("r", a, b) == [
        "r t: rows 2 expected, 2 now; columns differ: x; dtypes changed: x Int64 -> UInt64; "
        "columns missing: y; columns not expected: z"]
    c = {"tables": {"t": golden.table_digest(pl.DataFrame({"y": ["a", "b"], "x": [1, 2]}), DATA)}}
    assert golden.differences("r", a, c) == ["r t: rows 2 expected, 2 now; column order differs"]
    assert golden.differences("r", a, {"tables": {}}) == ["r t: table missing (2 rows expected)"]
    assert golden.differences("r", None, a) == [
        "r: not in the golden file (a new capture? regenerate: docs/testing.md)"]


def test_the_digest_sees_values_exactly_and_nothing_else(tmp_path):
    d = golden.column_digest
    f = lambda v: pl.Series(v, dtype=pl.Float64)  # noqa: E731
    assert d(f([0.0])) != d(f([-0.0]))                      # bits, not ==
    assert d(f([1.0, None])) != d(f([1.0, 0.0]))            # a null is not its fill value
    assert d(f([float("nan")])) == d(pl.Series(np.array([np.frombuffer(b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0]])))
    assert d(pl.Series(["ab", "c"])) != d(pl.Series(["a", "bc"]))  # lengths are part of it
    assert d(pl.Series(["a", None])) != d(pl.Series(["a", ""]))
    assert d(pl.Series([True, None])) != d(pl.Series([True, False]))

    # the same values give the same digests whatever their memory layout: chunks, a Parquet trip
    df = pl.DataFrame({"i": [1, None, 3, 4], "s": ["x", None, "zz", ""], "f": [0.5, None, float("nan"), -0.0]})
    chunked = pl.concat([df.head(2), df.tail(2)], rechunk=False)
    assert chunked.n_chunks() == 2
    df.write_parquet(tmp_path / "t.parquet")
    for other in (chunked, pl.read_parquet(tmp_path / "t.parquet")):
        assert golden.table_digest(other, DATA) == golden.table_digest(df, DATA)


def test_paths_into_tests_data_do_not_depend_on_where_the_tree_is():
    here = pl.DataFrame({"capture": [str(DATA / "nano.client.pcap")]})
    assert golden.table_digest(here, DATA) == golden.table_digest(
        pl.DataFrame({"capture": ["tests/data/nano.client.pcap"]}), DATA)


def test_there_is_one_run_list():
    # bench/fixture_diff.py compares two builds over the same runs: it must not keep its own list
    tree = ast.parse((ROOT / "bench" / "fixture_diff.py").read_text(encoding="utf-8"))
    own = sorted(n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in ("captures", "pairs", "runs"))
    assert own == []
    assert "hsrtcp/testing/golden.py" in (ROOT / "bench" / "fixture_diff.py").read_text(encoding="utf-8")
