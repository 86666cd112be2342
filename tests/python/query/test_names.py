"""Issue 31: every flow has a short name (f1, f1s, ...) derived at read time, the same in
polars (hsrtcp.results.flow_names, what plot, report and the API use) and in SQL (the
flows view of hsrtcp query); connections are numbered by their first packet, which is how
tshark numbers its TCP streams (tcp.stream): tshark on the same captures is the witness."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp import query
from hsrtcp.errors import InputError
from hsrtcp.results import flow_names, parse_flow, select_flow
from hsrtcp.testing import fixtures, peers

DATA = Path(__file__).resolve().parents[2] / "data"


def analyze(out: Path, *args) -> Path:
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", *map(str, args), "-o", str(out), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return out


def tshark_streams(capture: Path) -> dict[int, int]:
    """tshark's tcp.stream of each connection's client port (its first SYN)."""
    out = subprocess.run(["tshark", "-r", str(capture), "-T", "fields", "-e", "tcp.stream", "-e", "tcp.srcport",
                          "-Y", "tcp.flags.syn==1 && tcp.flags.ack==0"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    streams: dict[int, int] = {}
    for line in out.splitlines():
        stream, port = line.split("\t")
        streams.setdefault(int(stream), int(port))
    return streams


@pytest.mark.parametrize("name", ["multi_concurrent.server", "multi_sequential.server"])
def test_numbers_follow_tsharks_stream_order(tmp_path, name):
    if not peers.have("tshark"):
        pytest.skip("tshark not installed")
    res = analyze(tmp_path / "r", DATA / f"{name}.pcap")
    got = query.sql([res], "select short_id, client_port from flows order by first_ts")
    streams = tshark_streams(DATA / f"{name}.pcap")
    assert len(streams) == got.height >= 3
    want = {f"f{s + 1}": port for s, port in streams.items()}
    assert dict(zip(got["short_id"], got["client_port"])) == want


def test_a_reused_4tuple_is_two_connections_and_the_tuple_says_so(tmp_path):
    """reuse_4tuple: one 4-tuple, two connections (tshark: streams 0 and 1); the tuple alone
    cannot choose, the names can."""
    res = analyze(tmp_path / "r", DATA / "reuse_4tuple.server.pcap")
    flows = pl.read_parquet(res / "flows.parquet")
    assert flows.height == 2
    if peers.have("tshark"):
        assert len(tshark_streams(DATA / "reuse_4tuple.server.pcap")) == 2
    row = flows.sort("first_ts").row(0, named=True)
    spec = f"{row['client_addr']}:{row['client_port']}-{row['server_addr']}:{row['server_port']}"
    with pytest.raises(InputError, match=r"4-tuple of 2 connections \(f1 \(flow_id 0, epoch 0\); f2 \(flow_id 1, epoch 1\)\)"):
        select_flow(flows, spec, "flows.parquet")
    assert select_flow(flows, "f2", "x")["epoch"] == 1
    assert select_flow(flows, 1, "x")["short_id"] == "f2"


def test_pair_rows_share_their_connection_and_sql_equals_polars(pair, multi, drops):
    """The pair fixture (ack_blackout, both sides): one connection, three rows c/s/m; with two
    more directories in one query, numbering restarts per results directory."""
    got = query.sql([pair, multi, drops], "select results, flow_id, short_id, connection from flows")
    for d in (pair, multi, drops):
        want = flow_names(pl.read_parquet(d / "flows.parquet")).select("flow_id", "short_id", "connection")
        mine = got.filter(pl.col("results") == d.name).drop("results")
        assert mine.sort("flow_id").equals(want.sort("flow_id")), d.name
    p = got.filter(pl.col("results") == pair.name)
    flows = pl.read_parquet(pair / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    names = dict(zip(p["flow_id"], p["short_id"]))
    assert names[m["flow_id"]] == "f1m"
    assert names[m["client_flow_id"]] == "f1c" and names[m["server_flow_id"]] == "f1s"
    # JSON-safe: names are short strings, never integers above 2^53
    assert all(len(n) <= 8 for n in got["short_id"])


def test_a_corpus_is_numbered_across_its_inputs(tmp_path):
    corpus = fixtures.corpus(tmp_path / "field", ("multi_concurrent.server.pcap", "small_50k.server.pcap"))
    res = analyze(tmp_path / "results", corpus)
    got = query.sql([res], "select input, flow_id, first_ts, short_id from flows")
    assert got.height == 4 and got["short_id"].n_unique() == 4  # flow_id repeats across inputs, names do not
    assert got["flow_id"].n_unique() < 4
    by_time = got.sort("first_ts")["short_id"].to_list()
    assert by_time == ["f1", "f2", "f3", "f4"]
    want = flow_names(got.drop("short_id").with_columns(vantage=pl.lit(None, pl.String)))
    assert got.join(want, on=["input", "flow_id"])["short_id"].equals(
        got.join(want, on=["input", "flow_id"])["short_id_right"].alias("short_id"))
    conns = query.sql([res], "select connection, rows, server_short_id from connections")
    assert conns["connection"].to_list() == ["f1", "f2", "f3", "f4"]
    assert conns["server_short_id"].to_list() == conns["connection"].to_list()  # inferred server side


@pytest.mark.parametrize("spec, want", [
    ("f12", ("short", "f12")), ("F3S", ("short", "f3s")), ("1099511627776", ("id", 1099511627776)),
    (4611688217450643456, ("id", 4611688217450643456)),
    ("10.0.1.2:41068-10.0.2.2:5201", ("tuple", ("10.0.1.2", 41068, "10.0.2.2", 5201))),
    ("[2001:DB8:0::1]:443-[2001:db8::2]:5201", ("tuple", ("2001:db8::1", 443, "2001:db8::2", 5201))),
])
def test_parse_flow(spec, want):
    assert parse_flow(spec) == want


@pytest.mark.parametrize("spec", ["f0", "abc", "10.0.1.2:70000-10.0.2.2:1", "10.0.1.999:1-10.0.2.2:1",
                                  str(2**64), "-3", "f1x"])
def test_parse_flow_refuses(spec):
    with pytest.raises(ValueError):
        parse_flow(spec)


def test_the_api_names_flows_as_query_does(tmp_path):
    """ds.flows carries the short_id query gives (the one flow_names), and writing the
    Dataset stores flows without the derived names (query adds them again on read)."""
    import hsrtcp

    ds = hsrtcp.analyze(client=DATA / "ack_blackout.client.pcap", server=DATA / "ack_blackout.server.pcap")
    assert ds.flows.columns[:2] == ["short_id", "connection"]
    assert sorted(ds.flows["short_id"]) == ["f1c", "f1m", "f1s"]
    out = tmp_path / "r"
    ds.write(out)
    assert "short_id" not in pl.read_parquet(out / "flows.parquet").columns
    got = query.sql([out], "select flow_id, short_id from flows")
    assert ds.flows.select("flow_id", "short_id").sort("flow_id").equals(got.sort("flow_id"))
    assert ds.flow("f1s")["vantage"] == "server"
    assert hsrtcp.Dataset.read(out).flows["short_id"].sort().equals(ds.flows["short_id"].sort())


def test_the_names_are_derived_on_first_use_of_flows(tmp_path, monkeypatch):
    """Reading, writing, tables() and connections() of a Dataset never derive the names (a
    join over every flows row, seconds on a million flows); the first ds.flows does, once,
    and gives what an eager Dataset gave (the names first, then the stored columns)."""
    import hsrtcp
    from hsrtcp import results

    out = analyze(tmp_path / "r", "--client", DATA / "ack_blackout.client.pcap",
                  "--server", DATA / "ack_blackout.server.pcap")
    calls = []
    real = results.with_names
    monkeypatch.setattr(results, "with_names", lambda flows: calls.append(flows.height) or real(flows))
    ds = hsrtcp.Dataset.read(out)
    stored = pl.read_parquet(out / "flows.parquet")
    assert ds.stored_flows().equals(stored) and ds.tables()["flows"].equals(stored)
    assert ds.connections().height == 1
    ds.write(tmp_path / "again")
    assert calls == []
    assert ds.flows.equals(real(stored)) and ds.flows is ds.flows
    assert calls == [3]
