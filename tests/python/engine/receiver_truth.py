"""Two-capture truth for the receiver-side witnesses (issue 16): zero-window probes, the
retransmissions that arrived at the phone, and the DupACKs among the ACKs the phone sent.

Computed from both captures with the project's independent pcap reader
(:func:`hsrtcp.testing.pcapio.read_tcp`) and :mod:`hsrtcp.testing.truth`, never with the
engine it checks. One connection per capture (the testbed's download), sequence numbers
relative to the server's ISN as in the truth module (first payload byte = 1).
"""

from __future__ import annotations

import bisect
import subprocess
from dataclasses import dataclass

from hsrtcp.testing.pcapio import read_tcp

MOD = 1 << 32


def _rel(seq: int, isn: int) -> int:
    # the test transfers stay far below 2^31 bytes: no unwrapping needed
    return (seq - isn) % MOD


def nstat(ns: str, counter: str) -> int:
    """A kernel SNMP counter of network namespace ``ns`` (e.g. TcpExtTCPWinProbe), read
    without touching nstat's history file."""
    out = subprocess.run(["ip", "netns", "exec", ns, "nstat", "-asz", counter],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == counter:
            return int(parts[1])
    raise RuntimeError(f"nstat in {ns} did not report {counter}: {out!r}")


@dataclass
class ProbeTruth:
    sent: int  # probes in the server capture
    arrived: int  # of those, seen at the client (same IP ID, sequence number, no payload)


def window_probes(server_pcap, client_pcap, server_port: int) -> ProbeTruth:
    """Linux zero-window probes: server segments without payload, SYN, FIN or RST whose
    sequence number is one below the highest ACK the server had received (its snd_una − 1:
    ``tcp_xmit_probe_skb``) while the client's latest window was zero."""
    isn = None
    high_ack = None
    window = None
    probes = []
    for p in read_tcp(server_pcap):
        if p.syn:
            if p.sport == server_port:
                isn = p.seq
            continue
        if isn is None:
            continue
        if p.dport == server_port:
            if p.has_ack:
                a = _rel(p.ack, isn)
                high_ack = a if high_ack is None else max(high_ack, a)
                window = p.window
            continue
        if (p.payload_len == 0 and not (p.fin or p.rst) and high_ack is not None
                and _rel(p.seq, isn) == high_ack - 1 and window == 0):
            probes.append((_rel(p.seq, isn), p.ip_id))
    cisn = None
    seen = set()
    for p in read_tcp(client_pcap):
        if p.syn and p.sport == server_port:
            cisn = p.seq
            continue
        if cisn is not None and p.sport == server_port and p.payload_len == 0:
            seen.add((_rel(p.seq, cisn), p.ip_id))
    return ProbeTruth(sent=len(probes), arrived=sum(1 for k in probes if k in seen))


def retransmissions_arrived(conn_truth) -> int:
    """Retransmitted data segments (bytes sent before, server capture) that reached the
    client: what a receiver-side count of retransmissions must find."""
    return sum(1 for d in conn_truth.data if d.retrans and d.arrived)


def undecided_resends_ceiling(conn_truth) -> int:
    """The loss-implied ceiling of the phone's ``retransmissions_undecided``: data segments
    lost on the way whose next arriving segment (in send order) was a re-send, the IP IDs
    the phone never sees while the sender is re-sending. Each undecided arrival stands for
    such an ID (an original or a re-send: in no phone capture, docs/engine.md, "What a
    receiver-side capture cannot tell"); at least 3, as a short lost original lets one more
    arrival fit in the missing IDs' bytes (a live run: 3 undecided behind 2 IDs, the first a
    40-byte original). Measured, not proven (docs/engine.md): issue 30 (FLAKE4), 25 live
    runs at 8 % data / 10 % ACK drops, 7-36 undecided against 14-51 such losses; 18
    fixtures, 0-16 against 0-30."""
    n = run = 0
    for d in sorted(conn_truth.data, key=lambda d: d.ts_sent):
        if not d.arrived:
            run += 1
            continue
        if d.retrans:
            n += run
        run = 0
    return max(3, n)


def overtaken_resends(conn_truth) -> int:
    """Re-sends that arrived before their delayed original (which then arrived too). The truth
    calls such a re-send not spurious (nothing of it had arrived yet); the phone sees the
    original second and counts that copy as the unnecessary one: one each way, same total.
    An original stamped with the same arrival time counts too: not spurious, the re-send was
    first in the capture (a live run, 29 Nov: 56810 and 56805 at one microsecond)."""
    orig: dict[int, list[float]] = {}
    for d in conn_truth.data:
        if not d.retrans and d.arrived:
            orig.setdefault(d.seq, []).append(d.ts_arrived)
    return sum(1 for d in conn_truth.data if d.retrans and d.arrived and not d.spurious
               and any(t >= d.ts_arrived for t in orig.get(d.seq, ())))


def dupacks_sent_bounds(server_pcap, client_pcap, conn_truth) -> tuple[int, int]:
    """The DupACKs the phone sent (as :func:`dupacks_sent`), as the interval both captures
    allow. An ACK that arrived is a DupACK or not by its real arrival time. A lost one never
    reached the server, so whether it "was" one is counterfactual: it would have arrived
    somewhere between the one-way delays of the arrived ACKs sent just before and just after
    it. It counts in the upper bound if it would be a DupACK at the later of those arrivals,
    in the lower bound only if also at the earlier. (The median-delay convention of
    :func:`dupacks_sent` picked one side for a lost ACK whose neighbours took 23 and 38 us
    while the server's next data left between the two: a CI run of 27 Nov.)"""
    snd_nxt = _server_snd_nxt(server_pcap, conn_truth)
    sent = sorted((a.ts_sent, a.ts_arrived - a.ts_sent) for a in conn_truth.acks if a.arrived)
    times = [t for t, _ in sent]
    arrival = {a.ts_sent: a.ts_arrived for a in conn_truth.acks if a.arrived}
    lo = hi = 0
    for t, a in _candidates(client_pcap, conn_truth):
        if t in arrival:
            is_dup = snd_nxt(arrival[t]) > a
            lo += is_dup
            hi += is_dup
            continue
        i = bisect.bisect_left(times, t)
        near = [sent[j][1] for j in (i - 1, i) if 0 <= j < len(sent)]
        if not near:  # no ACK of this connection arrived: anything is possible
            hi += 1
            continue
        lo += snd_nxt(t + min(near)) > a
        hi += snd_nxt(t + max(near)) > a
    return lo, hi


def _server_snd_nxt(server_pcap, ct):
    """t -> the highest sequence number the server had sent by time t."""
    isn = None
    t_hi, hi_v = [], []
    hi = 0
    for p in read_tcp(server_pcap):
        if p.syn:
            if p.sport == ct.server_port:
                isn = p.seq
            continue
        if isn is None or p.sport != ct.server_port:
            continue
        end = _rel(p.seq, isn) + p.payload_len + (1 if p.fin else 0)
        if end > hi:
            hi = end
            t_hi.append(p.ts)
            hi_v.append(hi)

    def snd_nxt(t: float) -> int:
        i = bisect.bisect_right(t_hi, t) - 1
        return hi_v[i] if i >= 0 else 0

    return snd_nxt


def _candidates(client_pcap, ct):
    """(send time, relative ACK number) of the phone's pure ACKs that repeat the highest ACK
    number so far with the previous ACK's window: DupACKs if the server had sent beyond."""
    cisn = None
    prev_ack = prev_win = None
    out = []
    for p in read_tcp(client_pcap):
        if p.syn:
            if p.sport == ct.server_port:
                cisn = p.seq
            continue
        if cisn is None or p.sport != ct.client_port or not p.has_ack:
            continue
        a = _rel(p.ack, cisn)
        if p.is_pure_ack and a == prev_ack and p.window == prev_win:
            out.append((p.ts, a))
        prev_ack = a if prev_ack is None else max(prev_ack, a)
        prev_win = p.window
    return out


def dupacks_sent(server_pcap, client_pcap, conn_truth, owd_s: float | None = None) -> int:
    """DupACKs among the pure ACKs the phone sent (RFC 5681 §2, docs/metrics.md M15): a pure
    ACK (no payload, SYN, FIN, RST) carrying the same ACK number as the highest the phone
    had sent and the same window as its previous ACK, that reached (or, lost, would have
    reached) the server while the server had data outstanding: bytes beyond that ACK number
    sent before. Arrival times come from the truth's ACK matching; a lost ACK is given the
    median one-way delay of the ACKs that arrived (``owd_s`` overrides it)."""
    ct = conn_truth
    snd_nxt = _server_snd_nxt(server_pcap, ct)
    if owd_s is None:
        d = sorted(a.ts_arrived - a.ts_sent for a in ct.acks if a.arrived)
        owd_s = d[len(d) // 2] if d else 0.0
    arrival = {a.ts_sent: a.ts_arrived for a in ct.acks if a.arrived}
    return sum(snd_nxt(arrival.get(t, t + owd_s)) > a for t, a in _candidates(client_pcap, ct))
