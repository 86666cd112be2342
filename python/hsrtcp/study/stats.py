"""Cell statistics of the study tables: means and medians with bootstrap confidence
intervals, the n behind them, and the too-few-flows rule.

Every cell of a study table summarizes the *flows* of one group (a flow class and the
``--by`` values). Three shapes of data reach a cell:

- one value per flow (M13 spurious RTO rate, M15 DupACK rate, M18/M19 times ...):
  :func:`per_flow` — mean and median over flows, a flow drawn as a whole;
- many samples per flow (M3's pooled 1-s throughput samples, A3; per-phase M10 durations;
  per-handoff M24 suspensions): :func:`pooled` — mean and median of the pooled samples;
- a share of events counted per flow (M14's RTOEI/ACKL shares over spurious RTOs, A6):
  :func:`ratio` — sum of numerators over sum of denominators.

Samples of one flow are not independent (a 3-minute flow's seconds are one trip), so the
bootstrap resamples *flows* with replacement and recomputes the statistic from everything
the drawn flows hold (a cluster bootstrap); for one value per flow this is the ordinary
bootstrap. Intervals are percentile intervals (``level``, default 95 %). numpy's own
``Generator`` draws the resamples; scipy.stats.bootstrap is not used because it has no
cluster resampling and scipy is not a dependency of hsrtcp.

Too few flows: a cell whose number of contributing flows is below ``min_flows`` gets null
statistics and a ``note`` saying so; ``n`` and ``n_flows`` are still given. An interval needs
at least :data:`MIN_INTERVAL_FLOWS` flows in the study's tables whatever ``min_flows`` is
(``min_interval``; callers with their own rule, hsrtcp.findings' pairs, pass theirs):
resampling one to four flows gives an "interval" that only repeats those flows' spread (with
one flow it is the value itself), so such a cell has its value and median, no interval, and a
note saying so.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

#: confidence level of every interval
LEVEL = 0.95
#: fewest flows a bootstrap interval is computed from (docs/study.md, "How a cell is computed")
MIN_INTERVAL_FLOWS = 5


@dataclass
class Cell:
    """The statistics of one table cell (a row of the summary schema, docs/formats/study.md)."""

    n_flows: int
    n: int
    value: float | None = None
    value_lo: float | None = None
    value_hi: float | None = None
    median: float | None = None
    median_lo: float | None = None
    median_hi: float | None = None
    note: str | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def rng_for(seed: int, key: str) -> np.random.Generator:
    """A generator of its own for one cell: the same seed and cell give the same interval
    whatever other cells the study has (cells are keyed by their group values)."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def _no_interval(cell: Cell, k: int, n_boot: int, min_interval: int) -> bool:
    """True (and the cell's note set) when ``k`` flows are too few for an interval."""
    if n_boot > 0 and k < min_interval:
        cell.note = f"{k} flow{'s' if k != 1 else ''} < {min_interval}: no interval"
        return True
    return False


def too_few(n_flows: int, min_flows: int, offered: int = 0) -> str | None:
    """The note of a cell below the too-few-flows rule, or None when it has enough.
    ``offered``: flows in the group, with or without a value for this metric."""
    if n_flows == 0:
        return f"none of the {offered} flows has a value" if offered else "no flows"
    if n_flows < min_flows:
        return f"{n_flows} flows < --min-flows {min_flows}"
    return None


#: resample indices drawn at once (rows x flows): bounds memory to ~16 MB whatever the
#: number of flows (a field study can have 10^5 flows; 1000 x 10^5 indices would be 800 MB)
BLOCK_ELEMENTS = 2_000_000


def _resamples(rng: np.random.Generator, k: int, n_boot: int):
    """Blocks of bootstrap resamples of k flows: arrays (rows, k) of flow indices, n_boot rows in all."""
    rows = max(1, BLOCK_ELEMENTS // max(k, 1))
    done = 0
    while done < n_boot:
        m = min(rows, n_boot - done)
        yield rng.integers(0, k, size=(m, k))
        done += m


def _interval(draws: np.ndarray, level: float) -> tuple[float | None, float | None]:
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return None, None
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(draws, [a, 1.0 - a])
    return float(lo), float(hi)


def per_flow(values: list, *, min_flows: int, n_boot: int, rng: np.random.Generator,
             level: float = LEVEL, median: bool = True, min_interval: int = 0) -> Cell:
    """Mean (``value``) and median over flows of one value per flow; nulls are dropped
    first (a flow without the metric does not count in ``n``)."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    return per_flow_array(x, len(values), min_flows=min_flows, n_boot=n_boot, rng=rng, level=level, median=median,
                          min_interval=min_interval)


def per_flow_array(x: np.ndarray, offered: int, *, min_flows: int, n_boot: int, rng: np.random.Generator,
                   level: float = LEVEL, median: bool = True, min_interval: int = 0) -> Cell:
    """:func:`per_flow` on the finite values already in an array (``offered``: flows in the
    group, with or without a value)."""
    n = int(x.size)
    cell = Cell(n_flows=n, n=n, note=too_few(n, min_flows, offered))
    if cell.note is not None:
        return cell
    large = n_boot > 0 and n >= LARGE_FLOWS
    _value_and_median(cell, x, median, large, level)
    if large:
        _large(cell, x, None, level)
    elif n_boot > 0 and not _no_interval(cell, n, n_boot, min_interval):
        means, medians = [], []
        for idx in _resamples(rng, n, n_boot):
            draws = x[idx]
            means.append(draws.mean(axis=1))
            if median:
                medians.append(np.median(draws, axis=1))
        cell.value_lo, cell.value_hi = _interval(np.concatenate(means), level)
        if median:
            cell.median_lo, cell.median_hi = _interval(np.concatenate(medians), level)
    return cell


def ratio(numerators: list, denominators: list, *, min_flows: int, n_boot: int, rng: np.random.Generator,
          level: float = LEVEL, min_interval: int = 0) -> Cell:
    """Pooled share Σ numerator / Σ denominator over flows (``value``; no median).

    Flows with a null or zero denominator contribute nothing and are not counted in
    ``n_flows``; ``n`` is the pooled denominator (e.g. the number of spurious RTOs)."""
    pairs = [(float(a), float(b)) for a, b in zip(numerators, denominators)
             if a is not None and b is not None and b > 0]
    num = np.asarray([p[0] for p in pairs], dtype=float)
    den = np.asarray([p[1] for p in pairs], dtype=float)
    return ratio_arrays(num, den, len(numerators), min_flows=min_flows, n_boot=n_boot, rng=rng, level=level,
                        min_interval=min_interval)


def ratio_arrays(num: np.ndarray, den: np.ndarray, offered: int, *, min_flows: int, n_boot: int,
                 rng: np.random.Generator, level: float = LEVEL, min_interval: int = 0) -> Cell:
    """:func:`ratio` on the flows already kept (both present, denominator > 0) as arrays."""
    k = int(num.size)
    cell = Cell(n_flows=k, n=int(den.sum()), note=too_few(k, min_flows, offered))
    if cell.note is not None:
        return cell
    cell.value = float(num.sum() / den.sum())
    if n_boot > 0 and k >= LARGE_FLOWS:
        _large(cell, num, den, level)
    elif n_boot > 0 and not _no_interval(cell, k, n_boot, min_interval):
        shares = [num[idx].sum(axis=1) / den[idx].sum(axis=1) for idx in _resamples(rng, k, n_boot)]
        cell.value_lo, cell.value_hi = _interval(np.concatenate(shares), level)
    return cell


def pooled(samples_per_flow: list, *, min_flows: int, n_boot: int, rng: np.random.Generator,
           level: float = LEVEL, median: bool = True, min_interval: int = 0) -> Cell:
    """Mean (``value``) and median of the samples of all flows pooled; the bootstrap draws
    flows (clusters). Flows without samples do not count in ``n_flows``."""
    offered = len(samples_per_flow)
    groups = [np.asarray([v for v in s if v is not None], dtype=float) for s in samples_per_flow]
    groups = [g[np.isfinite(g)] for g in groups]
    groups = [g for g in groups if g.size]
    k = len(groups)
    sizes = np.asarray([g.size for g in groups], dtype=float)
    cell = Cell(n_flows=k, n=int(sizes.sum()), note=too_few(k, min_flows, offered))
    if cell.note is not None:
        return cell
    if k >= LARGE_FLOWS and n_boot > 0:
        return pooled_arrays(np.concatenate(groups), sizes.astype(np.int64), offered, min_flows=min_flows,
                             n_boot=n_boot, rng=rng, level=level, median=median, min_interval=min_interval)
    sums = np.asarray([g.sum() for g in groups])
    allx = np.concatenate(groups)
    cell.value = float(allx.mean())
    if median:
        cell.median = float(np.median(allx))
    if n_boot > 0 and not _no_interval(cell, k, n_boot, min_interval):
        means, meds = [], []
        if median:
            # the pooled samples sorted once, each with its flow: a resample's median is then
            # found from its flow counts (no copy of its samples; the same value np.median
            # gives on them, which depends only on the values drawn)
            order = np.argsort(allx, kind="stable")
            sorted_x = allx[order]
            owner = np.repeat(np.arange(k), sizes.astype(np.int64))[order]
        for idx in _resamples(rng, k, n_boot):
            means.append(sums[idx].sum(axis=1) / sizes[idx].sum(axis=1))
            if median:
                meds.extend(_pooled_median(sorted_x, owner, np.bincount(row, minlength=k)) for row in idx)
        cell.value_lo, cell.value_hi = _interval(np.concatenate(means), level)
        if median:
            cell.median_lo, cell.median_hi = _interval(np.asarray(meds, dtype=float), level)
    return cell


def _pooled_median(sorted_x: np.ndarray, owner: np.ndarray, counts: np.ndarray) -> float:
    """The median of the samples of a resample that drew flow i ``counts[i]`` times:
    ``sorted_x`` all samples in ascending order, ``owner`` each one's flow. Bit for bit
    np.median's of the drawn samples, but for a tie of -0.0 and 0.0 (which np.median itself
    resolves by where its partition puts them)."""
    cw = np.cumsum(counts[owner])
    total = int(cw[-1])
    lo = sorted_x[np.searchsorted(cw, (total - 1) // 2, side="right")]  # rank (total-1)//2, from 0
    if total % 2:
        return lo
    hi = sorted_x[np.searchsorted(cw, total // 2, side="right")]
    return np.mean(np.asarray([lo, hi]))  # as np.median averages its two middle values


def pooled_arrays(flat: np.ndarray, sizes: np.ndarray, offered: int, *, min_flows: int, n_boot: int,
                  rng: np.random.Generator, level: float = LEVEL, median: bool = True, min_interval: int = 0) -> Cell:
    """:func:`pooled` of a group of :data:`LARGE_FLOWS` flows or more (or without an
    interval): ``flat`` the finite samples of the flows with samples, flow after flow;
    ``sizes`` each of those flows' count of them (all > 0)."""
    k = int(sizes.size)
    cell = Cell(n_flows=k, n=int(sizes.sum()), note=too_few(k, min_flows, offered))
    if cell.note is not None:
        return cell
    large = n_boot > 0 and k >= LARGE_FLOWS
    ends = np.cumsum(sizes)
    _value_and_median(cell, flat, median, large, level, ends, sizes.astype(float) if large else None)
    if large:
        sums = np.add.reduceat(flat, ends - sizes) if flat.size else np.zeros(k)
        _large(cell, sums, sizes.astype(float), level)
    elif n_boot > 0 and not _no_interval(cell, k, n_boot, min_interval):
        starts = ends - sizes
        return pooled([flat[a:a + b] for a, b in zip(starts, sizes)], min_flows=min_flows, n_boot=n_boot, rng=rng,
                      level=level, median=median, min_interval=min_interval)
    return cell


#: from this many flows a cell's interval is the normal approximation of its flow bootstrap
#: (docs/study.md, "How a cell is computed"): 1000 resamples of 10^7 flows are 10^10 draws a
#: cell, hours for a study; at this size the bootstrap's distribution is the normal one of the
#: linearised statistic to well within its own Monte Carlo error (tests/python/study/test_stats.py)
LARGE_FLOWS = 10_000
#: the note of a cell whose interval is the normal approximation
LARGE_NOTE = f"{LARGE_FLOWS} flows or more: normal-approximation interval"


def _value_and_median(cell: Cell, values: np.ndarray, median: bool, large: bool, level: float,
                      ends: np.ndarray | None = None, den: np.ndarray | None = None) -> None:
    """The cell's mean and median of ``values`` and, for a ``large`` cell, the median's
    interval (:func:`_large_median`, ``ends`` and ``den`` as there). The median is np.median
    of a copy partitioned in place (np.median partitions a copy of its own: the same value),
    and the interval's quantiles come from the same partly ordered copy: one copy of 10^7
    values instead of two, freed before the mean's interval takes its temporary."""
    cell.value = float(values.mean())
    if median:
        scratch = values.copy()
        cell.median = float(np.median(scratch, overwrite_input=True))
        if large:
            _large_median(cell, values, ends, den, scratch, level)


def _large(cell: Cell, num: np.ndarray, den: np.ndarray | None, level: float) -> None:
    """The interval a flow bootstrap converges to for a mean or a share of a cell of k >=
    LARGE_FLOWS flows (the median's: :func:`_large_median`).

    Mean and shares are ratios of per-flow totals R = Σ num / Σ den (a mean over flows:
    den = 1, given as None; a pooled mean: sums over sizes): resampling flows gives R* with
    variance Σ (num_i - R den_i)² / (Σ den)² (linearisation), so R ± z·se."""
    z = _z(level)
    # one temporary of k values at a time (10^7 flows: 80 MB each)
    if den is None:  # num_i - R·1 (Σ 1 = k exactly): no array of ones, no product
        total = np.float64(num.size)
        r = num.sum() / total
        t = np.subtract(num, r)
    else:
        total = den.sum()
        r = num.sum() / total
        t = np.multiply(den, r)
        np.subtract(num, t, out=t)
    se = float(np.sqrt(np.dot(t, t)) / total)
    del t
    cell.value_lo, cell.value_hi = float(r - z * se), float(r + z * se)
    cell.note = LARGE_NOTE


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2.0)


def _large_median(cell: Cell, samples: np.ndarray, ends: np.ndarray | None, den: np.ndarray | None,
                  scratch: np.ndarray, level: float) -> None:
    """The interval of the median ``cell.median`` of ``samples`` for a cell of k >=
    LARGE_FLOWS flows: ``samples`` flow after flow, flow i's ending before ``ends[i]``, ``den``
    their counts (one per flow when ``ends`` is None). The share of resampled samples at or
    below the median m varies with variance Σ (c_i - F n_i)² / (Σ n)² (c_i: flow i's samples
    <= m, n_i its samples, F = Σ c / Σ n), and the interval is the pooled quantiles at
    1/2 ± z·se (Woodruff's interval, with flows as the clusters). ``scratch``: a copy of
    ``samples`` that may be reordered (:func:`_value_and_median`'s); quantiles depend on the values only."""
    z = _z(level)
    le = samples <= cell.median
    if ends is None:  # one sample per flow: Σ (c - F)² in closed form
        below, n_all = int(np.count_nonzero(le)), int(le.size)
        f = below / n_all
        ss = below * (1.0 - f) ** 2 + (n_all - below) * f ** 2
    else:
        sizes = den.astype(np.int64)
        c = np.add.reduceat(le, ends - sizes, dtype=np.float64)
        f = c.sum() / den.sum()
        c -= f * den
        ss, n_all = float(np.dot(c, c)), den.sum()
        del c
    del le
    se_f = float(np.sqrt(ss) / n_all)
    lo, hi = np.quantile(scratch, [max(0.0, 0.5 - z * se_f), min(1.0, 0.5 + z * se_f)], overwrite_input=True)
    cell.median_lo, cell.median_hi = float(lo), float(hi)
    cell.note = LARGE_NOTE


# ---------------------------------------------------------------------------------------------
# The trip as the unit, tests and multiplicity (issue 34; docs/study.md "Statistics").
#
# In the lab the three workloads of one repetition run on one compiled trip (lab/campaign.py,
# `reseed`): flows of one trip share its handoffs, outages and loss draws, so they are not
# independent, and a bootstrap over flows is too narrow. The functions below take one row per
# *cluster* (a trip) of per-cluster sums and resample or permute whole clusters.


def cluster_sums(values: dict[str, list], clusters: list) -> tuple[np.ndarray, list]:
    """Per-cluster sums of each named column: returns (array clusters x columns, cluster keys
    in first-seen order). None/NaN counts as 0 (callers pass 0 in the denominator too)."""
    keys: dict = {}
    for c in clusters:
        keys.setdefault(c, len(keys))
    names = list(values)
    out = np.zeros((len(keys), len(names)))
    idx = np.asarray([keys[c] for c in clusters], dtype=int)
    for j, n in enumerate(names):
        col = np.asarray([0.0 if v is None else float(v) for v in values[n]], dtype=float)
        col[~np.isfinite(col)] = 0.0
        np.add.at(out[:, j], idx, col)
    return out, list(keys)


def cluster_bootstrap(sums: np.ndarray, statistic, *, n_boot: int, rng: np.random.Generator,
                      level: float = LEVEL, strata: list | None = None) -> tuple[float | None, float | None, float | None]:
    """Percentile interval of ``statistic`` over clusters drawn with replacement.

    ``sums``: one row per cluster (trip) of additive quantities (e.g. Σx and the number of
    flows of each class); ``statistic`` maps an array (rows x columns) of column totals to one
    value per row — a ratio of totals covers a mean over flows (Σx / n), a pooled share
    (Σ num / Σ den) and differences of such between classes, which share trips and are
    therefore resampled together. ``strata`` (one label per cluster, e.g. the scenario):
    clusters are drawn within each stratum, as many as it has — the design fixed how many
    trips each scenario got. Returns (value on all clusters, lo, hi); the interval is None
    with fewer than :data:`MIN_INTERVAL_FLOWS` clusters or ``n_boot`` 0."""
    sums = np.asarray(sums, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.asarray(statistic(sums.sum(axis=0)[None, :]), dtype=float)[0]
    value = float(v) if np.isfinite(v) else None
    k = sums.shape[0]
    if value is None or n_boot <= 0 or k < MIN_INTERVAL_FLOWS:
        return value, None, None
    groups = [np.arange(k)] if strata is None else [
        np.flatnonzero(np.asarray([s == u for s in strata])) for u in dict.fromkeys(strata)]
    draws = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for idx in _resamples(rng, k, n_boot):
            if strata is not None:  # each stratum draws from its own clusters
                idx = np.concatenate([g[rng.integers(0, g.size, size=(idx.shape[0], g.size))] for g in groups],
                                     axis=1)
            draws.append(np.asarray(statistic(sums[idx].sum(axis=1)), dtype=float))
    lo, hi = _interval(np.concatenate(draws), level)
    return value, lo, hi


def ratio_of_totals(num: int, den: int):
    """A statistic for :func:`cluster_bootstrap`: total of column ``num`` / total of ``den``."""
    return lambda t: t[:, num] / t[:, den]


#: above this many pairs the sign-flip test draws random flips instead of enumerating all 2^n
EXACT_PAIRS_MAX = 20


def paired_permutation(diffs: list, *, rng: np.random.Generator | None = None, n_perm: int = 100_000) -> float | None:
    """Two-sided p-value of "the mean paired difference is 0" by sign flips, one difference per
    pair (a pair = the two arms on one trip). Under the null each trip's difference is as
    likely + as − (the arms are exchangeable within the trip), so the p-value is the share of
    the 2^n sign patterns whose |mean| reaches the observed one: exact up to
    :data:`EXACT_PAIRS_MAX` pairs, else ``n_perm`` random patterns ((b + 1) / (m + 1)).
    The smallest p-value n pairs can give is 2 / 2^n (0.0625 with 5 pairs)."""
    d = np.asarray([x for x in diffs if x is not None and np.isfinite(x)], dtype=float)
    n = d.size
    if n == 0:
        return None
    obs = abs(d.sum())
    tol = 1e-9 * max(1.0, np.abs(d).sum())
    if n <= EXACT_PAIRS_MAX:
        hits, total = 0, 0
        block = 1 << min(n, 16)
        bits = np.arange(block)[:, None] >> np.arange(min(n, 16))[None, :] & 1
        low = d[: min(n, 16)]
        low_sums = ((1 - 2 * bits) * low).sum(axis=1)
        high = d[16:]
        for h in range(1 << high.size):
            hb = (np.asarray([(h >> i) & 1 for i in range(high.size)]) if high.size else np.zeros(0))
            s = low_sums + ((1 - 2 * hb) * high).sum()
            hits += int((np.abs(s) >= obs - tol).sum())
            total += block
        return hits / total
    if rng is None:
        raise ValueError("more than EXACT_PAIRS_MAX pairs: pass rng for random sign flips")
    hits, done = 0, 0
    while done < n_perm:
        m = min(n_perm - done, max(1, BLOCK_ELEMENTS // n))
        signs = rng.integers(0, 2, size=(m, n)) * 2 - 1
        hits += int((np.abs((signs * d).sum(axis=1)) >= obs - tol).sum())
        done += m
    return (hits + 1) / (n_perm + 1)


def sign_test(diffs: list) -> float | None:
    """Exact two-sided sign test: the share of positive among the non-zero differences against
    Binomial(n, 1/2). p = min(1, 2 · P(X ≤ min(k, n − k)))."""
    d = [x for x in diffs if x is not None and np.isfinite(x) and x != 0]
    n = len(d)
    if n == 0:
        return None
    k = sum(1 for x in d if x > 0)
    from math import comb

    tail = sum(comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def holm(p: list) -> list:
    """Holm's step-down adjusted p-values (family-wise error); None stays None."""
    idx = [i for i, v in enumerate(p) if v is not None]
    m = len(idx)
    out: list = [None] * len(p)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: p[i])):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def benjamini_hochberg(p: list) -> list:
    """Benjamini–Hochberg adjusted p-values (q-values; false discovery rate); None stays None."""
    idx = [i for i, v in enumerate(p) if v is not None]
    m = len(idx)
    out: list = [None] * len(p)
    running = 1.0
    for rank, i in reversed(list(enumerate(sorted(idx, key=lambda i: p[i]), start=1))):
        running = min(running, m * p[i] / rank)
        out[i] = running
    return out


def binomial_interval(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Clopper–Pearson interval of a binomial proportion k / n (exact; by bisection on the
    binomial tail, no scipy)."""
    from math import exp, lgamma, log

    def cdf(x: int, p: float) -> float:
        # in logs: comb(2000, 1000) overflows a float
        if p <= 0.0:
            return 1.0
        if p >= 1.0:
            return 1.0 if x >= n else 0.0
        lc = lgamma(n + 1)
        return sum(exp(lc - lgamma(i + 1) - lgamma(n - i + 1) + i * log(p) + (n - i) * log(1 - p))
                   for i in range(x + 1))

    a = (1 - level) / 2

    def solve(f) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if f(mid):
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: 1 - cdf(k - 1, p) < a)
    upper = 1.0 if k == n else solve(lambda p: cdf(k, p) > a)
    return lower, upper
