#!/usr/bin/env python3
"""Write a two-vantage pair of one dense download: many packets in little capture time.

    python3 scripts/make_dense_pair.py CLIENT.pcap SERVER.pcap --segments 3000000 [--rate 0]

Hostile-input fixture for the matcher's packet budget (issue 16, docs/two-vantage.md
"Memory"): the matcher keeps unmatched packets for a window of capture *time*, so what it
holds depends on how many packets a window holds. Synthetic, not captured: classic pcap
(Ethernet, IPv4, TCP without options), one connection 10.8.0.2:40000 -> 10.8.0.1:443,
handshake, then ``segments`` data segments of 1448 bytes from the server (headers only:
caplen 54, the original length on the wire), each acknowledged by the phone at once, every
packet in both captures (no loss), one-way delay 1 ms. ``rate``: packets per second of
capture time per direction; 0 puts every record of a capture at one timestamp (a broken
clock), the phone's capture first. Standard library only (as scripts/make_scan.py).
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_scan import _PCAP_HEADER, T0, _packet  # noqa: E402

PHONE, SERVER = bytes([10, 8, 0, 2]), bytes([10, 8, 0, 1])
MSS = 1448
OWD_US = 1000


def _record(t_us: int, frame: bytes, wire_payload: int = 0) -> bytes:
    return struct.pack("<IIII", T0 + t_us // 1_000_000, t_us % 1_000_000, len(frame), len(frame) + wire_payload) + frame


def _data(seq: int, ack: int) -> bytes:
    """A data segment's headers, its IP total length counting the payload not captured."""
    frame = bytearray(_packet(SERVER, PHONE, 443, 40000, seq, ack, 0x18, b""))
    struct.pack_into("!H", frame, 14 + 2, 40 + MSS)
    return bytes(frame)


def write_dense_pair(client: str, server: str, segments: int, rate: float = 0.0) -> None:
    """Write both captures (see the module docstring)."""
    cisn, sisn = 1000, 5000

    def at(i: int, side_delay: int) -> int:
        return 0 if rate == 0 else int(i * 1e6 / rate) + side_delay

    with open(client, "wb") as fc, open(server, "wb") as fs:
        fc.write(_PCAP_HEADER)
        fs.write(_PCAP_HEADER)
        # handshake: the phone's SYN, the server's SYN-ACK, the phone's ACK
        syn = _packet(PHONE, SERVER, 40000, 443, cisn, 0, 0x02, b"")
        synack = _packet(SERVER, PHONE, 443, 40000, sisn, cisn + 1, 0x12, b"")
        hs_ack = _packet(PHONE, SERVER, 40000, 443, cisn + 1, sisn + 1, 0x10, b"")
        fc.write(_record(at(0, 0), syn) + _record(at(1, 2 * OWD_US), synack) + _record(at(2, 2 * OWD_US), hs_ack))
        fs.write(_record(at(0, OWD_US), syn) + _record(at(1, OWD_US), synack) + _record(at(2, 3 * OWD_US), hs_ack))
        # The server sees the ACK of segment i two one-way delays after sending it, by when it
        # has sent `lag` more segments: written in that place, the capture stays in time order.
        lag = round(2 * OWD_US * rate / 1e6)
        owd = OWD_US if rate else 0
        chunk_c, chunk_s = [], []
        acks: deque[bytes] = deque()  # built once, written at the phone now and at the server `lag` later
        for i in range(segments + lag):
            if i < segments:
                seq = (sisn + 1 + i * MSS) & 0xFFFFFFFF
                t = at(3 + i, 0)
                data, ack = _data(seq, cisn + 1), _ack(cisn, seq)
                chunk_s.append(_record(t, data, MSS))  # leaves the server
                chunk_c.append(_record(t + owd, data, MSS))  # reaches the phone
                chunk_c.append(_record(t + owd, ack))  # the phone acknowledges it
                acks.append(ack)
            if i >= lag:
                chunk_s.append(_record(at(3 + i - lag, 0) + 2 * owd, acks.popleft()))  # reaches the server
            if len(chunk_c) >= 8192:
                fc.write(b"".join(chunk_c))
                fs.write(b"".join(chunk_s))
                chunk_c, chunk_s = [], []
        fc.write(b"".join(chunk_c))
        fs.write(b"".join(chunk_s))


def _ack(cisn: int, seq: int) -> bytes:
    return _packet(PHONE, SERVER, 40000, 443, cisn + 1, (seq + MSS) & 0xFFFFFFFF, 0x10, b"")

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("client")
    ap.add_argument("server")
    ap.add_argument("--segments", type=int, default=3_000_000)
    ap.add_argument("--rate", type=float, default=0.0,
                    help="packets per second of capture time per direction; 0: one timestamp per capture")
    a = ap.parse_args()
    write_dense_pair(a.client, a.server, a.segments, a.rate)


if __name__ == "__main__":
    main()
