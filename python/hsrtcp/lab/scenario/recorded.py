"""Handoffs from a recorded radio log: ``[recorded]`` takes one emulated path's handoff times,
cells and network-generation changes from a log a phone wrote (G-NetTrack Pro CSV, a GSMTAP
capture of its RRC signalling, any radio format hsrtcp reads: docs/context.md), instead of
the cell layout's draw, and draws each handoff's radio outage from a distribution by its
3GPP type (docs/formats/scenario.md, ``[recorded]``).

Default outage medians: the execution times of 43,856 handovers measured on US 5G networks
(Hassan et al., "Vivisecting Mobility Management in 5G Cellular Networks", ACM SIGCOMM
2022): LTE 33 ms (90th percentile 47 ms), NSA (LTE anchor handover in EN-DC) 43 ms, SCG
addition 42 ms, SCG modification 33 ms, SCG release 53.5 ms, SA 66 ms. The spread
``outage_sigma`` = ln(47/33)/1.2816 = 0.28 makes the LTE 90th percentile 47 ms; the study
gives no other percentile, so every type gets it (an assumption). Handoffs to or from 2G/3G
take ``[handoff] inter_system_median_s``, re-establishments (radio link failures)
``[handoff] rlf_median_s``, both with ``[handoff] outage_sigma``, as drawn handoffs do.

The log is read when the scenario is resolved, and the handoffs it gives are kept in the
resolved parameters (``handoffs``): scenario.json holds them, so a compiled scenario
recompiles without the log. Each serving interval between two recorded handoffs is one cell
of the layout (the log's RAT, area code, cell identity, channel and generation; a cell the
log does not name — before its first handover, after a re-establishment — gets the number
1,000,000·path + 900,000 + k); its site stands where the train is halfway through that
interval, so the signal model gives a plausible RSRP and capacity. No ping-pong draws, no
coverage holes on that path: the log has its own.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np

from .config import MAX_TRIP_S, ScenarioError, _err, _num, _unknown

# median outage (ms) per class; Hassan et al., SIGCOMM 2022 (module doc)
OUTAGE_MEDIAN_MS = {"lte": 33.0, "nsa": 43.0, "scg_add": 42.0, "scg_modify": 33.0, "scg_release": 53.5,
                    "sa": 66.0}
DEFAULTS: dict[str, Any] = {
    "log": None,            # the radio log: relative to the scenario file, or absolute
    "format": "auto",       # a radio format of hsrtcp.context.readers (gnettrack, gsmtap, lab, csv ...)
    "carrier": None,        # the log's carrier (default: its only one)
    "path": 1,              # the emulated path (carrier of [[carriers]], 1-based) that gets the handoffs
    "start_s": 0.0,         # seconds after the log's first sample that are trip time 0
    "outage": "lognormal",  # lognormal | fixed (the median) | log (the log's execution time, else lognormal)
    "outage_sigma": 0.28,   # ln(47/33)/1.2816: LTE's 90th percentile 47 ms
    "outage_median_ms": OUTAGE_MEDIAN_MS,
}
OUTAGES = ("lognormal", "fixed", "log")
MAX_HANDOFFS = 10000
UNNAMED_CELL = 900_000
_STATE = ("rat", "lac", "cid", "arfcn", "generation")


def resolve_recorded(src: str, user: Any, params: dict) -> dict:
    """The checked ``[recorded]`` table, with the log's handoffs read into ``handoffs`` (a
    table that already has them — from a scenario.json — is not read again)."""
    w = "[recorded]"
    if not isinstance(user, dict):
        raise _err(src, w, f"must be a table, got {type(user).__name__}")
    for k in user:
        if k not in DEFAULTS and k not in ("handoffs", "initial"):
            raise _unknown(src, w, k, set(DEFAULTS))
    r = copy.deepcopy(DEFAULTS)
    r.update(copy.deepcopy(user))
    med = dict(OUTAGE_MEDIAN_MS)
    if not isinstance(r["outage_median_ms"], dict):
        raise _err(src, w, f"key 'outage_median_ms' must be a table of {', '.join(OUTAGE_MEDIAN_MS)}")
    for k, v in r["outage_median_ms"].items():
        if k not in OUTAGE_MEDIAN_MS:
            raise _unknown(src, "[recorded.outage_median_ms]", k, set(OUTAGE_MEDIAN_MS))
        med[k] = _num(src, "[recorded.outage_median_ms]", k, v, lo=0.0, hi=60000.0)
    r["outage_median_ms"] = med
    if r["outage"] not in OUTAGES:
        raise _err(src, w, f"key 'outage' must be one of {list(OUTAGES)}, got {r['outage']!r}")
    r["outage_sigma"] = _num(src, w, "outage_sigma", r["outage_sigma"], lo=0.0, hi=3.0)
    r["start_s"] = _num(src, w, "start_s", r["start_s"], lo=0.0, hi=1e7)
    names = [c["name"] for c in params["carriers"]]
    r["path"] = _num(src, w, "path", r["path"], lo=1, hi=len(names), integer=True)
    name = names[r["path"] - 1]
    for i, h in enumerate(params["holes"]):
        if name in h["carriers"]:
            raise _err(src, f"[[holes]] #{i + 1}", f"covers carrier {name!r}, whose handoffs come from "
                       f"[recorded] (the log has its own coverage): list the other carriers in its 'carriers'")
    if "handoffs" in user:
        return r
    if not isinstance(r["log"], str) or not r["log"]:
        raise _err(src, w, "needs key 'log' (the radio log file)")
    if r["carrier"] is not None and not isinstance(r["carrier"], str):
        raise _err(src, w, f"key 'carrier' must be the log's carrier name, got {r['carrier']!r}")
    path = Path(r["log"]).expanduser()
    if not path.is_absolute() and Path(src).is_file():
        path = Path(src).resolve().parent / path
    r["handoffs"], r["initial"] = read_log(src, path, r)
    return r


def read_log(src: str, path: Path, r: dict) -> tuple[list[dict], dict]:
    """(handoffs at trip times >= 0, the serving state at trip time 0) of the log's carrier."""
    import polars as pl

    from hsrtcp.context.handoffs import handoffs as cell_changes
    from hsrtcp.context.readers import read_radio
    from hsrtcp.context.schema import RadioLogError

    w = "[recorded]"
    try:
        lg = read_radio(path, r["format"])
    except (RadioLogError, ValueError) as exc:
        raise _err(src, w, f"key 'log': {exc}") from None
    carriers = lg.carriers
    carrier = r["carrier"]
    if carrier is None:
        if len(carriers) != 1:
            raise _err(src, w, f"key 'carrier' must name one of the log's carriers ({', '.join(carriers) or 'none'})")
        carrier = carriers[0]
    elif carrier not in carriers:
        raise _err(src, w, f"key 'carrier': {carrier!r} is not in the log, which has {', '.join(carriers) or 'none'}")
    r["carrier"] = carrier
    frame = lg.frame.filter(pl.col("carrier") == carrier)
    h = lg.handoffs if lg.handoffs is not None else cell_changes(lg.frame)
    h = h.filter(pl.col("carrier") == carrier).sort("ts")
    t0 = float(lg.frame["ts"].min()) + r["start_s"]
    cells = frame.filter(pl.col("cid").is_not_null())
    before = cells.filter(pl.col("ts") <= t0)
    first = before.tail(1) if not before.is_empty() else cells.head(1)
    initial = ({k: first[k][0] for k in _STATE} if not first.is_empty() else dict.fromkeys(_STATE))
    h = h.filter((pl.col("ts") >= t0) & (pl.col("ts") - t0 <= MAX_TRIP_S))
    if h.height > MAX_HANDOFFS:
        raise _err(src, w, f"key 'log': {h.height} handoffs after start_s, at most {MAX_HANDOFFS}")
    out = []
    for row in h.iter_rows(named=True):
        out.append({"t": round(row["ts"] - t0, 3), "type": row["type"], "execution_s": row["execution_s"],
                    "ping_pong": row["ping_pong"],
                    **{f"new_{k}": row[f"new_{k}"] for k in _STATE}})
    return out, initial


def outage_class(kind: str | None, old_gen: str | None, new_gen: str | None) -> str:
    """Which median a recorded handoff's outage takes (docs/formats/scenario.md ``[recorded]``)."""
    if kind == "reestablishment":
        return "reestablishment"
    if kind in ("scg_add", "scg_modify", "scg_release"):
        return kind
    if kind == "mcg_ho":
        return "nsa"
    if kind == "sa_ho":
        return "sa"
    if kind == "inter_rat":
        pair = {old_gen, new_gen}
        if pair & {"2G", "3G", None}:
            return "inter_system"
        if pair == {"4G", "5G NSA"}:
            return "scg_add" if new_gen == "5G NSA" else "scg_release"
        return "sa"
    return "nsa" if new_gen == "5G NSA" else "sa" if new_gen == "5G SA" else "lte"


def outage_s(params: dict, cls: str, execution_s: float | None, z: float) -> float:
    """The outage of one recorded handoff (seconds, before the ``outage_max_s`` cap)."""
    r, h = params["recorded"], params["handoff"]
    if cls == "inter_system":
        return float(h["inter_system_median_s"] * math.exp(h["outage_sigma"] * z))
    if cls == "reestablishment":
        return float(h["rlf_median_s"] * math.exp(h["outage_sigma"] * z))
    median = r["outage_median_ms"][cls] / 1000.0
    if r["outage"] == "log" and execution_s is not None:
        return float(execution_s)
    if r["outage"] == "fixed":
        return median
    return float(median * math.exp(r["outage_sigma"] * z))


def applies(params: dict, ci: int) -> bool:
    r = params.get("recorded")
    return r is not None and r["path"] == ci + 1


def layout(lay, params: dict, ci: int, trip, horizon_s: float, base_cid: int, base_lac: int):
    """Fill ``lay`` (a CarrierLayout) with the recorded cells and handoffs up to ``horizon_s``."""
    from .cells import Cell, Handoff, _area_at

    r = params["recorded"]
    carrier = params["carriers"][ci]
    areas, types = params["trip"]["areas"], params["area_types"]
    hs = [h for h in r["handoffs"] if h["t"] < horizon_s]
    # one handoff per instant (ms): the later one
    hs = [h for i, h in enumerate(hs) if i + 1 == len(hs) or hs[i + 1]["t"] != h["t"]]
    states = [r["initial"]] + [{k: h[f"new_{k}"] for k in _STATE} for h in hs]
    edges = [0.0] + [h["t"] for h in hs] + [(hs[-1]["t"] if hs else 0.0) + 60.0]
    unnamed = 0
    lay.cells = []
    for k, st in enumerate(states):
        x_mid = float(trip.x_at((edges[k] + edges[k + 1]) / 2))
        at = types[_area_at(areas, x_mid)]
        cid = st["cid"]
        if cid is None:
            cid = base_cid + UNNAMED_CELL + unnamed
            unnamed += 1
        modern = st["generation"] not in ("2G", "3G")
        lay.cells.append(Cell(int(cid), st["lac"], st["rat"] or carrier["rat"], x_mid, at["site_offset_m"],
                              at["rsrp_ref_dbm"] + carrier["rsrp_offset_db"], k if modern else None,
                              st["generation"], st["arfcn"]))
    if not any(c.lte_index is not None for c in lay.cells):
        raise ScenarioError(f"[recorded] the log's carrier {r['carrier']!r} has no 4G/5G cell in the window")
    # LTE indices in order (neighbours of the signal model = the previous and next such cell)
    for i, c in enumerate([c for c in lay.cells if c.lte_index is not None]):
        c.lte_index = i
    lay.change_t = np.round(np.array(edges[:-1], dtype=float), 3)
    lay.change_cell = np.arange(len(states))
    lay.handoffs = []
    for i, h in enumerate(hs, 1):
        a, b = lay.cells[i - 1], lay.cells[i]
        inter = a.rat != b.rat or a.generation != b.generation
        lay.handoffs.append(Handoff(ci, float(lay.change_t[i]), i - 1, i, inter, bool(h.get("ping_pong")),
                                    h["type"], outage_class(h["type"], a.generation, b.generation),
                                    h["execution_s"]))
    return lay
