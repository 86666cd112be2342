"""One human format for numbers and units in everything people read (issue 31).

The flow summary of `hsrtcp analyze`, the study summary, the report's static tables and
matplotlib figures format through here; the report's script (report/static/report.js)
carries the same rules in JavaScript. The rules: rates in bit/s, kbit/s, Mbit/s or Gbit/s;
shares in %; times in µs, ms or s; bytes in B, kB, MB ...; three significant digits; never
exponent notation; a missing value (None, NaN) as "-". Tables and CSV files keep plain SI
numbers (seconds, bit/s, fractions) with the unit in the column name.

Standard library only: the summary is on the default path of `hsrtcp analyze` (issue 18).
"""

from __future__ import annotations

import math

MISSING = "-"

#: the base units :func:`human` knows, and the names they go by in column names and study
#: tables (``unit`` column) — "fraction" and "share" are the same thing
RATE, TIME, SHARE, BYTES = "bit/s", "s", "share", "B"
_ALIASES = {"bit/s": RATE, "bps": RATE, "s": TIME, "seconds": TIME, "share": SHARE, "fraction": SHARE,
            "%": SHARE, "B": BYTES, "bytes": BYTES}


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def plain(v: float, digits: int = 3) -> str:
    """``v`` with ``digits`` significant digits in positional notation, trailing zeros cut:
    1234.5 -> "1234" (whole digits are never rounded away), 0.000045678 -> "0.0000457",
    2.0 -> "2"; no exponent, ever. inf as "inf"."""
    if _missing(v):
        return MISSING
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(digits - 1 - mag, 0)
    text = f"{v:.{decimals}f}"
    # rounding may carry into a new digit (9.996 -> "10.00"): one decimal fewer then
    if decimals and len(text.lstrip("-").split(".")[0].lstrip("0")) > max(mag + 1, 0):
        text = f"{v:.{decimals - 1}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _prefixed(v: float, steps: tuple[tuple[float, str], ...], digits: int) -> str:
    a = abs(v)
    for div, unit in steps:
        # the value as it would print: 999.96 kbit/s reads "1 Mbit/s", not "1000 kbit/s"
        if float(plain(a / div, digits)) >= 1:
            return f"{plain(v / div, digits)} {unit}"
    div, unit = steps[-1]
    return f"{plain(v / div, digits)} {unit}"


_RATE_STEPS = ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s"))
_BYTE_STEPS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B"))
_TIME_STEPS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def _scaled(v: float | None, steps: tuple[tuple[float, str], ...], digits: int) -> str:
    """``v`` in the step that reads best; 0 and ±inf in the base unit (the step of 1)."""
    if _missing(v):
        return MISSING
    if v == 0 or math.isinf(v):
        return f"{plain(v)} {dict(steps)[1.0]}"
    return _prefixed(v, steps, digits)


def human_rate(bps: float | None, digits: int = 3) -> str:
    """A rate in bit/s: "1.5 Mbit/s", "250 kbit/s", "0 bit/s"; "-" when missing."""
    return _scaled(bps, _RATE_STEPS, digits)


def human_bytes(n: float | None, digits: int = 3) -> str:
    """A size in bytes (SI, 1 kB = 1000 B): "5.7 MB", "812 B"; "-" when missing."""
    if _missing(n):
        return MISSING
    if abs(n) < 1000:
        return f"{plain(n, max(digits, len(str(int(abs(n))))))} B"
    return _prefixed(n, _BYTE_STEPS, digits)


def human_duration(s: float | None, digits: int = 3) -> str:
    """A time in seconds as µs, ms or s: 45e-6 -> "45 µs", 0.1708 -> "171 ms", 2.5 -> "2.5 s";
    long times stay in seconds ("3600 s"); "-" when missing."""
    return _scaled(s, _TIME_STEPS, digits)


def human_share(x: float | None, digits: int = 3) -> str:
    """A share (fraction, 0.0580302) in percent: "5.8 %"; 1 -> "100 %"; tiny shares keep
    their significant digits ("0.00066 %"), never "0.00 %"; "-" when missing."""
    if _missing(x):
        return MISSING
    return f"{plain(100.0 * x, digits)} %"


def human_count(n: float | None) -> str:
    """A count with thousands separators ("1,234"); "-" when missing (never 0)."""
    if _missing(n):
        return MISSING
    if isinstance(n, float) and not n.is_integer():
        return plain(n)
    return f"{int(n):,}"


def unit_of(name: str) -> str | None:
    """The base unit of a column or metric from its name (the project's naming: ``*_bps``
    bit/s, ``*_s`` and RTT columns seconds, ``*_bytes`` bytes, rates and shares fractions),
    or a unit name itself ("bit/s", "s", "share", "fraction", "bytes"); None when unknown."""
    if name in _ALIASES:
        return _ALIASES[name]
    n = name.lower()
    if n.endswith("_bps") or n in ("rate_bps", "bytes_per_s"):
        return RATE
    if n.endswith("_s") or n.startswith("rtt_") or n in ("rtt", "rto", "duration"):
        return TIME
    if n.endswith(("_share", "_rate", "_fraction", "_coverage")) or n in (
            "p_d", "p_a", "q", "q_estimate", "ack_burst_loss", "share", "u_rate", "lte_coverage"):
        return SHARE
    if n.endswith("bytes") or n.startswith(("bif_", "awnd_")):
        return BYTES
    return None


def human(v, unit: str | None, digits: int = 3) -> str:
    """``v`` in the human format of ``unit`` (a base unit, alias or column name, see
    :func:`unit_of`); a number of no known unit in plain notation; other values as text."""
    if _missing(v):
        return MISSING
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    base = unit_of(unit) if unit else None
    if base == RATE:
        return human_rate(v, digits)
    if base == TIME:
        return human_duration(v, digits)
    if base == SHARE:
        return human_share(v, digits)
    if base == BYTES:
        return human_bytes(v, digits)
    if isinstance(v, int):
        return f"{v:,}"
    return plain(v, digits)


def axis_scale(max_abs: float, unit: str) -> tuple[float, str]:
    """A divisor and the shown unit for an axis whose values reach ``max_abs`` (in the base
    ``unit``): (1e6, "Mbit/s") for 3.5e6 bit/s, (1e-3, "ms") for 0.9 s, (0.01, "%") for a
    share; the ticks are then plain numbers (:func:`plain`) of value / divisor."""
    base = unit_of(unit) or unit
    a = abs(max_abs) if not _missing(max_abs) and not math.isinf(max_abs) else 0.0
    if base == SHARE:
        return 0.01, "%"
    steps = {RATE: _RATE_STEPS, BYTES: _BYTE_STEPS, TIME: _TIME_STEPS}.get(base)
    if steps is None:
        return 1.0, unit
    if a == 0:
        return 1.0, steps[-1][1] if base != TIME else "s"
    for div, shown in steps:
        if a >= div:
            return div, shown
    return steps[-1]
