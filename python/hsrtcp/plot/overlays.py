"""What several figures draw over their data: retransmission marks by class, SACK blocks,
spurious timeouts, timeout sequences, outages (suspensions) as bands and handoffs as lines.

Sources (all tables, times made relative to the flow's first packet):

- ``events`` (docs/formats/events.md): ``retransmission`` (ts, seq range, class),
  ``sack_block`` (ts of the ACK, the block's seq range, class sack or dsack),
  ``spurious_timeout`` (ts = first RTO retransmission of the episode), ``timeout_sequence``
  (ts → ts_end, M10), ``suspension`` (silence in both directions, ts → ts_end);
- context tables when present (docs/formats/context.md, handoffs.md): ``handoffs.parquet`` (ts of each
  serving-cell change, M23) and ``suspensions.parquet`` (gap_start_ts → gap_end_ts of the
  silence around a handoff inside the flow, M24/A12);
- the lab's ground truth when the results come from a bundle (docs/formats/truth.md):
  ``truth_events`` (scheduled outages held/dropped, RTT spikes, loss bursts, handoffs,
  coverage holes, stalls) and ``truth_capacity`` (the capacity the emulated path offered),
  of the flow's run and carrier (context.parquet). The truth is drawn filled and solid, the
  analyzer's inferences (timeout sequences, silences, M24 outages, radio-log handoffs) hatched,
  dashed or light, and the legend prefixes each with "truth:" or "inferred:". Every truth
  element has an SVG id with its window times (``truth-outage-held-p1-2.500-2.898``), as the
  lab's figures do (:mod:`hsrtcp.lab.figures`).
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


def draw_bands(ax, res: Results, row: dict, events: pl.DataFrame, timeouts: bool = True,
               truth: dict | None = None, handoffs: bool = True) -> None:
    """Timeout sequences, outages (suspensions) and (``handoffs``) handoffs over the flow's
    time; with ``truth`` (:func:`flow_truth`) the scheduled ones too, and every label says
    which is which."""
    t0 = row["first_ts"]
    inferred = "inferred: " if truth else ""
    if truth:
        draw_truth(ax, truth)
    if timeouts:
        to = events.filter(pl.col("kind") == "timeout_sequence")
        for i, r in enumerate(to.iter_rows(named=True)):
            if r["t_end"] is not None:
                ax.axvspan(r["t"], r["t_end"], color=OKABE_ITO["orange"], alpha=0.15, linewidth=0,
                           label=f"{inferred}timeout sequence (M10)" if i == 0 else None)
    stalls = events.filter((pl.col("kind") == "suspension") & pl.col("t_end").is_not_null())
    for i, r in enumerate(stalls.iter_rows(named=True)):
        ax.axvspan(r["t"], r["t_end"], color=GREY, alpha=0.18, linewidth=0,
                   label=f"{inferred}suspension (silence)" if i == 0 else None)
    gaps = res.optional("suspensions", ["flow_id", "gap_start_ts", "gap_end_ts"], row["flow_id"])
    if gaps is not None:
        for i, r in enumerate(gaps.drop_nulls(["gap_start_ts", "gap_end_ts"]).iter_rows(named=True)):
            ax.axvspan(r["gap_start_ts"] - t0, r["gap_end_ts"] - t0, facecolor="none", hatch="////",
                       edgecolor=OKABE_ITO["purple"], linewidth=0, alpha=0.6,
                       label=f"{inferred}handoff outage (M24)" if i == 0 else None)
    for i, t in enumerate(handoff_times(res, row) if handoffs else ()):
        ax.axvline(t, color=OKABE_ITO["purple"], linestyle="--", linewidth=0.7,
                   label=(f"{inferred}handoff (radio log)" if truth else "handoff") if i == 0 else None)


# the ground truth's look: filled and solid (the inferences are light, hatched or dashed)
TRUTH_OUTAGE = {"held": (OKABE_ITO["vermillion"], 0.30, None), "dropped": (OKABE_ITO["black"], 0.45, "xx")}
TRUTH_SPIKE = OKABE_ITO["sky_blue"]
TRUTH_BURST = OKABE_ITO["yellow"]
TRUTH_HANDOFF = OKABE_ITO["black"]


def flow_truth(res: Results, row: dict) -> dict | None:
    """The ground truth of the flow's own path over its lifetime, times since its first
    packet: ``events`` and ``capacity`` (the data direction's pieces) of
    :func:`hsrtcp.lab.truth.flow_truth`; None when the results hold no truth (not from a
    lab bundle, or a bundle without a scenario)."""
    from hsrtcp.lab.truth import flow_truth as select

    ev = res.optional("truth_events", ["run_id", "path", "carrier", "kind", "ts", "ts_end", "t_start", "t_end"])
    cap = res.optional("truth_capacity", ["run_id", "path", "carrier", "direction", "ts", "ts_end", "bw_bps"])
    if ev is None or (ev.is_empty() and (cap is None or cap.is_empty())):
        return None  # (a path without scheduled events still has its offered capacity: issue 38)
    ev = res.read("truth_events", ["run_id", "path", "carrier", "kind", "ts", "ts_end", "t_start", "t_end",
                                   "outage_kind", "extra_rtt_s"])
    run_id = carrier = None
    ctx = res.optional("context", ["flow_id"], row["flow_id"])
    if ctx is not None and not ctx.is_empty():
        ctx = res.read("context", ["flow_id"], row["flow_id"], optional=["run_id", "carrier"])
        run_id = ctx["run_id"][0] if "run_id" in ctx.columns else None
        carrier = ctx["carrier"][0] if "carrier" in ctx.columns else None
    if run_id is None and ev.select(pl.col("run_id").n_unique()).item() > 1:
        return None  # several runs and the flow's unknown: no truth can be said to be its own
    direction = "up" if row.get("data_dir") == "c2s" else "down"
    events, capacity = select(ev, cap, run_id, carrier, row["first_ts"], row["last_ts"], direction)
    if events is None:  # no scheduled event in the run: the same columns, no rows
        events = ev.clear().rename({"t_start": "win_start", "t_end": "win_end"}).with_columns(
            t=pl.lit(None, pl.Float64), t_end=pl.lit(None, pl.Float64))
    if events.is_empty() and (capacity is None or capacity.is_empty()):
        return None
    span = row["last_ts"] - row["first_ts"]
    # drawn over the flow's time only (an outage the flow starts inside begins at 0)
    clip = [pl.col("t").clip(0.0, span), pl.col("t_end").clip(0.0, span)]
    events = events.with_columns(clip)
    capacity = capacity.with_columns(clip) if capacity is not None else None
    return {"events": events, "capacity": capacity, "direction": direction}


def draw_truth(ax, truth: dict) -> None:
    """The scheduled outages as bands (held: vermillion; dropped: black, cross-hatched), RTT
    spikes as a strip along the top, loss bursts along the bottom, handoffs as solid lines;
    each element's SVG id names it with its window times."""
    ev = truth["events"]
    seen: set[str] = set()

    def label(text: str, n: int) -> str | None:
        if text in seen:
            return None
        seen.add(text)
        return f"truth: {text} ({n})"

    for r in ev.iter_rows(named=True):
        kind, a, b = r["kind"], r["t"], r["t_end"]
        tag = f"p{r['path']}-{r['win_start']:.3f}-{r['win_end'] if r['win_end'] is not None else r['win_start']:.3f}"
        if kind == "outage":
            k = r["outage_kind"] if r["outage_kind"] in TRUTH_OUTAGE else "held"
            color, alpha, hatch = TRUTH_OUTAGE[k]
            n = ev.filter((pl.col("kind") == "outage") & (pl.col("outage_kind") == k)).height
            art = ax.axvspan(a, b, facecolor=color, alpha=alpha, hatch=hatch, edgecolor="white" if hatch else None,
                             linewidth=0, zorder=0.5, label=label(f"outage, {k}", n))
            art.set_gid(f"truth-outage-{k}-{tag}")
        elif kind == "rtt_spike":
            n = ev.filter(pl.col("kind") == "rtt_spike").height
            art = ax.axvspan(a, b, ymin=0.94, ymax=1.0, color=TRUTH_SPIKE, linewidth=0, label=label("delay spike", n))
            art.set_gid(f"truth-rtt_spike-{tag}")
        elif kind == "loss_burst":
            n = ev.filter(pl.col("kind") == "loss_burst").height
            art = ax.axvspan(a, b, ymin=0.0, ymax=0.06, color=TRUTH_BURST, linewidth=0, label=label("loss burst", n))
            art.set_gid(f"truth-loss_burst-{tag}")
        elif kind in ("coverage_hole", "stall"):
            n = ev.filter(pl.col("kind") == kind).height
            art = ax.axvspan(a, b, color=GREY if kind == "coverage_hole" else OKABE_ITO["orange"], alpha=0.12,
                             linewidth=0, zorder=0.5, label=label(kind.replace("_", " "), n))
            art.set_gid(f"truth-{kind}-{tag}")
        elif kind == "handoff":
            n = ev.filter(pl.col("kind") == "handoff").height
            art = ax.axvline(a, color=TRUTH_HANDOFF, linewidth=0.8, linestyle="-", label=label("handoff", n))
            art.set_gid(f"truth-handoff-p{r['path']}-{r['win_start']:.3f}")


def draw_capacity(ax, truth: dict | None, div: float) -> float:
    """The capacity the emulated path offered the flow's data direction, a step line in
    units of ``div`` bit/s; returns its largest value drawn (0 without truth)."""
    cap = None if truth is None else truth.get("capacity")
    if cap is None or cap.is_empty():
        return 0.0
    cap = cap.sort("t")
    x = np.r_[cap["t"].to_numpy(), cap["t_end"].to_numpy()[-1]]
    y = cap["bw_bps"].to_numpy().astype(float)
    y = np.r_[y, y[-1]] / div
    ax.step(x, y, where="post", color=GREY, linewidth=1.0, zorder=1.5, gid="truth-capacity",
            label=f"truth: capacity offered ({truth['direction']}, IP bytes)")
    return float(np.nanmax(y)) if len(y) else 0.0


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
