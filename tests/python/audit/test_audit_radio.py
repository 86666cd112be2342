"""Handoffs from the radio log and M24 suspensions judged against the scenario's own events
(hsrtcp.audit.radio), on the committed Rattan run tests/data/lab_truth/run."""

from __future__ import annotations

import shutil
from pathlib import Path

from hsrtcp.audit.radio import audit_bundle, judge, owner, scheduled, silences, theirs, window

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


def test_m24_any_silence_the_handoff_owns_is_a_hit():
    """Lab run 010_stalls-held_plain (docs/accuracy.md): the detector's gap is the outage's
    silence (0.012-2.592 s), the loss burst's RTO stall after it (2.931-8.201 s) is longer.
    Both are the handoff's; judging only against the longest counted a miss."""
    hit = [(0.012, 2.592), (2.931, 8.201)]
    assert judge((0.012, 2.592), hit) == (True, True, (0.012, 2.592))
    assert judge(None, hit) == (True, False, (2.931, 8.201))
    assert judge((9.0, 9.5), hit)[:2] == (True, False)
    assert judge((9.0, 9.5), []) == (False, True, None)  # a gap with no owned silence: FP
    assert judge(None, []) == (False, False, None)


def test_m24_a_silence_in_two_handoffs_windows_is_the_later_ones():
    """Lab run 004_cruise-mixed_plain, times from its t0: handoffs at 3.961 s (outage to 4.14,
    loss burst to 5.14) and 4.743 s (outage to 4.826, loss burst to 5.826)."""
    ev = [{"kind": "handoff", "handoff_id": "48", "carrier": "M", "ts": 3.961, "ts_end": 3.961},
          {"kind": "outage", "handoff_id": "48", "carrier": "M", "ts": 3.961, "ts_end": 4.14},
          {"kind": "loss_burst", "handoff_id": "48", "carrier": "M", "ts": 4.14, "ts_end": 5.14},
          {"kind": "handoff", "handoff_id": "49", "carrier": "M", "ts": 4.743, "ts_end": 4.743},
          {"kind": "outage", "handoff_id": "49", "carrier": "M", "ts": 4.743, "ts_end": 4.826},
          {"kind": "loss_burst", "handoff_id": "49", "carrier": "M", "ts": 4.826, "ts_end": 5.826}]
    w = {("M", h["handoff_id"]): window(ev, h) for h in ev if h["kind"] == "handoff"}
    assert w[("M", "48")] == (3.961, 5.64)
    assert owner((4.923, 6.572), "M", w) == "49"  # in both windows: the later handoff's
    assert owner((3.676, 3.992), "M", w) == "48"  # began in 48's RTT spike, before its window
    assert owner((6.4, 6.7), "M", w) is None
    assert owner((6.4, 6.7), "U", w) is None


def test_m24_a_silence_around_the_handoff_is_its_own_whichever_outage_caused_it():
    """v5 run 004_study-300-handoffs-v5_cubic_long_r804, times from its t0: handoff 6's
    radio-link failure holds the link 64.204-84.204 s; handoffs 7 (outage 71.9-72.553 s) and 8
    (a second failure, 81.359-87.923 s) happen inside it. The phone is silent 64.267-87.939 s,
    then 88.269-88.833 s (the end of 8's outage). M24 ties the long silence to all three (it
    contains each instant); judging by owner alone called 7 a false alarm and 8 a miss."""
    ev = [{"kind": "handoff", "handoff_id": "6", "carrier": "M", "ts": 64.204, "ts_end": 64.204},
          {"kind": "outage", "handoff_id": "6", "carrier": "M", "ts": 64.204, "ts_end": 84.204},
          {"kind": "handoff", "handoff_id": "7", "carrier": "M", "ts": 71.9, "ts_end": 71.9},
          {"kind": "outage", "handoff_id": "7", "carrier": "M", "ts": 71.9, "ts_end": 72.553},
          {"kind": "handoff", "handoff_id": "8", "carrier": "M", "ts": 81.359, "ts_end": 81.359},
          {"kind": "outage", "handoff_id": "8", "carrier": "M", "ts": 81.359, "ts_end": 87.923}]
    hs = {h["handoff_id"]: h for h in ev if h["kind"] == "handoff"}
    w = {("M", i): window(ev, h) for i, h in hs.items()}
    long, tail, later = (64.267, 87.939), (88.269, 88.833), (95.0, 95.5)
    assert owner(long, "M", w) == "6" and owner(tail, "M", w) == "8"
    hit = {i: [g for g in (long, tail, later) if theirs(g, h, w)] for i, h in hs.items()}
    assert hit == {"6": [long], "7": [long], "8": [long, tail]}
    assert judge(long, hit["7"])[:2] == (True, True)
    assert judge(long, hit["8"])[:2] == (True, True)
    assert judge(None, hit["8"])[:2] == (True, False)  # naming no gap is still a miss


def test_a_planted_handoff_inside_an_outage_shares_its_silence(tmp_path):
    """A fourth handoff planted at 2.8 s, inside the phone's silence of handoff 0's held
    outage (2.641-3.052 s from t0; the radio log moves to cell 1000004 there): M24 ties that
    silence to both, and both are right (before, the planted one was a false alarm)."""
    b = tmp_path / "run"
    shutil.copytree(RUN, b)
    ev = (b / "events.csv").read_text()
    at = "handoff,5.000,5.000,1,M,1,"
    (b / "events.csv").write_text(ev.replace(at, "handoff,2.800,2.800,1,M,3,1000001,1000004,LTE,LTE,,,,\n"
                                             "outage,2.800,2.850,1,M,3,,,,,held,,,\n" + at))
    radio = (b / "radio.csv").read_text().splitlines(keepends=True)
    assert radio[5].startswith("3.000,") and radio[6].startswith("4.000,") and radio[5].count(",1000001,") == 1
    new = [radio[4].replace("2.500,", "2.800,", 1).replace(",1000001,", ",1000004,")]
    radio[5:7] = [r.replace(",1000001,", ",1000004,") for r in radio[5:7]]
    (b / "radio.csv").write_text("".join(radio[:5] + new + radio[5:]))
    rows = audit_bundle(b, b / PHONE, {"run": "planted"})
    assert _outcomes(rows, "handoff") == [("0", "TP"), ("3", "TP"), ("1", "TP"), ("2", "TP")]
    m24 = {r["handoff_id"]: r for r in rows if r["detector"] == "M24 suspension"}
    assert m24["3"]["outcome"] == "TP" and m24["0"]["outcome"] == "TP"
    assert m24["3"]["suspension_s"] == m24["0"]["suspension_s"] == m24["3"]["truth_suspension_s"]


def test_the_console_summary_prints_the_radio_rows(tmp_path, capsys):
    """`hsrtcp audit RUN` prints handoffs and M24 as it prints the engine's detectors (the
    committed run has no server capture: before, its summary said only 'nothing to judge')."""
    from hsrtcp.cli import main

    assert main(["audit", str(RUN), "-o", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    text = "\n".join(lines)
    for want in ("handoff           radio  TP   3 FP   0 FN   0 TN   0",
                 "handoff inter-RAT radio  TP   0 FP   0 FN   0 TN   3",
                 "handoff ping-pong radio  TP   0 FP   0 FN   0 TN   3",
                 "M24 suspension    phone  TP   2 FP   0 FN   0 TN   1"):
        assert any(ln.startswith(want) for ln in lines), (want, text)
    assert "nothing to judge" not in text
