"""3GPP signalling from a phone's diagnostic port as GSMTAP in a pcap (radio format ``gsmtap``):
what SCAT and QCSuper write (RRC messages in UDP datagrams to port 4729).

:func:`read_gsmtap` reads a pcap or pcapng file packet by packet (memory: the state of one
phone plus one row per handoff and per second of signalling, not per message), keeps the
LTE and NR RRC messages and hands them to :class:`hsrtcp.context.rrc.Tracker`, which derives
the handoffs (3GPP types, target cell, execution time) and the serving cell over time.

Link types: Ethernet, Linux cooked (v1, v2), BSD loopback, raw IPv4/IPv6. GSMTAP version 2
(``type`` 0x0d, LTE RRC; subtypes DL/UL-CCCH, DL/UL-DCCH) and version 3 (LTE RRC 0x0403,
NR RRC 0x0503: GSMTAP v2 has no NR type). Other GSMTAP types (GSM, UMTS, NAS, …) and the RRC
broadcast channels are counted and left aside. What cannot be read is counted per reason
with the first packet it happened at — a datagram cut short, a GSMTAP header that does not
fit, an unknown GSMTAP version or type, an RRC message that does not decode, a capture cut
short — and the other messages still count (:meth:`Signalling.problems`).

:func:`write_gsmtap` writes such a capture (the test fixtures and the benchmark build theirs
with it and :mod:`hsrtcp.context.rrc`'s message builders).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import polars as pl

from hsrtcp.context.reorder import WINDOW_S, Reorder
from hsrtcp.context.schema import RadioLogError

GSMTAP_PORT = 4729
# GSMTAP v2 types (libosmocore gsmtap.h): 0x0d is LTE RRC; the others are other protocols
V2_LTE_RRC = 0x0D
V2_KNOWN_TYPES = frozenset(range(0x01, 0x15))
# v2 LTE RRC subtypes -> channel (the others are broadcast, paging, MBMS, NB-IoT)
V2_LTE_CHANNELS = {0: "DL_CCCH", 1: "DL_DCCH", 2: "UL_CCCH", 3: "UL_DCCH"}
V2_LTE_SUBTYPES = 23
# GSMTAP v3 (libosmocore gsmtapv3.h)
V3_LTE_RRC, V3_NR_RRC = 0x0403, 0x0503
V3_LTE_CHANNELS = {0x0008: "DL_CCCH", 0x0009: "DL_DCCH", 0x000A: "UL_CCCH", 0x000B: "UL_DCCH"}
V3_NR_CHANNELS = {0x0003: "DL_CCCH", 0x0004: "DL_DCCH", 0x0007: "UL_CCCH", 0x0009: "UL_DCCH"}
V3_KNOWN_TYPES = frozenset((0x0000, 0x0001, 0x0002, 0x0003, 0x0004, 0x0005, 0x0006, 0x0007, 0x0008, 0x0009,
                            0x0010, 0x0200, 0x0201, 0x0202, 0x0203, 0x0204, 0x0205, 0x0206, 0x0300, 0x0301,
                            0x0302, 0x0303, 0x0400, 0x0401, 0x0402, 0x0403, 0x0404, 0x0500, 0x0501, 0x0502,
                            0x0503, 0x0504))
# v3 metadata tag of the channel number (ARFCN), when the writer gives it
V3_TAG_ARFCN = 0x0002

# a message stamped earlier than one already followed: more than the reorder window late
LATE = f"time more than {WINDOW_S:g} s out of order"
# reasons a datagram or message is left aside: problems (reported) and the rest (counted)
PROBLEMS = ("truncated UDP payload", "truncated GSMTAP header", "unknown GSMTAP version",
            "unknown GSMTAP type", "undecodable LTE RRC", "undecodable NR RRC", LATE, "capture cut short")

_PCAP_MAGIC = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
# link types
_ETHERNET, _NULL, _LOOP = 1, 0, 108
_RAW = (12, 14, 101, 228, 229)
_SLL, _SLL2 = 113, 276


def looks_like_pcap(raw: bytes) -> bool:
    return raw[:4] in _PCAP_MAGIC or raw[:4] == _PCAPNG_MAGIC


@dataclass
class Signalling:
    """What :func:`read_gsmtap` found: the serving-cell samples (radio frame), the handoffs
    (handoffs-table columns), counts of messages per kind and of what was left aside per
    reason (with the first packet number)."""

    path: str
    frame: pl.DataFrame
    handoffs: pl.DataFrame
    packets: int = 0
    messages: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, list[int]] = field(default_factory=dict)  # reason -> [count, first packet]

    def problems(self) -> list[str]:
        """One message per problem reason (docs/context.md): the input error a caller reports."""
        out = []
        for reason in PROBLEMS:
            if reason in self.skipped:
                n, first = self.skipped[reason]
                what = "datagram" if "UDP" in reason or "GSMTAP" in reason else "message"
                if reason == "capture cut short":
                    out.append(f"{self.path}: packet {first}: capture cut short; the packets before it are read")
                else:
                    out.append(f"{self.path}: {n} {what}{'s' if n > 1 else ''} left aside: {reason} "
                               f"(first: packet {first}); the other messages are read")
        return out

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.messages.items())) or "no RRC message"
        aside = ", ".join(f"{v[0]} {k}" for k, v in sorted(self.skipped.items()))
        return f"{self.packets} packets; {kinds}" + (f"; left aside: {aside}" if aside else "")


def _count(skipped: dict, reason: str, pkt: int) -> None:
    c = skipped.get(reason)
    if c is None:
        skipped[reason] = [1, pkt]
    else:
        c[0] += 1


def _packets(path: str, skipped: dict):
    """(packet number, time, link type, bytes) of every packet; a capture cut short ends the
    iteration with a 'capture cut short' count (at the packet that could not be read)."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise RadioLogError(f"{path}: {exc.strerror}") from exc
    with fh:
        head = fh.read(24)
        if head[:4] == _PCAPNG_MAGIC:
            fh.seek(0)
            yield from _pcapng(path, fh, skipped)
            return
        if len(head) < 24 or head[:4] not in _PCAP_MAGIC:
            raise RadioLogError(f"{path}: not a readable pcap/pcapng file (no pcap header)")
        endian = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        scale = 1e-9 if head[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
        linktype = struct.unpack_from(endian + "I", head, 20)[0] & 0x0FFFFFFF
        rec = struct.Struct(endian + "IIII")
        n = 0
        while True:
            h = fh.read(16)
            if not h:
                return
            n += 1
            if len(h) < 16:
                _count(skipped, "capture cut short", n)
                return
            sec, frac, caplen, _ = rec.unpack(h)
            buf = fh.read(caplen)
            if len(buf) < caplen or caplen > 1 << 24:
                _count(skipped, "capture cut short", n)
                return
            yield n, sec + frac * scale, linktype, buf


def _pcapng(path: str, fh, skipped: dict):
    import dpkt

    size = os.fstat(fh.fileno()).st_size
    try:
        reader = dpkt.pcapng.Reader(fh)
    except (ValueError, dpkt.dpkt.Error, struct.error) as exc:
        raise RadioLogError(f"{path}: not a readable pcap/pcapng file ({exc})") from None
    linktype = reader.datalink()
    n = 0
    it = iter(reader)
    while True:
        try:
            ts, buf = next(it)
        except StopIteration:
            if fh.tell() < size:
                _count(skipped, "capture cut short", n + 1)
            return
        except (ValueError, struct.error, dpkt.dpkt.Error, EOFError):
            _count(skipped, "capture cut short", n + 1)
            return
        n += 1
        yield n, float(ts), linktype, buf


def _udp(linktype: int, buf: bytes) -> tuple[int, int, int, bytes] | None:
    """(sport, dport, UDP length, payload as captured) of an IPv4/IPv6 UDP packet, else None."""
    off = 0
    if linktype == _ETHERNET:
        if len(buf) < 14:
            return None
        etype = struct.unpack_from(">H", buf, 12)[0]
        off = 14
        while etype in (0x8100, 0x88A8) and len(buf) >= off + 4:
            etype = struct.unpack_from(">H", buf, off + 2)[0]
            off += 4
        if etype not in (0x0800, 0x86DD):
            return None
    elif linktype in (_NULL, _LOOP):
        off = 4
    elif linktype == _SLL:
        off = 16
    elif linktype == _SLL2:
        off = 20
    elif linktype not in _RAW:
        return None
    if len(buf) < off + 1:
        return None
    ver = buf[off] >> 4
    if ver == 4:
        if len(buf) < off + 20:
            return None
        ihl = (buf[off] & 0x0F) * 4
        if buf[off + 9] != 17 or struct.unpack_from(">H", buf, off + 6)[0] & 0x3FFF:
            return None  # not UDP, or a fragment
        off += ihl
    elif ver == 6:
        if len(buf) < off + 40 or buf[off + 6] != 17:
            return None
        off += 40
    else:
        return None
    if len(buf) < off + 8:
        return None
    sport, dport, ulen = struct.unpack_from(">HHH", buf, off)
    return sport, dport, ulen, buf[off + 8:]


def read_gsmtap(path: str | os.PathLike) -> Signalling:
    """Read the RRC signalling of a GSMTAP capture (see the module doc)."""
    from hsrtcp.context.rrc import Tracker

    file = os.fspath(path)
    skipped: dict[str, list[int]] = {}
    tracker = Tracker(os.path.basename(file), skipped)
    order = Reorder()  # diag timestamps are not monotone: the messages in time order
    packets = 0
    for n, ts, linktype, buf in _packets(file, skipped):
        packets = n
        u = _udp(linktype, buf)
        if u is None:
            continue
        sport, dport, ulen, data = u
        if GSMTAP_PORT not in (sport, dport):
            continue
        if ulen < 8 or len(data) < ulen - 8:
            _count(skipped, "truncated UDP payload", n)
            continue
        data = data[:ulen - 8]
        if len(data) < 4:
            _count(skipped, "truncated GSMTAP header", n)
            continue
        version = data[0]
        arfcn = None
        if version == 2:
            hlen = data[1] * 4
            if hlen < 16 or len(data) < hlen:
                _count(skipped, "truncated GSMTAP header", n)
                continue
            gtype, sub = data[2], data[12]
            if gtype != V2_LTE_RRC:
                _count(skipped, "other GSMTAP (not LTE/NR RRC)" if gtype in V2_KNOWN_TYPES
                       else "unknown GSMTAP type", n)
                continue
            channel = V2_LTE_CHANNELS.get(sub)
            if channel is None:
                _count(skipped, "RRC broadcast, paging or other channel" if sub < V2_LTE_SUBTYPES
                       else "unknown GSMTAP type", n)
                continue
            rat = "LTE"
            a = struct.unpack_from(">H", data, 4)[0] & 0x3FFF
            arfcn = a or None  # 0: the writer did not give it (QCSuper)
        elif version == 3:
            hlen = struct.unpack_from(">H", data, 2)[0] * 4
            if len(data) < 8 or hlen < 8 or len(data) < hlen:
                _count(skipped, "truncated GSMTAP header", n)
                continue
            gtype, sub = struct.unpack_from(">HH", data, 4)
            if gtype == V3_LTE_RRC:
                rat, channel = "LTE", V3_LTE_CHANNELS.get(sub)
            elif gtype == V3_NR_RRC:
                rat, channel = "NR", V3_NR_CHANNELS.get(sub)
            else:
                _count(skipped, "other GSMTAP (not LTE/NR RRC)" if gtype in V3_KNOWN_TYPES
                       else "unknown GSMTAP type", n)
                continue
            if channel is None:
                _count(skipped, "RRC broadcast, paging or other channel", n)
                continue
            arfcn = _v3_arfcn(data[8:hlen])
        else:
            _count(skipped, "unknown GSMTAP version", n)
            continue
        ready = order.push(ts, n, (rat, channel, data[hlen:], arfcn))
        if ready is None:
            _count(skipped, LATE, n)
            continue
        for m in ready:
            tracker.feed(m[1], m[0], *m[2])
    for m in order.flush():
        tracker.feed(m[1], m[0], *m[2])
    frame, handoffs = tracker.tables()
    return Signalling(file, frame, handoffs, packets, dict(tracker.messages), skipped)


def _v3_arfcn(meta: bytes) -> int | None:
    """The ARFCN of GSMTAP v3 metadata (tag, length, value), when present."""
    i = 0
    while i + 4 <= len(meta):
        tag, ln = struct.unpack_from(">HH", meta, i)
        if tag == V3_TAG_ARFCN and ln == 4 and i + 8 <= len(meta):
            return struct.unpack_from(">I", meta, i + 4)[0]
        i += 4 + ln + (-ln % 4)
    return None


# ------------------------------------------------------------------------------------------
# writing


def gsmtap_v2(channel: str, payload: bytes, arfcn: int = 0) -> bytes:
    """A GSMTAP v2 header (LTE RRC) and ``payload``; uplink channels set the uplink flag."""
    sub = {v: k for k, v in V2_LTE_CHANNELS.items()}[channel]
    up = channel.startswith("UL")
    return struct.pack(">BBBBHbbIBBBB", 2, 4, V2_LTE_RRC, 0, (arfcn & 0x3FFF) | (0x4000 if up else 0),
                       0, 0, 0, sub, 0, 0, 0) + payload


def gsmtap_v3(rat: str, channel: str, payload: bytes, arfcn: int | None = None) -> bytes:
    """A GSMTAP v3 header (LTE or NR RRC), with the ARFCN as metadata when given."""
    chans = V3_NR_CHANNELS if rat == "NR" else V3_LTE_CHANNELS
    sub = {v: k for k, v in chans.items()}[channel]
    meta = struct.pack(">HHI", V3_TAG_ARFCN, 4, arfcn) if arfcn is not None else b""
    return struct.pack(">BBHHH", 3, 0, (8 + len(meta)) // 4, V3_NR_RRC if rat == "NR" else V3_LTE_RRC,
                       sub) + meta + payload


def udp_ipv4(payload: bytes, port: int = GSMTAP_PORT) -> bytes:
    """An IPv4/UDP datagram 127.0.0.1 -> 127.0.0.1:``port`` carrying ``payload``."""
    udp = struct.pack(">HHHH", port, port, 8 + len(payload), 0) + payload
    return struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, b"\x7f\x00\x00\x01",
                       b"\x7f\x00\x00\x01") + udp


def write_gsmtap(path: str | os.PathLike, messages) -> int:
    """Write a pcap (link type raw IPv4, as QCSuper's) of GSMTAP datagrams; ``messages``:
    iterable of (time, rat, channel, payload) — LTE as GSMTAP v2, NR as v3 — or (time, bytes)
    for a ready IP packet. Returns the number of packets (the iterable is consumed once: a
    generator writes any number in flat memory)."""
    import dpkt

    n = 0
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=228, snaplen=65535)
        for m in messages:
            if len(m) == 2:
                ts, pkt = m
            else:
                ts, rat, channel, payload = m[:4]
                arfcn = m[4] if len(m) > 4 else None
                g = gsmtap_v3(rat, channel, payload, arfcn) if rat == "NR" else gsmtap_v2(channel, payload, arfcn or 0)
                pkt = udp_ipv4(g)
            w.writepkt(pkt, ts=ts)
            n += 1
    return n
