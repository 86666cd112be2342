#!/usr/bin/env python3
"""Lab benchmark: does the emulated path carry 100 Mbit/s without loss nobody asked for?

Runs real kernel TCP (bbr) and then a UDP constant-bit-rate stream through a Rattan config
with 100 Mbit/s in each direction, 10 ms one-way delay, an unbounded queue and no loss cell,
with tcpdump on both ends (snaplen 128) as in every lab run. Prints:

- TCP goodput (client-side application bytes / time) and the IP-layer rate delivered at the
  phone in the steady state (seconds 2..end), from the capture;
- packets the server sent that never reached the phone (matched by 4-tuple, seq, ack, IP id
  and length): with no loss configured and an unbounded queue this must be 0;
- UDP: datagrams sent/received at the requested rate;
- tcpdump's own "dropped by kernel" counts (if non-zero, the capture, not the path, lost them);
- the server's TCP_INFO sampling interval under that load (target 10 ms).

Usage (root): ``python bench/lab_bench.py [--seconds 10] [--rate 100] [--udp-rate 95]``
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import dpkt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from hsrtcp import pcapio  # noqa: E402
from hsrtcp.lab import emulate  # noqa: E402

CONFIG = """
[env]
mode = "Isolated"
left_veth_count = 1

[cells.up_bw]
type = "Bw"
bandwidth = "{rate}Mbps"
queue = "Infinite"

[cells.up_delay]
type = "Delay"
delay = "10ms"

[cells.down_bw]
type = "Bw"
bandwidth = "{rate}Mbps"
queue = "Infinite"

[cells.down_delay]
type = "Delay"
delay = "10ms"

[links]
left = "up_bw"
up_bw = "up_delay"
up_delay = "right"
right = "down_bw"
down_bw = "down_delay"
down_delay = "left"
"""


class _Packet(NamedTuple):
    ts: float
    proto: int  # 6 TCP, 17 UDP
    src: str
    sport: int
    dst: str
    dport: int
    seq: int | None  # TCP only
    ack: int | None
    ip_id: int
    payload_len: int  # from the IP and L4 headers (the capture is cut at 128 bytes)
    ip_len: int


def _read(path: Path) -> list[_Packet]:
    """The IPv4 TCP and UDP packets of a lab capture (Ethernet on the veths). hsrtcp.pcapio
    decodes TCP only; this bench counts the UDP stream's datagrams too."""
    out = []
    for rec in pcapio.read_records(path):
        if rec.linktype != pcapio.LINKTYPE_ETHERNET:
            raise SystemExit(f"{path}: link type {rec.linktype}, not Ethernet")
        try:
            ip = dpkt.ethernet.Ethernet(rec.data).data
        except dpkt.UnpackError:
            continue
        if not isinstance(ip, dpkt.ip.IP) or ip.p not in (6, 17) or isinstance(ip.data, bytes):
            continue
        l4 = ip.data
        if ip.p == 6:
            payload, seq, ack = ip.len - 4 * ip.hl - 4 * l4.off, l4.seq, l4.ack
        else:
            payload, seq, ack = l4.ulen - 8, None, None
        out.append(_Packet(rec.ts_ns / 1e9, ip.p, socket.inet_ntoa(ip.src), l4.sport, socket.inet_ntoa(ip.dst),
                           l4.dport, seq, ack, ip.id, payload, ip.len))
    return out


def _missing(sent, received) -> tuple[int, int]:
    def key(p):
        return (p.src, p.sport, p.dst, p.dport, p.seq, p.ack, p.ip_id, p.payload_len, p.proto)

    got = Counter(key(p) for p in received if p.proto in (6, 17))
    n = lost = 0
    for p in sent:
        if p.proto not in (6, 17):
            continue
        n += 1
        k = key(p)
        if got[k]:
            got[k] -= 1
        else:
            lost += 1
    return lost, n


def _tcpdump_drops(run_dir: Path) -> dict:
    out = {}
    for f in (run_dir / "capture").glob("*.tcpdump.log"):
        text = f.read_text()
        for line in text.splitlines():
            if "dropped by kernel" in line:
                out[f.name.split(".")[0]] = int(line.split()[0])
    return out


def _run(cfg: Path, out_dir: Path, flow: dict, label: str) -> tuple[dict, list, list] | None:
    """One measured run of ``flow``: the client's result, the phone's and the server's
    packets; None (the errors printed) when the run failed."""
    out = emulate.run(cfg, out_dir, {"kind": "measure", "flow": flow})
    if out.errors:
        print(f"{label} run failed:", out.errors, file=sys.stderr)
        return None
    client = json.loads((out_dir / "client.json").read_text())[0]
    return client, _read(out_dir / "capture" / "phone_p1.pcap"), _read(out_dir / "capture" / "server.pcap")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=100, help="emulated bandwidth, Mbit/s")
    ap.add_argument("--udp-rate", type=float, default=95.0, help="UDP CBR rate, Mbit/s")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="hsrtcp-labbench-") as tmp:
        tmp = Path(tmp)
        cfg = tmp / "rattan.toml"
        cfg.write_text(CONFIG.format(rate=args.rate))

        tcp_dir = tmp / "tcp"
        tcp = _run(cfg, tcp_dir, {"type": "duration", "duration_s": args.seconds, "cc": "bbr"}, "TCP")
        if tcp is None:
            return 1
        client, phone, server = tcp
        t0 = pcapio.first_ip_time(tcp_dir / "capture" / "phone_p1.pcap")
        data = [p for p in phone if p.proto == 6 and p.sport == 5201 and p.payload_len]
        steady = [p for p in data if 2.0 <= p.ts - t0 < 2.0 + args.seconds - 3.0]
        span = steady[-1].ts - steady[0].ts if len(steady) > 1 else float("nan")
        ip_rate = sum(p.ip_len for p in steady) * 8 / span
        lost, n = _missing([p for p in server if p.sport == 5201], phone)
        lost_up, n_up = _missing([p for p in phone if p.dport == 5201], server)
        print(f"emulated path: {args.rate} Mbit/s each way, 10 ms one-way, unbounded queue, no loss cell")
        print(f"TCP bbr {args.seconds:g} s: goodput {client['goodput_bps'] / 1e6:.2f} Mbit/s; "
              f"IP-layer at the phone (steady {span:.1f} s) {ip_rate / 1e6:.2f} Mbit/s "
              f"= {100 * ip_rate / (args.rate * 1e6):.1f} % of the configured rate")
        print(f"TCP packets lost by the emulator: downlink {lost} of {n}, uplink {lost_up} of {n_up}; "
              f"tcpdump kernel drops {_tcpdump_drops(tcp_dir)}")
        import polars as pl

        ti = pl.read_csv(next((tcp_dir / "server" / "tcpinfo").glob("*.csv")))
        gaps = ti["ts"].diff().drop_nulls() * 1000
        print(f"TCP_INFO sampling under this load: {ti.height} samples, interval median {gaps.median():.2f} ms, "
              f"p99 {gaps.quantile(0.99):.2f} ms, max {gaps.max():.2f} ms (target 10 ms)")

        udp_dir = tmp / "udp"
        udp = _run(cfg, udp_dir, {"type": "udp", "duration_s": args.seconds, "rate_bps": args.udp_rate * 1e6,
                                  "payload_bytes": 1400}, "UDP")
        if udp is None:
            return 1
        u, phone, server = udp
        lost, n = _missing([p for p in server if p.proto == 17], phone)
        sent_rate = u["datagrams_sent"] * 1428 * 8 / args.seconds
        print(f"UDP CBR asked {args.udp_rate:g} Mbit/s, sent {sent_rate / 1e6:.2f} Mbit/s IP-layer: "
              f"{u['datagrams_received']} of {u['datagrams_sent']} datagrams arrived "
              f"(loss {100 * (u['loss_rate'] or 0):.3f} %); by capture {lost} of {n} missing; "
              f"tcpdump kernel drops {_tcpdump_drops(udp_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
