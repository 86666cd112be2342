"""Drawing long flows without a marker per sample: per-bin envelopes at figure resolution.

A million-packet flow has hundreds of thousands of RTT samples (one per ACK at the
sender); a 3.5-in figure is about 1,000 device pixels wide at 300 dpi. Lines and point
clouds are reduced to a few thousand bins along the time axis, each drawn by its extremes
(lines) or its min–max band and median (clouds), so the picture looks the same as drawing
every sample while the file stays small. Event marks (retransmissions, spurious timeouts)
are never binned: every one is drawn.
"""

from __future__ import annotations

import numpy as np

# Above this many points a line or cloud is binned; the bins per figure width.
MAX_POINTS = 4000
BINS = 1500


def _groups(x: np.ndarray, y: np.ndarray, bins: int):
    """Bin index of each point (equal-width bins over x's range), and the order that sorts
    the points by (bin, y): each bin's first point is its minimum, its last its maximum."""
    lo, hi = float(x.min()), float(x.max())
    width = (hi - lo) / bins or 1.0
    idx = np.minimum(((x - lo) / width).astype(np.int64), bins - 1)
    order = np.lexsort((y, idx))
    sidx = idx[order]
    starts = np.flatnonzero(np.r_[True, sidx[1:] != sidx[:-1]])
    ends = np.r_[starts[1:], len(order)] - 1
    return order, starts, ends, lo, width, sidx


def envelope_line(x, y, max_points: int = MAX_POINTS, bins: int = BINS):
    """A polyline reduced to each bin's minimum and maximum, in time order (unchanged when
    short). For the monotone lines of a time–sequence graph this is exact at the bins'
    resolution; for others it keeps every peak and trough."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) <= max_points:
        return x, y
    order, starts, ends, *_ = _groups(x, y, bins)
    i_min, i_max = order[starts], order[ends]
    pairs = np.stack([np.minimum(i_min, i_max), np.maximum(i_min, i_max)], axis=1).ravel()
    pairs = np.unique(pairs)  # sorted sample indices = time order, since x is sorted
    return x[pairs], y[pairs]


def cloud_bins(x, y, bins: int = BINS):
    """Per-bin statistics of a point cloud: bin centres, min, median, max and count (bins
    without points are left out)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) == 0:
        e = np.empty(0)
        return e, e, e, e, np.empty(0, dtype=np.int64)
    order, starts, ends, lo, width, sidx = _groups(x, y, bins)
    ys = y[order]
    centres = lo + (sidx[starts] + 0.5) * width
    return centres, ys[starts], ys[(starts + ends) // 2], ys[ends], ends - starts + 1


def merge_ranges(t, s0, s1, max_marks: int = MAX_POINTS, bins: int = BINS):
    """Byte ranges seen at times ``t`` (SACK blocks: [s0, s1) reported by an ACK at t), reduced
    for drawing: unchanged when there are at most ``max_marks``, else the union of the ranges
    of each of ``bins`` equal time bins, each merged range placed at the earliest time of the
    ranges it joins. Successive ACKs of a recovery repeat and grow the same blocks, so a
    bin's union is what the figure can show of them at its width; every byte SACKed in a bin
    stays covered. Returns (t, s0, s1) arrays."""
    t, s0, s1 = (np.asarray(a, dtype=float) for a in (t, s0, s1))
    if len(t) <= max_marks:
        return t, s0, s1
    lo, hi = float(t.min()), float(t.max())
    width = (hi - lo) / bins or 1.0
    idx = np.minimum(((t - lo) / width).astype(np.int64), bins - 1)
    order = np.lexsort((s0, idx))
    t, s0, s1, idx = t[order], s0[order], s1[order], idx[order]
    # running maximum of the right edges within each bin (bins offset so they never mix)
    base = float(s0.min())
    span = float(s1.max()) - base + 1.0
    reach = np.maximum.accumulate(idx * span + (s1 - base)) - idx * span + base
    new_bin = np.r_[True, idx[1:] != idx[:-1]]
    # a range starts a new merged range when it lies beyond everything before it in its bin
    starts = np.flatnonzero(new_bin | np.r_[True, s0[1:] > reach[:-1]])
    ends = np.r_[starts[1:], len(t)] - 1
    return np.minimum.reduceat(t, starts), s0[starts], reach[ends]
