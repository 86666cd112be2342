"""A small, deliberately independent pcap/pcapng reader and writer in pure Python.

This module is a *witness*: the ground truth of the lab (:mod:`hsrtcp.testing.truth`) is
computed with it, so it must not share code with the Rust decoder it checks. It favours being
obviously correct over being fast (tens of thousands of packets per second is plenty for test
captures).

What it reads:

- pcap (magic ``a1b2c3d4`` microseconds or ``a1b23c4d`` nanoseconds, either byte order) and
  pcapng (Section Header, Interface Description with ``if_tsresol``, Enhanced and Simple
  Packet Blocks; other blocks are skipped), optionally gzip-compressed;
- link types Ethernet (1, with 802.1Q tags), Linux cooked v1 (113) and v2 (276), raw IP
  (12, 101, 228, 229);
- IPv4 (no fragments reassembled) and IPv6 (fixed header; extension headers are walked for
  the usual hop-by-hop/routing/destination options), and TCP with its options.

Errors raise :class:`hsrtcp.errors.InputError` naming the file and the byte offset.
"""

from __future__ import annotations

import gzip
import io
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

from hsrtcp.errors import InputError

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_RAW_OLD = 12
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D

# Records larger than this are treated as corruption, not as packets (the pcap convention of
# libpcap's MAXIMUM_SNAPLEN is 262144).
MAX_CAPLEN = 262144


@dataclass(slots=True)
class Record:
    """One captured frame: capture time in integer nanoseconds since the epoch, link type,
    the original length on the wire and the captured bytes (``len(data)`` is the caplen).
    ``offset`` is the byte offset of the record header in the (decompressed) file."""

    ts_ns: int
    linktype: int
    orig_len: int
    data: bytes
    offset: int

    @property
    def ts(self) -> float:
        return self.ts_ns / 1e9


@dataclass(slots=True)
class TcpPacket:
    """The decoded headers of one TCP/IP packet.

    ``payload_len`` is computed from the IP total/payload length and the TCP data offset, never
    from the captured length, so snaplen-truncated captures give true segment sizes.
    ``ip_id`` is None for IPv6. ``sack`` is a tuple of (left, right) edges as on the wire.
    """

    ts_ns: int
    family: int  # 4 or 6
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    payload_len: int
    ip_id: int | None
    doff: int
    tsval: int | None = None
    tsecr: int | None = None
    mss: int | None = None
    wscale: int | None = None
    sack_permitted: bool = False
    sack: tuple[tuple[int, int], ...] = field(default_factory=tuple)
    offset: int = 0

    @property
    def ts(self) -> float:
        return self.ts_ns / 1e9

    @property
    def syn(self) -> bool:
        return bool(self.flags & 0x02)

    @property
    def fin(self) -> bool:
        return bool(self.flags & 0x01)

    @property
    def rst(self) -> bool:
        return bool(self.flags & 0x04)

    @property
    def has_ack(self) -> bool:
        return bool(self.flags & 0x10)

    @property
    def is_pure_ack(self) -> bool:
        """ACK flag set, no payload, no SYN, FIN or RST (targets.md M9, M15)."""
        return self.has_ack and self.payload_len == 0 and not (self.flags & 0x07)


def _open_bytes(path: str | Path) -> BinaryIO:
    """Open a capture, transparently decompressing gzip (detected by its magic, not the name)."""
    f = open(path, "rb")
    head = f.read(2)
    f.seek(0)
    if head == b"\x1f\x8b":
        return gzip.open(f, "rb")  # type: ignore[return-value]
    return f


def read_records(path: str | Path) -> Iterator[Record]:
    """Yield every frame of a pcap or pcapng file (gzip allowed), in file order."""
    path = str(path)
    with _open_bytes(path) as f:
        head = f.read(4)
        if len(head) < 4:
            raise InputError(f"{path}: offset 0: file too short for a capture header ({len(head)} bytes)")
        (magic_le,) = struct.unpack("<I", head)
        (magic_be,) = struct.unpack(">I", head)
        if magic_le == PCAPNG_SHB:
            yield from _read_pcapng(path, f, head)
        elif magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS) or magic_be in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            yield from _read_pcap(path, f, head)
        else:
            raise InputError(f"{path}: offset 0: not a pcap or pcapng file (magic {head.hex()})")


def _read_pcap(path: str, f: BinaryIO, head: bytes) -> Iterator[Record]:
    rest = f.read(20)
    if len(rest) < 20:
        raise InputError(f"{path}: offset 4: truncated pcap global header ({4 + len(rest)} of 24 bytes)")
    if struct.unpack("<I", head)[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        endian = "<"
    else:
        endian = ">"
    magic = struct.unpack(endian + "I", head)[0]
    scale = 1 if magic == PCAP_MAGIC_NS else 1000
    _vmaj, _vmin, _zone, _sigfigs, _snaplen, network = struct.unpack(endian + "HHiIII", rest)
    linktype = network & 0x0FFFFFFF  # upper bits may carry FCS information
    rec_hdr = struct.Struct(endian + "IIII")
    offset = 24
    while True:
        hdr = f.read(16)
        if not hdr:
            return
        if len(hdr) < 16:
            raise InputError(f"{path}: offset {offset}: truncated record header ({len(hdr)} of 16 bytes)")
        sec, frac, caplen, origlen = rec_hdr.unpack(hdr)
        if caplen > MAX_CAPLEN:
            raise InputError(f"{path}: offset {offset}: record caplen {caplen} exceeds {MAX_CAPLEN}")
        data = f.read(caplen)
        if len(data) < caplen:
            raise InputError(
                f"{path}: offset {offset}: record cut short ({len(data)} of {caplen} captured bytes)"
            )
        yield Record(sec * 1_000_000_000 + frac * scale, linktype, origlen, data, offset)
        offset += 16 + caplen


def _read_pcapng(path: str, f: BinaryIO, head: bytes) -> Iterator[Record]:
    endian = "<"
    interfaces: list[tuple[int, int]] = []  # (linktype, ticks per second)
    offset = 0
    first = True
    while True:
        btype_raw = head if first else f.read(4)
        first = False
        if not btype_raw:
            return
        lenraw = f.read(4)
        if len(btype_raw) < 4 or len(lenraw) < 4:
            raise InputError(f"{path}: offset {offset}: truncated pcapng block header")
        if struct.unpack("<I", btype_raw)[0] == PCAPNG_SHB:
            bom = f.read(4)
            if len(bom) < 4:
                raise InputError(f"{path}: offset {offset}: truncated section header block")
            if struct.unpack("<I", bom)[0] == PCAPNG_BOM:
                endian = "<"
            elif struct.unpack(">I", bom)[0] == PCAPNG_BOM:
                endian = ">"
            else:
                raise InputError(f"{path}: offset {offset + 8}: bad pcapng byte-order magic {bom.hex()}")
            (blen,) = struct.unpack(endian + "I", lenraw)
            if blen < 28 or blen % 4:
                raise InputError(f"{path}: offset {offset}: bad pcapng block length {blen}")
            body = bom + f.read(blen - 16)
            interfaces = []  # interface ids are per section
        else:
            (blen,) = struct.unpack(endian + "I", lenraw)
            if blen < 12 or blen % 4 or blen > MAX_CAPLEN + 1024:
                raise InputError(f"{path}: offset {offset}: bad pcapng block length {blen}")
            body = f.read(blen - 12)
        if len(body) < blen - 12:
            raise InputError(f"{path}: offset {offset}: pcapng block cut short ({blen} bytes announced)")
        trailer = f.read(4)
        if len(trailer) < 4 or struct.unpack(endian + "I", trailer)[0] != blen:
            raise InputError(f"{path}: offset {offset}: pcapng block length trailer does not match {blen}")
        btype = struct.unpack(endian + "I", btype_raw)[0]
        if btype == 1:  # Interface Description Block
            linktype, _res, _snap = struct.unpack(endian + "HHI", body[:8])
            interfaces.append((linktype, _tsresol(body[8:], endian)))
        elif btype == 6:  # Enhanced Packet Block
            ifid, tshi, tslo, caplen, origlen = struct.unpack(endian + "IIIII", body[:20])
            if ifid >= len(interfaces):
                raise InputError(f"{path}: offset {offset}: packet names unknown interface {ifid}")
            if caplen > len(body) - 20:
                raise InputError(f"{path}: offset {offset}: caplen {caplen} exceeds block")
            linktype, tps = interfaces[ifid]
            ticks = (tshi << 32) | tslo
            yield Record(ticks * 1_000_000_000 // tps, linktype, origlen, bytes(body[20 : 20 + caplen]), offset)
        elif btype == 3:  # Simple Packet Block: no timestamp, interface 0
            if not interfaces:
                raise InputError(f"{path}: offset {offset}: simple packet before any interface")
            (origlen,) = struct.unpack(endian + "I", body[:4])
            data = bytes(body[4 : 4 + min(origlen, len(body) - 4)])
            yield Record(0, interfaces[0][0], origlen, data, offset)
        offset += blen


def _tsresol(options: bytes, endian: str) -> int:
    """Ticks per second from an IDB's options (default microseconds)."""
    i = 0
    while i + 4 <= len(options):
        code, olen = struct.unpack(endian + "HH", options[i : i + 4])
        if code == 0:
            break
        if code == 9 and olen >= 1:
            v = options[i + 4]
            return 2 ** (v & 0x7F) if v & 0x80 else 10 ** (v & 0x7F)
        i += 4 + ((olen + 3) // 4) * 4
    return 1_000_000


# --- decoding ------------------------------------------------------------------------------


def _l3(rec: Record) -> tuple[int, bytes] | None:
    """(ethertype, L3 bytes) of a frame, or None for link types or protocols we skip."""
    d = rec.data
    lt = rec.linktype
    if lt == LINKTYPE_ETHERNET:
        if len(d) < 14:
            return None
        et = struct.unpack("!H", d[12:14])[0]
        i = 14
        while et in (0x8100, 0x88A8) and len(d) >= i + 4:
            et = struct.unpack("!H", d[i + 2 : i + 4])[0]
            i += 4
        return et, d[i:]
    if lt == LINKTYPE_LINUX_SLL:
        if len(d) < 16:
            return None
        return struct.unpack("!H", d[14:16])[0], d[16:]
    if lt == LINKTYPE_LINUX_SLL2:
        if len(d) < 20:
            return None
        return struct.unpack("!H", d[0:2])[0], d[20:]
    if lt in (LINKTYPE_RAW, LINKTYPE_RAW_OLD, LINKTYPE_IPV4, LINKTYPE_IPV6):
        if not d:
            return None
        v = d[0] >> 4
        return (0x0800 if v == 4 else 0x86DD if v == 6 else 0), d
    return None


def decode_tcp(rec: Record) -> TcpPacket | None:
    """Decode a frame into a :class:`TcpPacket`, or None if it is not (decodable) TCP.

    Frames too short for their IP and TCP headers return None (the truth module only needs
    well-formed packets; robustness against malformed input is the analyzer's job).
    """
    l3 = _l3(rec)
    if l3 is None:
        return None
    et, ip = l3
    if et == 0x0800:
        if len(ip) < 20 or ip[0] >> 4 != 4:
            return None
        ihl = (ip[0] & 0x0F) * 4
        total_len, ip_id, frag = struct.unpack("!HHH", ip[2:8])
        if ihl < 20 or total_len < ihl + 20 or ip[9] != 6 or frag & 0x1FFF or len(ip) < ihl + 20:
            return None
        if total_len > rec.orig_len - (len(rec.data) - len(ip)):
            return None  # claims more bytes than were on the wire
        src = ".".join(str(b) for b in ip[12:16])
        dst = ".".join(str(b) for b in ip[16:20])
        l4 = ip[ihl:]
        l4_len = total_len - ihl
        family = 4
    elif et == 0x86DD:
        if len(ip) < 40 or ip[0] >> 4 != 6:
            return None
        plen = struct.unpack("!H", ip[4:6])[0]
        nxt = ip[6]
        i = 40
        while nxt in (0, 43, 60) and len(ip) >= i + 8:  # hop-by-hop, routing, dest options
            nxt, hlen = ip[i], (ip[i + 1] + 1) * 8
            i += hlen
        if nxt != 6 or len(ip) < i + 20 or plen < (i - 40) + 20:
            return None
        if 40 + plen > rec.orig_len - (len(rec.data) - len(ip)):
            return None
        src = _ip6(ip[8:24])
        dst = _ip6(ip[24:40])
        l4 = ip[i:]
        l4_len = plen - (i - 40)
        ip_id = None
        family = 6
    else:
        return None
    sport, dport, seq, ack, off_flags, window = struct.unpack("!HHIIHH", l4[:16])
    doff = (off_flags >> 12) * 4
    if doff < 20 or doff > l4_len:
        return None
    flags = off_flags & 0x01FF
    pkt = TcpPacket(
        ts_ns=rec.ts_ns,
        family=family,
        src=src,
        dst=dst,
        sport=sport,
        dport=dport,
        seq=seq,
        ack=ack,
        flags=flags,
        window=window,
        payload_len=max(0, l4_len - doff),
        ip_id=ip_id,
        doff=doff,
        offset=rec.offset,
    )
    _tcp_options(pkt, l4[20 : min(doff, len(l4))])
    return pkt


def _tcp_options(pkt: TcpPacket, opts: bytes) -> None:
    i = 0
    sack = []
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts):
            break
        olen = opts[i + 1]
        if olen < 2 or i + olen > len(opts):
            break
        body = opts[i + 2 : i + olen]
        if kind == 2 and olen == 4:
            pkt.mss = struct.unpack("!H", body)[0]
        elif kind == 3 and olen == 3:
            pkt.wscale = body[0]
        elif kind == 4:
            pkt.sack_permitted = True
        elif kind == 5:
            for j in range(0, len(body) - 7, 8):
                sack.append(struct.unpack("!II", body[j : j + 8]))
        elif kind == 8 and olen == 10:
            pkt.tsval, pkt.tsecr = struct.unpack("!II", body)
        i += olen
    pkt.sack = tuple(sack)


def _ip6(b: bytes) -> str:
    import ipaddress

    return str(ipaddress.IPv6Address(b))


def read_tcp(path: str | Path) -> Iterator[TcpPacket]:
    """Yield the TCP packets of a capture in file order (non-TCP frames are skipped)."""
    for rec in read_records(path):
        pkt = decode_tcp(rec)
        if pkt is not None:
            yield pkt


# --- writing and rewriting -----------------------------------------------------------------


def capture_info(path: str | Path) -> dict:
    """Format facts of a capture: ``format`` (pcap/pcapng), ``endian``, ``nanosecond``,
    ``linktype`` (of the first interface or the global header), ``gzip``."""
    path = str(path)
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    with _open_bytes(path) as f:
        head = f.read(24)
    if len(head) < 4:
        raise InputError(f"{path}: offset 0: file too short")
    if struct.unpack("<I", head[:4])[0] == PCAPNG_SHB:
        endian = "<" if struct.unpack("<I", head[8:12])[0] == PCAPNG_BOM else ">"
        lt = None
        for rec in read_records(path):
            lt = rec.linktype
            break
        return {"format": "pcapng", "endian": "little" if endian == "<" else "big",
                "nanosecond": None, "linktype": lt, "gzip": gz}
    endian = "<" if struct.unpack("<I", head[:4])[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS) else ">"
    magic = struct.unpack(endian + "I", head[:4])[0]
    return {"format": "pcap", "endian": "little" if endian == "<" else "big",
            "nanosecond": magic == PCAP_MAGIC_NS,
            "linktype": struct.unpack(endian + "I", head[20:24])[0] & 0x0FFFFFFF, "gzip": gz}


def rewrite_pcap(src: str | Path, dst: str | Path, *, time_offset_s: float = 0.0,
                 big_endian: bool | None = None) -> int:
    """Copy a classic pcap record by record, adding ``time_offset_s`` (may be negative) to
    every timestamp and optionally writing it in the other byte order. Keeps the timestamp
    resolution (micro/nano) of the input. Returns the number of records written.

    Used to simulate an unsynchronised second vantage point (two-vantage clock alignment,
    targets.md A9) and to make big-endian fixtures.
    """
    src, dst = str(src), str(dst)
    with _open_bytes(src) as f:
        head = f.read(24)
        if len(head) < 24:
            raise InputError(f"{src}: offset 0: truncated pcap global header")
        if struct.unpack("<I", head[:4])[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            ie = "<"
        elif struct.unpack(">I", head[:4])[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            ie = ">"
        else:
            raise InputError(f"{src}: offset 0: not a classic pcap file (rewrite supports pcap only)")
        oe = ie if big_endian is None else (">" if big_endian else "<")
        magic, vmaj, vmin, zone, sigfigs, snaplen, network = struct.unpack(ie + "IHHiIII", head)
        per_s = 1_000_000_000 if magic == PCAP_MAGIC_NS else 1_000_000
        shift = round(time_offset_s * per_s)
        tmp = dst + ".tmp"
        n = 0
        with open(tmp, "wb") as out:
            out.write(struct.pack(oe + "IHHiIII", magic, vmaj, vmin, zone, sigfigs, snaplen, network))
            offset = 24
            while True:
                hdr = f.read(16)
                if not hdr:
                    break
                if len(hdr) < 16:
                    raise InputError(f"{src}: offset {offset}: truncated record header")
                sec, frac, caplen, origlen = struct.unpack(ie + "IIII", hdr)
                data = f.read(caplen)
                if len(data) < caplen:
                    raise InputError(f"{src}: offset {offset}: record cut short")
                t = sec * per_s + frac + shift
                if t < 0:
                    raise ValueError(f"{src}: offset {offset}: time offset makes a timestamp negative")
                out.write(struct.pack(oe + "IIII", t // per_s, t % per_s, caplen, origlen))
                out.write(data)
                offset += 16 + caplen
                n += 1
        Path(tmp).replace(dst)
    return n


def write_pcap(dst: str | Path, frames: list[tuple[int, bytes]], *, linktype: int = LINKTYPE_ETHERNET,
               snaplen: int = 65535, nanosecond: bool = False, big_endian: bool = False,
               orig_lens: list[int] | None = None) -> None:
    """Write ``(ts_ns, frame bytes)`` pairs as a classic pcap file (for crafted fixtures)."""
    e = ">" if big_endian else "<"
    magic = PCAP_MAGIC_NS if nanosecond else PCAP_MAGIC_US
    per_s = 1_000_000_000 if nanosecond else 1_000_000
    buf = io.BytesIO()
    buf.write(struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
    for i, (ts_ns, data) in enumerate(frames):
        t = ts_ns if nanosecond else ts_ns // 1000
        orig = orig_lens[i] if orig_lens else len(data)
        buf.write(struct.pack(e + "IIII", t // per_s, t % per_s, len(data), orig))
        buf.write(data)
    Path(dst).write_bytes(buf.getvalue())
