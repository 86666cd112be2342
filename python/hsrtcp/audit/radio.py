"""The radio side of the audit: handoffs from the radio log and M24 suspensions, against the
scenario's own events (a lab bundle's ``events.csv``; docs/accuracy.md, docs/formats/audit.md).

Truth is read from the bundle itself (``events.csv`` and the manifest's ``t0``) and from the
phone capture with the independent dpkt reader (:mod:`hsrtcp.pcapio`); the detectors' answers
come from ``hsrtcp analyze BUNDLE`` (``handoffs.parquet``, ``suspensions.parquet``).

Detectors (rows of ``radio_verdicts.csv``, scored like ``verdicts.csv``):

- ``handoff``: each scheduled handoff is found in the radio log (same carrier, new cell, within
  :data:`MATCH_S`); a found handoff no scheduled one explains is a false positive.
- ``handoff inter-RAT``: the found handoff's ``system`` is ``inter`` exactly when the RAT changed.
- ``handoff ping-pong``: ``ping_pong`` exactly when the scheduled handoff returns to the cell the
  carrier's previous one left, at most 10 s after it.
- ``M24 suspension``: per (handoff, phone flow) row of ``suspensions``: truth = the phone
  capture has a silence of at least 0.2 s that is the handoff's (:func:`theirs`): one that
  contains the handoff's instant, or one overlapping its impairments (its events of the same
  ``handoff_id``: outage, loss burst, RTT spike; from the handoff to :data:`LATE_S` after the
  last ends) and owned by it (:func:`owner`: a silence in the windows of two close handoffs is
  the later one's); detected = the suspension's gap overlaps one of those silences. A
  handoff's outage and the stall its loss burst causes are two silences (the engine splits a
  gap at any packet); the detector names one of them, either is right.
"""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

import polars as pl

MATCH_S = 1.0  # the lab's radio log has a row at the change time; 1 s is one sample period
LATE_S = 0.5  # the phone sees the end of an impairment up to one one-way delay late
MIN_GAP_S = 0.2  # A12: shorter silences are no suspension
PING_PONG_S = 10.0


def scheduled(bundle: Path) -> list[dict]:
    """The bundle's events.csv rows with epoch times (``t0`` + window seconds)."""
    from hsrtcp.bundle import manifest

    t0 = float(manifest(bundle)["t0"])
    with open(bundle / "events.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["ts"] = t0 + float(r["t_start"])
        r["ts_end"] = t0 + float(r["t_end"] or r["t_start"])
    return rows


def silences(client_pcap: Path, flow: dict) -> list[tuple[float, float]]:
    """Silences ≥ MIN_GAP_S between consecutive packets of the flow in the phone capture."""
    from hsrtcp.pcapio import read_tcp

    ends = {(flow["client_addr"], flow["client_port"]), (flow["server_addr"], flow["server_port"])}
    lo, hi = flow["first_ts"] - 1e-6, flow["last_ts"] + 1e-6
    ts = sorted(p.ts_ns / 1e9 for p in read_tcp(client_pcap)
                if {(p.src, p.sport), (p.dst, p.dport)} == ends and lo <= p.ts_ns / 1e9 <= hi)
    return [(a, b) for a, b in zip(ts, ts[1:]) if b - a >= MIN_GAP_S]


def _overlap(a0, a1, b0, b1) -> bool:
    return a0 <= b1 and b0 <= a1


def _outcome(truth: bool, detected: bool) -> str:
    return {(True, True): "TP", (False, True): "FP", (True, False): "FN", (False, False): "TN"}[(truth, detected)]


def analyze(bundle: Path, out: Path) -> Path:
    """``hsrtcp analyze BUNDLE -o OUT -q`` (what the command runs once parsed)."""
    from hsrtcp.cli.run_analysis import run
    from hsrtcp.errors import InputError

    code = run([str(bundle)], [None], str(out), False, False, 1, True)
    if code != 0:
        raise InputError(f"{bundle}: hsrtcp analyze failed (exit {code}); run it alone to see why")
    return out


def audit_bundle(bundle: Path, client_pcap: Path, base: dict) -> list[dict]:
    """Verdict rows of one bundle (``base``: run and condition columns)."""
    events = scheduled(bundle)
    with tempfile.TemporaryDirectory(prefix="hsrtcp-audit-") as tmp:
        res = analyze(bundle, Path(tmp) / "res")
        hand = pl.read_parquet(res / "handoffs.parquet") if (res / "handoffs.parquet").is_file() else pl.DataFrame()
        susp = (pl.read_parquet(res / "suspensions.parquet") if (res / "suspensions.parquet").is_file()
                else pl.DataFrame())
        flows = pl.read_parquet(res / "flows.parquet").filter(pl.col("vantage") == "client")
    rows: list[dict] = []

    def row(detector, vantage, truth, detected, **kw):
        rows.append(base | {"detector": detector, "vantage": vantage, "truth": truth, "detected": detected,
                            "applicable": True, "outcome": _outcome(truth, detected)} | kw)

    found = hand.to_dicts() if not hand.is_empty() else []
    used: set[int] = set()
    last: dict[str, dict] = {}
    matched: dict[int, dict] = {}  # id of a found handoff -> the scheduled handoff
    for h in (e for e in events if e["kind"] == "handoff"):
        near = [i for i, f in enumerate(found) if i not in used and f["carrier"] == h["carrier"]
                and abs(f["ts"] - h["ts"]) <= MATCH_S and str(f["new_cid"]) == h["to_cid"]]
        i = min(near, key=lambda j: abs(found[j]["ts"] - h["ts"])) if near else None
        row("handoff", "radio", True, i is not None, handoff_id=h["handoff_id"], ts=h["ts"],
            offset_s=None if i is None else found[i]["ts"] - h["ts"])
        prev = last.get(h["carrier"])
        pp = bool(prev) and prev["from_cid"] == h["to_cid"] and h["ts"] - prev["ts"] <= PING_PONG_S
        last[h["carrier"]] = h
        if i is None:
            continue
        used.add(i)
        matched[i] = h
        row("handoff inter-RAT", "radio", h["from_rat"] != h["to_rat"], found[i]["system"] == "inter",
            handoff_id=h["handoff_id"], ts=h["ts"])
        row("handoff ping-pong", "radio", pp, bool(found[i]["ping_pong"]), handoff_id=h["handoff_id"], ts=h["ts"])
    for i, f in enumerate(found):
        if i not in used:
            row("handoff", "radio", False, True, handoff_id=None, ts=f["ts"], offset_s=None)

    by_ts = {round(found[i]["ts"], 6): h for i, h in matched.items()}
    windows = {(h["carrier"], h["handoff_id"]): window(events, h) for h in events if h["kind"] == "handoff"}
    fl = {r["flow_id"]: r for r in flows.to_dicts()}
    gaps: dict = {}
    for s in susp.to_dicts() if not susp.is_empty() else []:
        h = by_ts.get(round(s["handoff_ts"], 6))
        f = fl.get(s["flow_id"])
        if h is None or f is None or s["suspension_s"] is None:
            continue  # a handoff no schedule explains is judged above; no gap events: no answer
        if s["flow_id"] not in gaps:
            gaps[s["flow_id"]] = silences(client_pcap, f)
        hit = [g for g in gaps[s["flow_id"]] if theirs(g, h, windows)]
        det_gap = (s["gap_start_ts"], s["gap_end_ts"]) if s["suspension_s"] else None
        truth, detected, t = judge(det_gap, hit)
        row("M24 suspension", "phone", truth, detected, handoff_id=h["handoff_id"], ts=h["ts"],
            truth_suspension_s=None if t is None else t[1] - t[0], truth_silences=len(hit),
            suspension_s=s["suspension_s"])
    return rows


def judge(det_gap, hit: list[tuple[float, float]]):
    """(truth, detected, the truth silence shown): detected when the detector's gap overlaps
    any silence the handoff owns; the silence shown is that one, else the longest."""
    same = [g for g in hit if det_gap and _overlap(*det_gap, *g)]
    t = same[0] if same else (max(hit, key=lambda g: g[1] - g[0]) if hit else None)
    return bool(hit), (bool(same) if hit else det_gap is not None), t


def window(events: list[dict], h: dict) -> tuple[float, float]:
    """From the handoff to LATE_S after the last of its impairments ends."""
    imp = [e for e in events if e["handoff_id"] == h["handoff_id"] and e["carrier"] == h["carrier"]]
    return h["ts"], max(e["ts_end"] for e in imp) + LATE_S


def theirs(g: tuple[float, float], h: dict, windows: dict) -> bool:
    """Whether the silence is the handoff's: it contains the handoff's instant (M24 is the
    silence around the handoff, whichever outage caused it: a handoff inside another one's
    radio-link-failure outage shares that silence, v5 004 handoffs 2, 3 and 4), or it is in the
    handoff's window and :func:`owner` gives it to this handoff."""
    return g[0] <= h["ts"] <= g[1] or owner(g, h["carrier"], windows) == h["handoff_id"]


def owner(g: tuple[float, float], carrier: str, windows: dict):
    """The handoff a silence belongs to: of those whose window it overlaps, the latest one
    at or before its start (else the earliest); None when it overlaps none. A silence in the
    loss burst of two close handoffs is the second's, never counted for both."""
    over = [(lo, hid) for (c, hid), (lo, hi) in windows.items() if c == carrier and _overlap(g[0], g[1], lo, hi)]
    if not over:
        return None
    before = [o for o in over if o[0] <= g[0]]
    return max(before)[1] if before else min(over)[1]
