"""Independent witness for the cause of each spurious timeout (docs/metrics.md M12, M14).

Written against the independent reader :mod:`hsrtcp.testing.pcapio` (dpkt), not the Rust matcher,
and on the *true* common clock of the lab (both tcpdumps run on one host): the client
capture's times are corrected by the offset the test added on purpose, never by the
matcher's estimate. For a timeout whose first RTO retransmission left the server at ``t_r``
for head segment ``[s, e)`` (sequence relative to the server's ISN):

- it is spurious iff the client capture shows bytes covering ``s`` arriving before any copy
  sent at or after ``t_r`` arrived (at any time when none of those copies arrived): the
  original was not lost, only late or unacknowledged;
- its cause is ``ack_loss`` iff the client sent, before ``t_r``, at least one ACK acknowledging
  beyond ``s`` and none of those ACKs appears in the server capture (key: ack, window, IP ID;
  IPv6: ack, window, TSval, SACK blocks); otherwise ``rto_estimation``.
"""

from __future__ import annotations

from hsrtcp.testing.pcapio import read_tcp

M32 = 1 << 32


def _conn(pkts, client_port):
    return [p for p in pkts if client_port in (p.sport, p.dport)]


def check_spurious_events(server_pcap, client_pcap, events, *, client_port: int,
                          server_port: int, client_offset_s: float = 0.0) -> list[str]:
    """Return the problems found (empty = every event's spuriousness and cause confirmed).

    ``client_port`` is the port as the *client* capture shows it, ``events`` are dicts with
    ``ts`` (server clock), ``seq_start``, ``cause``."""
    srv = [p for p in read_tcp(server_pcap) if server_port in (p.sport, p.dport)]
    cli = _conn(list(read_tcp(client_pcap)), client_port)
    off = round(client_offset_s * 1e9)
    isn = next(p.seq for p in srv if p.syn and p.has_ack)
    rel = lambda x: (x - isn) % M32  # noqa: E731  (1 MB transfers never wrap)
    down_srv = [p for p in srv if p.sport == server_port]
    up_srv = [p for p in srv if p.dport == server_port]
    down_cli = [p for p in cli if p.sport == server_port]
    up_cli = [p for p in cli if p.dport == server_port]

    def ack_key(p):
        if p.ip_id is not None:
            return (p.ack, p.window, p.ip_id)
        return (p.ack, p.window, p.tsval, p.sack)

    arrived_keys = {}
    for p in up_srv:
        arrived_keys[ack_key(p)] = arrived_keys.get(ack_key(p), 0) + 1
    problems = []
    for ev in events:
        t_r = round(ev["ts"] * 1e9)
        s = ev["seq_start"]
        r1 = min((p for p in down_srv if rel(p.seq) == s and p.payload_len > 0),
                 key=lambda p: abs(p.ts_ns - t_r), default=None)
        if r1 is None or abs(r1.ts_ns - t_r) > 1000:
            problems.append(f"{ev}: no server transmission of {s} at the event time")
            continue
        def same(p, q=r1):
            return p.seq == q.seq and p.payload_len == q.payload_len and (
                p.ip_id == q.ip_id if q.ip_id is not None else p.tsval == q.tsval)
        # every copy of the head sent from the RTO on, and the first of them to arrive
        later = [q for q in down_srv if q.seq == r1.seq and q.payload_len > 0 and q.ts_ns >= r1.ts_ns]
        arr = [p.ts_ns - off for p in down_cli for q in later if same(p, q)]
        limit = min(arr) if arr else float("inf")
        covering = [p.ts_ns - off for p in down_cli
                    if p.payload_len > 0 and rel(p.seq) <= s < rel(p.seq) + p.payload_len]
        orig = [t for t in covering if t < limit]
        if not orig:
            problems.append(f"{ev}: not spurious: no copy of byte {s} reached the client first")
            continue
        acks = [p for p in up_cli if p.has_ack and (p.ack - isn) % M32 > s
                and (p.ack - isn) % M32 < M32 // 2 and min(orig) <= p.ts_ns - off < t_r]
        got = [p for p in acks if arrived_keys.get(ack_key(p), 0) > 0]
        expected = "ack_loss" if acks and not got else "rto_estimation"
        if ev["cause"] != expected:
            problems.append(f"{ev}: cause {ev['cause']}, witness says {expected} "
                            f"({len(acks)} covering ACKs sent before the RTO, {len(got)} arrived)")
    return problems


def spurious_rto_packets(server_pcap, events, *, server_port: int) -> int:
    """M13 numerator, independently: for each spurious timeout (``ts`` = its first RTO
    retransmission on the server clock), the server's data packets from that one on that
    re-send bytes it had sent before, until the first packet from the client reaches the
    server capture after it."""
    srv = [p for p in read_tcp(server_pcap) if server_port in (p.sport, p.dport)]
    isn = next(p.seq for p in srv if p.syn and p.has_ack)
    total = 0
    for ev in events:
        t_r = round(ev["ts"] * 1e9) - 1000  # float seconds since the epoch: ~0.1 µs steps
        high, n = 0, 0
        for p in srv:
            if p.sport == server_port and p.payload_len > 0:
                s = (p.seq - isn) % M32
                if p.ts_ns >= t_r and s < high:
                    n += 1
                high = max(high, s + p.payload_len)
            elif p.dport == server_port and p.ts_ns > t_r:
                break
        total += n
    return total


def check_spurious_columns(row: dict) -> list[str]:
    """The matched row's spurious-timeout columns (M12–M14) agree with each other."""
    problems = []
    n = row["spurious_timeouts"]
    if not (n == row["spurious_timeouts_2v"]
            == row["spurious_timeouts_ack_loss"] + row["spurious_timeouts_rto_estimation"]):
        problems.append(f"spurious_timeouts {n} != 2v {row['spurious_timeouts_2v']} or causes "
                        f"{row['spurious_timeouts_ack_loss']} + {row['spurious_timeouts_rto_estimation']}")
    retx, spur = row["retransmitted_packets"], row["spurious_rto_packets"]
    want = spur / retx if retx else None
    if row["spurious_rto_rate"] != want:
        problems.append(f"spurious_rto_rate {row['spurious_rto_rate']} != {spur} / {retx}")
    if not (n <= spur <= retx):
        problems.append(f"spurious_rto_packets {spur} outside [{n}, {retx}]")
    seqs = row["rto_sequences"]
    if row["spurious_timeout_share"] != (n / seqs if seqs else None):
        problems.append(f"spurious_timeout_share {row['spurious_timeout_share']} != {n} / {seqs}")
    return problems


def check_loss_series(ds, truth_conns) -> None:
    """M6 per 1-s bin in the matched flows' series rows equals the truth helper's series
    (hsrtcp.testing.truth: server data transmissions not seen at the phone / server data
    transmissions, bins from the connection's first packet at the server), bin by bin."""
    import polars as pl
    import pytest

    m = ds.flows.filter(pl.col("vantage") == "matched")
    assert m.height == len(truth_conns)
    for row in m.to_dicts():
        t = next(c for c in truth_conns if c.client_port == row["sv_client_port"]
                 and (len([x for x in truth_conns if x.client_port == c.client_port]) == 1
                      or c.epoch == row["sv_epoch"]))
        want = [(r["data_sent"], r["data_lost"], r["loss_rate"]) for r in t.series(1.0)]
        while want and want[-1][0] == 0:
            want.pop()  # the matcher's rows end at the last bin with a transmission
        got = ds.series.filter(pl.col("flow_id") == row["flow_id"]).sort("bin")
        assert got["bin"].to_list() == list(range(got.height))
        assert list(zip(got["data_sent"], got["data_lost"], got["loss_rate"])) == want
        assert got["data_sent"].sum() == row["data_packets_sent"]
        assert got["data_lost"].sum() == row["lost_data_packets"]
        assert got["ts"][0] == pytest.approx(row["first_ts"], abs=1e-6)

