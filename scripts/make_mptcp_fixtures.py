#!/usr/bin/env python3
"""Regenerate the MPTCP capture fixtures in tests/data/mptcp/ (and their README.md).

Run as root from the repository root:  .venv/bin/python scripts/make_mptcp_fixtures.py [NAME ...]

Each fixture is a real kernel MPTCP (RFC 8684 v1) download between two network namespaces
joined by two veth pairs (path 1: 10.31.1.1 <-> 10.31.1.2, path 2: 10.31.2.1 <-> 10.31.2.2),
each direction of each path shaped to `rate` by tbf on the server's side. The client has a
`subflow` endpoint on path 2 (`ip mptcp endpoint add 10.31.2.1 dev m2c subflow`), so the kernel
opens a second subflow; sockets are plain Python sockets with IPPROTO_MPTCP (262). tcpdump
-s 160 captures both paths in the client namespace (`-i any`, Linux cooked v2).

``block`` drops everything the server sends on path 2 (nftables in the server namespace)
from ``block[0]`` to ``block[1]`` seconds after the transfer starts: the subflow times out and
the kernel reinjects its unacknowledged data on path 1 (RFC 8684 §3.3.6). The JSON next to
each capture holds the parameters and the kernel's MPTcpExt counters (``nstat -az``) of both
namespaces after the transfer: the witness for reinjections (``MPTcpExtMPTCPRetrans``,
``MPTcpExtDuplicateData``) and joins (``MPTcpExtMPJoinSynRx``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "mptcp"
CMD = ".venv/bin/python scripts/make_mptcp_fixtures.py"
CLI, SRV = "hsmp-cli", "hsmp-srv"
PORT = 5201

FIXTURES: dict[str, tuple[dict, str]] = {
    "two_paths": (
        {"nbytes": 400_000, "rate": "20mbit", "block": None},
        "MPTCP v1 download over two subflows (MP_CAPABLE, MP_JOIN, DSS with 64-bit DSN and "
        "data ACK, DATA_FIN): grouping by token, per-subflow bytes and shares"),
    "reinject": (
        {"nbytes": 600_000, "rate": "20mbit", "block": [0.05, 0.6]},
        "path 2 blocked server->client from 0.05 s to 0.6 s: subflow 2 times out and its data "
        "is reinjected on subflow 1 (reinjections, reinjected bytes)"),
}

SERVER = textwrap.dedent("""
    import socket, sys
    n = int(sys.argv[1])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", %d)); s.listen(1)
    print("ready", flush=True)
    c, _ = s.accept()
    c.sendall(b"x" * n)
    c.shutdown(socket.SHUT_WR)
    while c.recv(65536):
        pass
    c.close()
""" % PORT)

CLIENT = textwrap.dedent("""
    import socket, time
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.connect(("10.31.1.2", %d))
    got = 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += len(b)
    time.sleep(0.05)
    s.close()
    print(got)
""" % PORT)


def sh(*cmd: str, ns: str | None = None, check: bool = True) -> str:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=check, capture_output=True, text=True).stdout


def teardown() -> None:
    for ns in (CLI, SRV):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def setup(rate: str) -> None:
    teardown()
    for ns in (CLI, SRV):
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("sysctl", "-qw", "net.mptcp.enabled=1", ns=ns)
    for p in (1, 2):
        sh("ip", "link", "add", f"m{p}c", "netns", CLI, "type", "veth", "peer", "name", f"m{p}s", "netns", SRV)
        sh("ip", "addr", "add", f"10.31.{p}.1/24", "dev", f"m{p}c", ns=CLI)
        sh("ip", "addr", "add", f"10.31.{p}.2/24", "dev", f"m{p}s", ns=SRV)
        sh("ip", "link", "set", f"m{p}c", "up", ns=CLI)
        sh("ip", "link", "set", f"m{p}s", "up", ns=SRV)
        sh("tc", "qdisc", "add", "dev", f"m{p}s", "root", "tbf", "rate", rate, "burst", "16kb", "latency", "100ms", ns=SRV)
        sh("tc", "qdisc", "add", "dev", f"m{p}c", "root", "tbf", "rate", rate, "burst", "16kb", "latency", "100ms", ns=CLI)
    sh("ip", "mptcp", "limits", "set", "subflow", "2", "add_addr_accepted", "2", ns=CLI)
    sh("ip", "mptcp", "limits", "set", "subflow", "2", "add_addr_accepted", "2", ns=SRV)
    sh("ip", "mptcp", "endpoint", "add", "10.31.2.1", "dev", "m2c", "subflow", ns=CLI)
    # (the kernel's retransmission timers: a blocked path must time out within the block)
    sh("nft", "add", "table", "inet", "hsmp", ns=SRV)
    sh("nft", "add", "chain", "inet", "hsmp", "out", "{ type filter hook output priority 0 ; }", ns=SRV)


def mptcp_counters(ns: str) -> dict[str, int]:
    out = sh("nstat", "-az", ns=ns)
    return {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if line.startswith("MPTcpExt")}


def make(name: str) -> None:
    params, _ = FIXTURES[name]
    setup(params["rate"])
    DATA.mkdir(parents=True, exist_ok=True)
    pcap = DATA / f"{name}.client.pcap"
    dump = None
    try:
        for ns in (CLI, SRV):
            sh("nstat", "-n", ns=ns)  # reset the counters' history
        dump = subprocess.Popen(["ip", "netns", "exec", CLI, "tcpdump", "-i", "any", "-s", "160", "-U", "-w", str(pcap),
                                 f"tcp port {PORT}"], stderr=subprocess.PIPE)
        # (wait for tcpdump to say it listens: its first start can take a second or more)
        for _ in range(10):
            line = dump.stderr.readline()
            if b"listening" in line or not line:
                break
        time.sleep(1.5)  # (and it still misses the first packets for a moment after saying so)
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "srv.py").write_text(SERVER)
            (Path(d) / "cli.py").write_text(CLIENT)
            srv = subprocess.Popen(["ip", "netns", "exec", SRV, sys.executable, str(Path(d) / "srv.py"), str(params["nbytes"])],
                                   stdout=subprocess.PIPE, text=True)
            assert srv.stdout.readline().strip() == "ready"
            cli = subprocess.Popen(["ip", "netns", "exec", CLI, sys.executable, str(Path(d) / "cli.py")],
                                   stdout=subprocess.PIPE, text=True)
            if params["block"]:
                t0, t1 = params["block"]
                time.sleep(t0)
                sh("nft", "add", "rule", "inet", "hsmp", "out", "ip", "daddr", "10.31.2.1", "counter", "drop", ns=SRV)
                time.sleep(t1 - t0)
                sh("nft", "flush", "chain", "inet", "hsmp", "out", ns=SRV)
            got = int(cli.communicate(timeout=60)[0].strip())
            srv.wait(timeout=10)
        time.sleep(0.5)
        dump.terminate()
        dump.wait()
        meta = {
            "name": name,
            "params": params,
            "received_bytes": got,
            "kernel": os.uname().release,
            "nstat_client": mptcp_counters(CLI),
            "nstat_server": mptcp_counters(SRV),
        }
        (DATA / f"{name}.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        assert got == params["nbytes"], (got, params)
    finally:
        if dump is not None and dump.poll() is None:
            dump.kill()
            dump.wait()
        teardown()


def readme() -> None:
    lines = [
        "# MPTCP fixtures",
        "",
        f"Made by `scripts/make_mptcp_fixtures.py` (root; `{CMD} [NAME]`): real kernel MPTCP v1",
        "(Linux 6.x) between two network namespaces over two veth pairs (10.31.1.0/24, 10.31.2.0/24),",
        "tbf-shaped, the client with a `subflow` endpoint on path 2; tcpdump -s 160 on both of the",
        "client's interfaces (`-i any`, Linux cooked v2). `NAME.json`: parameters and the kernel's",
        "MPTcpExt counters of both namespaces (`nstat -az`). Re-running changes the packets (keys,",
        "timing); the tests take their expected values from tshark's MPTCP analysis of the same",
        "files and from the JSON, never from constants.",
        "",
        "| file | parameters | exercises |",
        "|---|---|---|",
    ]
    for name, (params, what) in FIXTURES.items():
        for suffix in (".client.pcap", ".json"):
            if (DATA / (name + suffix)).exists():
                lines.append(f"| {name}{suffix} | {json.dumps(params)} | {what} |")
    lines.append("")
    (DATA / "README.md").write_text("\n".join(lines))


def main(argv: list[str]) -> int:
    if os.geteuid() != 0:
        print("make_mptcp_fixtures.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    for name in argv or list(FIXTURES):
        make(name)
        print(f"{name}: done")
    readme()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
