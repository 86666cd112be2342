"""Wrap a capture's IP packets in a tunnel, as an operator's or a cloud's tap records them.

The witnesses of the tunnel decoder (docs/engine.md, "Encapsulations") analyze a capture and
the same capture wrapped in each encapsulation, and expect the same flows on the inner
columns; tshark reads the wrapped captures too. The headers are packed here with
:mod:`struct` from the specifications, independently of the Rust decoder:

====================  ==========================================================================
kind                  frame (Ethernet link type)
====================  ==========================================================================
``gtpu``              IPv4 / UDP 2152 / GTP-U v1 G-PDU (TS 29.281), uplink and downlink TEIDs
``gtpu_ext``          the same with the S flag and a PDU session container extension header
``gre``               IPv4 / GRE (RFC 2784) with a key (RFC 2890)
``erspan2``           IPv4 / GRE with sequence number / ERSPAN type II / Ethernet
``erspan3``           IPv4 / GRE with sequence number / ERSPAN type III / Ethernet
``vxlan``             IPv4 / UDP 4789 / VXLAN (RFC 7348) / Ethernet
``geneve``            IPv6 / UDP 6081 / Geneve (RFC 8926) with one option / Ethernet
``mpls``              a two-label MPLS stack (RFC 3032)
``pppoe``             PPPoE session (RFC 2516) / PPP
``ipip``              IPv4 in IPv4 (RFC 2003); ``6in4`` for an IPv6 capture (RFC 4213)
====================  ==========================================================================

Lengths in the added headers are those of the inner packet on the wire (the record's original
length less its link header), so a capture cut by a snaplen stays consistent: the wrapped
record is cut the same number of bytes short. The outer addresses say the direction: the
client's packets (uplink) go from ``ENB`` to ``SGW`` with the uplink TEID / key / VNI, the
server's the other way with the downlink ones (:data:`IDS`).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO, Iterator

from hsrtcp.errors import ExitCode
from hsrtcp.pcapio import (LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL,
                           LINKTYPE_LINUX_SLL2, LINKTYPE_RAW, LINKTYPE_RAW_OLD, PCAP_MAGIC_NS,
                           PCAP_MAGIC_US, read_records)

KINDS = ("gtpu", "gtpu_ext", "gre", "erspan2", "erspan3", "vxlan", "geneve", "mpls", "pppoe", "ipip")
#: the ``flows.tunnel`` name each kind is expected to give
CHAIN = {"gtpu": "gtpu", "gtpu_ext": "gtpu", "gre": "gre", "erspan2": "gre/erspan", "erspan3": "gre/erspan",
         "vxlan": "vxlan", "geneve": "geneve", "mpls": "mpls", "pppoe": "pppoe", "ipip": "ipip"}
#: outer addresses: the client's side (an eNodeB) and the server's side (an SGW)
ENB, SGW = "192.0.2.1", "192.0.2.254"
ENB6, SGW6 = "2001:db8:e::1", "2001:db8:e::fe"
#: (uplink, downlink) identifier per kind: TEIDs, GRE keys, ERSPAN sessions, VNIs, PPPoE session
IDS = {"gtpu": (0x1001, 0x2002), "gtpu_ext": (0x1003, 0x2004), "gre": (77, 78), "erspan2": (0x155, 0x156),
       "erspan3": (0x2a, 0x2b), "vxlan": (5001, 5002), "geneve": (6001, 6002), "pppoe": (0x11, 0x11)}
#: MPLS labels (top, bottom) per direction
LABELS = {True: (16, 1000), False: (17, 2000)}

_MAC = bytes.fromhex("020000000002020000000001")


def _ip4(addr: str) -> bytes:
    return bytes(int(x) for x in addr.split("."))


def _ip6(addr: str) -> bytes:
    import ipaddress
    return ipaddress.IPv6Address(addr).packed


def _ipv4(proto: int, src: str, dst: str, payload_wire: int) -> bytes:
    """An IPv4 header (no options, DF) for a payload of ``payload_wire`` bytes on the wire."""
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_wire, 0x4242, 0x4000, 64, proto, 0,
                       _ip4(src), _ip4(dst))


def _ipv6(next_header: int, src: str, dst: str, payload_wire: int) -> bytes:
    return struct.pack("!IHBB16s16s", 6 << 28, payload_wire, next_header, 64, _ip6(src), _ip6(dst))


def _udp(sport: int, dport: int, payload_wire: int) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + payload_wire, 0)


def _eth(ethertype: int) -> bytes:
    return _MAC + struct.pack("!H", ethertype)


def ip_offset(linktype: int, data: bytes) -> int | None:
    """Where the IP header starts in a frame of these link types (None: not IP)."""
    if linktype in (LINKTYPE_RAW, LINKTYPE_RAW_OLD, LINKTYPE_IPV4, LINKTYPE_IPV6):
        return 0
    if linktype == LINKTYPE_LINUX_SLL:
        et, off = (struct.unpack_from("!H", data, 14)[0] if len(data) >= 16 else 0), 16
    elif linktype == LINKTYPE_LINUX_SLL2:
        et, off = (struct.unpack_from("!H", data, 0)[0] if len(data) >= 20 else 0), 20
    elif linktype == LINKTYPE_ETHERNET:
        if len(data) < 14:
            return None
        et, off = struct.unpack_from("!H", data, 12)[0], 14
        while et in (0x8100, 0x88A8) and len(data) >= off + 4:
            et, off = struct.unpack_from("!H", data, off + 2)[0], off + 4
    else:
        return None
    return off if et in (0x0800, 0x86DD) else None


def headers(kind: str, uplink: bool, inner_wire: int, inner_v6: bool, seq: int = 0) -> bytes:
    """The Ethernet frame's bytes before an inner IP packet of ``inner_wire`` bytes."""
    ids = IDS.get(kind, (0, 0))
    tid = ids[0] if uplink else ids[1]
    src, dst = (ENB, SGW) if uplink else (SGW, ENB)
    inner_et = 0x86DD if inner_v6 else 0x0800
    if kind in ("gtpu", "gtpu_ext"):
        if kind == "gtpu":
            gtp = struct.pack("!BBHI", 0x30, 0xFF, inner_wire, tid)
        else:
            # S and E flags; sequence number, N-PDU, next type 0x85 (PDU session container:
            # PDU type 0/1 for downlink/uplink, QFI 9), then no further extension.
            ext = struct.pack("!BBBB", 1, 0x10 if uplink else 0x00, 9, 0)
            opt = struct.pack("!HBB", seq & 0xFFFF, 0, 0x85) + ext
            gtp = struct.pack("!BBHI", 0x36, 0xFF, len(opt) + inner_wire, tid) + opt
        n = len(gtp) + inner_wire
        return _eth(0x0800) + _ipv4(17, src, dst, 8 + n) + _udp(2152, 2152, n) + gtp
    if kind == "gre":
        g = struct.pack("!HHI", 0x2000, inner_et, tid)
        return _eth(0x0800) + _ipv4(47, src, dst, len(g) + inner_wire) + g
    if kind in ("erspan2", "erspan3"):
        inner_eth = _eth(inner_et)
        if kind == "erspan2":
            g = struct.pack("!HHI", 0x1000, 0x88BE, seq & 0xFFFFFFFF)
            e = struct.pack("!HHI", 0x1000, tid & 0x3FF, 0)
        else:
            g = struct.pack("!HHI", 0x1000, 0x22EB, seq & 0xFFFFFFFF)
            e = struct.pack("!HHIHH", 0x2000, tid & 0x3FF, seq & 0xFFFFFFFF, 0, 0)
        n = len(g) + len(e) + len(inner_eth) + inner_wire
        return _eth(0x0800) + _ipv4(47, src, dst, n) + g + e + inner_eth
    if kind == "vxlan":
        v = struct.pack("!II", 0x08000000, tid << 8) + _eth(inner_et)
        n = len(v) + inner_wire
        return _eth(0x0800) + _ipv4(17, src, dst, 8 + n) + _udp(49152 + (tid & 0xFFF), 4789, n) + v
    if kind == "geneve":
        # One 4-byte option (class 0x0102, type 0x80, length 0), Ethernet payload.
        opt = struct.pack("!HBB", 0x0102, 0x80, 0)
        v = struct.pack("!BBHI", len(opt) // 4, 0, 0x6558, tid << 8) + opt + _eth(inner_et)
        n = len(v) + inner_wire
        s6, d6 = (ENB6, SGW6) if uplink else (SGW6, ENB6)
        return _eth(0x86DD) + _ipv6(17, s6, d6, 8 + n) + _udp(49152 + (tid & 0xFFF), 6081, n) + v
    if kind == "mpls":
        top, bottom = LABELS[uplink]
        return _eth(0x8847) + struct.pack("!II", top << 12 | 0x40, bottom << 12 | 0x100 | 0x40)
    if kind == "pppoe":
        return _eth(0x8864) + struct.pack("!BBHHH", 0x11, 0, tid, inner_wire + 2, 0x0057 if inner_v6 else 0x0021)
    if kind == "ipip":
        if inner_v6:
            return _eth(0x0800) + _ipv4(41, src, dst, inner_wire)
        return _eth(0x0800) + _ipv4(4, src, dst, inner_wire)
    raise ValueError(f"unknown encapsulation {kind!r} (one of {', '.join(KINDS)})")


def _client(path: str | Path) -> str | None:
    """The address that sent the capture's first SYN without ACK (the client)."""
    for rec in read_records(path):
        off = ip_offset(rec.linktype, rec.data)
        if off is None:
            continue
        d = rec.data[off:]
        if d and d[0] >> 4 == 4 and len(d) >= 34 and d[9] == 6:
            ihl = (d[0] & 15) * 4
            if len(d) >= ihl + 14 and d[ihl + 13] & 0x12 == 0x02:
                return ".".join(str(b) for b in d[12:16])
        elif d and d[0] >> 4 == 6 and len(d) >= 54 and d[6] == 6 and d[53] & 0x12 == 0x02:
            import ipaddress
            return str(ipaddress.IPv6Address(d[8:24]))
    return None


def _src(d: bytes) -> str | None:
    if d and d[0] >> 4 == 4 and len(d) >= 20:
        return ".".join(str(b) for b in d[12:16])
    if d and d[0] >> 4 == 6 and len(d) >= 40:
        import ipaddress
        return str(ipaddress.IPv6Address(d[8:24]))
    return None


def wrapped_records(src: str | Path, kind: str, client: str | None = None) -> Iterator[tuple[int, bytes, int]]:
    """``(ts_ns, frame, original length)`` of every record of ``src`` wrapped in ``kind``;
    records that are not IP are left out. ``client``: the inner address whose packets go
    uplink (default: the sender of the first SYN, else every packet goes uplink)."""
    if kind not in KINDS:
        raise ValueError(f"unknown encapsulation {kind!r} (one of {', '.join(KINDS)})")
    client = client or _client(src)
    for n, rec in enumerate(read_records(src)):
        off = ip_offset(rec.linktype, rec.data)
        if off is None or off >= len(rec.data):
            continue
        inner = rec.data[off:]
        wire = max(rec.orig_len, len(rec.data)) - off
        uplink = client is None or _src(inner) == client
        h = headers(kind, uplink, wire, inner[0] >> 4 == 6, seq=n)
        yield rec.ts_ns, h + inner, len(h) + wire


def _magic_ns(path: str | Path) -> bool:
    from hsrtcp.pcapio import _open_bytes
    with _open_bytes(path) as f:
        head = f.read(4)
    return len(head) == 4 and struct.unpack("<I", head)[0] in (PCAP_MAGIC_NS, 0x4D3CB2A1)


def write_records(out: BinaryIO, records: Iterator[tuple[int, bytes, int]], *, nanosecond: bool,
                  snaplen: int = 262144) -> int:
    """Write records as a little-endian classic pcap with Ethernet link type; returns how many."""
    per_s = 1_000_000_000 if nanosecond else 1_000_000
    out.write(struct.pack("<IHHiIII", PCAP_MAGIC_NS if nanosecond else PCAP_MAGIC_US, 2, 4, 0, 0, snaplen,
                          LINKTYPE_ETHERNET))
    n = 0
    for ts_ns, frame, orig in records:
        t = ts_ns if nanosecond else ts_ns // 1000
        out.write(struct.pack("<IIII", t // per_s, t % per_s, len(frame), orig))
        out.write(frame)
        n += 1
    return n


def wrap_capture(src: str | Path, dst: str | Path, kind: str, client: str | None = None) -> int:
    """Write ``src`` with every IP packet wrapped in ``kind`` to ``dst`` (a pcap with the
    source's time resolution); returns the records written."""
    with open(dst, "wb") as out:
        return write_records(out, wrapped_records(src, kind, client), nanosecond=_magic_ns(src))


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="Wrap a capture's IP packets in a tunnel (hsrtcp.testing.encap).")
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--kind", choices=KINDS, default="gtpu")
    ap.add_argument("--client", help="inner client address (default: the first SYN's sender)")
    a = ap.parse_args(argv)
    n = wrap_capture(a.src, a.dst, a.kind, a.client)
    print(f"{a.dst}: {n} records wrapped in {a.kind}")
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
