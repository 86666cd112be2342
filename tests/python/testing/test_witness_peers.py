"""The peer-tool parsers: their numbers agree with the independent reader where the
definitions are the same (frames and payload bytes per direction are counting, not judgement)."""

from __future__ import annotations

from collections import Counter

import pytest
from witness_helpers import DATA, fixture_names, load_meta

from hsrtcp.testing import pcapio, peers

needs_tshark = pytest.mark.skipif(not peers.have("tshark"), reason="tshark not installed")
needs_tcptrace = pytest.mark.skipif(not peers.have("tcptrace"), reason="tcptrace not installed")


def _per_direction(path):
    frames, payload = Counter(), Counter()
    for p in pcapio.read_tcp(path):
        k = (p.src, p.sport, p.dst, p.dport)
        frames[k] += 1
        payload[k] += p.payload_len
    return frames, payload


@needs_tshark
@pytest.mark.parametrize("name", ["drops_cubic", "multi_concurrent", "ipv6_drops", "any_sll2"])
def test_tshark_conv_frames_per_direction(name):
    for side in ("server", "client"):
        path = DATA / f"{name}.{side}.pcap"
        frames, _ = _per_direction(path)
        conv = peers.tshark_conv(path)
        assert sum(len(v) for v in conv.values()) == len(load_meta(name)["connections"])
        for (a, ap, b, bp), recs in conv.items():
            (r,) = recs
            assert r["frames_a_to_b"] == frames[(a, ap, b, bp)]
            assert r["frames_b_to_a"] == frames[(b, bp, a, ap)]
            assert r["frames"] == r["frames_a_to_b"] + r["frames_b_to_a"]


@needs_tshark
def test_tshark_conv_splits_a_reused_four_tuple():
    conv = peers.tshark_conv(DATA / "reuse_4tuple.server.pcap")
    ((key, recs),) = conv.items()
    assert key[1] == 40000 and len(recs) == 2


@needs_tshark
@pytest.mark.parametrize("name", ["drops_cubic", "ipv6_drops", "sll1"])
def test_tshark_packets_payload_per_direction(name):
    path = DATA / f"{name}.client.pcap"
    frames, payload = _per_direction(path)
    counts = peers.tshark_flag_counts(peers.tshark_packets(path))
    assert {k: v["packets"] for k, v in counts.items()} == dict(frames)
    assert {k: v["payload_bytes"] for k, v in counts.items()} == {k: v for k, v in payload.items()}


def test_parse_tshark_conv_units():
    text = ("10.0.1.2:1 <-> 10.0.2.2:2   10 1500 bytes   3 2 kB   13 3 MB   0.5 1.25\n"
            "fd00:1::2:3 <-> fd00:2::2:4   1 60 bytes   1 60 bytes   2 120 bytes   0.0 0.1\n")
    conv = peers.parse_tshark_conv(text)
    (r,) = conv[("10.0.1.2", 1, "10.0.2.2", 2)]
    assert (r["frames_b_to_a"], r["bytes_b_to_a"], r["bytes_a_to_b"], r["bytes"]) == (10, 1500, 2000, 3_000_000)
    assert r["bytes_exact"] is False and r["duration_s"] == 1.25
    (r6,) = conv[("fd00:1::2", 3, "fd00:2::2", 4)]
    assert r6["bytes_exact"] is True and r6["bytes"] == 120


@needs_tcptrace
@pytest.mark.parametrize("name", [n for n in fixture_names() if n != "any_sll2"])
def test_tcptrace_packets_and_bytes(name):
    path = DATA / f"{name}.server.pcap"
    frames, payload = _per_direction(path)
    table = peers.tcptrace(path)
    assert sum(len(v) for v in table.values()) == len(load_meta(name)["connections"])
    if name == "reuse_4tuple":
        return  # per-direction sums mix the two epochs; epochs are checked in test_witness_truth
    for (a, ap, b, bp), recs in table.items():
        for r in recs:
            assert r["a2b"]["total_packets"] == frames[(a, ap, b, bp)]
            assert r["b2a"]["total_packets"] == frames[(b, bp, a, ap)]
            assert r["b2a"]["actual_data_bytes"] == payload[(b, bp, a, ap)]
            assert r["total_packets"] == r["a2b"]["total_packets"] + r["b2a"]["total_packets"]
            assert r["complete"] is True
            assert isinstance(r["b2a"]["rtt_avg_s"], float)


@needs_tcptrace
def test_tcptrace_refuses_linux_sll2():
    with pytest.raises(RuntimeError, match="tcptrace"):
        peers.tcptrace(DATA / "any_sll2.client.pcap")


def test_missing_tool_raises_peer_missing(monkeypatch):
    monkeypatch.setattr(peers.shutil, "which", lambda _t: None)
    with pytest.raises(peers.PeerMissing):
        peers.tcptrace(DATA / "clean_200k.server.pcap")
