#!/usr/bin/env python3
"""Write the committed fuzz seed corpus: fuzz/seeds/<target>/ (origin: fuzz/README.md).

    python3 scripts/make_fuzz_seeds.py [--out fuzz/seeds]

Standard library only. Every seed is derived from a fixture in tests/data (cut to a few
packets) or from scripts/make_scan.py, so the corpus is small (< 150 KB in all) and rebuilt
exactly by this script. Each target gets its own input layout:

- ``engine``: a capture file as is.
- ``reader``: one selector byte (0: the bytes as is; fuzz_targets/reader.rs) + a capture.
- ``pair``: a 4-byte little-endian client length (top bit: a 2-KB matcher state budget) +
  the client capture + the server capture.
- ``pair_output``: the ``pair`` seeds (the found ones read back from fuzz/seeds/pair), with
  the word's bits 30 (files analyzed apart) and 29 (the packets table) choosing the path
  through the core's PairOutput (fuzz_targets/common/pair_output.rs).
- ``decode``: one link-type selector byte (1: Ethernet) + 4-byte original length + one frame.

Besides plain cuts (pcap, pcapng, gzip), the hostile seeds of issue 16: a record whose seconds
field is 0xFFFFFFFF (a time jump of 136 years), a first record at time 0, and a scan of a few
hundred SYNs (many connections, none carrying data).
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from make_scan import write_scan  # noqa: E402


def pcap_records(path: str) -> tuple[bytes, list[bytes]]:
    """The 24-byte header and the records (16-byte header + data) of a classic pcap."""
    b = open(path, "rb").read()
    endian = "<" if b[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    recs, off = [], 24
    while off + 16 <= len(b):
        incl = struct.unpack_from(endian + "I", b, off + 8)[0]
        recs.append(b[off:off + 16 + incl])
        off += 16 + incl
    return b[:24], recs


def cut_pcap(name: str, n: int) -> bytes:
    """The first ``n`` records of tests/data/``name``."""
    head, recs = pcap_records(os.path.join(DATA, name))
    return head + b"".join(recs[:n])


def cut_pcapng(name: str, n: int) -> bytes:
    """The first ``n`` blocks of a little-endian pcapng (section and interface blocks included)."""
    b = open(os.path.join(DATA, name), "rb").read()
    off = 0
    for _ in range(n):
        off += struct.unpack_from("<I", b, off + 4)[0]
    return b[:off]


def with_seconds(pcap: bytes, record: int, seconds: int) -> bytes:
    """``pcap`` (little-endian) with the seconds field of record ``record`` set to ``seconds``."""
    b = bytearray(pcap)
    off = 24
    for _ in range(record):
        off += 16 + struct.unpack_from("<I", b, off + 8)[0]
    struct.pack_into("<I", b, off, seconds)
    return bytes(b)


def scan(conns: int, rst: bool) -> bytes:
    tmp = io.BytesIO()
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"hsrtcp-seed-scan-{os.getpid()}.pcap")
    write_scan(path, conns, rst)
    tmp.write(open(path, "rb").read())
    os.remove(path)
    return tmp.getvalue()


def gz(b: bytes) -> bytes:
    return gzip.compress(b, mtime=0)


def pair(client: bytes, server: bytes, tiny_budget: bool = False) -> bytes:
    return struct.pack("<I", len(client) | (tiny_budget << 31)) + client + server


def seeds() -> dict[str, dict[str, bytes]]:
    cli = cut_pcap("clean_200k.client.pcap", 12)  # handshake + a few data segments and ACKs
    srv = cut_pcap("clean_200k.server.pcap", 12)
    drops = cut_pcap("drops_cubic.server.pcap", 20)
    v6 = cut_pcap("ipv6_drops.server.pcap", 10)
    ng = cut_pcapng("drops_cubic.server.pcapng", 12)
    jump_max = with_seconds(srv, 5, 0xFFFFFFFF)
    time_zero = with_seconds(srv, 0, 0)
    engine = {
        "clean_200k.server.pcap": srv,
        "drops_cubic.server.pcap": drops,
        "ipv6_drops.server.pcap": v6,
        "drops_cubic.server.pcapng": ng,
        "drops_cubic.server.pcap.gz": gz(drops),
        "time_jump_ffffffff.pcap": jump_max,
        "time_zero_first.pcap": time_zero,
        "scan_200_syn.pcap": scan(200, False),
    }
    reader = {
        "clean_200k.server.pcap": b"\0" + srv,
        "drops_cubic.server.pcapng": b"\0" + ng,
        "drops_cubic.server.pcap.gz": b"\0" + gz(drops),
    }
    scan_cli = scan(30, False)
    scan_srv = scan(30, True)
    pairs = {
        "clean_200k.pair": pair(cli, srv),
        "server_time_jump.pair": pair(cli, jump_max),
        "client_time_zero.pair": pair(with_seconds(cli, 0, 0), srv),
        "scan_30.pair": pair(scan_cli, scan_srv),
        "client_empty.pair": pair(b"", srv),
        "clean_200k_tiny_budget.pair": pair(cli, srv, tiny_budget=True),
        "scan_30_tiny_budget.pair": pair(scan_cli, scan_srv, tiny_budget=True),
    }
    _, recs = pcap_records(os.path.join(DATA, "clean_200k.server.pcap"))
    decode = {}
    for i in (0, 1, 2, 5, 8):
        frame = recs[i][16:]
        orig = struct.unpack_from("<I", recs[i], 12)[0]
        decode[f"clean_200k.server.{i}.frame"] = b"\x01" + struct.pack("<I", orig) + frame
    decode.update(tunnel_seeds(recs[5]))
    return {"engine": engine, "reader": reader, "pair": pairs, "pair_output": pair_output_seeds(pairs),
            "decode": decode}


#: The ``pair`` seeds the fuzzer found (committed as found, not generated; fuzz/README.md).
FOUND_PAIR = ("rto_before_any_ack.pair", "far_off_time.pair")
APART, PACKETS = 1 << 30, 1 << 29


def pair_output_seeds(pairs: dict[str, bytes]) -> dict[str, bytes]:
    """Every ``pair`` seed through PairOutput's joint path and its apart path with the packets
    table; clean_200k also through each alone. The client length is rewritten as the
    ``pair`` target reads it (low 31 bits modulo the rest + 1), below bit 29."""
    base = dict(pairs)
    for name in FOUND_PAIR:
        with open(os.path.join(ROOT, "fuzz", "seeds", "pair", name), "rb") as f:
            base[name] = f.read()
    out = {}
    for name, b in sorted(base.items()):
        word = struct.unpack_from("<I", b)[0]
        n = (word & 0x7FFFFFFF) % (len(b) - 4 + 1)
        stem = name.removesuffix(".pair")
        modes = {"": 0, ".apart_packets": APART | PACKETS}
        if stem == "clean_200k":
            modes.update({".apart": APART, ".packets": PACKETS})
        for tag, bits in modes.items():
            out[f"{stem}{tag}.pair"] = struct.pack("<I", n | (word & (1 << 31)) | bits) + b[4:]
    return out


def tunnel_seeds(rec: bytes) -> dict[str, bytes]:
    """Record 5 of clean_200k.server.pcap (a data segment) wrapped in each encapsulation the
    decoder opens (issue 36; headers as in hsrtcp.testing.encap), behind the Ethernet selector."""
    orig = struct.unpack_from("<I", rec, 12)[0]
    ip = rec[16 + 14:]
    wire = orig - 14
    eth = bytes.fromhex("020000000002020000000001")

    def ipv4(proto: int, n: int) -> bytes:
        return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + n, 1, 0x4000, 64, proto, 0,
                           bytes([192, 0, 2, 1]), bytes([192, 0, 2, 254]))

    def udp(dport: int, n: int) -> bytes:
        return struct.pack("!HHHH", 2152 if dport == 2152 else 50000, dport, 8 + n, 0)

    gtp = struct.pack("!BBHI", 0x34, 0xFF, 8 + wire, 7) + struct.pack("!HBB", 1, 0, 0x85) + bytes([1, 0x10, 9, 0])
    vx = struct.pack("!II", 0x08000000, 5001 << 8) + eth + b"\x08\x00"
    gen = struct.pack("!BBHI", 1, 0, 0x6558, 6001 << 8) + struct.pack("!HBB", 0x0102, 0x80, 0) + eth + b"\x08\x00"
    ers = struct.pack("!HHI", 0x1000, 0x88BE, 9) + struct.pack("!HHI", 0x1000, 0x155, 0) + eth + b"\x08\x00"
    heads = {
        "gtpu": eth + b"\x08\x00" + ipv4(17, 8 + len(gtp) + wire) + udp(2152, len(gtp) + wire) + gtp,
        "vxlan": eth + b"\x08\x00" + ipv4(17, 8 + len(vx) + wire) + udp(4789, len(vx) + wire) + vx,
        "geneve": eth + b"\x08\x00" + ipv4(17, 8 + len(gen) + wire) + udp(6081, len(gen) + wire) + gen,
        "erspan2": eth + b"\x08\x00" + ipv4(47, len(ers) + wire) + ers,
        "mpls_pw": eth + b"\x88\x47" + struct.pack("!II", 16 << 12 | 0x40, 17 << 12 | 0x140) + bytes(4) + eth + b"\x08\x00",
    }
    return {f"clean_200k.server.5.{k}.frame": b"\x01" + struct.pack("<I", len(h) + wire) + h + ip
            for k, h in heads.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "fuzz", "seeds"))
    a = ap.parse_args()
    total = 0
    for target, files in seeds().items():
        d = os.path.join(a.out, target)
        os.makedirs(d, exist_ok=True)
        for name, b in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(b)
            total += len(b)
    print(f"{total} bytes of seeds in {a.out}")


if __name__ == "__main__":
    main()
