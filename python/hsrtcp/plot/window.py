"""Bytes in flight and the advertised window over time, with retransmissions marked
(seed 000 Figs. 8/9: sending and advertised windows).

From ``series`` (per 1-s bin, docs/formats/series.md): ``bif_max`` / ``bif_mean`` (bytes in
flight at the ACKs of the bin, M17/A13; sender vantage only, null at the receiver) and
``awnd_min`` / ``awnd_mean`` (the data receiver's advertised window, scaled). Every
retransmission of the data direction is a tick along the top, coloured by class; timeout
sequences, suspensions and handoffs as in the other per-flow figures.

With a ``packets`` table (``hsrtcp analyze --packets``) both are drawn per ACK instead, as
step lines: the outstanding data (tcptrace's owin: the highest byte sent before the ACK minus
the ACK) and the window the ACK advertises; above a few thousand ACKs in view, per-pixel
envelopes (:func:`hsrtcp.plot.tsg.step_envelope`).
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


def outstanding(data: pl.DataFrame, acks: pl.DataFrame) -> pl.DataFrame:
    """Per ACK (capture order): ``t``, ``owin`` = the highest byte end among the data segments
    captured before it (times equal count as before) minus its ACK number, never below 0
    (null before any data), and ``window`` = edge - ack (the advertised window)."""
    d = data.sort("t", maintain_order=True)
    dt, hs = d["t"].to_numpy(), np.maximum.accumulate(d["s1"].to_numpy()) if d.height else np.empty(0)
    t, ack = acks["t"].to_numpy(), acks["ack"].to_numpy()
    i = np.searchsorted(dt, t, side="right") - 1
    sent = np.where(i >= 0, hs[np.clip(i, 0, None)] if len(hs) else np.nan, np.nan)
    owin = np.maximum(sent - ack, 0)
    return pl.DataFrame({"t": t, "owin": owin, "window": (acks["edge"] - acks["ack"]).to_numpy()},
                        schema={"t": pl.Float64, "owin": pl.Float64, "window": pl.Float64}).fill_nan(None)


def _per_ack(ax, row: dict, pk: dict, view) -> float:
    """owin and the advertised window per ACK as step lines; returns the top (bytes)."""
    from hsrtcp.plot.tsg import in_view, step_envelope, steps

    per = outstanding(pk["data"], pk["acks"])
    lo = view[0] if view and view[0] is not None else 0.0
    hi = view[1] if view and view[1] is not None else max(float(per["t"].max() or 0.0), row.get("duration_s") or 0.0)
    top = max(float(per["owin"].max() or 0.0), float(per["window"].max() or 0.0))
    div, _unit = scale_for(top, "B")
    for col, color, label in (("window", GREY, "advertised window, per ACK"),
                              ("owin", OKABE_ITO["blue"], "outstanding data (owin), per ACK")):
        a = in_view(per.filter(pl.col(col).is_not_null()), lo, hi, carry=True)
        if a.is_empty():
            continue
        t, y = step_envelope(a["t"].to_numpy(), a[col].to_numpy() / div, lo, hi)
        x, yy = steps(t, y, end=hi)
        ax.plot(x, yy, color=color, linewidth=0.7, label=label, gid=f"seg-line-{col}")
    return top


@styled
def draw(res: Results, flow_id: int | None = None, view: tuple[float | None, float | None] | None = None):
    row = res.flow(flow_id, ["data_vantage", "duration_s"])
    s = res.read("series", SERIES, row["flow_id"]).sort("bin")
    if s.is_empty():
        raise InputError(f"{res.file('series')}: no series rows for flow {row['flow_id']}")
    # a bin's value held over the bin (a step, never a line between bins: across a blackout
    # a line would rise where no ACK came); the last bin ends at the flow's last packet
    start = s["t_rel"].to_numpy().astype(float)
    duration = row.get("duration_s")
    end = start + 1.0 if duration is None else np.maximum(np.minimum(start + 1.0, duration), start)
    cols = {c: s[c].cast(pl.Float64).fill_null(np.nan).to_numpy() for c in SERIES[3:]}
    finite = [v[np.isfinite(v)] for v in cols.values()]
    top = max((v.max() for v in finite if v.size), default=0.0)
    if top == 0.0 and all(v.size == 0 for v in finite):
        raise InputError(f"{res.file('series')}: flow {row['flow_id']} has neither bytes in flight nor "
                         f"an advertised window in any bin (nothing to draw)")
    from hsrtcp.plot.tsg import flow_packets

    pk = flow_packets(res, row)
    per_ack = pk is not None and pk["acks"].height > 0
    fig, ax = new_figure(height=3.0)
    events = overlays.flow_events(res, row)
    overlays.draw_bands(ax, res, row, events, truth=overlays.flow_truth(res, row))
    if per_ack:
        top = _per_ack(ax, row, pk, view)
        if row.get("data_vantage") != "sender":  # tcptrace's owin is in flight only at the sender
            ax.text(0.01, 0.02, f"at the {row.get('data_vantage') or 'unknown'} vantage owin is data seen but not "
                    "yet acknowledged, not bytes in flight", transform=ax.transAxes, fontsize=6, color=GREY)
    div, unit = scale_for(top, "B")
    for col, color, style, label in () if per_ack else (
            ("awnd_min", GREY, "-", "advertised window (min per bin)"),
            ("awnd_mean", GREY, ":", "advertised window (mean)"),
            ("bif_max", OKABE_ITO["blue"], "-", "bytes in flight (max per bin)"),
            ("bif_mean", OKABE_ITO["sky_blue"], "--", "bytes in flight (mean)")):
        v = cols[col]
        if np.isfinite(v).any():
            x, y = envelope_line(np.r_[start, end[-1]], np.r_[v, v[-1]] / div)
            ax.step(x, y, where="post", color=color, linestyle=style, label=label, gid=f"line-{col}")
    if not per_ack:
        from hsrtcp.plot.tsg import BINS_NOTE

        ax.text(0.99, 0.02, BINS_NOTE, transform=ax.transAxes, ha="right", va="bottom", fontsize=5.5, color=GREY,
                gid="bins-note")
    if not per_ack and not np.isfinite(cols["bif_max"]).any():
        ax.text(0.01, 0.02, f"bytes in flight: not measurable at the {row.get('data_vantage') or 'unknown'} "
                "vantage (sender only)", transform=ax.transAxes, fontsize=6, color=GREY)
    retx = overlays.retransmissions(events, row)
    overlays.draw_retx(ax, retx, rug=True)
    overlays.draw_spurious(ax, events, retx, rug=True)
    ax.set_xlabel("time since the flow's first packet (s)")
    ax.set_ylabel(f"window ({unit}, per ACK)" if per_ack else f"window ({unit}, 1-s bins)")
    ax.set_title(flow_label(row), loc="left")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0, top=top / div * 1.15 or 1.0)
    legend_below(fig, ax)
    return fig
