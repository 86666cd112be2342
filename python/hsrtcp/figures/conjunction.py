"""Seed 004's MPTCP items (§IV-A: Figs. 4-7, the MPTCP part of Table II) from the instance
tables of ``hsrtcp mptcp`` (docs/formats/mptcp-metrics.md), read by :meth:`Inputs.mptcp`.

An instance's mobility class comes from its lab scenario (``scenarios/<scenario>.toml``:
``[trip] speed_kmh``), its carriers' names from the scenario's ``[[carriers]]`` in path
order (path p = the p-th carrier, docs/mptcp.md); without the scenario file both stay
unknown and the items say so.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import polars as pl

from hsrtcp.figures import draw
from hsrtcp.figures.inputs import Inputs, Missing
from hsrtcp.figures.made import Made, data_gap, markdown

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
CLASSES = ("positive", "semi-positive", "negative")
#: seed 004's mobility classes (Fig. 4) by hsrtcp.context.classes.speed_band
MOBILITY = {"static": "static", "0-150": "low-speed 0-150 km/h", "280-310": "high-speed 280-310 km/h"}
#: the carrier combinations seed 004 measured (Table II, Fig. 4)
SEED_COMBINATIONS = ("(M, U)", "(M, T)", "(U, T)", "(M, U, T)")
#: upstream Linux has no coupled congestion control (docs/mptcp.md §3)
NOT_LIA = "the seed's MPTCP ran coupled LIA, which upstream Linux lacks (docs/mptcp.md §3)"


def _scenario(name: str | None) -> dict | None:
    if not name:
        return None
    f = SCENARIOS / f"{name}.toml"
    if not f.is_file():
        return None
    with f.open("rb") as fh:
        return tomllib.load(fh)


def _carrier_names(scenario: dict | None) -> list[str]:
    return [str(c.get("name", i + 1)) for i, c in enumerate((scenario or {}).get("carriers") or [])]


def carrier_of(scenario: str | None, path: int) -> str:
    """The name of carrier ``path`` (1-based) in the instance's scenario, else ``path p``."""
    names = _carrier_names(_scenario(scenario))
    return names[path - 1] if 1 <= path <= len(names) else f"path {path}"


def mobility_of(scenario: str | None) -> str:
    """Seed 004's mobility class of a lab scenario, from its trip speed."""
    from hsrtcp.context import classes

    s = _scenario(scenario)
    if s is None:
        return f"unknown speed ({scenario or 'no scenario'})"
    v = float((s.get("trip") or {}).get("speed_kmh", 0.0))
    band = classes.speed_band(v, v)
    return MOBILITY.get(band, f"{band} km/h")


def instances(inp: Inputs) -> pl.DataFrame:
    """``mptcp_instances`` with ``mobility`` and ``combination`` (the carriers of its paths)."""
    inst = inp.mptcp("instances")
    paths = inp.mptcp("paths")
    combos = {}
    for (result, instance, scenario), part in (
            paths.join(inst.select("result", "instance", "scenario"), on=["result", "instance"], how="left")
            .group_by("result", "instance", "scenario")):
        names = [carrier_of(scenario, p) for p in sorted(set(part["path"].to_list()))]
        combos[(result, instance)] = "(" + ", ".join(names) + ")"
    keys = list(zip(inst["result"].to_list(), inst["instance"].to_list()))
    return inst.with_columns(
        pl.Series("mobility", [mobility_of(s) for s in inst["scenario"].to_list()], dtype=pl.String),
        pl.Series("combination", [combos.get(k, "(none)") for k in keys], dtype=pl.String))


def _cc_line(inst: pl.DataFrame) -> str:
    ccs = sorted({c for c in inst["cc"].to_list() if c})
    return f"congestion control {', '.join(ccs) or 'unknown'}, uncoupled per subflow: {NOT_LIA}"


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({draw.pct(k / n) if n else '–'})"


def s004_fig_4(inp: Inputs) -> Made:
    """U_c per carrier combination and mobility class: one violin each (seed 004 Fig. 4)."""
    inst = instances(inp)
    data = (inst.filter(pl.col("u_c").is_not_null())
            .select("result", "instance", "scenario", "cc", "combination", "mobility", "u_c")
            .sort("combination", "mobility", "instance"))
    if data.is_empty():
        raise Missing("mptcp_instances.u_c of RESULTS: null in every instance (no single-path flow on any carrier)")
    groups = data.group_by("combination", "mobility", maintain_order=True).agg(
        pl.len().alias("n"), pl.col("u_c").median().alias("median"), pl.col("u_c").min().alias("min"),
        pl.col("u_c").max().alias("max"), (pl.col("u_c") > 1).sum().alias("above_1"))
    lines = [f"{r['combination']}, {r['mobility']}: median U_c {r['median']:.3g} (range {r['min']:.3g}-{r['max']:.3g}), "
             f"P(U_c > 1) = {_share(r['above_1'], r['n'])} ({r['n']} instances)" for r in groups.iter_rows(named=True)]
    lines.append(_cc_line(inst))
    gaps = []
    present_m = set(data["mobility"].to_list())
    absent_m = [m for m in MOBILITY.values() if m not in present_m]
    if absent_m:
        gaps.append(data_gap(f"no instance in: {'; '.join(absent_m)}"))
    absent_c = [c for c in SEED_COMBINATIONS if c not in set(data["combination"].to_list())]
    if absent_c:
        gaps.append(data_gap(f"no instance of the combination(s) {', '.join(absent_c)}"))
    fig = draw.violins(data.with_columns((pl.col("combination") + " " + pl.col("mobility")).alias("group")),
                       "u_c", "conjunction efficiency U_c", "U_c per instance", line_at=1.0)
    return Made(data=data, figure=fig, lab=lines, gaps=gaps)


def _utilizations(inp: Inputs, inst: pl.DataFrame) -> pl.DataFrame:
    """One row per instance and quantity: U_c, U_t and R'_n/R_n of each carrier (M32)."""
    keep = inst.filter(pl.col("instance_class").is_not_null())
    base = keep.select("result", "instance", "scenario", pl.col("instance_class").alias("class"))
    parts = [base.join(keep.select("result", "instance", pl.col(c).alias("value")), on=["result", "instance"])
             .with_columns(pl.lit(name).alias("quantity")) for c, name in (("u_c", "U_c"), ("u_t", "U_t"))]
    paths = inp.mptcp("paths").join(base, on=["result", "instance"], how="inner")
    names = [f"R'/R of {carrier_of(s, p)}" for s, p in zip(paths["scenario"].to_list(), paths["path"].to_list())]
    parts.append(paths.select("result", "instance", "scenario", "class", pl.col("subflow_utilization").alias("value"))
                 .with_columns(pl.Series("quantity", names, dtype=pl.String)).sort("quantity"))
    cols = ["result", "instance", "scenario", "class", "quantity", "value"]
    return pl.concat([p.select(cols) for p in parts]).filter(pl.col("value").is_not_null())


def s004_fig_5(inp: Inputs) -> Made:
    """The classified instances (M31): U_c, U_t and each carrier's subflow utilization per
    class, one point per instance (seed 004 Fig. 5 (a)-(d))."""
    inst = instances(inp)
    classified = inst.filter(pl.col("instance_class").is_not_null())
    if classified.is_empty():
        raise Missing("mptcp_instances.instance_class of RESULTS: null in every instance (U_c or U_t unknown)")
    data = _utilizations(inp, inst)
    quantities = list(dict.fromkeys(data["quantity"].to_list()))  # the seed's order: U_c, U_t, then R'/R
    data = (data.with_columns(pl.col("quantity").replace_strict({q: i for i, q in enumerate(quantities)},
                                                                return_dtype=pl.Int64).alias("_q"))
            .sort("_q", "class", "instance").drop("_q"))
    n = classified.height
    lines = [f"{c}: {_share(classified.filter(pl.col('instance_class') == c).height, n)} of the instances"
             for c in CLASSES]
    for q in dict.fromkeys(data["quantity"].to_list()):
        cells = []
        for c in CLASSES:
            v = data.filter((pl.col("quantity") == q) & (pl.col("class") == c))["value"]
            if v.len():
                cells.append(f"{c} median {v.median():.3g} (n {v.len()})")
        lines.append(f"{q}: " + "; ".join(cells))
    neg = classified.filter(pl.col("instance_class") == "negative")
    if neg.height:
        lines.append(f"negative instances with U_t < 50 %: {_share(int((neg['u_t'] < 0.5).sum()), neg.height)}")
    lines.append(_cc_line(inst))
    combos = sorted(set(inst["combination"].to_list()))
    lines.insert(0, f"{n} classified instances of {', '.join(combos)} ({', '.join(sorted(set(inst['mobility'].to_list())))}), "
                    f"barrier {', '.join(f'{b:g}' for b in sorted(set(classified['barrier'].to_list())))}")
    absent = [c for c in CLASSES if c not in set(classified["instance_class"].to_list())]
    gaps = [data_gap(f"no {' or '.join(absent)} instance among the {n}")] if absent else []
    fig = draw.class_panels(data, quantities, list(CLASSES), "classified instances")
    return Made(data=data, figure=fig, lab=lines, gaps=gaps)


def _examples(inst: pl.DataFrame, paths: pl.DataFrame) -> dict[str, dict]:
    """One instance per class, as the seed's Fig. 6 picks: the one whose subflow degraded
    earliest, else (no degradation in the class) the one of median U_c."""
    out = {}
    for c in CLASSES:
        part = inst.filter(pl.col("instance_class") == c).sort("instance")
        if part.is_empty():
            continue
        onset = (paths.filter(pl.col("degraded").fill_null(False))
                 .group_by("result", "instance").agg(pl.col("degradation_onset_s").min().alias("onset")))
        deg = part.join(onset, on=["result", "instance"], how="inner").sort("onset", "instance")
        if deg.height:
            out[c] = deg.row(0, named=True)
        else:
            ranked = part.sort("u_c", "instance")
            out[c] = ranked.row((ranked.height - 1) // 2, named=True)
    return out


def _line(role: str, carrier: str) -> str:
    return f"{carrier}-subflow" if role == "subflow" else f"{carrier} single path"


def s004_fig_6(inp: Inputs) -> Made:
    """(a)-(c) per-second throughput (M5) of the MPTCP subflows and the single-path flows of a
    positive, a semi-positive and a negative instance; (d) when subflows degraded (M33), by class."""
    inst = instances(inp)
    paths = inp.mptcp("paths")
    rates = inp.mptcp("rates")
    picks = _examples(inst, paths)
    if not picks:
        raise Missing("mptcp_instances.instance_class of RESULTS: null in every instance (U_c or U_t unknown)")
    parts, lines = [], []
    for c, r in picks.items():
        part = rates.filter((pl.col("result") == r["result"]) & (pl.col("instance") == r["instance"]))
        names = [_line(role, carrier_of(r["scenario"], p)) for role, p in zip(part["role"].to_list(), part["path"].to_list())]
        parts.append(part.select("result", "instance", "role", "path", "t", "rate_bps")
                     .with_columns(pl.lit(c).alias("panel"), pl.Series("line", names, dtype=pl.String)))
        d = paths.filter((pl.col("result") == r["result"]) & (pl.col("instance") == r["instance"])
                         & pl.col("degraded").fill_null(False)).sort("path")
        what = ", ".join(f"{carrier_of(r['scenario'], p)}-subflow at {t} s"
                         for p, t in zip(d["path"].to_list(), d["degradation_onset_s"].to_list())) or "none"
        mine = paths.filter((pl.col("result") == r["result"]) & (pl.col("instance") == r["instance"])).sort("path")
        util = ", ".join(f"{carrier_of(r['scenario'], p)} {'–' if u is None else f'{u:.3g}'}" for p, u in
                         zip(mine["path"].to_list(), mine["subflow_utilization"].to_list()))
        lines.append(f"{c}: instance {r['instance']}, U_c {r['u_c']:.3g}, U_t {r['u_t']:.3g}, R'/R {util}; "
                     f"degradation (A25): {what}")
    series = pl.concat(parts)  # panels in the seed's order (a) positive, (b) semi-positive, (c) negative
    series = (series.with_columns(pl.col("panel").replace_strict({c: i for i, c in enumerate(CLASSES)},
                                                                 return_dtype=pl.Int64).alias("_p"))
              .sort("_p", "line", "t").drop("_p"))
    onsets = (paths.filter(pl.col("degraded").fill_null(False))
              .join(inst.select("result", "instance", "scenario", pl.col("instance_class").alias("class")),
                    on=["result", "instance"], how="inner"))
    onsets = onsets.with_columns(pl.Series("line", [f"{carrier_of(s, p)}-subflow" for s, p in
                                                    zip(onsets["scenario"].to_list(), onsets["path"].to_list())],
                                           dtype=pl.String))
    classified = inst.filter(pl.col("instance_class").is_not_null())
    for c in CLASSES:
        n = classified.filter(pl.col("instance_class") == c).height
        k = onsets.filter(pl.col("class") == c).select("result", "instance").unique().height
        ts = sorted(onsets.filter(pl.col("class") == c)["degradation_onset_s"].to_list())
        lines.append(f"(d) {c}: {_share(k, n)} instances with a degraded subflow"
                     + (f", onsets {', '.join(f'{t} s' for t in ts)}" if ts else ""))
    lines.append(_cc_line(inst))
    data = pl.concat([
        series.select("panel", "result", "instance", "line", pl.col("t").cast(pl.Float64).alias("t_s"),
                      pl.col("rate_bps").cast(pl.Float64).alias("value")),
        onsets.select(pl.lit("(d) degradation onsets").alias("panel"), "result", "instance", "line",
                      pl.col("degradation_onset_s").cast(pl.Float64).alias("t_s"),
                      pl.col("class").replace_strict({c: float(i) for i, c in enumerate(CLASSES)},
                                                     return_dtype=pl.Float64).alias("value"))])
    absent = [c for c in CLASSES if c not in picks]
    gaps = [data_gap(f"no {' or '.join(absent)} instance to draw")] if absent else []
    fig = draw.instance_rates(series, [c for c in CLASSES if c in picks], onsets, list(CLASSES))
    return Made(data=data, figure=fig, lab=lines, gaps=gaps)


def s004_fig_7(inp: Inputs) -> Made:
    """(b) k_t (M34, A26 primary) between consecutive losses of each flow of the instance of
    Fig. 6 (c) — the negative one; (a), LIA against Reno, cannot be run (docs/mptcp.md §3)."""
    inst = instances(inp)
    picks = _examples(inst, inp.mptcp("paths"))
    kt = inp.mptcp("kt")
    c = next((k for k in ("negative", "semi-positive", "positive") if k in picks), None)
    if c is None:
        raise Missing("mptcp_instances.instance_class of RESULTS: null in every instance (U_c or U_t unknown)")
    r = picks[c]
    part = kt.filter((pl.col("result") == r["result"]) & (pl.col("instance") == r["instance"])
                     & pl.col("k_t").is_not_null())
    if part.is_empty():
        raise Missing(f"mptcp_kt.parquet of RESULTS: no loss interval of 2 whole seconds in instance {r['instance']} "
                      f"(the {c} instance of seed004-fig-06)")
    names = [_line(role, carrier_of(r["scenario"], p)) for role, p in zip(part["role"].to_list(), part["path"].to_list())]
    data = (part.with_columns(pl.Series("line", names, dtype=pl.String))
            .select("result", "instance", "line", "role", "path", "flow_id", "loss1_s", "loss2_s", "interval_s",
                    "k_t", "k_t_literal")
            .sort("line", "loss2_s"))
    lines = [f"(b) the {c} instance {r['instance']} of seed004-fig-06 (U_c {r['u_c']:.3g})"]
    for name in dict.fromkeys(data["line"].to_list()):
        v = data.filter(pl.col("line") == name)
        lines.append(f"{name}: {v.height} interval{'s' if v.height != 1 else ''}, k_t mean {v['k_t'].mean():.4g} B/s (literal {v['k_t_literal'].mean():.4g} B/s)")
    lines.append(_cc_line(inst))
    gaps = [data_gap(f"(a) LIA's linear increase against Reno's: {NOT_LIA}; the lab's subflows run "
            f"{', '.join(sorted({x for x in inst['cc'].to_list() if x})) or 'an unknown algorithm'} uncoupled")]
    if c != "negative":
        gaps.append(data_gap(f"no negative instance: (b) is drawn for the {c} one"))
    fig = draw.kt_lines(data, list(dict.fromkeys(data["line"].to_list())),
                        f"(b) k_t between losses, a {c} instance")
    return Made(data=data, figure=fig, lab=lines, gaps=gaps)


def s004_table_2_mptcp(inp: Inputs) -> Made:
    """Seed 004 Table II's layout: per route (scenario) and data set — single path on each
    carrier (``X-S``) and MPTCP over a combination (``XY-D``) — the flows and the GB they carried
    (rate × the instance duration: R' is subflow-level, docs/mptcp.md §6)."""
    inst = instances(inp)
    paths = inp.mptcp("paths").join(inst.select("result", "instance", "scenario", "duration_s"),
                                    on=["result", "instance"], how="left")
    single = paths.filter(pl.col("single_path_flow_id").is_not_null()).with_columns(
        pl.Series("dataset", [f"{carrier_of(s, p)}-S" for s, p in zip(paths.filter(pl.col("single_path_flow_id").is_not_null())["scenario"].to_list(),
                                                                     paths.filter(pl.col("single_path_flow_id").is_not_null())["path"].to_list())],
                  dtype=pl.String),
        (pl.col("rate_single_path_bps") * pl.col("duration_s") / 8e9).alias("gb"))
    multi = inst.with_columns(
        (pl.col("combination").str.replace_all(r"[(), ]", "") + "-" + pl.when(pl.col("subflows") >= 3).then(pl.lit("T"))
         .otherwise(pl.lit("D"))).alias("dataset"),
        (pl.col("rate_mptcp_bps") * pl.col("duration_s") / 8e9).alias("gb"))
    data = (pl.concat([single.select("scenario", "dataset", "gb"), multi.select("scenario", "dataset", "gb")])
            .group_by("scenario", "dataset").agg(pl.len().alias("flows"), pl.col("gb").sum().alias("size_GB"))
            # the seed's column order: single path (-S), then dual (-D) and triple (-T) paths
            .with_columns(pl.col("dataset").str.slice(-1).replace_strict({"S": 0, "D": 1, "T": 2}, default=3).alias("_k"))
            .sort("scenario", "_k", "dataset").drop("_k"))
    lines = [f"{r['scenario']}, {r['dataset']}: {r['flows']} flows, {r['size_GB']:.3g} GB" for r in data.iter_rows(named=True)]
    return Made(data=data, markdown=markdown(data), lab=lines)


def s001_fig_12(inp: Inputs) -> Made:
    """Seed 001 Fig. 12 from the instances: each instance's MPTCP rate beside the single-path
    rate on each carrier, measured at the same time on the same paths, and per carrier the
    gain mean(MPTCP) / mean(TCP) - 1 (the seed's "MPTCP can improve the throughput by ...")."""
    inst = instances(inp)
    paths = inp.mptcp("paths").join(inst.select("result", "instance", "scenario", "combination", "rate_mptcp_bps"),
                                    on=["result", "instance"], how="inner")
    paths = paths.filter(pl.col("rate_single_path_bps").is_not_null() & pl.col("rate_mptcp_bps").is_not_null())
    if paths.is_empty():
        raise Missing("mptcp_paths.rate_single_path_bps of RESULTS: no instance with a single-path flow on a carrier")
    carriers = [carrier_of(s, p) for s, p in zip(paths["scenario"].to_list(), paths["path"].to_list())]
    paths = paths.with_columns(pl.Series("carrier", carriers, dtype=pl.String)).sort("carrier", "instance")
    rows = []
    for r in paths.iter_rows(named=True):
        group = f"{r['carrier']}: {r['instance'].rsplit('_', 1)[-1]}"
        rows.append({"result": r["result"], "instance": r["instance"], "carrier": r["carrier"], "group": group,
                     "series": f"MPTCP {r['combination']}", "value": r["rate_mptcp_bps"]})
        rows.append({"result": r["result"], "instance": r["instance"], "carrier": r["carrier"], "group": group,
                     "series": "TCP on the carrier", "value": r["rate_single_path_bps"]})
    data = pl.DataFrame(rows, schema={"result": pl.String, "instance": pl.String, "carrier": pl.String,
                                      "group": pl.String, "series": pl.String, "value": pl.Float64})
    lines = []
    for c in dict.fromkeys(carriers):
        p = paths.filter(pl.col("carrier") == c)
        m, t = p["rate_mptcp_bps"].mean(), p["rate_single_path_bps"].mean()
        lines.append(f"carrier {c}: MPTCP {draw.fmt(m, 'bit/s')} against TCP {draw.fmt(t, 'bit/s')} "
                     f"(means over {p.height} instances): {100 * (m / t - 1):+.1f} %")
    lines.append("the seed summed two single-path flows as MPTCP; here a kernel MPTCP connection and one "
                 "single-path flow per carrier ran at the same time (docs/mptcp.md)")
    fig = draw.bars(data, "throughput", "bit/s", "MPTCP against TCP, per instance and carrier", hue="series")
    return Made(data=data, figure=fig, lab=lines)


def s004_fig_8(inp: Inputs) -> Made:
    """Seed 004 Fig. 8: one instance without subflow degradation — (a) each subflow's and the
    connection's per-second rate with each carrier's handoffs, (b) whether each carrier is on
    LTE, (c) each carrier's RSRP — from ``mptcp_rates`` and the radio log kept beside the
    instance tables (``radio.parquet``, ``handoffs.parquet`` of ``hsrtcp analyze`` of the runs)."""
    radio = inp.beside_mptcp("radio")
    if radio is None:
        raise Missing("radio.parquet beside the MPTCP instance tables (hsrtcp analyze of the conjunction runs, "
                      "its radio and handoffs tables copied next to the hsrtcp mptcp tables): in no RESULTS "
                      "directory given")
    inst, paths, rates = instances(inp), inp.mptcp("paths"), inp.mptcp("rates")
    two = (radio.group_by("result", "run_id").agg(pl.col("carrier").n_unique().alias("n"))
           .filter(pl.col("n") >= 2).select("result", pl.col("run_id").alias("instance")))
    bad = (paths.group_by("result", "instance")
           .agg((pl.col("degraded").fill_null(False) | (pl.col("rate_subflow_bps").fill_null(0.0) <= 0)).any().alias("bad")))
    ok = (inst.join(two, on=["result", "instance"], how="inner").join(bad, on=["result", "instance"], how="left")
          .filter(~pl.col("bad").fill_null(True) & pl.col("u_c").is_not_null()).sort(["u_c", "instance"], descending=[True, False]))
    if ok.is_empty():
        raise Missing("an instance with a radio log of each carrier, a subflow carrying data on each and no degraded "
                      "subflow (mptcp_paths, radio.parquet): none")
    r = ok.row(0, named=True)
    t0, end = r["t0"], r["t0"] + (r["duration_s"] or 0.0)
    mine = rates.filter((pl.col("result") == r["result"]) & (pl.col("instance") == r["instance"])
                        & (pl.col("role") == "subflow"))
    names = [carrier_of(r["scenario"], p) for p in mine["path"].to_list()]
    sub = mine.with_columns(pl.Series("carrier", names, dtype=pl.String)).select(
        "carrier", pl.col("t").cast(pl.Float64).alias("t_s"), pl.col("rate_bps").cast(pl.Float64).alias("value"))
    total = sub.group_by("t_s").agg(pl.col("value").sum()).with_columns(pl.lit("MPTCP").alias("carrier"))
    log = (radio.filter((pl.col("result") == r["result"]) & (pl.col("run_id") == r["instance"])
                        & (pl.col("ts") >= t0) & (pl.col("ts") <= end))
           .with_columns((pl.col("ts") - t0).alias("t_s")).sort("carrier", "t_s"))
    hand = inp.beside_mptcp("handoffs")
    marks = pl.DataFrame(schema={"carrier": pl.String, "t_s": pl.Float64, "system": pl.String})
    if hand is not None:
        marks = (hand.filter((pl.col("result") == r["result"]) & (pl.col("run_id") == r["instance"])
                             & (pl.col("ts") >= t0) & (pl.col("ts") <= end))
                 .select("carrier", (pl.col("ts") - t0).alias("t_s"), "system").sort("carrier", "t_s"))
    cols = ["panel", "line", "t_s", "value"]
    data = pl.concat([
        sub.select(pl.lit("(a) rate").alias("panel"), (pl.col("carrier") + "-subflow").alias("line"), "t_s", "value"),
        total.select(pl.lit("(a) rate").alias("panel"), pl.col("carrier").alias("line"), "t_s", "value"),
        marks.select(pl.lit("(a) handoff").alias("panel"), (pl.col("carrier") + " " + pl.col("system")).alias("line"),
                     "t_s", pl.lit(1.0).alias("value")),
        log.select(pl.lit("(b) on LTE").alias("panel"), pl.col("carrier").alias("line"), "t_s",
                   (pl.col("rat") == "LTE").cast(pl.Float64).alias("value")),
        log.select(pl.lit("(c) RSRP").alias("panel"), pl.col("carrier").alias("line"), "t_s",
                   pl.col("rsrp_dbm").cast(pl.Float64).alias("value")),
    ]).select(cols).with_columns(pl.lit(r["instance"]).alias("instance"))
    lines = [f"instance {r['instance']} (U_c {r['u_c']:.3g}, U_t {r['u_t']:.3g}; no degraded subflow, both carrying data)"]
    # each second's carrier state: the last radio sample at or before it
    carriers = sorted(set(names))
    states = pl.concat([sub.filter(pl.col("carrier") == c).sort("t_s").join_asof(
        log.filter(pl.col("carrier") == c).select("t_s", "rat").sort("t_s"), on="t_s", strategy="backward")
        for c in carriers])
    for c in carriers:
        m = marks.filter(pl.col("carrier") == c)
        sec = set(int(t) for t in m["t_s"].to_list())
        own = states.filter(pl.col("carrier") == c)
        other = states.filter(pl.col("carrier") != c)
        at = own.filter(pl.col("t_s").cast(pl.Int64).is_in(list(sec)))
        oth = other.filter(pl.col("t_s").cast(pl.Int64).is_in(list(sec)))
        lines.append(f"carrier {c}: {m.height} handoffs ({int((m['system'] == 'inter').sum())} inter-system) in the "
                     f"instance; in their seconds its subflow {draw.fmt(at['value'].mean(), 'bit/s')}, the other "
                     f"{draw.fmt(oth['value'].mean(), 'bit/s')} (all seconds: {draw.fmt(own['value'].mean(), 'bit/s')})")
        off = own.filter(pl.col("rat") != "LTE")
        if off.height:
            other_off = other.filter(pl.col("t_s").is_in(off["t_s"].to_list()))
            lines.append(f"carrier {c} off LTE {off.height} s: its subflow {draw.fmt(off['value'].mean(), 'bit/s')}, "
                         f"the other {draw.fmt(other_off['value'].mean(), 'bit/s')}")
    fig = draw.complementarity(data, carriers, f"a {r['instance_class']} instance")
    return Made(data=data, figure=fig, lab=lines)


def _single_path_states(inp: Inputs, radio: pl.DataFrame) -> pl.DataFrame:
    """Each second of each single-path flow of the instances with its carrier's RAT then (the
    last radio sample at or before it)."""
    inst, rates = inp.mptcp("instances"), inp.mptcp("rates")
    sp = rates.filter(pl.col("role") == "single_path").join(inst.select("result", "instance", "scenario", "t0"),
                                                           on=["result", "instance"], how="inner")
    sp = sp.with_columns(pl.Series("carrier", [carrier_of(s, p) for s, p in zip(sp["scenario"].to_list(),
                                                                                 sp["path"].to_list())], dtype=pl.String),
                         (pl.col("t0") + pl.col("t").cast(pl.Float64)).alias("ts"))
    parts = []
    for (result, instance, carrier), part in sp.group_by("result", "instance", "carrier"):
        log = radio.filter((pl.col("result") == result) & (pl.col("run_id") == instance)
                           & (pl.col("carrier") == carrier)).select("ts", "rat").sort("ts")
        if log.is_empty():
            continue
        parts.append(part.sort("ts").join_asof(log, on="ts", strategy="backward"))
    if not parts:
        raise Missing("radio.parquet beside the MPTCP instance tables: no log of a single-path flow's carrier")
    return pl.concat(parts).filter(pl.col("rat").is_not_null())


def s003_fig_8(inp: Inputs) -> Made:
    """Seed 003 Fig. 8 from the conjunction runs: a single-path flow's per-second throughput
    across its carrier's inter-system handoffs (LTE -> EDGE and back), and over every run the
    flows' mean rate per RAT of their carrier."""
    radio, hand = inp.beside_mptcp("radio"), inp.beside_mptcp("handoffs")
    if radio is None or hand is None:
        raise Missing("radio.parquet and handoffs.parquet beside the MPTCP instance tables: in no RESULTS directory given")
    inter = hand.filter(pl.col("system") == "inter")
    states = _single_path_states(inp, radio)
    crossed = (states.join(inter.select("result", pl.col("run_id").alias("instance"), "carrier").unique(),
                           on=["result", "instance", "carrier"], how="semi"))
    if crossed.is_empty():
        raise Missing("handoffs.parquet beside the MPTCP instance tables: no single-path flow's carrier made an "
                      "inter-system handoff")
    # the example: the first instance (by id) whose flow crossed one, all its seconds
    first = crossed.sort("instance").row(0, named=True)
    one = crossed.filter((pl.col("result") == first["result"]) & (pl.col("instance") == first["instance"])
                         & (pl.col("carrier") == first["carrier"])).sort("t")
    marks = inter.filter((pl.col("result") == first["result"]) & (pl.col("run_id") == first["instance"])
                         & (pl.col("carrier") == first["carrier"]))
    marks = marks.with_columns((pl.col("ts") - first["t0"]).alias("t_s")).filter(
        (pl.col("t_s") >= 0) & (pl.col("t_s") <= float(one["t"].max()) + 1))
    data = pl.concat([
        one.select("result", "instance", "carrier", pl.col("t").cast(pl.Float64).alias("t_s"), "rat",
                   pl.col("rate_bps").cast(pl.Float64).alias("value"), pl.lit("rate").alias("kind")),
        marks.select("result", pl.col("run_id").alias("instance"), "carrier", "t_s",
                     (pl.col("old_rat") + " -> " + pl.col("new_rat")).alias("rat"), pl.lit(None, dtype=pl.Float64).alias("value"),
                     pl.lit("inter-system handoff").alias("kind"))])
    per = (crossed.group_by("instance", "rat").agg(pl.col("rate_bps").mean().alias("rate"), pl.len().alias("s"))
           .group_by("rat").agg(pl.col("rate").mean(), pl.len().alias("n"), pl.col("s").sum()).sort("rat"))
    lines = [f"single path on carrier {first['carrier']} of {first['instance']}: "
             + ", ".join(f"{x['old_rat']} -> {x['new_rat']} at {x['t_s']:.1f} s" for x in marks.iter_rows(named=True))]
    lines += [f"on {x['rat']}: mean {draw.fmt(x['rate'], 'bit/s')} per second over {x['n']} flows ({x['s']} s)"
              for x in per.iter_rows(named=True)]
    fig = draw.rate_with_marks(one["t"].cast(pl.Float64).to_numpy(), one["rate_bps"].cast(pl.Float64).to_numpy(),
                               marks["t_s"].to_list(), f"single path on carrier {first['carrier']}",
                               "inter-system handoff", "throughput across inter-system handoffs")
    lines.append("the study's flows crossed no inter-system handoff: drawn from the conjunction runs' single-path "
                 "flows (carrier U's coverage hole is an EDGE cell in the scenario)")
    return Made(data=data, figure=fig, lab=lines)
