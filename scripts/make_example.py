#!/usr/bin/env python3
"""Make the demo's bundled example: a phone-side and a server-side capture of one real TCP
download, plus its ground truth (python/hsrtcp/examples/: phone.pcap, server.pcap,
truth.json, README.md).

    sudo .venv/bin/python scripts/make_example.py

The download runs through the namespace testbed (hsrtcp.testing.netbed) with cubic, random
data and pure-ACK drops in the router and a tbf rate limit that steps 16 → 3 → 12 Mbit/s, so
the per-second throughput has a visible dip. Drops are random: a re-run makes different
packets and rewrites truth.json and the README's numbers with them.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from hsrtcp.testing import truth as truth_mod  # noqa: E402
from hsrtcp.testing.netbed import Testbed, missing_requirements  # noqa: E402

OUT = ROOT / "python" / "hsrtcp" / "examples"
BED = {"cc": "cubic", "p_data": 0.005, "p_ack": 0.02,
       "rate_schedule": [(0.0, 16_000_000), (1.0, 3_000_000), (2.0, 12_000_000)],
       "rate_burst_bytes": 16_000, "rate_queue_s": 0.1}
XFER = {"nbytes": 4_000_000, "snaplen": 128}
KEYS = ("total_retrans", "retrans", "dsack_dups", "total_rto", "total_rto_recoveries", "rto", "rtt",
        "rttvar", "min_rtt", "snd_cwnd", "snd_mss", "segs_out", "segs_in", "data_segs_out",
        "bytes_sent", "bytes_retrans", "bytes_acked", "reord_seen")


def main() -> int:
    why = missing_requirements()
    if why:
        print(f"cannot make the example: {why}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        with Testbed(workdir=tmp, **BED) as bed:
            run = bed.transfer("example", **XFER)
        t = truth_mod.from_run(run)
        shutil.copyfile(run.client_pcap, OUT / "phone.pcap")
        shutil.copyfile(run.server_pcap, OUT / "server.pcap")
    info = run.tcp_info
    c = t.connections[0]
    doc = {
        "made_by": ".venv/bin/python scripts/make_example.py",
        "testbed": BED, "transfer": XFER, "sysctls": run.sysctls,
        "client": f"{run.client_addr}:{run.connections[0]['client_port']}",
        "server": f"{run.server_addr}:{run.server_port}",
        "tcp_info_server": {k: info.get(k) for k in KEYS},
        "tcp_info_units": "rto, rtt, rttvar, min_rtt in microseconds; bytes in bytes",
        "nft": run.nft,
        "truth": c.summary(),
        "duration_s": max(d.ts_sent for d in c.data) - min(d.ts_sent for d in c.data),
    }
    (OUT / "truth.json").write_text(json.dumps(doc, indent=1) + "\n")
    s = c.summary()
    readme = f"""# Bundled example

A phone-side and a server-side capture of one real Linux TCP download, for `hsrtcp demo`:

| file | what |
|---|---|
| `phone.pcap` | client ("phone") side, captured on the client's veth (receiver) |
| `server.pcap` | server side, captured on the server's veth (sender) |
| `truth.json` | parameters, the server socket's TCP_INFO, the router's drop counters, ground truth |

Made with `.venv/bin/python scripts/make_example.py` (root) on the namespace testbed
`hsrtcp.testing.netbed`: client 10.0.1.2 — router — server 10.0.2.2:5201, veth MTU 1500,
offloads off, kernel TCP with **cubic** (SACK, timestamps, window scaling on), tcpdump
`-s 128` at both ends. The server sends {XFER['nbytes']:,} bytes. In the router:
nftables drops server→client data segments with probability {BED['p_data']} and client→server
pure ACKs with probability {BED['p_ack']} (`numgen random`), and a tbf toward the client limits
the rate to 16 Mbit/s, then 3 Mbit/s from 1 s to 2 s, then 12 Mbit/s (burst
{BED['rate_burst_bytes']} B, queue {int(BED['rate_queue_s'] * 1000)} ms). Both captures use the
same host clock (no offset). The path has no added delay: the RTT is the tbf queueing delay.

Truth of this run (from `truth.json`; the data-loss and ACK-loss counts equal the router's
nft drop counters plus tbf queue drops, and retransmissions equal the kernel's
`tcpi_total_retrans`):

| quantity | value |
|---|---|
| data segments sent by the server (incl. retransmissions) | {s['data_sent']} |
| data segments lost (M8) | {s['data_lost']} (p_d = {s['p_data']:.4f}) |
| retransmissions at the sender | {s['data_retrans']} (TCP_INFO total_retrans {info['total_retrans']}) |
| spurious retransmissions (M12, any trigger) | {s['spurious_retrans']} |
| pure ACKs sent by the phone | {s['acks_sent']} |
| pure ACKs lost (M9) | {s['acks_lost']} (p_a = {s['p_ack']:.4f}) |
| nft drops data / ACK, tbf drops | {run.nft['data_dropped']} / {run.nft['ack_dropped']}, {run.nft['qdisc_dropped']} |
| TCP_INFO dsack_dups, total_rto | {info.get('dsack_dups')}, {info.get('total_rto')} |
| transfer duration at the server | {doc['duration_s']:.2f} s |
"""
    (OUT / "README.md").write_text(readme)
    print(json.dumps(s, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
