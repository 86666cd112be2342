"""The outcomes of one run, from hsrtcp's analyzer: the study layer's connection rows.

Every bundle is analyzed on its own (``hsrtcp analyze BUNDLE -o RESULTS/<run_id>``: phone and
server captures, so each connection has a matched row) and :func:`hsrtcp.study.study` reads
them all; its ``study_flows`` frame has one row per TCP connection with the metric columns
named in docs/formats/study.md. A run of the mitigation campaign is one download, so one
connection; a run whose analysis has no connection gets null outcomes (and is left out of
its pairs).

The outcomes (:data:`OUTCOMES`; docs/metrics.md §1 numbers):

- ``goodput_bps``: in-order goodput (A3's in-order variant): the bytes the phone
  acknowledged (M20's ``acked_bytes``: the phone-side row's ACK advance) × 8 over the
  connection's duration (M2, the matched row: first to last packet at the server).
- ``spurious_rto_rate``: M13 (A5: retransmitted segments of spurious RTO episodes over all
  retransmitted segments; null without retransmissions).
- ``spurious_timeouts``: M12 judged from both captures (spurious RTO episodes per flow).
- ``spurious_ackl`` / ``spurious_rtoei``: M14's causes of those (ACK loss, RTO estimation).
- ``timeouts``: M10 timeout sequences per flow; ``timeout_recovery_s`` their mean duration
  (null without one).
- ``interrupted``: M20 (A11) as 0/1.
- ``dupack_rate``: M15; ``p_d``: M8, the data loss rate from the two captures.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class Outcome:
    name: str
    label: str        # for tables and axes
    better: str       # "higher" or "lower"
    effect: str       # "ratio" (paired geometric-mean ratio) or "diff" (paired mean difference)
    scale: float = 1.0  # display multiplier of a difference (100: shares in percentage points)
    unit: str = ""


OUTCOMES = (
    Outcome("goodput_bps", "goodput", "higher", "ratio", unit="%"),
    Outcome("spurious_timeouts", "spurious RTOs / flow (M12)", "lower", "diff"),
    Outcome("spurious_rto_rate", "spurious RTO rate (M13)", "lower", "diff", 100.0, "pp"),
    Outcome("timeouts", "RTO sequences / flow (M10)", "lower", "diff"),
    Outcome("timeout_recovery_s", "timeout recovery (M10)", "lower", "diff", 1.0, "s"),
    Outcome("interrupted", "interrupted (M20)", "lower", "diff", 100.0, "pp"),
    Outcome("dupack_rate", "DupACK rate (M15)", "lower", "diff", 100.0, "pp"),
    Outcome("p_d", "data loss p_d (M8)", "lower", "diff", 100.0, "pp"),
)
BY_NAME = {o.name: o for o in OUTCOMES}


def per_run(study_flows: pl.DataFrame) -> pl.DataFrame:
    """One row per results directory (``result``, the run) with the outcome columns and
    ``spurious_ackl`` / ``spurious_rtoei``. A run with several connections (not produced by
    the mitigation campaign) sums its counts and averages its rates over the connections."""
    f = study_flows

    def col(name: str) -> pl.Expr:
        return pl.col(name).cast(pl.Float64) if name in f.columns else pl.lit(None, dtype=pl.Float64)

    goodput = pl.when(col("duration_s") > 0).then(col("acked_bytes") * 8.0 / col("duration_s"))
    rows = f.select(
        "result",
        goodput.alias("goodput_bps"),
        col("spurious_rto_rate").alias("spurious_rto_rate"),
        col("spurious_2v").alias("spurious_timeouts"),
        col("spurious_ackl").alias("spurious_ackl"),
        col("spurious_rtoei").alias("spurious_rtoei"),
        col("timeout_sequences").alias("timeouts"),
        col("timeout_duration_mean_s").alias("timeout_recovery_s"),
        col("failed").alias("interrupted"),
        col("dupack_rate").alias("dupack_rate"),
        col("p_d").alias("p_d"),
    )
    counts = ("spurious_timeouts", "spurious_ackl", "spurious_rtoei", "timeouts")

    def agg(c: str) -> pl.Expr:
        # a sum of nulls is 0 in polars: a count nobody measured stays null
        total = pl.col(c).sum() if c in counts else pl.col(c).mean()
        return pl.when(pl.col(c).is_not_null().any()).then(total).alias(c)

    return rows.group_by("result").agg(
        pl.len().alias("connections"), *[agg(c) for c in rows.columns if c != "result"]).sort("result")
