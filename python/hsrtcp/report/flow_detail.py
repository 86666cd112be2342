"""The per-flow drill-down charts, from the tables only (docs/report.md, "Flow detail").

Time axis: seconds since the flow's first packet (flows.first_ts). Sequence axis: bytes of
the data direction (flows.data_dir), relative sequence numbers as in the events table.

- time–sequence graph (seed 000 Fig. 12): the tables do not hold every packet, so the lines
  come from the 1-s series bins — ACK line = first data sequence + cumulative newly
  acknowledged bytes (series.goodput_bytes) at each bin end; advertised-window edge = ACK line
  + series.awnd_min; data edge = ACK line + series.bif_max (sender vantage only) — and the
  marks are exact: every retransmission event (kind 'retransmission', the data direction) is
  a vertical tick from seq_start to seq_end at its ts, coloured by class; spurious
  retransmissions are black. SACK blocks (kind 'sack_block', the data direction) are thin
  segments at their ACK's ts over the block's bytes, D-SACK blocks wider and yellow; above
  4 blocks per pixel column the ordinary ones are merged per pixel column (their union,
  :func:`hsrtcp.plot.binning.merge_ranges`), D-SACKs never. Bands: timeout sequences (M10),
  zero-window episodes, silences (events 'suspension'/'gap'), outages (suspensions.parquet
  M24 gaps); handoffs are lines.
- throughput (M3): series.bytes × 8 per 1-s bin, goodput from goodput_bytes; handoff lines.
- bytes in flight / advertised window (M17, seed 000 Figs 8/9): series bif_max, bif_mean,
  awnd_min, awnd_mean; retransmissions as ticks.
- RTT (M7): every sample of the rtt table in the data direction (downsampled per pixel
  column, :mod:`hsrtcp.report.downsample`), and the per-bin mean.
- the lab's ground truth, when the results come from a bundle (docs/formats/truth.md): on
  every chart the flow's scheduled outages as bands (held: vermillion with an edge; dropped:
  dark, hatched), RTT spikes as a strip along the top, loss bursts along the bottom,
  handoffs as solid black lines; on the throughput chart the capacity the path offered, a
  grey step line. Their labels start "truth:", and the analyzer's own bands and handoffs
  then start "inferred:".
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.plot.binning import merge_ranges
from hsrtcp.report.charts import PALETTE, RETRANS_COLOURS, SACK_COLOURS, chart, clean, series, sig
from hsrtcp.report.downsample import downsample

BAND_KINDS = {
    "timeout_sequence": ("timeout sequence (M10)", "rgba(204,121,167,0.18)"),
    "spurious_timeout": ("spurious timeout", "rgba(0,0,0,0.10)"),
    "zero_window": ("zero window", "rgba(240,228,66,0.30)"),
    "suspension": ("silence", "rgba(86,180,233,0.18)"),
    "gap": ("gap ≥ 0.2 s", "rgba(86,180,233,0.18)"),
}
OUTAGE_COLOUR = "rgba(213,94,0,0.15)"
HANDOFF_COLOUR = PALETTE["green"]
#: the ground truth's look (label, colour, extra keys of the band): strong fills, edges,
#: hatching and strips, so that it stands apart from the analyzer's light bands
TRUTH_BANDS = {
    "held": ("truth: outage, held", "rgba(213,94,0,0.32)", {"edge": PALETTE["vermillion"]}),
    "dropped": ("truth: outage, dropped", "rgba(0,0,0,0.30)", {"hatch": PALETTE["black"]}),
    "rtt_spike": ("truth: delay spike", "rgba(86,180,233,0.9)", {"strip": "top"}),
    "loss_burst": ("truth: loss burst", "rgba(240,228,66,0.95)", {"strip": "bottom"}),
    "coverage_hole": ("truth: coverage hole", "rgba(127,127,127,0.15)", {}),
    "stall": ("truth: stall", "rgba(230,159,0,0.15)", {}),
}
TRUTH_HANDOFF = PALETTE["black"]


def truth_overlay(truth: dict | None) -> tuple[list[dict], list[dict], dict | None]:
    """Bands, handoff lines and the capacity series of the flow's ground truth
    (:func:`hsrtcp.lab.truth.flow_truth` frames, times since the flow's first packet);
    each band and line carries an ``id`` with its kind and window times."""
    if truth is None:
        return [], [], None
    bands, vlines = [], []
    ev = truth.get("events")
    for r in (ev.iter_rows(named=True) if ev is not None else ()):
        kind = r["kind"]
        where = f"p{r['path']}-{r['win_start']:.3f}"
        if kind == "handoff":
            vlines.append({"t": round(r["t"], 6), "label": "truth: handoff", "color": TRUTH_HANDOFF, "solid": True,
                           "id": f"truth-handoff-{where}"})
            continue
        key = (r["outage_kind"] or "held") if kind == "outage" else kind
        if key not in TRUTH_BANDS or r["t_end"] is None:
            continue
        label, col, extra = TRUTH_BANDS[key]
        name = f"outage-{key}" if kind == "outage" else kind
        bands.append({"t0": round(r["t"], 6), "t1": round(r["t_end"], 6), "label": label, "color": col, "truth": True,
                      "id": f"truth-{name}-{where}-{r['win_end']:.3f}", **extra})
    cap = truth.get("capacity")
    capacity = None
    if cap is not None and cap.height:
        cap = cap.sort("t")
        x = np.r_[_col(cap, "t"), _col(cap, "t_end")[-1:]]
        y = _col(cap, "bw_bps")
        capacity = series(f"truth: capacity offered ({truth.get('direction', 'down')}, IP bytes)", clean(x, 6),
                          sig(np.r_[y, y[-1:]]), PALETTE["grey"], "step", 1.5)
        capacity["span_gaps"] = True
    return bands, vlines, capacity


def _col(df: pl.DataFrame, name: str) -> np.ndarray:
    """A column as float64 with NaN for null (Series.to_numpy, no polars expression: the
    report calls this ~10 times per flow and an expression costs a query each)."""
    if name not in df.columns:
        return np.full(df.height, np.nan)
    return df.get_column(name).to_numpy().astype(np.float64, copy=False)


#: packets table columns the drill-down's time–sequence graph reads (docs/formats/packets.md)
PACKET_COLUMNS = ["flow_id", "ts", "dir", "seq", "ack", "len", "window", "retrans"]
#: read when present: the matcher's per-packet verdict (pair runs)
PACKET_OPTIONAL = ["fate"]
#: marks of the matcher's per-packet losses: a cross per lost data segment, a triangle per lost ACK
LOST_COLOUR = PALETTE["vermillion"]
ACK_LOST_COLOUR = PALETTE["orange"]
#: up to this many data segments in the visible window each is drawn (as `hsrtcp plot tsg`)
SEGMENTS_MAX = 3000
#: segments plus ACKs of one flow embedded at most (about 10 bytes each: 2.5 M < 20 MB of HTML)
EMBED_MAX = 2_500_000
#: how to get per-segment graphs (the bin charts' title and note say it)
PACKETS_HINT = "run `hsrtcp analyze --packets` (and report again) for every segment"


def phone_lost_acks(matched: dict, phone: dict, packets: pl.DataFrame | None) -> pl.DataFrame | None:
    """A matched row's lost pure ACKs (ts on the server clock, ack): their rows are in the
    phone's capture (the ACK sender's); times mapped with the matcher's clock fit,
    θ(t) = clock_offset_s + drift × (t − the middle of the phone row)."""
    if packets is None or "fate" not in packets.columns or matched.get("clock_offset_s") is None:
        return None
    mid = (phone["first_ts"] + phone["last_ts"]) / 2
    drift = (matched.get("clock_drift_ppm") or 0.0) * 1e-6
    return (packets.filter((pl.col("dir") != phone["data_dir"]) & (pl.col("fate") == "ack_lost")
                           & pl.col("ack").is_not_null())
            .select(ts=pl.col("ts") + matched["clock_offset_s"] + drift * (pl.col("ts") - mid), ack="ack"))


def packet_segments(packets: pl.DataFrame, flow: dict, other_lost_acks: pl.DataFrame | None = None) -> dict | None:
    """The flow's packets for the report's per-segment time–sequence graph (static/report.js,
    drawSegments), as delta-coded integers (compact JSON): ``data`` (the data direction's
    segments with payload: ``dt`` µs since the previous one (the first: since the flow's first
    packet), ``ds`` seq minus the previous segment's seq + len, ``len``; ``rx_i``/``rx_c``
    the re-sent ones' indices and classes) and ``acks`` (the other direction's segments with
    the ACK flag: ``dt``, ``ack`` deltas, ``win`` window deltas or None when a window is
    unknown). None when the flow has neither."""
    data_dir = flow.get("data_dir")
    if data_dir is None:
        return None
    p = packets.sort("ts", maintain_order=True)
    if "fate" not in p.columns:  # results written before the fate column
        p = p.with_columns(fate=pl.lit(None, dtype=pl.String))
    us = ((pl.col("ts") - float(flow["first_ts"])) * 1e6).round().cast(pl.Int64)
    d = p.filter((pl.col("dir") == data_dir) & (pl.col("len") > 0)).select(t=us, seq="seq",
                                                                             len=pl.col("len").cast(pl.Int64), rx="retrans",
                                                                             fate="fate")
    a = p.filter((pl.col("dir") != data_dir) & pl.col("ack").is_not_null()).select(t=us, ack="ack", win="window",
                                                                                   fate="fate")
    if d.height + a.height == 0:
        return None
    t, seq, ln = (d.get_column(c).to_numpy() for c in ("t", "seq", "len"))
    prev_end = np.r_[0, (seq + ln)[:-1]]
    rx = d.with_row_index("i").filter(pl.col("rx").is_not_null())
    win = a.get_column("win")
    # the matcher's verdicts (pair runs): indices of data segments lost in the network and of
    # pure ACKs lost (those rows are in the ACK sender's capture, the phone's)
    lost_i = d.with_row_index("i").filter(pl.col("fate") == "lost").get_column("i").to_list()
    al = a.filter(pl.col("fate") == "ack_lost").select("t", "ack")
    if other_lost_acks is not None and other_lost_acks.height:  # a matched row: the phone's, on the server clock
        al = pl.concat([al, other_lost_acks.select(t=us, ack="ack")]).sort("t")
    out = {
        "data": {"dt": np.diff(t, prepend=0).tolist(), "ds": (seq - prev_end).tolist(), "len": ln.tolist(),
                 "rx_i": rx.get_column("i").to_list(), "rx_c": rx.get_column("rx").to_list()},
        "acks": {"dt": np.diff(a.get_column("t").to_numpy(), prepend=0).tolist(),
                 "ack": np.diff(a.get_column("ack").to_numpy(), prepend=0).tolist(),
                 "win": None if win.null_count() or not a.height else np.diff(win.cast(pl.Int64).to_numpy(), prepend=0).tolist()},
        "max_exact": SEGMENTS_MAX, "colors": RETRANS_COLOURS,
    }
    if p.get_column("fate").is_not_null().any():
        # lost ACKs as (µs since the flow's first packet, ack): a matched row's are not among its acks
        out["fates"] = {"lost_i": lost_i, "ack_lost_t": al.get_column("t").to_list(),
                        "ack_lost_ack": al.get_column("ack").to_list(), "color": LOST_COLOUR, "ack_color": ACK_LOST_COLOUR}
    return out


def flow_charts(flow: dict, series_df: pl.DataFrame | None, events_df: pl.DataFrame | None,
                rtt_df: pl.DataFrame | None, handoff_ts: np.ndarray, outages: pl.DataFrame | None,
                width: int, fates: pl.DataFrame | None = None, key=None, truth: dict | None = None,
                packets: pl.DataFrame | None = None, packets_note: str | None = None,
                other_lost_acks: pl.DataFrame | None = None) -> dict:
    """Chart specs and notes for one flow (``flow``: its flows row as a dict). ``fates``: a
    matched row's series bins (data_sent, data_lost per 1-s bin): the matcher's losses drawn
    over ``flow``'s packets; ``key``: the id the charts go by (default flow_id); ``truth``:
    the lab's ground truth of the flow's path (:func:`truth_overlay`); ``packets``: the flow's
    rows of the packets table (the time–sequence graph then draws every segment, else 1-s bins
    labelled so, with ``packets_note`` or how to get the table); ``other_lost_acks``: a matched
    row's lost ACKs from the phone's capture (:func:`phone_lost_acks`)."""
    fid = flow["flow_id"] if key is None else key
    t0 = float(flow["first_ts"])
    duration = float(flow["duration_s"] or 0.0)
    data_dir = flow.get("data_dir")
    notes: list[str] = []

    # --- series bins
    if series_df is None or series_df.height == 0:
        series_df = pl.DataFrame()
        notes.append("no series bins for this flow (no packet in the data direction)")
    else:
        series_df = series_df.sort("bin")
    t_rel = _col(series_df, "t_rel")
    bin_end = np.minimum(t_rel + 1.0, max(duration, 0.0)) if len(t_rel) else t_rel
    bin_end = np.maximum(bin_end, t_rel)  # the last bin of a flow ends at its last packet

    # --- events
    ev = events_df if events_df is not None else pl.DataFrame()
    marks: list[dict] = []
    sacks: list[dict] = []
    sack_counts: dict[str, int] = {}  # blocks per class (legend), before any merging
    bands: list[dict] = []
    if ev.height:
        ev = ev.sort("ts")
        rx = ev.filter(pl.col("kind").is_in(["retransmission", "spurious_retransmission"])
                       & pl.col("seq_start").is_not_null())
        if data_dir is not None:
            rx = rx.filter(pl.col("dir") == data_dir)
        ts = rx.get_column("ts").to_numpy() - t0
        s0 = rx.get_column("seq_start").to_numpy()
        s1 = rx.get_column("seq_end").to_numpy()
        kinds = rx.get_column("kind").to_list()
        classes = rx.get_column("class").to_list()
        for t, a, b, k, c in zip(ts.tolist(), s0.tolist(), s1.tolist(), kinds, classes):
            cls = "spurious" if k == "spurious_retransmission" else (c or "unclassified")
            marks.append({"t": round(t, 6), "s0": a, "s1": b, "cls": cls,
                          "color": RETRANS_COLOURS.get(cls, PALETTE["grey"])})
        sk = ev.filter((pl.col("kind") == "sack_block") & pl.col("seq_start").is_not_null())
        if data_dir is not None:
            sk = sk.filter(pl.col("dir") == data_dir)
        for cls in ("sack", "dsack"):
            sel = sk.filter(pl.col("class") == cls)
            if not sel.height:
                continue
            t, a, b = (sel.get_column("ts").to_numpy() - t0, sel.get_column("seq_start").to_numpy(),
                       sel.get_column("seq_end").to_numpy())
            if cls == "sack":
                t, a, b = merge_ranges(t, a, b, max_marks=4 * width, bins=width)
                if len(t) < sel.height:
                    notes.append(f"SACK blocks: {len(t):,} segments drawn for {sel.height:,} blocks "
                                 f"(merged per pixel column)")
            sack_counts[cls] = sel.height
            sacks += [{"t": round(x, 6), "s0": int(lo), "s1": int(hi), "cls": cls, "color": SACK_COLOURS[cls]}
                      for x, lo, hi in zip(np.asarray(t).tolist(), np.asarray(a).tolist(), np.asarray(b).tolist())]
        for kind, a, b in zip(ev.get_column("kind").to_list(), ev.get_column("ts").to_list(),
                              ev.get_column("ts_end").to_list()):
            if kind in BAND_KINDS and b is not None:
                label, col = BAND_KINDS[kind]
                bands.append({"t0": round(a - t0, 6), "t1": round(b - t0, 6), "label": label, "color": col})
    if outages is not None and outages.height:
        for a, b in zip(outages.get_column("gap_start_ts").to_list(), outages.get_column("gap_end_ts").to_list()):
            if a is not None and b is not None:
                bands.append({"t0": round(a - t0, 6), "t1": round(b - t0, 6), "label": "outage (M24)",
                              "color": OUTAGE_COLOUR})
    vlines = [{"t": round(float(h) - t0, 6), "label": "handoff", "color": HANDOFF_COLOUR} for h in handoff_ts]

    # --- time–sequence graph
    segs = packet_segments(packets, flow, other_lost_acks) if packets is not None and packets.height else None
    first_seq = 1 if flow.get("handshake_seen") else 0
    goodput = np.nan_to_num(_col(series_df, "goodput_bytes"))
    ack = first_seq + np.cumsum(goodput)
    x_line = clean(np.r_[0.0, bin_end], 6)
    ack_line = np.r_[float(first_seq), ack]
    awnd_edge = np.r_[np.nan, ack + _col(series_df, "awnd_min")]
    data_edge = np.r_[np.nan, ack + _col(series_df, "bif_max")]
    if segs is not None:  # every segment and ACK from the packets table: no bin line
        tseq_series = []
    else:
        tseq_series = [series("ACK (cumulative, per 1-s bin)", x_line, clean(ack_line), PALETTE["blue"], "line", 2)]
        if not np.all(np.isnan(data_edge)):
            tseq_series.append(series("data edge: ACK + max bytes in flight, per 1-s bin", x_line, clean(data_edge),
                                      PALETTE["sky"], "line"))
        if not np.all(np.isnan(awnd_edge)):
            tseq_series.append(series("advertised window edge: ACK + min AWND, per 1-s bin", x_line,
                                      clean(awnd_edge), PALETTE["green"], "line"))
        notes.append("time–sequence graph: lines per 1-s bin, not per segment: "
                     + (packets_note or f"no packets table in the results; {PACKETS_HINT}"))
    if segs is not None and "fates" in segs:
        pass  # every lost segment is marked from the packets table (static/report.js, drawFates)
    elif fates is not None and "data_lost" in fates.columns and fates.height:
        lost = fates.filter(pl.col("data_lost").fill_null(0) > 0).sort("bin")
        if lost.height:
            # the tables count the lost segments per bin, not which: one point per bin on the ACK line
            t = np.minimum(_col(lost, "t_rel") + 0.5, max(duration, 0.0))
            total, sent = int(lost.get_column("data_lost").sum()), int(fates.get_column("data_sent").fill_null(0).sum())
            tseq_series.append(series(f"lost in the network (matcher): {total:,} of {sent:,} data packets, "
                                      "per 1-s bin", clean(t, 6), clean(np.interp(t, x_line, ack_line)),
                                      PALETTE["vermillion"], "points"))
    title = ("Time–sequence graph (every segment, packets table)" if segs is not None
             else f"Time–sequence graph (per 1-s bin: {PACKETS_HINT})")
    tseq = chart(f"tseq-{fid}", title, "time since the flow's first packet (s)",
                 f"sequence number, {data_dir or 'data'} direction (bytes)", tseq_series,
                 marks=marks, sacks=sacks, sack_counts=sack_counts, bands=bands, vlines=vlines,
                 x_max=round(duration, 6), zoom_y=True, segments=segs)
    if not marks:
        notes.append("no retransmission in the data direction")

    # --- throughput
    bin_len = np.maximum(bin_end - t_rel, 1e-9)
    bin_len = np.where(bin_end - t_rel > 0, bin_len, 1.0)
    # step charts: bin starts plus the last bin's end, so the last (or only) bin has a width
    x_bins = clean(np.r_[t_rel, bin_end[-1:]], 6)

    def per_bin(vals):
        return np.r_[vals, vals[-1:]]
    tput = chart(f"tput-{fid}", "Throughput (M3, 1-s bins)", "time since the flow's first packet (s)",
                 "bit/s", [
                     series("data bytes × 8 / bin", x_bins, sig(per_bin(_col(series_df, "bytes") * 8 / bin_len)),
                            PALETTE["blue"], "step", 2),
                     series("goodput (newly ACKed) × 8 / bin", x_bins,
                            sig(per_bin(_col(series_df, "goodput_bytes") * 8 / bin_len)), PALETTE["orange"], "step"),
                 ], bands=[b for b in bands if b["label"] in ("outage (M24)", "timeout sequence (M10)")],
                 vlines=vlines, x_max=round(duration, 6))

    # --- bytes in flight / AWND: per ACK from the tsg's packets (static/report.js, perAck), else bins
    win_series = []
    if segs is not None:
        window = chart(f"win-{fid}", "Outstanding data (owin) and advertised window (per ACK, packets table)",
                       "time since the flow's first packet (s)", "bytes", [],
                       marks=[{**m, "tick": True} for m in marks], vlines=vlines, x_max=round(duration, 6),
                       per_ack=f"tseq-{fid}")
    else:
        window = None
    for name, label, col, style in (("bif_max", "bytes in flight, max (M17)", PALETTE["vermillion"], "step"),
                                    ("bif_mean", "bytes in flight, mean", PALETTE["orange"], "step"),
                                    ("awnd_min", "advertised window, min", PALETTE["green"], "step"),
                                    ("awnd_mean", "advertised window, mean", PALETTE["sky"], "step")):
        vals = _col(series_df, name)
        if window is None and not np.all(np.isnan(vals)):
            win_series.append(series(label, x_bins, sig(per_bin(vals)), col, style))
    if window is None:
        if not win_series:
            notes.append("no bytes-in-flight or window samples (vantage unknown or no ACKs)")
        else:
            notes.append("bytes in flight and window: per 1-s bin, not per ACK: "
                         + (packets_note or f"no packets table in the results; {PACKETS_HINT}"))
        window = chart(f"win-{fid}", f"Bytes in flight and advertised window (per 1-s bin: {PACKETS_HINT})",
                       "time since the flow's first packet (s)", "bytes", win_series,
                       marks=[{**m, "tick": True} for m in marks], vlines=vlines, x_max=round(duration, 6))

    # --- RTT
    rtt_series = []
    if rtt_df is not None and rtt_df.height:
        r = rtt_df.filter(pl.col("method") != "handshake")
        if data_dir is not None:
            r = r.filter(pl.col("dir") == data_dir)
        r = r.sort("ts")
        for j, (method, label) in enumerate((("ack", "RTT samples, ACK matching (Karn)"),
                                            ("ts", "RTT samples, TSval echo"))):
            sub = r.filter(pl.col("method") == method)
            if not sub.height:
                continue
            x = sub.get_column("ts").to_numpy() - t0
            y = sub.get_column("rtt_s").to_numpy()
            keep = downsample(x, y, width)
            if len(keep) < len(x):
                notes.append(f"{label}: {len(keep):,} of {len(x):,} samples shown (per-pixel-column min/max)")
            rtt_series.append(series(label, clean(x[keep], 6), sig(y[keep], 5),
                                     PALETTE["blue"] if j == 0 else PALETTE["purple"], "points"))
    mean = _col(series_df, "rtt_mean")
    if not np.all(np.isnan(mean)):
        rtt_series.append(series("mean per 1-s bin", clean(t_rel + np.minimum(0.5, (bin_end - t_rel) / 2), 6),
                                 sig(mean), PALETTE["orange"], "line", 2))
    if not rtt_series:
        notes.append("no RTT samples in the data direction")
    rtt = chart(f"rtt-{fid}", "Round-trip time (M7)", "time since the flow's first packet (s)", "RTT (s)",
                rtt_series, vlines=vlines, bands=tput["bands"], x_max=round(duration, 6))

    charts = [tseq, tput, window, rtt]
    t_bands, t_vlines, capacity = truth_overlay(truth)
    if t_bands or t_vlines or capacity:
        for ch in charts:  # the analyzer's own, told apart from the truth drawn beside them
            ch["bands"] = [dict(b, label=f"inferred: {b['label']}") for b in ch["bands"]] + t_bands
            ch["vlines"] = [dict(v, label=f"inferred: {v['label']} (radio log)") for v in ch["vlines"]] + t_vlines
        if capacity is not None:
            for sr in tput["series"]:
                sr["span_gaps"] = True  # post-steps on the capacity's x too (uPlot.join puts nulls there)
            tput["series"].insert(0, capacity)
        n_out = sum(b["label"].startswith("truth: outage") for b in t_bands)
        notes.append(f"ground truth of the lab run (truth_events, truth_capacity): {n_out} scheduled outage(s), "
                     f"{len(t_vlines)} handoff(s) over this flow; the analyzer's inferences are labelled 'inferred:'")
    return {"flow_id": fid, "notes": notes, "charts": charts, "retransmissions": len(marks)}
