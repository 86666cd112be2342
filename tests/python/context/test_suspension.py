"""M24 with A12 on hand-made ``gap`` events (events.md: ts = last packet before the silence,
ts_end = first packet after, class stalled/idle), before the engine writes them."""

from __future__ import annotations

import polars as pl
import pytest

from hsrtcp.context.suspension import suspensions

H = 1000.0


def _phone(*flows):
    return pl.DataFrame([{"flow_id": i, "run_id": None, "carrier": c, "first_ts": a, "last_ts": b}
                         for i, (c, a, b) in enumerate(flows)],
                        schema={"flow_id": pl.UInt64, "run_id": pl.String, "carrier": pl.String,
                                "first_ts": pl.Float64, "last_ts": pl.Float64})


def _handoffs(*ts, carrier="M"):
    return pl.DataFrame({"run_id": [None] * len(ts), "carrier": [carrier] * len(ts), "ts": list(ts),
                         "system": ["intra"] * len(ts), "ping_pong": [False] * len(ts)},
                        schema_overrides={"run_id": pl.String})


def _gaps(*rows):
    return pl.DataFrame([{"flow_id": f, "ts": a, "ts_end": b, "class": c} for f, a, b, c in rows],
                        schema={"flow_id": pl.UInt64, "ts": pl.Float64, "ts_end": pl.Float64, "class": pl.String})


@pytest.mark.parametrize("gap, expected", [
    ((H - 0.3, H + 2.0, "stalled"), (2.3, H - 0.3, H + 2.0, True)),     # contains h
    ((H, H + 0.5, "idle"), (0.5, H, H + 0.5, False)),                    # starts at h
    ((H - 0.9, H - 0.4, "stalled"), (0.5, H - 0.9, H - 0.4, True)),      # ends before h, starts ≤ 1 s before
    ((H - 1.5, H - 0.6, "stalled"), (0.0, None, None, None)),            # starts > 1 s before h
    ((H + 0.12, H + 3.0, "stalled"), (2.88, H + 0.12, H + 3.0, True)),   # starts ≤ 0.5 s after h (lab delay)
    ((H + 0.6, H + 3.0, "stalled"), (0.0, None, None, None)),            # starts > 0.5 s after h
    ((H - 0.05, H + 0.1, "stalled"), (0.0, None, None, None)),           # < 200 ms: 0 (A12)
])
def test_a12_association_and_threshold(gap, expected):
    s = suspensions(_phone(("M", H - 10, H + 10)), _handoffs(H), _gaps((0, *gap)))
    assert s.select("suspension_s", "gap_start_ts", "gap_end_ts", "stalled").row(0) == pytest.approx(expected)


def test_one_row_per_handoff_inside_each_flow_of_its_carrier():
    phone = _phone(("M", H - 10, H + 10), ("M", H + 5, H + 30), ("U", H - 10, H + 10), (None, H - 10, H + 10))
    s = suspensions(phone, _handoffs(H, H + 20), _gaps((0, H - 0.1, H + 1.0, "stalled")))
    assert s.select("flow_id", "handoff_ts", "suspension_s").rows() == [(0, H, pytest.approx(1.1)),
                                                                        (1, H + 20, 0.0)]


def test_containing_gap_wins_over_an_earlier_or_later_one():
    g = _gaps((0, H - 0.9, H - 0.5, "idle"), (0, H - 0.2, H + 4.0, "stalled"), (0, H + 4.1, H + 4.4, "idle"))
    s = suspensions(_phone(("M", H - 10, H + 10)), _handoffs(H), g)
    assert s["suspension_s"].to_list() == [pytest.approx(4.2)]
    # one that ended before h against one that starts after h: the later one, even when the
    # earlier is nearer (the phone sees the break late); the earlier only when alone
    g = _gaps((0, H - 0.9, H - 0.5, "idle"), (0, H + 0.1, H + 0.4, "stalled"))
    s = suspensions(_phone(("M", H - 10, H + 10)), _handoffs(H), g)
    assert s["suspension_s"].to_list() == [pytest.approx(0.3)]
    g = _gaps((0, H - 0.9, H - 0.05, "idle"))
    s = suspensions(_phone(("M", H - 10, H + 10)), _handoffs(H), g)
    assert s["suspension_s"].to_list() == [pytest.approx(0.85)]
    # the audit's lab run 002_stalls-held_plain (docs/accuracy.md): a 0.21-s gap in the RTT
    # spike ended 0.028 s before the handoff, the 3.2-s outage silence began 0.19 s after it
    g = _gaps((0, H - 0.238, H - 0.028, "idle"), (0, H + 0.19, H + 3.405, "idle"))
    s = suspensions(_phone(("M", H - 10, H + 10)), _handoffs(H), g)
    assert s["suspension_s"].to_list() == [pytest.approx(3.215)]
    # the lab run that showed it (tests/python/context/test_lab_witness.py, 27 Nov): a 0.21-s
    # stall 0.23 s before the handoff, the outage's silence from 0.11 s after it
    g = _gaps((0, H - 0.436, H - 0.226, "idle"), (0, H + 0.106, H + 0.939, "idle"))
    s = suspensions(_phone(("M", H - 10, H + 10)), _handoffs(H), g)
    assert s["gap_start_ts"].to_list() == [pytest.approx(H + 0.106)]


def test_without_gap_events_the_suspension_is_null_with_a_reason():
    s = suspensions(_phone(("M", H - 10, H + 10)), _handoffs(H), None)
    assert s["suspension_s"].to_list() == [None]
    assert s["reason"][0].startswith("no gap events")


def test_data_outstanding_from_the_paired_server_flow():
    """At the phone of a download the gap is idle (all received data acknowledged); the
    server-side flow's overlapping stalled gap says data was outstanding."""
    g = _gaps((0, H - 0.1, H + 1.0, "idle"), (7, H - 0.05, H + 0.3, "stalled"), (8, H - 0.05, H + 0.3, "stalled"))
    phone = _phone(("M", H - 10, H + 10))
    assert suspensions(phone, _handoffs(H), g).select("stalled", "stalled_vantage").row(0) == (False, None)
    assert suspensions(phone, _handoffs(H), g, {0: 7}).select("stalled", "stalled_vantage").row(0) == (True, "server")
    idle_peer = _gaps((0, H - 0.1, H + 1.0, "idle"), (7, H + 1.5, H + 2.0, "stalled"))
    assert suspensions(phone, _handoffs(H), idle_peer, {0: 7})["stalled"].to_list() == [False]
