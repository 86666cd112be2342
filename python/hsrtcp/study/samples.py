"""The samples behind the pooled statistics, gathered per connection.

- 1-s throughput samples (M3, A3): the phone capture's ``series.bytes`` of the
  connection's phone-side row, as a rate over the bin's real length (``series.bin_s`` when
  the analysis writes it: the last bin of a flow is partial; 1 s otherwise, which
  understates the last bin's rate). A bin without received bytes is a 0 sample (M3:
  exponential back-off counts as zero). When only the server capture exists the bytes are
  the server's sent bytes (``throughput_vantage`` = server).
- Per-bin loss (M6): the series' ``loss_rate`` of the connection's *matched* row (both
  captures: a server transmission never seen by the phone is lost). Its bins count from the
  server's first packet, the phone row's from the phone's, one one-way delay later, so in
  ``throughput_samples`` bin k's loss sits beside bin k's throughput up to that offset; the
  pooled M6 statistics use every matched bin with a transmission.
- Timeout recovery phases (M10): ``events`` of kind ``timeout_sequence`` of the connection's
  server-side row, class ``recovered`` (a phase cut by the end of the capture has no end).
- Suspensions (M24, A12): ``suspensions.suspension_s`` per handoff inside the flow.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.schemas import SERIES_BIN_S
from hsrtcp.study.load import Results, join

#: series columns that may hold M6's per-bin loss rate of matched flows (hsrtcp analyze
#: writes ``loss_rate``; the others are accepted from results of other tools)
LOSS_COLUMNS = ("loss_rate", "p_loss", "data_loss_rate")
#: the columns of a flow's 1-s samples beside its key (the study's throughput_samples table)
SAMPLE_COLUMNS = ("bin", "t_rel", "bin_s", "bytes", "throughput_bps", "loss_rate")
#: the per-flow values this module adds to the study frame (the lists are left out of study_flows)
LIST_COLUMNS = ("tput_samples", "loss_samples", "timeout_phases_s", "suspensions_s")
FLOW_COLUMNS = (*LIST_COLUMNS, "tput_bins", "tput_zero_bins", "throughput_mean_bps", "loss_bins",
                "loss_full_bins", "suspensions_stalled")


def _ids(conns: pl.DataFrame, row: str, dtype) -> pl.LazyFrame:
    return (conns.select("result", pl.col(row).cast(dtype).alias("flow_id"), pl.col("flow_id").alias("conn_id"))
            .drop_nulls().lazy())


def throughput(res: Results, conns: pl.DataFrame, loss: pl.DataFrame | None = None) -> tuple[pl.DataFrame, list[str]]:
    """The pooled 1-s throughput samples: one row per connection and bin (``result``,
    ``flow_id`` = the connection, ``bin``, ``t_rel``, ``bin_s``, ``bytes``,
    ``throughput_bps``, ``loss_rate``: M6 from ``loss``, :func:`loss_samples`), and notes."""
    notes = []
    names = res.series.collect_schema().names()
    id_type = res.series.collect_schema()["flow_id"]
    if "bin_s" in names:
        bin_s = pl.col("bin_s").cast(pl.Float64)
    else:
        bin_s = pl.lit(SERIES_BIN_S)
        notes.append("series without bin_s: every 1-s bin counts as 1 s, the last partial bin of a flow "
                     "included (its rate is understated)")
    samples = (res.series.select("result", "flow_id", "bin", "t_rel", "bytes", bin_s.alias("bin_s"))
               .join(_ids(conns, "series_row", id_type), on=["result", "flow_id"], how="inner")
               .drop("flow_id").rename({"conn_id": "flow_id"})
               .with_columns((pl.col("bytes").cast(pl.Float64) * 8.0 / pl.col("bin_s")).alias("throughput_bps"))
               .sort("result", "flow_id", "bin")
               .collect())
    if loss is None:
        samples = samples.with_columns(pl.lit(None, dtype=pl.Float64).alias("loss_rate"))
        notes.append("series without a per-bin loss column: M6 (per-second loss) is not reported, "
                     "only M8's per-flow p_d of matched flows")
    else:
        samples = join(samples, loss, ["result", "flow_id", "bin"], "left", res.one_result)
    return samples.select("result", "flow_id", *SAMPLE_COLUMNS), notes


def loss_samples(res: Results, conns: pl.DataFrame) -> pl.DataFrame | None:
    """M6 per connection and bin: ``result``, ``flow_id`` (the connection), ``bin``,
    ``loss_rate``, from the series of the matched rows (bins without a transmission have no
    value and are left out). None when the series has no loss column."""
    schema = res.series.collect_schema()
    loss_col = next((c for c in LOSS_COLUMNS if c in schema.names()), None)
    if loss_col is None:
        return None
    matched = conns.filter(pl.col("row_vantage") == "matched")
    return (res.series.select("result", "flow_id", "bin", pl.col(loss_col).cast(pl.Float64).alias("loss_rate"))
            .drop_nulls("loss_rate")
            .join(_ids(matched, "flow_id", schema["flow_id"]), on=["result", "flow_id"], how="inner")
            .drop("flow_id").rename({"conn_id": "flow_id"})
            .collect())


def per_flow_throughput(samples: pl.DataFrame, loss: pl.DataFrame | None = None, one_result: bool = False,
                        ) -> pl.DataFrame:
    """Per connection: the sample lists, bin counts and M3's per-flow mean (bytes over time);
    the M6 columns from ``loss`` (:func:`loss_samples`; null without it)."""
    tput = samples.group_by("result", "flow_id").agg(
        pl.col("throughput_bps").alias("tput_samples"),
        pl.len().alias("tput_bins"),
        (pl.col("bytes") == 0).sum().alias("tput_zero_bins"),
        (pl.col("bytes").sum().cast(pl.Float64) * 8.0 / pl.col("bin_s").sum()).alias("throughput_mean_bps"),
    )
    if loss is None:
        loss = pl.DataFrame(schema={"result": samples.schema["result"], "flow_id": samples.schema["flow_id"],
                                    "loss_rate": pl.Float64})
    per_loss = loss.group_by("result", "flow_id").agg(
        pl.col("loss_rate").alias("loss_samples"),
        (pl.col("loss_rate") >= 1.0).sum().alias("loss_full_bins"),
        pl.len().alias("loss_bins"),
    )
    return join(tput, per_loss, ["result", "flow_id"], "left", one_result)


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
    plan = (sus.lazy().select("result", "flow_id", pl.col("suspension_s").cast(pl.Float64), stalled.alias("stalled"))
            .join(ids, on=["result", "flow_id"], how="inner")
            .group_by("result", "conn_id").agg(pl.col("suspension_s").alias("suspensions_s"),
                                               pl.col("stalled").sum().alias("suspensions_stalled"))
            .rename({"conn_id": "flow_id"}))
    if sus.is_empty():  # no handoff during a flow (a standing trip): the plan's empty result, not
        return pl.DataFrame(schema=plan.collect_schema())  # its unique of every connection's ids
    return plan.collect()
