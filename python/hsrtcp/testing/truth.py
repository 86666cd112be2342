"""Ground truth from two captures of the same TCP connections: one at the server (sender of the
bulk data) and one at the client (receiver), as made by :mod:`hsrtcp.testing.netbed`.

The truth is computed with the independent reader of :mod:`hsrtcp.pcapio` (dpkt),
never with the analyzer it checks. Definitions (docs/metrics.md M8, M9, M12):

Connections
    A connection is a 4-tuple plus the client's initial sequence number (ISN) from its SYN:
    a SYN (without ACK) carrying a new ISN on a known 4-tuple starts a new *epoch*, so a
    4-tuple reused after close yields two connections. The *client* is the SYN sender, the
    *server* the SYN receiver; truth is computed for the server→client data direction and
    the client→server pure ACKs. Connections are matched between the two captures by
    (client address, client port, server address, server port, client ISN).

Data segments (server capture)
    Every server→client packet with TCP payload (length from the IP header, not the
    captured length). Sequence numbers are made relative to the server's ISN and unwrapped
    to 64 bits. A data segment is a *retransmission* if any of its bytes was sent before
    (its start lies below the highest sequence end sent earlier) — the sender-side
    definition that Linux counts in ``tcpi_total_retrans`` (one per retransmitted packet,
    offloads off).

Arrival (both captures)
    A data segment *arrived* if the client capture holds the same segment: same relative
    sequence, payload length and IPv4 identification (Linux increments the IP ID per packet
    of a socket, so a retransmission differs from its original). For IPv6, which has no IP
    ID, the TCP timestamp value stands in; sends whose key still repeats are counted in
    ``ambiguous_data`` and matched using the path's FIFO order (the testbed path does not
    reorder): of several same-key copies, the earlier ones are taken as lost (see
    :func:`_match`). Client copies that match no server segment
    are counted in ``unmatched_client_data`` (0 unless a capture lost packets).

Lost data (M8)
    ``data_lost`` = data segments sent at the server that never arrived at the client;
    ``p_data = data_lost / data_sent`` (transmissions incl. retransmissions in both).

Pure ACKs (M9)
    A client→server packet with the ACK flag, no payload and no SYN, FIN or RST, taken from
    the client capture (sent) and matched in the server capture (arrived) by (ack number,
    window, IPv4 ID) — IPv6: (ack, window, TSval, SACK blocks), FIFO for repeats.
    ``acks_lost`` = sent − arrived; ``p_ack = acks_lost / acks_sent``.

Spurious retransmission (M12, generalised to any retransmission)
    A retransmitted data segment that arrived at the client when every one of its bytes had
    already arrived there earlier (in an original or another copy). Whether the
    retransmission was triggered by an RTO is the analyzer's classification; this module
    gives the fate.

Cause of a spurious retransmission (M14, two vantages)
    ``ack_loss`` if the client had sent an ACK covering the segment (cumulatively or by
    SACK) before the server retransmitted it, on aligned clocks, and none of those ACKs
    reached the server; otherwise ``rto_estimation`` (see :func:`_spurious_causes`).

Handshake and FIN retransmissions
    ``syn_retrans`` = client SYNs of the connection − 1 (client capture);
    ``synack_retrans`` = server SYN-ACKs − 1 (server capture); ``fin_retrans`` = server
    FIN-only segments whose FIN was sent before. Linux counts SYN-ACK and FIN retransmissions
    in the server's ``tcpi_total_retrans`` too, so
    ``sender_retrans_total = data_retrans + synack_retrans + fin_retrans``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hsrtcp.pcapio import TcpPacket, read_tcp

MOD = 1 << 32


def _near(seq: int, ref_seq: int, ref_rel: int) -> int:
    """Relative value of ``seq`` given that ``ref_seq`` has relative value ``ref_rel``."""
    d = (seq - ref_seq) % MOD
    return ref_rel + (d - MOD if d >= MOD // 2 else d)


class _Unwrap:
    """Map 32-bit sequence numbers to 64-bit offsets from an ISN (handles wrap both ways)."""

    def __init__(self, isn: int):
        self.isn = isn
        self.last = 0

    def __call__(self, seq: int) -> int:
        d = (seq - self.isn - self.last) % MOD
        if d >= MOD // 2:
            d -= MOD
        self.last += d
        return self.last


@dataclass(slots=True)
class DataSegment:
    """One server→client data transmission (times in seconds, capture clocks)."""

    ts_sent: float
    seq: int  # relative to the server ISN: the first payload byte has seq 1
    length: int
    ip_id: int | None
    retrans: bool
    arrived: bool = False
    ts_arrived: float | None = None
    spurious: bool = False  # arrived, and all its bytes had arrived before
    spurious_cause: str | None = None  # "ack_loss" or "rto_estimation" (M14), spurious only
    prev_sent_ts: float | None = None  # last earlier transmission starting at the same seq


@dataclass(slots=True)
class AckSegment:
    """One client→server pure ACK."""

    ts_sent: float
    ack: int  # relative to the server ISN
    window: int
    ip_id: int | None
    arrived: bool = False
    ts_arrived: float | None = None
    sack: tuple[tuple[int, int], ...] = ()  # SACK blocks relative to the server ISN


@dataclass
class ConnectionTruth:
    client: str
    client_port: int
    server: str
    server_port: int
    client_isn: int
    epoch: int  # 0 for the first connection on this 4-tuple, 1 for the next, …
    data: list[DataSegment] = field(default_factory=list)
    acks: list[AckSegment] = field(default_factory=list)
    syn_retrans: int = 0
    synack_retrans: int = 0
    fin_retrans: int = 0
    ambiguous_data: int = 0
    ambiguous_acks: int = 0
    unmatched_client_data: int = 0
    unmatched_server_acks: int = 0
    seen_at_client: bool = True
    server_packets_sent: int = 0  # every packet of the connection the server capture saw leave
    server_packets_received: int = 0  # … and arrive
    t_first_server: float | None = None  # first packet of the connection in the server capture
    t_first_client: float | None = None  # … in the client capture (client clock)

    @property
    def data_sent(self) -> int:
        return len(self.data)

    @property
    def data_lost(self) -> int:
        return sum(1 for d in self.data if not d.arrived)

    @property
    def data_retrans(self) -> int:
        return sum(1 for d in self.data if d.retrans)

    @property
    def retrans_lost(self) -> int:
        return sum(1 for d in self.data if d.retrans and not d.arrived)

    @property
    def spurious_retrans(self) -> int:
        return sum(1 for d in self.data if d.spurious)

    @property
    def spurious_ack_loss(self) -> int:
        return sum(1 for d in self.data if d.spurious_cause == "ack_loss")

    @property
    def spurious_rto_estimation(self) -> int:
        return sum(1 for d in self.data if d.spurious_cause == "rto_estimation")

    @property
    def acks_sent(self) -> int:
        return len(self.acks)

    @property
    def acks_lost(self) -> int:
        return sum(1 for a in self.acks if not a.arrived)

    @property
    def sender_retrans_total(self) -> int:
        return self.data_retrans + self.synack_retrans + self.fin_retrans

    @property
    def payload_bytes_sent(self) -> int:
        return sum(d.length for d in self.data)

    @property
    def p_data(self) -> float | None:
        return self.data_lost / self.data_sent if self.data else None

    @property
    def p_ack(self) -> float | None:
        return self.acks_lost / self.acks_sent if self.acks else None

    def series(self, bin_s: float = 1.0) -> list[dict]:
        """Per-bin truth, bins aligned to the connection's first packet at each vantage.

        For bin k: ``t_rel`` = k·bin_s; ``data_sent`` and ``data_lost`` count server data
        transmissions by send time (server clock, from ``t_first_server``) and ``loss_rate``
        is their ratio (M6; None when nothing was sent in the bin); ``bytes_received`` and
        ``segments_received`` count data segments arriving at the client by arrival time
        (client clock, from ``t_first_client``), duplicates included (M3 / A3). Empty bins up
        to the last non-empty one are present with zeros.
        """
        sent: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        got: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for d in self.data:
            if self.t_first_server is not None:
                b = sent[int((d.ts_sent - self.t_first_server) // bin_s)]
                b[0] += 1
                b[1] += not d.arrived
            if d.arrived and self.t_first_client is not None:
                g = got[int((d.ts_arrived - self.t_first_client) // bin_s)]
                g[0] += 1
                g[1] += d.length
        n = max(list(sent) + list(got), default=-1) + 1
        return [{"t_rel": k * bin_s, "data_sent": sent[k][0], "data_lost": sent[k][1],
                 "loss_rate": sent[k][1] / sent[k][0] if sent[k][0] else None,
                 "segments_received": got[k][0], "bytes_received": got[k][1]} for k in range(n)]

    def summary(self) -> dict:
        """The counts as a plain dict (JSON-ready); missing rates are None."""
        return {
            "client": self.client, "client_port": self.client_port, "server": self.server,
            "server_port": self.server_port, "client_isn": self.client_isn, "epoch": self.epoch,
            "data_sent": self.data_sent, "data_lost": self.data_lost,
            "data_retrans": self.data_retrans, "retrans_lost": self.retrans_lost,
            "spurious_retrans": self.spurious_retrans,
            "spurious_ack_loss": self.spurious_ack_loss,
            "spurious_rto_estimation": self.spurious_rto_estimation, "acks_sent": self.acks_sent,
            "acks_lost": self.acks_lost, "syn_retrans": self.syn_retrans,
            "synack_retrans": self.synack_retrans, "fin_retrans": self.fin_retrans,
            "sender_retrans_total": self.sender_retrans_total,
            "payload_bytes_sent": self.payload_bytes_sent, "p_data": self.p_data,
            "p_ack": self.p_ack, "ambiguous_data": self.ambiguous_data,
            "ambiguous_acks": self.ambiguous_acks,
            "unmatched_client_data": self.unmatched_client_data,
            "unmatched_server_acks": self.unmatched_server_acks,
            "server_packets_sent": self.server_packets_sent,
            "server_packets_received": self.server_packets_received,
        }


@dataclass
class Truth:
    """Ground truth of all connections found in the server capture, in order of their SYN."""

    connections: list[ConnectionTruth]

    def totals(self) -> dict:
        keys = ("data_sent", "data_lost", "data_retrans", "retrans_lost", "spurious_retrans",
                "spurious_ack_loss", "spurious_rto_estimation",
                "acks_sent", "acks_lost", "syn_retrans", "synack_retrans", "fin_retrans",
                "sender_retrans_total", "payload_bytes_sent", "ambiguous_data",
                "ambiguous_acks", "unmatched_client_data", "unmatched_server_acks",
                "server_packets_sent", "server_packets_received")
        return {k: sum(getattr(c, k) for c in self.connections) for k in keys} | {
            "connections": len(self.connections)}

    def summary(self) -> dict:
        return {"totals": self.totals(), "connections": [c.summary() for c in self.connections]}

    def frames(self):
        """``(data, acks)`` as polars DataFrames, one row per data segment / pure ACK, with the
        connection's identity columns (client, client_port, server, server_port, epoch)."""
        import polars as pl

        rows_d, rows_a = [], []
        for c in self.connections:
            ident = {"client": c.client, "client_port": c.client_port, "server": c.server,
                     "server_port": c.server_port, "epoch": c.epoch}
            rows_d += [ident | asdict(d) for d in c.data]
            rows_a += [ident | {k: v for k, v in asdict(a).items() if k != "sack"} |
                       {"sack_blocks": len(a.sack)} for a in c.acks]
        return pl.DataFrame(rows_d, infer_schema_length=None), pl.DataFrame(rows_a, infer_schema_length=None)

    def to_json(self, path: str | Path | None = None, *, segments: bool = False) -> str:
        d = self.summary()
        if segments:
            for cs, c in zip(d["connections"], self.connections):
                cs["data"] = [asdict(x) for x in c.data]
                cs["acks"] = [asdict(x) for x in c.acks]
        text = json.dumps(d, indent=2) + "\n"
        if path:
            Path(path).write_text(text)
        return text


# --- grouping packets into connections -------------------------------------------------------


@dataclass
class _Conn:
    client: str
    cport: int
    server: str
    sport: int
    client_isn: int
    epoch: int
    packets: list[TcpPacket] = field(default_factory=list)
    server_isn: int | None = None


def _connections(path: str | Path) -> dict[tuple, _Conn]:
    """Split a capture into connections keyed by (client, cport, server, sport, client ISN).

    Packets before any SYN of their 4-tuple are ignored (the truth needs the handshake for
    the ISNs; the testbed always captures it)."""
    by_tuple: dict[frozenset, list[_Conn]] = defaultdict(list)
    out: dict[tuple, _Conn] = {}
    for p in read_tcp(path):
        a, b = (p.src, p.sport), (p.dst, p.dport)
        tkey = frozenset((a, b))
        epochs = by_tuple[tkey]
        if p.syn and not p.has_ack:
            cur = epochs[-1] if epochs else None
            if cur is None or not (cur.client == p.src and cur.cport == p.sport and cur.client_isn == p.seq):
                c = _Conn(p.src, p.sport, p.dst, p.dport, p.seq, len(epochs))
                epochs.append(c)
                out[(c.client, c.cport, c.server, c.sport, c.client_isn)] = c
        if not epochs:
            continue
        c = epochs[-1]
        if p.syn and p.has_ack and p.src == c.server and c.server_isn is None:
            c.server_isn = p.seq
        c.packets.append(p)
    return out


def _ip_or_ts(p: TcpPacket):
    return p.ip_id if p.ip_id is not None else p.tsval


def _match(sends: list, arrivals: list, key_send, key_arr, ts_send, ts_arr, tol: float):
    """Match arrivals to sends with equal keys (lists in capture order).

    Keys are unique for IPv4 (the IP ID differs per packet), so matching is exact there. When
    a key repeats (IPv6 retransmission within the same TSval millisecond), the path's FIFO
    order decides: an arrival may only take a send later in send order than the previous
    match and sent no later than it arrived (plus ``tol``); among those, it takes the latest
    one that still leaves enough same-key sends for the later same-key arrivals — i.e. when
    copies of a key went missing, the earlier copies are the lost ones (a retransmission is
    sent because the original vanished). Returns (pairs as (send index, arrival index),
    number of sends whose key is shared with another send, unmatched arrivals).
    """
    by_key: dict = defaultdict(list)
    for i, s in enumerate(sends):
        by_key[key_send(s)].append(i)
    ambiguous = sum(len(v) for v in by_key.values() if len(v) > 1)
    remaining: dict = defaultdict(int)
    for a in arrivals:
        remaining[key_arr(a)] += 1
    used: set[int] = set()
    pairs, unmatched = [], 0
    last = -1
    for j, a in enumerate(arrivals):
        k = key_arr(a)
        m = remaining[k]
        remaining[k] -= 1
        cands = [i for i in by_key.get(k, ()) if i not in used and ts_send(sends[i]) <= ts_arr(a) + tol]
        if not cands:
            unmatched += 1
            continue
        fifo = [i for i in cands if i > last]
        pool = fifo or cands
        pick = pool[max(0, len(pool) - m)]
        used.add(pick)
        last = max(last, pick)
        pairs.append((pick, j))
    return pairs, ambiguous, unmatched


def compute(server_pcap: str | Path, client_pcap: str | Path, *, client_time_offset_s: float = 0.0,
            tolerance_s: float = 0.001) -> Truth:
    """Ground truth for every connection of ``server_pcap``.

    ``client_time_offset_s`` is subtracted from client capture times before matching (use
    the offset given to :func:`hsrtcp.testing.netbed.shift_pcap_time`); reported arrival
    times are on the client capture's own clock. ``tolerance_s`` allows arrival times
    slightly before send times (two tcpdumps on one host timestamp independently).
    """
    srv = _connections(server_pcap)
    cli = _connections(client_pcap)
    result = []
    for key, sc in sorted(srv.items(), key=lambda kv: kv[1].packets[0].ts_ns):
        cc = cli.get(key)
        ct = ConnectionTruth(client=sc.client, client_port=sc.cport, server=sc.server,
                             server_port=sc.sport, client_isn=sc.client_isn, epoch=sc.epoch)
        if sc.server_isn is None:
            result.append(ct)  # no SYN-ACK seen: nothing to compute
            continue
        ct.t_first_server = sc.packets[0].ts
        unwrap = _Unwrap(sc.server_isn)
        # server side: data sent, retransmission flags, SYN-ACK and FIN retransmissions
        high = 1  # highest relative sequence end sent (the SYN occupies 0)
        last_start: dict[int, float] = {}
        fin_seqs: set[int] = set()
        synacks = 0
        srv_data_pkts = []
        for p in sc.packets:
            if p.src != sc.server:
                ct.server_packets_received += 1
                continue
            ct.server_packets_sent += 1
            if p.syn:
                synacks += 1
                continue
            rel = unwrap(p.seq)
            if p.payload_len > 0:
                seg = DataSegment(ts_sent=p.ts, seq=rel, length=p.payload_len, ip_id=p.ip_id,
                                  retrans=rel < high, prev_sent_ts=last_start.get(rel))
                last_start[rel] = p.ts
                high = max(high, rel + p.payload_len)
                ct.data.append(seg)
                srv_data_pkts.append(p)
                if p.fin:
                    fin_seqs.add(rel + p.payload_len)
            elif p.fin:
                if rel in fin_seqs:
                    ct.fin_retrans += 1
                fin_seqs.add(rel)
        ct.synack_retrans = max(0, synacks - 1)
        if cc is None:
            ct.seen_at_client = False
            result.append(ct)
            continue
        ct.t_first_client = cc.packets[0].ts
        cunwrap = _Unwrap(sc.server_isn)
        cli_data = []  # (packet, rel seq) of server data arriving at the client
        syns = 0
        for p in cc.packets:
            if p.src == sc.server and p.payload_len > 0:
                cli_data.append((p, cunwrap(p.seq)))
            elif p.src == sc.client and p.syn and not p.has_ack:
                syns += 1
        ct.syn_retrans = max(0, syns - 1)
        off = client_time_offset_s
        pairs, ct.ambiguous_data, ct.unmatched_client_data = _match(
            list(zip(ct.data, srv_data_pkts)), cli_data,
            key_send=lambda s: (s[0].seq, s[0].length, _ip_or_ts(s[1])),
            key_arr=lambda a: (a[1], a[0].payload_len, _ip_or_ts(a[0])),
            ts_send=lambda s: s[0].ts_sent, ts_arr=lambda a: a[0].ts - off, tol=tolerance_s)
        arrival_of = {j: i for i, j in pairs}
        # receiver-side duplicate detection in client arrival order
        received = _IntervalSet()
        for j, (p, rel) in enumerate(cli_data):
            dup = received.covers(rel, rel + p.payload_len)
            received.add(rel, rel + p.payload_len)
            i = arrival_of.get(j)
            if i is None:
                continue
            seg = ct.data[i]
            seg.arrived = True
            seg.ts_arrived = p.ts
            seg.spurious = seg.retrans and dup
        # pure ACKs: sent per client capture, arrived per server capture
        aunwrap = _Unwrap(sc.server_isn)
        sent = [(p, aunwrap(p.ack)) for p in cc.packets if p.src == sc.client and p.is_pure_ack]
        sunwrap = _Unwrap(sc.server_isn)
        arrived = [(p, sunwrap(p.ack)) for p in sc.packets if p.src == sc.client and p.is_pure_ack]

        def ack_key(x):
            p, rel = x
            if p.ip_id is not None:
                return (rel, p.window, p.ip_id)
            return (rel, p.window, p.tsval, p.sack)

        pairs, ct.ambiguous_acks, ct.unmatched_server_acks = _match(
            sent, arrived, key_send=ack_key, key_arr=ack_key,
            ts_send=lambda s: s[0].ts - off, ts_arr=lambda a: a[0].ts, tol=tolerance_s)
        ct.acks = [AckSegment(ts_sent=p.ts, ack=rel, window=p.window, ip_id=p.ip_id,
                              sack=tuple((_near(lo, p.ack, rel), _near(hi, p.ack, rel))
                                         for lo, hi in p.sack))
                   for p, rel in sent]
        for i, j in pairs:
            ct.acks[i].arrived = True
            ct.acks[i].ts_arrived = arrived[j][0].ts
        _spurious_causes(ct, off)
        result.append(ct)
    return Truth(result)


def _spurious_causes(ct: ConnectionTruth, offset_s: float) -> None:
    """M14 for every spurious retransmission R of bytes [s, e) sent at server time t_R.

    Covering ACKs = pure ACKs the client sent before t_R (client time − ``offset_s``) whose
    cumulative ACK is ≥ e or one of whose SACK blocks contains [s, e).
    ``ack_loss`` (ACKL) iff there is at least one covering ACK and none of them ever reached
    the server; otherwise ``rto_estimation`` (RTOEI: the covering ACK arrived too late, or the
    client only acknowledged after t_R).
    """
    for d in ct.data:
        if not d.spurious:
            continue
        s, e = d.seq, d.seq + d.length
        covering = [a for a in ct.acks if a.ts_sent - offset_s < d.ts_sent and (
            a.ack >= e or any(lo <= s and hi >= e for lo, hi in a.sack))]
        if covering and not any(a.arrived for a in covering):
            d.spurious_cause = "ack_loss"
        else:
            d.spurious_cause = "rto_estimation"


def from_run(run) -> Truth:
    """Ground truth of a :class:`hsrtcp.testing.netbed.Run` (honours its clock offset)."""
    return compute(run.server_pcap, run.client_pcap, client_time_offset_s=run.time_offset_s or 0.0)


class _IntervalSet:
    """Sorted disjoint half-open byte ranges; enough for test-sized connections."""

    def __init__(self):
        self.iv: list[list[int]] = []

    def covers(self, s: int, e: int) -> bool:
        import bisect

        i = bisect.bisect_right(self.iv, [s, float("inf")]) - 1
        return i >= 0 and self.iv[i][0] <= s and self.iv[i][1] >= e

    def add(self, s: int, e: int) -> None:
        import bisect

        i = bisect.bisect_left(self.iv, [s, s])
        if i > 0 and self.iv[i - 1][1] >= s:
            i -= 1
        j = i
        while j < len(self.iv) and self.iv[j][0] <= e:
            s = min(s, self.iv[j][0])
            e = max(e, self.iv[j][1])
            j += 1
        self.iv[i:j] = [[s, e]]
