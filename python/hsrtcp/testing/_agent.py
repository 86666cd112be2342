"""Traffic endpoints and offload switch for the namespace testbed (standard library only).

Run inside a namespace with ``ip netns exec NS python _agent.py MODE ...``; it never imports
hsrtcp, so it works without the package being installed. Modes:

- ``offloads IFACE...``: switch off TSO, GSO, GRO, scatter-gather and checksum offload through
  the ethtool ioctl, so captures show real MTU-sized packets (no ethtool binary needed).
- ``serve``: listen, accept ``--conns`` connections, send ``--bytes`` (or for ``--duration``
  seconds) on each with the congestion control ``--cc`` (TCP_CONGESTION), close the sending
  side, wait for the peer's FIN, then record the socket's TCP_INFO. Prints one JSON document.
- ``fetch``: connect ``--conns`` times (sequentially or concurrently), read to EOF, optionally
  pausing (zero window with a small SO_RCVBUF), print one JSON document.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import socket
import struct
import sys
import threading
import time

TCP_CONGESTION = 13
TCP_INFO = 11
SO_MAX_PACING_RATE = 47

# struct tcp_info of linux/tcp.h as (name, offset, struct format). Fields are decoded only when
# the kernel returned enough bytes, so older kernels simply lack the newer keys.
_TCP_INFO_FIELDS = [
    ("state", 0, "B"), ("ca_state", 1, "B"), ("retransmits", 2, "B"), ("probes", 3, "B"),
    ("backoff", 4, "B"), ("options", 5, "B"),
    ("rto", 8, "I"), ("ato", 12, "I"), ("snd_mss", 16, "I"), ("rcv_mss", 20, "I"),
    ("unacked", 24, "I"), ("sacked", 28, "I"), ("lost", 32, "I"), ("retrans", 36, "I"),
    ("fackets", 40, "I"), ("last_data_sent", 44, "I"), ("last_ack_sent", 48, "I"),
    ("last_data_recv", 52, "I"), ("last_ack_recv", 56, "I"), ("pmtu", 60, "I"),
    ("rcv_ssthresh", 64, "I"), ("rtt", 68, "I"), ("rttvar", 72, "I"), ("snd_ssthresh", 76, "I"),
    ("snd_cwnd", 80, "I"), ("advmss", 84, "I"), ("reordering", 88, "I"), ("rcv_rtt", 92, "I"),
    ("rcv_space", 96, "I"), ("total_retrans", 100, "I"), ("pacing_rate", 104, "Q"),
    ("max_pacing_rate", 112, "Q"), ("bytes_acked", 120, "Q"), ("bytes_received", 128, "Q"),
    ("segs_out", 136, "I"), ("segs_in", 140, "I"), ("notsent_bytes", 144, "I"),
    ("min_rtt", 148, "I"), ("data_segs_in", 152, "I"), ("data_segs_out", 156, "I"),
    ("delivery_rate", 160, "Q"), ("busy_time", 168, "Q"), ("rwnd_limited", 176, "Q"),
    ("sndbuf_limited", 184, "Q"), ("delivered", 192, "I"), ("delivered_ce", 196, "I"),
    ("bytes_sent", 200, "Q"), ("bytes_retrans", 208, "Q"), ("dsack_dups", 216, "I"),
    ("reord_seen", 220, "I"), ("rcv_ooopack", 224, "I"), ("snd_wnd", 228, "I"),
    ("rcv_wnd", 232, "I"), ("rehash", 236, "I"), ("total_rto", 240, "H"),
    ("total_rto_recoveries", 242, "H"), ("total_rto_time", 244, "I"),
]


def tcp_info(sock: socket.socket) -> dict:
    """Decode getsockopt(TCP_INFO) into a dict with ``tcpi_`` names dropped.

    Units as the kernel reports them: rto, ato, rtt, rttvar, min_rtt in microseconds;
    pacing/delivery rates in bytes/s; byte counters in bytes.
    """
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 512)
    out = {"_len": len(raw)}
    for name, off, fmt in _TCP_INFO_FIELDS:
        size = struct.calcsize(fmt)
        if off + size <= len(raw):
            out[name] = struct.unpack_from("=" + fmt, raw, off)[0]
    out["snd_wscale"] = raw[6] & 0x0F
    out["rcv_wscale"] = raw[6] >> 4
    return out


# --- offloads ------------------------------------------------------------------------------

SIOCETHTOOL = 0x8946
# ethtool "set" commands taking struct ethtool_value {u32 cmd; u32 data;}
_ETHTOOL_SET = {"tso": 0x1F, "gso": 0x24, "gro": 0x2C, "sg": 0x19, "txcsum": 0x17, "rxcsum": 0x15}


def offloads_off(ifaces: list[str]) -> dict:
    """Switch off offloads with the legacy ethtool ioctls; report per interface what failed."""
    import array

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    report = {}
    for ifname in ifaces:
        failed = []
        for feat in ("tso", "gso", "gro", "sg", "txcsum", "rxcsum"):
            buf = array.array("B", struct.pack("=II", _ETHTOOL_SET[feat], 0))
            addr, _ = buf.buffer_info()
            ifreq = struct.pack("16sP", ifname.encode(), addr) + b"\0" * 16
            try:
                fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
            except OSError as exc:
                failed.append(f"{feat}: {exc.strerror}")
        report[ifname] = failed
    return report


# --- server --------------------------------------------------------------------------------


def _serve_one(conn: socket.socket, peer, args, results: list, lock: threading.Lock) -> None:
    chunk = b"\x5a" * 65536
    sent = 0
    t0 = time.monotonic()
    try:
        while True:
            if args.bytes is not None:
                todo = args.bytes - sent
                if todo <= 0:
                    break
                n = conn.send(chunk[: min(len(chunk), todo)])
            else:
                if time.monotonic() - t0 >= args.duration:
                    break
                n = conn.send(chunk)
            sent += n
        conn.shutdown(socket.SHUT_WR)
        # Wait for the peer's FIN: by then every byte we sent is acknowledged, so the
        # retransmission counters in TCP_INFO are final.
        conn.settimeout(args.drain_timeout)
        while conn.recv(65536):
            pass
        info = tcp_info(conn)
        err = None
    except OSError as exc:
        info = tcp_info(conn)
        err = f"{type(exc).__name__}: {exc}"
    local = conn.getsockname()
    cc = conn.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
    conn.close()
    with lock:
        results.append({
            "client_addr": peer[0], "client_port": peer[1], "server_addr": local[0],
            "server_port": local[1], "bytes_sent": sent, "cc": cc, "tcp_info": info,
            "t_start": t0, "error": err,
        })


def serve(args) -> int:
    family = socket.AF_INET6 if ":" in args.bind else socket.AF_INET
    ls = socket.socket(family, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Set on the listener so the handshake and every accepted socket use it (inherited).
    ls.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, args.cc.encode())
    if args.sndbuf:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
    ls.bind((args.bind, args.port))
    ls.listen(16)
    ls.settimeout(args.accept_timeout)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("ready\n")
    results: list = []
    lock = threading.Lock()
    threads = []
    try:
        for _ in range(args.conns):
            conn, peer = ls.accept()
            conn.settimeout(None)
            if args.max_pacing_rate:
                conn.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, args.max_pacing_rate)
            t = threading.Thread(target=_serve_one, args=(conn, peer, args, results, lock))
            t.start()
            threads.append(t)
    except socket.timeout:
        print(json.dumps({"error": "accept timeout", "connections": results}))
        return 1
    finally:
        for t in threads:
            t.join()
        ls.close()
    results.sort(key=lambda r: r["t_start"])
    print(json.dumps({"connections": results}))
    return 0


# --- client --------------------------------------------------------------------------------


def _fetch_one(args, idx: int, results: list, lock: threading.Lock) -> None:
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, args.cc.encode())
    if args.rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    if args.bind_port:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", args.bind_port))
    s.settimeout(args.timeout)
    t0 = time.monotonic()
    s.connect((args.host, args.port))
    got = 0
    paused = False
    err = None
    try:
        while True:
            if args.pause and not paused and got >= args.pause_after:
                time.sleep(args.pause)  # stop reading: the receive buffer fills, window → 0
                paused = True
            b = s.recv(65536)
            if not b:
                break
            got += len(b)
    except OSError as exc:
        err = f"{type(exc).__name__}: {exc}"
    info = tcp_info(s)
    local = s.getsockname()
    s.close()
    with lock:
        results.append({"index": idx, "client_port": local[1], "bytes_received": got,
                        "t_start": t0, "duration": time.monotonic() - t0, "tcp_info": info,
                        "error": err})


def fetch(args) -> int:
    results: list = []
    lock = threading.Lock()
    if args.ready_file:
        # started (interpreter up, imports done): the testbed's clock for the transfer starts
        # when it sees this, and it says go once its timers run
        with open(args.ready_file, "w") as f:
            f.write("ready\n")
        deadline = time.monotonic() + 60
        while args.go_file and not os.path.exists(args.go_file):
            if time.monotonic() > deadline:
                print("no go from the testbed within 60 s", file=sys.stderr)
                return 1
            time.sleep(0.001)
    if args.concurrent:
        threads = [threading.Thread(target=_fetch_one, args=(args, i, results, lock))
                   for i in range(args.conns)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for i in range(args.conns):
            _fetch_one(args, i, results, lock)
            if args.gap and i + 1 < args.conns:
                time.sleep(args.gap)
    results.sort(key=lambda r: r["index"])
    print(json.dumps({"connections": results}))
    return 0 if all(r["error"] is None for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="_agent")
    sub = p.add_subparsers(dest="mode", required=True)
    o = sub.add_parser("offloads")
    o.add_argument("ifaces", nargs="+")
    s = sub.add_parser("serve")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--bytes", type=int)
    s.add_argument("--duration", type=float)
    s.add_argument("--cc", required=True)
    s.add_argument("--conns", type=int, default=1)
    s.add_argument("--sndbuf", type=int)
    s.add_argument("--max-pacing-rate", type=int)
    s.add_argument("--ready-file")
    s.add_argument("--accept-timeout", type=float, default=30.0)
    s.add_argument("--drain-timeout", type=float, default=120.0)
    c = sub.add_parser("fetch")
    c.add_argument("--host", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--cc", required=True)
    c.add_argument("--conns", type=int, default=1)
    c.add_argument("--concurrent", action="store_true")
    c.add_argument("--gap", type=float, default=0.0)
    c.add_argument("--rcvbuf", type=int)
    c.add_argument("--bind-port", type=int)
    c.add_argument("--pause-after", type=int, default=0)
    c.add_argument("--pause", type=float, default=0.0)
    c.add_argument("--timeout", type=float, default=120.0)
    c.add_argument("--ready-file")
    c.add_argument("--go-file")
    a = p.parse_args(argv)
    if a.mode == "offloads":
        print(json.dumps(offloads_off(a.ifaces)))
        return 0
    if a.mode == "serve":
        if (a.bytes is None) == (a.duration is None):
            p.error("serve needs exactly one of --bytes and --duration")
        return serve(a)
    return fetch(a)


if __name__ == "__main__":
    sys.exit(main())
