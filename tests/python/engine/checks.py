"""Witness checks of the behaviour engine against kernel truth (TCP_INFO of the server
socket), the two-capture truth of hsrtcp.testing.truth, and the peers (tshark, tcptrace).

Shared by the fixture tests (tests/data, real kernel captures made by the namespace testbed)
and the live netns tests, so both assert exactly the same things.
"""

from __future__ import annotations

import polars as pl

import hsrtcp


def analyze(pcap, vantage: str) -> hsrtcp.Dataset:
    return hsrtcp.analyze([str(pcap)], vantage=vantage)


def fixture_case(name: str, client: bool = False) -> tuple:
    """A committed pair tests/data/NAME.{server,client}.pcap.gz: (its two-capture truth
    connection, the server-side analysis, the server's flow row[, the client's flow row])."""
    from pathlib import Path

    from hsrtcp.testing import truth

    data = Path(__file__).resolve().parents[2] / "data"
    srv, cli = data / f"{name}.server.pcap.gz", data / f"{name}.client.pcap.gz"
    ct = truth.compute(srv, cli).connections[0]
    srv_ds = analyze(srv, "server")
    out = (ct, srv_ds, flow_row(srv_ds, ct.client_port))
    return out + (flow_row(analyze(cli, "client"), ct.client_port),) if client else out


def flow_row(ds, client_port: int, epoch: int = 0) -> dict:
    f = ds.flows.filter((pl.col("client_port") == client_port) & (pl.col("epoch") == epoch))
    assert f.height == 1, f"one flow for client port {client_port}, got {f.height}"
    return f.row(0, named=True)


def events_of(ds, flow_id: int, kind: str, cls: str | None = None) -> pl.DataFrame:
    e = ds.events.filter((pl.col("flow_id") == flow_id) & (pl.col("kind") == kind))
    if cls is not None:
        e = e.filter(pl.col("class") == cls)
    return e


def truth_spurious_timeouts(server_ds, srv_row: dict, conn_truth) -> list[dict]:
    """Timeout sequences (found at the sender, whose count is checked against the kernel's
    total_rto) that were spurious on the two-capture truth (M12, a timeout for a segment
    that was not lost): the bytes of the sequence's first RTO re-send were covered by copies
    sent before it that arrived. The same rule as hsrtcp.audit.truth. Judging the first
    re-send's own arrival instead is wrong when it is lost on the way and a back-off re-send
    arrives as the duplicate (issue 30: the original arrived, its ACKs were lost)."""
    seqs = events_of(server_ds, srv_row["flow_id"], "timeout_sequence").to_dicts()
    by_send = {(round(d.ts_sent, 6), d.seq): d for d in conn_truth.data if d.retrans}
    out = []
    for s in seqs:
        first = round(s["ts"] + s["value"], 6)
        d = by_send.get((first, s["seq_start"]))
        assert d is not None, f"no truth segment for the RTO retransmission at {first} seq {s['seq_start']}"
        before = [(r.seq, r.seq + r.length) for r in conn_truth.data
                  if r.arrived and r.ts_sent < d.ts_sent]
        if _covers(before, d.seq, d.seq + d.length):
            out.append(s)
    return out


def _covers(spans: list[tuple[int, int]], lo: int, hi: int) -> bool:
    at = lo
    for a, b in sorted(spans):
        if a > at:
            break
        at = max(at, b)
    return at >= hi


def check_connection(server_ds, client_ds, client_port: int, tcp_info: dict, conn_truth,
                     strict_receiver: bool = True) -> dict:
    """All single-capture witnesses for one connection; returns the two flow rows.

    Both captures must have been analyzed with their vantage given (an inferred one can be
    fooled, e.g. by a spurious duplicate arriving before any loss).
    ``strict_receiver``: the receiver's count of spurious *timeouts* must equal the truth.
    Without it (live runs), every truth spurious timeout must still be found at the receiver
    as an unnecessary retransmission (spurious_timeout or spurious_retransmission event on
    its bytes); telling there whether the sender's timer or its fast recovery re-sent them is
    a timing heuristic (docs/engine.md) that random live runs occasionally get wrong.
    """
    srv = flow_row(server_ds, client_port)
    cli = flow_row(client_ds, client_port)
    ts_on, sack_on = bool(srv["timestamps"]), bool(srv["sack_permitted"])
    # both captures were analyzed with the vantage given: it must reach the engine
    assert srv["capture_near_source"] == "given" and cli["capture_near_source"] == "given"
    assert srv["data_vantage"] == "sender" and cli["data_vantage"] == "receiver"
    fin_retx = srv["fin_retransmissions_server"] or 0
    synack_retx = srv["synack_retransmissions"] or 0
    # every retransmission the kernel made is found at the sender, nothing more (Linux 6.x
    # counts SYN-ACK and FIN retransmissions in total_retrans too)
    assert srv["retransmissions"] + fin_retx + synack_retx == tcp_info["total_retrans"], (
        srv["retransmissions"], fin_retx, synack_retx, tcp_info["total_retrans"])
    assert srv["retransmissions"] == sum(1 for d in conn_truth.data if d.retrans)
    assert srv["retrans_unclassified"] == 0
    assert (srv["retrans_fast"] + srv["retrans_sack_refill"] + srv["retrans_rto"] + srv["retrans_tlp"]
            == srv["retransmissions"])
    # RTO expirations: the kernel's own count
    if "total_rto" in tcp_info:
        # (the SYN-ACK timer's expirations are in total_rto as well)
        assert srv["timeouts"] + synack_retx == tcp_info["total_rto"], (srv["timeouts"], tcp_info["total_rto"])
    # the receiver sees every retransmission that arrived after its original (M12 basis)
    spurious_segments = sum(1 for d in conn_truth.data if d.spurious)
    # a re-send that overtook its delayed original: the truth calls it not spurious, the phone
    # counts it unnecessary when the original arrives second (issue 30, reno_late_original)
    from receiver_truth import overtaken_resends
    assert cli["unnecessary_retransmissions"] == spurious_segments + overtaken_resends(conn_truth), (
        cli["unnecessary_retransmissions"], spurious_segments, overtaken_resends(conn_truth))
    # spurious timeouts: every one in the truth is found at the receiver, none invented
    truth_st = truth_spurious_timeouts(server_ds, srv, conn_truth)
    if strict_receiver:
        assert cli["spurious_timeouts"] == len(truth_st), (cli["spurious_timeouts"], truth_st)
    else:
        flagged = client_ds.events.filter(
            (pl.col("flow_id") == cli["flow_id"])
            & pl.col("kind").is_in(["spurious_timeout", "spurious_retransmission"]))
        for st in truth_st:
            hit = flagged.filter((pl.col("seq_start") <= st["seq_start"]) & (pl.col("seq_end") > st["seq_start"]))
            assert hit.height >= 1, f"spurious timeout at seq {st['seq_start']} not found at the receiver"
    # ... and at the sender where D-SACK or timestamps allow, within its bounds: a sequence
    # whose first arrival's ACK was lost before any echo named the copy is undecided
    # (docs/engine.md, "Spurious timeouts"; fixture cubic_lost_evidence)
    if sack_on or ts_on:
        lo, und = srv["spurious_timeouts"], srv["spurious_timeouts_undecided"]
        assert lo <= len(truth_st) <= lo + und, (lo, und, truth_st)
        # narrow: it takes a back-off and the lost ACK of the first arrival (1 in 20 live
        # runs had one); at most one, or a quarter of the sequences
        assert und <= max(1, srv["timeout_sequences"] // 4), (und, srv["timeout_sequences"])
        # each method alone finds what it can, never more: Eifel needs an ACK of the original
        # after the re-send (when every ACK of the original was lost, the first ACK echoes the
        # re-send's TSval and only the D-SACK tells, RFC 3522 §3.2)
        if sack_on:
            assert srv["spurious_timeouts_dsack"] <= len(truth_st)
        if ts_on:
            assert srv["spurious_timeouts_eifel"] <= len(truth_st)
        if sack_on and ts_on:
            assert max(srv["spurious_timeouts_dsack"], srv["spurious_timeouts_eifel"]) >= 1 or len(truth_st) <= und
        # D-SACK reports the kernel counted (dsack_dups) cover the ones we attributed
        assert srv["spurious_timeouts_dsack"] <= tcp_info.get("dsack_dups", 0)
    else:
        assert srv["spurious_timeouts"] == 0 and srv["spurious_timeouts_eifel"] is None
        assert srv["spurious_timeouts_undecided"] == 0  # no D-SACK, no echo: nothing to weigh
    return {"server": srv, "client": cli, "truth_spurious_timeouts": truth_st}
