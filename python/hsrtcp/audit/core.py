"""Judge every detector of one run against the truth of its two captures.

Verdict rows (docs/formats/audit.md): one per (truth episode, detector), plus one per detector
event that no truth episode explains (a false positive). Detectors and what they answer:

==================  ========  ===================================================
detector            vantage   positive = the detector says …
==================  ========  ===================================================
M10 timeout         server    this was a timeout sequence (events ``timeout_sequence``)
M12 receiver        phone     spurious (``spurious_timeout`` class ``receiver``)
M12 dsack           server    spurious (class ``dsack``)
M12 eifel           server    spurious (class ``eifel``)
M12 server          server    spurious by D-SACK or Eifel (the server row's count)
M12 two_vantage     both      spurious (class ``two_vantage``, the matched row)
M14 two_vantage     both      cause ``ack_loss`` (spurious episodes both found)
M14 server rule     server    ``ack_loss``: D-SACK without Eifel evidence, i.e. no ACK of
                              the original ever reached the server (seed 000's one-vantage
                              reading: an ACK that arrived late is RTOEI)
==================  ========  ===================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from hsrtcp.audit.inputs import Run
from hsrtcp.audit.truth import ConnectionEpisodes, all_episodes
from hsrtcp.testing import truth as _truth
from hsrtcp import schemas
from hsrtcp.pcapio import read_tcp

EARLY_S = 0.001  # an event may carry a timestamp this much before its truth (two clocks)
OPEN_END_S = 120.0  # an episode never ACKed is open this long

SPURIOUS_METHODS = {"receiver": "phone", "dsack": "server", "eifel": "server", "two_vantage": "both"}


@dataclass
class _Event:
    ts: float  # server clock: the first RTO retransmission (phone events: its arrival)
    seq: int | None
    cause: str | None = None
    count: int | None = None


def handshake_options(path) -> dict:
    """SACK and timestamps as the first SYN and SYN-ACK of ``path`` negotiated them."""
    syn = synack = None
    for i, p in enumerate(read_tcp(path)):
        if p.syn and not p.has_ack and syn is None:
            syn = p
        elif p.syn and p.has_ack and synack is None:
            synack = p
        if (syn and synack) or i > 2000:
            break
    if syn is None or synack is None:
        return {"sack": None, "timestamps": None}
    return {"sack": bool(syn.sack_permitted and synack.sack_permitted),
            "timestamps": syn.tsval is not None and synack.tsval is not None}


def audit_run(run: Run) -> tuple[list[dict], list[dict], list[str]]:
    """(verdict rows, connection rows, errors) of one run."""
    import hsrtcp

    truth = _truth.compute(run.server_pcap, run.client_pcap, client_time_offset_s=run.client_offset_s)
    eps = all_episodes(truth, client_offset_s=run.client_offset_s, rto_min_s=run.rto_min_s,
                       kernel_windows=run.kernel_rto_windows)
    # packets: the receiver's undecided DupACK candidates, judged one by one in _counts
    ds = hsrtcp.analyze(client=str(run.client_pcap), server=str(run.server_pcap), packets=True)
    packets = ds.extra.get("packets")
    errors = list(ds.errors or [])
    flows, events = ds.flows, ds.events
    from hsrtcp.audit.conditions import measure

    # the run's path as its own truth measured it: the breakdowns of the tables
    cond = dict(run.conditions) | handshake_options(run.server_pcap) | measure(truth, run.client_offset_s, run.bundle)
    verdicts: list[dict] = []
    conns: list[dict] = []
    for ce in eps:
        c = ce.conn
        key = f"{c.client}:{c.client_port}-{c.server}:{c.server_port}#{c.epoch}"
        rows = _flow_rows(flows, c)
        ev = {m: _events(events, rows, m, run.client_offset_s) for m in
              ("timeout", "receiver", "dsack", "eifel", "two_vantage")}
        rtt = _rtt(rows)
        base = {"run": run.name, "connection": key} | cond | {"rtt_ms": rtt}
        verdicts += _judge(ce, ev, base)
        conns.append(base | _counts(run, ce, rows, events, packets) | _rtt_above_min(rows))
    return verdicts, conns, errors


def _flow_rows(flows: pl.DataFrame, c) -> dict[str, dict | None]:
    out: dict[str, dict | None] = {}
    for v in ("client", "server"):
        r = flows.filter((pl.col("vantage") == v) & (pl.col("client_port") == c.client_port)
                         & (pl.col("server_port") == c.server_port) & (pl.col("epoch") == c.epoch))
        out[v] = r.row(0, named=True) if r.height else None
    m = None
    if out["server"] is not None and "server_flow_id" in flows.columns:
        r = flows.filter((pl.col("vantage") == "matched")
                         & (pl.col("server_flow_id") == out["server"]["flow_id"]))
        m = r.row(0, named=True) if r.height else None
    out["matched"] = m
    return out


def _events(events: pl.DataFrame, rows: dict, method: str, offset: float) -> list[_Event]:
    vantage = {"timeout": "server", "receiver": "client", "dsack": "server", "eifel": "server",
               "two_vantage": "matched"}[method]
    row = rows.get(vantage)
    if row is None:
        return []
    e = events.filter(pl.col("flow_id") == row["flow_id"])
    if method == "timeout":
        e = e.filter(pl.col("kind") == "timeout_sequence")
        # ts = the timer was armed; value = T, the time to the first RTO retransmission
        return [_Event(ts=r["ts"] + (r["value"] or 0.0), seq=r["seq_start"], count=r["count"])
                for r in e.iter_rows(named=True)]
    e = e.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == method))
    shift = offset if vantage == "client" else 0.0
    return [_Event(ts=r["ts"] - shift, seq=r["seq_start"], cause=r["cause"], count=r["count"])
            for r in e.iter_rows(named=True)]


def _rtt(rows: dict) -> float | None:
    for v in ("matched", "server"):
        r = rows.get(v)
        if r and r.get("rtt_min") is not None:
            return round(r["rtt_min"] * 1000, 3)
    return None


def _rtt_above_min(rows: dict) -> dict:
    """The analyzer's stand-in for the standing queue, rtt_median - rtt_min (ms), of each row:
    what caveats.csv bands a flow by, checked against the truth's queue (accuracy.md)."""
    out = {}
    for v, name in (("server", "server"), ("client", "phone"), ("matched", "matched")):
        r = rows.get(v)
        lo, med = (r.get("rtt_min"), r.get("rtt_median")) if r else (None, None)
        out[f"rtt_above_min_ms_{name}"] = None if lo is None or med is None else round(1000 * (med - lo), 3)
    return out


def _assign(ce: ConnectionEpisodes, events: list[_Event]) -> tuple[dict[int, _Event], list[_Event]]:
    """Each event to the latest episode that started before it: one whose segment it names
    when it names one (a phone's event comes when the repeat arrives, which on a deep queue is
    after the sender's episode ended), else one still open at its time. The first event per
    episode counts; the others and the unexplained are extras (false positives)."""
    taken: dict[int, _Event] = {}
    extra: list[_Event] = []
    for ev in sorted(events, key=lambda x: x.ts):
        best = None
        for i, ep in enumerate(ce.episodes):
            if not ep.t_first - EARLY_S <= ev.ts <= ep.t_first + OPEN_END_S:
                continue
            if ev.seq is not None:
                if ep.seq <= ev.seq < ep.end:
                    best = i
            elif ep.t_end is None or ev.ts <= ep.t_end + EARLY_S:
                best = i
        if best is None or best in taken:
            extra.append(ev)
        else:
            taken[best] = ev
    return taken, extra


def _judge(ce: ConnectionEpisodes, ev: dict[str, list[_Event]], base: dict) -> list[dict]:
    out: list[dict] = []
    assigned = {m: _assign(ce, evs) for m, evs in ev.items()}

    def row(i, ep, detector, vantage, truth, detected, **kw):
        r = base | {"detector": detector, "vantage": vantage, "episode": i,
                    "t_first": ep.t_first if ep else kw.pop("t", None), "seq": ep.seq if ep else None,
                    "truth": truth, "detected": detected,
                    "truth_spurious": ep.spurious if ep else None,
                    "truth_cause": ep.cause if ep else None,
                    "expirations": ep.expirations if ep else None,
                    "first_retrans_arrived": ep.first_retrans_arrived if ep else None}
        r |= {"detected_cause": kw.get("detected_cause"), "detected_count": kw.get("detected_count")}
        r["retrans_arrived"] = ep.retrans_arrived if ep else None
        r["applicable"] = _applicable(detector, base, ep)
        r["outcome"] = ("TP" if detected else "FN") if truth else ("FP" if detected else "TN")
        out.append(r)

    taken_t, extra_t = assigned["timeout"]
    for i, ep in enumerate(ce.episodes):
        t_ev = taken_t.get(i)
        row(i, ep, "M10 timeout", "server", True, t_ev is not None,
            detected_count=t_ev.count if t_ev else None)
    for e in extra_t:
        row(None, None, "M10 timeout", "server", False, True, t=e.ts, detected_count=e.count)
    for m, vantage in SPURIOUS_METHODS.items():
        taken, extra = assigned[m]
        for i, ep in enumerate(ce.episodes):
            x = taken.get(i)
            row(i, ep, f"M12 {m}", vantage, ep.spurious, x is not None,
                detected_cause=x.cause if x else None, detected_count=x.count if x else None)
        for e in extra:
            row(None, None, f"M12 {m}", vantage, False, True, t=e.ts, detected_cause=e.cause)
    # the server's own count: spurious by either single-capture method
    td, xd = assigned["dsack"]
    te, xe = assigned["eifel"]
    for i, ep in enumerate(ce.episodes):
        row(i, ep, "M12 server", "server", ep.spurious, i in td or i in te)
    for e in _merge_extras(xd, xe):
        row(None, None, "M12 server", "server", False, True, t=e.ts)
    # causes, on the episodes that are spurious and that the detector found spurious
    tv, _ = assigned["two_vantage"]
    for i, ep in enumerate(ce.episodes):
        if ep.spurious and i in tv:
            row(i, ep, "M14 two_vantage", "both", ep.cause == "ack_loss", tv[i].cause == "ack_loss",
                detected_cause=tv[i].cause)
        if ep.spurious and (i in td or i in te):
            guess = "rto_estimation" if i in te else "ack_loss"
            row(i, ep, "M14 server rule", "server", ep.cause == "ack_loss", guess == "ack_loss",
                detected_cause=guess)
    return out


def _applicable(detector: str, cond: dict, ep) -> bool:
    """Whether the evidence the method reads can exist: D-SACK needs SACK and a repeat that
    reached the phone, Eifel timestamps, the phone's method a repeat that reached it (an
    episode whose RTO retransmissions were all lost leaves no trace in the phone's capture);
    unknown options count as available."""
    sack, ts = cond.get("sack") is not False, cond.get("timestamps") is not False
    arrived = ep is None or ep.retrans_arrived
    return {"M12 receiver": arrived, "M12 dsack": sack and arrived, "M12 eifel": ts,
            "M12 server": (sack and arrived) or ts, "M14 server rule": (sack and arrived) or ts}.get(detector, True)


def _merge_extras(a: list[_Event], b: list[_Event]) -> list[_Event]:
    """Unexplained events of two methods, one per distinct time (both methods may report it)."""
    out: list[_Event] = []
    for e in sorted(a + b, key=lambda x: x.ts):
        if not out or abs(out[-1].ts - e.ts) > EARLY_S:
            out.append(e)
    return out


def _counts(run: Run, ce: ConnectionEpisodes, rows: dict, events: pl.DataFrame,
            packets: pl.DataFrame | None = None) -> dict:
    """Per-connection counts with their truth: kernel RTOs, M13 packets, the receiver's
    undecided interval and its duplicates."""
    c = ce.conn
    per_port = run.kernel_rto.get(c.client_port) or []
    kernel = per_port[c.epoch] if c.epoch < len(per_port) else None
    timed = c.epoch == 0 and c.client_port in run.kernel_rto_windows
    # a pair's kernel count includes the SYN-ACK timeouts; a bundle's is taken after accept
    truth_rtos = ce.expirations + (0 if timed else c.synack_retrans)
    out = {"truth_first_ts": c.t_first_server,  # joins the row to the study's flows (first_ts)
           "rto_truth": "kernel samples" if timed else "timing rule",
           "kernel_total_rto": kernel, "truth_rto_expirations": truth_rtos,
           "rto_check": "n/a" if kernel is None else ("ok" if kernel == truth_rtos else "mismatch"),
           "truth_episodes": len(ce.episodes),
           "truth_spurious_episodes": sum(e.spurious for e in ce.episodes),
           "truth_m13_packets": sum(e.packets for e in ce.episodes if e.spurious),
           "truth_retransmissions": c.data_retrans}
    m, s, cl = rows.get("matched"), rows.get("server"), rows.get("client")
    out["matched_m13_packets"] = m.get("spurious_rto_packets") if m else None
    out["server_m13_packets"] = s.get("spurious_rto_packets") if s else None
    out["server_retransmissions"] = s.get("retransmissions") if s else None
    arrived_retrans = sum(1 for d in c.data if d.retrans and d.arrived)
    out["truth_retrans_arrived"] = arrived_retrans
    out["truth_spurious_retrans"] = c.spurious_retrans
    if cl is not None:
        lo, und = cl.get("retransmissions"), cl.get("retransmissions_undecided")
        out["receiver_retransmissions"] = lo
        out["receiver_undecided"] = und
        out["receiver_interval_holds"] = (None if lo is None else
                                          lo <= arrived_retrans <= lo + (und or 0))
        dup = events.filter((pl.col("flow_id") == cl["flow_id"]) & (pl.col("kind") == "retransmission")
                            & (pl.col("cause") == "duplicate"))
        out["receiver_duplicates"] = dup.height
    else:
        out |= {"receiver_retransmissions": None, "receiver_undecided": None,
                "receiver_interval_holds": None, "receiver_duplicates": None}
    return out | _dupacks(c, cl, packets) | _needless_by_class(c, s, packets)


#: schemas.RETRANS_CLASSES in the order of connections.csv's columns (docs/audit/*/connections.csv)
RETRANS_CLASSES = ("rto", "tlp", "fast", "sack_refill", "unclassified")
assert set(RETRANS_CLASSES) == set(schemas.RETRANS_CLASSES)


def _needless_by_class(c, srow: dict | None, packets: pl.DataFrame | None) -> dict:
    """Per class of the server row's label on each data retransmission (packets' ``retrans``,
    found by send time and sequence), the re-sends and the needless ones by the truth
    (audit.truth.needless); ``unlabelled``: a re-send of the truth with no labelled row."""
    from hsrtcp.audit.truth import needless

    label = {}
    if srow is not None and packets is not None:
        p = packets.filter((pl.col("flow_id") == srow["flow_id"]) & (pl.col("dir") == "s2c")
                           & pl.col("retrans").is_not_null())
        label = {(round(ts, 6), seq): k for ts, seq, k in p.select("ts", "seq", "retrans").iter_rows()}
    out = {f"truth_{w}_{k}": 0 for k in (*RETRANS_CLASSES, "unlabelled") for w in ("retrans", "needless")}
    for ts, seq, nl in needless(c):
        k = label.get((round(ts, 6), seq), "unlabelled")
        k = k if k in RETRANS_CLASSES else "unlabelled"
        out[f"truth_retrans_{k}"] += 1
        out[f"truth_needless_{k}"] += nl
    return out


def _dupacks(c, cl: dict | None, packets: pl.DataFrame | None) -> dict:
    """DupACKs the phone sent against the receiver's [dupacks, dupacks + dupacks_undecided],
    and each undecided candidate's truth (the sender's state when it arrived: audit.truth)."""
    from hsrtcp.audit.truth import dupack_verdicts

    tv = dupack_verdicts(c)
    tdup, tlost = tv.count("dupack"), tv.count("lost")
    out = {"truth_dupacks": tdup, "truth_dupack_candidates_lost": tlost}
    lo = cl.get("dupacks") if cl is not None else None
    und = (cl.get("dupacks_undecided") or 0) if cl is not None else None
    out["receiver_dupacks"], out["receiver_dupacks_undecided"] = lo, und
    # a lost candidate may or may not have been one: the truth is [tdup, tdup + tlost]
    out["receiver_dupack_interval_holds"] = None if lo is None else (lo <= tdup + tlost and tdup <= lo + und)
    n = {"dupack": 0, "not": 0, "lost": 0, "unmatched": 0}
    if cl is not None and packets is not None and und:
        # the undecided candidates: the flow's pure ACKs whose dupack the engine left null
        # (docs/formats/packets.md); the same ACKs in the truth by send time and IP ID
        by = {(round(a.ts_sent, 6), a.ip_id): v for a, v in zip(c.acks, tv)}
        p = packets.filter((pl.col("flow_id") == cl["flow_id"]) & (pl.col("len") == 0)
                           & pl.col("dupack").is_null() & ((pl.col("flags") & 0x10) != 0)
                           & ((pl.col("flags") & 0x07) == 0))
        for ts, ip in p.select("ts", "ip_id").iter_rows():
            v = by.get((round(ts, 6), ip))
            n[v if v in ("dupack", "not", "lost") else "unmatched"] += 1
        if p.height != und:  # packets' null rows are not the flow's undecided count
            n["unmatched"] += abs(und - p.height)
    for k, v in n.items():
        out[f"undecided_truth_{k}"] = v if cl is not None else None
    return out
