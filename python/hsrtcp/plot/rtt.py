"""Round-trip time over time for one flow, from the ``rtt`` table (docs/formats/rtt.md):
one point per sample per method (``ack``: data→ACK matching with Karn's rule, M7; ``ts``:
TSval echo; ``handshake``). A long flow's samples (one per ACK) are binned along time and
drawn as each bin's min–max band and median (:mod:`hsrtcp.plot.binning`), never as hundreds
of thousands of markers. RTO retransmissions are ticks along the top.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.plot import overlays
from hsrtcp.plot.binning import MAX_POINTS, cloud_bins
from hsrtcp.plot.style import legend_below, OKABE_ITO, new_figure, styled
from hsrtcp.units import axis_scale
from hsrtcp.plot.tables import Results, flow_label

METHODS = {"ack": (OKABE_ITO["blue"], "ACK matching (Karn)"), "ts": (OKABE_ITO["orange"], "TSval echo"),
           "handshake": (OKABE_ITO["black"], "handshake")}


@styled
def draw(res: Results, flow_id: int | None = None):
    row = res.flow(flow_id, [])
    rtt = res.read("rtt", ["flow_id", "ts", "dir", "method", "rtt_s"], row["flow_id"]).sort("ts")
    if rtt.is_empty():
        raise InputError(f"{res.file('rtt')}: no RTT samples for flow {row['flow_id']} (nothing to draw)")
    fig, ax = new_figure(height=3.0)
    div, unit = axis_scale(float(rtt["rtt_s"].abs().max() or 0.0), "s")  # µs on a LAN, ms on a train
    events = overlays.flow_events(res, row)
    overlays.draw_bands(ax, res, row, events, truth=overlays.flow_truth(res, row))
    for method, (color, name) in METHODS.items():
        s = rtt.filter(pl.col("method") == method)
        if s.is_empty():
            continue
        t = (s["ts"] - row["first_ts"]).to_numpy()
        ms = s["rtt_s"].to_numpy() / div
        label = f"{name} ({len(t):,} sample{'s' if len(t) != 1 else ''})"
        if len(t) > MAX_POINTS:
            c, lo, med, hi, _ = cloud_bins(t, ms)
            ax.fill_between(c, lo, hi, color=color, alpha=0.3, linewidth=0, step="mid")
            ax.plot(c, med, color=color, linewidth=0.8, label=label + ", binned: median and min–max",
                    gid=f"rtt-{method}")
        else:
            ax.plot(t, ms, linestyle="none", marker="o" if method == "handshake" else ".",
                    markersize=4 if method == "handshake" else 2, color=color, label=label, gid=f"rtt-{method}")
    retx = overlays.retransmissions(events, row)
    overlays.draw_retx(ax, retx, rug=True)
    ax.set_xlabel("time since the flow's first packet (s)")
    ax.set_ylabel(f"round-trip time ({unit})")
    ax.set_title(flow_label(row), loc="left")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    legend_below(fig, ax)
    return fig
