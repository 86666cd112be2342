"""Route length of a run from the GPS positions of its radio log (seed 000 Table II, seed 003
Table I, seed 004 Table I).

The length is the haversine sum over consecutive fixes of one run (``result``, ``run_id``),
on the mean Earth radius. A fix with no position is ignored; a time logged by several
carriers counts once (the first row). A fix whose jump from the last kept fix is faster than
the log's speed samples allow is a GPS glitch: it is skipped (the next leg starts from the
last kept fix) and counted; so are leading fixes that disagree with their successor.
"""

from __future__ import annotations

import numpy as np
import polars as pl

#: mean Earth radius (IUGG), km: 1 degree of a meridian is 111.19 km
EARTH_KM = 6371.0088
#: without speed samples, no jump may be faster than this (above any train in service)
CEILING_KMH = 600.0
#: the speed samples' top times this, plus POSITION_KM of position noise, is what a jump may cover
SPEED_MARGIN = 1.25
POSITION_KM = 0.05


def haversine_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    lat1, lon1, lat2, lon2 = (np.radians(np.asarray(x, dtype=float)) for x in (lat1, lon1, lat2, lon2))
    a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_KM * np.arcsin(np.sqrt(np.minimum(a, 1.0)))


def log_length(ts: np.ndarray, lat: np.ndarray, lon: np.ndarray, top_kmh: float | None) -> tuple[float, int]:
    """(km, glitches) of one run's fixes in time order."""
    limit = (top_kmh * SPEED_MARGIN if top_kmh is not None and top_kmh > 0 else CEILING_KMH) / 3600.0  # km/s
    if limit <= 0:
        limit = CEILING_KMH / 3600.0
    def too_far(a: int, b: int) -> tuple[bool, float]:
        d = float(haversine_km(lat[a], lon[a], lat[b], lon[b]))
        return d > limit * max(ts[b] - ts[a], 0.0) + POSITION_KM, d

    # the route starts at the first fix its successor agrees with: a glitch as the first fix
    # would otherwise make every later fix one
    last = 0
    while last + 1 < len(ts) and too_far(last, last + 1)[0]:
        last += 1
    km, glitches = 0.0, last
    for i in range(last + 1, len(ts)):
        far, d = too_far(last, i)
        if far:
            glitches += 1
            continue
        km += d
        last = i
    return km, glitches


def route_lengths(radio: pl.DataFrame) -> pl.DataFrame:
    """Per run of ``radio`` (columns result, run_id, ts, lat, lon; speed_kmh used when
    present): fixes, glitches skipped, km and the time the fixes span. Empty when no run
    has two fixes."""
    key = ["result", "run_id"]
    fixes = (radio.filter(pl.col("lat").is_finite() & pl.col("lon").is_finite() & pl.col("ts").is_finite())
             .sort([*key, "ts"], nulls_last=True, maintain_order=True).unique([*key, "ts"], keep="first", maintain_order=True))
    has_speed = "speed_kmh" in radio.columns
    rows = []
    for (result, run_id), log in fixes.group_by(key, maintain_order=True):
        if log.height < 2:
            continue
        top = None
        if has_speed:
            s = radio.filter((pl.col("result") == result) & (pl.col("run_id").eq_missing(run_id)))["speed_kmh"]
            s = s.filter(s.is_finite())
            top = float(s.max()) if s.len() else None
        ts = log["ts"].to_numpy()
        km, glitches = log_length(ts, log["lat"].to_numpy(), log["lon"].to_numpy(), top)
        rows.append({"result": result, "run_id": run_id, "fixes": log.height, "glitches": glitches,
                     "span_s": float(ts[-1] - ts[0]), "route_km": km})
    schema = {"result": pl.String, "run_id": pl.String, "fixes": pl.Int64, "glitches": pl.Int64,
              "span_s": pl.Float64, "route_km": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
