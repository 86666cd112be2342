"""A readable summary of the instance metrics (what ``hsrtcp mptcp`` prints)."""

from __future__ import annotations

import polars as pl


def _f(x, fmt="{:.2f}", none="–"):
    return none if x is None else fmt.format(x)


def _median(values: list[float]) -> float | None:
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def lines(frames: dict[str, pl.DataFrame]) -> list[str]:
    inst, paths = frames["instances"], frames["paths"]
    out = []
    for row in inst.iter_rows(named=True):
        sub = paths.filter(pl.col("instance") == row["instance"])
        if row["token"] is not None:
            sub = sub.filter(pl.col("token") == row["token"])
        out.append(f"{row['instance']}: U_c {_f(row['u_c'])}  U_t {_f(row['u_t'])}  "
                   f"class {row['instance_class'] or '–'}  MPTCP {_f(row['rate_mptcp_bps'] / 1e6, '{:.2f}')} Mbit/s  "
                   f"(subflows by {row['mapping']})")
        for p in sub.sort("path").iter_rows(named=True):
            deg = f"degraded at {p['degradation_onset_s']} s" if p["degraded"] else \
                ("no degradation" if p["degraded"] is not None else "degradation unknown")
            out.append(f"  path {p['path']} ({p['client_addr']}): R' {_f(p['rate_subflow_bps'] and p['rate_subflow_bps'] / 1e6)} "
                       f"R {_f(p['rate_single_path_bps'] and p['rate_single_path_bps'] / 1e6)} Mbit/s  "
                       f"R'/R {_f(p['subflow_utilization'])}  {deg}")
    if inst.height > 1:
        u_c = inst["u_c"].to_list()
        known = [x for x in u_c if x is not None]
        shares = inst.group_by("instance_class").len().sort("instance_class")
        out.append(f"{inst.height} instances: median U_c {_f(_median(u_c))}, median U_t {_f(_median(inst['u_t'].to_list()))}, "
                   f"P(U_c > 1) {_f(sum(x > 1 for x in known) / len(known) * 100 if known else None, '{:.0f}')} %; "
                   + ", ".join(f"{r['instance_class'] or 'unknown'} {r['len']}" for r in shares.iter_rows(named=True)))
    return out
