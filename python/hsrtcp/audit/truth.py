"""The truth of every retransmission timeout of a connection, from its two captures.

Built on :mod:`hsrtcp.testing.truth` (an independent dpkt reader: which data segment arrived,
which pure ACK was lost), never on the analyzer being audited. Definitions
(docs/accuracy.md, "Truth"):

RTO retransmission
    A server retransmission of the segment holding ``snd_una`` (the highest cumulative ACK
    that had *arrived at the server*) sent at least the floor after the previous
    transmission of that segment (Linux arms the timer from the head's send time or from a
    later advancing ACK: either is at least the minimum RTO after that send), not within
    0.5 ms after an ACK arrival (an ACK-triggered fast retransmit), and not within the floor
    after a duplicate ACK that was the last ACK to arrive (a RACK reordering-timer resend);
    so only the retransmission timer can have sent it. The floor is 0.9 × the minimum RTO (Linux 200 ms
    unless a route sets ``rto_min``). A tail loss probe sent with one segment outstanding also
    waits that long; the kernel's own RTO count (``tcpi_total_rto``) is set beside the count
    of expirations to expose such cases (``Episodes.kernel_check``).

Episode (timeout sequence, M10)
    The first RTO retransmission of a segment and its back-offs (RTO retransmissions of the
    same segment before an ACK covering it arrived). ``expirations`` = 1 + back-offs.

Spurious (M12)
    Every byte of the first RTO retransmission had reached the phone in a transmission sent
    before it (whether the retransmission itself arrived or not): the original was not lost.

Needless back-off
    A back-off whose every byte had reached the phone in a transmission sent before it: the
    ACK of an arrived copy was lost or late. A sequence with one is not spurious when its
    first re-send was needed (docs/accuracy.md, the first false alarms of the dropped-outage
    campaign), but a duplicate reached the phone.

Needless retransmission
    Any retransmission (of any class) whose every byte had reached the phone in a
    transmission sent before it (:func:`needless`; by class in connections.csv).

Cause (M14)
    ``ack_loss`` when the phone had sent, before the first RTO retransmission left (phone time
    mapped onto the server clock), at least one pure ACK covering the segment (cumulatively
    or by a SACK block) and none of those ever reached the server; ``rto_estimation``
    otherwise (an ACK arrived too late, or the phone acknowledged only after the timeout).

M13 packets
    For a spurious episode: the server's retransmissions (any segment, back-offs included)
    from the first RTO retransmission until the first ACK arrival after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hsrtcp.testing.truth import ConnectionTruth, Truth

RTO_MIN_S = 0.2  # Linux TCP_RTO_MIN
FLOOR_SHARE = 0.9  # capture timestamps of a timer that fired at the minimum can come early
ACK_TRIGGER_S = 0.0005  # a retransmission this soon after an ACK arrival was sent by that ACK
KERNEL_SLACK_S = 0.002  # tcpdump stamps the packet just after the sample that saw the timer fire


@dataclass(slots=True)
class Episode:
    """One timeout sequence as the two captures show it (times: server clock, s)."""

    t_first: float  # the first RTO retransmission left the server
    t_end: float | None  # an ACK covering the segment arrived at the server (None: never)
    seq: int  # the segment, relative to the server ISN
    end: int
    expirations: int = 1
    spurious: bool = False
    cause: str | None = None  # spurious only: "ack_loss" or "rto_estimation"
    first_retrans_arrived: bool = False
    retrans_arrived: bool = False  # some RTO retransmission of the episode reached the phone
    packets: int = 0  # M13 numerator when spurious
    needless_backoffs: int = 0  # back-offs whose bytes had all reached the phone before


@dataclass
class ConnectionEpisodes:
    conn: ConnectionTruth
    episodes: list[Episode] = field(default_factory=list)

    @property
    def expirations(self) -> int:
        return sum(e.expirations for e in self.episodes)


class _Covered:
    """Byte ranges that reached the phone, each tagged with the send time of its transmission."""

    def __init__(self, conn: ConnectionTruth):
        self.arrived = sorted(((d.seq, d.seq + d.length, d.ts_sent) for d in conn.data if d.arrived),
                              key=lambda x: x[0])

    def delivered_before(self, s: int, e: int, t: float) -> bool:
        """Whether [s, e) is covered by arrived transmissions sent before ``t``."""
        pos = s
        for lo, hi, ts in self.arrived:  # sorted by start; test-sized connections
            if lo > pos:
                break
            if ts < t and hi > pos:
                pos = hi
                if pos >= e:
                    return True
        return pos >= e


def episodes(conn: ConnectionTruth, *, client_offset_s: float = 0.0,
             rto_min_s: float = RTO_MIN_S,
             kernel_windows: list[tuple[float, float, int]] | None = None) -> ConnectionEpisodes:
    """The timeout sequences of one connection with their truth (definitions above).

    ``client_offset_s`` = phone clock − server clock (subtracted from phone times).
    ``kernel_windows``: when the server's TCP_INFO was sampled (a lab bundle), the windows
    (t_after, t_before, n) in which ``tcpi_total_rto`` grew by n; the RTO retransmissions are
    then the first n retransmissions of the head segment sent in each window (the kernel's
    own word, which the timing rule only approximates when the RTT is long), and the rule
    above is not used."""
    floor = FLOOR_SHARE * rto_min_s
    # server-side timeline: ACK arrivals (pure ACKs that arrived) and data transmissions
    timeline: list[tuple[float, int, object]] = []
    for a in conn.acks:
        if a.arrived and a.ts_arrived is not None:
            timeline.append((a.ts_arrived, 0, a))
    for d in conn.data:
        timeline.append((d.ts_sent, 1, d))
    timeline.sort(key=lambda x: (x[0], x[1]))
    covered = _Covered(conn)
    windows = None if kernel_windows is None else [list(w) for w in kernel_windows]
    out = ConnectionEpisodes(conn)
    snd_una = 1
    last_adv_t: float | None = None  # last ACK that advanced snd_una
    last_ack_t: float | None = None
    last_sent: dict[int, float] = {}
    open_ep: Episode | None = None
    for t, kind, obj in timeline:
        if kind == 0:
            last_ack_t = t
            if obj.ack > snd_una:
                snd_una = obj.ack
                last_adv_t = t
            if open_ep is not None and obj.ack >= open_ep.end and open_ep.t_end is None:
                open_ep.t_end = t
            continue
        d = obj
        prev = last_sent.get(d.seq)
        last_sent[d.seq] = t
        if not d.retrans or not (d.seq <= snd_una < d.seq + d.length):
            continue
        if windows is not None:
            w = next((w for w in windows if w[0] < t <= w[1] + KERNEL_SLACK_S and w[2] > 0), None)
            if w is None:
                continue
            w[2] -= 1
        else:
            quiet_ack = last_ack_t is None or (t - last_ack_t > ACK_TRIGGER_S and (
                last_ack_t == last_adv_t or t - last_ack_t >= floor))
            quiet_seg = prev is None or t - prev >= floor
            if not (quiet_ack and quiet_seg):
                continue
        if open_ep is not None and open_ep.seq == d.seq and open_ep.t_end is None:
            open_ep.expirations += 1  # a back-off of the same segment
            open_ep.retrans_arrived |= d.arrived
            open_ep.needless_backoffs += covered.delivered_before(d.seq, d.seq + d.length, t)
            continue
        ep = Episode(t_first=t, t_end=None, seq=d.seq, end=d.seq + d.length,
                     first_retrans_arrived=d.arrived, retrans_arrived=d.arrived)
        ep.spurious = covered.delivered_before(ep.seq, ep.end, t)
        if ep.spurious:
            ep.cause = _cause(conn, ep, client_offset_s)
        out.episodes.append(ep)
        open_ep = ep
    for ep in out.episodes:
        if ep.spurious:
            ep.packets = _m13_packets(conn, ep)
    return out


def needless(conn: ConnectionTruth) -> list[tuple]:
    """Every data retransmission of the connection as (send time, seq, needless): needless
    when every byte had reached the phone in a transmission sent before it (the M12 test of
    an RTO re-send, applied to any re-send: its original was not lost)."""
    covered = _Covered(conn)
    return [(d.ts_sent, d.seq, covered.delivered_before(d.seq, d.seq + d.length, d.ts_sent))
            for d in conn.data if d.retrans]


def _cause(conn: ConnectionTruth, ep: Episode, offset: float) -> str:
    covering = [a for a in conn.acks if a.ts_sent - offset < ep.t_first and (
        a.ack >= ep.end or any(lo <= ep.seq and hi >= ep.end for lo, hi in a.sack))]
    if covering and not any(a.arrived for a in covering):
        return "ack_loss"
    return "rto_estimation"


def _m13_packets(conn: ConnectionTruth, ep: Episode) -> int:
    first_ack = min((a.ts_arrived for a in conn.acks
                     if a.arrived and a.ts_arrived is not None and a.ts_arrived > ep.t_first),
                    default=float("inf"))
    return sum(1 for d in conn.data if d.retrans and ep.t_first <= d.ts_sent < first_ack)


def all_episodes(truth: Truth, *, client_offset_s: float = 0.0, rto_min_s: float = RTO_MIN_S,
                 kernel_windows: dict[int, list] | None = None) -> list[ConnectionEpisodes]:
    """Episodes of every connection; ``kernel_windows`` by client port (epoch 0 only: the lab
    opens each connection from a new port)."""
    kw = kernel_windows or {}
    return [episodes(c, client_offset_s=client_offset_s, rto_min_s=rto_min_s,
                     kernel_windows=kw.get(c.client_port) if c.epoch == 0 and c.client_port in kw else None)
            for c in truth.connections]



def dupack_verdicts(c: ConnectionTruth) -> list[str | None]:
    """Per pure ACK the phone sent (``c.acks``), by RFC 5681 at the sender: None when it is no
    candidate (not the highest ACK number so far with the previous ACK's window), ``dupack``
    when it arrived while the server had sent data beyond its number (the server capture says
    what it had sent then), ``not`` when nothing was outstanding, ``lost`` when it never
    arrived (no such moment: either)."""
    import bisect

    sent = sorted((d.ts_sent, d.seq + d.length) for d in c.data)
    times = [t for t, _ in sent]
    top, hi = [], 0
    for _, e in sent:
        hi = max(hi, e)
        top.append(hi)
    out: list[str | None] = []
    highest, window = None, None
    for a in c.acks:
        cand = highest is not None and a.ack == highest and a.window == window
        highest = a.ack if highest is None else max(highest, a.ack)
        window = a.window
        if not cand:
            out.append(None)
        elif not a.arrived:
            out.append("lost")
        else:
            i = bisect.bisect_left(times, a.ts_arrived)  # data that left before the ACK arrived
            out.append("dupack" if i and top[i - 1] > a.ack else "not")
    return out


def dupacks(c: ConnectionTruth) -> tuple[int, int]:
    """(DupACKs, candidates lost) the phone sent (:func:`dupack_verdicts`)."""
    v = dupack_verdicts(c)
    return v.count("dupack"), v.count("lost")
