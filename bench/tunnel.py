#!/usr/bin/env python3
"""Cost of decapsulation (issue 36): the bench capture plain and wrapped in GTP-U, hsrtcp and
tcptrace in the same run.

    .venv/bin/python bench/tunnel.py [--repeat 11] [--out bench/results-gtpu.json]

Input: ``bench/work/srv.pcap`` (bench/make_capture.py) and ``bench/work/gtpu.pcap``, made from
it here when missing by :mod:`hsrtcp.testing.encap` (every IP packet inside Ethernet / IPv4 /
UDP 2152 / GTP-U with uplink and downlink TEIDs; 36 bytes more per record, the inner bytes
as captured). Rounds in which the tools take turns (load on the shared host falls on all
alike), each input read into the page cache before every run:

- ``hsrtcp analyze FILE -o OUT -q --no-plot`` on the plain and on the GTP-U capture;
Each run under a small launcher that reads the child's getrusage (CPU in microseconds;
``/usr/bin/time`` prints centiseconds, a tenth of the run).

- ``tcptrace -n -l -r srv.pcap`` (tcptrace opens no GTP-U: on gtpu.pcap it finds no TCP, so
  it runs on the plain capture, the same TCP packets).

Reported: fastest wall per tool, median CPU (user + system) per tool, the GTP-U/plain ratio
of hsrtcp's CPU median and of its fastest wall (the issue's bound: at most 1.10), hsrtcp on
GTP-U over tcptrace (speed, fastest against fastest), and the witness that both hsrtcp runs
wrote the same flows on every inner column.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as bench  # noqa: E402  (bench/run.py: measure, warm, count_records, hsrtcp_command)

WORK = HERE / "work"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--out", type=Path, default=HERE / "results-gtpu.json")
    a = ap.parse_args()
    plain, gtpu = WORK / "srv.pcap", WORK / "gtpu.pcap"
    if not plain.exists():
        print(f"{plain} missing: make it with bench/make_capture.py (root)", file=sys.stderr)
        return 1
    hs, env, why = bench.hsrtcp_command()
    if hs is None:
        print(why, file=sys.stderr)
        return 1
    if not gtpu.exists():
        sys.path.insert(0, str(HERE.parent / "python"))
        from hsrtcp.testing.encap import wrap_capture
        wrap_capture(plain, gtpu, "gtpu")
    # CPU times from getrusage (microseconds) rather than /usr/bin/time's centiseconds: the
    # difference measured is a few per cent of 0.1 s
    bench.TIME = "/nonexistent"
    packets = bench.count_records(plain)
    assert bench.count_records(gtpu) == packets
    runs: dict[str, list[dict]] = {"hsrtcp_plain": [], "hsrtcp_gtpu": [], "tcptrace_plain": []}
    with tempfile.TemporaryDirectory() as tmp:
        outs = {"hsrtcp_plain": Path(tmp) / "plain", "hsrtcp_gtpu": Path(tmp) / "gtpu"}
        jobs = {
            "hsrtcp_plain": ([*hs, "analyze", str(plain), "-o", str(outs["hsrtcp_plain"]), "-q", "--no-plot"], env, plain),
            "hsrtcp_gtpu": ([*hs, "analyze", str(gtpu), "-o", str(outs["hsrtcp_gtpu"]), "-q", "--no-plot"], env, gtpu),
            "tcptrace_plain": (["tcptrace", "-n", "-l", "-r", str(plain)], None, plain),
        }
        t0 = time.time()
        for r in range(a.repeat):
            # (the order turns each round so no tool always runs after the same one)
            names = list(jobs)
            names = names[r % 3:] + names[:r % 3]
            for name in names:
                cmd, e, inp = jobs[name]
                bench.warm([inp])
                m = bench.measure(cmd, env=e)
                if m["rc"] != 0:
                    print(f"{name} failed: {m['stderr_tail']}", file=sys.stderr)
                    return 1
                runs[name].append(m)
        import polars as pl
        drop = ["capture", "tunnel", "tunnel_client_addr", "tunnel_server_addr", "tunnel_id_c2s", "tunnel_id_s2c",
                "mpls_labels_c2s", "mpls_labels_s2c", "tunnel_changes"]
        fp = pl.read_parquet(outs["hsrtcp_plain"] / "flows.parquet").drop(drop).sort("flow_id")
        fg = pl.read_parquet(outs["hsrtcp_gtpu"] / "flows.parquet")
        same = fp.equals(fg.drop(drop).sort("flow_id"))
        tunnel = fg["tunnel"].to_list()
    summary = {}
    for name, ms in runs.items():
        cpu = [m["user_s"] + m["sys_s"] for m in ms]
        walls = [m["wall_s"] for m in ms]
        summary[name] = {"wall_fastest_s": min(walls), "wall_median_s": statistics.median(walls),
                         "cpu_median_s": statistics.median(cpu), "cpu_min_s": min(cpu),
                         "packets_per_s_fastest": packets / min(walls),
                         "max_rss_bytes": max(m["max_rss_bytes"] or 0 for m in ms),
                         "cpu_s": cpu, "wall_s": walls}
    s = summary
    res = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)), "repeat": a.repeat, "packets": packets,
        "load_average_start_end": None, "tools": s,
        "gtpu_over_plain_cpu_median": s["hsrtcp_gtpu"]["cpu_median_s"] / s["hsrtcp_plain"]["cpu_median_s"],
        "gtpu_over_plain_wall_fastest": s["hsrtcp_gtpu"]["wall_fastest_s"] / s["hsrtcp_plain"]["wall_fastest_s"],
        "hsrtcp_gtpu_over_tcptrace_speed": s["tcptrace_plain"]["wall_fastest_s"] / s["hsrtcp_gtpu"]["wall_fastest_s"],
        "hsrtcp_plain_over_tcptrace_speed": s["tcptrace_plain"]["wall_fastest_s"] / s["hsrtcp_plain"]["wall_fastest_s"],
        "witness_inner_flows_equal": same, "gtpu_flows_tunnel": tunnel,
    }
    try:
        res["load_average_start_end"] = open("/proc/loadavg").read().split()[:3]
    except OSError:
        pass
    a.out.write_text(json.dumps(res, indent=1) + "\n")
    for name, v in s.items():
        print(f"{name:<16} fastest {v['wall_fastest_s']:.3f} s ({v['packets_per_s_fastest'] / 1e6:.2f} M pkt/s), "
              f"CPU median {v['cpu_median_s']:.3f} s, peak RSS {v['max_rss_bytes'] / 1e6:.0f} MB")
    print(f"GTP-U / plain: CPU median {res['gtpu_over_plain_cpu_median']:.3f}, fastest wall "
          f"{res['gtpu_over_plain_wall_fastest']:.3f}; hsrtcp on GTP-U over tcptrace {res['hsrtcp_gtpu_over_tcptrace_speed']:.2f}x "
          f"(plain {res['hsrtcp_plain_over_tcptrace_speed']:.2f}x); inner flows equal: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
