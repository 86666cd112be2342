"""Time–sequence graph of one flow (the tcptrace/Wireshark "Stevens" graph, seed 000 Fig. 12).

Drawn from the result tables:

- data line: highest relative sequence sent, from ``series`` — 1 + cumulative new payload
  bytes of the data direction at each 1-s bin's end (``bytes`` minus the bytes of that bin's
  retransmissions from ``events``); between bin ends never below a retransmission's
  ``seq_end`` already sent;
- ACK line: 1 + cumulative ``series.goodput_bytes`` (the advance of the cumulative ACK);
  at the sender, never above a later retransmission's ``seq_start``;
- advertised-window line: ACK line + ``series.awnd_min`` (the tightest right edge of the bin);
- every retransmission from ``events`` at (time, seq_start) with a bar over its byte range,
  coloured and shaped by class (fast, sack_refill, rto, tlp, unclassified);
- SACK blocks from ``events`` (kind ``sack_block``, RFC 2018): a thin segment at each ACK's
  time over the block's bytes, D-SACK blocks (RFC 2883) in their own colour with end caps;
  above 4,000 blocks the ordinary ones are merged per time bin (their union;
  :func:`hsrtcp.plot.binning.merge_ranges`), D-SACKs never;
- spurious timeouts, timeout sequences, suspensions, and handoffs/outages when context
  tables exist (:mod:`hsrtcp.plot.overlays`).

A matched row (two captures) holds metrics, not packets: its graph is its server-side
row's (the phone's when only the phone capture has the connection) with the matcher's
verdicts on top: its spurious timeouts (M12, with their cause) and, per 1-s bin, the data
segments the matcher found lost in the network (``series.data_lost`` of the matched row).
A flow whose lines never leave the start and which has no mark is an input error (nothing
to draw), never an empty figure.

With a ``packets`` table (``hsrtcp analyze --packets``, docs/formats/packets.md) the graph
is drawn from the packets, as tcptrace draws it: each data segment a vertical tick from seq to
seq+len at its time (re-sent ones in their class's colour), the cumulative ACK and the
advertised-window edge (ACK + window) as step lines changing at each ACK. Up to
:data:`SEGMENTS_MAX` segments in the visible window are drawn one by one; above, each of
:data:`PIXELS` columns of the window is one bar from its lowest to its highest byte and the
step lines keep each column's extremes (a per-pixel envelope: never a line between bins).
In a pair run the packets' ``fate`` column replaces the per-bin losses: a cross at (time,
seq) per lost data segment, a triangle at (time, ack) per lost ACK (:func:`draw_packet_fates`).

Without a packets table the lines come from the 1-s bins and say so (legend "per 1-s bin",
a note on how to get every segment): they are known at the series' bin ends (dots); between
them they are drawn flat through recorded silences (events kind ``suspension``) and straight
elsewhere, while the event marks are exact.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.collections import LineCollection

from hsrtcp.errors import InputError
from hsrtcp.plot import overlays
from hsrtcp.plot.binning import envelope_line
from hsrtcp.plot.style import GREY, OKABE_ITO, RETX_STYLE, legend_below, new_figure, scale_for, styled
from hsrtcp.plot.tables import Results, flow_label

SERIES = ["flow_id", "bin", "t_rel", "bytes", "goodput_bytes", "awnd_min"]
PACKETS = ["flow_id", "ts", "dir", "seq", "ack", "len", "window", "retrans"]
#: up to this many data segments in the visible window each is drawn; above, per-pixel envelopes
SEGMENTS_MAX = 3000
#: columns of a per-pixel envelope (a 3.5-in figure is about 1,000 device pixels at 300 dpi)
PIXELS = 1000
#: the note of a figure drawn from 1-s bins (tests look for it)
BINS_NOTE = "per-second bins: run `hsrtcp analyze --packets` for every segment"


def flow_packets(res: Results, row: dict) -> dict[str, pl.DataFrame] | None:
    """The flow's segments from the packets table (None without one), times in seconds since
    the flow's first packet: ``data`` (t, s0, s1, retrans) for the data direction's segments
    with payload, ``acks`` (t, ack, edge = ack + window, null while the scale is unknown) for
    the other direction's segments with the ACK flag, both in capture order."""
    if not res.has("packets"):
        return None
    p = res.read("packets", PACKETS, row["flow_id"], optional=["fate"])
    t0, data_dir = row["first_ts"], row["data_dir"]
    if "fate" not in p.columns:  # results written before the fate column
        p = p.with_columns(fate=pl.lit(None, dtype=pl.String))
    data = (p.filter((pl.col("dir") == data_dir) & (pl.col("len") > 0))
            .select(t=pl.col("ts") - t0, s0=pl.col("seq").cast(pl.Float64),
                    s1=(pl.col("seq") + pl.col("len").cast(pl.Int64)).cast(pl.Float64), retrans="retrans"))
    acks = (p.filter((pl.col("dir") != data_dir) & pl.col("ack").is_not_null())
            .select(t=pl.col("ts") - t0, ack=pl.col("ack").cast(pl.Float64),
                    edge=(pl.col("ack") + pl.col("window").cast(pl.Int64)).cast(pl.Float64)))
    # the matcher's verdicts (pair runs only; null elsewhere): data segments lost in the
    # network, and pure ACKs that never arrived (in the ACK sender's capture: the phone's)
    lost = (p.filter((pl.col("dir") == data_dir) & (pl.col("len") > 0) & (pl.col("fate") == "lost"))
            .select(t=pl.col("ts") - t0, s0=pl.col("seq").cast(pl.Float64)))
    ack_lost = (p.filter((pl.col("dir") != data_dir) & (pl.col("fate") == "ack_lost") & pl.col("ack").is_not_null())
                .select(t=pl.col("ts") - t0, ack=pl.col("ack").cast(pl.Float64)))
    return {"data": data, "acks": acks, "lost": lost, "ack_lost": ack_lost,
            "has_fates": bool(p["fate"].is_not_null().any())}


def phone_lost_acks(res: Results, row: dict) -> pl.DataFrame:
    """A matched row's lost pure ACKs (t, ack): their rows are in the phone's capture (the
    ACK sender's), so their times are mapped to the server clock with the matcher's fit,
    θ(t) = clock_offset_s + drift × (t − the middle of the phone row), then made relative to
    the drawn (server) row's first packet."""
    empty = pl.DataFrame(schema={"t": pl.Float64, "ack": pl.Float64})
    flows = res.read("flows", ["flow_id", "first_ts", "last_ts", "vantage"],
                     optional=["client_flow_id", "server_flow_id", "clock_offset_s", "clock_drift_ppm"])
    m = flows.filter(pl.col("flow_id") == row["via_flow_id"])
    if m.is_empty() or not {"client_flow_id", "clock_offset_s"} <= set(m.columns):
        return empty
    m = m.row(0, named=True)
    if m["client_flow_id"] is None or m["client_flow_id"] == row["flow_id"] or m["clock_offset_s"] is None:
        return empty
    c = flows.filter(pl.col("flow_id") == m["client_flow_id"])
    if c.is_empty():
        return empty
    c = c.row(0, named=True)
    p = res.read("packets", ["flow_id", "ts", "dir", "ack"], c["flow_id"], optional=["fate"])
    if "fate" not in p.columns:
        return empty
    mid = (c["first_ts"] + c["last_ts"]) / 2
    drift = (m.get("clock_drift_ppm") or 0.0) * 1e-6
    return (p.filter((pl.col("dir") != row["data_dir"]) & (pl.col("fate") == "ack_lost") & pl.col("ack").is_not_null())
            .select(t=pl.col("ts") + m["clock_offset_s"] + drift * (pl.col("ts") - mid) - row["first_ts"],
                    ack=pl.col("ack").cast(pl.Float64)))


def steps(t: np.ndarray, y: np.ndarray, end: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The vertices of a step line holding each value until the next sample (the value
    changes at the sample's time), drawn out to ``end``: explicit corners, so the picture
    (and an SVG read back) is the step itself, never a slope."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(t) == 0:
        return t, y
    x = np.repeat(t, 2)[1:]
    yy = np.repeat(y, 2)[:-1]
    if end is not None and end > t[-1]:
        x, yy = np.r_[x, end], np.r_[yy, y[-1]]
    return x, yy


def in_view(df: pl.DataFrame, lo: float, hi: float, carry: bool = False) -> pl.DataFrame:
    """Rows with ``lo <= t <= hi`` (``carry``: plus the last one before ``lo``, whose value a
    step line holds at the window's left edge)."""
    sel = df.filter((pl.col("t") >= lo) & (pl.col("t") <= hi))
    if carry:
        before = df.filter(pl.col("t") < lo).tail(1)
        sel = pl.concat([before, sel])
    return sel


def segment_envelope(t: np.ndarray, s0: np.ndarray, s1: np.ndarray, lo: float, hi: float,
                     columns: int = PIXELS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One bar per pixel column of [lo, hi] holding segments: from the lowest first byte to
    the highest end of the segments in it, at the column's first segment's time."""
    width = (hi - lo) / columns or 1.0
    idx = np.clip(((t - lo) / width).astype(np.int64), 0, columns - 1)
    order = np.argsort(idx, kind="stable")
    idx, t, s0, s1 = idx[order], t[order], s0[order], s1[order]
    starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
    return t[starts], np.minimum.reduceat(s0, starts), np.maximum.reduceat(s1, starts)


def step_envelope(t: np.ndarray, y: np.ndarray, lo: float, hi: float,
                  columns: int = PIXELS) -> tuple[np.ndarray, np.ndarray]:
    """A step line's samples reduced to each pixel column's first, lowest, highest and last
    (unchanged when there are few): drawn as steps, it differs from the full line only
    inside a column."""
    if len(t) <= 2 * SEGMENTS_MAX:
        return t, y
    width = (hi - lo) / columns or 1.0
    idx = np.clip(((t - lo) / width).astype(np.int64), -1, columns)
    keep = np.zeros(len(t), dtype=bool)
    new = np.r_[True, idx[1:] != idx[:-1]]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(t)] - 1
    keep[starts] = keep[ends] = True
    for red in (np.minimum, np.maximum):  # each column's extremes (the first one of ties)
        ext = red.reduceat(y, starts)
        first = np.flatnonzero(y == np.repeat(ext, ends - starts + 1))
        grp = np.searchsorted(starts, first, side="right") - 1
        keep[first[np.r_[True, grp[1:] != grp[:-1]]]] = True
    return t[keep], y[keep]


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


def active_time(t: np.ndarray, silences: np.ndarray) -> np.ndarray:
    """Seconds from 0 to each ``t`` outside the (merged, sorted) ``silences`` [start, end)."""
    t = np.asarray(t, dtype=float)
    if len(silences) == 0:
        return t
    start, end = silences[:, 0], silences[:, 1]
    covered = np.clip(np.minimum(t[:, None], end[None, :]) - start[None, :], 0, None).sum(axis=1)
    return t - covered


def merge(intervals: list[tuple[float, float]]) -> np.ndarray:
    """Overlapping intervals joined, sorted by start, as an (n, 2) array."""
    out: list[list[float]] = []
    for a, b in sorted((a, b) for a, b in intervals if b > a):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return np.array(out, dtype=float).reshape(-1, 2)


def through_silences(t: np.ndarray, y: np.ndarray, silences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A cumulative line known at the knots ``t`` drawn flat through the silences (no packet
    in either direction: nothing sent, nothing acknowledged; events kind suspension) and
    straight over the rest of each bin's time (the even-rate assumption, between silences)."""
    if len(silences) == 0 or len(t) < 2:
        return t, y
    inner = silences[(silences[:, 1] > t[0]) & (silences[:, 0] < t[-1])].ravel()
    x = np.unique(np.r_[t, np.clip(inner, t[0], t[-1])])
    seg = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
    a, a0, a1 = active_time(x, silences), active_time(t[seg], silences), active_time(t[seg + 1], silences)
    span = a1 - a0
    frac = np.where(span > 0, (a - a0) / np.where(span > 0, span, 1), (x - t[seg]) / np.maximum(t[seg + 1] - t[seg], 1e-12))
    return x, y[seg] + (y[seg + 1] - y[seg]) * np.clip(frac, 0, 1)


def within_retransmission_bounds(x: np.ndarray, y: np.ndarray, retx: pl.DataFrame, div: float,
                                 upper: bool) -> tuple[np.ndarray, np.ndarray]:
    """What each retransmission proves about an interpolated line, applied at its time:
    ``upper`` False (data line): the highest sequence sent by time t is at least the
    ``seq_end`` of every retransmission until t; True (ACK line, sender vantage): the
    cumulative ACK at t is at most the ``seq_start`` of every retransmission from t on (only
    unacknowledged bytes are re-sent). The lines stay monotone; the measured bin ends, which
    already satisfy the bounds, do not move."""
    if retx.is_empty():
        return x, y
    r = retx.sort("t")
    rt = r["t"].to_numpy()
    xs = np.unique(np.r_[x, rt[(rt >= x[0]) & (rt <= x[-1])]])
    ys = np.interp(xs, x, y)
    if not upper:
        bound = np.maximum.accumulate(r["seq_end"].to_numpy().astype(float) / div)
        i = np.searchsorted(rt, xs, side="right") - 1
        ys = np.where(i >= 0, np.maximum(ys, bound[np.clip(i, 0, None)]), ys)
    else:
        bound = np.minimum.accumulate((r["seq_start"].to_numpy().astype(float) / div)[::-1])[::-1]
        i = np.searchsorted(rt, xs, side="left")
        ys = np.where(i < len(rt), np.minimum(ys, bound[np.clip(i, None, len(rt) - 1)]), ys)
    return xs, ys


@styled
def draw(res: Results, flow_id: int | None = None, view: tuple[float | None, float | None] | None = None):
    """The figure (not saved) of ``flow_id`` (default: the flow with the most data); ``view``
    (start, end), seconds since the flow's first packet, is the window the figure will show
    (:func:`hsrtcp.plot.figure` zooms to it): with a packets table it decides between every
    segment and per-pixel envelopes."""
    row = res.flow(flow_id, ["first_ts", "duration_s"], optional=["data_vantage"])
    events = overlays.flow_events(res, row)
    fates = None
    if row.get("via_flow_id") is not None:  # a matched row: its verdicts over its server row's packets
        verdicts = overlays.flow_events(res, dict(row, flow_id=row["via_flow_id"]))
        events = pl.concat([verdicts, events], how="diagonal_relaxed").sort("ts", maintain_order=True)
        if {"data_sent", "data_lost"} <= set(res.schema("series").names()):
            fates = res.read("series", ["flow_id", "bin", "t_rel", "data_sent", "data_lost"], row["via_flow_id"])
    retx = overlays.retransmissions(events, row)
    pk = flow_packets(res, row)
    if pk is not None and row.get("via_flow_id") is not None and pk["has_fates"] and not pk["ack_lost"].height:
        pk["ack_lost"] = phone_lost_acks(res, row)
    if pk is not None and (pk["data"].height or pk["acks"].height):
        return _draw_segments(res, row, events, retx, fates, pk, view)
    series = res.read("series", SERIES, row["flow_id"])
    if series.is_empty():
        raise InputError(f"{res.file('series')}: no series rows for flow {row['flow_id']} "
                         f"(nothing to draw the data and ACK lines from)")
    ln = lines(series, retx, row.get("duration_s") or 0.0)
    if np.nanmax(ln["data"]) <= 1 and np.nanmax(ln["ack"]) <= 1 and retx.is_empty() and (
            fates is None or not (fates["data_lost"].fill_null(0) > 0).any()):
        raise InputError(f"{res.file('series')}: flow {row.get('short_id') or row['flow_id']} (flow_id "
                         f"{row['flow_id']}): its series bins carry no data and no acknowledged byte, and it has "
                         f"no retransmission: nothing to draw")
    top = np.nanmax([np.nanmax(ln["data"]), np.nanmax(ln["ack"]),
                     float(retx["seq_end"].max() or 0) if not retx.is_empty() else 0.0])
    div, unit = scale_for(top, "B")
    truth = overlays.flow_truth(res, row)
    fig, ax = new_figure(height=5.4 if truth else 2.6)
    overlays.draw_bands(ax, res, row, events, truth=truth)
    silences = merge([(r["t"], r["t_end"]) for r in events.filter(
        (pl.col("kind") == "suspension") & pl.col("t_end").is_not_null()).iter_rows(named=True)])
    for key, color, style, label in (("window", GREY, ":", "advertised window edge (ACK + AWND min), per 1-s bin"),
                                     ("ack", OKABE_ITO["green"], "-", "cumulative ACK, per 1-s bin"),
                                     ("data", OKABE_ITO["black"], "-", "data sent (highest seq), per 1-s bin")):
        y = ln[key] / div
        if not np.isfinite(y).any():
            continue
        # the tables know the lines at the bin ends (dots); between them: flat through
        # silences, straight over the rest (docs/plot.md, "Limitations")
        x, yy = (ln["t"], y) if key == "window" else through_silences(ln["t"], y, silences)
        if key == "data":
            x, yy = within_retransmission_bounds(x, yy, retx, div, upper=False)
        elif key == "ack" and row.get("data_vantage") == "sender":
            x, yy = within_retransmission_bounds(x, yy, retx, div, upper=True)
        x, yy = envelope_line(x, yy)
        ax.plot(x, yy, color=color, linestyle=style, linewidth=0.8, label=label, gid=f"line-{key}")
        if len(ln["t"]) <= 120:
            ax.plot(ln["t"], y, linestyle="none", marker=".", markersize=3, color=color, gid=f"knots-{key}")
    if fates is not None:
        draw_fates(ax, fates, ln["t"], ln["data"], div)
    ax.text(0.99, 0.02, BINS_NOTE, transform=ax.transAxes, ha="right", va="bottom", fontsize=5.5, color=GREY,
            gid="bins-note")
    return _finish(fig, ax, row, events, retx, truth, div, unit)


def _finish(fig, ax, row, events, retx, truth, div, unit):
    """The exact event marks, axes, title and legend common to both sources."""
    overlays.draw_sack(ax, overlays.sack_blocks(events, row), scale=div)
    overlays.draw_retx(ax, retx, scale=div)
    overlays.draw_spurious(ax, events, retx, scale=div)
    ax.set_xlabel("time since the flow's first packet (s)")
    ax.set_ylabel(f"relative sequence number ({unit})")
    ax.set_title(flow_label(row), loc="left")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    if truth:  # the ground truth's entries too: below, not over the lines
        legend_below(fig, ax, ncol=1)
    else:
        ax.legend(loc="upper left")
    return fig


def _draw_segments(res: Results, row: dict, events: pl.DataFrame, retx: pl.DataFrame, fates, pk: dict, view):
    """The graph from the packets table: every segment in view, or per-pixel envelopes."""
    data, acks = pk["data"], pk["acks"]
    t_all = pl.concat([data["t"], acks["t"]])
    lo = view[0] if view and view[0] is not None else min(0.0, float(t_all.min()))
    hi = view[1] if view and view[1] is not None else max(float(t_all.max()), row.get("duration_s") or 0.0)
    top = max(float(data["s1"].max() or 0) if data.height else 0.0,
              float(acks["edge"].max() or 0) if acks["edge"].is_not_null().any() else 0.0,
              float(acks["ack"].max() or 0) if acks.height else 0.0)
    div, unit = scale_for(top, "B")
    truth = overlays.flow_truth(res, row)
    fig, ax = new_figure(height=5.4 if truth else 2.6)
    overlays.draw_bands(ax, res, row, events, truth=truth)
    seen = in_view(data, lo, hi)
    exact = seen.height <= SEGMENTS_MAX
    for key, color, style, label in (("edge", GREY, ":", "advertised window edge (ACK + window), per ACK"),
                                     ("ack", OKABE_ITO["green"], "-", "cumulative ACK, per ACK")):
        a = in_view(acks.filter(pl.col(key).is_not_null()), lo, hi, carry=True)
        if a.is_empty():
            continue
        t, y = a["t"].to_numpy(), a[key].to_numpy() / div
        if not exact or len(t) > 2 * SEGMENTS_MAX:
            t, y = step_envelope(t, y, lo, hi)
        x, yy = steps(t, y, end=hi)
        ax.plot(x, yy, color=color, linestyle=style, linewidth=0.7, label=label, gid=f"seg-line-{key}")
    if exact:
        new = seen.filter(pl.col("retrans").is_null())
        _ticks(ax, new["t"].to_numpy(), new["s0"].to_numpy() / div, new["s1"].to_numpy() / div, OKABE_ITO["black"],
               f"data segment, seq to seq+len ({new.height:,})", "seg-data")
        for cls, (color, _marker) in RETX_STYLE.items():
            r = seen.filter(pl.col("retrans") == cls) if cls != "unclassified" else seen.filter(
                pl.col("retrans").is_not_null() & ~pl.col("retrans").is_in([c for c in RETX_STYLE if c != cls]))
            if r.height:
                _ticks(ax, r["t"].to_numpy(), r["s0"].to_numpy() / div, r["s1"].to_numpy() / div, color, None,
                       f"seg-retx-{cls}", width=1.2)
    else:
        t, s0, s1 = segment_envelope(seen["t"].to_numpy(), seen["s0"].to_numpy() / div, seen["s1"].to_numpy() / div,
                                     lo, hi)
        _ticks(ax, t, s0, s1, OKABE_ITO["black"],
               f"data segments: lowest to highest byte per pixel column ({seen.height:,} segments)", "seg-envelope")
    if pk["has_fates"]:
        draw_packet_fates(ax, pk, div)
    elif fates is not None and data.height:
        # the highest byte sent by each time: a measurement, where the bins' losses are marked
        d = data.sort("t")
        drawn = d["t"].to_numpy(), np.maximum.accumulate(d["s1"].to_numpy())
        draw_fates(ax, fates, *drawn, div)
    return _finish(fig, ax, row, events, retx, truth, div, unit)


def _ticks(ax, t, s0, s1, color, label, gid, width: float = 0.6) -> None:
    """Vertical ticks from s0 to s1 at t (one path each in SVG, id ``gid``)."""
    if len(t) == 0:
        return
    segs = np.stack([np.stack([t, s0], axis=1), np.stack([t, s1], axis=1)], axis=1)
    ax.add_collection(LineCollection(segs, colors=color, linewidths=width, label=label, gid=gid, zorder=3))


def draw_fates(ax, fates: pl.DataFrame, t_line: np.ndarray, y_line: np.ndarray, div: float) -> None:
    """The matcher's losses: one mark per 1-s bin with data segments lost in the network, on
    the data line at the bin's middle, sized by the count (the tables keep counts per bin,
    not which segment; docs/plot.md)."""
    lost = fates.filter(pl.col("data_lost").fill_null(0) > 0).sort("bin")
    if lost.is_empty():
        return
    t = lost["t_rel"].to_numpy() + 0.5
    y = np.interp(t, t_line, y_line) / div
    n = lost["data_lost"].to_numpy()
    total, sent = int(n.sum()), int(fates["data_sent"].fill_null(0).sum())
    ax.scatter(t, y, s=8 + 6 * np.sqrt(n), marker="x", color=OKABE_ITO["vermillion"], linewidths=0.8, zorder=4,
               label=f"lost in the network (matcher): {total:,} of {sent:,} data packets, per 1-s bin",
               gid="matcher-lost")


def draw_packet_fates(ax, pk: dict, div: float) -> None:
    """The matcher's verdicts per packet (the packets table's ``fate``): a cross at (time, seq)
    for each data segment lost in the network, an open triangle at (time, ack) for each pure ACK
    lost (rows of the ACK sender's capture: on a matched row's graph the phone's, on the
    server clock, :func:`phone_lost_acks`). Every one is drawn, also as envelopes."""
    lost, ack_lost = pk["lost"], pk["ack_lost"]
    if lost.height:
        ax.scatter(lost["t"].to_numpy(), lost["s0"].to_numpy() / div, s=14, marker="x", color=OKABE_ITO["vermillion"],
                   linewidths=0.8, zorder=6, gid="fate-lost",
                   label=f"lost in the network (matcher): {lost.height:,} data segments, at (time, seq)")
    if ack_lost.height:
        ax.scatter(ack_lost["t"].to_numpy(), ack_lost["ack"].to_numpy() / div, s=12, marker="v", facecolors="none",
                   edgecolors=OKABE_ITO["orange"],
                   linewidths=0.7, zorder=5, gid="fate-ack-lost",
                   label=f"ACK lost in the network (matcher): {ack_lost.height:,}, at (time, ack)")
