"""The quick path: plain ``hsrtcp analyze CAPTURE...`` command lines without click.

Importing click costs about 30 ms on this kind of machine, a fifth of the whole run of a
million-packet capture (docs/design.md, "Start-up"). The grammar is not written here: this
module reads the one declaration of the options, :data:`hsrtcp.cli.analyze_options.OPTIONS`,
from which click builds the command too. It runs the command lines that give only options
marked ``quick`` with values that convert, and hands everything else (help, run-bundle
directories, corpora, options that need more than the plain run, values that do not
convert, usage errors) back to click by returning None, so click stays the one place where
usage errors and help are produced. Both paths start the analysis through :func:`start`.
"""

from __future__ import annotations

import os

from hsrtcp.cli.analyze_options import FLAG, OPTIONS, convert

# spelling -> (option, value a flag spelling sets)
_SPELLINGS = {s: (o, True) for o in OPTIONS for s in o.opts}
_SPELLINGS.update({s: (o, False) for o in OPTIONS for s in o.off})


def parse(args: list[str]) -> dict | None:
    """The parameters of ``analyze ARGS...`` (``captures`` and every option's name, as click
    names them; paths as given), or None when click should parse this command line."""
    if not args or args[0] != "analyze":
        return None
    params = {o.name: list(o.default) if o.multiple else o.default for o in OPTIONS}
    params["captures"] = []
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
        option, on = _SPELLINGS.get(name, (None, None))
        if option is None or not option.quick:
            return None
        if option.kind == FLAG:
            if value is not None:
                return None
            params[option.name] = on
            continue
        if value is None:
            value = next(rest, None)
        if value is None or value == "" or value.startswith("-"):
            return None
        try:
            value = convert(option, value)
        except ValueError:
            return None
        if option.multiple:
            params[option.name].append(value)
        else:
            params[option.name] = value
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


def start(p: dict, context: dict | None = None) -> int:
    """Run the analysis of the parameters ``p`` (from :func:`parse` or from click) with the
    radio/label ``context``; the exit code."""
    from hsrtcp.cli.run_analysis import run

    caps = list(p["captures"])
    return run(caps, [p["vantage"]] * len(caps), p["out"], p["csv"], p["plot"], p["workers"], p["quiet"],
               list(p["client"]), list(p["server"]), p["window_s"], context, p["match_memory_mb"],
               p["packets"])


def quick_analyze(args: list[str]) -> int | None:
    """Run ``hsrtcp analyze`` if :func:`parse` understands ``args``; the exit code, or None
    when the command line is click's to handle."""
    p = parse(args)
    return None if p is None else start(p)
