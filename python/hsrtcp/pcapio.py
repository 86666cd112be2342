"""A capture reader and writer over dpkt, independent of the Rust decoder.

The ground truth (:mod:`hsrtcp.testing.truth`), the witness tests, the lab's bundles and
checks, the audit and the passive classifiers read captures with this module, so that what
they say about a capture never comes from the code they check. (It was
``hsrtcp.testing.pcapio``; that name stays, for the tests, as this same module.) Header decoding is dpkt's (Ethernet with 802.1Q tags, Linux cooked v1/v2, IPv4,
IPv6 with its extension headers, TCP, UDP, TCP options); file headers and pcapng blocks are
dpkt's structures too. What this module adds is what dpkt's ``pcap.Reader`` and
``pcapng.Reader`` do not give and a witness needs: timestamps as exact integer nanoseconds
(dpkt yields floats), each record's original length (for payload lengths of snaplen-cut
packets), one link type per pcapng interface (dpkt takes the first interface's for all),
gzip, and errors naming the file and the byte offset.

What it reads: pcap (microsecond or nanosecond magic, either byte order) and pcapng
(Section Header, Interface Description with ``if_tsresol``/``if_tsoffset``, Enhanced and
Simple Packet Blocks; other blocks are skipped), optionally gzip-compressed; link types
Ethernet (1), Linux cooked v1 (113) and v2 (276), raw IP (12, 101, 228, 229). Errors raise
:class:`hsrtcp.errors.InputError` with the file and offset.
"""

from __future__ import annotations

import gzip
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

import dpkt
from dpkt import pcap as _pcap
from dpkt import pcapng as _pcapng

from hsrtcp.errors import InputError

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_RAW_OLD = 12
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

PCAP_MAGIC_US = _pcap.TCPDUMP_MAGIC
PCAP_MAGIC_NS = _pcap.TCPDUMP_MAGIC_NANO
PCAPNG_SHB = _pcapng.PCAPNG_BT_SHB
PCAPNG_BOM = _pcapng.BYTE_ORDER_MAGIC

# Records larger than this are treated as corruption, not as packets (libpcap's
# MAXIMUM_SNAPLEN).
MAX_CAPLEN = 262144

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10
_TCP_OPT_MPTCP = 30


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


def _flag(mask: int) -> property:
    """A bool property: is this flag set in the packet's ``flags``."""
    return property(lambda self: bool(self.flags & mask), doc=f"flag 0x{mask:02x} set")


@dataclass(slots=True)
class TcpPacket:
    """The decoded headers of one TCP/IP packet.

    ``payload_len`` is computed from the IP total/payload length and the TCP data offset, never
    from the captured length, so snaplen-truncated captures give true segment sizes.
    ``ip_len`` is the IP packet's length (IPv4 total length, IPv6 40 + payload length).
    ``ip_id`` is None for IPv6. ``sack`` is a tuple of (left, right) edges as on the wire.
    ``mptcp_subtypes`` names the subtype of every MPTCP option (kind 30; RFC 8684 §3:
    0 MP_CAPABLE, 1 MP_JOIN, 2 DSS, 3 ADD_ADDR, ...).
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
    ip_len: int = 0
    mptcp_subtypes: tuple[int, ...] = ()

    @property
    def ts(self) -> float:
        return self.ts_ns / 1e9

    syn = _flag(TCP_SYN)
    fin = _flag(TCP_FIN)
    rst = _flag(TCP_RST)
    has_ack = _flag(TCP_ACK)

    @property
    def is_pure_ack(self) -> bool:
        """ACK flag set, no payload, no SYN, FIN or RST (docs/metrics.md M9, M15)."""
        return self.has_ack and self.payload_len == 0 and not (self.flags & 0x07)


# --- reading records ------------------------------------------------------------------------


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
        magic_le, magic_be = struct.unpack("<I", head)[0], struct.unpack(">I", head)[0]
        if magic_le == PCAPNG_SHB:
            yield from _pcapng_records(path, f, head)
        elif PCAP_MAGIC_US in (magic_le, magic_be) or PCAP_MAGIC_NS in (magic_le, magic_be):
            yield from _pcap_records(path, f, head)
        else:
            raise InputError(f"{path}: offset 0: not a pcap or pcapng file (magic {head.hex()})")


def _pcap_header(path: str, head: bytes) -> dpkt.Packet:
    """The global header of a classic pcap as dpkt's FileHdr (or LEFileHdr)."""
    if len(head) < _pcap.FileHdr.__hdr_len__:
        raise InputError(f"{path}: offset 4: truncated pcap global header ({len(head)} of 24 bytes)")
    fh = _pcap.FileHdr(head)
    if fh.magic not in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
        fh = _pcap.LEFileHdr(head)
    return fh


def _pcap_records(path: str, f: BinaryIO, head: bytes) -> Iterator[Record]:
    fh = _pcap_header(path, head + f.read(20))
    scale = 1 if fh.magic == PCAP_MAGIC_NS else 1000
    linktype = fh.linktype & 0x0FFFFFFF  # upper bits may carry FCS information
    # Record headers by struct, not dpkt's PktHdr: a dpkt object per record would cost a
    # quarter of the reading time, and these four integers need no decoding.
    rec_hdr = struct.Struct("<IIII" if isinstance(fh, _pcap.LEFileHdr) else ">IIII")
    offset = 24
    while True:
        hdr = f.read(16)
        if not hdr:
            return
        if len(hdr) < 16:
            raise InputError(f"{path}: offset {offset}: truncated record header ({len(hdr)} of 16 bytes)")
        sec, frac, caplen, orig_len = rec_hdr.unpack(hdr)
        if caplen > MAX_CAPLEN:
            raise InputError(f"{path}: offset {offset}: record caplen {caplen} exceeds {MAX_CAPLEN}")
        data = f.read(caplen)
        if len(data) < caplen:
            raise InputError(f"{path}: offset {offset}: record cut short ({len(data)} of {caplen} captured bytes)")
        yield Record(sec * 1_000_000_000 + frac * scale, linktype, orig_len, data, offset)
        offset += 16 + caplen


def _pcapng_records(path: str, f: BinaryIO, head: bytes) -> Iterator[Record]:
    le = True
    interfaces: list[tuple[int, int, int]] = []  # (linktype, ticks per second, offset in s)
    offset = 0
    while True:
        start = head if offset == 0 else f.read(8)
        if offset == 0:
            start += f.read(4)
        if not start:
            return
        if len(start) < 8:
            raise InputError(f"{path}: offset {offset}: truncated pcapng block header")
        btype = struct.unpack("<I", start[:4])[0]
        if btype == PCAPNG_SHB:  # the byte order may change with every section
            bom = f.read(4)
            if len(bom) < 4:
                raise InputError(f"{path}: offset {offset}: truncated section header block")
            if struct.unpack("<I", bom)[0] == PCAPNG_BOM:
                le = True
            elif struct.unpack(">I", bom)[0] == PCAPNG_BOM:
                le = False
            else:
                raise InputError(f"{path}: offset {offset + 8}: bad pcapng byte-order magic {bom.hex()}")
            start += bom
        blen = struct.unpack("<I" if le else ">I", start[4:8])[0]
        if blen < 12 or blen % 4 or blen > MAX_CAPLEN + 1024 or (btype == PCAPNG_SHB and blen < 28):
            raise InputError(f"{path}: offset {offset}: bad pcapng block length {blen}")
        block = start + f.read(blen - len(start))
        if len(block) < blen:
            raise InputError(f"{path}: offset {offset}: pcapng block cut short ({blen} bytes announced)")
        btype = struct.unpack("<I" if le else ">I", block[:4])[0]
        try:
            if btype == PCAPNG_SHB:
                (_pcapng.SectionHeaderBlockLE if le else _pcapng.SectionHeaderBlock)(block)
                interfaces = []  # interface ids are per section
            elif btype == _pcapng.PCAPNG_BT_IDB:
                idb = (_pcapng.InterfaceDescriptionBlockLE if le else _pcapng.InterfaceDescriptionBlock)(block)
                interfaces.append((idb.linktype, *_ts_options(idb.opts, le)))
            elif btype == _pcapng.PCAPNG_BT_EPB:
                epb = (_pcapng.EnhancedPacketBlockLE if le else _pcapng.EnhancedPacketBlock)(block)
                if epb.iface_id >= len(interfaces):
                    raise InputError(f"{path}: offset {offset}: packet names unknown interface {epb.iface_id}")
                if epb.caplen > blen - 32:
                    raise InputError(f"{path}: offset {offset}: caplen {epb.caplen} exceeds block")
                linktype, tps, tsoff = interfaces[epb.iface_id]
                ticks = (epb.ts_high << 32) | epb.ts_low
                yield Record(ticks * 1_000_000_000 // tps + tsoff * 1_000_000_000, linktype, epb.pkt_len,
                             bytes(epb.pkt_data), offset)
            elif btype == _pcapng.PCAPNG_BT_SPB:  # no timestamp, interface 0; dpkt has no class
                if not interfaces:
                    raise InputError(f"{path}: offset {offset}: simple packet before any interface")
                (orig,) = struct.unpack("<I" if le else ">I", block[8:12])
                yield Record(0, interfaces[0][0], orig, bytes(block[12 : 12 + min(orig, blen - 16)]), offset)
        except (dpkt.UnpackError, struct.error, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: offset {offset}: bad pcapng block ({exc or type(exc).__name__})") from None
        offset += blen


def _ts_options(opts, le: bool) -> tuple[int, int]:
    """(ticks per second, offset in seconds) from an interface's options (default µs, 0)."""
    tps, tsoff = 1_000_000, 0
    for opt in opts:
        if opt.code == _pcapng.PCAPNG_OPT_IF_TSRESOL and opt.data:
            v = opt.data[0]
            tps = 2 ** (v & 0x7F) if v & 0x80 else 10 ** (v & 0x7F)
        elif opt.code == _pcapng.PCAPNG_OPT_IF_TSOFFSET and len(opt.data) == 8:
            tsoff = struct.unpack("<q" if le else ">q", opt.data)[0]
    return tps, tsoff


# --- decoding --------------------------------------------------------------------------------


def _network(rec: Record) -> tuple[dpkt.Packet | bytes, int] | None:
    """(decoded IP layer, link-layer header length) of a frame, or None for link types and
    protocols this reader skips."""
    d, lt = rec.data, rec.linktype
    try:
        if lt == LINKTYPE_ETHERNET:
            eth = dpkt.ethernet.Ethernet(d)
            return eth.data, 14 + 4 * len(getattr(eth, "vlan_tags", ()))
        if lt == LINKTYPE_LINUX_SLL:
            return dpkt.sll.SLL(d).data, 16
        if lt == LINKTYPE_LINUX_SLL2:
            return dpkt.sll2.SLL2(d).data, 20
        if lt in (LINKTYPE_RAW, LINKTYPE_RAW_OLD, LINKTYPE_IPV4, LINKTYPE_IPV6) and d:
            v = d[0] >> 4
            return (dpkt.ip.IP(d) if v == 4 else dpkt.ip6.IP6(d) if v == 6 else b""), 0
    except (dpkt.UnpackError, struct.error, IndexError):
        return None
    return None


def decode_tcp(rec: Record) -> TcpPacket | None:
    """Decode a frame into a :class:`TcpPacket`, or None if it is not (decodable) TCP.

    Frames too short for their IP and TCP headers, fragments after the first, and packets
    whose IP length claims more bytes than were on the wire return None (the truth needs
    well-formed packets; robustness against malformed input is the analyzer's job).
    """
    net = _network(rec)
    if net is None:
        return None
    ip, l2 = net
    wire = rec.orig_len - l2  # bytes of the IP packet on the wire
    if isinstance(ip, dpkt.ip.IP):
        ihl = ip.hl * 4
        if ip.v != 4 or ihl < 20 or ip.p != 6 or ip.offset or ip.len < ihl + 20 or ip.len > wire:
            return None
        tcp, l4_len, family, ip_id, ip_len = ip.data, ip.len - ihl, 4, ip.id, ip.len
        src, dst = socket.inet_ntop(socket.AF_INET, ip.src), socket.inet_ntop(socket.AF_INET, ip.dst)
    elif isinstance(ip, dpkt.ip6.IP6):
        ext = sum(h.length for h in ip.all_extension_headers)
        l4_len = ip.plen - ext
        if ip.p != 6 or l4_len < 20 or 40 + ip.plen > wire:
            return None
        tcp, family, ip_id, ip_len = ip.data, 6, None, 40 + ip.plen
        src, dst = socket.inet_ntop(socket.AF_INET6, ip.src), socket.inet_ntop(socket.AF_INET6, ip.dst)
    else:
        return None
    if not isinstance(tcp, dpkt.tcp.TCP):
        return None  # captured too short for a TCP header
    doff = tcp.off * 4
    if doff < 20 or doff > l4_len:
        return None
    pkt = TcpPacket(ts_ns=rec.ts_ns, family=family, src=src, dst=dst, sport=tcp.sport, dport=tcp.dport,
                    seq=tcp.seq, ack=tcp.ack, flags=tcp.flags & 0x01FF, window=tcp.win,
                    payload_len=l4_len - doff, ip_id=ip_id, doff=doff, offset=rec.offset, ip_len=ip_len)
    if tcp.opts:
        _tcp_options(pkt, tcp.opts)
    return pkt


def _tcp_options(pkt: TcpPacket, opts: bytes) -> None:
    sack, mptcp = [], []
    for opt in dpkt.tcp.parse_opts(opts):
        if opt is None:  # an option running past the header: stop, as the kernel does
            break
        kind, body = opt
        if kind == dpkt.tcp.TCP_OPT_EOL:
            break
        if kind == dpkt.tcp.TCP_OPT_MSS and len(body) == 2:
            pkt.mss = struct.unpack("!H", body)[0]
        elif kind == dpkt.tcp.TCP_OPT_WSCALE and len(body) == 1:
            pkt.wscale = body[0]
        elif kind == dpkt.tcp.TCP_OPT_SACKOK:
            pkt.sack_permitted = True
        elif kind == dpkt.tcp.TCP_OPT_SACK:
            sack += [struct.unpack_from("!II", body, j) for j in range(0, len(body) - 7, 8)]
        elif kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(body) == 8:
            pkt.tsval, pkt.tsecr = struct.unpack("!II", body)
        elif kind == _TCP_OPT_MPTCP and body:
            mptcp.append(body[0] >> 4)
    pkt.sack, pkt.mptcp_subtypes = tuple(sack), tuple(mptcp)


def read_tcp(path: str | Path) -> Iterator[TcpPacket]:
    """Yield the TCP packets of a capture in file order (non-TCP frames are skipped)."""
    for rec in read_records(path):
        pkt = decode_tcp(rec)
        if pkt is not None:
            yield pkt


def first_ip_time(path: str | Path) -> float | None:
    """Time (s) of the first IPv4 or IPv6 unicast packet of any protocol, or None.

    The lab's trace-clock origin t0: no packet crosses the emulator before the workload's
    first one (docs/formats/bundle.md)."""
    for rec in read_records(path):
        net = _network(rec)
        if net is None or not isinstance(net[0], (dpkt.ip.IP, dpkt.ip6.IP6)):
            continue
        dst = net[0].dst
        if isinstance(net[0], dpkt.ip.IP) and (dst[0] >= 224 or dst == b"\xff\xff\xff\xff"):
            continue  # multicast, broadcast
        if isinstance(net[0], dpkt.ip6.IP6) and dst[0] == 0xFF:
            continue  # multicast
        return rec.ts
    return None


# --- writing and rewriting -------------------------------------------------------------------


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
        big = len(head) >= 12 and struct.unpack(">I", head[8:12])[0] == PCAPNG_BOM
        lt = next((rec.linktype for rec in read_records(path)), None)
        return {"format": "pcapng", "endian": "big" if big else "little", "nanosecond": None,
                "linktype": lt, "gzip": gz}
    fh = _pcap_header(path, head)
    return {"format": "pcap", "endian": "little" if isinstance(fh, _pcap.LEFileHdr) else "big",
            "nanosecond": fh.magic == PCAP_MAGIC_NS, "linktype": fh.linktype & 0x0FFFFFFF, "gzip": gz}


def rewrite_pcap(src: str | Path, dst: str | Path, *, time_offset_s: float = 0.0,
                 big_endian: bool | None = None) -> int:
    """Copy a classic pcap record by record, adding ``time_offset_s`` (may be negative) to
    every timestamp and optionally writing it in the other byte order. Keeps the timestamp
    resolution (micro/nano) of the input. Returns the number of records written.

    Used to simulate an unsynchronised second vantage point (two-vantage clock alignment,
    docs/metrics.md A9) and to make big-endian fixtures.
    """
    src, dst = str(src), str(dst)
    with _open_bytes(src) as f:
        head = f.read(24)
    if len(head) < 4 or struct.unpack("<I", head[:4])[0] == PCAPNG_SHB:
        raise InputError(f"{src}: offset 0: not a classic pcap file (rewrite supports pcap only)")
    fh = _pcap_header(src, head)
    nano = fh.magic == PCAP_MAGIC_NS
    per_s = 1_000_000_000 if nano else 1_000_000
    shift = round(time_offset_s * per_s)
    big = not isinstance(fh, _pcap.LEFileHdr) if big_endian is None else big_endian
    file_hdr, rec_hdr = (_pcap.FileHdr, _pcap.PktHdr) if big else (_pcap.LEFileHdr, _pcap.LEPktHdr)
    tmp = dst + ".tmp"
    n = 0
    with open(tmp, "wb") as out:
        out.write(bytes(file_hdr(magic=fh.magic, v_major=fh.v_major, v_minor=fh.v_minor, thiszone=fh.thiszone,
                                 sigfigs=fh.sigfigs, snaplen=fh.snaplen, linktype=fh.linktype)))
        for rec in read_records(src):
            t = rec.ts_ns // (1 if nano else 1000) + shift
            if t < 0:
                raise ValueError(f"{src}: offset {rec.offset}: time offset makes a timestamp negative")
            out.write(bytes(rec_hdr(tv_sec=t // per_s, tv_usec=t % per_s, caplen=len(rec.data), len=rec.orig_len)))
            out.write(rec.data)
            n += 1
    Path(tmp).replace(dst)
    return n


def write_pcap(dst: str | Path, frames: list[tuple[int, bytes]], *, linktype: int = LINKTYPE_ETHERNET,
               snaplen: int = 65535, nanosecond: bool = False, big_endian: bool = False,
               orig_lens: list[int] | None = None) -> None:
    """Write ``(ts_ns, frame bytes)`` pairs as a classic pcap file (for crafted fixtures)."""
    file_hdr, rec_hdr = (_pcap.FileHdr, _pcap.PktHdr) if big_endian else (_pcap.LEFileHdr, _pcap.LEPktHdr)
    per_s = 1_000_000_000 if nanosecond else 1_000_000
    parts = [bytes(file_hdr(magic=PCAP_MAGIC_NS if nanosecond else PCAP_MAGIC_US, snaplen=snaplen,
                            linktype=linktype))]
    for i, (ts_ns, data) in enumerate(frames):
        t = ts_ns if nanosecond else ts_ns // 1000
        orig = orig_lens[i] if orig_lens else len(data)
        parts += [bytes(rec_hdr(tv_sec=t // per_s, tv_usec=t % per_s, caplen=len(data), len=orig)), data]
    Path(dst).write_bytes(b"".join(parts))
