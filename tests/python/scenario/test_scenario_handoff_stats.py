"""Handoff statistics of the presets against the seed papers (docs/metrics.md).

Over long generated trips (many seeds where a trip is short) the handoff process must match:
- cruise (rural, 300 km/h): mean interval 12.9 s and 45.1 % of intervals <= 10 s (S3, T3-18/19);
- dense urban at in-city speed: about 12 handoffs per 3-minute flow (S0, T0-20), classes 9–16;
- farmland: sometimes no handoff at all in 3 minutes (S0, T0-21);
- the Beijing–Tianjin example trip: ≈ 71 handoffs, whole-trip mean 25.4 s (T3-15) and the
  steady-300-km/h window 750–1200 s with mean 12.9 s (T3-18).
Tolerances are stated per test; they are wide enough for sampling noise (thousands of intervals)
and narrow enough to fail if a preset drifts.
"""

import numpy as np
import pytest

from hsrtcp.lab import scenario as S


def _intervals(area, speed, duration=20000.0, seed=1):
    r = S.load(S.from_options(speed_kmh=speed, area=area, duration_s=duration, seed=seed)).realize()
    return r.handoff_times(0)


def test_cruise_preset_matches_s3():
    t = np.concatenate([_intervals("rural", 300, seed=s) + 0 for s in (1,)])
    iv = np.diff(t)
    assert len(iv) > 1000
    assert iv.mean() == pytest.approx(12.9, rel=0.08)
    assert (iv <= 10.0).mean() == pytest.approx(0.451, abs=0.04)


def test_dense_urban_about_twelve_per_three_minutes():
    t = _intervals("dense_urban", 160, duration=18000.0, seed=3)
    counts = np.histogram(t, bins=np.arange(0.0, 18000.0 + 1, 180.0))[0]
    assert 10 <= np.median(counts) <= 14
    assert counts.max() >= 12            # "up to 12" happens …
    assert np.percentile(counts, 90) <= 18   # … without absurd rates


def test_farmland_sometimes_no_handoff_in_three_minutes():
    t = _intervals("farmland", 300, duration=36000.0, seed=5)
    counts = np.histogram(t, bins=np.arange(0.0, 36000.0 + 1, 180.0))[0]
    assert 0.01 < (counts == 0).mean() < 0.25
    assert np.diff(t).mean() > 30.0


def test_speed_scales_the_interval():
    slow = np.diff(_intervals("rural", 150, duration=20000.0)).mean()
    fast = np.diff(_intervals("rural", 300, duration=20000.0)).mean()
    assert slow / fast == pytest.approx(2.0, rel=0.1)


def test_static_train_has_no_handoffs():
    r = S.load(S.from_options(speed_kmh=0, area="urban", duration_s=600)).realize()
    assert len(r.handoff_times(0)) == 0


def test_bt_trip_whole_and_cruise_window(scenarios_dir):
    n, means, cruise = [], [], []
    base = S.load(scenarios_dir / "bt-300kmh.toml")
    for seed in range(1, 21):
        r = base.with_overrides(seed=seed).realize()
        t = r.handoff_times(0)
        n.append(len(t))
        means.append(np.diff(t).mean())
        w = t[(t >= 750) & (t < 1200)]
        cruise.extend(np.diff(w))
        # the speed profile: standing, then 300 km/h through the cruise window, standing at the end
        assert r.trip.v_at(900.0) * 3.6 == pytest.approx(300.0, abs=0.5)
        assert r.trip.v_at(5.0) == 0.0
    assert np.mean(n) == pytest.approx(71, rel=0.15)
    # measured 21.2 s: ~10 % more handoffs than S3 in the slow city sections (scenario.md §3);
    # S3's own 25.4 s is itself inconsistent with its trip time (A33)
    assert np.mean(means) == pytest.approx(25.4, rel=0.2)
    assert np.mean(cruise) == pytest.approx(12.9, rel=0.12)
    # 6 inter-system handoffs (T3-15), all inside the 129-s hole (462–591 s, T3-11/17): entry
    # and exit exactly at its edges, with an LTE<->EDGE ping-pong at each edge
    for seed in (1, 2, 3):
        r = base.with_overrides(seed=seed).realize()
        inter = [h.t for h in r.layouts[0].handoffs if h.inter_system]
        assert len(inter) == 6
        assert inter[0] == pytest.approx(462.0) and inter[-1] == pytest.approx(591.0)
        assert all(462.0 <= t <= 591.0 for t in inter)
