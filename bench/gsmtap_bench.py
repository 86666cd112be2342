#!/usr/bin/env python3
"""GSMTAP radio-log benchmark (issue 33): reading a 1 M-message capture in bounded memory.

    .venv/bin/python bench/gsmtap_bench.py [--messages 1000000] [--rounds 3]
                                           [--out bench/results-gsmtap.json]

Input (built once into bench/work/, not committed): ``gsmtap-<N>.pcap``, a phone's LTE/EN-DC
signalling as SCAT/QCSuper write it, N GSMTAP datagrams at 20 messages/s (a 14-h trip for
1 M): a measurement report every 50 ms, and every 12 s a handover — alternately an intra-
and an inter-frequency LTE handover, with an SCG addition 3 s after the one and a release 3 s
after the other — each command followed by its completion. The messages are encoded once
with pycrate (hsrtcp.context.rrc builders) and repeated; the file is written from a
generator (flat memory).

Each round reads it with ``hsrtcp.context.read_radio(path, "gsmtap")`` in a fresh
interpreter (pycrate's load included) under ``/usr/bin/time -v``: wall time, user + system
CPU, peak RSS. The same read of a capture a tenth as long gives the RSS the reader needs
whatever the length: bounded memory means the two peaks differ by the tables (one row per
handoff and one per second of signalling), not by the messages. Also: the same capture
through ``tshark -n -q -r FILE -Y FILTER`` (a display filter on the handover fields, so
that tshark dissects every RRC message) for scale. The fastest round
counts; messages/s = N / wall.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / "work"
PY = ROOT / ".venv" / "bin" / "python"
T0 = 1714816800.0
RATE = 20.0         # messages per second
HO_EVERY_S = 12.0
TSHARK_FILTER = "lte-rrc.mobilityControlInfo_element || lte-rrc.nr_Config_r15"


def build(path: Path, n: int) -> dict:
    """Write the benchmark capture of ``n`` messages; returns what it holds."""
    sys.path.insert(0, str(ROOT / "python"))
    from hsrtcp.context import rrc
    from hsrtcp.context.gsmtap import gsmtap_v2, udp_ipv4, write_gsmtap

    def pkt(channel, payload, arfcn=1300):
        return udp_ipv4(gsmtap_v2(channel, payload, arfcn))

    reports = [pkt("UL_DCCH", rrc.lte_measurement_report(1, 30 + k, 18)) for k in range(16)]
    ho = {}
    for tid in range(4):
        ho[("intra", tid)] = pkt("DL_DCCH", rrc.lte_reconfiguration(tid, target_pci=100 + tid))
        ho[("inter", tid)] = pkt("DL_DCCH", rrc.lte_reconfiguration(tid, target_pci=200 + tid, target_earfcn=3050))
        ho[("add", tid)] = pkt("DL_DCCH", rrc.lte_reconfiguration(tid, scg=(500 + tid, 632628)))
        ho[("release", tid)] = pkt("DL_DCCH", rrc.lte_reconfiguration(tid, scg="release"))
        ho[("done", tid)] = pkt("UL_DCCH", rrc.lte_reconfiguration_complete(tid))
    events = {"handovers": 0, "scg_changes": 0}
    # where in each handoff period a reconfiguration falls: its kinds (even, odd periods),
    # the delay of its completion and what it counts as
    episodes = {0: (("intra", "inter"), 0.035, "handovers"),
                int(3 * RATE): (("add", "release"), 0.042, "scg_changes")}

    def messages():
        k, tid, step = 0, 0, int(HO_EVERY_S * RATE)
        while k < n:
            t = T0 + k / RATE
            episode = episodes.get(k % step)
            if episode and k + 1 < n:
                kinds, delay, counted = episode
                yield t, ho[(kinds[(k // step) % 2], tid)]
                yield t + delay, ho[("done", tid)]
                events[counted] += 1
                k += 2
                tid = (tid + 1) % 4
                continue
            yield t, reports[k % len(reports)]
            k += 1

    written = write_gsmtap(path, messages())
    return {"messages": written, "duration_s": round(n / RATE, 1), **events, "bytes": path.stat().st_size}


READER = """
import sys, time
t = time.perf_counter()
from hsrtcp.context.readers import read_radio
lg = read_radio(sys.argv[1], "gsmtap")
print(lg.handoffs.height, lg.frame.height, len(lg.warnings), round(time.perf_counter() - t, 3))
"""


def timed(cmd: list[str]) -> dict:
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {p.stderr[-2000:]}")
    info = dict(re.findall(r"^\s*(.+?): (.+)$", p.stderr, re.M))
    return {"wall_s": round(wall, 3), "cpu_s": round(float(info["User time (seconds)"])
                                                    + float(info["System time (seconds)"]), 3),
            "max_rss_mb": round(int(info["Maximum resident set size (kbytes)"]) / 1024, 1), "stdout": p.stdout.strip()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-tshark", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results-gsmtap.json")
    a = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    captures = {}
    for n in (a.messages // 10, a.messages):
        path = WORK / f"gsmtap-{n}.pcap"
        meta = path.with_suffix(".json")
        if not (path.exists() and meta.exists()):
            meta.write_text(json.dumps(build(path, n)))
        captures[n] = (path, json.loads(meta.read_text()))
    load0 = os.getloadavg()[0]
    runs: dict[str, list[dict]] = {}
    tshark = shutil.which("tshark") if not a.skip_tshark else None
    for _ in range(a.rounds):
        for n, (path, _) in captures.items():
            r = timed([str(PY), "-c", READER, str(path)])
            h, rows, warn, inner = r.pop("stdout").split()
            r.update(handoffs=int(h), radio_rows=int(rows), warnings=int(warn), read_s=float(inner))
            runs.setdefault(f"hsrtcp_{n}", []).append(r)
        if tshark:
            # the display filter makes tshark dissect every RRC message (lte-rrc, nested nr-rrc)
            r = timed([tshark, "-n", "-q", "-r", str(captures[a.messages][0]), "-Y", TSHARK_FILTER])
            r.pop("stdout")
            runs.setdefault("tshark", []).append(r)
    best = {k: min(v, key=lambda r: r["wall_s"]) for k, v in runs.items()}
    big, small = best[f"hsrtcp_{a.messages}"], best[f"hsrtcp_{a.messages // 10}"]
    out = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                 "load_1min": [round(load0, 2), round(os.getloadavg()[0], 2)]},
        "captures": {str(n): {"file": str(p.relative_to(ROOT)), **m} for n, (p, m) in captures.items()},
        "rounds": a.rounds,
        "best": best,
        "messages_per_s": round(a.messages / big["wall_s"]),
        "messages_per_cpu_s": round(a.messages / big["cpu_s"]),
        "rss_growth_mb_for_10x_messages": round(big["max_rss_mb"] - small["max_rss_mb"], 1),
        "all": runs,
    }
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: out[k] for k in ("messages_per_s", "messages_per_cpu_s", "rss_growth_mb_for_10x_messages")}
                     | {k: {x: v[x] for x in ("wall_s", "cpu_s", "max_rss_mb")} for k, v in best.items()}, indent=2))


if __name__ == "__main__":
    main()
