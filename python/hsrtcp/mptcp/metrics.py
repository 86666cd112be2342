"""Seed 004's instance metrics as polars frames and Parquet tables (docs/formats/mptcp-metrics.md).

:func:`instance_metrics` → ``{"instances", "paths", "kt", "rates"}``; :func:`write` stores
them as ``mptcp_<name>.parquet``. Every number is from the tables of the server capture (see
:mod:`hsrtcp.mptcp.sources`); definitions are in the modules named in each column's doc.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.mptcp import classes, kernel, kt, rates, roles, sources, utilization
from hsrtcp.mptcp.degradation import DegradationRule, detect, first_fall
from hsrtcp.schemas import (  # (defined there, below hsrtcp.results)
    MPTCP_CORE_COLUMNS as _CORE,
    MPTCP_INSTANCE_TYPES as _INSTANCE_TYPES,
    MPTCP_PATH_TYPES as _PATH_TYPES,
    MPTCP_KT_SCHEMA as _KT_SCHEMA,
    MPTCP_RATE_SCHEMA as _RATE_SCHEMA,
)

SCHEMA_VERSION = 1
TABLES = ("instances", "paths", "kt", "rates")


def _core_columns(inst: sources.Instance, token) -> dict:
    t = inst.tables.get("mptcp")
    out = {k: None for k in _CORE}
    if t is None or t.is_empty():
        return out
    if token is not None and "token" in t.columns:
        t = t.filter(pl.col("token") == token)
    if t.height != 1:
        return out
    for col, name in _CORE.items():
        if name in t.columns:
            out[col] = t[name][0]
    return out


def _single_path_rates(inst: sources.Instance, duration_s) -> dict[int, tuple[int, float | None]]:
    """path -> (flow_id, R_n) of the instance's single-path flows (the largest one per path)."""
    f = roles.assign(inst.flows).filter(pl.col("role") == "single_path")
    f = f.join(rates.average_rate(f, duration_s), on="flow_id").sort("rate_bps", descending=True, nulls_last=True)
    out = {}
    for row in f.iter_rows(named=True):
        out.setdefault(row["path"], (row["flow_id"], row["rate_bps"]))
    return out


def instance_metrics(results, baseline=None, *, barrier: float = classes.DEFAULT_BARRIER,
                     rule: DegradationRule = DegradationRule(), duration_s: float | None = None,
                     episode_gap_s: float = kt.DEFAULT_EPISODE_GAP_S,
                     min_bins: int = kt.DEFAULT_MIN_BINS) -> dict[str, pl.DataFrame]:
    """M29–M34 for every MPTCP instance of ``results`` (paths of bundles, campaign or results
    directories). Single-path rates R_n come from the instance itself (a ``conjunction`` run),
    or, with ``baseline``, from the i-th baseline instance for the i-th MPTCP instance (both in
    the order :func:`hsrtcp.mptcp.sources.load` gives); the baseline's seconds count from its
    own start."""
    if isinstance(results, (str, os.PathLike)):
        results = [results]
    insts = sources.load(results, duration_s)
    mptcp_insts = [i for i in insts if roles.assign(i.flows).filter(pl.col("role") == "subflow").height]
    if not mptcp_insts:
        raise InputError(f"{', '.join(map(str, results))}: no MPTCP connection (no flow with MPTCP options)")
    bases: list = [None] * len(mptcp_insts)
    if baseline:
        bases = sources.load([baseline] if isinstance(baseline, (str, os.PathLike)) else baseline, duration_s)
        if len(bases) != len(mptcp_insts):
            raise InputError(f"--baseline pairs instances by order: {len(mptcp_insts)} MPTCP instance(s) but "
                             f"{len(bases)} baseline instance(s)")
    out: dict[str, list] = {"instances": [], "paths": [], "kt": [], "rates": []}
    params = (barrier, rule, episode_gap_s, min_bins)
    for inst, base in zip(mptcp_insts, bases):
        _instance(inst, base, params, out)
    return {
        "instances": pl.DataFrame(out["instances"], schema_overrides=_INSTANCE_TYPES, infer_schema_length=None),
        "paths": pl.DataFrame(out["paths"], schema_overrides=_PATH_TYPES, infer_schema_length=None),
        "kt": pl.DataFrame(out["kt"], schema=_KT_SCHEMA) if out["kt"] else pl.DataFrame(schema=_KT_SCHEMA),
        "rates": (pl.concat(out["rates"], how="diagonal_relaxed").select(*_RATE_SCHEMA) if out["rates"]
                  else pl.DataFrame(schema=_RATE_SCHEMA)),
    }


class _Side:
    """One capture's flows of an instance (the MPTCP run, or its baseline) on its own clock."""

    def __init__(self, inst: sources.Instance, duration_s):
        self.inst = inst
        self.flows = roles.assign(inst.flows)
        self.t0 = rates.instance_start(self.flows)
        self.duration_s = duration_s

    def seconds(self, flow_ids: list[int]) -> dict[int, list[float]]:
        sec = rates.per_second(self.inst.series, self.flows.filter(pl.col("flow_id").is_in(flow_ids)), self.t0,
                               self.duration_s)
        self.last_rates = sec.join(self.flows.select("flow_id", "path", "role"), on="flow_id", how="left")
        return {k[0]: g.sort("t")["rate_bps"].to_list() for k, g in sec.group_by(["flow_id"])}

    def kt(self, flow_id, episode_gap_s, min_bins) -> list[dict]:
        return kt.intervals(self.inst.series, self.inst.events, flow_id, self.t0, episode_gap_s, min_bins)


def _instance(inst: sources.Instance, base: sources.Instance | None, params, out: dict) -> None:
    barrier, rule, episode_gap_s, min_bins = params
    dur = inst.duration_s
    mp = _Side(inst, dur)
    sp_side = _Side(base, base.duration_s) if base is not None else mp
    single = _single_path_rates(sp_side.inst, sp_side.duration_s)  # path -> (flow_id, R_n)
    sp_ids = [v[0] for v in single.values()]
    sp_secs = sp_side.seconds(sp_ids) if base is not None else {}
    subs = mp.flows.filter(pl.col("role") == "subflow")
    for (token,), sf in subs.group_by(["token"], maintain_order=True):
        sub_rate = dict(rates.average_rate(sf, dur).iter_rows())
        secs = mp.seconds(sf["flow_id"].to_list() + ([] if base is not None else sp_ids))
        rate_frames = [mp.last_rates] + ([sp_side.last_rates] if base is not None else [])
        sp_secs_here = sp_secs if base is not None else secs
        rows = []
        for row in sf.sort("subflow").iter_rows(named=True):
            p = row["path"]
            sp_id, sp_rate = single.get(p, (None, None))
            r_sub, r_sp = secs.get(row["flow_id"], []), sp_secs_here.get(sp_id, [])
            deg = detect(r_sub, r_sp, rule) if sp_id is not None else None
            fall = first_fall(r_sub, r_sp, rule) if sp_id is not None else None
            kt_sub = mp.kt(row["flow_id"], episode_gap_s, min_bins)
            kt_sp = sp_side.kt(sp_id, episode_gap_s, min_bins) if sp_id is not None else []
            for role, kt_rows in (("subflow", kt_sub), ("single_path", kt_sp)):
                out["kt"] += [{"instance": inst.instance, "token": token, "path": p, "role": role, **r}
                              for r in kt_rows]
            rp = sub_rate.get(row["flow_id"])
            rows.append({
                "instance": inst.instance, "token": token, "path": p, "subflow": row["subflow"],
                "client_addr": row["client_addr"], "subflow_flow_id": row["flow_id"],
                "single_path_flow_id": sp_id, "rate_subflow_bps": rp, "rate_single_path_bps": sp_rate,
                "subflow_utilization": utilization.subflow_utilization(rp, sp_rate),
                "degraded": None if sp_id is None else deg is not None,
                "degradation_onset_s": deg.onset_s if deg else None,
                "fall_onset_s": fall,
                "degradation_before_ratio": deg.before_ratio if deg else None,
                "degradation_drop_ratio": deg.drop_ratio if deg else None,
                "degradation_after_ratio": deg.after_ratio if deg else None,
                "k_t_subflow_mean": _mean([r["k_t"] for r in kt_sub]),
                "k_t_single_path_mean": _mean([r["k_t"] for r in kt_sp]),
                "loss_intervals_subflow": len(kt_sub),
            })
        out["paths"] += rows
        carriers = sorted(single)
        # a carrier the MPTCP connection has no subflow on contributes R'_n = 0; a subflow on a
        # carrier without a single-path rate leaves U_c and U_t unknown
        by_path: dict[int, float] = {}
        for r in rows:
            by_path[r["path"]] = by_path.get(r["path"], 0.0) + (r["rate_subflow_bps"] or 0.0)
        known = set(by_path) <= set(carriers)
        sub_all = [by_path.get(p, 0.0) for p in carriers]
        sp_all = [single[p][1] for p in carriers]
        u_c = utilization.conjunction_efficiency(sub_all, sp_all) if known else None
        u_t = utilization.total_utilization(sub_all, sp_all) if known else None
        degs = [r["degradation_onset_s"] for r in rows if r["degraded"]]
        sp_known = [r for r in sp_all if r is not None]
        out["instances"].append({
            "instance": inst.instance, "source": inst.source, "status": inst.meta("status"),
            "capture_error": "; ".join(inst.errors) or None,
            "scenario": inst.meta("scenario", "name"), "cc": inst.meta("cc"),
            "repetition": inst.meta("repetition"), "scenario_seed": inst.meta("seeds", "scenario"),
            "baseline": base.instance if base is not None else None,
            "token": token, "mapping": sf["mapping"][0], "t0": mp.t0, "duration_s": dur,
            "carriers": len(carriers), "subflows": sf.height,
            "rate_mptcp_bps": sum(by_path.values()),
            "rate_single_path_sum_bps": sum(sp_known) if sp_known else None,
            "rate_single_path_max_bps": max(sp_known, default=None),
            "u_c": u_c, "u_t": u_t, "barrier": barrier,
            "instance_class": classes.instance_class(u_c, u_t, barrier),
            "degraded_subflows": len(degs),
            "first_degradation_s": min(degs, default=None),
            **kernel.columns(inst.kernel), **_core_columns(inst, token),
        })
        out["rates"] += [rf.with_columns(instance=pl.lit(inst.instance), token=pl.lit(token, dtype=pl.Int64))
                         for rf in rate_frames]


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


#: The manifest of ``hsrtcp mptcp``'s files (docs/formats/output.md).
MANIFEST = "hsrtcp-manifest.mptcp.txt"


def write(frames: dict[str, pl.DataFrame], out_dir: str | os.PathLike) -> list[Path]:
    """``mptcp_<table>.parquet`` in ``out_dir``, with the schema version in the Parquet
    key-value metadata: all four or none (:class:`hsrtcp.output.OutputSet` with a manifest of
    its own, so the tables of a results directory it is written into are left alone).
    Raises :class:`hsrtcp.errors.OutputError` naming the file."""
    from hsrtcp.output import OutputSet

    with OutputSet(out_dir, manifest=MANIFEST, replaces=frozenset()) as output:
        for name in TABLES:
            with output.file(f"mptcp_{name}.parquet") as p:
                frames[name].write_parquet(p, metadata={"hsrtcp.schema": f"mptcp_{name}",
                                                        "hsrtcp.schema_version": str(SCHEMA_VERSION)})
        return [Path(p) for p in output.commit()]
