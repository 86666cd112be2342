"""Application breakdown (issue 36 item 3): which application each flow belongs to, from
what its packets carry within the snap length.

For every flow of an ``hsrtcp analyze`` results directory, in this order of preference:

1. ``tls_sni``: the server name of the TLS ClientHello the client sent (RFC 8446 §4.1.2,
   RFC 6066 §3), reassembled from its first data segments in sequence order (a ClientHello
   with post-quantum key shares spans two segments);
2. ``http_host``: the ``Host`` header of the client's first HTTP/1.x request;
3. ``dns``: a DNS answer in the same capture, before the flow's first packet, that gave the
   server's address (A/AAAA, the name asked; the latest such answer);
4. ``port``: the server port's well-known service (:data:`PORTS`), the last resort.

QUIC connections (UDP) are not flows of the engine; they get rows of their own (transport
``quic``, no flow id): the server name of the ClientHello in their client's Initial packets
(``quic_sni``; decrypted with the RFC 9001 keys, :mod:`hsrtcp.passive.quic`), else a DNS answer.

Names become classes through a name -> class map of domain suffixes (:data:`CLASSES`, or a
TOML/JSON file ``{"classes": {"suffix": "class", ...}, "ports": {"443": "web", ...}}``);
the longest matching suffix wins, an unmatched name is class ``other``.

Parsing: dpkt (a maintained library, already the witnesses' reader) decodes IP, TCP, UDP,
DNS and the TLS record layer; the ClientHello's extensions and the HTTP request line are read
here by their RFC layouts. Tunnels are opened as ``hsrtcp analyze`` opens them (GTP-U,
VXLAN, Geneve, GRE, ERSPAN II/III, MPLS, PPPoE, IP in IP), by :func:`inner_ip`, so a flow
seen inside GTP-U gets its application too. TLS Encrypted Client Hello hides the name (the
outer SNI, the provider's, is what is read), over TCP and QUIC alike.

Output: ``applications`` (flow_id, name, source, class) and ``application_breakdown``
(class: flows, bytes, shares). Schemas: docs/formats/applications.md.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import dpkt
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.passive import quic
from hsrtcp.passive.quic import client_hello_sni  # TLS over TCP and QUIC CRYPTO frames alike

SCHEMA_VERSION = 2
MANIFEST = ".hsrtcp-apps"
#: client bytes kept per flow to find a ClientHello or a request (two full segments and more)
KEEP_BYTES = 4096
KEEP_SEGMENTS = 8

#: well-known server ports, the last resort
PORTS = {80: "http", 8080: "http", 443: "https", 8443: "https", 53: "dns", 853: "dns-over-tls", 22: "ssh",
         21: "ftp", 25: "smtp", 587: "smtp", 993: "imaps", 995: "pop3s", 1935: "rtmp", 554: "rtsp",
         5201: "iperf3", 5001: "iperf", 3478: "stun", 5222: "xmpp", 1883: "mqtt", 8883: "mqtt"}
#: domain suffix -> class (the longest suffix wins); names of PORTS -> class for port-only flows
CLASSES = {
    "youtube.com": "video", "googlevideo.com": "video", "ytimg.com": "video", "netflix.com": "video",
    "nflxvideo.net": "video", "tiktok.com": "video", "tiktokcdn.com": "video", "iqiyi.com": "video",
    "youku.com": "video", "bilibili.com": "video", "douyin.com": "video", "twitch.tv": "video",
    "facebook.com": "social", "fbcdn.net": "social", "instagram.com": "social", "cdninstagram.com": "social",
    "twitter.com": "social", "x.com": "social", "weibo.com": "social", "wechat.com": "social",
    "weixin.qq.com": "social", "whatsapp.net": "messaging", "whatsapp.com": "messaging", "telegram.org": "messaging",
    "google.com": "web", "baidu.com": "web", "bing.com": "web", "wikipedia.org": "web",
    "apple.com": "software", "icloud.com": "cloud", "windowsupdate.com": "software", "amazonaws.com": "cloud",
    "dropbox.com": "cloud", "spotify.com": "audio", "scdn.co": "audio",
    "taobao.com": "shopping", "jd.com": "shopping", "amazon.com": "shopping",
    "http": "web", "https": "web", "dns": "dns", "dns-over-tls": "dns", "ssh": "remote", "iperf3": "measurement",
    "iperf": "measurement", "rtmp": "video", "rtsp": "video", "smtp": "mail", "imaps": "mail", "pop3s": "mail",
    "ftp": "file-transfer", "stun": "real-time", "xmpp": "messaging", "mqtt": "iot",
}

#: version 2 added QUIC conversations (transport "quic", flow_id null) and the columns that
#: identify a row without a flow id
APPS_SCHEMA = {"flow_id": pl.UInt64, "capture": pl.String, "transport": pl.String, "client_addr": pl.String,
               "client_port": pl.UInt16, "server_addr": pl.String, "server_port": pl.UInt16, "first_ts": pl.Float64,
               "bytes": pl.UInt64, "name": pl.String, "source": pl.String, "class": pl.String}
BREAKDOWN_SCHEMA = {"class": pl.String, "flows": pl.UInt64, "bytes": pl.UInt64, "flow_share": pl.Float64,
                    "byte_share": pl.Float64, "quic_flows": pl.UInt64}

_HTTP_METHODS = (b"GET ", b"POST ", b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS ", b"PATCH ", b"CONNECT ")


# --- tunnels --------------------------------------------------------------------------------

def _after_ethertype(d: bytes, off: int, et: int, depth: int) -> bytes | None:
    while et in (0x8100, 0x88A8, 0x9100) and len(d) >= off + 4:
        et, off = struct.unpack_from("!H", d, off + 2)[0], off + 4
    if et in (0x0800, 0x86DD):
        return _ip(d[off:], depth)
    if et in (0x8847, 0x8848):
        while len(d) >= off + 4:
            bottom = d[off + 2] & 1
            off += 4
            if bottom:
                break
        nib = d[off] >> 4 if len(d) > off else -1
        if nib in (4, 6):
            return _ip(d[off:], depth + 1)
        if nib == 0 and len(d) >= off + 18:  # pseudowire control word, Ethernet
            return _eth(d[off + 4:], depth + 1)
        return None
    if et == 0x8864 and len(d) >= off + 8:  # PPPoE session
        proto = struct.unpack_from("!H", d, off + 6)[0]
        return _ip(d[off + 8:], depth + 1) if proto in (0x21, 0x57) else None
    return None


def _eth(d: bytes, depth: int) -> bytes | None:
    if len(d) < 14 or depth > 8:
        return None
    return _after_ethertype(d, 14, struct.unpack_from("!H", d, 12)[0], depth)


def _ip(d: bytes, depth: int) -> bytes | None:
    """The innermost IP packet in ``d`` (an IP packet), tunnels opened; None when none."""
    if depth > 8 or not d:
        return None
    v = d[0] >> 4
    if v == 4 and len(d) >= 20:
        ihl = (d[0] & 15) * 4
        proto, frag, p = d[9], struct.unpack_from("!H", d, 6)[0] & 0x1FFF, ihl
    elif v == 6 and len(d) >= 40:
        proto, frag, p = d[6], 0, 40
        while proto in (0, 43, 60) and len(d) >= p + 2:
            proto, p = d[p], p + (d[p + 1] + 1) * 8
    else:
        return None
    if frag:
        return d
    if proto in (4, 41):
        return _ip(d[p:], depth + 1)
    if proto == 47 and len(d) >= p + 4:
        flags, et = struct.unpack_from("!HH", d, p)
        h = p + 4 + 4 * bool(flags & 0x8000) + 4 * bool(flags & 0x2000) + 4 * bool(flags & 0x1000)
        if flags & 7 == 1:
            h = p + 8 + 4 * bool(flags & 0x1000) + 4 * bool(flags & 0x0080)
            return _ip(d[h + (2 if d[h:h + 2] == b"\xff\x03" else 0) + 2:], depth + 1) if et == 0x880B else d
        if et == 0x88BE:
            return _eth(d[h + (8 if flags & 0x1000 else 0):], depth + 1)
        if et == 0x22EB and len(d) >= h + 12:
            return _eth(d[h + (20 if d[h + 11] & 1 else 12):], depth + 1)
        if et == 0x6558:
            return _eth(d[h:], depth + 1)
        if et in (0x0800, 0x86DD):
            return _ip(d[h:], depth + 1)
        if et in (0x8847, 0x8848):
            return _after_ethertype(d, h, et, depth + 1)
        return d
    if proto == 17 and len(d) >= p + 8:
        sport, dport = struct.unpack_from("!HH", d, p)
        u = p + 8
        if (sport == 2152 or dport == 2152) and len(d) >= u + 8 and d[u] >> 5 == 1 and d[u + 1] == 0xFF:
            g = u + 8
            if d[u] & 7 and len(d) >= u + 12:
                nxt, g = d[u + 11], u + 12
                while nxt and len(d) > g and d[g]:
                    g += d[g] * 4
                    nxt = d[g - 1]
            return _ip(d[g:], depth + 1)
        if dport == 4789 and len(d) >= u + 8:
            return _eth(d[u + 8:], depth + 1)
        if dport == 6081 and len(d) >= u + 8:
            g = u + 8 + (d[u] & 0x3F) * 4
            et = struct.unpack_from("!H", d, u + 2)[0]
            return _eth(d[g:], depth + 1) if et == 0x6558 else _ip(d[g:], depth + 1)
    return d


def inner_ip(linktype: int, data: bytes) -> bytes | None:
    """The innermost IP packet of a frame (link types Ethernet, Linux cooked v1/v2, raw IP,
    BSD loopback, PPP), tunnels opened."""
    if linktype == 1:
        return _eth(data, 0)
    if linktype == 113 and len(data) >= 16:
        return _after_ethertype(data, 16, struct.unpack_from("!H", data, 14)[0], 0)
    if linktype == 276 and len(data) >= 20:
        return _after_ethertype(data, 20, struct.unpack_from("!H", data, 0)[0], 0)
    if linktype in (12, 14, 101, 228, 229):
        return _ip(data, 0)
    if linktype in (0, 108) and len(data) >= 4:
        return _ip(data[4:], 0)
    if linktype in (9, 50) and len(data) >= 4:
        off = 2 if data[:2] == b"\xff\x03" else 0
        return _ip(data[off + 2:], 0)
    return None


# --- payload parsers ------------------------------------------------------------------------

def tls_sni(payload: bytes) -> str | None:
    """The server_name of a TLS ClientHello at the start of ``payload`` (None if it is not
    one, or is cut before the extension)."""
    if len(payload) < 6 or payload[0] != 0x16 or payload[1] != 3:
        return None
    # Records of one handshake message may follow each other: join their fragments.
    hs, i = b"", 0
    while i + 5 <= len(payload) and payload[i] == 0x16:
        n = struct.unpack_from("!H", payload, i + 3)[0]
        hs += payload[i + 5:i + 5 + n]
        i += 5 + n
    return client_hello_sni(hs)


def http_host(payload: bytes) -> str | None:
    """The Host header of an HTTP/1.x request at the start of ``payload``."""
    if not payload.startswith(_HTTP_METHODS):
        return None
    head = payload.split(b"\r\n\r\n", 1)[0]
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"host":
            host = v.strip().decode("ascii", "replace").lower()
            if host.startswith("["):  # [v6]:port
                return host[1:host.find("]")] if "]" in host else host
            return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return None


def dns_answers(payload: bytes) -> list[tuple[str, str]]:
    """(address, name asked) of every A/AAAA answer of a DNS response."""
    try:
        m = dpkt.dns.DNS(payload)
    except (dpkt.UnpackError, struct.error, IndexError):
        return []
    if m.qr != dpkt.dns.DNS_R or not m.qd:
        return []
    asked = m.qd[0].name.lower().rstrip(".")
    out = []
    for a in m.an:
        if a.type == dpkt.dns.DNS_A and len(a.rdata) == 4:
            out.append((".".join(str(b) for b in a.rdata), asked))
        elif a.type == dpkt.dns.DNS_AAAA and len(a.rdata) == 16:
            import ipaddress
            out.append((str(ipaddress.IPv6Address(a.rdata)), asked))
    return out


# --- the pass over a capture ----------------------------------------------------------------

@dataclass
class _Flow:
    flow_id: int
    first_ts: float
    last_ts: float
    client: tuple[str, int]
    segs: dict[int, bytes] = field(default_factory=dict)
    kept: int = 0


def address(b: bytes) -> str:
    import ipaddress
    return ".".join(str(x) for x in b) if len(b) == 4 else str(ipaddress.IPv6Address(b))


def _quic_datagram(convs: dict[tuple, quic.Conversation], ts: float, src: str, sport: int, dst: str, dport: int,
                   data: bytes) -> None:
    """Account one UDP datagram to its QUIC conversation; a client's first Initial that
    authenticates with the RFC 9001 keys starts one."""
    c = convs.get((src, sport, dst, dport))
    if c is None:
        c = convs.get((dst, dport, src, sport))
        if c is not None:  # from the server
            c.bytes += len(data)
            c.datagrams += 1
            c.last_ts = ts
            return
        first = quic.first_client_initial(data)
        if first is None:
            return
        version, dcid = first
        c = quic.Conversation((src, sport), (dst, dport), version, quic.client_initial_keys(version, dcid), ts, ts)
        c.add_client_initials(data)
        if not c.crypto and c.name is None:
            return  # did not decrypt: not a QUIC client's first flight
        convs[(src, sport, dst, dport)] = c
    elif not c.done:
        c.add_client_initials(data)
    c.bytes += len(data)
    c.datagrams += 1
    c.last_ts = ts


def ip_packets(path: str | os.PathLike):
    """(time, dpkt IP packet) of every record of a capture whose innermost IP packet decodes
    (tunnels opened by :func:`inner_ip`); the others are skipped."""
    from hsrtcp.pcapio import read_records

    for rec in read_records(path):
        ip = inner_ip(rec.linktype, rec.data)
        if ip is None:
            continue
        try:
            yield rec.ts, (dpkt.ip.IP(ip) if ip[0] >> 4 == 4 else dpkt.ip6.IP6(ip))
        except (dpkt.UnpackError, struct.error, IndexError):
            continue


def scan_capture(path: str | os.PathLike, flows: pl.DataFrame) -> tuple[dict[int, bytes], list[tuple[float, str, str]],
                                                                         list[quic.Conversation]]:
    """The first client bytes of every flow of ``flows`` (this capture's rows) in sequence
    order, every DNS answer (time, address, name) of the capture, and its QUIC
    conversations (hsrtcp.passive.quic)."""
    by_tuple: dict[tuple, list[_Flow]] = {}
    for r in flows.iter_rows(named=True):
        f = _Flow(r["flow_id"], r["first_ts"], r["last_ts"], (r["client_addr"], r["client_port"]))
        k = (r["client_addr"], r["client_port"], r["server_addr"], r["server_port"])
        by_tuple.setdefault(k, []).append(f)
    dns: list[tuple[float, str, str]] = []
    convs: dict[tuple, quic.Conversation] = {}
    for ts, pkt in ip_packets(path):
        l4 = pkt.data
        if isinstance(l4, dpkt.udp.UDP):
            if l4.sport == 53 and isinstance(l4.data, bytes):
                dns += [(ts, a, n) for a, n in dns_answers(l4.data)]
            elif isinstance(l4.data, bytes) and l4.data:
                _quic_datagram(convs, ts, address(pkt.src), l4.sport, address(pkt.dst), l4.dport, l4.data)
            continue
        if not isinstance(l4, dpkt.tcp.TCP) or not l4.data:
            continue
        cands = by_tuple.get((address(pkt.src), l4.sport, address(pkt.dst), l4.dport))
        if not cands:
            continue
        f = next((c for c in cands if c.first_ts - 1e-6 <= ts <= c.last_ts + 1e-6), None)
        if f is None or f.kept >= KEEP_BYTES or len(f.segs) >= KEEP_SEGMENTS or l4.seq in f.segs:
            continue
        f.segs[l4.seq] = bytes(l4.data)
        f.kept += len(l4.data)
    first_bytes = {}
    for fs in by_tuple.values():
        for f in fs:
            if f.segs:
                # sequence order from the lowest (mod 2^32: relative to the first seen)
                base = min(f.segs)
                first_bytes[f.flow_id] = b"".join(f.segs[s] for s in sorted(f.segs, key=lambda s: (s - base) % 2**32))
    return first_bytes, dns, list(convs.values())


def read_classes(path: str | os.PathLike | None) -> tuple[dict[str, str], dict[int, str]]:
    """The suffix -> class and port -> name maps (defaults, then the file's entries)."""
    classes, ports = dict(CLASSES), dict(PORTS)
    if path is None:
        return classes, ports
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the class map: {exc.strerror}") from None
    try:
        if str(path).endswith(".toml"):
            import tomllib
            cfg = tomllib.loads(text)
        else:
            cfg = json.loads(text)
        classes.update({str(k).lower().lstrip("."): str(v) for k, v in cfg.get("classes", {}).items()})
        ports.update({int(k): str(v) for k, v in cfg.get("ports", {}).items()})
    except (ValueError, AttributeError, TypeError) as exc:
        raise InputError(f"{path}: not a class map ({{\"classes\": {{suffix: class}}, \"ports\": {{port: name}}}}): {exc}") from None
    return classes, ports


def classify(name: str | None, classes: dict[str, str]) -> str:
    """The class of the longest suffix of ``name`` in ``classes`` ("other" without one)."""
    if not name:
        return "unknown"
    labels = name.lower().rstrip(".").split(".")
    for i in range(len(labels)):
        c = classes.get(".".join(labels[i:]))
        if c is not None:
            return c
    return "other"


def _dns_name(dns: list[tuple[float, str, str]], addr: str, first_ts: float) -> str | None:
    """The latest DNS answer naming ``addr`` before ``first_ts``."""
    hits = [n for t, a, n in dns if a == addr and t <= first_ts + 1e-6]
    return hits[-1] if hits else None


def applications(flows: pl.DataFrame, captures: dict[str, str | os.PathLike],
                 classes_file: str | os.PathLike | None = None) -> pl.DataFrame:
    """The applications table of ``flows`` (rows of the given captures: name -> path) and of
    the QUIC conversations of those captures."""
    classes, ports = read_classes(classes_file)
    rows = []
    for cap, path in captures.items():
        fl = flows.filter(pl.col("capture") == cap)
        first, dns, convs = scan_capture(path, fl)
        dns.sort()
        for r in fl.iter_rows(named=True):
            b = first.get(r["flow_id"], b"")
            name, source = tls_sni(b), "tls_sni"
            if name is None:
                name, source = http_host(b), "http_host"
            if name is None:
                name, source = _dns_name(dns, r["server_addr"], r["first_ts"]), "dns"
            if name is None and r["server_port"] in ports:
                name, source = ports[r["server_port"]], "port"
            rows.append((r["flow_id"], cap, "tcp", r["client_addr"], r["client_port"], r["server_addr"],
                         r["server_port"], r["first_ts"], r["c2s_payload_bytes"] + r["s2c_payload_bytes"],
                         name, source if name else None, classify(name, classes)))
        for c in convs:
            name, source = c.name, "quic_sni"
            if name is None:
                name, source = _dns_name(dns, c.server[0], c.first_ts), "dns"
            rows.append((None, cap, "quic", c.client[0], c.client[1], c.server[0], c.server[1], c.first_ts, c.bytes,
                         name, source if name else None, classify(name, classes)))
    return pl.DataFrame(rows, schema=APPS_SCHEMA, orient="row")


def breakdown(flows: pl.DataFrame, apps: pl.DataFrame) -> pl.DataFrame:
    """Flows (TCP flows and QUIC conversations) and bytes (both directions' payload) per
    class, with shares. ``flows`` is unused since version 2 (the bytes are in ``apps``); it
    stays for callers of version 1."""
    t = apps.group_by("class").agg(pl.len().cast(pl.UInt64).alias("flows"),
                                   pl.col("bytes").sum().cast(pl.UInt64).alias("bytes"),
                                   (pl.col("transport") == "quic").sum().cast(pl.UInt64).alias("quic_flows"))
    nf, nb = t["flows"].sum() or 0, t["bytes"].sum() or 0
    t = t.with_columns((pl.col("flows") / nf if nf else pl.lit(None)).cast(pl.Float64).alias("flow_share"),
                       (pl.col("bytes") / nb if nb else pl.lit(None)).cast(pl.Float64).alias("byte_share"))
    return t.sort(["bytes", "class"], descending=[True, False]).select(list(BREAKDOWN_SCHEMA))


def write(apps: pl.DataFrame, table: pl.DataFrame, out_dir: str | os.PathLike) -> list[Path]:
    from hsrtcp.output import OutputSet
    with OutputSet(out_dir, manifest=MANIFEST, replaces=frozenset()) as output:
        for name, df in (("applications", apps), ("application_breakdown", table)):
            with output.file(f"{name}.parquet") as p:
                df.write_parquet(p, metadata={"hsrtcp.schema": name, "hsrtcp.schema_version": str(SCHEMA_VERSION)})
        return [Path(p) for p in output.commit()]
