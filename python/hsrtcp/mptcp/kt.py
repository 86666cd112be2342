"""M34 k_t: the average increase rate of the congestion window between two losses (S4 eq. 3).

S4: k_t = BIF_t / t, BIF_t the "total number of bytes in flight during t s" between two
packet losses t seconds apart. A26 reads it two ways, both reported:

- primary (``k_t``): (BIF just before loss 2 − BIF just after loss 1) / t, bytes/s — the
  increase rate the paper describes;
- literal (``k_t_literal``): the time-average of BIF over the interval, divided by t.

A *loss* is the start of a loss episode at the sender: a retransmission event (events kind
``retransmission``, any class but ``tlp``, which probes without a loss signal) more than
``episode_gap_s`` after the previous retransmission of the flow. BIF comes from the series
table (sender vantage, per 1-s bin: ``bif_max``, ``bif_mean``), so this is a 1-s-resolution
estimate: "just after loss 1" is the ``bif_mean`` of the first bin that starts at or after the
episode's last retransmission (the window after the reduction: during the recovery itself the
unacknowledged bytes still include the whole pre-loss window), "just before loss 2" the ``bif_max`` of the last bin that
ends at or before it (the window the growth reached), and the literal mean is over the bins
entirely inside the interval. Intervals with fewer than ``min_bins`` such bins are skipped.
"""

from __future__ import annotations

import bisect

import polars as pl

from hsrtcp.schemas import SERIES_BIN_S

DEFAULT_EPISODE_GAP_S = 1.0
DEFAULT_MIN_BINS = 2


def loss_episodes(events: pl.DataFrame, flow_id: int,
                  episode_gap_s: float = DEFAULT_EPISODE_GAP_S) -> list[tuple[float, float]]:
    """(first, last) retransmission time of each loss episode of ``flow_id``."""
    ts = (events.filter((pl.col("flow_id") == flow_id) & (pl.col("kind") == "retransmission")
                        & (pl.col("class").fill_null("") != "tlp"))
          .get_column("ts").sort().to_list())
    episodes: list[list[float]] = []
    for t in ts:
        if not episodes or t - episodes[-1][1] > episode_gap_s:
            episodes.append([t, t])
        else:
            episodes[-1][1] = t
    return [(a, b) for a, b in episodes]


def intervals(series: pl.DataFrame, events: pl.DataFrame, flow_id: int, t0: float,
              episode_gap_s: float = DEFAULT_EPISODE_GAP_S, min_bins: int = DEFAULT_MIN_BINS) -> list[dict]:
    """One dict per pair of consecutive losses of ``flow_id`` (times relative to ``t0``)."""
    s = series.filter(pl.col("flow_id") == flow_id).sort("ts")
    starts = s["ts"].to_list()
    ends = [a + (b if b is not None else SERIES_BIN_S) for a, b in zip(starts, s["bin_s"].to_list())]
    bmax, bmean = s["bif_max"].to_list(), s["bif_mean"].to_list()
    losses = loss_episodes(events, flow_id, episode_gap_s)
    out = []
    for (t1, end1), (t2, _) in zip(losses, losses[1:]):
        i = bisect.bisect_left(starts, end1)  # first bin starting after loss 1's recovery
        j = bisect.bisect_right(ends, t2) - 1  # last bin ending at or before loss 2
        if i >= len(starts) or j < i or j - i + 1 < min_bins:
            continue
        after, before = bmean[i], bmax[j]
        inside = [x for x in bmean[i:j + 1] if x is not None]
        t = t2 - t1
        out.append({
            "flow_id": flow_id, "loss1_s": t1 - t0, "loss2_s": t2 - t0, "interval_s": t,
            "bif_after_loss1": after, "bif_before_loss2": before,
            "k_t": (before - after) / t if after is not None and before is not None else None,
            "bif_time_mean": sum(inside) / len(inside) if inside else None,
            "k_t_literal": (sum(inside) / len(inside)) / t if inside else None,
        })
    return out
