"""RTO counts of lab bundles against the kernel: per bundle with an RTO, the server socket's
TCP_INFO (tcpinfo.parquet: total_rto_recoveries, total_rto, summed over the run's
connections) beside the matched rows' rto_sequences and the server rows' timeout_sequences /
timeouts of `hsrtcp analyze` (docs/study.md, "The matcher's rto_sequences").

Usage: python scripts/compare_rto_counts.py RUNS_DIR[,RUNS_DIR...] PYTHONPATH OUT_DIR
(PYTHONPATH selects the hsrtcp build that analyzes; results are cached in OUT_DIR).
"""
import glob, os, subprocess, sys
import polars as pl
runs_dirs = sys.argv[1].split(",")
pypath = sys.argv[2]; outroot = sys.argv[3]
tot = dict(k_rec=0, k_rto=0, m_seq=0, e_seq=0, e_to=0)
for rd in runs_dirs:
    for b in sorted(glob.glob(rd + "/[0-9]*/")):
        tp = os.path.join(b, "tcpinfo.parquet")
        if not os.path.exists(tp):
            continue
        t = pl.read_parquet(tp).group_by("flow_id").agg(pl.col("total_rto").max(), pl.col("total_rto_recoveries").max())
        k_rec, k_rto = int(t["total_rto_recoveries"].sum()), int(t["total_rto"].sum())
        if k_rto == 0:
            continue
        out = os.path.join(outroot, os.path.basename(b.rstrip("/")) + "_" + os.path.basename(rd.rstrip("/").rsplit("/", 1)[0]))
        if not os.path.exists(os.path.join(out, "flows.parquet")):
            subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", b, "-o", out, "-q", "--no-plot"], check=True,
                           env=dict(os.environ, PYTHONPATH=pypath))
        f = pl.read_parquet(os.path.join(out, "flows.parquet"))
        m = f.filter(pl.col("vantage") == "matched")
        s = f.filter(pl.col("vantage") == "server")
        r = dict(k_rec=k_rec, k_rto=k_rto, m_seq=int(m["rto_sequences"].sum()), e_seq=int(s["timeout_sequences"].sum()),
                 e_to=int(s["timeouts"].sum()))
        for k in tot:
            tot[k] += r[k]
        print(os.path.basename(b.rstrip("/")), r)
print("TOTAL", tot)
