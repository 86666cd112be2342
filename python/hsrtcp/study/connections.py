"""One study row per TCP connection, with the row of each vantage it is measured from.

A two-vantage analysis writes three flows rows per connection (docs/formats/matched.md):
the phone-side (``client``) row, the server-side row and the ``matched`` row, which carries
the server row's columns plus the two-capture ones (p_d, q, the M14 causes, the A9
establishment time). The study counts a connection once:

- the ``matched`` row when there is one; its ``client_flow_id`` / ``server_flow_id`` name
  the single-capture rows (the phone row's series is M3's "bytes received by the phone",
  its ACK number is M20's "the phone has acknowledged");
- otherwise each single-capture row not referenced by a matched row (one capture analyzed
  alone): the row is the phone side when its vantage (given, else ``capture_near``) is the
  client, the server side when it is the server.

The metric columns each table reads are collected here under the study's names
(docs/formats/study.md, ``study_flows``), each from the row that holds it.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.study.load import join

#: study column <- flows column of the connection row (matched row, or the single row)
METRICS_FROM_ROW = {
    "rtt_mean_s": "rtt_mean",                   # M7 (server vantage: Karn ACK matching)
    "p_d": "p_d",                               # M8, two-vantage only
    "spurious_rto_rate": "spurious_rto_rate",   # M13 (A5: segments)
    "spurious_timeout_share": "spurious_timeout_share",  # A5 event-based variant
    "spurious_ackl": "spurious_timeouts_ack_loss",       # M14 ACKL, two-vantage only
    "spurious_rtoei": "spurious_timeouts_rto_estimation",  # M14 RTOEI, two-vantage only
    "spurious_2v": "spurious_timeouts_2v",      # M12 from both captures (timeout sequences)
    "rto_sequences": "rto_sequences",           # M10 sequences the matcher judged
    "dupack_rate": "dupack_rate",               # M15
    "closure_s": "closure_s",                   # M19 (A10: server capture)
    "timeout_sequences": "timeout_sequences",   # M10 count
    "timeout_duration_mean_s": "timeout_duration_mean",  # M10 per-flow mean
    "q": "q",                                   # M11, two-vantage (A17)
    "q_estimate": "q_estimate",                 # M11, single-capture estimate
    "interrupted": "interrupted",               # M20 as the engine decides it (A11)
    "duration_s": "duration_s",                 # M2
    "first_ts": "first_ts",
    "last_ts": "last_ts",
}


#: every flows column :func:`connections` reads (when present): the projection of a streamed
#: study's read (the flows table has about 150 columns)
COLUMNS_READ = ("flow_id", "vantage", "capture", "capture_near", "client_flow_id", "server_flow_id",
                "goodput_bytes", "establishment_s", "establishment_time_s", *METRICS_FROM_ROW.values())


def connections(flows: pl.DataFrame, one_result: bool = False) -> pl.DataFrame:
    """The connection rows of ``flows`` (stacked results, with a ``result`` column).

    Columns: ``result``, ``flow_id`` (the connection row), ``row_vantage`` (matched, client,
    server or null), ``client_row`` / ``server_row`` (flow_id of the single-capture rows, or
    null), ``series_row`` (the row whose series is the phone's received bytes, else the
    server's sent bytes), ``throughput_vantage`` (client or server), then the metric
    columns of :data:`METRICS_FROM_ROW`, ``establishment_s`` (M18: the two-vantage
    establishment time when the capture pair has it, A9; else the single capture's) and
    ``acked_bytes`` (M20: bytes the phone acknowledged, from the phone row when there is one).
    """
    cols = flows.columns

    def col(name: str, dtype=pl.Float64) -> pl.Expr:
        return pl.col(name) if name in cols else pl.lit(None, dtype=dtype)

    vantage = pl.col("vantage")
    near = col("capture_near", pl.String)
    side = (pl.when(vantage.is_in(["client", "server"])).then(vantage).otherwise(near))
    is_matched = vantage == "matched"
    matched = flows.filter(is_matched.fill_null(False))
    singles = flows.filter(~is_matched.fill_null(False))
    if matched.height and "client_flow_id" in cols:
        referenced = pl.concat([
            matched.select("result", pl.col("client_flow_id").alias("flow_id")),
            matched.select("result", pl.col("server_flow_id").alias("flow_id")),
        ]).drop_nulls()
        singles = join(singles, referenced, ["result", "flow_id"], "anti", one_result)
    id_type = flows.schema["flow_id"]
    matched = matched.with_columns(
        pl.lit("matched").alias("row_vantage"),
        col("client_flow_id", id_type).cast(id_type).alias("client_row"),
        col("server_flow_id", id_type).cast(id_type).alias("server_row"),
    )
    singles = singles.with_columns(side.alias("row_vantage")).with_columns(
        pl.when(pl.col("row_vantage") == "client").then(pl.col("flow_id")).alias("client_row"),
        pl.when(pl.col("row_vantage") == "server").then(pl.col("flow_id")).alias("server_row"),
    )
    rows = pl.concat([matched, singles], how="diagonal_relaxed")
    rows = rows.with_columns(
        pl.coalesce("client_row", pl.when(pl.col("row_vantage") != "matched").then(pl.col("flow_id")),
                    "server_row").alias("series_row"),
        pl.when(pl.col("client_row").is_not_null()).then(pl.lit("client"))
        .otherwise(pl.lit("server")).alias("throughput_vantage"),
    )
    # M20: what the phone acknowledged is the phone row's ACK advance (goodput_bytes there)
    phone = flows.select("result", pl.col("flow_id").alias("client_row"),
                         pl.col("goodput_bytes").alias("_phone_acked"))
    rows = join(rows, phone, ["result", "client_row"], "left", one_result)
    rows_cols = rows.columns
    metric_exprs = [(pl.col(src) if src in rows_cols else pl.lit(None, dtype=pl.Float64)).alias(dst)
                    for dst, src in METRICS_FROM_ROW.items()]
    two_vantage_est = pl.col("establishment_time_s") if "establishment_time_s" in rows_cols else pl.lit(None, pl.Float64)
    out = rows.select(
        "result", "flow_id", "row_vantage", "client_row", "server_row", "series_row", "throughput_vantage",
        "capture", *metric_exprs,
        pl.coalesce(two_vantage_est, pl.col("establishment_s")).alias("establishment_s"),
        pl.coalesce("_phone_acked", "goodput_bytes").alias("acked_bytes"),
    )
    return out.sort("result", "flow_id")
