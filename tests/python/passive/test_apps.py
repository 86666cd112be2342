"""Issue 36 item 3: application names and classes.

Witness captures with known names: a real TLS ClientHello (OpenSSL's, made by Python's ssl
module for a chosen server name, in memory: no network), an HTTP request with a chosen Host,
a DNS answer in the same capture naming a server, and port-only flows; the same capture
inside GTP-U. The packets are built with dpkt and written with hsrtcp's pcap writer.
"""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path

import dpkt
import polars as pl
import pytest

import hsrtcp
from hsrtcp.passive import apps as a
from hsrtcp.testing import encap
from hsrtcp.testing.pcapio import write_pcap

from .common import cli, results_of

pytest.importorskip("hsrtcp._native")

PHONE = "10.45.0.7"
T0 = 1_700_000_000_000_000_000


def client_hello(server_name: str) -> bytes:
    """The ClientHello OpenSSL sends for ``server_name`` (TLS 1.2-1.3, SNI extension)."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    s = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        s.do_handshake()
    return outgoing.read()


def _ip4(a: str) -> bytes:
    return bytes(int(x) for x in a.split("."))


def tcp_frame(src, dst, sport, dport, seq, ack, flags, payload=b"") -> bytes:
    t = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=65535, data=payload)
    ip = dpkt.ip.IP(src=_ip4(src), dst=_ip4(dst), p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=t)
    ip.len = len(bytes(ip))
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))


def connection(server: str, sport: int, dport: int, t_ms: int, chunks: list[bytes]) -> list[tuple[int, bytes]]:
    """Handshake, the client's chunks as data segments, the server's ACKs."""
    S, A, SA = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK
    out, t = [], T0 + t_ms * 1_000_000
    out.append((t, tcp_frame(PHONE, server, sport, dport, 1000, 0, S)))
    out.append((t + 10_000_000, tcp_frame(server, PHONE, dport, sport, 5000, 1001, SA)))
    out.append((t + 11_000_000, tcp_frame(PHONE, server, sport, dport, 1001, 5001, A)))
    seq = 1001
    for i, c in enumerate(chunks):
        out.append((t + (12 + i) * 1_000_000, tcp_frame(PHONE, server, sport, dport, seq, 5001, A | dpkt.tcp.TH_PUSH, c)))
        seq += len(c)
    out.append((t + 40_000_000, tcp_frame(server, PHONE, dport, sport, 5001, seq, A, b"x" * 1000)))
    return out


def dns_answer(t_ms: int, name: str, addr: str) -> tuple[int, bytes]:
    q = dpkt.dns.DNS.Q(name=name, type=dpkt.dns.DNS_A)
    an = dpkt.dns.DNS.RR(name=name, type=dpkt.dns.DNS_A, ttl=60, rdata=_ip4(addr))
    m = dpkt.dns.DNS(id=7, qr=dpkt.dns.DNS_R, opcode=dpkt.dns.DNS_QUERY, rcode=dpkt.dns.DNS_RCODE_NOERR, qd=[q], an=[an])
    u = dpkt.udp.UDP(sport=53, dport=40000, data=bytes(m))
    u.ulen = len(bytes(u))
    ip = dpkt.ip.IP(src=_ip4("192.0.2.53"), dst=_ip4(PHONE), p=dpkt.ip.IP_PROTO_UDP, ttl=64, data=u)
    ip.len = len(bytes(ip))
    return T0 + t_ms * 1_000_000, bytes(dpkt.ethernet.Ethernet(src=b"\x04" * 6, dst=b"\x02" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    hello = client_hello("rr3---sn-5hne6nsk.googlevideo.com")
    assert len(hello) > 200
    frames = []
    # TLS: the ClientHello split in two segments (as a large one is), then another in one.
    frames += connection("142.250.1.1", 40001, 443, 0, [hello[:150], hello[150:]])
    frames += connection("157.240.1.1", 40002, 443, 100, [client_hello("scontent.cdninstagram.com")])
    # HTTP with a port in its Host header.
    frames += connection("198.51.100.80", 40003, 8080, 200,
                         [b"GET /wiki/Train HTTP/1.1\r\nHost: en.wikipedia.org:8080\r\nAccept: */*\r\n\r\n"])
    # A DNS answer, then an opaque flow to the address it gave; and one to an address it did
    # not give (only the port is known), and one before the answer came.
    frames += connection("198.51.100.7", 40009, 9000, 250, [b"\x00\x01opaque"])
    frames.append(dns_answer(300, "edge.cdn.example-video.test", "198.51.100.7"))
    frames += connection("198.51.100.7", 40004, 9000, 400, [b"\x00\x01opaque"])
    frames += connection("198.51.100.8", 40005, 5201, 500, [b"iperf3 cookie"])
    frames += connection("198.51.100.9", 40006, 7777, 600, [b"?"])
    frames.sort(key=lambda f: f[0])
    p = tmp_path_factory.mktemp("apps") / "apps.pcap"
    write_pcap(p, frames, nanosecond=True)
    return p


EXPECTED = {  # server port (client port) -> (name, source, class)
    40001: ("rr3---sn-5hne6nsk.googlevideo.com", "tls_sni", "video"),
    40002: ("scontent.cdninstagram.com", "tls_sni", "social"),
    40003: ("en.wikipedia.org", "http_host", "web"),
    40009: (None, None, "unknown"),
    40004: ("edge.cdn.example-video.test", "dns", "video"),
    40005: ("iperf3", "port", "measurement"),
    40006: (None, None, "unknown"),
}


def _check(flows: pl.DataFrame, table: pl.DataFrame):
    j = table.join(flows.select("flow_id", "client_port"), on="flow_id")
    got = {r["client_port"]: (r["name"], r["source"], r["class"]) for r in j.iter_rows(named=True)}
    assert got == EXPECTED


def test_names_sources_and_classes(capture, tmp_path):
    classes = tmp_path / "classes.json"
    classes.write_text(json.dumps({"classes": {"example-video.test": "video"}}))
    ds = hsrtcp.analyze([str(capture)])
    t = a.applications(ds.flows, {str(capture): capture}, classes)
    _check(ds.flows, t)
    # Without the file, the DNS name is known but its class is not.
    t = a.applications(ds.flows, {str(capture): capture})
    assert t.filter(pl.col("source") == "dns")["class"].to_list() == ["other"]
    b = a.breakdown(ds.flows, t)
    assert b["flows"].sum() == ds.flows.height
    assert b["flow_share"].sum() == pytest.approx(1.0) and b["byte_share"].sum() == pytest.approx(1.0)
    video = b.filter(pl.col("class") == "video").row(0, named=True)
    assert video["flows"] == 1


@pytest.mark.parametrize("kind", ["gtpu", "vxlan", "mpls"])
def test_the_same_inside_a_tunnel(capture, tmp_path, kind):
    w = tmp_path / f"{kind}.pcap"
    encap.wrap_capture(capture, w, kind, client=PHONE)
    ds = hsrtcp.analyze([str(w)])
    assert set(ds.flows["tunnel"]) == {encap.CHAIN[kind]}
    classes = tmp_path / "classes.toml"
    classes.write_text('[classes]\n"example-video.test" = "video"\n')
    _check(ds.flows, a.applications(ds.flows, {str(w): w}, classes))


def test_parsers_on_cut_and_foreign_bytes():
    hello = client_hello("a.example.org")
    assert a.tls_sni(hello) == "a.example.org"
    # Cut before the extensions, or not a handshake: no name, no exception.
    for cut in (5, 43, 80, len(hello) // 2):
        assert a.tls_sni(hello[:cut]) in (None, "a.example.org")
    assert a.tls_sni(b"\x17\x03\x03\x00\x10" + b"\0" * 16) is None
    assert a.http_host(b"POST /x HTTP/1.1\r\nhost: [2001:db8::1]:8080\r\n\r\n") == "2001:db8::1"
    assert a.http_host(b"HTTP/1.1 200 OK\r\nHost: x\r\n\r\n") is None
    assert a.dns_answers(b"\x00" * 5) == []
    assert a.classify("Video.Example.COM.", {"example.com": "web", "video.example.com": "video"}) == "video"


def test_cli(capture, tmp_path):
    out = results_of(capture, tmp_path / "res")
    p = cli("apps", out, capture, "-o", out)
    assert p.returncode == 0, p.stderr
    assert "7 flows, 5 named" in p.stdout
    t = pl.read_parquet(out / "applications.parquet")
    assert t.height == 7
    assert pl.read_parquet(out / "application_breakdown.parquet")["flows"].sum() == 7
    # The analysis's own tables are still there (the apps tables have their own manifest).
    assert (out / "flows.parquet").exists()
    p = cli("apps", out, tmp_path / "none.pcap")
    assert p.returncode == 3 and "none.pcap" in p.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    p = cli("apps", out, capture, "--classes", bad)
    assert p.returncode == 3 and "bad.json" in p.stderr


APPS_LOOPBACK = Path(__file__).resolve().parents[2] / "data" / "apps_loopback.pcap"


@pytest.mark.skipif(not __import__("hsrtcp.testing.peers", fromlist=["have"]).have("tshark"), reason="tshark needed")
def test_real_connections_named_as_tshark_reads_them(tmp_path):
    """tests/data/apps_loopback.pcap: real TLS (OpenSSL through Python's ssl) and HTTP connections
    over loopback with chosen names, and a DNS answer naming the server of a connection without
    a Host header (scripts/make_app_fixture.py). The names equal what tshark decodes, by server
    port; the DNS-named one equals tshark's dns.a answer."""
    out = subprocess.run(["tshark", "-r", str(APPS_LOOPBACK), "-T", "fields", "-E", "separator=;",
                          "-e", "tcp.dstport", "-e", "tls.handshake.extensions_server_name", "-e", "http.host",
                          "-e", "dns.qry.name", "-e", "dns.a", "-Y", "tls.handshake.type==1 or http.request or dns"],
                         capture_output=True, text=True, check=True).stdout
    theirs, dns = {}, {}
    for line in out.splitlines():
        port, sni, host, qname, a_rec = line.split(";")
        if sni or host:
            theirs[int(port)] = sni or host.rsplit(":", 1)[0]
        elif qname and a_rec:
            dns[a_rec] = qname
    ds = hsrtcp.analyze([str(APPS_LOOPBACK)])
    t = a.applications(ds.flows, {ds.flows["capture"][0]: APPS_LOOPBACK})
    ours = {r["server_port"]: (r["name"], r["source"]) for r in t.iter_rows(named=True)}
    assert {p: n for p, (n, s) in ours.items() if s in ("tls_sni", "http_host")} == theirs
    assert len(theirs) == 3
    dns_named = [r for r in t.iter_rows(named=True) if r["source"] == "dns"]
    assert [(r["server_addr"], r["name"]) for r in dns_named] == list(dns.items()) == [("127.0.0.2", "cdn.netflix.com")]
