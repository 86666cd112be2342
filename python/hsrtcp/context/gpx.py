"""GPX tracks (gpxpy): track points with time and position; speed from gpxpy when the file
has it (GPX 1.0 ``<speed>``, m/s), else derived from positions (:mod:`gps`). ``line`` is the
track point's 1-based number over the whole file (gpxpy does not keep XML line numbers), and
messages say so.
"""

from __future__ import annotations

import os
from datetime import timezone

import gpxpy
import gpxpy.gpx
import polars as pl

from hsrtcp.context.gps import derive_speed
from hsrtcp.context.schema import RadioLogError, conform


def looks_like_gpx(head: str) -> bool:
    return "<gpx" in head or (head.lstrip().startswith("<?xml") and "gpx" in head.lower())


def read_gpx(path: str | os.PathLike) -> pl.DataFrame:
    file = os.fspath(path)
    try:
        with open(file, encoding="utf-8") as fh:
            g = gpxpy.parse(fh)
    except gpxpy.gpx.GPXException as exc:
        raise RadioLogError(f"{file}: not a valid GPX file: {str(exc).splitlines()[0][:160]}") from None
    except UnicodeDecodeError as exc:
        raise RadioLogError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    rows = []
    n = 0
    for ti, track in enumerate(g.tracks, 1):
        for si, seg in enumerate(track.segments, 1):
            for p in seg.points:
                n += 1
                if p.time is None:
                    raise RadioLogError(f"{file}: track point {n} (track {ti}, segment {si}) has no <time>")
                t = p.time if p.time.tzinfo is not None else p.time.replace(tzinfo=timezone.utc)
                rows.append({"ts": t.timestamp(), "lat": p.latitude, "lon": p.longitude,
                             "speed_kmh": None if p.speed is None else p.speed * 3.6, "line": n})
    if not rows:
        raise RadioLogError(f"{file}: no track point in the file")
    df = pl.DataFrame(rows, schema={"ts": pl.Float64, "lat": pl.Float64, "lon": pl.Float64,
                                    "speed_kmh": pl.Float64, "line": pl.Int64})
    return derive_speed(conform(df.with_columns(pl.lit(os.path.basename(file)).alias("source"))))
