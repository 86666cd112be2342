"""The MPTCP tables of the core (docs/formats/mptcp.md) against witnesses, on real captures of
kernel MPTCP (tests/data/mptcp, made by scripts/make_mptcp_fixtures.py):

- Wireshark's own MPTCP analysis of the same files (tshark with mptcp.analyze_mappings and
  mptcp.intersubflows_retransmission): the same connections (mptcp.stream), the same subflows in
  each (tcp.stream), the same tokens (the MP_JOIN SYN's receiver token, tshark's expected token
  of the server key), the same subflow-level bytes, the same reinjected bytes;
- the transfer itself (`received_bytes` of the fixture's JSON): the data-level bytes;
- the kernel's MPTcpExt counters (nstat, in the JSON): one MP_CAPABLE connection, the joins.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

import hsrtcp

DATA = Path(__file__).resolve().parents[2] / "data" / "mptcp"
FIXTURES = ["two_paths", "reinject"]
SERVER_ADDRS = ("10.31.1.2", "10.31.2.2")

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def tshark(pcap: Path, *fields: str, filt: str = "mptcp") -> list[list[str]]:
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-o", "mptcp.analyze_mappings:TRUE", "-o", "mptcp.relative_sequence_numbers:TRUE",
         "-o", "mptcp.intersubflows_retransmission:TRUE", "-Y", filt, "-T", "fields", "-E", "occurrence=f",
         *[a for f in fields for a in ("-e", f)]],
        check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines()]


@pytest.fixture(scope="module", params=FIXTURES)
def analyzed(request):
    name = request.param
    pcap = DATA / f"{name}.client.pcap"
    ds = hsrtcp.analyze([pcap])
    meta = json.loads((DATA / f"{name}.json").read_text())
    return name, pcap, ds, meta


def test_same_connections_subflows_and_bytes_as_wireshark(analyzed):
    _name, pcap, ds, _meta = analyzed
    conns, subs, flows = ds.extra["mptcp"], ds.extra["mptcp_subflows"], ds.flows
    # tshark: MPTCP stream -> TCP streams, and each TCP stream's client port and payload from the server
    streams: dict[str, set[str]] = defaultdict(set)
    port: dict[str, int] = {}
    down: dict[str, int] = defaultdict(int)
    for mstream, tstream, src, sport, dport, tlen in tshark(
            pcap, "mptcp.stream", "tcp.stream", "ip.src", "tcp.srcport", "tcp.dstport", "tcp.len", filt="tcp"):
        if mstream:
            streams[mstream].add(tstream)
        if src in SERVER_ADDRS:
            down[tstream] += int(tlen)
            port[tstream] = int(dport)
        else:
            port[tstream] = int(sport)
    assert len(streams) == 1 and len(conns) == 1, (streams, conns)
    (tcp_streams,) = streams.values()
    assert len(tcp_streams) == 2, "the fixture has two subflows"
    assert conns["subflows"].to_list() == [len(tcp_streams)]
    assert sorted(subs["client_port"].to_list()) == sorted(port[t] for t in tcp_streams)
    by_port = {r["client_port"]: r for r in subs.to_dicts()}
    for t in tcp_streams:
        assert by_port[port[t]]["payload_bytes_down"] == down[t], f"subflow of tcp.stream {t}"
    # flows rows carry the same token and subflow index
    mp = flows.filter(pl.col("mptcp_token").is_not_null()).sort("mptcp_subflow")
    assert mp["mptcp_subflow"].to_list() == [0, 1]
    assert mp["mptcp_token"].unique().to_list() == conns["token"].to_list()
    assert sorted(mp["flow_id"].to_list()) == sorted(subs["flow_id"].to_list())


def test_tokens_are_the_ones_wireshark_derives(analyzed):
    _name, pcap, ds, _meta = analyzed
    rows = tshark(pcap, "tcp.options.mptcp.recvtok", "mptcp.expected_token", "tcp.options.mptcp.addrid",
                  filt="tcp.flags.syn == 1")
    join_tokens = {int(r[0]) for r in rows if r[0]}
    expected = {int(r[1]) for r in rows if r[1]}
    token = ds.extra["mptcp"]["token"].to_list()
    assert join_tokens == set(token), "the MP_JOIN SYN names the server's token"
    assert expected == set(token), "tshark's token of the server key (SHA-256)"
    joined = ds.extra["mptcp_subflows"].filter(pl.col("subflow") == 1)
    assert joined["address_id"].to_list() == [int(r[2]) for r in rows if r[0]]


def test_data_level_bytes_and_reinjections(analyzed):
    name, pcap, ds, meta = analyzed
    c = ds.extra["mptcp"].row(0, named=True)
    subs = ds.extra["mptcp_subflows"]
    # every byte the client application received, once, at data level
    assert c["data_bytes_down"] == meta["received_bytes"]
    assert sum(subs["data_bytes_down"]) == c["data_bytes_down"]
    assert abs(sum(subs["share_down"]) - 1.0) < 1e-9
    assert c["data_fin_down"] and c["data_fin_up"] and c["ended"] == "data_fin"
    assert c["version"] == 1 and not c["fallback"]
    # Wireshark's inter-subflow retransmission analysis: the reinjected packets' bytes
    reinjected = [int(r[0]) for r in tshark(pcap, "tcp.len", filt="mptcp.reinjection_of")]
    assert c["reinjected_bytes"] == sum(reinjected)
    assert sum(subs["reinjected_bytes_down"]) == sum(reinjected)
    if name == "reinject":
        assert c["reinjections"] >= 1 and c["reinjected_bytes"] > 0
        # the kernel (server, the data sender) retransmitted at the MPTCP level
        assert meta["nstat_server"]["MPTcpExtMPTCPRetrans"] > 0
    else:
        assert c["reinjections"] == 0
    # the kernel's view: one MP_CAPABLE connection, one join per joined subflow
    assert meta["nstat_server"]["MPTcpExtMPCapableSYNRX"] == len(ds.extra["mptcp"])
    assert meta["nstat_server"]["MPTcpExtMPJoinSynRx"] == c["subflows"] - 1
    # the data-level series adds up to the connection; the client's DATA_ACK covers every
    # byte and the DATA_FIN (one DSN)
    s = ds.extra["mptcp_series"]
    assert sum(s["data_bytes_down"]) == c["data_bytes_down"]
    assert sum(s["data_acked_down"]) == c["data_bytes_down"] + 1


def test_tcp_without_mptcp_has_no_mptcp_rows():
    ds = hsrtcp.analyze([DATA.parent / "clean_200k.server.pcap"])
    assert ds.flows["mptcp_token"].null_count() == len(ds.flows)
    assert ds.flows["mptcp_subflow"].null_count() == len(ds.flows)
    assert all(len(ds.extra[t]) == 0 for t in ("mptcp", "mptcp_subflows", "mptcp_series"))


def test_every_declared_mptcp_column_is_documented():
    doc = (Path(__file__).resolve().parents[3] / "docs" / "formats" / "mptcp.md").read_text()
    from hsrtcp.api import schemas as declared

    schemas = declared()
    for table in ("mptcp", "mptcp_subflows", "mptcp_series"):
        missing = [name for name, _ty, _doc in schemas[table] if f"| {name} |" not in doc]
        assert missing == [], f"columns of {table} not in docs/formats/mptcp.md: {missing}"
