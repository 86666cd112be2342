"""Witness: flow, packet and byte counts agree with tshark and tcptrace on the same captures.

tshark's ``conv,tcp`` gives frames per direction (its byte columns are rounded, so bytes are
summed from its per-packet ``tcp.len``); tcptrace gives packets and data bytes (all payload,
retransmissions included) per direction. Both split a reused 4-tuple at the new SYN, as we do
with connection epochs.
"""

from __future__ import annotations

import pytest

import hsrtcp
from hsrtcp.testing import peers

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"

# Real-kernel fixtures (tests/data/README.md); SLL2 is not readable by tcptrace.
CAPTURES = [
    "clean_200k.server.pcap", "clean_200k.client.pcap", "drops_cubic.server.pcap",
    "drops_cubic.client.pcap", "reno_nosack_nots.server.pcap", "zero_window.client.pcap",
    "multi_concurrent.server.pcap", "multi_sequential.client.pcap", "reuse_4tuple.server.pcap",
    "ipv6_drops.server.pcap", "bbr_drops.server.pcap", "any_sll2.client.pcap", "sll1.client.pcap",
    "nano.server.pcap", "data_blackout.server.pcap",
]


def _ours(name):
    ds = hsrtcp.analyze(DATA / name)
    assert ds.errors == []
    return ds.flows.sort("first_ts").to_dicts()


def _ours_and_peers(name, tool: str, read):
    """Our flows of capture ``name`` and ``tool``'s connections (``read``: 4-tuple -> records),
    as many of each; skipped when the tool is not installed."""
    if not peers.have(tool):
        pytest.skip(f"{tool} not installed")
    flows = _ours(name)
    theirs = read(DATA / name)
    assert len(flows) == sum(len(v) for v in theirs.values())
    return flows, theirs


@pytest.mark.parametrize("name", CAPTURES)
def test_tshark_frames_and_bytes_per_direction(name):
    flows, conv = _ours_and_peers(name, "tshark", peers.tshark_conv)
    counts = peers.tshark_flag_counts(peers.tshark_packets(DATA / name))
    for f in flows:
        c2s = (f["client_addr"], f["client_port"], f["server_addr"], f["server_port"])
        s2c = (f["server_addr"], f["server_port"], f["client_addr"], f["client_port"])
        recs = peers.lookup(conv, *c2s)
        assert recs, f"tshark has no conversation {c2s}"
        if len(recs) == 1:  # one connection on this 4-tuple: compare directly
            r = recs[0]
            ours = {r_: v for r_, v in [("c2s", f["c2s_packets"]), ("s2c", f["s2c_packets"])]}
            assert sorted(ours.values()) == sorted([r["frames_a_to_b"], r["frames_b_to_a"]])
            assert f["c2s_packets"] + f["s2c_packets"] == r["frames"]
            assert f["c2s_payload_bytes"] == counts[c2s]["payload_bytes"]
            assert f["s2c_payload_bytes"] == counts[s2c]["payload_bytes"]
        else:  # reused 4-tuple: the per-epoch totals must add up
            same = [g for g in flows if (g["client_port"], g["server_port"]) == (f["client_port"], f["server_port"])]
            assert len(same) == len(recs)
            assert sum(g["c2s_packets"] + g["s2c_packets"] for g in same) == sum(r["frames"] for r in recs)


@pytest.mark.parametrize("name", [c for c in CAPTURES if "sll2" not in c])
def test_tcptrace_packets_and_data_bytes(name):
    flows, tt = _ours_and_peers(name, "tcptrace", peers.tcptrace)
    by_epoch: dict[tuple, list] = {}
    for f in flows:
        by_epoch.setdefault((f["client_port"], f["server_port"]), []).append(f)
    for f in flows:
        recs = peers.lookup(tt, f["client_addr"], f["client_port"], f["server_addr"], f["server_port"])
        assert recs
        rec = recs[by_epoch[(f["client_port"], f["server_port"])].index(f)]
        a2b, b2a = rec["a2b"], rec["b2a"]
        # tcptrace's host a is the side of the first packet: the client when the SYN is captured
        if f["roles_from_syn"]:
            c, s = a2b, b2a
        else:
            c, s = (a2b, b2a) if a2b["total_packets"] == f["c2s_packets"] else (b2a, a2b)
        assert f["c2s_packets"] == c["total_packets"]
        assert f["s2c_packets"] == s["total_packets"]
        assert f["s2c_payload_bytes"] == s["actual_data_bytes"]
        assert f["c2s_payload_bytes"] == c["actual_data_bytes"]
        assert f["mss_client"] == (c["mss_requested"] or None)


def test_sll2_is_read_where_tcptrace_cannot():
    """tcptrace rejects LINUX_SLL2 (link type 276); we read it and agree with tshark."""
    flows = _ours("any_sll2.client.pcap")
    assert len(flows) == 1 and flows[0]["s2c_payload_bytes"] >= 200000
    if peers.have("tcptrace"):
        try:
            got = peers.tcptrace(DATA / "any_sll2.client.pcap")
        except RuntimeError:
            got = {}
        assert sum(len(v) for v in got.values()) == 0
