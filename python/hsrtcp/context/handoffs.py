"""Handoffs: every serving-cell change of a carrier in the radio log (M23, M25).

A handoff is a sample whose serving cell (``rat``, ``lac``, ``cid``) differs from the
carrier's previous sample with a known cell (radio.md): its time is that sample's ``ts``.
Samples without a cell (``cid`` null: no service, or a GPS-only row) are skipped, so a phone
that loses service in cell A and comes back in cell B makes one handoff A → B, at the first
sample in B.

- ``system``: ``inter`` when the RAT changes (M25, e.g. LTE → EDGE at a coverage hole),
  ``intra`` otherwise.
- ``ping_pong``: the handoff returns to the cell the previous handoff left, at most
  :data:`PING_PONG_S` after it (A → B → A: the second is a ping-pong; in A → B → A → B the
  second and the third are). This is the lab generator's notion (scenario.md §3: back to the
  old cell 60–400 m later, i.e. ≤ 5 s at 300 km/h, ≤ 9 s at 160 km/h).
- ``interval_s``: time since the previous handoff of the same carrier (M23), null for the
  carrier's first handoff in the log.
"""

from __future__ import annotations

import polars as pl

PING_PONG_S = 10.0

HANDOFF_SCHEMA = {"run_id": pl.String, "carrier": pl.String, "ts": pl.Float64, "old_rat": pl.String,
                  "old_lac": pl.Int64, "old_cid": pl.Int64, "new_rat": pl.String, "new_lac": pl.Int64,
                  "new_cid": pl.Int64, "system": pl.String, "ping_pong": pl.Boolean,
                  "interval_s": pl.Float64, "source": pl.String, "line": pl.Int64}


def handoffs(radio: pl.DataFrame) -> pl.DataFrame:
    """One row per serving-cell change (columns: :data:`HANDOFF_SCHEMA`, docs/formats/handoffs.md).

    ``radio``: normalized rows in time order per carrier; an optional ``run_id`` column keeps
    the logs of several runs apart."""
    df = radio if "run_id" in radio.columns else radio.with_columns(pl.lit(None, pl.String).alias("run_id"))
    df = df.filter(pl.col("cid").is_not_null() & pl.col("carrier").is_not_null())
    if df.is_empty():
        return pl.DataFrame(schema=HANDOFF_SCHEMA)
    g = [pl.col("run_id").fill_null(""), "carrier"]
    df = df.sort(*g, "ts", maintain_order=True)
    prev = {c: pl.col(c).shift(1).over(g) for c in ("rat", "lac", "cid")}
    df = df.with_columns(*(prev[c].alias(f"old_{c}") for c in prev), pl.col("line").alias("_line"))
    changed = pl.col("old_cid").is_not_null() & (
        pl.col("rat").ne_missing(pl.col("old_rat")) | pl.col("lac").ne_missing(pl.col("old_lac"))
        | pl.col("cid").ne_missing(pl.col("old_cid")))
    h = df.filter(changed).rename({"rat": "new_rat", "lac": "new_lac", "cid": "new_cid"})
    back = (pl.col("new_rat").eq_missing(pl.col("old_rat").shift(1).over(g))
            & pl.col("new_lac").eq_missing(pl.col("old_lac").shift(1).over(g))
            & pl.col("new_cid").eq_missing(pl.col("old_cid").shift(1).over(g)))
    interval = pl.col("ts") - pl.col("ts").shift(1).over(g)
    h = h.with_columns(
        pl.when(pl.col("new_rat").ne_missing(pl.col("old_rat"))).then(pl.lit("inter")).otherwise(pl.lit("intra"))
        .alias("system"),
        interval.alias("interval_s"),
    ).with_columns((back & (pl.col("interval_s") <= PING_PONG_S)).fill_null(False).alias("ping_pong"))
    return h.select([pl.col(c).cast(t) if c != "line" else pl.col("_line").alias("line")
                     for c, t in HANDOFF_SCHEMA.items()])
