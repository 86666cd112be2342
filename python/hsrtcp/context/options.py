"""The per-input options of the radio/GPS context, checked in one place for every entry
point (docs/context.md, "Options"): ``hsrtcp analyze``'s ``--radio``, ``--radio-format``,
``--radio-map``, ``--radio-offset``, ``--carrier`` and ``--vantage`` (a bad value is a
usage error, exit 2), a corpus manifest's columns of the same names
(:mod:`hsrtcp.scale.manifest`: an input error naming the manifest's line, exit 3) and
:func:`hsrtcp.context.enrich.compute_context` (ValueError).

Values come as the command line or the CSV gives them (text, numbers, paths, ``None`` or
``""`` for not given); :func:`check_options` returns them typed or raises
:class:`OptionError` naming the field. The command line checks them before any analysis.
"""

from __future__ import annotations

import math
import os

FORMATS = ("auto", "lab", "csv", "nmea", "gpx", "gnettrack", "gsmtap")
VANTAGES = ("client", "server")
# Options that only say how to read a radio log: without one they would do nothing.
NEED_A_LOG = ("radio_format", "radio_map", "radio_offset")


class OptionError(ValueError):
    """A bad option value. ``field``: the option's manifest column (``radio_offset`` ...;
    the command line's option is ``--`` + it with ``-`` for ``_``); the message does not
    repeat it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field

    @property
    def option(self) -> str:
        return "--" + self.field.replace("_", "-")


def _given(v) -> bool:
    return v is not None and not (isinstance(v, str) and not v.strip())


def check_radio(value) -> str | None:
    """The radio log's path as given (relative paths are the caller's to resolve), or None."""
    if not _given(value):
        return None
    path = os.fspath(value)
    if "\x00" in path:
        raise OptionError("radio", "a path cannot hold a NUL character")
    return path


def check_format(value) -> str:
    if not _given(value):
        return "auto"
    if value not in FORMATS:
        raise OptionError("radio_format", f"{value!r} is not one of {', '.join(FORMATS)}")
    return value


def check_offset(value) -> float:
    """Seconds added to the log's times; text is read as click reads a float."""
    if not _given(value):
        return 0.0
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise OptionError("radio_offset", f"{value!r} is not a number of seconds") from None
    if not math.isfinite(v):
        # NaN would make every radio time NaN, and every flow unknown without a word
        raise OptionError("radio_offset", f"must be a finite number of seconds, not {v}")
    return v


def check_map(value) -> dict:
    """``FIELD=COLUMN[:UNIT],...`` (or an already parsed mapping) -> ``{field: (column, unit)}``."""
    if isinstance(value, dict):
        return value
    if not _given(value):
        return {}
    from hsrtcp.context.csvlog import parse_mapping  # (polars: only when a mapping is given)

    try:
        return parse_mapping(value)
    except ValueError as exc:
        raise OptionError("radio_map", str(exc)) from None


def check_carrier(value) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise OptionError("carrier", "must not be empty")
    return text


def check_vantage(value) -> str | None:
    if not _given(value):
        return None
    if value not in VANTAGES:
        raise OptionError("vantage", f"{value!r} is not one of {', '.join(VANTAGES)}")
    return value


def check_options(*, radio=None, radio_format=None, radio_map=None, radio_offset=None,
                  carrier=None) -> dict:
    """The radio options of one input, typed: ``radio``, ``radio_format``, ``radio_map``,
    ``radio_offset``, ``carrier`` (the keyword arguments of
    :func:`hsrtcp.context.enrich.write_context`). Raises :class:`OptionError` for the first
    bad one, in that order, and for a reading option given without a log (it would be
    ignored). ``carrier`` needs no log: it is also a label."""
    out = {"radio": check_radio(radio), "radio_format": check_format(radio_format),
           "radio_offset": check_offset(radio_offset), "radio_map": check_map(radio_map),
           "carrier": check_carrier(carrier)}
    if out["radio"] is None:
        unused = {"radio_format": out["radio_format"] != "auto", "radio_map": bool(out["radio_map"]),
                  "radio_offset": out["radio_offset"] != 0.0}
        for name in NEED_A_LOG:
            if unused[name]:
                raise OptionError(name, "applies to a radio log, and none is given")
    if out["radio_map"] and out["radio_format"] not in ("auto", "csv"):
        raise OptionError("radio_map", f"maps the columns of a generic CSV log (radio format csv or "
                                       f"auto), not {out['radio_format']}")
    return out
