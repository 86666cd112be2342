"""Kernel witness of the study's timeouts (docs/study.md): per scenario of a campaign's runs,
the server sockets' TCP_INFO (tcpinfo.parquet, last sample of each connection) summed —
RTO expirations (total_rto), RTO recovery episodes (total_rto_recoveries) and the time spent
in them (total_rto_time, Linux >= 6.7), so total_rto_time / total_rto_recoveries is the
kernel's own mean timeout recovery duration beside M10.

Usage: python scripts/kernel_rto_by_scenario.py RUNS_DIR
"""
import json
import sys
from pathlib import Path

import polars as pl

rows = []
for b in sorted(Path(sys.argv[1]).glob("[0-9]*/")):
    tp = b / "tcpinfo.parquet"
    if not tp.exists():
        continue
    scen = json.loads((b / "manifest.json").read_text()).get("scenario") or b.name.split("_")[1]
    if isinstance(scen, dict):
        scen = scen.get("name")
    t = (pl.read_parquet(tp).sort("t_rel").group_by("flow_id")
         .agg(pl.col("total_rto").last(), pl.col("total_rto_recoveries").last(), pl.col("total_rto_time_s").last()))
    rows.append(t.with_columns(pl.lit(scen).alias("scenario"), pl.lit(b.name).alias("run")))
df = pl.concat(rows)
out = (df.group_by("scenario").agg(
    pl.len().alias("connections"),
    (pl.col("total_rto") > 0).sum().alias("connections_with_rto"),
    pl.col("total_rto").sum().alias("rto_expirations"),
    pl.col("total_rto_recoveries").sum().alias("rto_recoveries"),
    pl.col("total_rto_time_s").sum().alias("rto_time_s"))
    .with_columns((pl.col("rto_time_s") / pl.col("rto_recoveries")).alias("mean_recovery_s"))
    .sort("scenario"))
with pl.Config(tbl_cols=-1, tbl_width_chars=200):
    print(out)
