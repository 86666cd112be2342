"""The options of `hsrtcp analyze`, declared once.

:mod:`hsrtcp.cli.analyze` builds the click command from :data:`OPTIONS`, and the quick path
(:mod:`hsrtcp.cli.quick`) parses plain command lines with the same table without importing
click (about 30 ms, docs/design.md, "Start-up"): an option added here exists in both, with
one name, one default and one value check. This module imports nothing (no dataclasses, no
typing: the quick path's budget).
"""

from __future__ import annotations

_INF = float("inf")

# hsrtcp.context.options.FORMATS (not imported: the context package loads polars)
RADIO_FORMATS = ("auto", "lab", "csv", "nmea", "gpx", "gnettrack", "gsmtap")

# Kinds of value. Both parsers take their meaning from here: click through
# hsrtcp.cli.analyze._click_type, the quick path through :func:`convert`.
FLAG = "flag"        # no value; ``off`` spellings set it back to False
PATH = "path"        # a file or directory path
OUT = "out"          # the output directory: a non-empty path
TEXT = "text"        # a string
COUNT = "count"      # an integer >= 1
SECONDS = "seconds"  # a finite number > 0
FLOAT = "float"      # any float
CHOICE = "choice"    # one of ``choices``


class Option:
    """One option of `hsrtcp analyze`. ``quick``: the quick path may run command lines that
    give it (False: options whose handling needs more than the plain run, such as the radio
    context or a corpus; a command line with one of them goes to click)."""

    __slots__ = ("opts", "name", "kind", "default", "multiple", "choices", "off", "help", "metavar",
                 "show_default", "quick")

    def __init__(self, opts: tuple, name: str, kind: str = FLAG, *, default=None, multiple: bool = False,
                 choices: tuple = (), off: tuple = (), help: str = "", metavar: str | None = None,  # noqa: A002
                 show_default: bool = False, quick: bool = True) -> None:
        self.opts, self.name, self.kind, self.multiple = opts, name, kind, multiple
        self.default = False if kind == FLAG else (() if multiple else default)
        self.choices, self.off, self.help, self.metavar = choices, off, help, metavar
        self.show_default, self.quick = show_default, quick


OPTIONS = (
    Option(("-o", "--out"), "out", OUT, default="out", show_default=True, help="directory for the result tables"),
    Option(("--client",), "client", PATH, multiple=True, help="a capture taken at the client (phone) side"),
    Option(("--server",), "server", PATH, multiple=True, help="a capture taken at the server side"),
    Option(("--vantage",), "vantage", CHOICE, choices=("client", "server"),
           help="vantage of the positional CAPTURES"),
    Option(("--window",), "window_s", SECONDS, default=30.0, show_default=True,
           help="two-vantage matching: seconds a packet waits for its twin in the other capture"),
    Option(("--match-memory",), "match_memory_mb", COUNT, default=256, show_default=True, metavar="MB",
           help="two-vantage matching: memory for packets waiting in a window, per pair; "
                "beyond it windows close early and the run warns (docs/two-vantage.md, Memory)"),
    Option(("--csv",), "csv", help="also write CSV next to Parquet"),
    Option(("--packets",), "packets",
           help="also write packets.parquet: a row per TCP segment with its frame number (docs/formats/packets.md)"),
    Option(("--plot",), "plot", off=("--no-plot",), show_default=True,
           help="also draw throughput.png (slower: matplotlib; `hsrtcp plot` draws any figure later)"),
    Option(("-j", "--workers"), "workers", COUNT, help="captures analyzed in parallel (default: CPUs)"),
    Option(("-q", "--quiet"), "quiet", help="no progress bar and no summary"),
    Option(("--radio",), "radio", PATH, quick=False,
           help="radio/GPS log of the captures (docs/context.md): adds handoffs, classes, coverage"),
    Option(("--radio-offset",), "radio_offset", FLOAT, default=0.0, show_default=True, quick=False,
           help="seconds added to the radio log's times to put them on the capture clock"),
    Option(("--radio-format",), "radio_format", CHOICE, default="auto", choices=RADIO_FORMATS, show_default=True,
           quick=False, help="format of --radio"),
    Option(("--radio-map",), "radio_map", TEXT, quick=False,
           help="generic CSV columns: FIELD=COLUMN[:UNIT],... e.g. time=Timestamp:ms,speed=Speed:m/s"),
    Option(("--carrier",), "carrier", TEXT, quick=False, help="carrier of the captures when the radio log has several"),
    Option(("--label",), "labels", TEXT, multiple=True, quick=False,
           help="KEY=VALUE added to labels.parquet (repeatable)"),
    Option(("--corpus",), "corpus", quick=False,
           help="CAPTURE is a corpus (directory tree, glob or .csv manifest): one partition per input "
                "(docs/scale.md); implied for a .csv, a quoted glob or a directory that is not a run bundle"),
    Option(("--force",), "force", quick=False, help="corpus: re-analyze inputs whose results are up to date"),
    Option(("--scheduler",), "scheduler", TEXT, metavar="tcp://HOST:PORT", quick=False,
           help="corpus: run on this Dask scheduler's workers"),
    Option(("--dask",), "dask_local", quick=False, help="corpus: run on a local Dask cluster"),
)


def convert(option: Option, value: str):
    """``value`` as the quick path takes it for ``option`` (paths stay strings); raises
    ValueError where click reports a bad value (the quick path then leaves the line to click)."""
    kind = option.kind
    if kind == COUNT:
        n = int(value)
        if n < 1:
            raise ValueError(value)
        return n
    if kind in (SECONDS, FLOAT):
        x = float(value)
        if kind == SECONDS and not 0 < x < _INF:  # (NaN compares false)
            raise ValueError(value)
        return x
    if kind == CHOICE and value not in option.choices:
        raise ValueError(value)
    return value
