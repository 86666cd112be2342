"""Per-pixel-column downsampling: what a line chart `width` pixels wide can show of a long series.

A million RTT samples drawn on a 1,200-pixel-wide chart paint at most 1,200 columns; in each
column only the lowest and highest value are visible. Keeping, per column, the first, the
lowest, the highest and the last point (in time order) draws the same picture from at most
4 × width points (the M4 idea of line-chart aggregation). Retransmission marks are never
passed through here: the report keeps every one.
"""

from __future__ import annotations

import numpy as np


def downsample(x: np.ndarray, y: np.ndarray, width: int) -> np.ndarray:
    """Indices (ascending) of the points of ``(x, y)`` to keep for a chart ``width`` columns wide.

    ``x`` must be sorted ascending. NaN values of ``y`` are kept only when a column has
    nothing else (so a gap stays a gap). Returns all indices when there are few points.
    """
    n = len(x)
    if n <= 4 * width or width <= 0:
        return np.arange(n)
    x0, x1 = float(x[0]), float(x[-1])
    span = x1 - x0
    if not span > 0:
        return np.array([0, n - 1])
    col = np.minimum(((x - x0) / span * width).astype(np.int64), width - 1)
    # first and last point of each column (x is sorted, so columns are contiguous runs)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    ends = np.r_[starts[1:], n] - 1
    keep = [starts, ends]
    finite = ~np.isnan(y)
    if finite.any():
        yf = np.where(finite, y, np.inf)
        # lowest: sort by (column, y); the first of each column run
        order = np.lexsort((yf, col))
        first_of_col = np.r_[True, col[order][1:] != col[order][:-1]]
        keep.append(order[first_of_col])
        yf = np.where(finite, y, -np.inf)
        order = np.lexsort((-yf, col))
        first_of_col = np.r_[True, col[order][1:] != col[order][:-1]]
        keep.append(order[first_of_col])
    return np.unique(np.concatenate(keep))
