"""G-NetTrack Pro CSV logs (radio format ``gnettrack``): the Android drive-test app's export,
the format of the public Irish 5G dataset (Raca et al., MMSys 2020). No column map needed.

Columns read (others are kept out): ``Timestamp`` (``2019.12.14_10.16.30``, the phone's
local time, read as UTC like every time without a zone: bring it onto the capture clock
with ``--radio-offset``), ``Longitude``, ``Latitude``, ``Speed`` (km/h), ``Operatorname``
(the carrier), ``CellID`` / ``RAWCELLID`` (the serving cell; RAWCELLID, the full cell
identity, when the file has it), ``LACHEX`` (tracking area, hexadecimal), ``NetworkMode``,
``RSRP`` (dBm), ``RSRQ`` (dB); ``-`` is missing.

``NetworkMode`` gives the RAT and the generation: ``LTE`` is 4G; ``5G`` (the dataset's 5G,
non-stand-alone in Ireland 2019–2020) is 5G NSA on the LTE anchor cell the row names, so
the RAT stays LTE and ``RSRP``/``RSRQ`` are the anchor's (``NRxRSRP`` is the NR cell's);
``NR`` / ``5G SA`` is 5G SA; other names (``HSPA+``, ``EDGE`` …) keep their own generation.

The app writes about one row a second with whole-second times, and several rows can share
a second; their order in the file is the order of the samples. Rows of one second are
spread evenly over it (three rows at 10:16:30 are at .000, .333 and .667), so a cell change
inside a second stays a change and the times increase; the log's resolution stays 1 s.
"""

from __future__ import annotations

import math
import os

import numpy as np
import polars as pl

from hsrtcp.context.csvlog import iter_rows, strptime_column, to_identity, to_number
from hsrtcp.context.generation import generation_of
from hsrtcp.context.schema import RadioLogError, conform, empty_radio

TIME_FORMAT = "%Y.%m.%d_%H.%M.%S"
REQUIRED = ("Timestamp", "Longitude", "Latitude", "Speed", "Operatorname", "CellID", "NetworkMode",
            "RSRP", "RSRQ")
# NetworkMode -> (rat, generation); other modes keep their name and the generation of it
MODES = {"LTE": ("LTE", "4G"), "5G": ("LTE", "5G NSA"), "5G NSA": ("LTE", "5G NSA"),
         "NR NSA": ("LTE", "5G NSA"), "NR": ("NR", "5G SA"), "5G SA": ("NR", "5G SA"),
         "NR SA": ("NR", "5G SA")}


def looks_like_gnettrack(head: str) -> bool:
    """The first line is a G-NetTrack header (Timestamp, NetworkMode and CellID columns)."""
    first = head.lstrip("\ufeff").splitlines()[0] if head.strip() else ""
    cols = {c.strip() for c in first.split(",")}
    return {"Timestamp", "NetworkMode", "CellID", "Operatorname"} <= cols


def _text(rows: pl.DataFrame, col: str) -> pl.Series:
    return rows.select(pl.when(pl.col(col) != "-").then(pl.col(col))).to_series()  # "-": missing


def read_gnettrack(path: str | os.PathLike) -> pl.DataFrame:
    """The normalized radio frame of a G-NetTrack Pro CSV export; a missing column or a value
    that does not read is a :class:`RadioLogError` naming the file and the line. The file is
    read in blocks (:func:`hsrtcp.context.csvlog.iter_rows`)."""
    frames = list(_frames(path))
    if not frames:
        return empty_radio()
    return _spread(pl.concat(frames, rechunk=False), os.path.basename(os.fspath(path)))


def iter_gnettrack(path: str | os.PathLike):
    """:func:`read_gnettrack` block by block: normalized frames in file order, the same rows.
    The rows of a block's last second wait for the next block (they are spread over their
    second together); a second that comes back after later ones were given out (a clock set
    back) raises :class:`hsrtcp.context.stream.WholeOnly`: the caller reads the file whole."""
    from hsrtcp.context.stream import WholeOnly

    source = os.path.basename(os.fspath(path))
    held = None      # the rows of the latest second, not yet given out
    done = -math.inf  # the latest second given out
    for f in _frames(path):
        if f.is_empty():
            continue
        if f["_t"].min() <= done:
            raise WholeOnly(f"{os.fspath(path)}: a second comes back after later ones")
        cur = f if held is None else pl.concat([held, f], how="vertical")
        t = cur["_t"].to_numpy()
        cut = len(t) - int(np.argmin(t[::-1] == t[-1])) if (t != t[-1]).any() else 0  # the last second's run
        out, held = cur.slice(0, cut), cur.slice(cut)
        if (t[:cut] == t[-1]).any():  # the second also earlier in the block: spread over all of it
            raise WholeOnly(f"{os.fspath(path)}: a second comes back after later ones")
        if not out.is_empty():
            done = max(done, out["_t"].max())
            yield _spread(out, source)
    if held is not None:
        yield _spread(held, source)


def _spread(df: pl.DataFrame, source: str) -> pl.DataFrame:
    # rows sharing a second, spread over it in file order (all its rows are in ``df``: over
    # the whole file, or a second held back across a block's end)
    k = pl.int_range(pl.len()).over("_t")
    df = df.with_columns((pl.col("_t") + k / pl.len().over("_t")).alias("ts"),
                         pl.lit(source).alias("source"))
    return conform(df)


def _frames(path: str | os.PathLike):
    """The file's blocks as frames of the radio columns, ``_t`` (the whole second) for ``ts``."""
    file = os.fspath(path)
    chunks = iter_rows(file)
    header = next(chunks)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        chunks.close()
        raise RadioLogError(f"{file}:1: missing column(s) {', '.join(missing)}: not a G-NetTrack Pro "
                            f"export (it needs {', '.join(REQUIRED)})")
    cell_col = "RAWCELLID" if "RAWCELLID" in header else "CellID"
    for rows, lines in chunks:
        t = strptime_column(file, _text(rows, "Timestamp"), lines, TIME_FORMAT, "Timestamp")
        if t.is_null().any():
            raise RadioLogError(f"{file}:{lines[int(t.is_null().arg_max())]}: no Timestamp")
        cols: dict[str, pl.Series] = {
            "_t": t,
            "lon": to_number(file, _text(rows, "Longitude"), lines, "Longitude"),
            "lat": to_number(file, _text(rows, "Latitude"), lines, "Latitude"),
            "speed_kmh": to_number(file, _text(rows, "Speed"), lines, "Speed"),
            "carrier": _text(rows, "Operatorname"),
            "cid": to_identity(file, _text(rows, cell_col), lines, cell_col),
            "rsrp_dbm": to_number(file, _text(rows, "RSRP"), lines, "RSRP"),
            "rsrq_db": to_number(file, _text(rows, "RSRQ"), lines, "RSRQ"),
        }
        if "LACHEX" in header:
            lac = []
            for i, v in enumerate(_text(rows, "LACHEX").to_list()):
                try:
                    lac.append(None if v is None else int(v, 16))
                except ValueError:
                    raise RadioLogError(f"{file}:{lines[i]}: LACHEX {v!r} is not a hexadecimal area code") from None
            cols["lac"] = pl.Series(lac, dtype=pl.Int64)
        rats, gens = [], []
        for v in _text(rows, "NetworkMode").to_list():
            if v is None:
                rats.append(None)
                gens.append(None)
                continue
            rat, gen = MODES.get(" ".join(v.upper().split()), (v, generation_of(v)))
            rats.append(rat)
            gens.append(gen)
        cols["rat"] = pl.Series(rats, dtype=pl.String)
        cols["generation"] = pl.Series(gens, dtype=pl.String)
        yield pl.DataFrame(cols).with_columns(lines)
