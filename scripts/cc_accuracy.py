"""How often `hsrtcp.passive.congestion` names a sender's congestion control rightly: a lab
campaign with known senders (root; the namespace testbed hsrtcp.testing.netbed).

Every run is one download whose server socket runs a known congestion control, captured at
the server (the sender) and at the client (the receiver); the inference runs on each capture
and is compared with the truth. Scenarios (router: tbf rate limit with its queue, nftables
random drops of data segments):

- ``queue20``: 20 Mbit/s, 50 ms queue, no random loss (losses are queue overflows), 12 s;
- ``queue20_loss``: the same with 0.3 % random data loss;
- ``queue5_loss``: 5 Mbit/s, 100 ms queue, 0.5 % random loss, 12 s;
- ``loss_only``: no rate limit, 1 % random loss (a path faster than the sender), 6 s;
- ``long10``: 10 Mbit/s, 50 ms queue, no random loss, 25 s (BBR's ProbeRTT has time to show).

Writes a summary CSV, one row per run and vantage (``docs/passive/cc_accuracy.csv`` by
default): the committed summary the docs' confusion matrix is computed from
(:func:`hsrtcp.passive.congestion.confusion`). Runs take about 10 minutes.

    sudo .venv/bin/python scripts/cc_accuracy.py [--reps 3] [--out docs/passive/cc_accuracy.csv]
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import tempfile
from pathlib import Path

import hsrtcp
from hsrtcp.passive import congestion
from hsrtcp.testing.netbed import Testbed

SCENARIOS = {
    "queue20": dict(rate_bps=20_000_000, rate_queue_s=0.05, p_data=0.0, duration=12.0),
    "queue20_loss": dict(rate_bps=20_000_000, rate_queue_s=0.05, p_data=0.003, duration=12.0),
    "queue5_loss": dict(rate_bps=5_000_000, rate_queue_s=0.10, p_data=0.005, duration=12.0),
    "loss_only": dict(rate_bps=None, rate_queue_s=0.05, p_data=0.01, duration=6.0),
    "long10": dict(rate_bps=10_000_000, rate_queue_s=0.05, p_data=0.0, duration=25.0),
}
ALGORITHMS = ("reno", "cubic", "bbr", "hsrbbr")
FIELDS = ["scenario", "algorithm", "truth", "rep", "vantage", "inferred", "reason", "episodes", "response_median",
          "probe_rtt_dips"]


def _one(scenario: str, cc: str, rep: int, work: Path) -> list[dict]:
    sc = dict(SCENARIOS[scenario])
    duration = sc.pop("duration")
    rate = sc.pop("rate_bps")
    kw = dict(rate_bps=rate, rate_window=(0, 1000)) if rate else {}
    with Testbed(cc=cc, p_data=sc["p_data"], rate_queue_s=sc["rate_queue_s"], workdir=work, **kw) as tb:
        name = f"{scenario}-{cc}-{rep}"
        run = tb.transfer(name, duration=duration, immediate=False)
    rows = []
    for vantage, path, near in (("sender", run.server_pcap, "server"), ("receiver", run.client_pcap, "client")):
        ds = hsrtcp.analyze([str(path)], vantage=near)  # as a user who knows where the tap was
        flows = ds.flows.sort("s2c_payload_bytes", descending=True).head(1)
        t = congestion.infer(flows, {flows["capture"][0]: path})
        r = t.row(0, named=True)
        rows.append({"scenario": scenario, "algorithm": cc, "truth": "bbr" if cc == "hsrbbr" else cc, "rep": rep, "vantage": vantage,
                     "inferred": r["congestion_control"], "reason": r["reason"], "episodes": r["episodes"],
                     "response_median": "" if r["response_median"] is None else f"{r['response_median']:.4f}",
                     "probe_rtt_dips": r["probe_rtt_dips"]})
        Path(path).unlink(missing_ok=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs/passive/cc_accuracy.csv")
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--algorithms", nargs="*", default=list(ALGORITHMS))
    a = ap.parse_args(argv)
    from hsrtcp.lab import ebpf

    algos = list(a.algorithms)
    rows: list[dict] = []
    work = Path(tempfile.mkdtemp(prefix="cc-accuracy-"))
    try:
        with ebpf.loaded([x for x in algos if ebpf.is_ebpf(x)]):
            for scenario in a.scenarios:
                for rep in range(a.reps):
                    for cc in algos:
                        got = _one(scenario, cc, rep, work)
                        rows += got
                        print(f"{scenario} {cc} rep {rep}: " + ", ".join(f"{g['vantage']} {g['inferred']}" for g in got),
                              file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {a.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
