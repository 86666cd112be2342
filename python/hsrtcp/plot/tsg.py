"""Time–sequence graph of one flow (the tcptrace/Wireshark "Stevens" graph, seed 000 Fig. 12).

Drawn from the result tables:

- data line: highest relative sequence sent, from ``series`` — 1 + cumulative new payload
  bytes of the data direction at each 1-s bin's end (``bytes`` minus the bytes of that bin's
  retransmissions from ``events``);
- ACK line: 1 + cumulative ``series.goodput_bytes`` (the advance of the cumulative ACK);
- advertised-window line: ACK line + ``series.awnd_min`` (the tightest right edge of the bin);
- every retransmission from ``events`` at (time, seq_start) with a bar over its byte range,
  coloured and shaped by class (fast, sack_refill, rto, tlp, unclassified);
- spurious timeouts, timeout sequences, suspensions, and handoffs/outages when context
  tables exist (:mod:`hsrtcp.plot.overlays`).

Limitation (docs/plot.md): the tables hold no per-packet rows, so the data, ACK and window
lines have the series' 1-s resolution (straight between bin ends), while the event marks are
exact. SACK blocks are not in any table, so none are drawn.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.plot import overlays
from hsrtcp.plot.binning import envelope_line
from hsrtcp.plot.style import GREY, OKABE_ITO, new_figure, scale_for, styled
from hsrtcp.plot.tables import Results, flow_label

SERIES = ["flow_id", "bin", "t_rel", "bytes", "goodput_bytes", "awnd_min"]


def lines(series: pl.DataFrame, retx: pl.DataFrame, duration: float) -> dict[str, np.ndarray]:
    """The data, ACK and window lines at the bins' ends (t = 0 first), relative sequence."""
    s = series.sort("bin")
    n = s.height
    rbin = (retx.with_columns(b=pl.col("t").floor().cast(pl.Int64).clip(0, max(n - 1, 0)),
                              nb=(pl.col("seq_end") - pl.col("seq_start")).clip(0))
            .group_by("b").agg(pl.col("nb").sum()))
    retx_bytes = np.zeros(n)
    if rbin.height:
        retx_bytes[rbin["b"].to_numpy()] = rbin["nb"].to_numpy()
    sent = s["bytes"].fill_null(0).to_numpy().astype(float)
    new = np.maximum(sent - retx_bytes, 0)
    t = np.minimum(s["t_rel"].to_numpy() + 1.0, max(duration, 0.0))
    t = np.maximum(t, s["t_rel"].to_numpy())  # the last bin ends at the flow's last packet
    ack = 1 + np.cumsum(s["goodput_bytes"].fill_null(0).to_numpy().astype(float))
    awnd = s["awnd_min"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    return {"t": np.r_[0.0, t], "data": np.r_[1.0, 1 + np.cumsum(new)], "ack": np.r_[1.0, ack],
            "window": np.r_[np.nan, ack + awnd]}


@styled
def draw(res: Results, flow_id: int | None = None):
    """The figure (not saved) of ``flow_id`` (default: the flow with the most data)."""
    row = res.flow(flow_id, ["first_ts", "duration_s"])
    series = res.read("series", SERIES, row["flow_id"])
    if series.is_empty():
        raise InputError(f"{res.file('series')}: no series rows for flow {row['flow_id']} "
                         f"(nothing to draw the data and ACK lines from)")
    events = overlays.flow_events(res, row)
    retx = overlays.retransmissions(events, row)
    ln = lines(series, retx, row.get("duration_s") or 0.0)
    top = np.nanmax([np.nanmax(ln["data"]), np.nanmax(ln["ack"]),
                     float(retx["seq_end"].max() or 0) if not retx.is_empty() else 0.0])
    div, unit = scale_for(top, "B")
    fig, ax = new_figure(height=2.6)
    overlays.draw_bands(ax, res, row, events)
    for key, color, style, label in (("window", GREY, ":", "advertised window edge (ACK + AWND min)"),
                                     ("ack", OKABE_ITO["green"], "-", "cumulative ACK"),
                                     ("data", OKABE_ITO["black"], "-", "data sent (highest seq)")):
        x, y = envelope_line(ln["t"], ln[key] / div)
        if np.isfinite(y).any():
            # points where the tables say something (bin ends), straight lines between
            ax.plot(x, y, color=color, linestyle=style, linewidth=0.8, marker="." if len(x) <= 120 else None,
                    markersize=3, label=label + " at 1-s bin ends", gid=f"line-{key}")
    overlays.draw_retx(ax, retx, scale=div)
    overlays.draw_spurious(ax, events, retx, scale=div)
    ax.set_xlabel("time since the flow's first packet (s)")
    ax.set_ylabel(f"relative sequence number ({unit})")
    ax.set_title(flow_label(row), loc="left")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left")
    return fig
