"""What the audit reads: a run with both captures and whatever lab truth came with it.

A run is a lab run bundle (docs/formats/bundle.md: ``capture/phone_p1.pcap``,
``capture/server.pcap``, ``tcpinfo.parquet``, ``manifest.json``), a directory of bundles (a
campaign's output), or a testbed capture pair ``NAME.client.pcap`` + ``NAME.server.pcap``
(``.gz`` allowed) with an optional ``NAME.json`` beside it (tests/data/README.md: parameters,
TCP_INFO per connection, ``time_offset_s``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hsrtcp.bundle import file_sha256, has_manifest, manifest, run_bundles
from hsrtcp.errors import InputError
from hsrtcp.output import shown

SUFFIXES = (".client.pcap", ".client.pcap.gz")


@dataclass
class Run:
    name: str
    client_pcap: Path
    server_pcap: Path
    client_offset_s: float = 0.0  # phone clock − server clock
    rto_min_s: float = 0.2
    # client port -> tcpi_total_rto of each connection on it, in order (epoch 0, 1, …)
    kernel_rto: dict[int, list[int]] = field(default_factory=dict)
    # client port -> the TCP_INFO sampling windows (t_after, t_before, new RTOs) in which the
    # server socket's tcpi_total_rto grew (bundles: sampled every 10 ms); empty for pairs
    kernel_rto_windows: dict[int, list[tuple[float, float, int]]] = field(default_factory=dict)
    conditions: dict = field(default_factory=dict)
    bundle: Path | None = None  # the lab bundle (its events.csv and radio log: audit.radio)

    def hashes(self) -> dict[str, str]:
        return {"client_sha256": file_sha256(self.client_pcap), "server_sha256": file_sha256(self.server_pcap)}


def discover(paths: list[str | Path], errors: list[str] | None = None) -> list[Run]:
    """Every run named by ``paths`` (bundles, directories of bundles, capture pairs). A bundle
    of a campaign directory that cannot be audited (MPTCP, a capture missing) is appended to
    ``errors`` and left out when ``errors`` is given; anything else raises InputError."""
    runs: list[Run] = []
    for p in map(Path, paths):
        if p.is_dir() and has_manifest(p):
            runs.append(from_bundle(p))
        elif p.is_dir():
            found = run_bundles(p)
            if not found:
                raise InputError(f"{shown(p)}: neither a run bundle nor a directory of bundles "
                                 "(no manifest.json)")
            for d in found:
                try:
                    runs.append(from_bundle(d))
                except InputError as exc:
                    if errors is None:
                        raise
                    errors.append(f"{exc} (run left out)")
        elif p.is_file():
            runs.append(from_pair(p))
        else:
            raise InputError(f"{shown(p)}: no such file or directory")
    names = [r.name for r in runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"run given twice: {', '.join(dup)}")
    return runs


def from_pair(client: Path) -> Run:
    name = next((client.name[: -len(s)] for s in SUFFIXES if client.name.endswith(s)), None)
    if name is None:
        raise InputError(f"{shown(client)}: a capture pair is named by its phone side, "
                         "NAME.client.pcap (with NAME.server.pcap beside it)")
    server = next((client.parent / f"{name}{s.replace('client', 'server')}" for s in SUFFIXES
                   if (client.parent / f"{name}{s.replace('client', 'server')}").exists()), None)
    if server is None:
        raise InputError(f"{shown(client)}: no server capture {name}.server.pcap beside it")
    run = Run(name=name, client_pcap=client, server_pcap=server)
    meta_path = client.parent / f"{name}.json"
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{shown(meta_path)}: unreadable: {exc}") from None
        run.client_offset_s = float(meta.get("time_offset_s") or 0.0)
        for c in meta.get("connections") or []:
            ti = c.get("tcp_info") or {}
            if c.get("client_port") is not None and ti.get("total_rto") is not None:
                run.kernel_rto.setdefault(int(c["client_port"]), []).append(int(ti["total_rto"]))
        params = meta.get("params") or {}
        sysctls = params.get("sysctls") or {}
        run.conditions = {"scenario": name, "cc": params.get("cc"),
                          "p_data": params.get("p_data"), "p_ack": params.get("p_ack"),
                          "sack_sysctl": sysctls.get("tcp_sack"),
                          "timestamps_sysctl": sysctls.get("tcp_timestamps")}
    else:
        run.conditions = {"scenario": name}
    return run


def from_bundle(d: Path) -> Run:
    m = manifest(d)
    phones = (m.get("captures") or {}).get("phone") or ["capture/phone_p1.pcap"]
    if len(phones) != 1:
        raise InputError(f"{shown(d)}: {len(phones)} phone captures (MPTCP): the audit takes "
                         "single-path runs")
    client, server = d / phones[0], d / ((m.get("captures") or {}).get("server") or "capture/server.pcap")
    for f in (client, server):
        if not f.exists():
            raise InputError(f"{shown(f)}: missing from the bundle")
    run = Run(name=m.get("run_id") or d.name, client_pcap=client, server_pcap=server, bundle=d)
    variant = m.get("variant") or {}
    route = variant.get("route") or {}
    if route.get("rto_min_ms"):
        run.rto_min_s = float(route["rto_min_ms"]) / 1000
    run.kernel_rto, run.kernel_rto_windows = _bundle_kernel_rto(d)
    sysctls = ((m.get("sysctls") or {}).get("server") or {})
    run.conditions = {"scenario": (variant.get("scenario_label") or (m.get("scenario") or {}).get("name")),
                      "arm": variant.get("name"), "cc": m.get("cc"),
                      "sack_sysctl": _int(sysctls.get("net.ipv4.tcp_sack", sysctls.get("tcp_sack"))),
                      "timestamps_sysctl": _int(sysctls.get("net.ipv4.tcp_timestamps",
                                                            sysctls.get("tcp_timestamps")))}
    return run


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _bundle_kernel_rto(d: Path) -> tuple[dict[int, list[int]], dict[int, list[tuple[float, float, int]]]]:
    """Client port -> the last ``total_rto`` of its server socket, and the sampling windows in
    which it grew (client.json names each connection's flow_id and local address)."""
    try:
        clients = json.loads((d / "client.json").read_text())
    except (OSError, ValueError):
        return {}, {}
    out: dict[int, list[int]] = {}
    windows: dict[int, list[tuple[float, float, int]]] = {}
    for c in clients if isinstance(clients, list) else []:
        fid, local = c.get("flow_id"), c.get("local") or ""
        f = d / "tcpinfo" / f"{fid}.csv"
        if fid is None or ":" not in local or not f.exists():
            continue
        import csv

        with open(f, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("total_rto")]
        if rows:
            port = int(local.rsplit(":", 1)[1])
            # after accept: the SYN-ACK's timeouts (in the first sample) are not data RTOs
            out.setdefault(port, []).append(int(float(rows[-1]["total_rto"])) - int(float(rows[0]["total_rto"])))
            w = windows.setdefault(port, [])
            for a, b in zip(rows, rows[1:]):  # the first sample holds the SYN-ACK timeouts
                grew = int(float(b["total_rto"])) - int(float(a["total_rto"]))
                if grew > 0:
                    w.append((float(a["ts"]), float(b["ts"]), grew))
    return out, windows
