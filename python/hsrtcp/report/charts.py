"""Chart specifications: the JSON the report's script (static/report.js) turns into uPlot charts.

A chart is a dict::

    {"id", "title", "x_label", "y_label", "x_log", "y_log",
     "series": [{"label", "color", "style": "line"|"step"|"points", "x": [...], "y": [...]}],
     "marks":  [{"t", "s0", "s1", "cls", "color"}],       # vertical ticks (retransmissions)
     "sacks":  [{"t", "s0", "s1", "cls", "color"}],       # thin segments (SACK / D-SACK blocks)
     "bands":  [{"t0", "t1", "label", "color"}],          # shaded time ranges (outages ...)
     "vlines": [{"t", "label", "color"}]}                 # handoffs

Every series has its own x (the script aligns them with ``uPlot.join``). Values are plain
floats or null (JSON has no NaN). Colours are the Okabe–Ito palette (colour-blind safe).
"""

from __future__ import annotations

import math

import numpy as np

# Okabe & Ito (2008), "Color Universal Design"
PALETTE = {
    "black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7",
    "grey": "#999999",
}
CYCLE = ["blue", "orange", "green", "vermillion", "purple", "sky", "black", "yellow", "grey"]
#: colour of each retransmission class (events.class of kind 'retransmission')
RETRANS_COLOURS = {
    "fast": PALETTE["vermillion"], "sack_refill": PALETTE["orange"], "rto": PALETTE["purple"],
    "tlp": PALETTE["green"], "unclassified": PALETTE["grey"], "spurious": PALETTE["black"],
}
#: colour of SACK blocks (events kind 'sack_block', class sack or dsack); D-SACK segments are
#: drawn wider, yellow with a black outline, so they stand apart from every tick and line
SACK_COLOURS = {"sack": PALETTE["sky"], "dsack": PALETTE["yellow"]}


def colour(i: int) -> str:
    return PALETTE[CYCLE[i % len(CYCLE)]]


def clean(values, digits: int | None = None) -> list:
    """A list for JSON: NaN and None become null; floats rounded to ``digits`` decimals."""
    arr = np.asarray(values, dtype=np.float64) if not isinstance(values, np.ndarray) else values
    if arr.dtype.kind in "iub":
        return arr.tolist()
    arr = arr.astype(np.float64)
    if digits is not None:
        arr = np.round(arr, digits)
    out = arr.tolist()
    return [None if (v is None or math.isnan(v)) else v for v in out]


def sig(values, digits: int = 5) -> list:
    """Like :func:`clean` with ``digits`` significant digits (rates, windows: size, not precision)."""
    arr = np.asarray(values, dtype=np.float64)
    with np.errstate(all="ignore"):
        mag = np.where(np.isfinite(arr) & (arr != 0), np.floor(np.log10(np.abs(arr))), 0)
        scale = 10.0 ** (digits - 1 - mag)
        arr = np.round(arr * scale) / scale
    return [None if math.isnan(v) else v for v in arr.tolist()]


def series(label: str, x, y, color: str, style: str = "line", width: float = 1.5) -> dict:
    return {"label": label, "color": color, "style": style, "width": width, "x": x, "y": y}


def chart(cid: str, title: str, x_label: str, y_label: str, series_list: list[dict], **extra) -> dict:
    spec = {"id": cid, "title": title, "x_label": x_label, "y_label": y_label, "series": series_list,
            "marks": [], "sacks": [], "bands": [], "vlines": [], "x_log": False, "y_log": False}
    spec.update(extra)
    return spec


def ecdf(values: np.ndarray, max_points: int = 400) -> tuple[list, list]:
    """Empirical CDF as step points (x sorted, y = share ≤ x), at most ``max_points`` of them,
    always keeping the smallest and the largest value."""
    v = np.sort(values[~np.isnan(values)])
    n = len(v)
    if n == 0:
        return [], []
    y = np.arange(1, n + 1) / n
    if n > max_points:
        idx = np.unique(np.r_[np.linspace(0, n - 1, max_points).round().astype(np.int64), n - 1])
        v, y = v[idx], y[idx]
    return sig(v, 6), clean(y, 5)
