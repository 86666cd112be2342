"""The instance metrics' definitions on reference values worked out by hand from S4's
equations (docs/metrics.md M29–M34, A23–A26), and the CLI's input errors. The lab runs that feed
them real traffic are in tests/python/lab/test_mptcp_conjunction.py."""

from __future__ import annotations

import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.mptcp import classes, kt, roles, utilization
from hsrtcp.mptcp.degradation import DegradationRule, detect, first_fall


def test_u_c_and_u_t_follow_s4_equations():
    # R = (10, 5) Mbit/s single path, R' = (6, 6): U_c = 12 / 10, U_t = 12 / 15
    assert utilization.conjunction_efficiency([6, 6], [10, 5]) == pytest.approx(1.2)
    assert utilization.total_utilization([6, 6], [10, 5]) == pytest.approx(0.8)
    assert utilization.subflow_utilization(6, 5) == pytest.approx(1.2)
    # A23: U_c may exceed N when subflows beat their single-path twins
    assert utilization.conjunction_efficiency([9, 9], [3, 3]) == pytest.approx(6.0)
    # unknown stays unknown (null), a dead single path gives no ratio
    assert utilization.conjunction_efficiency([6, None], [10, 5]) is None
    assert utilization.total_utilization([1, 1], [0, 0]) is None
    assert utilization.subflow_utilization(3, 0) is None


@pytest.mark.parametrize(("u_c", "u_t", "barrier", "expected"), [
    (0.99, 0.95, 0.90, "negative"),
    (1.00, 0.95, 0.90, "positive"),       # U_c ≥ 1 includes 1
    (1.20, 0.90, 0.90, "semi-positive"),  # strict: U_t must exceed the barrier
    (1.20, 0.91, 0.90, "positive"),
    (1.20, 0.91, 0.95, "semi-positive"),  # a stricter barrier
    (None, 0.91, 0.90, None),
])
def test_m31_classes(u_c, u_t, barrier, expected):
    assert classes.instance_class(u_c, u_t, barrier) == expected


def test_a25_detects_a_lasting_fall_at_its_first_second():
    r = [10.0] * 60
    sub = [8.0] * 30 + [1.0] * 30
    d = detect(sub, r)
    assert d is not None and d.onset_s == 30
    assert d.before_ratio == pytest.approx(0.8) and d.drop_ratio == pytest.approx(1 / 8)
    assert d.after_ratio == pytest.approx(0.1)
    assert first_fall(sub, r) == 30


def test_a25_rejects_a_fall_that_the_single_path_shares_or_recovers():
    r = [10.0] * 30 + [0.0] * 10 + [10.0] * 20  # the carrier itself went down (an outage)
    sub = [8.0] * 30 + [0.0] * 10 + [8.0] * 20
    assert first_fall(sub, r) == 30   # (i) and (ii) hold
    assert detect(sub, r) is None     # (iii): the subflow does as well as single path after it
    short = [8.0] * 45 + [0.0] * 15   # falls with only 15 s left (< 20 s): not judged
    assert detect(short, [10.0] * 60) is None
    weak = [4.0] * 30 + [0.0] * 30    # carried < 0.5 × r before: (i) fails with the defaults
    assert detect(weak, [10.0] * 60) is None
    assert detect(weak, [10.0] * 60, DegradationRule(before=0.3)).onset_s == 30


def test_a25_onset_skips_a_dip_that_recovers_before_the_lasting_fall():
    # A CI run's backup switch at 15 s: the scheduler left the subflow idle for one second at
    # 12 s, then it carried its usual rate until the switch drained. The dip meets (i), (ii)
    # and, since (iii) averages the whole tail, (iii) too; (ii') puts the onset on the fall
    # that lasts.
    r = [9.0] * 40
    sub = [2.4] * 12 + [0.0] + [2.4] * 4 + [0.0] * 23
    assert detect(sub, r, DegradationRule(before=0.2)).onset_s == 17
    assert detect(sub, r, DegradationRule(before=0.2, hold_s=1)).onset_s == 12  # A25 as written
    assert first_fall(sub, r, DegradationRule(before=0.2)) == 12  # a sudden fall, lasting or not
    two = [2.4] * 12 + [0.0, 0.0, 2.4] + [2.4] * 2 + [0.0] * 23  # a fall that holds on average
    assert detect(two, r, DegradationRule(before=0.2)).onset_s == 12


def _kt_tables():
    # one flow, bins 0..9 s from t=100; retransmissions at 101.2 (episode to 101.4) and 106.5
    series = pl.DataFrame({
        "flow_id": [7] * 10, "ts": [100.0 + i for i in range(10)], "bin_s": [1.0] * 10,
        "bif_max": [50_000.0, 60_000, 30_000, 35_000, 40_000, 45_000, 52_000, 20_000, 25_000, 30_000],
        "bif_mean": [40_000.0, 45_000, 20_000, 30_000, 38_000, 44_000, 50_000, 15_000, 22_000, 28_000],
    })
    events = pl.DataFrame({"flow_id": [7, 7, 7, 7], "kind": ["retransmission"] * 4,
                           "class": ["fast", "sack_refill", "tlp", "fast"],
                           "ts": [101.2, 101.4, 104.0, 106.5]})
    return series, events


def test_kt_between_two_loss_episodes():
    series, events = _kt_tables()
    # the TLP at 104.0 is not a loss; episodes: (101.2, 101.4) and (106.5, 106.5)
    assert kt.loss_episodes(events, 7) == [(101.2, 101.4), (106.5, 106.5)]
    (row,) = kt.intervals(series, events, 7, t0=100.0)
    t = 106.5 - 101.2
    # after loss 1: first bin starting after its recovery (102 s, mean 20 000); before loss 2:
    # last bin ending by 106.5 (105 s, max 45 000); literal: mean of bif_mean over 102..105
    assert row["bif_after_loss1"] == 20_000 and row["bif_before_loss2"] == 45_000
    assert row["k_t"] == pytest.approx((45_000 - 20_000) / t)
    assert row["k_t_literal"] == pytest.approx((20_000 + 30_000 + 38_000 + 44_000) / 4 / t)
    assert row["loss1_s"] == pytest.approx(1.2) and row["interval_s"] == pytest.approx(t)


def test_lab_path_from_the_phone_address():
    assert roles.lab_path("10.1.2.1") == 2
    assert roles.lab_path("10.1.12.1") == 12
    assert roles.lab_path("10.2.1.1") is None and roles.lab_path(None) is None


def test_cli_names_the_path_that_is_not_an_input(tmp_path, capsys):
    assert main(["mptcp", str(tmp_path)]) == 3
    assert str(tmp_path) in capsys.readouterr().err
    assert main(["mptcp", str(tmp_path / "missing")]) == 3
    assert main(["mptcp"]) == 2


@pytest.mark.parametrize("value", ["0", "-2", "x"])
def test_cli_refuses_a_hold_below_one_second(value, tmp_path, capsys):
    from hsrtcp.cli import main

    code = main(["mptcp", str(tmp_path), "--hold", value])
    err = capsys.readouterr().err
    assert code == 2
    assert "Invalid value for '--hold'" in err and "Traceback" not in err
