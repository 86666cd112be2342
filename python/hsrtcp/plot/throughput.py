"""Throughput over time (docs/metrics.md M3: payload bytes of the data direction per 1-s bin,
zeros kept, A3), seed 000 Fig. 4: with handoffs as stems when context tables exist.

With ``--flow``: that flow's throughput, its goodput (cumulative ACK advance per bin,
dashed), timeout sequences and suspensions as bands, handoffs as stems. Without: the
``max_flows`` single-capture flows with the most data, each against its own start.
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.plot import overlays
from hsrtcp.plot.binning import envelope_line
from hsrtcp.plot.style import CYCLE, OKABE_ITO, legend_below, new_figure, save, scale_for, styled
from hsrtcp.plot.tables import Results, data_bytes_expr, flow_label, row_key

SERIES = ["flow_id", "bin", "t_rel", "bytes", "goodput_bytes"]


def steps(series: pl.DataFrame, column: str, duration: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Bin starts and bit/s of ``column`` per bin (bytes × 8 / bin length, M3), with the last
    bin's end repeated so that a post-step line covers [start, start + bin length) of every
    bin; the last step ends at the flow's last packet (``duration``) when that is earlier."""
    s = series.sort("bin")
    t = s["t_rel"].to_numpy().astype(float)
    from hsrtcp.schemas import SERIES_BIN_S

    bin_s = s["bin_s"].fill_null(SERIES_BIN_S).to_numpy() if "bin_s" in s.columns else np.full(len(t), SERIES_BIN_S)
    bps = s[column].fill_null(0).to_numpy().astype(float) * 8 / bin_s
    end = t[-1] + bin_s[-1]
    if duration is not None and t[-1] < duration < end:
        end = duration
    return np.r_[t, end], np.r_[bps, bps[-1]]


@styled
def draw(res: Results, flow_id: int | None = None, max_flows: int = 8):
    if flow_id is not None:
        return _one_flow(res, flow_id)
    # named among all rows (f1c, f1s beside f1m), so each legend entry is a name --flow takes
    flows = res.named(res.flows([])).filter(pl.col("vantage").fill_null("") != "matched")
    flows = flows.with_columns(_b=data_bytes_expr()).filter(pl.col("_b") > 0)
    if flows.is_empty():
        raise InputError(f"{res.file('flows')}: no flow carries payload (nothing to draw)")
    top = flows.sort(["_b", "flow_id"], descending=[True, False]).head(max_flows)
    keys = row_key(top)
    series = res.read("series", SERIES, optional=["bin_s"]).join(top.select(keys), on=keys, how="semi")
    if series.is_empty():
        raise InputError(f"{res.file('series')}: no series rows for the flows with data")
    curves = []
    for r in top.iter_rows(named=True):
        s = series.filter(*(pl.col(k) == r[k] for k in keys))
        if not s.is_empty():
            curves.append((r, *steps(s, "bytes", r["last_ts"] - r["first_ts"])))
    div, unit = scale_for(max(c[2].max() for c in curves), "bit/s")
    fig, ax = new_figure()
    for i, (r, t, bps) in enumerate(curves):
        x, y = envelope_line(t, bps / div)
        ax.step(x, y, where="post", color=CYCLE[i % len(CYCLE)], label=flow_label(r), gid=f"flow-{r['flow_id']}")
    ax.set_xlabel("time since each flow's first packet (s)")
    _finish(ax, unit, f"{len(curves)} flow(s) with the most data")
    return fig


def _one_flow(res: Results, flow_id: int):
    row = res.flow(flow_id, ["duration_s"], optional=["data_vantage"])
    s = res.read("series", SERIES, row["flow_id"], optional=["bin_s"])
    if s.is_empty():
        raise InputError(f"{res.file('series')}: no series rows for flow {row['flow_id']}")
    t, bps = steps(s, "bytes", row.get("duration_s"))
    tg, gps = steps(s, "goodput_bytes", row.get("duration_s"))
    truth = overlays.flow_truth(res, row)
    cap = truth["capacity"] if truth is not None and truth["capacity"] is not None else None
    cap_max = float(cap["bw_bps"].max() or 0.0) if cap is not None and not cap.is_empty() else 0.0
    div, unit = scale_for(max(bps.max(), gps.max(), cap_max), "bit/s")
    fig, ax = new_figure(height=3.4 if truth else 3.0)
    events = overlays.flow_events(res, row)
    overlays.draw_bands(ax, res, row, events, truth=truth, handoffs=truth is None)  # (with truth: stems only)
    overlays.draw_capacity(ax, truth, div)
    x, y = envelope_line(t, bps / div)
    ax.step(x, y, where="post", color=OKABE_ITO["blue"], label={"sender": "throughput (payload sent)", "receiver": "throughput (payload received)"}.get(
                row.get("data_vantage"), "throughput (payload seen)"), gid="throughput")
    x, y = envelope_line(tg, gps / div)
    ax.step(x, y, where="post", color=OKABE_ITO["green"], linestyle="--", label="goodput (ACK advance)",
            gid="goodput")
    ho = overlays.handoff_times(res, row)
    if len(ho):
        top = max(bps.max(), gps.max()) / div * 1.05 or 1.0
        ml, sl, bl = ax.stem(ho, np.full(len(ho), top), linefmt="-", markerfmt="v", basefmt=" ",
                             label=f"{'inferred: ' if truth else ''}handoff{' (radio log)' if truth else ''} ({len(ho)})")
        for a in (ml, sl):
            a.set_color(OKABE_ITO["purple"])
        sl.set_linewidth(0.7)
    ax.set_xlabel("time since the flow's first packet (s)")
    _finish(ax, unit, flow_label(row))
    ax.get_legend().remove()
    legend_below(fig, ax)
    return fig


def _finish(ax, unit: str, title: str) -> None:
    ax.set_ylabel(f"throughput ({unit}, 1-s bins)")
    ax.set_title(title, loc="left")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right")


def write_throughput_png(out: str | os.PathLike) -> str | None:
    """`hsrtcp analyze --plot`: ``OUT/throughput.png`` of the flows with the most data, or
    None when no flow carries payload."""
    res = Results(out)
    try:
        fig = draw(res)
    except InputError:
        return None
    return save(fig, os.path.join(os.fspath(out), "throughput.png"))


def plot_throughput(flows: pl.DataFrame, series: pl.DataFrame, path: str | os.PathLike) -> str | None:
    """The same figure from tables in memory (the signature of the former
    ``hsrtcp.report.throughput.plot_throughput``): written to ``path``, or None when no flow
    carries payload."""
    res = Results(os.path.dirname(os.fspath(path)) or ".", frames={"flows": flows, "series": series})
    try:
        fig = draw(res)
    except InputError:
        return None
    return save(fig, path)
