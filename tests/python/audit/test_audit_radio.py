"""Handoffs from the radio log and M24 suspensions judged against the scenario's own events
(hsrtcp.audit.radio), on the committed Rattan run tests/data/lab_truth/run."""

from __future__ import annotations

import shutil
from pathlib import Path

from hsrtcp.audit.radio import audit_bundle, scheduled, silences

RUN = Path(__file__).resolve().parents[2] / "data" / "lab_truth" / "run"
PHONE = "capture/phone_p1.pcap"


def _outcomes(rows, detector):
    return [(r["handoff_id"], r["outcome"]) for r in rows if r["detector"] == detector]


def test_the_committed_run_judged_against_its_schedule():
    rows = audit_bundle(RUN, RUN / PHONE, {"run": "lab_truth"})
    # events.csv: three LTE -> LTE handoffs (cells 1000000 -> 1 -> 2 -> 3), none returning
    assert _outcomes(rows, "handoff") == [("0", "TP"), ("1", "TP"), ("2", "TP")]
    assert all(r["offset_s"] == 0.0 for r in rows if r["detector"] == "handoff")  # the log has a row at the change
    assert _outcomes(rows, "handoff inter-RAT") == [("0", "TN"), ("1", "TN"), ("2", "TN")]
    assert _outcomes(rows, "handoff ping-pong") == [("0", "TN"), ("1", "TN"), ("2", "TN")]
    m24 = [r for r in rows if r["detector"] == "M24 suspension"]
    assert m24, "the download spans the handoffs: one suspensions row each"
    for r in m24:
        if r["outcome"] == "TP":  # the gap tied to the handoff is the phone's silence in its impairments
            assert abs(r["suspension_s"] - r["truth_suspension_s"]) < 1e-6


def test_a_planted_schedule_gives_the_constructed_verdicts(tmp_path):
    """The schedule says the third handoff went to cell 1000009 (the radio log says 1000003):
    a miss of the scheduled one and a false alarm for the logged one; a handoff moved back to
    the cell the previous one left is a ping-pong the log does not show."""
    b = tmp_path / "run"
    shutil.copytree(RUN, b)
    ev = (b / "events.csv").read_text()
    assert "handoff,7.500,7.500,1,M,2,1000002,1000003" in ev
    (b / "events.csv").write_text(ev.replace("handoff,7.500,7.500,1,M,2,1000002,1000003",
                                             "handoff,7.500,7.500,1,M,2,1000002,1000009"))
    rows = audit_bundle(b, b / PHONE, {"run": "planted"})
    assert [r["outcome"] for r in rows if r["detector"] == "handoff"] == ["TP", "TP", "FN", "FP"]
    assert not [r for r in rows if r["detector"] == "M24 suspension" and r["handoff_id"] == "2"]


def test_truth_silences_come_from_the_phone_capture():
    ev = scheduled(RUN)
    assert [e["kind"] for e in ev].count("handoff") == 3
    flow = {"client_addr": None}
    from hsrtcp.pcapio import read_tcp

    pkts = list(read_tcp(RUN / PHONE))
    syn = next(p for p in pkts if p.flags & 0x02 and not p.flags & 0x10)
    flow = {"client_addr": syn.src, "client_port": syn.sport, "server_addr": syn.dst, "server_port": syn.dport,
            "first_ts": pkts[0].ts_ns / 1e9, "last_ts": pkts[-1].ts_ns / 1e9}
    gaps = silences(RUN / PHONE, flow)
    assert gaps and all(b - a >= 0.2 for a, b in gaps)
    # the 0.4-s held outage of handoff 0 (window 2.5-2.9 s) silences the phone
    h0 = next(e for e in ev if e["kind"] == "outage" and e["handoff_id"] == "0")
    assert any(a <= h0["ts_end"] + 0.5 and b >= h0["ts"] for a, b in gaps)
