"""Handoffs, flow classes, signal categories and coverage on hand-made radio logs with known
content: ping-pong, inter-system handoffs at a coverage hole, a GPS gap, a clock offset.
Every expected number below follows from the log written in the test (see the comments)."""

from __future__ import annotations

import polars as pl
import pytest

from hsrtcp.context.classes import flow_class, flow_context, signal_s3, speed_class, u_rate
from hsrtcp.context.coverage import coverage
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio

from .logs import lab_log, one_hz

T0 = 1_700_000_000.0


def _flows(*intervals, carrier="M", preset=None):
    return pl.DataFrame({"flow_id": list(range(len(intervals))),
                         "first_ts": [T0 + a for a, _ in intervals], "last_ts": [T0 + b for _, b in intervals],
                         "run_id": [None] * len(intervals), "carrier": [carrier] * len(intervals),
                         "preset_reason": [preset] * len(intervals)},
                        schema_overrides={"flow_id": pl.UInt64, "run_id": pl.String, "carrier": pl.String,
                                          "preset_reason": pl.String})


def _context(tmp_path, rows, *intervals, offset=0.0, carrier="M"):
    lg = read_radio(lab_log(tmp_path / "radio.csv", rows), t0=T0, offset_s=offset)
    radio = lg.frame.with_columns(pl.lit(None, pl.String).alias("run_id"))
    h = handoffs(radio)
    return lg, h, flow_context(_flows(*intervals, carrier=carrier), radio, h)


def test_ping_pong_handoffs_and_intervals(tmp_path):
    # A -> B at 10, back to A at 12 (ping-pong), B again at 14.5 (ping-pong), C at 40 (new
    # cell), back to B at 55 (B was the cell before C, but 15 s later: not a ping-pong)
    rows = one_hz([(0.0, "LTE", 1, 100), (10.0, "LTE", 1, 200), (12.0, "LTE", 1, 100),
                   (14.5, "LTE", 1, 200), (40.0, "LTE", 1, 300), (55.0, "LTE", 1, 200)], 60)
    lg, h, ctx = _context(tmp_path, rows, (5.0, 20.0), (20.0, 39.0), (39.0, 58.0))
    assert h["ts"].to_list() == [T0 + t for t in (10.0, 12.0, 14.5, 40.0, 55.0)]
    assert h["old_cid"].to_list() == [100, 200, 100, 200, 300]
    assert h["new_cid"].to_list() == [200, 100, 200, 300, 200]
    assert h["ping_pong"].to_list() == [False, True, True, False, False]
    assert h["interval_s"].to_list() == [None, 2.0, 2.5, 25.5, 15.0]
    assert set(h["system"]) == {"intra"}
    assert h["line"].to_list() == [12, 14, 17, 43, 58]  # the rows showing the new cell
    assert ctx["handoffs"].to_list() == [3, 0, 2]
    assert ctx["ping_pongs"].to_list() == [2, 0, 0]
    assert ctx["flow_class"].to_list() == ["high_1_8", "high_0", "high_1_8"]
    assert ctx["class_reason"].to_list() == [None, None, None]


def test_inter_system_handoffs_at_a_coverage_hole(tmp_path):
    # LTE until 30 s, then a hole served by EDGE (an EDGE cell change at 45 s), LTE again at 60 s
    rows = one_hz([(0.0, "LTE", 1, 100), (30.0, "EDGE", 9, 900), (45.0, "EDGE", 9, 901),
                   (60.0, "LTE", 2, 101)], 80)
    lg, h, ctx = _context(tmp_path, rows, (20.0, 70.0), (32.0, 58.0), (62.0, 75.0))
    assert h.select("old_rat", "new_rat", "system").rows() == [
        ("LTE", "EDGE", "inter"), ("EDGE", "EDGE", "intra"), ("EDGE", "LTE", "inter")]
    across, inside, after = ctx.rows(named=True)
    assert (across["handoffs"], across["handoffs_inter"], across["handoffs_intra"]) == (3, 2, 1)
    assert across["rats"] == "EDGE,LTE" and across["rat_change"] is True
    assert (across["flow_class"], across["class_reason"]) == ("other", "rat change")  # A2 excludes it
    assert inside["rats"] == "EDGE" and inside["rat_change"] is False
    assert inside["flow_class"] == "high_1_8" and inside["handoffs_intra"] == 1
    assert inside["rsrp_mean_dbm"] is None and inside["signal_s3"] is None  # no LTE sample
    assert inside["signal_s4_good_share"] is None
    assert after["flow_class"] == "high_0" and after["usable"] is True
    # M28: LTE 0-30 and 60-80 of 80 logged seconds
    cov = coverage(lg.frame)
    assert cov.rows() == [(None, "M", 50.0, 80.0, 50.0 / 80.0)]


def test_gps_gap_makes_the_flow_unknown_with_the_reason(tmp_path):
    rows = one_hz([(0.0, "LTE", 1, 100)], 40, skip=(10, 23))  # no rows from 10 s to 23 s
    lg, h, ctx = _context(tmp_path, rows, (5.0, 20.0), (24.0, 30.0), (10.5, 11.0))
    assert ctx["flow_class"].to_list() == ["unknown", "high_0", "unknown"]
    assert ctx["class_reason"][0] == "gps gap 13.0 s; cell log gap 13.0 s"
    assert ctx["speed_class"].to_list() == ["unknown", "high", "unknown"]
    # a short flow inside the hole: the sample 0.5 s before it does not make it covered
    assert ctx["class_reason"][2].startswith("gps gap 13.0 s")
    # the hole is not logged time for M28 either
    assert coverage(lg.frame)["total_s"].to_list() == [40.0 - 13.0]


def test_clock_offset_puts_the_handoffs_into_the_flows(tmp_path):
    # the radio clock runs 100.04 s behind the capture clock: handoffs at 10 and 20 s of the
    # capture clock are logged at -90.04 and -80.04
    rows = one_hz([(0.0, "LTE", 1, 100), (10.0, "LTE", 1, 200), (20.0, "LTE", 1, 300)], 30)
    shifted = [(r[0] - 100.04, *r[1:]) for r in rows]
    flows = ((5.0, 15.0), (15.0, 25.0), (9.99, 10.01))
    _, _, wrong = _context(tmp_path, shifted, *flows)
    assert set(wrong["class_reason"]) == {"no overlap"}
    _, h, right = _context(tmp_path, shifted, *flows, offset=100.04)
    assert h["ts"].to_list() == pytest.approx([T0 + 10.0, T0 + 20.0])
    assert right["handoffs"].to_list() == [1, 1, 1]
    assert right["flow_class"].to_list() == ["high_1_8"] * 3


@pytest.mark.parametrize("speeds, expected", [
    ((0.0, 5.0), "static"), ((5.0, 6.0), "other"), ((5.1, 149.9), "low"), ((100.0, 150.0), "other"),
    ((280.0, 310.0), "high"), ((279.9, 300.0), "other"), ((300.0, 310.1), "other"), ((200.0, 200.0), "other"),
])
def test_speed_bands_of_m21_a2(speeds, expected):
    assert speed_class(*speeds) == expected


@pytest.mark.parametrize("speed, n, expected", [
    ("static", 0, ("static", None)), ("static", 1, ("other", "static with 1 handoffs")),
    ("low", 0, ("low", None)), ("high", 0, ("high_0", None)), ("high", 1, ("high_1_8", None)),
    ("high", 8, ("high_1_8", None)), ("high", 9, ("high_9_16", None)), ("high", 16, ("high_9_16", None)),
    ("high", 17, ("high_17+", None)), ("other", 0, ("other", "speed outside the M21 bands")),
])
def test_flow_classes_of_m21(speed, n, expected):
    assert flow_class(speed, n) == expected


def test_speed_class_uses_every_sample_in_the_flow(tmp_path):
    # 300 km/h except one sample at 270 km/h at 20 s: a flow over it is 'other'
    rows = one_hz([(0.0, "LTE", 1, 100)], 40, speed=lambda t: 270.0 if t == 20 else 300.0)
    _, _, ctx = _context(tmp_path, rows, (10.0, 30.0), (21.0, 35.0), (3.2, 3.4))
    assert ctx["speed_min_kmh"].to_list() == [270.0, 300.0, 300.0]
    assert ctx["flow_class"].to_list() == ["other", "high_0", "high_0"]
    assert ctx["speed_samples"].to_list() == [21, 15, 1]  # a 0.2-s flow: the sample before it


@pytest.mark.parametrize("rsrp, level", [(-60.0, "good"), (-85.0, "good"), (-85.1, "average"),
                                         (-95.0, "average"), (-100.0, "weak"), (-105.0, "weak"),
                                         (-105.1, "bad"), (None, None)])
def test_signal_levels_of_seed_003(rsrp, level):
    assert signal_s3(rsrp) == level


def test_signal_categories_of_both_seeds_kept_apart(tmp_path):
    # RSRP -88 dBm: "good" for seed 003 (>= -85? no: average) but outside seed 004's
    # "Good" range [-105, -90]; -95 dBm with RSRQ -10 dB is S4-good and S3-average.
    rows = [(float(t), "M", "LTE", 1, 100, 300.0, -88.0 if t < 5 else -95.0, -10.0) for t in range(10)]
    _, _, ctx = _context(tmp_path, rows, (0.0, 9.0), (0.0, 4.0), (5.0, 9.0))
    assert ctx["rsrp_mean_dbm"].to_list() == pytest.approx([-91.5, -88.0, -95.0])
    assert ctx["signal_s3"].to_list() == ["average", "average", "average"]
    assert ctx["signal_s4_good_share"].to_list() == pytest.approx([0.5, 0.0, 1.0])


def test_unknown_context_is_kept_with_the_reason(tmp_path):
    rows = one_hz([(0.0, "LTE", 1, 100)], 10)
    lg = read_radio(lab_log(tmp_path / "r.csv", rows), t0=T0)
    radio = lg.frame.with_columns(pl.lit(None, pl.String).alias("run_id"))
    ctx = flow_context(_flows((1.0, 2.0), (1.0, 2.0), carrier=None, preset="several carriers in the log"),
                       radio, handoffs(radio))
    assert ctx["flow_class"].to_list() == ["unknown", "unknown"]
    assert ctx["class_reason"].to_list() == ["several carriers in the log"] * 2
    none = flow_context(_flows((1.0, 2.0)), None, None)
    assert none.select("flow_id", "flow_class", "class_reason").rows() == [(0, "unknown", "no radio log")]


def test_u_rate_counts_collected_flows(tmp_path):
    ctx = pl.DataFrame({"flow_class": ["high_0", "other", "unknown", "static"], "usable": [True, False, False, True],
                        "carrier": ["M", "M", "U", "U"]})
    assert u_rate(ctx).rows() == [(4, 2, 0.5)]
    assert u_rate(ctx, ["carrier"]).rows() == [("M", 2, 1, 0.5), ("U", 2, 1, 0.5)]


def test_complementary_coverage_of_two_carriers(tmp_path):
    # M: LTE 0-10, EDGE 10-20; U: EDGE 0-5, LTE 5-20 -> M 50 %, U 75 %, either 100 %
    rows = []
    for t in range(21):
        rows.append((float(t), "M", "LTE" if t < 10 else "EDGE", 1, 100 if t < 10 else 900))
        rows.append((float(t), "U", "LTE" if t >= 5 else "EDGE", 2, 200 if t >= 5 else 800))
    lg = read_radio(lab_log(tmp_path / "r.csv", rows))
    cov = coverage(lg.frame).select("carrier", "lte_s", "total_s").rows()
    assert cov == [("M", 10.0, 20.0), ("U", 15.0, 20.0), ("*", 20.0, 20.0)]
