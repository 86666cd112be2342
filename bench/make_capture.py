#!/usr/bin/env python3
"""Make the benchmark capture: about one million packets of one real TCP bulk download.

    sudo .venv/bin/python bench/make_capture.py [--bytes N] [--p-data P] [--force]

Runs the namespace testbed (hsrtcp.testing.netbed: client — router — server, veth MTU 1500,
offloads off) with cubic, a pacing cap of 150 MB/s (SO_MAX_PACING_RATE, so tcpdump keeps up
on a small VM), optional tiny random data/ACK drops, and tcpdump -s 128 on both ends. Writes
bench/work/srv.pcap (server side, the single-capture benchmark input), bench/work/cli.pcap
(client side, for --pair) and bench/work/capture.json (parameters, TCP_INFO, nft counters,
packet counts). Does nothing if srv.pcap exists, unless --force.

Completeness witness: the server capture must hold exactly segs_out + segs_in + 1 packets of
the server socket's TCP_INFO (every packet the socket sent or received, plus the ACK of the
client's FIN sent from TIME_WAIT), and tcpdump must report
0 packets dropped by the kernel; otherwise the script fails and removes the files.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
sys.path.insert(0, str(ROOT / "python"))


def count_records(path: Path) -> int:
    """Number of records of a classic little-endian pcap, reading record headers only."""
    n = 0
    with open(path, "rb") as f:
        head = f.read(24)
        if struct.unpack("<I", head[:4])[0] not in (0xA1B2C3D4, 0xA1B23C4D):
            raise SystemExit(f"{path}: not a little-endian pcap")
        while True:
            h = f.read(16)
            if len(h) < 16:
                return n
            f.seek(struct.unpack_from("<I", h, 8)[0], 1)
            n += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=int, default=1_150_000_000,
                    help="bytes to download (default 1.15 GB ≈ 1.0 M packets at the server)")
    ap.add_argument("--p-data", type=float, default=0.0005, help="random data drop probability")
    ap.add_argument("--p-ack", type=float, default=0.001, help="random pure-ACK drop probability")
    ap.add_argument("--pacing", type=int, default=150_000_000, help="max pacing rate, bytes/s")
    ap.add_argument("--force", action="store_true", help="remake even if bench/work/srv.pcap exists")
    a = ap.parse_args()

    srv, cli = WORK / "srv.pcap", WORK / "cli.pcap"
    if srv.exists() and not a.force:
        print(f"{srv} exists ({count_records(srv):,} packets); use --force to remake")
        return 0
    from hsrtcp.testing.netbed import Testbed, missing_requirements

    why = missing_requirements()
    if why:
        print(f"cannot make the benchmark capture: {why}", file=sys.stderr)
        return 1
    WORK.mkdir(parents=True, exist_ok=True)
    with Testbed(p_data=a.p_data, p_ack=a.p_ack, cc="cubic", workdir=WORK) as bed:
        run = bed.transfer("bench", nbytes=a.bytes, max_pacing_rate=a.pacing, snaplen=128,
                           immediate=False, buffer_kib=131072, timeout_s=600)
    Path(run.server_pcap).replace(srv)
    Path(run.client_pcap).replace(cli)
    n_srv, n_cli = count_records(srv), count_records(cli)
    info = run.tcp_info
    # + 1: the server's ACK of the client's FIN leaves after the socket entered TIME_WAIT and is
    # not in segs_out (checked on every fixture by tests/python/testing/test_witness_truth.py)
    expected = info["segs_out"] + info["segs_in"] + 1
    meta = {"params": run.params, "tcp_info": info, "nft": run.nft, "capture_stats": run.capture_stats,
            "packets_server": n_srv, "packets_client": n_cli, "segs_out_plus_in": expected,
            "command": "bench/make_capture.py " + " ".join(sys.argv[1:])}
    (WORK / "capture.json").write_text(json.dumps(meta, indent=1) + "\n")
    if n_srv != expected:
        srv.unlink()
        cli.unlink()
        print(f"incomplete capture: {n_srv} packets at the server but TCP_INFO says {expected}; removed",
              file=sys.stderr)
        return 1
    print(f"{srv}: {n_srv:,} packets ({srv.stat().st_size / 1e6:.0f} MB); {cli}: {n_cli:,} packets; "
          f"total_retrans {info['total_retrans']}, nft drops data {run.nft['data_dropped']} ack {run.nft['ack_dropped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
