"""Speed from positions, for GPS tracks without a speed field (NMEA GGA-only, GPX).

Great-circle (haversine) distance between consecutive fixes over the time between them; the
speed of a fix is the speed of the leg that ends at it (the first fix takes the first leg's).
"""

from __future__ import annotations

import polars as pl

EARTH_RADIUS_M = 6_371_008.8  # mean Earth radius (IUGG)


def haversine_m(lat1: pl.Expr, lon1: pl.Expr, lat2: pl.Expr, lon2: pl.Expr) -> pl.Expr:
    """Great-circle distance in metres between two positions in degrees."""
    p1, p2 = lat1.radians(), lat2.radians()
    dp, dl = p2 - p1, (lon2 - lon1).radians()
    a = (dp / 2).sin() ** 2 + p1.cos() * p2.cos() * (dl / 2).sin() ** 2
    return 2 * EARTH_RADIUS_M * a.sqrt().arcsin()


def derive_speed(df: pl.DataFrame) -> pl.DataFrame:
    """Fill ``speed_kmh`` from positions where it is null (rows sorted by ``ts``; rows without
    a position keep a null speed)."""
    if df.is_empty() or df["speed_kmh"].is_not_null().all():
        return df
    pos = df.with_row_index("_i").filter(pl.col("lat").is_not_null() & pl.col("lon").is_not_null())
    leg = pos.with_columns(
        (haversine_m(pl.col("lat").shift(1), pl.col("lon").shift(1), pl.col("lat"), pl.col("lon"))
         / (pl.col("ts") - pl.col("ts").shift(1)) * 3.6).alias("_v"))
    leg = leg.with_columns(pl.col("_v").fill_null(pl.col("_v").shift(-1)))
    # zero time between two fixes (the readers reject that) would give inf: keep null instead
    leg = leg.with_columns(pl.when(pl.col("_v").is_finite()).then(pl.col("_v")).alias("_v"))
    out = df.with_row_index("_i").join(leg.select("_i", "_v"), on="_i", how="left")
    return out.with_columns(pl.coalesce("speed_kmh", "_v").alias("speed_kmh")).drop("_i", "_v")
