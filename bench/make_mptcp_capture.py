#!/usr/bin/env python3
"""Make the MPTCP benchmark capture: a real kernel MPTCP v1 bulk download over two subflows.

    sudo .venv/bin/python bench/make_mptcp_capture.py [--bytes N] [--rate R] [--force]

The testbed of the MPTCP fixtures (scripts/make_mptcp_fixtures.py: two namespaces joined by
two veth pairs, tbf on both ends of both paths, the client with a `subflow` endpoint on
path 2), with offloads switched off on the four veths (as bench/make_capture.py's testbed
does, so the capture shows MTU-sized segments, one DSS option each) and tcpdump -s 128 in
the client's namespace (`-i any`, Linux cooked v1: tcptrace reads v1, not v2). Writes bench/work/mptcp.pcap and
bench/work/mptcp.json (parameters, the kernel's MPTcpExt counters, tcpdump's drop count).
Does nothing if mptcp.pcap exists, unless --force.

Why: issue 20's performance target ("MPTCP captures stay within 10 % of the single-path
rate") needs an MPTCP input of a size comparable to bench/work/srv.pcap; the fixtures are
a few hundred packets. `bench/run.py --capture bench/work/mptcp.pcap --out
bench/results-mptcp.json` (a `make bench` line) measures it.

Completeness witness: tcpdump must report 0 packets dropped by the kernel and the client
must receive every byte; otherwise the script fails and removes the capture.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
AGENT = ROOT / "python" / "hsrtcp" / "testing" / "_agent.py"


def fixtures_module():
    """scripts/make_mptcp_fixtures.py (namespaces, paths, endpoints, counters): one testbed
    for the fixtures and the bench, not two copies."""
    spec = importlib.util.spec_from_file_location("make_mptcp_fixtures", ROOT / "scripts" / "make_mptcp_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=int, default=1_000_000_000,
                    help="bytes to download (default 1 GB: about 0.82 M packets in the client's capture, as many as srv.pcap)")
    ap.add_argument("--rate", default="250mbit", help="tbf rate of each path and direction")
    ap.add_argument("--force", action="store_true", help="remake even if bench/work/mptcp.pcap exists")
    a = ap.parse_args()

    import os
    if os.geteuid() != 0:
        print("make_mptcp_capture.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    pcap, meta_path = WORK / "mptcp.pcap", WORK / "mptcp.json"
    if pcap.exists() and not a.force:
        print(f"{pcap} exists; use --force to remake")
        return 0
    WORK.mkdir(parents=True, exist_ok=True)
    fx = fixtures_module()
    fx.setup(a.rate)
    # tbf needs a burst of a few ms of data at these rates (the fixtures' 16 kB is for 20 Mbit/s)
    for ns, side in ((fx.SRV, "s"), (fx.CLI, "c")):
        for p in (1, 2):
            fx.sh("tc", "qdisc", "replace", "dev", f"m{p}{side}", "root", "tbf", "rate", a.rate,
                  "burst", "256kb", "latency", "50ms", ns=ns)
    offloads = {}
    for ns, side in ((fx.SRV, "s"), (fx.CLI, "c")):
        out = fx.sh(sys.executable, str(AGENT), "offloads", f"m1{side}", f"m2{side}", ns=ns)
        offloads.update(json.loads(out))
    dump = None
    ok = False
    try:
        for ns in (fx.CLI, fx.SRV):
            fx.sh("nstat", "-n", ns=ns)
        dump = subprocess.Popen(["ip", "netns", "exec", fx.CLI, "tcpdump", "-i", "any", "-y", "LINUX_SLL", "-s", "128",
                                 "-B", "65536", "-w", str(pcap), f"tcp port {fx.PORT}"], stderr=subprocess.PIPE)
        for _ in range(10):
            line = dump.stderr.readline()
            if b"listening" in line or not line:
                break
        time.sleep(1.5)
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "srv.py").write_text(fx.SERVER)
            (Path(d) / "cli.py").write_text(fx.CLIENT)
            t0 = time.monotonic()
            srv = subprocess.Popen(["ip", "netns", "exec", fx.SRV, sys.executable, str(Path(d) / "srv.py"), str(a.bytes)],
                                   stdout=subprocess.PIPE, text=True)
            assert srv.stdout.readline().strip() == "ready"
            cli = subprocess.Popen(["ip", "netns", "exec", fx.CLI, sys.executable, str(Path(d) / "cli.py")],
                                   stdout=subprocess.PIPE, text=True)
            got = int(cli.communicate(timeout=900)[0].strip())
            srv.wait(timeout=30)
            seconds = time.monotonic() - t0
        time.sleep(0.5)
        dump.terminate()
        err = dump.communicate()[1].decode(errors="replace")
        m = re.search(r"(\d+) packets dropped by kernel", err)
        dropped = int(m.group(1)) if m else None
        meta = {"params": {"bytes": a.bytes, "rate": a.rate, "snaplen": 128}, "received_bytes": got,
                "seconds": seconds, "offloads_failed": offloads, "tcpdump": err.strip().splitlines()[-3:],
                "dropped_by_kernel": dropped, "nstat_client": fx.mptcp_counters(fx.CLI),
                "nstat_server": fx.mptcp_counters(fx.SRV),
                "command": "bench/make_mptcp_capture.py " + " ".join(sys.argv[1:])}
        meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        if got != a.bytes or dropped != 0:
            print(f"incomplete: received {got} of {a.bytes} bytes, tcpdump dropped {dropped}", file=sys.stderr)
            return 1
        ok = True
        print(f"{pcap}: {a.bytes} bytes in {seconds:.1f} s; {err.strip().splitlines()[-3:]}")
        return 0
    finally:
        if dump is not None and dump.poll() is None:
            dump.kill()
            dump.wait()
        fx.teardown()
        if not ok:
            pcap.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
