"""A small pure-Python reader for the lab's own captures (classic pcap, as tcpdump writes).

It exists so the lab can find a run's first-packet time and its tests can check what the
emulated path did without depending on the Rust analyzer. It is not a general decoder:
classic pcap (either byte order, µs or ns timestamps), link types Ethernet (1), Linux cooked
v1 (113) and v2 (276), raw IPv4 (101, 228); IPv4 with TCP or UDP. Anything else is
yielded with ``proto = None``. A truncated last record ends iteration and sets
:attr:`Reader.truncated` (the file was still being written or was cut).

MPTCP: TCP option kind 30 is decoded far enough to name its subtype (0 MP_CAPABLE,
1 MP_JOIN, 2 DSS, 3 ADD_ADDR, ...), RFC 8684 §3.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from hsrtcp.errors import InputError

_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10


@dataclass(frozen=True)
class Packet:
    """One captured frame. ``wire_len`` is the original length (before snaplen)."""

    ts: float
    wire_len: int
    src: str | None = None
    dst: str | None = None
    proto: int | None = None  # 6 TCP, 17 UDP, other IP protocol, None = not IPv4
    ip_len: int | None = None  # IPv4 total length
    ip_id: int | None = None
    sport: int | None = None
    dport: int | None = None
    seq: int | None = None
    ack: int | None = None
    flags: int | None = None
    payload_len: int | None = None  # TCP/UDP payload bytes, from the IP length (not snaplen)
    mptcp_subtypes: tuple[int, ...] = ()

    @property
    def four_tuple(self) -> tuple[str | None, int | None, str | None, int | None]:
        return (self.src, self.sport, self.dst, self.dport)


class Reader:
    """Iterate :class:`Packet` objects of a pcap file: ``for p in Reader(path): ...``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.truncated = False
        with open(self.path, "rb") as fh:
            head = fh.read(24)
        if len(head) < 24:
            raise InputError(f"{self.path}: not a pcap file (only {len(head)} bytes, need a 24-byte header)")
        if head[:4] not in _MAGIC:
            raise InputError(f"{self.path}: byte 0: unknown pcap magic {head[:4].hex()} (pcapng is not supported here)")
        self._endian, self._tsres = _MAGIC[head[:4]]
        self.linktype = struct.unpack(self._endian + "I", head[20:24])[0] & 0x0FFFFFFF

    def __iter__(self) -> Iterator[Packet]:
        rec = struct.Struct(self._endian + "IIII")
        with open(self.path, "rb") as fh:
            fh.seek(24)
            while True:
                hdr = fh.read(16)
                if not hdr:
                    return
                if len(hdr) < 16:
                    self.truncated = True
                    return
                sec, frac, caplen, wirelen = rec.unpack(hdr)
                if caplen > 262144:
                    raise InputError(f"{self.path}: byte {fh.tell() - 16}: record length {caplen} is implausible")
                data = fh.read(caplen)
                if len(data) < caplen:
                    self.truncated = True
                    return
                yield _decode(sec + frac * self._tsres, wirelen, data, self.linktype)


def read(path: str | Path) -> list[Packet]:
    """All packets of a capture, as a list."""
    return list(Reader(path))


def first_ipv4_time(path: str | Path) -> float | None:
    """Timestamp of the first IPv4 unicast packet, or None (the lab's trace clock t0)."""
    for p in Reader(path):
        if p.proto is not None and p.dst is not None and not p.dst.startswith(("224.", "255.")):
            return p.ts
    return None


def _ip(b: bytes) -> str:
    return "%d.%d.%d.%d" % (b[0], b[1], b[2], b[3])


def _decode(ts: float, wirelen: int, data: bytes, linktype: int) -> Packet:
    off: int | None
    if linktype == 1:  # Ethernet, skipping 802.1Q tags
        off, ethertype = 14, int.from_bytes(data[12:14], "big") if len(data) >= 14 else 0
        while ethertype in (0x8100, 0x88A8) and len(data) >= off + 4:
            ethertype = int.from_bytes(data[off + 2 : off + 4], "big")
            off += 4
        off = off if ethertype == 0x0800 else None
    elif linktype == 113:  # Linux cooked v1
        off = 16 if data[14:16] == b"\x08\x00" else None
    elif linktype == 276:  # Linux cooked v2
        off = 20 if data[0:2] == b"\x08\x00" else None
    elif linktype in (101, 228, 12):
        off = 0 if data[:1] and data[0] >> 4 == 4 else None
    else:
        off = None
    if off is None or len(data) < off + 20:
        return Packet(ts, wirelen)
    ihl = (data[off] & 0x0F) * 4
    ip_len = int.from_bytes(data[off + 2 : off + 4], "big")
    ip_id = int.from_bytes(data[off + 4 : off + 6], "big")
    proto = data[off + 9]
    src, dst = _ip(data[off + 12 : off + 16]), _ip(data[off + 16 : off + 20])
    frag = int.from_bytes(data[off + 6 : off + 8], "big") & 0x1FFF
    l4 = off + ihl
    if frag or proto not in (6, 17) or len(data) < l4 + 8:
        return Packet(ts, wirelen, src, dst, proto, ip_len, ip_id)
    sport, dport = struct.unpack_from("!HH", data, l4)
    if proto == 17:
        return Packet(ts, wirelen, src, dst, proto, ip_len, ip_id, sport, dport,
                      payload_len=max(0, ip_len - ihl - 8))
    if len(data) < l4 + 20:
        return Packet(ts, wirelen, src, dst, proto, ip_len, ip_id, sport, dport)
    seq, ack = struct.unpack_from("!II", data, l4 + 4)
    doff = (data[l4 + 12] >> 4) * 4
    flags = data[l4 + 13]
    subtypes = []
    opt, end = l4 + 20, min(l4 + doff, len(data))
    while opt < end:
        kind = data[opt]
        if kind == 0:
            break
        if kind == 1:
            opt += 1
            continue
        if opt + 1 >= end:
            break
        olen = data[opt + 1]
        if olen < 2:
            break
        if kind == 30 and opt + 2 < end:
            subtypes.append(data[opt + 2] >> 4)
        opt += olen
    return Packet(ts, wirelen, src, dst, proto, ip_len, ip_id, sport, dport, seq, ack, flags,
                  payload_len=max(0, ip_len - ihl - doff), mptcp_subtypes=tuple(subtypes))
