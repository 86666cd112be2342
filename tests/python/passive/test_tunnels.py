"""Issue 36 item 1: TCP inside tunnels.

Witnesses: a capture and the same capture wrapped in each encapsulation
(:mod:`hsrtcp.testing.encap`, headers packed from the specifications, not by the decoder)
give the same flows on every inner column; the tunnel columns say what wrapped them; tshark
finds the same inner conversations in the wrapped capture as in the plain one and as hsrtcp.
"""

from __future__ import annotations

import struct
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.testing import encap, peers
from hsrtcp.testing.pcapio import read_records

pytest.importorskip("hsrtcp._native")

DATA = Path(__file__).resolve().parents[2] / "data"
#: a server capture with three concurrent connections, an IPv6 one, a Linux cooked v2 one
CAPTURES = ["multi_concurrent.server.pcap", "ipv6_drops.server.pcap", "any_sll2.client.pcap"]
TUNNEL_COLUMNS = ["tunnel", "tunnel_client_addr", "tunnel_server_addr", "tunnel_id_c2s", "tunnel_id_s2c",
                  "mpls_labels_c2s", "mpls_labels_s2c", "tunnel_changes"]


def inner(df: pl.DataFrame) -> pl.DataFrame:
    return df.drop(["capture", *TUNNEL_COLUMNS]).sort("flow_id")


@pytest.fixture(scope="module")
def plain() -> dict[str, hsrtcp.Dataset]:
    return {c: hsrtcp.analyze([str(DATA / c)]) for c in CAPTURES}


def _expected_chain(kind: str, capture: str) -> str:
    if kind == "ipip" and "ipv6" in capture:
        return "6in4"
    return encap.CHAIN[kind]


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("kind", encap.KINDS)
def test_wrapped_capture_gives_the_same_flows(kind, capture, plain, tmp_path):
    wrapped = tmp_path / f"{kind}.pcap"
    n = encap.wrap_capture(DATA / capture, wrapped, kind)
    ds = hsrtcp.analyze([str(wrapped)])
    base = plain[capture]
    assert ds.flows.height == base.flows.height > 0
    assert inner(ds.flows).equals(inner(base.flows)), kind
    # Every TCP segment came out of the tunnel; nothing is malformed.
    cap, cap0 = ds.captures.row(0, named=True), base.captures.row(0, named=True)
    assert cap["tunneled_packets"] == cap["tcp_packets"] == cap0["tcp_packets"]
    assert cap["malformed_packets"] == cap0["malformed_packets"] == 0
    assert cap0["tunneled_packets"] == 0 and base.flows["tunnel"].null_count() == base.flows.height
    assert n == cap["packets"]
    # The tunnel columns: chain, outer addresses by side, identifiers by direction.
    f = ds.flows
    assert set(f["tunnel"]) == {_expected_chain(kind, capture)}
    assert set(f["tunnel_changes"]) == {0}
    up, down = encap.IDS.get(kind, (None, None))
    if kind in ("mpls", "pppoe"):
        assert f["tunnel_client_addr"].null_count() == f.height
    else:
        six = kind == "geneve"
        assert set(f["tunnel_client_addr"]) == {encap.ENB6 if six else encap.ENB}
        assert set(f["tunnel_server_addr"]) == {encap.SGW6 if six else encap.SGW}
    if kind == "mpls":
        assert set(f["mpls_labels_c2s"]) == {"16/1000"} and set(f["mpls_labels_s2c"]) == {"17/2000"}
    elif kind == "ipip":
        assert f["tunnel_id_c2s"].null_count() == f.height
    else:
        # (a flow whose client sent nothing captured has no c2s id)
        assert set(f["tunnel_id_c2s"].drop_nulls()) == {up} and set(f["tunnel_id_s2c"].drop_nulls()) == {down}


def _conversations(conv: dict) -> list[tuple]:
    """tshark's conversations as sorted (endpoint pair, frames)."""
    out = []
    for key, recs in conv.items():
        a, b = sorted([(key[0], key[1]), (key[2], key[3])])
        out += [(a, b, r["frames"]) for r in recs]
    return sorted(out)


def _hsrtcp_conversations(flows: pl.DataFrame) -> list[tuple]:
    out = []
    for r in flows.iter_rows(named=True):
        a, b = sorted([(r["client_addr"], r["client_port"]), (r["server_addr"], r["server_port"])])
        out.append((a, b, r["c2s_packets"] + r["s2c_packets"]))
    return sorted(out)


@pytest.mark.skipif(not peers.have("tshark"), reason="tshark not installed")
@pytest.mark.parametrize("kind", encap.KINDS)
def test_tshark_finds_the_same_inner_conversations(kind, plain, tmp_path):
    capture = "multi_concurrent.server.pcap"
    wrapped = tmp_path / f"{kind}.pcap"
    encap.wrap_capture(DATA / capture, wrapped, kind)
    in_tunnel = _conversations(peers.tshark_conv(wrapped))
    assert in_tunnel == _conversations(peers.tshark_conv(DATA / capture))
    assert in_tunnel == _hsrtcp_conversations(hsrtcp.analyze([str(wrapped)]).flows)
    assert len(in_tunnel) == 3


def _gtpu_records(capture: Path, teid_after: dict[int, int] | None = None, corrupt: dict[int, int] | None = None):
    """The capture wrapped in GTP-U; ``teid_after``: from record n on, the uplink and
    downlink TEIDs grow by the value (a handover); ``corrupt``: record n's GTP flags byte."""
    for n, (ts, frame, orig) in enumerate(encap.wrapped_records(capture, "gtpu")):
        f = bytearray(frame)
        g = 14 + 20 + 8
        for start, plus in (teid_after or {}).items():
            if n >= start:
                struct.pack_into("!I", f, g + 4, struct.unpack_from("!I", f, g + 4)[0] + plus)
        if corrupt and n in corrupt:
            f[g] = corrupt[n]
        yield ts, bytes(f), orig


def test_a_handover_changes_the_teids_and_is_counted(tmp_path):
    # One download (clean_200k, server side): from record 50 on both TEIDs change, as an
    # X2 handover moves the bearer; the flow is the same one, with two changes.
    src = DATA / "clean_200k.server.pcap"
    out = tmp_path / "handover.pcap"
    with open(out, "wb") as f:
        encap.write_records(f, _gtpu_records(src, teid_after={50: 0x100}), nanosecond=False)
    f = hsrtcp.analyze([str(out)]).flows
    assert f.height == 1
    r = f.row(0, named=True)
    assert (r["tunnel"], r["tunnel_changes"]) == ("gtpu", 2)
    # The first packets' TEIDs are the ones reported.
    assert (r["tunnel_id_c2s"], r["tunnel_id_s2c"]) == encap.IDS["gtpu"]
    assert inner(f).equals(inner(hsrtcp.analyze([str(src)]).flows))


def test_malformed_gtp_headers_are_counted_per_reason_and_the_rest_analyzed(tmp_path):
    src = DATA / "clean_200k.server.pcap"
    total = sum(1 for _ in read_records(src))
    out = tmp_path / "bad.pcap"
    # Records 10-12: GTP version 2 on the user-plane port; record 20: protocol type GTP'.
    bad = {10: 0x50, 11: 0x50, 12: 0x50, 20: 0x20}
    with open(out, "wb") as f:
        encap.write_records(f, _gtpu_records(src, corrupt=bad), nanosecond=False)
    ds = hsrtcp.analyze([str(out)])
    cap = ds.captures.row(0, named=True)
    assert cap["malformed_reasons"] == "gtpu_bad_header=4"
    assert (cap["malformed_packets"], cap["tcp_packets"]) == (4, total - 4)
    assert ds.flows.height == 1 and ds.flows["tunnel"][0] == "gtpu"


def test_cut_gtp_headers_are_gtpu_truncated(tmp_path):
    # A capture whose snaplen ends inside the GTP-U header of every packet.
    src = DATA / "clean_200k.server.pcap"
    out = tmp_path / "cut.pcap"
    recs = [(ts, frame[:14 + 20 + 8 + 5], orig) for ts, frame, orig in encap.wrapped_records(src, "gtpu")]
    with open(out, "wb") as f:
        encap.write_records(f, iter(recs), nanosecond=False)
    cap = hsrtcp.analyze([str(out)]).captures.row(0, named=True)
    assert cap["malformed_reasons"] == f"gtpu_truncated={len(recs)}"
    assert cap["tcp_packets"] == 0


@pytest.mark.parametrize("table", ["flows", "captures"])
def test_docs_name_the_schema_version_written(table):
    # The version in the title of the table's docs page is the one written into its files.
    from hsrtcp.results import VERSIONS
    title = (DATA.parent.parent / "docs" / "formats" / f"{table}.md").read_text().splitlines()[0]
    assert title == f"# `{table}` table (version {VERSIONS[table]})"
    assert VERSIONS[table] == 3


def test_two_vantages_in_different_tunnels_match_as_plain(tmp_path):
    # The phone's capture inside VXLAN, the server's inside GTP-U: the two-vantage analysis
    # matches the inner connections as it does the plain pair (every column but the file names).
    cli, srv = tmp_path / "cli.pcap", tmp_path / "srv.pcap"
    encap.wrap_capture(DATA / "drops_cubic.client.pcap", cli, "vxlan")
    encap.wrap_capture(DATA / "drops_cubic.server.pcap", srv, "gtpu")
    plain = hsrtcp.analyze(client=str(DATA / "drops_cubic.client.pcap"), server=str(DATA / "drops_cubic.server.pcap"))
    wrapped = hsrtcp.analyze(client=str(cli), server=str(srv))
    names = ["capture", "client_capture", "server_capture", *TUNNEL_COLUMNS]
    a, b = plain.flows.sort("flow_id"), wrapped.flows.sort("flow_id")
    assert a.height == b.height == 3 and set(a["vantage"]) == {"client", "server", "matched"}
    assert a.drop([c for c in names if c in a.columns]).equals(b.drop([c for c in names if c in b.columns]))
    assert dict(zip(b["vantage"], b["tunnel"])) == {"client": "vxlan", "server": "gtpu", "matched": "gtpu"}
