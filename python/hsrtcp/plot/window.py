"""Bytes in flight and the advertised window over time, with retransmissions marked
(seed 000 Figs. 8/9: sending and advertised windows).

From ``series`` (per 1-s bin, docs/formats/series.md): ``bif_max`` / ``bif_mean`` (bytes in
flight at the ACKs of the bin, M17/A13; sender vantage only, null at the receiver) and
``awnd_min`` / ``awnd_mean`` (the data receiver's advertised window, scaled). Every
retransmission of the data direction is a tick along the top, coloured by class; timeout
sequences, suspensions and handoffs as in the other per-flow figures.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.plot import overlays
from hsrtcp.plot.binning import envelope_line
from hsrtcp.plot.style import legend_below, GREY, OKABE_ITO, new_figure, scale_for, styled
from hsrtcp.plot.tables import Results, flow_label

SERIES = ["flow_id", "bin", "t_rel", "bif_max", "bif_mean", "awnd_min", "awnd_mean"]


@styled
def draw(res: Results, flow_id: int | None = None):
    row = res.flow(flow_id, ["data_vantage", "duration_s"])
    s = res.read("series", SERIES, row["flow_id"]).sort("bin")
    if s.is_empty():
        raise InputError(f"{res.file('series')}: no series rows for flow {row['flow_id']}")
    # a bin's value drawn at its middle; the last bin ends at the flow's last packet
    start = s["t_rel"].to_numpy().astype(float)
    duration = row.get("duration_s")
    end = start + 1.0 if duration is None else np.maximum(np.minimum(start + 1.0, duration), start)
    t = (start + end) / 2
    cols = {c: s[c].cast(pl.Float64).fill_null(np.nan).to_numpy() for c in SERIES[3:]}
    finite = [v[np.isfinite(v)] for v in cols.values()]
    top = max((v.max() for v in finite if v.size), default=0.0)
    if top == 0.0 and all(v.size == 0 for v in finite):
        raise InputError(f"{res.file('series')}: flow {row['flow_id']} has neither bytes in flight nor "
                         f"an advertised window in any bin (nothing to draw)")
    div, unit = scale_for(top, "B")
    fig, ax = new_figure(height=3.0)
    events = overlays.flow_events(res, row)
    overlays.draw_bands(ax, res, row, events, truth=overlays.flow_truth(res, row))
    for col, color, style, label in (
            ("awnd_min", GREY, "-", "advertised window (min per bin)"),
            ("awnd_mean", GREY, ":", "advertised window (mean)"),
            ("bif_max", OKABE_ITO["blue"], "-", "bytes in flight (max per bin)"),
            ("bif_mean", OKABE_ITO["sky_blue"], "--", "bytes in flight (mean)")):
        v = cols[col]
        if np.isfinite(v).any():
            x, y = envelope_line(t, v / div)
            ax.plot(x, y, color=color, linestyle=style, marker="." if len(x) < 30 else None,
                    label=label, gid=f"line-{col}")
    if not np.isfinite(cols["bif_max"]).any():
        ax.text(0.01, 0.02, f"bytes in flight: not measurable at the {row.get('data_vantage') or 'unknown'} "
                "vantage (sender only)", transform=ax.transAxes, fontsize=6, color=GREY)
    retx = overlays.retransmissions(events, row)
    overlays.draw_retx(ax, retx, rug=True)
    overlays.draw_spurious(ax, events, retx, rug=True)
    ax.set_xlabel("time since the flow's first packet (s)")
    ax.set_ylabel(f"window ({unit}, 1-s bins)")
    ax.set_title(flow_label(row), loc="left")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0, top=top / div * 1.15 or 1.0)
    legend_below(fig, ax)
    return fig
