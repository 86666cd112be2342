"""Hand-made capture pairs whose truth is constructed: a download in which the server's
sends and every packet's fate (delivered after a given delay, or lost) are planted, and a
receiver that answers like RFC 793/2018/2883/7323 say (one ACK per segment, SACK and D-SACK
blocks, TS.Recent from the segment holding Last.ACK.sent). Written with dpkt and
hsrtcp.testing.pcapio.write_pcap: the phone's capture sees server packets when they arrive
and its own when it sends them; the server's the other way round.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import dpkt

from hsrtcp.testing.pcapio import write_pcap

CLIENT, SERVER = "10.0.1.2", "10.0.2.2"
CPORT, SPORT = 40000, 5201
C_ISN, S_ISN = 5000, 900_000
MSS = 1000
T0 = 1_795_000_000.0


def _opts(*, mss=None, sack_ok=False, ts=None, sack=()) -> bytes:
    b = b""
    if mss is not None:
        b += struct.pack("!BBH", 2, 4, mss)
    if sack_ok:
        b += b"\x01\x01\x04\x02"
    if ts is not None:
        b += b"\x01\x01" + struct.pack("!BBII", 8, 10, *ts)
    if sack:
        b += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(sack)) + b"".join(
            struct.pack("!II", lo, hi) for lo, hi in sack)
    return b + b"\x01" * (-len(b) % 4)


@dataclass
class Pair:
    """Packets of one connection with their send time, arrival time (None = lost) and sender."""

    sack: bool = True
    ts: bool = True
    owd: float = 0.02
    server_frames: list = field(default_factory=list)
    client_frames: list = field(default_factory=list)
    ip_id: dict = field(default_factory=lambda: {"c": 100, "s": 7000})
    # receiver state
    rcv_nxt: int = 1
    ooo: list = field(default_factory=list)
    ts_recent: int = 0
    last_ack_sent: int = 1
    uplink_free: float = 0.0  # the uplink is FIFO: an ACK never overtakes an earlier one
    queue_s: float = 0.0  # a standing queue: data sent after queue_from waits this long more
    queue_from: float = float("inf")

    def _tsval(self, side: str, t: float) -> int:
        return int((t - T0) * 1000) + (10_000 if side == "s" else 50_000)

    def _frame(self, side, seq, ack, flags, payload, opts) -> bytes:
        src, dst, sp, dp = (SERVER, CLIENT, SPORT, CPORT) if side == "s" else (CLIENT, SERVER, CPORT, SPORT)
        tcp = dpkt.tcp.TCP(sport=sp, dport=dp, seq=seq % 2**32, ack=ack % 2**32, flags=flags, win=65535,
                           opts=opts, data=payload)
        tcp.off = 5 + len(opts) // 4
        self.ip_id[side] += 1
        ip = dpkt.ip.IP(src=bytes(map(int, src.split("."))), dst=bytes(map(int, dst.split("."))),
                        p=dpkt.ip.IP_PROTO_TCP, id=self.ip_id[side], ttl=64, data=tcp)
        ip.len = 20 + len(bytes(tcp))
        eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
        return bytes(eth)

    def _put(self, side, t_send, t_arr, frame):
        own, other = (self.server_frames, self.client_frames) if side == "s" else (self.client_frames, self.server_frames)
        own.append((round(t_send * 1e9), frame))
        if t_arr is not None:
            other.append((round(t_arr * 1e9), frame))

    def handshake(self, t: float) -> None:
        ts = (self._tsval("c", t), 0) if self.ts else None
        self._put("c", t, t + self.owd, self._frame("c", C_ISN, 0, dpkt.tcp.TH_SYN, b"",
                                                    _opts(mss=MSS, sack_ok=self.sack, ts=ts)))
        t1 = t + self.owd
        ts1 = (self._tsval("s", t1), ts[0]) if self.ts else None
        self._put("s", t1, t1 + self.owd, self._frame("s", S_ISN, C_ISN + 1, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK,
                                                      b"", _opts(mss=MSS, sack_ok=self.sack, ts=ts1)))
        t2 = t1 + self.owd
        self.ts_recent = ts1[0] if self.ts else 0
        self._ack(t2, t2 + self.owd)

    def _ack(self, t: float, t_arr: float | None, sack=()) -> None:
        ts = (self._tsval("c", t), self.ts_recent) if self.ts else None
        if t_arr is not None:
            t_arr = max(t_arr, self.uplink_free)
            self.uplink_free = t_arr
        self._put("c", t, t_arr, self._frame("c", C_ISN + 1, S_ISN + self.rcv_nxt, dpkt.tcp.TH_ACK, b"",
                                             _opts(ts=ts, sack=sack)))
        self.last_ack_sent = self.rcv_nxt

    def data(self, t: float, rel: int, *, lost: bool = False, ack_delay: float | None = None,
             ack_lost: bool = False) -> None:
        """The server sends [rel, rel + MSS) at t; unless ``lost`` it arrives one OWD later and
        the phone acknowledges it at once (its ACK takes ``ack_delay`` or one OWD, or is lost)."""
        ts = (self._tsval("s", t), self.ts_recent) if self.ts else None
        t_arr = None if lost else t + self.owd + (self.queue_s if t > self.queue_from else 0.0)
        self._put("s", t, t_arr, self._frame("s", S_ISN + rel, C_ISN + 1, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH,
                                             b"x" * MSS, _opts(ts=ts)))
        if lost:
            return
        end = rel + MSS
        sack = ()
        if end <= self.rcv_nxt:  # a duplicate: D-SACK (RFC 2883), TS.Recent unchanged (RFC 7323)
            sack = ((S_ISN + rel, S_ISN + end),) if self.sack else ()
        elif rel <= self.rcv_nxt:
            if self.ts and rel <= self.last_ack_sent < end:
                self.ts_recent = ts[0]
            self.rcv_nxt = end
            while self.ooo and self.ooo[0][0] <= self.rcv_nxt:
                self.rcv_nxt = max(self.rcv_nxt, self.ooo.pop(0)[1])
        else:
            self.ooo = sorted(self.ooo + [(rel, end)])
            sack = tuple((S_ISN + a, S_ISN + b) for a, b in self.ooo[:3]) if self.sack else ()
        delay = self.owd if ack_delay is None else ack_delay
        self._ack(t_arr, None if ack_lost else t_arr + delay, sack)

    def close(self, t: float, rel: int) -> None:
        """The server's FIN at relative sequence ``rel``; the phone answers FIN-ACK; last ACK."""
        ts = (self._tsval("s", t), self.ts_recent) if self.ts else None
        self._put("s", t, t + self.owd, self._frame("s", S_ISN + rel, C_ISN + 1,
                                                    dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK, b"", _opts(ts=ts)))
        t1 = t + self.owd
        self.rcv_nxt = rel + 1
        if self.ts:
            self.ts_recent = ts[0]
        ts1 = (self._tsval("c", t1), self.ts_recent) if self.ts else None
        self._put("c", t1, t1 + self.owd, self._frame("c", C_ISN + 1, S_ISN + rel + 1,
                                                      dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK, b"", _opts(ts=ts1)))
        t2 = t1 + self.owd
        ts2 = (self._tsval("s", t2), ts1[0]) if self.ts else None
        self._put("s", t2, None, self._frame("s", S_ISN + rel + 1, C_ISN + 2, dpkt.tcp.TH_ACK, b"", _opts(ts=ts2)))

    def write(self, directory: Path, name: str) -> Path:
        """NAME.client.pcap and NAME.server.pcap in ``directory``; returns the client path."""
        for side, frames in (("client", self.client_frames), ("server", self.server_frames)):
            write_pcap(directory / f"{name}.{side}.pcap", sorted(frames, key=lambda f: f[0]), snaplen=128)
        return directory / f"{name}.client.pcap"


def five_timeouts(directory: Path, *, sack: bool = True, ts: bool = True, name: str = "planted",
                  queue_s: float = 0.0) -> Path:
    """Five timeout sequences, each planted at the tail of a two-segment burst (times in s
    after T0, one-way delay 20 ms, RTO retransmissions 400 ms after the original):

    1. 0.5 s: the second segment is lost; its RTO retransmission arrives: not spurious.
    2. 1.5 s: both arrive, the ACK of the second is lost: spurious, ACK loss.
    3. 2.5 s: both arrive, the ACK of the second waits 500 ms on the uplink (and the
       D-SACK after it): spurious, RTO estimation.
    4. 3.5 s: both arrive, the ACK of the second waits 600 ms; the RTO retransmission is lost:
       spurious (the original was not lost), RTO estimation; the phone never sees a repeat.
    5. 4.5 s: the second segment and its first RTO retransmission are lost, the back-off
       (1.1 s) arrives: not spurious, two expirations.

    ``queue_s``: every data segment but the first waits that much longer on the downlink (a
    standing queue; the fates and the episodes stay as above).
    """
    p = Pair(sack=sack, ts=ts, queue_s=queue_s, queue_from=T0 + 0.1)
    p.handshake(T0)
    rel = 1
    for k in range(3):  # a clean start
        p.data(T0 + 0.1 + 0.001 * k, rel)
        rel += MSS
    for start, plan in ((0.5, "lost"), (1.5, "ack_lost"), (2.5, "ack_late"), (3.5, "retrans_lost"),
                        (4.5, "backoff")):
        t = T0 + start
        p.data(t, rel)
        second = rel + MSS
        if plan == "lost":
            p.data(t + 0.001, second, lost=True)
            p.data(t + 0.4, second)
        elif plan == "ack_lost":
            p.data(t + 0.001, second, ack_lost=True)
            p.data(t + 0.4, second)
        elif plan == "ack_late":
            p.data(t + 0.001, second, ack_delay=0.5)
            p.data(t + 0.4, second)
        elif plan == "retrans_lost":
            p.data(t + 0.001, second, ack_delay=0.6)
            p.data(t + 0.4, second, lost=True)
        elif plan == "backoff":
            p.data(t + 0.001, second, lost=True)
            p.data(t + 0.4, second, lost=True)
            p.data(t + 1.1, second)
        rel = second + MSS
    p.close(T0 + 6.5, rel)
    return p.write(directory, name)
