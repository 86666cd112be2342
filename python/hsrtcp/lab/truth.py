"""The lab's ground truth carried into a results directory (docs/formats/truth.md).

A bundle (docs/formats/bundle.md) holds what the emulated path was told to do: the scenario's
``events.csv`` (handoffs, outages held or dropped, RTT spikes, loss bursts, coverage holes,
stalls) and the compiled traces (``scenario/``: capacity, one-way delay and loss over time).
``hsrtcp analyze BUNDLE -o OUT`` writes both next to the analyzer's tables, on the captures'
clock, so the figures and the report can draw the truth beside what the analyzer inferred
without the bundle at hand:

- ``truth_events``: one row per events.csv row, ``ts``/``ts_end`` = bundle ``t0`` + window time;
- ``truth_capacity``: one row per piece of the compiled path (path, direction) during which
  capacity, delay and loss stay constant (:meth:`CompiledScenario.segments`).

Both carry ``run_id``, ``path`` and ``carrier``: a flow finds its own through context.parquet
(``run_id``, ``carrier``). A bundle without a scenario (a plain Rattan config) gives no rows;
a bundle whose scenario cannot be read gives none either, with a message (exit 3).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl

from hsrtcp.bundle import read_manifest
from hsrtcp.errors import InputError
from hsrtcp.schemas import (  # (defined there, below hsrtcp.results)
    TRUTH_EVENTS_SCHEMA as EVENTS_SCHEMA,
    TRUTH_CAPACITY_SCHEMA as CAPACITY_SCHEMA,
)

TRUTH_TABLES = ("truth_events", "truth_capacity")


def empty() -> dict[str, pl.DataFrame]:
    return {"truth_events": pl.DataFrame(schema=EVENTS_SCHEMA),
            "truth_capacity": pl.DataFrame(schema=CAPACITY_SCHEMA)}


def bundle_truth(bundle: str | Path, run_id: str | None = None) -> tuple[dict[str, pl.DataFrame], list[str]]:
    """The two truth tables of one bundle and the problems met (each naming the file)."""
    from hsrtcp.lab.scenario import CompiledScenario

    b = Path(bundle)
    out, problems = empty(), []
    try:
        m = read_manifest(b)
    except InputError as exc:
        return out, [f"{exc}: no ground truth carried"]
    if m is None:
        return out, []  # a capture pair directory, not a lab bundle: no truth to carry
    sc_dir = b / "scenario"
    if not (sc_dir / "scenario.json").is_file():
        return out, []  # a plain Rattan config or a bare capture pair: no scenario, so no truth
    t0 = m.get("t0")
    if isinstance(t0, bool) or not isinstance(t0, (int, float)) or not math.isfinite(t0):
        return out, [f"{mf}: t0 {t0!r} is not a finite number of epoch seconds: no ground truth carried"]
    run_id = run_id or m.get("run_id") or b.resolve().name
    try:
        cs = CompiledScenario.open(sc_dir)
        doc = json.loads((sc_dir / "scenario.json").read_text(encoding="utf-8"))
        carriers = {int(e["path"]): str(e["carrier"]) for e in doc.get("path_map") or []}
        ev_file = b / (m.get("events") or "events.csv")
        ev = pl.read_csv(ev_file, schema=dict(cs.events().schema)) if ev_file.is_file() else cs.events()
        seg = cs.segments()
    except Exception as exc:  # a damaged compiled scenario: the analysis stands, the truth is left out
        return out, [f"{sc_dir}: the compiled scenario cannot be read, no ground truth carried: "
                     f"{type(exc).__name__}: {exc}"]
    carrier = pl.col("path").replace_strict(carriers, default=None, return_dtype=pl.String)
    ids = [pl.lit(run_id, pl.String).alias("run_id")]
    events = ev.with_columns(*ids, (pl.col("t_start") + t0).alias("ts"), (pl.col("t_end") + t0).alias("ts_end"),
                             pl.coalesce("carrier", carrier).alias("carrier"))
    out["truth_events"] = events.select([pl.col(c).cast(t) for c, t in EVENTS_SCHEMA.items()])
    cap = seg.with_columns(*ids, carrier.alias("carrier"), (pl.col("t_start") + t0).alias("ts"),
                           (pl.col("t_end") + t0).alias("ts_end"))
    out["truth_capacity"] = cap.select([pl.col(c).cast(t) for c, t in CAPACITY_SCHEMA.items()])
    return out, problems


def truth_tables(bundles: list[tuple[str | Path, str | None]]) -> tuple[dict[str, pl.DataFrame], list[str]]:
    """The truth tables of every (bundle, run_id) analyzed, stacked; the problems met."""
    frames: dict[str, list[pl.DataFrame]] = {t: [] for t in TRUTH_TABLES}
    problems: list[str] = []
    for b, run_id in bundles:
        t, p = bundle_truth(b, run_id)
        problems += p
        for name in TRUTH_TABLES:
            frames[name].append(t[name])
    base = empty()
    return {n: pl.concat([base[n], *frames[n]], how="vertical") for n in TRUTH_TABLES}, problems


def flow_truth(events: pl.DataFrame | None, capacity: pl.DataFrame | None, run_id: str | None,
               carrier: str | None, first_ts: float, last_ts: float,
               direction: str = "down") -> tuple[pl.DataFrame, pl.DataFrame]:
    """The truth of one flow's path over its lifetime [first_ts, last_ts]: its run's events
    and capacity pieces of ``direction`` (``down``: server → phone) on its carrier (all
    carriers of the run when the flow's is unknown and the run has one path), with ``t`` /
    ``t_end`` = seconds since the flow's first packet and the window times renamed
    ``win_start`` / ``win_end``."""
    out = []
    for df in (events, capacity):
        if df is None or df.is_empty():
            out.append(None)
            continue
        sel = df.filter(pl.col("run_id").eq_missing(run_id)) if run_id is not None else df
        if carrier is not None:
            sel = sel.filter(pl.col("carrier").eq_missing(carrier))
        elif sel.select(pl.col("path").n_unique()).item() > 1:
            sel = sel.clear()  # several paths and none named: nothing can be said of this flow's path
        if "direction" in sel.columns:
            sel = sel.filter(pl.col("direction") == direction)
        sel = sel.filter((pl.col("ts_end") >= first_ts) & (pl.col("ts") <= last_ts))
        sel = sel.rename({c: w for c, w in (("t_start", "win_start"), ("t_end", "win_end")) if c in sel.columns})
        out.append(sel.with_columns(t=pl.col("ts") - first_ts, t_end=pl.col("ts_end") - first_ts).sort("ts"))
    return out[0], out[1]
