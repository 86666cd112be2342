"""Per-second receive rates of an instance's flows on a common clock (M5).

M5 (S4 §IV-A): bits downloaded from the server per second, here the bytes the client's
cumulative ACK newly covered (``series.goodput_bytes`` at the server vantage: data the client
received in order, duplicates excluded), put into 1-s bins counted from the instance start
t0 (the first SYN of its flows). A series bin is attributed to the instance second its start
falls in: the flows start within a few milliseconds of each other, so a bin straddles two
instance seconds by at most that much.
"""

from __future__ import annotations

import polars as pl


def instance_start(flows: pl.DataFrame) -> float:
    return float(flows["first_ts"].min())


def per_second(series: pl.DataFrame, flows: pl.DataFrame, t0: float, duration_s: float | None) -> pl.DataFrame:
    """``flow_id, t, rate_bps`` for t = 0 .. ceil(duration) - 1 (every second present, 0 when the
    flow received nothing in it); without a duration, up to the last bin of any flow."""
    s = series.filter(pl.col("flow_id").is_in(flows["flow_id"].implode())).select(
        "flow_id", t=(pl.col("ts") - t0).floor().cast(pl.Int64), bits=pl.col("goodput_bytes").cast(pl.Float64) * 8)
    last = int(-(-duration_s // 1)) if duration_s else (int(s["t"].max()) + 1 if s.height else 0)
    grid = flows.select("flow_id").join(pl.DataFrame({"t": list(range(last))}, schema={"t": pl.Int64}), how="cross")
    agg = s.filter((pl.col("t") >= 0) & (pl.col("t") < last)).group_by("flow_id", "t").agg(pl.col("bits").sum())
    return (grid.join(agg, on=["flow_id", "t"], how="left")
            .select("flow_id", "t", rate_bps=pl.col("bits").fill_null(0.0)).sort("flow_id", "t"))


def average_rate(flows: pl.DataFrame, duration_s: float | None) -> pl.DataFrame:
    """``flow_id, rate_bps``: M29's R / R' = payload bits received over the instance duration
    (S4: / 120 s); without a duration, over the flow's own duration."""
    bits = pl.col("goodput_bytes").cast(pl.Float64) * 8
    denom = pl.lit(float(duration_s)) if duration_s else pl.col("duration_s")
    return flows.select("flow_id", rate_bps=pl.when(denom > 0).then(bits / denom))
