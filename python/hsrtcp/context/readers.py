"""Reading a radio/GPS log of any supported format into the normalized frame
(:mod:`hsrtcp.context.schema`), on the capture clock, checked.

Formats: ``lab`` (radio.csv, docs/formats/radio.md), ``csv`` (generic CSV with a column
mapping, :mod:`csvlog`), ``nmea`` (:mod:`nmea`), ``gpx`` (:mod:`gpx`), ``gnettrack``
(G-NetTrack Pro CSV, :mod:`gnettrack`), ``gsmtap`` (3GPP RRC signalling in a pcap,
:mod:`gsmtap`: it also gives the handoffs with their 3GPP types, :attr:`RadioLog.handoffs`);
``auto`` looks at the file's first bytes. Checks (:func:`check`): a time on every row, times strictly
increasing per carrier (a duplicate or backwards time is an error naming both lines),
values in plausible ranges (a wrong unit shows up here); holes longer than
:data:`GAP_S` are not errors but warnings naming the line after the hole — the flows they
touch get class ``unknown`` with the reason (not for GSMTAP: signalling is sent on events, so
its silences are no holes in the log; the flows across one are ``unknown`` all the same).
A GSMTAP capture's messages are put in time order first (:mod:`reorder`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import polars as pl

from hsrtcp.context.options import FORMATS, check_offset
from hsrtcp.context.schema import RadioLogError, first_out_of_range

# Longest time between two samples of a carrier that still counts as covered (s). Logs are
# 1 Hz (radio.md); a field log may skip a sample or two, not five in a row.
GAP_S = 5.0


@dataclass
class RadioLog:
    """A checked radio log: ``frame`` (radio columns, file order), the warnings (gaps)."""

    path: str
    format: str
    frame: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    #: handoffs the log states itself (RRC signalling: types, targets, execution times),
    #: in the columns of the handoffs table; None: derived from the frame's cell changes
    handoffs: pl.DataFrame | None = None

    @property
    def carriers(self) -> list[str]:
        """Carriers in order of first appearance (the lab's path order, bundle.md)."""
        return [c for c in self.frame["carrier"].unique(maintain_order=True).to_list() if c is not None]


def detect_format(path: str | os.PathLike, mapping: dict | None = None) -> str:
    from hsrtcp.context.gpx import looks_like_gpx
    from hsrtcp.context.nmea import looks_like_nmea

    from hsrtcp.context.gnettrack import looks_like_gnettrack
    from hsrtcp.context.gsmtap import looks_like_pcap

    try:
        with open(path, "rb") as fh:
            raw = fh.read(4096)
    except OSError as exc:
        raise RadioLogError(f"{os.fspath(path)}: {exc.strerror}") from exc
    if looks_like_pcap(raw):
        return "gsmtap"
    head = raw.decode("utf-8", errors="replace")
    if looks_like_gpx(head):
        return "gpx"
    if looks_like_nmea(head):
        return "nmea"
    if mapping:
        return "csv"
    if looks_like_gnettrack(head):
        return "gnettrack"
    first = [h.strip() for h in head.splitlines()[0].split(",")] if head.strip() else []
    return "lab" if {"ts", "carrier", "cid"} <= set(first) else "csv"


def resolve(path: str | os.PathLike, fmt: str = "auto", mapping: dict | None = None) -> tuple[str, str]:
    """(file, format) of a radio log, the format detected when ``auto``; RadioLogError for a
    missing file or a mapping given to another format, ValueError for an unknown format."""
    file = os.fspath(path)
    if fmt not in FORMATS:
        raise ValueError(f"radio format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if not os.path.exists(file):
        raise RadioLogError(f"{file}: no such file")
    if os.path.isdir(file):
        raise RadioLogError(f"{file}: is a directory, not a radio log")
    if fmt == "auto":
        fmt = detect_format(file, mapping)
    if mapping and fmt != "csv":
        raise RadioLogError(f"{file}: a column mapping (--radio-map, radio_map) is for a generic CSV log; "
                            f"this one is {fmt}")
    return file, fmt


def read_radio(path: str | os.PathLike, fmt: str = "auto", mapping: dict | None = None,
               t0: float | None = None, offset_s: float = 0.0) -> RadioLog:
    """Read, normalize and check a radio/GPS log.

    ``t0``: epoch seconds of time 0 of a lab bundle's radio.csv (manifest ``t0``);
    ``offset_s``: added to every time to bring the log onto the capture clock
    (``--radio-offset``; capture time = log time + offset; finite). Raises
    :class:`RadioLogError` for the log, ValueError for a bad ``fmt`` or ``offset_s``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"radio format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    offset_s = check_offset(offset_s)
    file, fmt = resolve(path, fmt, mapping)
    if fmt == "lab":
        from hsrtcp.context.csvlog import read_lab

        df = read_lab(file, t0)
    elif fmt == "csv":
        from hsrtcp.context.csvlog import read_generic

        df = read_generic(file, mapping or {})
    elif fmt == "nmea":
        from hsrtcp.context.nmea import read_nmea

        df = read_nmea(file)
    elif fmt == "gnettrack":
        from hsrtcp.context.gnettrack import read_gnettrack

        df = read_gnettrack(file)
    elif fmt == "gsmtap":
        from hsrtcp.context.gsmtap import read_gsmtap

        sig = read_gsmtap(file)
        df, own, skipped = sig.frame, sig.handoffs, sig.problems()
        if df.is_empty():
            raise RadioLogError(f"{file}: no LTE or NR RRC message in GSMTAP (UDP port 4729) "
                                f"({sig.summary()})")
        # (signalling is event-driven: a silence is no hole in the log, docs/context.md; a
        # flow across one is still unknown, "cell log gap")
        warnings = check(file, df, at="packet", gaps=False) + skipped
        if offset_s:
            df = df.with_columns(pl.col("ts") + float(offset_s))
            own = own.with_columns(pl.col("ts") + float(offset_s))
        return RadioLog(file, fmt, df, warnings, own)
    else:
        from hsrtcp.context.gpx import read_gpx

        df = read_gpx(file)
    if df.is_empty():
        raise RadioLogError(f"{file}: no samples (only a header?)")
    warnings = check(file, df)
    if offset_s:
        df = df.with_columns(pl.col("ts") + float(offset_s))
    return RadioLog(file, fmt, df, warnings)


def check(file: str, df: pl.DataFrame, at: str | None = None, gaps: bool = True) -> list[str]:
    """Raise :class:`RadioLogError` for unusable rows; return warnings for holes (unless not
    ``gaps``). ``at``: what ``line`` counts when it is not a line (``packet`` of a pcap; GPX:
    ``track point``)."""
    if at is None:
        at = "track point" if df["source"][0].lower().endswith(".gpx") else None

    def pos(line: int) -> str:
        return f"{file}: {at} {line}" if at else f"{file}:{line}"

    nulls = df["ts"].is_null()
    if nulls.any():
        raise RadioLogError(f"{pos(df['line'][int(nulls.arg_max())])}: no time")
    k = pl.col("carrier").fill_null("")
    # only the columns the checks read: a long log is not copied whole
    d = df.select("ts", "line", "carrier").with_columns(pl.col("ts").shift(1).over(k).alias("_prev_ts"),
                                                        pl.col("line").shift(1).over(k).alias("_prev_line"))
    bad = d.filter(pl.col("ts") <= pl.col("_prev_ts")).head(1)
    if not bad.is_empty():
        r = bad.row(0, named=True)
        who = f" for carrier {r['carrier']}" if r["carrier"] is not None else ""
        what = "duplicate time" if r["ts"] == r["_prev_ts"] else "time goes backwards"
        raise RadioLogError(f"{pos(r['line'])}: {what}{who}: {r['ts']:.3f} after {r['_prev_ts']:.3f} "
                            f"({at or 'line'} {r['_prev_line']}); times must increase per carrier")
    bad = first_out_of_range(df)
    if bad is not None:
        i, what = bad
        raise RadioLogError(f"{pos(df['line'][i])}: {what}", line=df["line"][i])
    warnings = []
    if not gaps:
        return warnings
    holes = d.filter(pl.col("ts") - pl.col("_prev_ts") > GAP_S)
    for r in holes.head(20).iter_rows(named=True):
        who = f" of carrier {r['carrier']}" if r["carrier"] is not None else ""
        warnings.append(f"{pos(r['line'])}: no sample{who} for {r['ts'] - r['_prev_ts']:.1f} s before "
                        f"this {'packet' if at == 'packet' else 'line'} (gap > {GAP_S:g} s): flows across it "
                        f"get class unknown")
    if len(holes) > 20:
        warnings.append(f"{file}: {len(holes) - 20} more gaps > {GAP_S:g} s")
    return warnings
