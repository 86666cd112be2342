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
    n = int(x.size)
    cell = Cell(n_flows=n, n=n, note=too_few(n, min_flows, len(values)))
    if cell.note is not None:
        return cell
    cell.value = float(x.mean())
    if median:
        cell.median = float(np.median(x))
    if n_boot > 0 and not _no_interval(cell, n, n_boot, min_interval):
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
    k = int(num.size)
    cell = Cell(n_flows=k, n=int(den.sum()), note=too_few(k, min_flows, len(numerators)))
    if cell.note is not None:
        return cell
    cell.value = float(num.sum() / den.sum())
    if n_boot > 0 and not _no_interval(cell, k, n_boot, min_interval):
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
    sums = np.asarray([g.sum() for g in groups])
    allx = np.concatenate(groups)
    cell.value = float(allx.mean())
    if median:
        cell.median = float(np.median(allx))
    if n_boot > 0 and not _no_interval(cell, k, n_boot, min_interval):
        means, meds = [], []
        for idx in _resamples(rng, k, n_boot):
            means.append(sums[idx].sum(axis=1) / sizes[idx].sum(axis=1))
            if median:
                # the median of a pooled resample needs the samples themselves: one resample
                # at a time keeps memory at one resample (a field study pools millions of seconds)
                meds.extend(np.median(np.concatenate([groups[i] for i in row])) for row in idx)
        cell.value_lo, cell.value_hi = _interval(np.concatenate(means), level)
        if median:
            cell.median_lo, cell.median_hi = _interval(np.asarray(meds, dtype=float), level)
    return cell
