"""The normalized radio/GPS log every reader produces (docs/formats/radio.md, version 1).

One row per sample: ``ts`` (epoch seconds on the capture clock once the offset is applied),
position, speed, carrier, serving cell and LTE signal, the serving cell's channel number
(``arfcn``: EARFCN, NR-ARFCN …, where the log has it) and the network generation
(:mod:`hsrtcp.context.generation`); ``source`` (file name) and ``line``
(1-based line of the sample in its file, or the track-point number for GPX) let every
message name where a value came from. Missing is null.
"""

from __future__ import annotations

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.schemas import RADIO_SCHEMA  # (defined there, below hsrtcp.results)


# Plausible ranges (3GPP reporting ranges for RSRP/RSRQ); a value outside is a wrong unit
# or a corrupt field, reported with its line instead of silently skewing a class.
RANGES: dict[str, tuple[float, float, str]] = {
    "lat": (-90.0, 90.0, "degrees"),
    "lon": (-180.0, 180.0, "degrees"),
    "speed_kmh": (0.0, 1000.0, "km/h"),
    "rsrp_dbm": (-140.0, -44.0, "dBm"),
    "rsrq_db": (-34.0, 2.5, "dB"),  # 3GPP Rel-12 extended RSRQ range
}


def first_out_of_range(df: pl.DataFrame) -> tuple[int, str] | None:
    """(row, what is wrong) of the earliest row holding a value outside :data:`RANGES` (of
    that row's values, the first column in RANGES' order), or None; the caller puts the
    position in front."""
    first = None
    for col, (lo, hi, _) in RANGES.items():
        out = df[col].is_not_null() & ((df[col] < lo) | (df[col] > hi))
        if out.any():
            i = int(out.arg_max())
            if first is None or i < first[0]:
                first = (i, col)
    if first is None:
        return None
    i, col = first
    lo, hi, unit = RANGES[col]
    return i, f"{col} {df[col][i]:g} outside {lo:g} … {hi:g} {unit} (wrong unit?)"


class RadioLogError(InputError):
    """A radio/GPS log that cannot be used; the message names the file and the line.
    ``line``: that line (or packet), when the error is about one value; where several values
    are bad, the reader reports the earliest line (a user mends a log from the top)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def empty_radio() -> pl.DataFrame:
    return pl.DataFrame(schema=RADIO_SCHEMA)


def conform(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with exactly the radio columns (missing ones null), in order and typed; a
    generation the log does not give follows from the RAT (:func:`generation_of`)."""
    from hsrtcp.context.generation import generation_of

    cols = [pl.col(c).cast(t) if c in df.columns else pl.lit(None, dtype=t).alias(c)
            for c, t in RADIO_SCHEMA.items()]
    out = df.select(cols)
    rats = [r for r in out["rat"].unique().to_list() if r is not None]
    if rats:
        by_rat = pl.col("rat").replace_strict({r: generation_of(r) for r in rats}, default=None,
                                              return_dtype=pl.String)
        out = out.with_columns(pl.coalesce("generation", by_rat).alias("generation"))
    return out
