"""The quick parser: plain ``hsrtcp analyze CAPTURE...`` command lines without click.

Importing click costs about 30 ms on this kind of machine, a fifth of the whole run of a
million-packet capture (docs/design.md, "Start-up"). :func:`quick_analyze` understands the
options of a single-capture analysis and of two-vantage pairs (``--client`` / ``--server``,
``--window``) and hands everything else (help, run-bundle directories, radio/GPS context,
corpora, unknown options, values that do not convert, usage errors) back to click by
returning None, so click stays the one place where usage
errors and help are produced. The options here mirror :func:`hsrtcp.cli.analyze.analyze`;
tests/python/foundation/test_quick_cli.py checks that both parsers agree on every option.
"""

from __future__ import annotations

import math
import os

# Spellings -> parameter name, for options that take a value ...
VALUED = {"-o": "out", "--out": "out", "--vantage": "vantage", "-j": "workers", "--workers": "workers",
          "--client": "client", "--server": "server", "--window": "window_s"}
# Valued options that may be repeated (each value appended).
MULTIPLE = {"client", "server"}
# ... and for flags, with the value they set.
FLAGS = {"-q": ("quiet", True), "--quiet": ("quiet", True), "--csv": ("csv", True),
         "--plot": ("plot", True), "--no-plot": ("plot", False), "--packets": ("packets", True)}
# Options of the click command this parser leaves to click (the test checks that every
# option of the command is in exactly one of VALUED, FLAGS and this).
LEFT_TO_CLICK = {"-h", "--help",
                 # radio/GPS context (hsrtcp.context): rare, and they need the context package anyway
                 "--radio", "--radio-offset", "--radio-format", "--radio-map", "--carrier", "--label",
                 # corpus runs (hsrtcp.scale)
                 "--corpus", "--force", "--scheduler", "--dask",
                 # the matcher's memory budget (rarely changed)
                 "--match-memory"}

DEFAULTS = {"out": "out", "vantage": None, "workers": None, "quiet": False, "csv": False, "plot": False, "packets": False,
            "window_s": 30.0}


def parse(args: list[str]) -> dict | None:
    """The parameters of ``analyze ARGS...`` (``captures`` plus :data:`DEFAULTS`' keys), or
    None when click should parse this command line."""
    if not args or args[0] != "analyze":
        return None
    params = dict(DEFAULTS, captures=[], client=[], server=[])
    rest = iter(args[1:])
    for a in rest:
        if a == "-" or a == "--":
            return None
        if not a.startswith("-"):
            params["captures"].append(a)
            continue
        name, value = a, None
        if a.startswith("--") and "=" in a:
            name, value = a.split("=", 1)
        elif not a.startswith("--") and len(a) > 2:
            name, value = a[:2], a[2:]  # -oDIR, -j4
        if name in FLAGS and value is None:
            key, v = FLAGS[name]
            params[key] = v
        elif name in VALUED:
            if value is None:
                value = next(rest, None)
            if value is None or value == "" or value.startswith("-"):
                return None
            key = VALUED[name]
            if key == "workers":
                try:
                    value = int(value)
                except ValueError:
                    return None
                if value < 1:  # click's range error
                    return None
            elif key == "vantage" and value not in ("client", "server"):
                return None
            elif key == "window_s":
                try:
                    value = float(value)
                except ValueError:
                    return None
                if not (math.isfinite(value) and value > 0):  # click's usage error
                    return None
            if key in MULTIPLE:
                params[key].append(value)
                continue
            params[key] = value
        else:
            return None
    if not (params["captures"] or params["client"]) or any(os.path.isdir(c) for c in params["captures"]):
        return None
    # click's usage errors: unpaired --client/--server, a capture given twice
    if len(params["client"]) != len(params["server"]):
        return None
    from hsrtcp.runner import same_inputs

    if same_inputs(params["captures"], params["client"], params["server"]):
        return None
    # a corpus: a .csv manifest or a quoted glob (docs/scale.md)
    if any(c.lower().endswith(".csv") or (("*" in c or "?" in c or "[" in c) and not os.path.exists(c))
           for c in params["captures"]):
        return None
    return params


def quick_analyze(args: list[str]) -> int | None:
    """Run ``hsrtcp analyze`` if :func:`parse` understands ``args``; the exit code, or None
    when the command line is click's to handle."""
    p = parse(args)
    if p is None:
        return None
    from hsrtcp.cli.run_analysis import run

    caps = p["captures"]
    return run(caps, [p["vantage"]] * len(caps), p["out"], p["csv"], p["plot"], p["workers"], p["quiet"],
               p["client"], p["server"], p["window_s"], packets=p["packets"])
