"""What several figures draw over their data: retransmission marks by class, SACK blocks,
spurious timeouts, timeout sequences, outages (suspensions) as bands and handoffs as lines.

Sources (all tables, times made relative to the flow's first packet):

- ``events`` (docs/formats/events.md): ``retransmission`` (ts, seq range, class),
  ``sack_block`` (ts of the ACK, the block's seq range, class sack or dsack),
  ``spurious_timeout`` (ts = first RTO retransmission of the episode), ``timeout_sequence``
  (ts → ts_end, M10), ``suspension`` (silence in both directions, ts → ts_end);
- context tables when present (docs/formats/context.md, handoffs.md): ``handoffs.parquet`` (ts of each
  serving-cell change, M23) and ``suspensions.parquet`` (gap_start_ts → gap_end_ts of the
  silence around a handoff inside the flow, M24/A12).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.plot.binning import merge_ranges
from hsrtcp.plot.style import GREY, OKABE_ITO, RETX_STYLE, SACK_STYLE, SPURIOUS_STYLE
from hsrtcp.plot.tables import Results
from hsrtcp.results import no_nulls

EVENT_COLUMNS = ["flow_id", "kind", "class", "ts", "ts_end", "dir", "seq_start", "seq_end"]


def flow_events(res: Results, row: dict) -> pl.DataFrame:
    """The flow's events with ``t`` / ``t_end`` = seconds since its first packet."""
    ev = res.read("events", EVENT_COLUMNS, row["flow_id"])
    no_nulls(ev, ["ts"], res.file("events"))  # every event has a time
    t0 = row["first_ts"]
    return ev.with_columns(t=pl.col("ts") - t0, t_end=pl.col("ts_end") - t0).sort("ts", maintain_order=True)


def retransmissions(events: pl.DataFrame, row: dict) -> pl.DataFrame:
    """Retransmissions of the flow's data direction (every one: they are never binned)."""
    return events.filter((pl.col("kind") == "retransmission") & (pl.col("dir") == row["data_dir"]))


def draw_retx(ax, retx: pl.DataFrame, y=None, scale: float = 1.0, label_suffix: str = "",
              rug: bool = False) -> None:
    """One marker per retransmission, colour and shape by class: at (t, seq_start) with a
    vertical bar over its byte range, or (``rug``) as ticks along the top of the axes."""
    for cls, (color, marker) in RETX_STYLE.items():
        sel = retx.filter(pl.col("class").fill_null("unclassified") == cls)
        if sel.is_empty():
            continue
        t = sel["t"].to_numpy()
        label = f"retransmission: {cls.replace('_', ' ')} ({len(t)}){label_suffix}"
        if rug:
            ax.plot(t, np.full(len(t), 0.97), linestyle="none", marker="|", markersize=6, color=color,
                    transform=ax.get_xaxis_transform(), label=label, gid=f"retx-{cls}")
            continue
        s0 = sel["seq_start"].to_numpy().astype(float) / scale
        s1 = sel["seq_end"].to_numpy().astype(float) / scale
        ax.vlines(t, s0, s1, colors=color, linewidth=0.8)
        size = 9 if retx.height <= 200 else 4  # many marks: smaller, so the lines stay visible
        ax.scatter(t, s0 if y is None else y, s=size, marker=marker, facecolors="none" if marker != "x" else color,
                   edgecolors=color, linewidths=0.7, label=label, zorder=4, gid=f"retx-{cls}")


def sack_blocks(events: pl.DataFrame, row: dict) -> pl.DataFrame:
    """SACK blocks (events kind ``sack_block``) about the flow's data direction."""
    return events.filter((pl.col("kind") == "sack_block") & (pl.col("dir") == row["data_dir"]))


def draw_sack(ax, blocks: pl.DataFrame, scale: float = 1.0) -> None:
    """SACK blocks as thin vertical segments at each ACK's time over the block's bytes (as
    tcptrace draws them). Ordinary blocks of a long flow are merged per time bin
    (:func:`hsrtcp.plot.binning.merge_ranges`: the union of a bin's blocks, so a million ACKs
    are never a million segments); D-SACK blocks are few and each is drawn, with end caps."""
    for cls in ("sack", "dsack"):
        sel = blocks.filter(pl.col("class") == cls)
        if sel.is_empty():
            continue
        t, s0, s1 = sel["t"].to_numpy(), sel["seq_start"].to_numpy(), sel["seq_end"].to_numpy()
        if cls == "sack":
            t, s0, s1 = merge_ranges(t, s0, s1)
        s0, s1 = np.asarray(s0, dtype=float) / scale, np.asarray(s1, dtype=float) / scale
        color = SACK_STYLE[cls]
        label = f"{'D-SACK' if cls == 'dsack' else 'SACK'} block ({sel.height})"
        ax.vlines(t, s0, s1, colors=color, linewidth=0.5 if cls == "sack" else 0.9, label=label, zorder=3,
                  gid=f"sack-{cls}")
        if cls == "dsack":
            ax.scatter(np.r_[t, t], np.r_[s0, s1], s=12, marker="_", color=color, linewidths=0.9, zorder=3,
                       gid="sack-dsack-caps")


def draw_spurious(ax, events: pl.DataFrame, retx: pl.DataFrame, scale: float = 1.0, rug: bool = False) -> None:
    """Spurious timeouts (one star per episode, whatever the method that found it) at the
    sequence of the RTO retransmission they were detected on."""
    sp = events.filter(pl.col("kind") == "spurious_timeout").unique("ts", keep="first", maintain_order=True)
    if sp.is_empty():
        return
    t = sp["t"].to_numpy()
    color, marker = SPURIOUS_STYLE
    label = f"spurious timeout ({len(t)})"
    if rug or retx.is_empty():
        ax.plot(t, np.full(len(t), 0.92), linestyle="none", marker=marker, markersize=5, color=color,
                transform=ax.get_xaxis_transform(), label=label, gid="spurious")
        return
    # the retransmission at (or just before) each episode's start carries its sequence
    rt, rs = retx["t"].to_numpy(), retx["seq_start"].to_numpy().astype(float)
    i = np.clip(np.searchsorted(rt, t + 1e-9) - 1, 0, len(rt) - 1)
    ax.scatter(t, rs[i] / scale, s=30, marker=marker, color=color, label=label, zorder=5, gid="spurious")


def draw_bands(ax, res: Results, row: dict, events: pl.DataFrame, timeouts: bool = True) -> None:
    """Timeout sequences, outages (suspensions) and handoffs over the flow's time."""
    t0 = row["first_ts"]
    if timeouts:
        to = events.filter(pl.col("kind") == "timeout_sequence")
        for i, r in enumerate(to.iter_rows(named=True)):
            if r["t_end"] is not None:
                ax.axvspan(r["t"], r["t_end"], color=OKABE_ITO["orange"], alpha=0.15, linewidth=0,
                           label="timeout sequence (M10)" if i == 0 else None)
    stalls = events.filter((pl.col("kind") == "suspension") & pl.col("t_end").is_not_null())
    for i, r in enumerate(stalls.iter_rows(named=True)):
        ax.axvspan(r["t"], r["t_end"], color=GREY, alpha=0.18, linewidth=0,
                   label="suspension (silence)" if i == 0 else None)
    gaps = res.optional("suspensions", ["flow_id", "gap_start_ts", "gap_end_ts"], row["flow_id"])
    if gaps is not None:
        for i, r in enumerate(gaps.drop_nulls(["gap_start_ts", "gap_end_ts"]).iter_rows(named=True)):
            ax.axvspan(r["gap_start_ts"] - t0, r["gap_end_ts"] - t0, facecolor="none", hatch="////",
                       edgecolor=OKABE_ITO["purple"], linewidth=0, alpha=0.6,
                       label="handoff outage (M24)" if i == 0 else None)
    for i, t in enumerate(handoff_times(res, row)):
        ax.axvline(t, color=OKABE_ITO["purple"], linestyle="--", linewidth=0.7,
                   label="handoff" if i == 0 else None)


def handoff_times(res: Results, row: dict) -> np.ndarray:
    """Handoffs (handoffs.parquet) inside the flow, seconds since its first packet; only the
    flow's carrier and run when context.parquet says which they are."""
    ho = res.optional("handoffs", ["ts"])
    if ho is None:
        return np.empty(0)
    ho = res.read("handoffs", ["ts"], optional=["carrier", "run_id"])
    ctx = res.optional("context", ["flow_id"], row["flow_id"])
    if ctx is not None and not ctx.is_empty():
        ctx = res.read("context", ["flow_id"], row["flow_id"], optional=["carrier", "run_id"])
        for key in ("carrier", "run_id"):
            v = ctx[key][0] if key in ctx.columns else None
            if v is not None and key in ho.columns:
                ho = ho.filter(pl.col(key) == v)
    inside = ho.filter(pl.col("ts").is_between(row["first_ts"], row["last_ts"]))
    return (inside["ts"] - row["first_ts"]).sort().to_numpy()
