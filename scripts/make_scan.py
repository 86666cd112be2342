#!/usr/bin/env python3
"""Write a port-scan capture: many TCP connections that never carry data.

    python3 scripts/make_scan.py OUT.pcap --conns 200000 [--rst] [--rate 20000]

Hostile-input fixture for the flow table's memory bound (issue 16 item 2, docs/engine.md
"Memory"). Synthetic, not captured: classic little-endian pcap (Ethernet, IPv4, TCP), one
scanner 10.9.0.1 sending a SYN (MSS, SACK-permitted, timestamps, window scale: what Linux
sends) from a new source port and source address per connection to 10.9.<x>.<y>:443, at
``rate`` connections per second of capture time starting at 2026-01-01T00:00:00Z.
``--rst``: every SYN is answered by a RST-ACK from the target (a closed port), so each
connection is opened and reset. Standard library only, so tests and the fuzz seed script
can call :func:`write_scan` without the venv.
"""

from __future__ import annotations

import argparse
import struct

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z

_PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
# MSS 1460, SACK-permitted, timestamps (TSval patched per SYN), NOP, window scale 7: 20 bytes
_SYN_OPTIONS = bytes([2, 4, 0x05, 0xB4, 4, 2, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 3, 7])


def _checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _packet(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int,
            options: bytes) -> bytes:
    tcp_len = 20 + len(options)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (tcp_len // 4) << 4, flags, 64240, 0, 0) + options
    pseudo = src + dst + struct.pack("!BBH", 0, 6, tcp_len)
    tcp = tcp[:16] + struct.pack("!H", _checksum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + tcp_len, 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    eth = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00"
    return eth + ip + tcp


def _record(t_us: int, frame: bytes) -> bytes:
    return struct.pack("<IIII", T0 + t_us // 1_000_000, t_us % 1_000_000, len(frame), len(frame)) + frame


def write_scan(path: str, conns: int, rst: bool = False, rate: float = 20000.0) -> None:
    """Write the scan capture to ``path`` (see the module docstring)."""
    scanner = bytes([10, 9, 0, 1])
    with open(path, "wb") as f:
        f.write(_PCAP_HEADER)
        for i in range(conns):
            t_us = int(i * 1e6 / rate)
            # A new (address, port) per connection: no 4-tuple repeats within a million.
            target = bytes([10, 9, 1 + (i >> 16) % 250, (i >> 8) & 0xFF])
            sport = 1024 + (i & 0xFF) + 256 * ((i >> 24) & 0xFF)
            isn = (i * 2654435761) & 0xFFFFFFFF
            opts = bytearray(_SYN_OPTIONS)
            struct.pack_into("!I", opts, 8, i & 0xFFFFFFFF)
            f.write(_record(t_us, _packet(scanner, target, sport, 443, isn, 0, 0x02, bytes(opts))))
            if rst:
                f.write(_record(t_us + 150, _packet(target, scanner, 443, sport, 0, (isn + 1) & 0xFFFFFFFF, 0x14, b"")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--conns", type=int, default=200_000)
    ap.add_argument("--rst", action="store_true", help="answer every SYN with a RST-ACK")
    ap.add_argument("--rate", type=float, default=20000.0, help="connections per second of capture time")
    a = ap.parse_args()
    write_scan(a.out, a.conns, a.rst, a.rate)


if __name__ == "__main__":
    main()
