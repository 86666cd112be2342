"""The independent capture reader (dpkt), checked against tcpdump, tshark and across encodings."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from witness_helpers import DATA

from hsrtcp.errors import InputError
from hsrtcp.testing import pcapio


def _key(p: pcapio.TcpPacket):
    return (p.ts_ns // 1000, p.src, p.dst, p.sport, p.dport, p.seq, p.ack, p.flags, p.window,
            p.payload_len, p.ip_id, p.tsval, p.sack)


#: fixtures that hold more than TCP (tests/data/README.md)
NOT_ONLY_TCP = {"quic.pcap", "apps_loopback.pcap",
                # a lab bundle's captures (no "tcp" filter): IPv6 neighbour and multicast records too
                "cubic_sack_frto.client.pcap.gz", "cubic_sack_frto.server.pcap.gz",
                "stall_paced_resend.server.pcap.gz", "stall_paced_recovery.server.pcap.gz",
                "cubic_backoff_plain.server.pcap.gz", "cubic_backoff_dsack.server.pcap.gz"}


def _tcpdump_count(path, bpf: str | None = None) -> int:
    if path.suffix == ".gz":  # tcpdump cannot read gzip: give it the decompressed bytes
        import gzip

        out = subprocess.run(["tcpdump", "-n", "-q", "-t", "-r", "-", *([bpf] if bpf else [])],
                             input=gzip.decompress(path.read_bytes()),
                             capture_output=True, check=True).stdout.decode()
        return len(out.splitlines())
    out = subprocess.run(["tcpdump", "-n", "-q", "-t", "-r", str(path), *([bpf] if bpf else [])],
                         capture_output=True, text=True, check=True).stdout
    return len(out.splitlines())


CAPTURES = sorted(p for p in DATA.glob("*.pcap*") if not p.name.endswith(".json"))


MIXED = DATA / "two_interfaces.pcapng"  # libpcap refuses mixed link types


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump not installed")
@pytest.mark.parametrize("path", [p for p in CAPTURES if p != MIXED], ids=lambda p: p.name)
def test_record_and_tcp_counts_match_tcpdump(path):
    # the testbed's fixtures were captured with the BPF filter "tcp": all records are TCP packets;
    # the passive ones (QUIC, a DNS answer) hold UDP too: their TCP records as tcpdump counts them
    n_rec = sum(1 for _ in pcapio.read_records(path))
    n_tcp = sum(1 for _ in pcapio.read_tcp(path))
    assert n_rec == _tcpdump_count(path)
    assert n_tcp == (_tcpdump_count(path, "tcp") if path.name in NOT_ONLY_TCP else n_rec)


def test_encodings_hold_identical_packets():
    base = [_key(p) for p in pcapio.read_tcp(DATA / "drops_cubic.server.pcap")]
    assert len(base) > 500
    for name in ("drops_cubic.server.pcapng", "drops_cubic.server.be.pcap",
                 "drops_cubic.server.pcap.gz", "drops_cubic.server.pcapng.gz"):
        assert [_key(p) for p in pcapio.read_tcp(DATA / name)] == base, name


def test_capture_info_formats():
    info = pcapio.capture_info
    assert info(DATA / "drops_cubic.server.be.pcap")["endian"] == "big"
    assert info(DATA / "drops_cubic.server.pcap")["endian"] == "little"
    assert info(DATA / "drops_cubic.server.pcapng")["format"] == "pcapng"
    assert info(DATA / "drops_cubic.server.pcap.gz")["gzip"] is True
    assert info(DATA / "nano.server.pcap")["nanosecond"] is True
    assert info(DATA / "any_sll2.client.pcap")["linktype"] == pcapio.LINKTYPE_LINUX_SLL2
    assert info(DATA / "sll1.client.pcap")["linktype"] == pcapio.LINKTYPE_LINUX_SLL


def test_nanosecond_timestamps_keep_sub_microsecond_digits():
    ts = [r.ts_ns for r in pcapio.read_records(DATA / "nano.server.pcap")]
    assert any(t % 1000 for t in ts)
    # (not asserted sorted: two CPUs timestamp packets, a capture may step back by ~1 µs)


def test_cooked_captures_decode_the_same_segments_as_ethernet():
    # The client side (cooked) and the server side (Ethernet) of one transfer: every data
    # segment the client received was sent by the server, identified by (seq, len, IP ID).
    for name in ("any_sll2", "sll1"):
        sent = {(p.seq, p.payload_len, p.ip_id) for p in pcapio.read_tcp(DATA / f"{name}.server.pcap")
                if p.payload_len}
        got = {(p.seq, p.payload_len, p.ip_id) for p in pcapio.read_tcp(DATA / f"{name}.client.pcap")
               if p.payload_len}
        assert got and got <= sent


def test_time_shift_moves_every_timestamp_exactly(tmp_path):
    for name, unit in (("drops_cubic.server.pcap", 1000), ("nano.server.pcap", 1)):
        src = DATA / name
        dst = tmp_path / name
        n = pcapio.rewrite_pcap(src, dst, time_offset_s=-2.5)
        a = list(pcapio.read_records(src))
        b = list(pcapio.read_records(dst))
        assert n == len(a) == len(b)
        assert all(y.ts_ns - x.ts_ns == -2_500_000_000 for x, y in zip(a, b))
        assert all(x.data == y.data and x.orig_len == y.orig_len for x, y in zip(a, b))


def test_byteswap_round_trip(tmp_path):
    src = DATA / "drops_cubic.server.be.pcap"
    back = tmp_path / "le.pcap"
    pcapio.rewrite_pcap(src, back, big_endian=False)
    assert back.read_bytes() == (DATA / "drops_cubic.server.pcap").read_bytes()


@pytest.mark.parametrize("name, good, where", [
    ("wrong_magic.pcap", 0, "offset 0"),
    ("truncated_global_header.pcap", 0, "offset 4"),
    ("empty.pcap", 0, "offset 0"),
    ("record_cut.pcap", 5, "cut short"),
    ("absurd_caplen.pcap", 3, "caplen 2147483647"),
    ("pcapng_bad_block_length.pcapng", 0, "block length 7"),
])
def test_broken_files_fail_with_file_and_offset(name, good, where):
    path = DATA / "broken" / name
    seen = []
    with pytest.raises(InputError) as err:
        for rec in pcapio.read_records(path):
            seen.append(rec)
    msg = str(err.value)
    assert str(path) in msg and where in msg
    assert len(seen) == good
    assert "offset" in msg


def test_header_only_is_empty_not_an_error():
    assert list(pcapio.read_records(DATA / "broken" / "header_only.pcap")) == []


def test_garbage_records_are_skipped_not_fatal():
    recs = list(pcapio.read_records(DATA / "broken" / "garbage_linklayer.pcap"))
    assert len(recs) == 12
    decoded = [pcapio.decode_tcp(r) is not None for r in recs]
    # records 2-7 (indices 1-6) were damaged on purpose, the others are intact
    assert decoded == [True] + [False] * 6 + [True] * 5


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_mixed_link_types_in_one_pcapng():
    recs = list(pcapio.read_records(MIXED))
    assert {r.linktype for r in recs} == {pcapio.LINKTYPE_LINUX_SLL2, pcapio.LINKTYPE_ETHERNET}
    out = subprocess.run(["tshark", "-n", "-r", str(MIXED), "-T", "fields", "-e", "frame.time_epoch",
                          "-e", "tcp.seq_raw", "-e", "tcp.len"], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    theirs = [tuple(line.split("\t")) for line in out if line]
    ours = [(f"{p.ts_ns // 1000 / 1e6:.6f}", str(p.seq), str(p.payload_len)) for p in pcapio.read_tcp(MIXED)]
    assert len(ours) == len(recs) == len(theirs)
    assert [(s, n) for _t, s, n in ours] == [(s, n) for _t, s, n in theirs]
    assert all(abs(float(a[0]) - float(b[0])) < 2e-6 for a, b in zip(ours, theirs))
    # both vantages of one connection: every packet appears twice, except those the router
    # dropped (seen only at their sender)
    import json
    from collections import Counter

    seen = Counter((p.src, p.seq, p.ack, p.payload_len, p.ip_id) for p in pcapio.read_tcp(MIXED))
    tot = json.loads((DATA / "any_sll2.json").read_text())["truth"]["totals"]
    assert set(seen.values()) <= {1, 2}
    assert sum(1 for n in seen.values() if n == 1) == tot["data_lost"] + tot["acks_lost"]


def test_first_ip_time_and_ip_lengths():
    # IP lengths from the headers (Linux sends no IPv4 options, no IPv6 extension headers here),
    # so a snaplen-cut record still gives the packet's true size
    v4 = list(pcapio.read_tcp(DATA / "drops_cubic.server.pcap"))
    assert pcapio.first_ip_time(DATA / "drops_cubic.server.pcap") == v4[0].ts
    assert all(p.ip_len == 20 + p.doff + p.payload_len for p in v4)
    assert any(p.ip_len > 128 for p in v4)  # longer than the snaplen
    v6 = list(pcapio.read_tcp(DATA / "ipv6_drops.server.pcap"))
    assert all(p.ip_len == 40 + p.doff + p.payload_len and p.ip_id is None for p in v6)
    assert pcapio.first_ip_time(DATA / "broken" / "header_only.pcap") is None
