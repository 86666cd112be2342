#!/usr/bin/env python3
"""Make a capture look as if it was taken behind a NAT: rewrite addresses and ports.

Carrier NAT gives the phone a private address and port that the server never sees. To test
that the two-vantage matcher still pairs such captures, this rewrites the phone-side capture:
every occurrence of an address in ``--addr OLD=NEW`` and of a TCP port in ``--port OLD=NEW``
(as source or destination) is replaced; the IPv4 header checksum is recomputed and the TCP
checksum is updated incrementally (RFC 1624), so it stays exactly as right or wrong as it
was (captures at a sender carry offloaded, unfinished checksums). ``--skip N`` drops the
first N records (a capture that starts mid-connection, without the handshake); ``--drop N``
drops record N (capture loss).

Classic pcap only (micro or nanosecond, either byte order); link types Ethernet (1),
raw IP (101), Linux cooked v1 (113) and v2 (276).

    scripts/rewrite_nat.py phone.pcap natted.pcap --addr 10.0.1.2=100.64.7.9 --port 40264=61001
"""

from __future__ import annotations

import argparse
import ipaddress
import struct
import sys
from pathlib import Path

MAGICS = {0xA1B2C3D4, 0xA1B23C4D}
L2_LEN = {1: 14, 101: 0, 113: 16, 276: 20}


def _csum_fold(x: int) -> int:
    while x >> 16:
        x = (x & 0xFFFF) + (x >> 16)
    return x


def _ipv4_header_checksum(hdr: bytearray) -> int:
    hdr[10:12] = b"\0\0"
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", bytes(hdr)))
    return ~_csum_fold(s) & 0xFFFF


def _incremental(old_sum: int, old: bytes, new: bytes) -> int:
    """RFC 1624 eq. 3: HC' = ~(~HC + ~m + m') over the changed 16-bit words."""
    s = ~old_sum & 0xFFFF
    for i in range(0, len(old), 2):
        m, m2 = struct.unpack("!H", old[i:i + 2])[0], struct.unpack("!H", new[i:i + 2])[0]
        s += (~m & 0xFFFF) + m2
    return ~_csum_fold(s) & 0xFFFF


def rewrite_nat(src: str | Path, dst: str | Path, *, addr_map: dict[str, str] | None = None,
                port_map: dict[int, int] | None = None, skip: int = 0,
                drop: set[int] | frozenset[int] = frozenset(), time_offset_s: float = 0.0,
                drift_ppm: float = 0.0) -> int:
    """Copy ``src`` to ``dst`` with addresses/ports replaced; returns records written.

    ``skip`` drops the first N records; ``drop`` drops the records with these 1-based numbers
    (a capture that lost packets, as tcpdump's "dropped by kernel"). ``time_offset_s`` and
    ``drift_ppm`` move the capture clock: t' = t + offset + drift·(t − t_first), t_first =
    the first record's time (a phone clock that is off and runs fast or slow)."""
    amap = {ipaddress.ip_address(k).packed: ipaddress.ip_address(v).packed
            for k, v in (addr_map or {}).items()}
    for k, v in amap.items():
        if len(k) != len(v):
            raise ValueError("an address must be replaced by one of the same family")
    pmap = dict(port_map or {})
    data = Path(src).read_bytes()
    if len(data) < 24:
        raise ValueError(f"{src}: offset 0: shorter than a pcap header")
    for e in "<>":
        if struct.unpack(e + "I", data[:4])[0] in MAGICS:
            break
    else:
        raise ValueError(f"{src}: offset 0: not a classic pcap file")
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0x0FFFFFFF
    if linktype not in L2_LEN:
        raise ValueError(f"{src}: link type {linktype} not supported")
    out = bytearray(data[:24])
    magic = struct.unpack(e + "I", data[:4])[0]
    per_s = 1_000_000_000 if magic == 0xA1B23C4D else 1_000_000
    off, n, idx = 24, 0, 0
    t_first = None
    while off + 16 <= len(data):
        sec, frac, caplen, origlen = struct.unpack(e + "IIII", data[off:off + 16])
        rec = bytearray(data[off + 16:off + 16 + caplen])
        if len(rec) < caplen:
            raise ValueError(f"{src}: offset {off}: record cut short")
        off += 16 + caplen
        idx += 1
        if idx <= skip or idx in drop:
            continue
        _rewrite_packet(rec, L2_LEN[linktype], linktype, amap, pmap)
        t = sec * per_s + frac
        if t_first is None:
            t_first = t
        if time_offset_s or drift_ppm:
            t += round(time_offset_s * per_s + drift_ppm * 1e-6 * (t - t_first))
            if t < 0:
                raise ValueError(f"{src}: record {idx}: the offset makes a timestamp negative")
            sec, frac = divmod(t, per_s)
        out += struct.pack(e + "IIII", sec, frac, caplen, origlen) + rec
        n += 1
    tmp = Path(str(dst) + ".tmp")
    tmp.write_bytes(bytes(out))
    tmp.replace(dst)
    return n


def _rewrite_packet(rec: bytearray, l2: int, linktype: int, amap: dict, pmap: dict) -> None:
    if len(rec) < l2 + 20:
        return
    if linktype == 1:
        ethertype = struct.unpack("!H", rec[12:14])[0]
        if ethertype not in (0x0800, 0x86DD):
            return
    ver = rec[l2] >> 4
    if ver == 4:
        ihl = (rec[l2] & 0xF) * 4
        proto = rec[l2 + 9]
        a_off, a_len, l4 = l2 + 12, 4, l2 + ihl
    elif ver == 6:
        proto = rec[l2 + 6]
        a_off, a_len, l4 = l2 + 8, 16, l2 + 40
    else:
        return
    old_addrs = bytes(rec[a_off:a_off + 2 * a_len])
    for k in (0, 1):
        a = bytes(rec[a_off + k * a_len:a_off + (k + 1) * a_len])
        if a in amap:
            rec[a_off + k * a_len:a_off + (k + 1) * a_len] = amap[a]
    new_addrs = bytes(rec[a_off:a_off + 2 * a_len])
    if ver == 4:
        hdr = bytearray(rec[l2:l4])
        rec[l2 + 10:l2 + 12] = struct.pack("!H", _ipv4_header_checksum(hdr))
    if proto != 6 or len(rec) < l4 + 18:
        return
    old_ports = bytes(rec[l4:l4 + 4])
    sp, dp = struct.unpack("!HH", old_ports)
    rec[l4:l4 + 4] = struct.pack("!HH", pmap.get(sp, sp), pmap.get(dp, dp))
    new_ports = bytes(rec[l4:l4 + 4])
    csum = struct.unpack("!H", rec[l4 + 16:l4 + 18])[0]
    csum = _incremental(csum, old_addrs + old_ports, new_addrs + new_ports)
    rec[l4 + 16:l4 + 18] = struct.pack("!H", csum)


def _pairs(items: list[str], conv) -> dict:
    out = {}
    for it in items:
        if "=" not in it:
            raise SystemExit(f"expected OLD=NEW, got {it!r}")
        a, b = it.split("=", 1)
        out[conv(a)] = conv(b)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--addr", action="append", default=[], help="OLD=NEW address (repeatable)")
    ap.add_argument("--port", action="append", default=[], help="OLD=NEW TCP port (repeatable)")
    ap.add_argument("--skip", type=int, default=0, help="drop the first N records")
    ap.add_argument("--drop", type=int, action="append", default=[],
                    help="drop record number N (1-based, repeatable): simulated capture loss")
    ap.add_argument("--time-offset", type=float, default=0.0, help="add this many seconds to every timestamp")
    ap.add_argument("--drift-ppm", type=float, default=0.0, help="clock rate error in parts per million")
    a = ap.parse_args(argv)
    n = rewrite_nat(a.src, a.dst, addr_map=_pairs(a.addr, str), port_map=_pairs(a.port, int), skip=a.skip,
                    drop=set(a.drop), time_offset_s=a.time_offset, drift_ppm=a.drift_ppm)
    print(f"wrote {n} records to {a.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
