"""Compare congestion controls around handoff outages in lab bundles (docs/hsrbbr.md).

    python scripts/hsrbbr_compare.py RUNS_DIR [RUNS_DIR ...]

For every bundle (campaign run directory): the algorithm, the scenario seed, goodput (the
measure client's application bytes / data phase), and from `hsrtcp analyze` of the two
captures (server = sender vantage) the RTO counts, timeout-sequence duration (M10) and
spurious timeouts (M12). Per outage of the scenario's events.csv (ground truth), from the
phone capture: `util_2s` = data bytes that arrived in the 2 s after the outage's end / what
the scheduled capacity allowed in those 2 s, and `recovery_s` = time from the outage's end
until the first 300-ms window that delivers >= 80 % of its scheduled capacity (null if none
within 4 s). Arrivals are shifted back by the base one-way delay onto the emulator's clock.
Prints one line per bundle, then the per-algorithm means.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.lab.scenario import CompiledScenario
from hsrtcp.testing import pcapio


def capacity_bytes(seg: pl.DataFrame, a: float, b: float) -> float:
    s, e, bw = seg["t_start"].to_numpy(), seg["t_end"].to_numpy(), seg["bw_bps"].to_numpy().astype(float)
    ov = np.clip(np.minimum(e, b) - np.maximum(s, a), 0, None)
    return float((ov * bw).sum() / 8)


def outage_recovery(bundle: Path, flow_end: float) -> list[dict]:
    cs = CompiledScenario.open(bundle / "scenario")
    params = json.loads((bundle / "scenario" / "scenario.json").read_text())["params"]
    owd = params["link"]["base_owd_ms"] / 1000
    seg = cs.segments().filter((pl.col("path") == 1) & (pl.col("direction") == "down"))
    ev = cs.events().filter(pl.col("kind") == "outage")
    cap = bundle / "capture" / "phone_p1.pcap"
    t0 = pcapio.first_ip_time(cap)
    arr = np.array([(p.ts - t0 - owd, p.ip_len) for p in pcapio.read_tcp(cap) if p.sport == 5201 and p.payload_len])
    t, ln = arr[:, 0], arr[:, 1]
    out = []
    for a, b in zip(ev["t_start"], ev["t_end"]):
        if b + 2.0 > flow_end:
            continue
        got = ln[(t >= b) & (t < b + 2.0)].sum()
        rec = None
        for k in range(0, 40):
            x = b + 0.1 * k
            c = capacity_bytes(seg, x, x + 0.3)
            if c > 0 and ln[(t >= x) & (t < x + 0.3)].sum() >= 0.8 * c:
                rec = round(0.1 * k, 1)
                break
        out.append({"outage_s": round(b - a, 3), "util_2s": float(got / capacity_bytes(seg, b, b + 2.0)),
                    "recovery_s": rec})
    return out


def main(dirs: list[str]) -> None:
    rows = []
    for d in dirs:
        for bundle in sorted(Path(d).glob("[0-9]*_*")):
            man = json.loads((bundle / "manifest.json").read_text())
            if man.get("status") != "ok":
                print(f"{bundle.name}: status {man.get('status')}", file=sys.stderr)
                continue
            client = json.loads((bundle / "client.json").read_text())[0]
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(bundle), "-o", tmp],
                               check=True, capture_output=True)
                fl = pl.read_parquet(Path(tmp) / "flows.parquet").filter(pl.col("vantage") == "server").row(0, named=True)
            seed = json.loads((bundle / "scenario" / "scenario.json").read_text())["seed"]
            rec = outage_recovery(bundle, client["t_end"] - man["t0"])
            row = {"bundle": bundle.name, "cc": man["cc"], "seed": seed,
                   "goodput_mbps": client["goodput_bps"] / 1e6 if client.get("goodput_bps") else None,
                   "timeouts": fl["timeouts"], "timeout_sequences": fl["timeout_sequences"],
                   "timeout_duration_mean": fl["timeout_duration_mean"], "spurious": fl["spurious_timeouts"],
                   "retrans": fl["retransmissions"],
                   "util_2s": float(np.mean([r["util_2s"] for r in rec])) if rec else None,
                   "recovery_s": [r["recovery_s"] for r in rec], "outages_s": [r["outage_s"] for r in rec]}
            rows.append(row)
            print(json.dumps(row))
    df = pl.DataFrame([{k: v for k, v in r.items() if not isinstance(v, list)} for r in rows])
    print(df.group_by("cc").agg(pl.len().alias("runs"), pl.col("goodput_mbps").mean(), pl.col("timeouts").mean(),
                                pl.col("spurious").mean(), pl.col("timeout_duration_mean").mean(),
                                pl.col("util_2s").mean()).sort("cc"))


if __name__ == "__main__":
    main(sys.argv[1:])
