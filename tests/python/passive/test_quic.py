"""Issue 36 item 3, QUIC: the server name of QUIC connections from their Initial packets.

Witness: tests/data/quic.pcap (real QUIC v1 and v2 connections made by aioquic on loopback and
recorded by tcpdump; scripts/make_quic_fixture.py) read by tshark, which decrypts the same
Initial packets: the conversations, their server names and their UDP payload bytes must be
equal. Damaged and foreign datagrams must not make a conversation.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.passive import apps as a
from hsrtcp.passive import quic
from hsrtcp.testing import encap, peers
from hsrtcp.testing.pcapio import read_records

from .common import cli, results_of

pytest.importorskip("hsrtcp._native")

QUIC_PCAP = Path(__file__).resolve().parents[2] / "data" / "quic.pcap"


def _tshark_conversations(path: Path) -> dict[tuple[int, int], tuple[str, int]]:
    """(client port, server port) -> (server name, UDP payload bytes) as tshark reads them."""
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-E", "separator=;", "-e", "udp.srcport",
                          "-e", "udp.dstport", "-e", "udp.length", "-e", "tls.handshake.extensions_server_name"],
                         capture_output=True, text=True, check=True).stdout
    names, nbytes = {}, defaultdict(int)
    for line in out.splitlines():
        sport, dport, ln, sni = line.split(";")
        key = (int(sport), int(dport)) if int(dport) < int(sport) else (int(dport), int(sport))
        key = (max(key), min(key))  # the servers are on the low ports 4433-4435
        nbytes[key] += int(ln) - 8
        if sni:
            names[key] = sni
    return {k: (names.get(k), v) for k, v in nbytes.items()}


def _ours(path: Path) -> dict[tuple[int, int], tuple[str, int]]:
    _, _, convs = a.scan_capture(path, pl.DataFrame(schema={"flow_id": pl.UInt64, "first_ts": pl.Float64,
                                                            "last_ts": pl.Float64, "client_addr": pl.String,
                                                            "client_port": pl.UInt16, "server_addr": pl.String,
                                                            "server_port": pl.UInt16}))
    return {(c.client[1], c.server[1]): (c.name, c.bytes) for c in convs}


@pytest.mark.skipif(not peers.have("tshark"), reason="tshark needed")
def test_names_and_bytes_equal_tsharks():
    theirs = _tshark_conversations(QUIC_PCAP)
    ours = _ours(QUIC_PCAP)
    assert len(ours) == 3
    assert ours == theirs
    assert {n for n, _ in ours.values()} == {"www.youtube.com", "api.spotify.com", "edge-042.cdninstagram.com"}


def test_versions_and_a_clienthello_over_two_initials():
    by_port = {}
    for rec in read_records(QUIC_PCAP):
        d = bytes(rec.data)[14 + 20:]  # Ethernet (lo), IPv4 without options
        dport = int.from_bytes(d[2:4], "big")
        first = quic.first_client_initial(d[8:])
        # a server's Initial looks the same from its header; only the client's decrypts with
        # the client keys (test_damaged_and_foreign_... and the tshark test cover that)
        if first and dport in (4433, 4434, 4435) and dport not in by_port:
            by_port[dport] = first[0]
    assert by_port == {4433: 0x00000001, 4434: 0x6B3343CF, 4435: 0x00000001}
    # the padded ClientHello of :4435 needs its second Initial: one datagram alone gives no name
    datagrams = [bytes(r.data)[14 + 28:] for r in read_records(QUIC_PCAP)
                 if int.from_bytes(bytes(r.data)[14 + 22:14 + 24], "big") == 4435]
    v, dcid = quic.first_client_initial(datagrams[0])
    c = quic.Conversation(("127.0.0.1", 1), ("127.0.0.1", 4435), v, quic.client_initial_keys(v, dcid), 0, 0)
    c.add_client_initials(datagrams[0])
    assert c.name is None and c.crypto
    c.add_client_initials(datagrams[1])
    assert c.name == "edge-042.cdninstagram.com"


def test_rfc9001_appendix_a_keys():
    """The client Initial keys of RFC 9001 Appendix A.1 (DCID 0x8394c8f03e515708)."""
    k = quic.client_initial_keys(1, bytes.fromhex("8394c8f03e515708"))
    assert k.key.hex() == "1f369613dd76d5467730efcbe3b1a22d"
    assert k.iv.hex() == "fa044b2f42a3fd3b46fb255c"
    assert k.hp.hex() == "9f50449e04a0e810283a1e9933adedd2"


def test_damaged_and_foreign_datagrams_make_no_conversation():
    first = next(bytes(r.data)[14 + 28:] for r in read_records(QUIC_PCAP))
    assert quic.first_client_initial(first) is not None
    convs: dict = {}
    flipped = bytearray(first)
    flipped[300] ^= 0x01  # inside the AEAD-protected payload: it no longer authenticates
    a._quic_datagram(convs, 0.0, "10.0.0.1", 5000, "10.0.0.2", 443, bytes(flipped))
    assert convs == {}
    for junk in (first[:600], b"\xc0\x00\x00\x00\x01" + bytes(1300), bytes(1300), b"\xff" * 1300, b""):
        a._quic_datagram(convs, 0.0, "10.0.0.1", 5000, "10.0.0.2", 443, junk)
    assert convs == {}
    a._quic_datagram(convs, 0.0, "10.0.0.1", 5000, "10.0.0.2", 443, first)
    assert [c.name for c in convs.values()] == ["www.youtube.com"]


@pytest.mark.parametrize("kind", ["gtpu", "vxlan"])
def test_the_same_inside_a_tunnel(tmp_path, kind):
    w = tmp_path / f"quic.{kind}.pcap"
    encap.wrap_capture(QUIC_PCAP, w, kind, client="127.0.0.1")
    assert _ours(w) == _ours(QUIC_PCAP)


def test_cli_counts_quic_in_the_breakdown(tmp_path):
    res = results_of(QUIC_PCAP, tmp_path / "r")
    p = cli("apps", res, QUIC_PCAP, "-o", tmp_path / "o")
    assert p.returncode == 0, p.stderr
    assert "3 named quic_sni 3" in p.stdout
    apps = pl.read_parquet(tmp_path / "o" / "applications.parquet")
    assert apps["transport"].to_list() == ["quic"] * 3 and apps["flow_id"].null_count() == 3
    bd = pl.read_parquet(tmp_path / "o" / "application_breakdown.parquet")
    assert bd.filter(pl.col("class") == "video").row(0, named=True)["quic_flows"] == 1
    assert bd["bytes"].sum() == sum(b for _, b in _ours(QUIC_PCAP).values())
