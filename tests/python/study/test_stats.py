"""The cell statistics: bootstrap intervals cover a known mean at about the stated rate,
the cluster bootstrap draws flows, and the too-few-flows rule."""

from __future__ import annotations

import numpy as np
import pytest

from hsrtcp.study import stats


def _coverage(trials: int, draw, stat_fn, truth: float) -> float:
    rng = np.random.default_rng(1)
    hits = 0
    for t in range(trials):
        cell = stat_fn(draw(rng), rng)
        hits += cell.value_lo <= truth <= cell.value_hi
    return hits / trials


def test_mean_interval_covers_the_known_mean_at_the_stated_rate():
    # 400 samples of 40 flows from N(3, 1): the 95 % interval must contain 3 in about 95 % of
    # them (binomial sd of the rate over 400 trials: 1.1 points; the percentile bootstrap is
    # a little narrow at n = 40, hence the lower bound 0.90)
    rate = _coverage(400, lambda r: r.normal(3.0, 1.0, 40).tolist(),
                     lambda x, r: stats.per_flow(x, min_flows=5, n_boot=1000, rng=r), 3.0)
    assert 0.90 <= rate <= 0.99, rate


def test_median_interval_covers_the_known_median():
    # exponential with mean 1: median ln 2
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(300):
        cell = stats.per_flow(rng.exponential(1.0, 60).tolist(), min_flows=5, n_boot=600, rng=rng)
        hits += cell.median_lo <= np.log(2) <= cell.median_hi
    assert 0.90 <= hits / 300 <= 0.99


def test_pooled_interval_resamples_flows_not_samples():
    # 30 flows, each 50 samples around its own level (level ~ N(10, 2), noise sd 0.1): the
    # samples of a flow are nearly identical, so the honest interval of the pooled mean is as
    # wide as the flows' spread (sd 2 / sqrt(30) ~ 0.37 -> 95 % width ~ 1.4), not as narrow
    # as 1500 independent samples would make it (~ 0.2)
    def draw(r):
        return [list(r.normal(r.normal(10.0, 2.0), 0.1, 50)) for _ in range(30)]
    rate = _coverage(300, draw, lambda x, r: stats.pooled(x, min_flows=5, n_boot=800, rng=r, median=False), 10.0)
    assert 0.88 <= rate <= 0.99, rate
    cell = stats.pooled(draw(np.random.default_rng(5)), min_flows=5, n_boot=800, rng=np.random.default_rng(6))
    assert cell.n_flows == 30 and cell.n == 1500
    assert cell.value_hi - cell.value_lo > 0.8


def test_ratio_is_sum_over_sum_with_flow_resampling():
    cell = stats.ratio([1, 0, 3, None], [2, 0, 6, 4], min_flows=2, n_boot=500, rng=np.random.default_rng(0))
    # the flow with denominator 0 and the one with a null numerator do not count
    assert cell.n_flows == 2 and cell.n == 8
    assert cell.value == pytest.approx(4 / 8)
    assert cell.value_lo == pytest.approx(0.5) and cell.value_hi == pytest.approx(0.5)  # both flows are 50 %
    assert cell.median is None


def test_too_few_flows_gives_null_and_a_note():
    cell = stats.per_flow([1.0, 2.0, 3.0, None], min_flows=5, n_boot=100, rng=np.random.default_rng(0))
    assert cell.n_flows == 3 and cell.n == 3
    assert cell.value is None and cell.value_lo is None and cell.median is None
    assert cell.note == "3 flows < --min-flows 5"
    ok = stats.per_flow([1.0, 2.0, 3.0], min_flows=3, n_boot=100, rng=np.random.default_rng(0))
    assert ok.value == 2.0 and ok.note is None
    few = stats.per_flow([1.0, 2.0, 3.0], min_flows=3, n_boot=100, rng=np.random.default_rng(0),
                         min_interval=stats.MIN_INTERVAL_FLOWS)  # the study tables' rule (issue 38)
    assert few.value == 2.0 and few.note == "3 flows < 5: no interval" and few.value_lo is None
    assert stats.per_flow([], min_flows=1, n_boot=10, rng=np.random.default_rng(0)).note == "no flows"
    assert stats.per_flow([None, None], min_flows=1, n_boot=10,
                          rng=np.random.default_rng(0)).note == "none of the 2 flows has a value"
    pooled = stats.pooled([[1.0] * 100, [2.0] * 100], min_flows=3, n_boot=10, rng=np.random.default_rng(0))
    assert pooled.value is None and pooled.n == 200 and pooled.note == "2 flows < --min-flows 3"


def test_no_bootstrap_gives_values_without_intervals():
    cell = stats.per_flow([1.0, 2.0, 6.0], min_flows=1, n_boot=0, rng=np.random.default_rng(0))
    assert (cell.value, cell.median, cell.value_lo, cell.median_hi) == (3.0, 2.0, None, None)


def test_same_seed_and_cell_give_the_same_interval():
    x = list(np.random.default_rng(3).normal(0, 1, 30))
    a = stats.per_flow(x, min_flows=1, n_boot=300, rng=stats.rng_for(7, "t|m|('static',)"))
    b = stats.per_flow(x, min_flows=1, n_boot=300, rng=stats.rng_for(7, "t|m|('static',)"))
    c = stats.per_flow(x, min_flows=1, n_boot=300, rng=stats.rng_for(8, "t|m|('static',)"))
    assert (a.value_lo, a.value_hi) == (b.value_lo, b.value_hi)
    assert (a.value_lo, a.value_hi) != (c.value_lo, c.value_hi)


def test_resamples_come_in_bounded_blocks(monkeypatch):
    # memory stays bounded for many flows: blocks of at most BLOCK_ELEMENTS indices, n_boot rows in all
    monkeypatch.setattr(stats, "BLOCK_ELEMENTS", 1000)
    blocks = list(stats._resamples(np.random.default_rng(0), 300, 50))
    assert all(b.size <= 1000 for b in blocks) and sum(b.shape[0] for b in blocks) == 50
    # one flow more than a block: one resample per block
    assert [b.shape for b in stats._resamples(np.random.default_rng(0), 1500, 3)] == [(1, 1500)] * 3
    cell = stats.per_flow(list(np.random.default_rng(1).normal(5, 1, 300)), min_flows=5, n_boot=200,
                          rng=np.random.default_rng(2))
    assert cell.value_lo < cell.value < cell.value_hi and cell.median_lo < cell.median < cell.median_hi


# Large groups (issue 32): from stats.LARGE_FLOWS flows a cell's interval is the normal
# approximation of its flow bootstrap. The witness is the bootstrap itself: the same cell with
# the threshold raised out of reach, on data where both are cheap enough to compute.

def _large_and_bootstrap(monkeypatch, fn, *args, **kwargs):
    monkeypatch.setattr(stats, "LARGE_FLOWS", 2000)
    large = fn(*args, rng=np.random.default_rng(7), **kwargs)
    monkeypatch.setattr(stats, "LARGE_FLOWS", 10**12)
    boot = fn(*args, rng=np.random.default_rng(7), **kwargs)
    return large, boot


def _close(a: float, b: float, width: float, tol: float = 0.04) -> bool:
    # the bootstrap's 2.5 % quantile from 4000 resamples has a Monte Carlo sd of about 1 % of
    # the interval's width (the differences seen on these data: at most 1.2 %)
    return abs(a - b) <= tol * width


def test_large_group_mean_and_median_interval_match_the_flow_bootstrap(monkeypatch):
    x = np.random.default_rng(11).lognormal(0.0, 1.0, 5000).tolist()  # skewed, like RTTs
    large, boot = _large_and_bootstrap(monkeypatch, stats.per_flow, x, min_flows=1, n_boot=4000)
    assert large.note == stats.LARGE_NOTE and boot.note is None
    assert (large.value, large.median, large.n_flows) == (boot.value, boot.median, boot.n_flows)
    w = boot.value_hi - boot.value_lo
    assert _close(large.value_lo, boot.value_lo, w) and _close(large.value_hi, boot.value_hi, w)
    w = boot.median_hi - boot.median_lo
    assert _close(large.median_lo, boot.median_lo, w, 0.06) and _close(large.median_hi, boot.median_hi, w, 0.06)


def test_large_group_pooled_interval_resamples_flows(monkeypatch):
    # flows with a level of their own: samples of one flow are alike, so the flow (cluster)
    # interval is much wider than one over independent samples, and the approximation must be too
    rng = np.random.default_rng(12)
    flows = [(rng.normal(0.0, 1.0) + rng.normal(0.0, 0.2, rng.integers(1, 12))).tolist() for _ in range(3000)]
    large, boot = _large_and_bootstrap(monkeypatch, stats.pooled, flows, min_flows=1, n_boot=4000)
    assert large.note == stats.LARGE_NOTE
    assert (large.value, large.median, large.n) == (boot.value, boot.median, boot.n)
    w = boot.value_hi - boot.value_lo
    assert _close(large.value_lo, boot.value_lo, w) and _close(large.value_hi, boot.value_hi, w)
    w = boot.median_hi - boot.median_lo
    assert _close(large.median_lo, boot.median_lo, w, 0.06) and _close(large.median_hi, boot.median_hi, w, 0.06)
    flat = np.concatenate([np.asarray(f) for f in flows])
    naive = 2 * 1.96 * flat.std() / np.sqrt(flat.size)  # as if the samples were independent
    assert large.value_hi - large.value_lo > 1.5 * naive


def test_large_group_share_interval_matches_the_flow_bootstrap(monkeypatch):
    rng = np.random.default_rng(13)
    den = rng.integers(1, 20, 4000).astype(float)
    num = rng.binomial(den.astype(int), rng.beta(2, 5, den.size)).astype(float)
    large, boot = _large_and_bootstrap(monkeypatch, stats.ratio, num.tolist(), den.tolist(), min_flows=1, n_boot=4000)
    assert large.note == stats.LARGE_NOTE and (large.value, large.n) == (boot.value, boot.n)
    w = boot.value_hi - boot.value_lo
    assert _close(large.value_lo, boot.value_lo, w) and _close(large.value_hi, boot.value_hi, w)


def test_a_group_of_large_flows_default_size_gets_its_interval_quickly():
    # at the real threshold: 10^5 flows take the approximation (1000 resamples of them took
    # seconds of CPU a cell before), with the interval around the mean
    x = np.random.default_rng(14).exponential(2.0, stats.LARGE_FLOWS)
    cell = stats.per_flow(x.tolist(), min_flows=1, n_boot=1000, rng=np.random.default_rng(0))
    assert cell.note == stats.LARGE_NOTE
    se = x.std() / np.sqrt(x.size)
    assert cell.value_lo == pytest.approx(x.mean() - 1.959964 * se, rel=1e-6)
    assert cell.value_hi == pytest.approx(x.mean() + 1.959964 * se, rel=1e-6)
    assert cell.median_lo < cell.median < cell.median_hi


def _plain_large(num, den, samples, ends, median, level=stats.LEVEL):
    """The large cell's intervals as docs/study.md states them, each step a plain numpy call
    (an array of ones for a mean over flows, np.median and np.quantile on the samples as given)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    r = num.sum() / den.sum()
    t = num - den * r
    se = float(np.sqrt(np.dot(t, t)) / den.sum())
    out = [float(r - z * se), float(r + z * se)]
    if samples is not None:
        le = samples <= median
        if ends is None:
            below, n_all = int(np.count_nonzero(le)), int(le.size)
            f = below / n_all
            ss = below * (1.0 - f) ** 2 + (n_all - below) * f ** 2
        else:
            c = np.add.reduceat(le, ends - den.astype(np.int64), dtype=np.float64)
            c -= (c.sum() / den.sum()) * den
            ss, n_all = float(np.dot(c, c)), den.sum()
        se_f = float(np.sqrt(ss) / n_all)
        out += [float(q) for q in np.quantile(samples, [max(0.0, 0.5 - z * se_f), min(1.0, 0.5 + z * se_f)])]
    return out


@pytest.mark.parametrize("n", [stats.LARGE_FLOWS, stats.LARGE_FLOWS + 1])
def test_large_cells_are_their_formulas_bit_for_bit(n):
    # the large cells skip the array of ones of a mean over flows and take the median and its
    # quantiles from one copy of the values (issue 32: 10^7 flows); every value is the plain
    # computation's, bit for bit (the committed tables and the in-memory path depend on it)
    rng = np.random.default_rng(21)
    x = rng.lognormal(0.0, 1.5, n)
    cell = stats.per_flow_array(x.copy(), n, min_flows=1, n_boot=1000, rng=None)
    assert cell.note == stats.LARGE_NOTE and cell.median == float(np.median(x)) and cell.value == float(x.mean())
    assert [cell.value_lo, cell.value_hi, cell.median_lo, cell.median_hi] == _plain_large(x, np.ones(n), x, None,
                                                                                          np.median(x))
    sizes = rng.integers(1, 9, n)
    flat = rng.normal(0.0, 1.0, int(sizes.sum())) + np.repeat(rng.normal(0.0, 1.0, n), sizes)
    cell = stats.pooled_arrays(flat.copy(), sizes, n, min_flows=1, n_boot=1000, rng=None)
    ends = np.cumsum(sizes)
    sums = np.add.reduceat(flat, ends - sizes)
    assert cell.median == float(np.median(flat))
    assert [cell.value_lo, cell.value_hi, cell.median_lo, cell.median_hi] == _plain_large(
        sums, sizes.astype(float), flat, ends, np.median(flat))
    den = rng.integers(1, 20, n).astype(float)
    num = rng.binomial(den.astype(int), 0.3).astype(float)
    cell = stats.ratio_arrays(num, den, n, min_flows=1, n_boot=1000, rng=None)
    assert [cell.value_lo, cell.value_hi] == _plain_large(num, den, None, None, None)


def test_pooled_median_of_a_resample_is_numpys_on_its_samples():
    # the resample's median from flow counts over the samples sorted once equals np.median of
    # the drawn flows' samples concatenated, bit for bit (ties and duplicates included)
    rng = np.random.default_rng(5)
    for _ in range(200):
        k = int(rng.integers(1, 30))
        groups = [0.0 + np.round(rng.normal(0, 1, int(rng.integers(1, 6))), int(rng.integers(0, 3))) for _ in range(k)]
        allx = np.concatenate(groups)
        order = np.argsort(allx, kind="stable")
        owner = np.repeat(np.arange(k), [g.size for g in groups])[order]
        for _ in range(10):
            row = rng.integers(0, k, k)
            want = np.median(np.concatenate([groups[i] for i in row]))
            got = stats._pooled_median(allx[order], owner, np.bincount(row, minlength=k))
            assert np.float64(got).tobytes() == np.float64(want).tobytes()
