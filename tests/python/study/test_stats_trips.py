"""The trip as the unit (issue 34): cluster bootstrap by trip, paired permutation and exact
sign tests, Holm and Benjamini–Hochberg. Each is checked against a simulated null (its
false-positive rate is the nominal one, within the binomial interval of the simulation) and
against a planted effect (found)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hsrtcp.study import stats


def test_binomial_interval_matches_clopper_pearson():
    lo, hi = stats.binomial_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** 0.1, abs=1e-9)
    lo, hi = stats.binomial_interval(5, 10)
    assert lo == pytest.approx(0.187086, abs=1e-5) and hi == pytest.approx(0.812914, abs=1e-5)


def test_five_pairs_cannot_go_below_one_sixteenth():
    d = [0.3, 1.2, 0.7, 2.0, 0.1]
    assert stats.sign_test(d) == pytest.approx(0.0625)
    assert stats.paired_permutation(d) == pytest.approx(2 / 32)


def test_sign_flip_p_value_equals_brute_force():
    rng = np.random.default_rng(3)
    for n in (3, 6, 9):
        d = rng.normal(0.4, 1.0, n)
        obs = abs(d.sum())
        flips = [abs(sum(s * x for s, x in zip(signs, d))) >= obs - 1e-12
                 for signs in itertools.product((1, -1), repeat=n)]
        assert stats.paired_permutation(d.tolist()) == pytest.approx(sum(flips) / 2 ** n)


def test_random_flips_agree_with_the_exact_enumeration(monkeypatch):
    d = np.random.default_rng(4).normal(0.5, 1.0, 14).tolist()
    exact = stats.paired_permutation(d)
    monkeypatch.setattr(stats, "EXACT_PAIRS_MAX", 10)
    approx = stats.paired_permutation(d, rng=np.random.default_rng(5), n_perm=40_000)
    assert abs(approx - exact) < 4 * np.sqrt(exact * (1 - exact) / 40_000) + 1e-4


def test_paired_permutation_null_rejects_at_the_nominal_rate():
    # 2000 A/A campaigns of 8 trips, heavy-tailed symmetric trip differences: with 2^8 sign
    # patterns (p-values are multiples of 2/256) the attainable rate at 0.05 is 12/256
    rng = np.random.default_rng(6)
    sims = 2000
    k = sum(stats.paired_permutation(rng.standard_t(3, 8).tolist()) <= 0.05 for _ in range(sims))
    lo, hi = stats.binomial_interval(k, sims, 0.99)
    assert lo <= 12 / 256 <= hi, (k, lo, hi)


def test_planted_paired_effect_is_found():
    rng = np.random.default_rng(7)
    d = rng.normal(1.0, 1.0, 12).tolist()
    assert stats.paired_permutation(d) < 0.01
    assert stats.sign_test([abs(x) + 0.1 for x in d]) < 0.001


def _trips(rng, n_trips: int, flows: int, shift: float = 0.0):
    """One row per flow: a trip effect shared by its flows (sd 1) plus the flow's own (sd 0.3)."""
    trip = np.repeat(rng.normal(0.0, 1.0, n_trips), flows)
    return (trip + rng.normal(0.0, 0.3, n_trips * flows) + shift).tolist(), np.repeat(np.arange(n_trips), flows).tolist()


def test_cluster_bootstrap_by_trip_keeps_its_level_where_the_flow_bootstrap_does_not():
    # A null campaign: 30 trips of 3 flows each, true mean 0. The trip-cluster interval must
    # miss 0 at about the nominal 5 % (percentile intervals on 30 clusters run a little
    # narrow); the flow bootstrap, which treats the 90 flows as independent, misses far more.
    rng = np.random.default_rng(8)
    sims, miss_trip, miss_flow = 300, 0, 0
    for _ in range(sims):
        x, trip = _trips(rng, 30, 3)
        sums, _ = stats.cluster_sums({"x": x, "n": [1] * len(x)}, trip)
        _, lo, hi = stats.cluster_bootstrap(sums, stats.ratio_of_totals(0, 1), n_boot=400, rng=rng)
        miss_trip += not (lo <= 0.0 <= hi)
        cell = stats.per_flow(x, min_flows=5, n_boot=400, rng=rng, median=False)
        miss_flow += not (cell.value_lo <= 0.0 <= cell.value_hi)
    lo, hi = stats.binomial_interval(miss_trip, sims, 0.99)
    assert lo <= 0.08 and hi >= 0.05, (miss_trip, lo, hi)
    assert stats.binomial_interval(miss_flow, sims, 0.99)[0] > 0.12, miss_flow


def test_cluster_bootstrap_finds_a_planted_class_difference():
    # two classes on the same 20 trips (as high_0 and high_1_16 share the handoff trips):
    # the difference of their means, trips resampled jointly, excludes 0 for a planted shift
    rng = np.random.default_rng(9)
    a, trip = _trips(rng, 20, 2)
    b = (np.asarray(a) + 0.5 + rng.normal(0.0, 0.3, len(a))).tolist()
    sums, _ = stats.cluster_sums({"a": a, "na": [1] * len(a), "b": b, "nb": [1] * len(b)}, trip)
    value, lo, hi = stats.cluster_bootstrap(sums, lambda t: t[:, 2] / t[:, 3] - t[:, 0] / t[:, 1],
                                            n_boot=1000, rng=rng)
    assert 0.3 < value < 0.7 and lo > 0.0 and hi > lo


def test_cluster_bootstrap_needs_five_trips():
    sums, keys = stats.cluster_sums({"x": [1.0, 2.0, 3.0, None], "n": [1, 1, 1, 0]}, ["a", "a", "b", "c"])
    assert keys == ["a", "b", "c"] and sums.tolist() == [[3.0, 2.0], [3.0, 1.0], [0.0, 0.0]]
    assert stats.cluster_bootstrap(sums, stats.ratio_of_totals(0, 1), n_boot=100,
                                   rng=np.random.default_rng(0)) == (2.0, None, None)


def test_holm_and_bh_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, None]
    h = stats.holm(p)
    assert h[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and h[4] is None
    q = stats.benjamini_hochberg(p)
    assert q[:4] == pytest.approx([0.02, 0.04, 0.04, 0.02]) and q[4] is None


def test_holm_keeps_the_family_wise_rate_and_bh_finds_planted_effects():
    # 2000 families of 15 null contrasts: Holm rejects anything in at most 5 % of families
    # (within the simulation's binomial interval); unadjusted, about 1 − 0.95^15 = 54 % do
    rng = np.random.default_rng(10)
    sims, any_holm, any_raw = 2000, 0, 0
    for _ in range(sims):
        p = rng.uniform(size=15).tolist()
        any_holm += min(stats.holm(p)) <= 0.05
        any_raw += min(p) <= 0.05
    assert stats.binomial_interval(any_holm, sims, 0.99)[0] <= 0.05
    assert stats.binomial_interval(any_raw, sims, 0.99)[0] > 0.4
    # three planted effects among twelve nulls: BH at 0.05 keeps them
    p = [1e-4, 5e-4, 2e-3] + rng.uniform(0.2, 1.0, 12).tolist()
    q = stats.benjamini_hochberg(p)
    assert all(v <= 0.05 for v in q[:3]) and all(v > 0.05 for v in q[3:])


def test_strata_draw_each_stratum_its_own_number_of_trips():
    # stratum "a" holds the only trips with a value in column 0: an unstratified draw
    # sometimes draws none of them (a 0/0 resample), a stratified one always draws all three
    sums = np.asarray([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]] + [[0.0, 0.0]] * 7)
    strata = ["a"] * 3 + ["b"] * 7
    value, lo, hi = stats.cluster_bootstrap(sums, stats.ratio_of_totals(0, 1), n_boot=2000,
                                            rng=np.random.default_rng(1), strata=strata)
    assert value == 2.0 and 1.0 <= lo < 2.0 < hi <= 3.0
    seen = []
    stats.cluster_bootstrap(sums, lambda t: seen.append(t[:, 1].copy()) or t[:, 0], n_boot=500,
                            rng=np.random.default_rng(2), strata=strata)
    assert all((s == 3.0).all() for s in seen[1:])
