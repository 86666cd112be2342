"""The samples behind the pooled statistics, gathered per connection.

- 1-s throughput samples (M3, A3): the phone capture's ``series.bytes`` of the
  connection's phone-side row, as a rate over the bin's real length (``series.bin_s`` when
  the analysis writes it: the last bin of a flow is partial; 1 s otherwise, which
  understates the last bin's rate). A bin without received bytes is a 0 sample (M3:
  exponential back-off counts as zero). When only the server capture exists the bytes are
  the server's sent bytes (``throughput_vantage`` = server).
- Per-bin loss (M6) when the series carries it (a column of :data:`LOSS_COLUMNS`).
- Timeout recovery phases (M10): ``events`` of kind ``timeout_sequence`` of the connection's
  server-side row, class ``recovered`` (a phase cut by the end of the capture has no end).
- Suspensions (M24, A12): ``suspensions.suspension_s`` per handoff inside the flow.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.study.load import Results

#: series columns that may hold M6's per-bin loss rate of matched flows (none is written
#: by hsrtcp analyze yet: the study then reports M8's per-flow p_d only)
LOSS_COLUMNS = ("loss_rate", "p_loss", "data_loss_rate")


def _ids(conns: pl.DataFrame, row: str, dtype) -> pl.LazyFrame:
    return (conns.select("result", pl.col(row).cast(dtype).alias("flow_id"), pl.col("flow_id").alias("conn_id"))
            .drop_nulls().lazy())


def throughput(res: Results, conns: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """The pooled 1-s throughput samples: one row per connection and bin (``result``,
    ``flow_id`` = the connection, ``bin``, ``t_rel``, ``bin_s``, ``bytes``,
    ``throughput_bps``, ``loss_rate`` when the series has M6), and notes."""
    notes = []
    names = res.series.collect_schema().names()
    id_type = res.series.collect_schema()["flow_id"]
    if "bin_s" in names:
        bin_s = pl.col("bin_s").cast(pl.Float64)
    else:
        bin_s = pl.lit(1.0)
        notes.append("series without bin_s: every 1-s bin counts as 1 s, the last partial bin of a flow "
                     "included (its rate is understated)")
    loss_col = next((c for c in LOSS_COLUMNS if c in names), None)
    extra = [pl.col(loss_col).cast(pl.Float64).alias("loss_rate")] if loss_col else []
    samples = (res.series.select("result", "flow_id", "bin", "t_rel", "bytes", bin_s.alias("bin_s"), *extra)
               .join(_ids(conns, "series_row", id_type), on=["result", "flow_id"], how="inner")
               .drop("flow_id").rename({"conn_id": "flow_id"})
               .with_columns((pl.col("bytes").cast(pl.Float64) * 8.0 / pl.col("bin_s")).alias("throughput_bps"))
               .sort("result", "flow_id", "bin")
               .collect())
    if not loss_col:
        samples = samples.with_columns(pl.lit(None, dtype=pl.Float64).alias("loss_rate"))
        notes.append("series without a per-bin loss column: M6 (per-second loss) is not reported, "
                     "only M8's per-flow p_d of matched flows")
    return samples.select("result", "flow_id", "bin", "t_rel", "bin_s", "bytes", "throughput_bps", "loss_rate"), notes


def per_flow_throughput(samples: pl.DataFrame) -> pl.DataFrame:
    """Per connection: the sample list, bin counts and M3's per-flow mean (bytes over time)."""
    return samples.group_by("result", "flow_id").agg(
        pl.col("throughput_bps").alias("tput_samples"),
        pl.col("loss_rate").drop_nulls().alias("loss_samples"),
        pl.len().alias("tput_bins"),
        (pl.col("bytes") == 0).sum().alias("tput_zero_bins"),
        (pl.col("loss_rate") >= 1.0).sum().alias("loss_full_bins"),
        pl.col("loss_rate").is_not_null().sum().alias("loss_bins"),
        (pl.col("bytes").sum().cast(pl.Float64) * 8.0 / pl.col("bin_s").sum()).alias("throughput_mean_bps"),
    )


def timeout_phases(res: Results, conns: pl.DataFrame) -> pl.DataFrame:
    """Per connection: durations of its finished timeout recovery phases (M10)."""
    id_type = res.events.collect_schema()["flow_id"]
    return (res.events.filter((pl.col("kind") == "timeout_sequence") & (pl.col("class") == "recovered"))
            .select("result", "flow_id", "duration_s")
            .join(_ids(conns, "server_row", id_type), on=["result", "flow_id"], how="inner")
            .group_by("result", "conn_id").agg(pl.col("duration_s").drop_nulls().alias("timeout_phases_s"))
            .rename({"conn_id": "flow_id"}).collect())


def suspensions(res: Results, conns: pl.DataFrame) -> pl.DataFrame:
    """Per connection: its suspensions (M24) and how many had data outstanding. The
    suspensions table names the phone-side row; any row of the connection is accepted."""
    if res.suspensions is None:
        return pl.DataFrame(schema={"result": pl.String, "flow_id": conns.schema["flow_id"],
                                    "suspensions_s": pl.List(pl.Float64), "suspensions_stalled": pl.UInt32})
    sus = res.suspensions
    id_type = sus.schema["flow_id"]
    ids = pl.concat([_ids(conns, r, id_type) for r in ("flow_id", "client_row", "server_row")]).unique()
    stalled = pl.col("stalled") if "stalled" in sus.columns else pl.lit(None, pl.Boolean)
    return (sus.lazy().select("result", "flow_id", pl.col("suspension_s").cast(pl.Float64), stalled.alias("stalled"))
            .join(ids, on=["result", "flow_id"], how="inner")
            .group_by("result", "conn_id").agg(pl.col("suspension_s").alias("suspensions_s"),
                                               pl.col("stalled").sum().alias("suspensions_stalled"))
            .rename({"conn_id": "flow_id"}).collect())
