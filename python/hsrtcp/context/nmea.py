"""NMEA 0183 GPS logs (pynmea2): RMC sentences give date, time, position and speed over
ground; GGA sentences give time and position (the date comes from the last RMC or ZDA before
them). Speed is derived from positions when no RMC speed is present (:mod:`gps`). An RMC
and a GGA of the same time are one fix; any other repeated time is left for
:func:`hsrtcp.context.readers.check` to reject, as in a CSV or GPX log.

Sentences other than RMC, GGA and ZDA are skipped; a line that is not a valid sentence (bad
checksum, cut) is an error naming the line: a GPS log is a measurement, and a corrupt line
usually means a corrupt file rather than one lost fix.
"""

from __future__ import annotations

import os
from datetime import date, datetime, timezone

import polars as pl
import pynmea2

from hsrtcp.context.csvlog import MAX_LINE_BYTES
from hsrtcp.context.gps import derive_speed
from hsrtcp.context.schema import RadioLogError, conform

KNOT_KMH = 1.852


def looks_like_nmea(head: str) -> bool:
    return head.lstrip().startswith("$") and "," in head


def read_nmea(path: str | os.PathLike) -> pl.DataFrame:
    file = os.fspath(path)
    name = os.path.basename(file)
    rows: list[dict] = []
    day: date | None = None
    # Bytes, decoded line by line: a text stream decodes whole chunks, so its error would
    # not say which line is not ASCII.
    try:
        fh = open(file, "rb")
    except OSError as exc:
        raise RadioLogError(f"{file}: {exc.strerror}") from exc
    with fh:
        n = 0
        # lines read within a bound (a sentence is at most 82 characters): a file that is one
        # long line is an error at its first MiB, not a MemoryError
        while raw := fh.readline(MAX_LINE_BYTES + 2):
            n += 1
            if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                raise RadioLogError(f"{file}:{n}: line longer than {MAX_LINE_BYTES} bytes: not an NMEA log?")
            try:
                text = raw.decode("ascii").strip()
            except UnicodeDecodeError:
                raise RadioLogError(f"{file}:{n}: not ASCII text: not an NMEA log?") from None
            if not text:
                continue
            try:
                msg = pynmea2.parse(text, check=True)
            except (pynmea2.ParseError, ValueError, AttributeError, TypeError) as exc:
                raise RadioLogError(f"{file}:{n}: not a valid NMEA sentence ({exc.__class__.__name__}: "
                                    f"{str(exc).split(',')[0][:80]})") from None
            kind = getattr(msg, "sentence_type", "")
            try:
                if kind == "ZDA" and msg.day and msg.month and msg.year:
                    day = date(int(msg.year), int(msg.month), int(msg.day))
                elif kind == "RMC":
                    if msg.datestamp is not None:
                        day = msg.datestamp
                    if msg.status != "A" or msg.timestamp is None or day is None:
                        continue  # no fix
                    ts = datetime.combine(day, msg.timestamp).replace(tzinfo=timezone.utc).timestamp()
                    spd = msg.spd_over_grnd
                    rows.append({"ts": ts, "lat": msg.latitude, "lon": msg.longitude,
                                 "speed_kmh": None if spd is None else float(spd) * KNOT_KMH, "line": n,
                                 "kind": "RMC"})
                elif kind == "GGA":
                    if not msg.gps_qual or msg.timestamp is None:
                        continue  # no fix
                    if day is None:
                        raise RadioLogError(f"{file}:{n}: GGA fix before any date (the log needs an "
                                            f"RMC or ZDA sentence first)")
                    ts = datetime.combine(day, msg.timestamp).replace(tzinfo=timezone.utc).timestamp()
                    rows.append({"ts": ts, "lat": msg.latitude, "lon": msg.longitude,
                                 "speed_kmh": None, "line": n, "kind": "GGA"})
            except (ValueError, TypeError) as exc:
                raise RadioLogError(f"{file}:{n}: {kind} sentence with an invalid field ({exc})") from None
    if not rows:
        raise RadioLogError(f"{file}: no RMC or GGA fix in the file")
    df = pl.DataFrame(rows, schema={"ts": pl.Float64, "lat": pl.Float64, "lon": pl.Float64,
                                    "speed_kmh": pl.Float64, "line": pl.Int64, "kind": pl.String})
    # An RMC and a GGA of the same time describe one fix: the RMC stays (it has the speed).
    # Only one GGA per RMC goes: a time given twice by one kind of sentence (a log
    # concatenated with itself) stays twice, and the checks reject it naming both lines.
    nth = pl.col("line").rank("ordinal").over("ts", "kind")
    rmc = df.filter(pl.col("kind") == "RMC").select("ts", nth.alias("_n"))
    df = df.with_columns(nth.alias("_n")).join(rmc.with_columns(pl.lit(True).alias("_rmc")), on=["ts", "_n"],
                                               how="left")
    df = df.filter((pl.col("kind") == "RMC") | pl.col("_rmc").is_null()).drop("kind", "_n", "_rmc")
    df = df.sort("line")
    return derive_speed(conform(df.with_columns(pl.lit(name).alias("source"))))
