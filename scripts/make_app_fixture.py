"""Make tests/data/apps_loopback.pcap: real TLS and HTTP connections with chosen names, for the
application witness of `hsrtcp apps`.

On the loopback interface, while tcpdump records it (root):

- a TLS 1.3 connection (Python's ssl module, OpenSSL) to 127.0.0.1:8443 with server name
  ``rr3---sn-example.googlevideo.com``, one request and its answer;
- a TLS connection to 127.0.0.1:8444 with ``api.spotify.com``;
- an HTTP/1.1 request to 127.0.0.1:8080 with ``Host: www.wikipedia.org:8080``;
- a DNS answer (UDP from port 53, built with dpkt and sent over loopback) naming 127.0.0.2
  ``cdn.netflix.com``, then an HTTP connection to 127.0.0.2:8081 without a Host header.

The server certificate is self-signed for the names (generated here, never reused).

    .venv/bin/python scripts/make_app_fixture.py OUT.pcap
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import dpkt

from _selfsigned import self_signed  # scripts/ (this file's folder)

TLS = [(8443, "rr3---sn-example.googlevideo.com"), (8444, "api.spotify.com")]
HTTP_HOST = (8080, "www.wikipedia.org:8080")
DNS_NAMED = ("127.0.0.2", 8081, "cdn.netflix.com")


def _certificate(tmp: Path) -> tuple[Path, Path]:
    return self_signed(tmp, "hsrtcp app fixture", [n for _, n in TLS])


def _serve(sock: socket.socket, ctx: ssl.SSLContext | None) -> None:
    conn, _ = sock.accept()
    if ctx is not None:
        conn = ctx.wrap_socket(conn, server_side=True)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\nConnection: close\r\n\r\n" + b"x" * 2000)
    conn.close()


def _listen(addr: str, port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    return s


def _request(addr: str, port: int, host: str | None, server_name: str | None) -> None:
    c = socket.create_connection((addr, port))
    if server_name is not None:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        c = ctx.wrap_socket(c, server_hostname=server_name)
    head = b"GET / HTTP/1.1\r\n" + (f"Host: {host}\r\n".encode() if host else b"") + b"\r\n"
    c.sendall(head)
    while c.recv(4096):
        pass
    c.close()


def _dns_answer(name: str, addr: str) -> bytes:
    q = dpkt.dns.DNS.Q(name=name, type=dpkt.dns.DNS_A)
    rr = dpkt.dns.DNS.RR(name=name, type=dpkt.dns.DNS_A, ttl=60, rdata=socket.inet_aton(addr))
    return bytes(dpkt.dns.DNS(id=7, qr=dpkt.dns.DNS_R, opcode=0, rcode=0, qd=[q], an=[rr]))


def _run(cert: Path, key: Path) -> None:
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    # (port, Host, server TLS context, server name): the TLS connections, then plain HTTP
    exchanges = [(port, name, sctx, name) for port, name in TLS] + [(*HTTP_HOST, None, None)]
    for port, host, ctx, sni in exchanges:
        s = _listen("127.0.0.1", port)
        t = threading.Thread(target=_serve, args=(s, ctx))
        t.start()
        _request("127.0.0.1", port, host, sni)
        t.join()
        s.close()
    addr, port, name = DNS_NAMED
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 53))
    u.sendto(_dns_answer(name, addr), ("127.0.0.1", 5353))
    u.close()
    time.sleep(0.1)
    s = _listen(addr, port)
    t = threading.Thread(target=_serve, args=(s, None))
    t.start()
    _request(addr, port, None, None)
    t.join()
    s.close()


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "apps_loopback.pcap").resolve()
    with tempfile.TemporaryDirectory() as t:
        cert, key = _certificate(Path(t))
        raw = Path(t) / "raw.pcap"
        dump = subprocess.Popen(["tcpdump", "-i", "lo", "-s", "0", "-U", "-w", str(raw),
                                 "tcp port 8443 or tcp port 8444 or tcp port 8080 or tcp port 8081 or udp port 53"],
                                stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        try:
            _run(cert, key)
            time.sleep(0.5)
        finally:
            dump.terminate()
            dump.wait()
        os.replace(raw, out)
    os.chmod(out, 0o644)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
