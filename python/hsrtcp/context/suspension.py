"""Suspension per handoff on the phone capture (M24 with A12), from the engine's ``gap``
events (events.md: every silence ≥ 0.2 s between consecutive packets of the connection in
either direction, ``ts`` = last packet before, ``ts_end`` = first packet after, class
``stalled`` when data was outstanding, else ``idle``).

For a handoff at time h inside a phone-side flow (first_ts ≤ h ≤ last_ts), the suspension
is the gap that contains h (ts ≤ h ≤ ts_end); failing that, the latest gap that starts at
most :data:`BEFORE_S` before h (A12: the radio log may report a handoff after the link went
quiet) or the first gap that starts at most :data:`AFTER_S` after h; when both exist, the one
after h (the phone sees the break late; a gap that ended before h is taken only when no gap
starts after it). No such
gap: the silence around h was shorter than 200 ms, so ``suspension_s`` = 0 (A12) and the gap
columns are null. This is A12's 200 ms rule, not the engine's 2·SRTT ``suspension`` events.

The third case is an addition to A12's text, measured on lab bundles: the phone capture
sees the silence start one downlink one-way delay after the radio link breaks (packets that
had already crossed the radio link still arrive: 20 ms with the smoke scenario's base delay,
120 ms after its RTT spike), and field radio and capture clocks differ by tens of ms (seed
002). Without it, a suspension that plainly belongs to the handoff would count as 0 s.

``stalled`` (data outstanding): at the phone of a download every received byte is soon
acknowledged, so the phone-side gap is ``idle`` even while the server waits for ACKs. When
the phone flow is paired with a server-side flow (a ``--client``/``--server`` pair or a
bundle), the gap is also ``stalled`` when a ``stalled`` gap of the server-side flow overlaps
it; ``stalled_vantage`` says which capture showed the outstanding data (``client`` first).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.schemas import SUSPENSION_SCHEMA  # (defined there, below hsrtcp.results)

BEFORE_S = 1.0
AFTER_S = 0.5
GAP_MIN_S = 0.2


def suspensions(phone_flows: pl.DataFrame, handoffs: pl.DataFrame, gaps: pl.DataFrame | None,
                server_of: dict | None = None) -> pl.DataFrame:
    """One row per (handoff, phone-side flow) with the handoff inside the flow.

    ``phone_flows``: ``flow_id``, ``run_id``, ``carrier``, ``first_ts``, ``last_ts`` of the
    client-vantage flows; ``handoffs``: the handoffs table; ``gaps``: events of kind ``gap``
    (``flow_id``, ``ts``, ``ts_end``, ``class``), or None when the events carry no gap kind
    at all (an older engine): the rows then have a null ``suspension_s`` and a ``reason``.
    ``server_of``: phone flow_id -> the paired server-side flow_id (its gaps in ``gaps``)."""
    if phone_flows.is_empty() or handoffs.is_empty():
        return pl.DataFrame(schema=SUSPENSION_SCHEMA)
    hs = handoffs.select(pl.col("run_id"), "carrier", pl.col("ts").alias("handoff_ts"), "system", "ping_pong")
    pairs = (phone_flows.select("flow_id", "run_id", "carrier", "first_ts", "last_ts")
             .filter(pl.col("carrier").is_not_null())
             .join(hs, on=["run_id", "carrier"], how="inner", nulls_equal=True)
             .filter((pl.col("handoff_ts") >= pl.col("first_ts")) & (pl.col("handoff_ts") <= pl.col("last_ts")))
             .sort("flow_id", "handoff_ts"))
    if pairs.is_empty():
        return pl.DataFrame(schema=SUSPENSION_SCHEMA)
    if gaps is None:
        return pairs.with_columns(
            pl.lit(None, pl.Float64).alias("suspension_s"), pl.lit(None, pl.Float64).alias("gap_start_ts"),
            pl.lit(None, pl.Float64).alias("gap_end_ts"), pl.lit(None, pl.Boolean).alias("stalled"),
            pl.lit(None, pl.String).alias("stalled_vantage"),
            pl.lit("no gap events in events.parquet (engine without M24 gaps)").alias("reason"),
        ).select(list(SUSPENSION_SCHEMA))
    by_flow = {fid: (g["ts"].to_numpy(), g["ts_end"].to_numpy(), (g["class"] == "stalled").to_numpy())
               for (fid,), g in gaps.filter(pl.col("ts_end") - pl.col("ts") >= GAP_MIN_S)
               .sort("ts").group_by(["flow_id"])}
    out = []
    for r in pairs.iter_rows(named=True):
        h = r["handoff_ts"]
        g = by_flow.get(r["flow_id"])
        pick = None
        if g is not None:
            start, end, _ = g
            contain = np.nonzero((start <= h) & (end >= h))[0]
            if len(contain):
                pick = int(contain[-1])
            else:
                near = np.nonzero((start <= h) & (start >= h - BEFORE_S))[0]
                late = np.nonzero((start > h) & (start <= h + AFTER_S))[0]
                # both: the later one, whichever is nearer h. The phone sees the break one
                # one-way delay late (0.19 s after an RTT spike), so a gap that ended before h
                # is the handoff's only when nothing starts after it (audit, docs/accuracy.md:
                # a 0.21-s gap 0.03 s before h had been taken for a 3.2-s outage silence)
                if len(late):
                    pick = int(late[0])
                elif len(near):
                    pick = int(near[-1])
        row = {k: r[k] for k in ("flow_id", "run_id", "carrier", "handoff_ts", "system", "ping_pong")}
        if pick is None:
            row.update(suspension_s=0.0, gap_start_ts=None, gap_end_ts=None, stalled=None,
                       stalled_vantage=None, reason=None)
        else:
            s, e, st = g[0][pick], g[1][pick], g[2][pick]
            where = "client" if st else None
            peer = by_flow.get((server_of or {}).get(r["flow_id"]))
            if not st and peer is not None and (peer[2] & (peer[0] < e) & (peer[1] > s)).any():
                st, where = True, "server"
            row.update(suspension_s=float(e - s), gap_start_ts=float(s), gap_end_ts=float(e),
                       stalled=bool(st), stalled_vantage=where, reason=None)
        out.append(row)
    return pl.DataFrame(out, schema=SUSPENSION_SCHEMA)
