"""Traffic generator: a measurement server and client with a one-line JSON control protocol.

Like the tool of the seed measurement studies, the *phone* (client) asks and the *server*
sends: downlink by default. Every connection carries exactly one flow:

1. the client connects (plain TCP, or MPTCP with ``socket(AF_INET, SOCK_STREAM, 262)``),
2. sends one request line (UTF-8 JSON, at most :data:`MAX_REQUEST_BYTES`, newline-terminated)::

       {"v": 1, "kind": "tcp", "direction": "down", "duration_s": 20, "size_bytes": null,
        "cc": "cubic", "label": "bulk", "quickack": false}

3. the server validates it as untrusted input (known keys only, bounded numbers, a
   congestion control the kernel offers) and answers one JSON line
   ``{"ok": true, "flow_id": "0003-bulk", ...}`` or ``{"ok": false, "error": "..."}``,
4. then the data phase: for ``direction = "down"`` the server writes ``size_bytes`` bytes or
   writes for ``duration_s`` seconds, then half-closes; the client reads to EOF. For
   ``"up"`` the roles swap and the server answers a final summary line.

``kind = "udp"`` asks for a constant-bit-rate UDP stream (``rate_bps``, ``duration_s``,
``payload_bytes``) sent to the client's own address (the peer of the control connection, so
the server cannot be used to flood a third party) on ``udp_port``; each datagram starts with
a sequence number and the send time so the client counts loss and one-way delay.

Flow *types* the client composes from these connections (:func:`run_client`): ``duration``
(one flow, default 180 s), ``size`` (one flow of N bytes: 50 KB, 64 KB, 2 MB in the seed
studies), ``sequence`` (N size-flows back to back), ``concurrent`` (N parallel flows),
``udp`` (CBR), ``conjunction`` (seed 004's instance on P carriers, for the lab's MPTCP runs:
one MPTCP duration flow over all paths and, at the same time, one single-path TCP duration
flow bound to each path's phone address ``10.1.<p>.1``, p = 1..``count``; see docs/mptcp.md).

The server sets the requested congestion control with ``TCP_CONGESTION`` on the accepted
socket before the first data byte (the kernel default here is bbr, so it is always set
explicitly) and samples ``TCP_INFO`` every 10 ms per flow (per subflow for MPTCP) into
``<out>/tcpinfo/<flow_id>.csv``; a line per finished flow goes to ``<out>/flows.jsonl``.
Resources are bounded: concurrent connections, request size and time, durations, sizes,
UDP rate; a bad request gets a clear error line and the connection is closed.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from hsrtcp import atomic
from hsrtcp.errors import InputError, LabError
from hsrtcp.lab import tcpinfo

PROTOCOL_VERSION = 1
DEFAULT_PORT = 5201
IPPROTO_MPTCP = 262
TCP_CONGESTION = 13
TCP_QUICKACK = 12
MAX_REQUEST_BYTES = 4096
REQUEST_TIMEOUT_S = 10.0
SAMPLE_INTERVAL_S = 0.010
_CHUNK = 64 * 1024
_LABEL_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_UDP_HEADER = struct.Struct("!Qd")  # sequence number, send time (epoch seconds)


#: How long a new connection may wait for a slot held by a flow that is just finishing.
SLOT_GRACE_S = 0.25


@dataclass(frozen=True)
class Limits:
    """What one server accepts. Every request is checked against these."""

    max_connections: int = 64
    max_duration_s: float = 3600.0
    max_size_bytes: int = 10 * 1000**3
    max_udp_rate_bps: float = 200e6
    max_payload_bytes: int = 1472
    drain_timeout_s: float = 15.0


def available_ccs() -> list[str]:
    """Congestion controls this kernel (namespace) offers, from procfs."""
    try:
        text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    except OSError:
        return ["reno", "cubic"]
    return text.split()


def parse_size(text: str | int) -> int:
    """``"50KB"`` → 50000, ``"64KiB"`` → 65536, ``"2MB"`` → 2000000, ``123`` → 123 (bytes).

    SI prefixes are decimal (K = 1000); binary ones are spelled KiB/MiB/GiB.
    """
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?)?B?\s*", str(text), re.IGNORECASE)
        if not m:
            raise InputError(f"not a size: {text!r} (examples: 50KB, 64KiB, 2MB, 1000)")
        mult = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "ki": 1024, "mi": 1024**2, "gi": 1024**3}
        value = int(float(m.group(1)) * mult[(m.group(2) or "").lower()])
    if value <= 0:
        raise InputError(f"size must be positive: {text!r}")
    return value


# --------------------------------------------------------------------------- requests


_REQUEST_KEYS = {
    "v", "kind", "direction", "duration_s", "size_bytes", "cc", "label", "quickack",
    "rate_bps", "udp_port", "payload_bytes",
}


def validate_request(req: object, limits: Limits, ccs: list[str]) -> dict:
    """Check an untrusted request; return it normalised or raise :class:`ValueError`."""
    if not isinstance(req, dict):
        raise ValueError("request must be a JSON object")
    unknown = set(req) - _REQUEST_KEYS
    if unknown:
        raise ValueError(f"unknown request keys: {sorted(unknown)}")
    if req.get("v") != PROTOCOL_VERSION:
        raise ValueError(f"protocol version must be {PROTOCOL_VERSION}")
    kind = req.get("kind", "tcp")
    if kind not in ("tcp", "udp"):
        raise ValueError("kind must be 'tcp' or 'udp'")
    label = req.get("label", "flow")
    if not isinstance(label, str) or not _LABEL_RE.match(label):
        raise ValueError("label must match [A-Za-z0-9_.-]{1,64}")

    def number(key: str, lo: float, hi: float, integer: bool = False):
        v = req.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
            raise ValueError(f"{key} must be a {'whole ' if integer else ''}number")
        if not (lo <= v <= hi) or v != v:
            raise ValueError(f"{key} must be within [{lo}, {hi}], got {v}")
        return v

    duration = number("duration_s", 0.001, limits.max_duration_s)
    out = {"v": PROTOCOL_VERSION, "kind": kind, "label": label, "duration_s": duration}
    if kind == "tcp":
        size = number("size_bytes", 1, limits.max_size_bytes, integer=True)
        if (duration is None) == (size is None):
            raise ValueError("give exactly one of duration_s and size_bytes")
        direction = req.get("direction", "down")
        if direction not in ("down", "up"):
            raise ValueError("direction must be 'down' or 'up'")
        cc = req.get("cc")
        if cc is not None and (not isinstance(cc, str) or cc not in ccs):
            raise ValueError(f"cc must be one of {ccs}")
        quickack = req.get("quickack", False)
        if not isinstance(quickack, bool):
            raise ValueError("quickack must be true or false")
        out.update(size_bytes=size, direction=direction, cc=cc, quickack=quickack)
    else:
        if duration is None:
            raise ValueError("udp needs duration_s")
        rate = number("rate_bps", 1e3, limits.max_udp_rate_bps)
        port = number("udp_port", 1, 65535, integer=True)
        payload = number("payload_bytes", _UDP_HEADER.size, limits.max_payload_bytes, integer=True)
        if rate is None or port is None:
            raise ValueError("udp needs rate_bps and udp_port")
        out.update(rate_bps=float(rate), udp_port=port, payload_bytes=payload or 1200)
    return out


# --------------------------------------------------------------------------- server


@dataclass
class _Flow:
    flow_id: str
    sock: socket.socket
    mptcp: bool
    writer: csv.writer
    fh: object
    t_start: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False


class Server:
    """Threaded measurement server. Use :meth:`serve_forever`; stop with :meth:`stop`.

    ``out`` receives ``tcpinfo/<flow_id>.csv`` (one row per 10-ms sample: ``ts`` epoch
    seconds, ``t_rel`` seconds since the flow was accepted, ``subflow`` index for MPTCP or
    empty, then :data:`hsrtcp.lab.tcpinfo.COLUMNS`) and ``flows.jsonl``.
    """

    def __init__(self, host: str = "0.0.0.0", port: int = DEFAULT_PORT, out: Path | str = ".",
                 limits: Limits = Limits(), mptcp: bool = True, sample_interval_s: float = SAMPLE_INTERVAL_S,
                 ready_file: Path | str | None = None, max_flows: int | None = None):
        self.limits = limits
        self.out = Path(out)
        (self.out / "tcpinfo").mkdir(parents=True, exist_ok=True)
        self.sample_interval_s = sample_interval_s
        self.ccs = available_ccs()
        self.max_flows = max_flows
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self._flows: dict[str, _Flow] = {}
        self._flows_lock = threading.Lock()
        self._counter = 0
        self._served = 0
        self._log_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.mptcp = False
        sock = None
        if mptcp:
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
                self.mptcp = True  # an MPTCP listener also accepts plain TCP clients
            except OSError:
                sock = None
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise LabError(f"measure server cannot listen on {host}:{port}: {exc.strerror}") from exc
        sock.listen(128)
        sock.settimeout(0.2)
        self.sock = sock
        self.address = sock.getsockname()
        if ready_file:
            atomic.write_text(ready_file, json.dumps({"host": self.address[0], "port": self.address[1],
                                                      "pid": os.getpid()}))

    # -- lifecycle
    def stop(self) -> None:
        self._stop.set()

    def serve_forever(self) -> None:
        sampler = threading.Thread(target=self._sample_loop, name="tcpinfo-sampler", daemon=True)
        sampler.start()
        try:
            while not self._stop.is_set():
                try:
                    conn, peer = self.sock.accept()
                except TimeoutError:
                    continue
                except OSError:
                    if self._stop.is_set():
                        break
                    raise
                # A short grace: a client running flows back to back connects again the
                # moment it sees EOF, while the previous flow's handler is still closing.
                if not self._slots.acquire(timeout=SLOT_GRACE_S):
                    self._reject(conn, "server busy: too many connections")
                    continue
                t = threading.Thread(target=self._handle, args=(conn, peer), daemon=True)
                self._threads.append(t)
                t.start()
                self._threads = [x for x in self._threads if x.is_alive()]
        finally:
            self.sock.close()
            self._stop.set()
            for t in self._threads:
                t.join(timeout=2.0)
            with self._flows_lock:
                for f in list(self._flows.values()):
                    self._close_flow(f)
            sampler.join(timeout=1.0)

    @staticmethod
    def _reject(conn: socket.socket, message: str) -> None:
        try:
            conn.settimeout(1.0)
            conn.sendall((json.dumps({"ok": False, "error": message}) + "\n").encode())
        except OSError:
            pass
        conn.close()

    # -- one connection
    def _handle(self, conn: socket.socket, peer) -> None:
        flow = None
        record: dict = {"peer": f"{peer[0]}:{peer[1]}", "t_accept": time.time()}
        try:
            try:
                req = validate_request(_read_request(conn), self.limits, self.ccs)
            except (ValueError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                self._reject(conn, f"bad request: {exc}")
                record.update(ok=False, error=f"bad request: {exc}")
                return
            except (TimeoutError, OSError) as exc:
                record.update(ok=False, error=f"no request: {exc}")
                conn.close()
                return
            with self._flows_lock:
                self._counter += 1
                flow_id = f"{self._counter:04d}-{req['label']}"
            record.update(flow_id=flow_id, request=req)
            if req["kind"] == "udp":
                self._serve_udp(conn, peer, req, flow_id, record)
                return
            if req["cc"]:
                try:
                    conn.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, req["cc"].encode())
                except OSError as exc:
                    # Unprivileged servers may only use net.ipv4.tcp_allowed_congestion_control.
                    msg = (f"cannot use congestion control {req['cc']!r}: {exc.strerror} (an unprivileged server "
                           "may only use net.ipv4.tcp_allowed_congestion_control)")
                    self._reject(conn, msg)
                    record.update(ok=False, error=msg)
                    return
            is_mptcp = _is_mptcp(conn)
            cc_now = conn.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).rstrip(b"\0").decode()
            record.update(mptcp=is_mptcp, cc=cc_now)
            flow = self._open_flow(flow_id, conn, is_mptcp)
            conn.settimeout(0.2)
            conn.sendall((json.dumps({"ok": True, "flow_id": flow_id, "cc": cc_now, "mptcp": is_mptcp,
                                      "server_time": time.time()}) + "\n").encode())
            if req["direction"] == "down":
                sent = self._send(conn, req)
                record["bytes_sent"] = sent
                conn.shutdown(socket.SHUT_WR)
                # Keep sampling while the client drains and closes, so the CSV covers the
                # whole connection (final total_retrans, closing handshake).
                self._wait_eof(conn, self.limits.drain_timeout_s)
            else:
                got = self._receive(conn, req)
                record["bytes_received"] = got
                conn.sendall((json.dumps({"ok": True, "bytes_received": got}) + "\n").encode())
                conn.shutdown(socket.SHUT_WR)
                self._wait_eof(conn, self.limits.drain_timeout_s)
            record["ok"] = True
        except OSError as exc:
            record.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        finally:
            record["t_end"] = time.time()
            if flow is not None:
                self._sample_one(flow)  # the last state before close
                with self._flows_lock:
                    self._flows.pop(flow.flow_id, None)
                self._close_flow(flow)
            else:
                try:
                    conn.close()
                except OSError:
                    pass
            self._slots.release()
            self._log(record)
            self._served += 1
            if self.max_flows is not None and self._served >= self.max_flows:
                self.stop()

    def _send(self, conn: socket.socket, req: dict) -> int:
        buf = memoryview(os.urandom(_CHUNK))  # incompressible, in case a path compresses
        sent = 0
        size = req["size_bytes"]
        deadline = time.monotonic() + (req["duration_s"] or self.limits.max_duration_s)
        while not self._stop.is_set() and time.monotonic() < deadline:
            want = _CHUNK if size is None else min(_CHUNK, size - sent)
            if want <= 0:
                break
            try:
                sent += conn.send(buf[:want])
            except TimeoutError:
                continue  # send buffer full (path stalled): re-check the deadline
        return sent

    def _receive(self, conn: socket.socket, req: dict) -> int:
        got = 0
        deadline = time.monotonic() + (req["duration_s"] or self.limits.max_duration_s) + self.limits.drain_timeout_s
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                data = conn.recv(_CHUNK)
            except TimeoutError:
                continue
            if not data:
                break
            got += len(data)
            if req["quickack"]:
                conn.setsockopt(socket.IPPROTO_TCP, TCP_QUICKACK, 1)
        return got

    def _wait_eof(self, conn: socket.socket, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                if not conn.recv(_CHUNK):
                    return
            except TimeoutError:
                continue
            except OSError:
                return
        # The client did not close in time: reset rather than linger.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def _serve_udp(self, conn: socket.socket, peer, req: dict, flow_id: str, record: dict) -> None:
        conn.settimeout(1.0)
        conn.sendall((json.dumps({"ok": True, "flow_id": flow_id, "server_time": time.time()}) + "\n").encode())
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        dest = (peer[0], req["udp_port"])
        size = req["payload_bytes"]
        interval = size * 8 / req["rate_bps"]
        pad = bytes(size - _UDP_HEADER.size)
        seq = 0
        start = time.monotonic()
        end = start + req["duration_s"]
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if now >= end:
                    break
                due = start + seq * interval
                if due > now:
                    time.sleep(min(due - now, 0.05))
                    continue
                try:
                    udp.sendto(_UDP_HEADER.pack(seq, time.time()) + pad, dest)
                except OSError:
                    pass  # ENOBUFS / unreachable: the datagram is lost, as on a real path
                seq += 1
        finally:
            udp.close()
        record.update(ok=True, datagrams_sent=seq, bytes_sent=seq * size)
        try:
            conn.sendall((json.dumps({"ok": True, "datagrams_sent": seq}) + "\n").encode())
        finally:
            conn.close()

    # -- TCP_INFO sampling
    def _open_flow(self, flow_id: str, conn: socket.socket, is_mptcp: bool) -> _Flow:
        fh = open(self.out / "tcpinfo" / f"{flow_id}.csv", "w", newline="")
        w = csv.writer(fh)
        w.writerow(["ts", "t_rel", "subflow", *tcpinfo.COLUMNS])
        flow = _Flow(flow_id, conn, is_mptcp, w, fh, time.time())
        self._sample_one(flow)
        with self._flows_lock:
            self._flows[flow_id] = flow
        return flow

    def _sample_one(self, flow: _Flow) -> None:
        with flow.lock:
            if flow.closed:
                return
            now = time.time()
            try:
                rows = [(None, tcpinfo.read(flow.sock))]
                if flow.mptcp:
                    subs = tcpinfo.read_mptcp_subflows(flow.sock)
                    if subs:
                        rows = [(i, s) for i, s in enumerate(subs)]
            except OSError:
                return
            for sub, info in rows:
                flow.writer.writerow([f"{now:.6f}", f"{now - flow.t_start:.6f}", "" if sub is None else sub,
                                      *("" if info[c] is None else info[c] for c in tcpinfo.COLUMNS)])

    def _sample_loop(self) -> None:
        nxt = time.monotonic()
        while not self._stop.is_set():
            with self._flows_lock:
                flows = list(self._flows.values())
            for f in flows:
                self._sample_one(f)
            nxt += self.sample_interval_s
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.monotonic()  # fell behind: do not burst to catch up

    def _close_flow(self, flow: _Flow) -> None:
        with flow.lock:
            if flow.closed:
                return
            flow.closed = True
            flow.fh.close()
            try:
                flow.sock.close()
            except OSError:
                pass

    def _log(self, record: dict) -> None:
        with self._log_lock, open(self.out / "flows.jsonl", "a") as fh:
            fh.write(json.dumps(record) + "\n")


def _read_request(conn: socket.socket) -> object:
    conn.settimeout(REQUEST_TIMEOUT_S)
    deadline = time.monotonic() + REQUEST_TIMEOUT_S
    buf = b""
    while b"\n" not in buf:
        if len(buf) > MAX_REQUEST_BYTES or time.monotonic() > deadline:
            raise ValueError(f"request line longer than {MAX_REQUEST_BYTES} bytes or too slow")
        chunk = conn.recv(MAX_REQUEST_BYTES + 1 - len(buf))
        if not chunk:
            raise ValueError("connection closed before a full request line")
        buf += chunk
    line = buf.split(b"\n", 1)[0]
    if len(line) > MAX_REQUEST_BYTES:
        raise ValueError(f"request line longer than {MAX_REQUEST_BYTES} bytes")
    return json.loads(line.decode("utf-8"))


def _is_mptcp(sock: socket.socket) -> bool:
    """True when an accepted socket really runs MPTCP (not a plain-TCP fallback)."""
    try:
        return bool(sock.getsockopt(socket.IPPROTO_TCP, 43))  # TCP_IS_MPTCP
    except OSError:
        return False


def serve(host: str = "0.0.0.0", port: int = DEFAULT_PORT, out: Path | str = ".", **kwargs) -> None:
    """Run a server until SIGINT/SIGTERM (or ``max_flows`` flows), then flush and return."""
    srv = Server(host, port, out, **kwargs)
    previous = {}

    def on_signal(signum, frame):  # noqa: ARG001
        srv.stop()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        srv.serve_forever()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --------------------------------------------------------------------------- client


FLOW_TYPES = ("duration", "size", "sequence", "concurrent", "udp", "conjunction")


def path_address(p: int) -> str:
    """The lab's phone address on emulated path ``p`` (1-based; docs/lab.md)."""
    return f"10.1.{p}.1"


@dataclass
class FlowSpec:
    """What the client asks for. ``type`` is one of :data:`FLOW_TYPES`."""

    type: str = "duration"
    duration_s: float | None = 180.0
    size_bytes: int | None = None
    count: int = 1
    gap_s: float = 0.0
    direction: str = "down"
    cc: str | None = None
    mptcp: bool = False
    quickack: bool = False
    rate_bps: float = 1e6
    payload_bytes: int = 1200
    label: str | None = None
    #: the lab's emulated path a single-path flow uses (binds the phone address 10.1.<p>.1);
    #: None: the default route (path 1)
    path: int | None = None
    #: concurrent flows only: one congestion control per flow (a fairness run, hsrbbr vs
    #: cubic); sets count, and each flow's cc replaces ``cc``
    ccs: list[str] | None = None

    def validate(self) -> FlowSpec:
        if self.type not in FLOW_TYPES:
            raise InputError(f"flow type must be one of {FLOW_TYPES}, got {self.type!r}")
        if self.type in ("size", "sequence") and not self.size_bytes:
            raise InputError(f"flow type {self.type!r} needs a size (e.g. --size 2MB)")
        if self.type in ("duration", "udp", "conjunction") and not self.duration_s:
            raise InputError(f"flow type {self.type!r} needs a duration")
        if self.ccs is not None:
            if self.type != "concurrent":
                raise InputError(f"ccs (one congestion control per flow) needs flow type 'concurrent', got {self.type!r}")
            if (not isinstance(self.ccs, (list, tuple)) or not self.ccs
                    or not all(isinstance(c, str) and c for c in self.ccs)):
                raise InputError(f"ccs must be a list of congestion control names, got {self.ccs!r}")
            self.ccs = list(self.ccs)
            self.count = len(self.ccs)
        if not 1 <= self.count <= 64:
            raise InputError("count must be within 1..64")
        if self.path is not None:
            if isinstance(self.path, bool) or not isinstance(self.path, int) or not 1 <= self.path <= 8:
                raise InputError(f"path must be a path number within 1..8, got {self.path!r}")
            if self.mptcp or self.type == "conjunction":
                raise InputError("path chooses the path of a single-path flow; an MPTCP flow uses every path")
        return self

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


#: How long a client waits past a duration flow's end for the server to finish (the server
#: stops writing at the end and resets after its own 15-s drain timeout).
DURATION_GRACE_S = 30.0


def run_client(host: str, port: int, spec: FlowSpec, timeout_s: float | None = None) -> list[dict]:
    """Run the flows of ``spec`` against a server; return one result dict per connection.

    A result has ``flow_id`` (server's), ``t_start``/``t_end`` (epoch seconds), ``bytes``,
    ``goodput_bps`` (application bytes over the data phase) and ``error`` (null when fine).
    A flow that does not finish in time (a path that stays down) ends with an error, not a
    hang: a duration flow waits at most :data:`DURATION_GRACE_S` past its end, a size flow
    600 s, and no flow outlives ``timeout_s`` from the call.
    """
    spec.validate()
    label = spec.label or spec.type
    deadline = time.monotonic() + timeout_s if timeout_s else None
    bind = path_address(spec.path) if spec.path else None

    def one(idx: int, **kw) -> dict:
        return _tcp_flow(host, port, spec, f"{label}-{idx}", deadline=deadline, bind=bind, **kw)

    if spec.type == "udp":
        return [_udp_flow(host, port, spec, label, bind=bind)]
    if spec.type == "duration":
        return [one(0, duration_s=spec.duration_s)]
    if spec.type == "size":
        return [one(0, size_bytes=spec.size_bytes)]
    if spec.type == "sequence":
        out = []
        for i in range(spec.count):
            out.append(one(i, size_bytes=spec.size_bytes))
            if spec.gap_s:
                time.sleep(spec.gap_s)
        return out
    if spec.type == "conjunction":
        return _conjunction(host, port, spec, label, deadline)
    # concurrent: each flow by size if given, else by duration
    results: list[dict | None] = [None] * spec.count

    def worker(i: int) -> None:
        own = spec if not spec.ccs else FlowSpec(**{**spec.to_dict(), "ccs": None, "cc": spec.ccs[i]})
        name = f"{label}-{i}" if not spec.ccs else f"{label}-{i}-{spec.ccs[i]}"
        kw = {"size_bytes": spec.size_bytes} if spec.size_bytes else {"duration_s": spec.duration_s}
        results[i] = _tcp_flow(host, port, own, name, deadline=deadline, bind=bind, **kw)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(spec.count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for r in results if r is not None]


def _conjunction(host: str, port: int, spec: FlowSpec, label: str, deadline: float | None) -> list[dict]:
    """Seed 004's instance (S4 §III-C): the MPTCP flow and one single-path flow per carrier,
    all started together for the same duration. The single-path flows bind the path's
    address, so the policy routes of the lab send each through its own emulated path, where
    it competes with the MPTCP subflow of that path for the path's capacity."""
    jobs = [(f"{label}-mptcp", True, None)]
    jobs += [(f"{label}-sp-p{p}", False, path_address(p)) for p in range(1, spec.count + 1)]
    results: list[dict | None] = [None] * len(jobs)

    def worker(i: int) -> None:
        name, mptcp, bind = jobs[i]
        one = FlowSpec(type="duration", duration_s=spec.duration_s, direction=spec.direction, cc=spec.cc,
                       mptcp=mptcp, quickack=spec.quickack)
        res = _tcp_flow(host, port, one, name, duration_s=spec.duration_s, deadline=deadline, bind=bind)
        res["role"] = "mptcp" if mptcp else "single_path"
        res["path"] = None if mptcp else int(bind.split(".")[2])
        results[i] = res

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for r in results if r is not None]


def _connect(host: str, port: int, mptcp: bool, timeout: float, bind: str | None = None) -> socket.socket:
    proto = IPPROTO_MPTCP if mptcp else 0
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    except OSError as exc:
        raise LabError(f"cannot create {'an MPTCP' if mptcp else 'a TCP'} socket: {exc.strerror}") from exc
    sock.settimeout(timeout)
    try:
        if bind:
            sock.bind((bind, 0))
        sock.connect((host, port))
    except OSError as exc:
        sock.close()
        raise LabError(f"cannot connect to measure server {host}:{port}: {exc}") from exc
    return sock


def _read_line(sock: socket.socket, limit: int = MAX_REQUEST_BYTES) -> tuple[dict, bytes]:
    buf = b""
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise LabError(f"server closed the connection before answering (got {buf[:200]!r})")
        buf += chunk
        if len(buf) > limit + 4096:
            raise LabError("server answer line too long")
    line, rest = buf.split(b"\n", 1)
    return json.loads(line), rest


def _tcp_flow(host: str, port: int, spec: FlowSpec, label: str, duration_s=None, size_bytes=None,
              deadline: float | None = None, bind: str | None = None) -> dict:
    req = {"v": PROTOCOL_VERSION, "kind": "tcp", "direction": spec.direction, "duration_s": duration_s,
           "size_bytes": size_bytes, "cc": spec.cc, "label": label, "quickack": spec.quickack}
    res: dict = {"label": label, "request": req, "flow_id": None, "error": None, "bytes": 0}
    # The whole flow may legitimately stall for a long outage; bound it anyway.
    budget = duration_s + DURATION_GRACE_S if duration_s else 600.0
    if deadline is not None:
        budget = max(1.0, min(budget, deadline - time.monotonic()))
    t0 = time.time()
    try:
        sock = _connect(host, port, spec.mptcp, timeout=min(30.0, budget), bind=bind)
    except LabError as exc:
        res.update(error=str(exc), t_start=t0, t_end=time.time())
        return res
    try:
        if spec.cc and spec.direction == "up":
            sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, spec.cc.encode())
        res["mptcp"] = _is_mptcp(sock)
        res["local"] = "%s:%d" % sock.getsockname()[:2]
        sock.sendall((json.dumps(req) + "\n").encode())
        sock.settimeout(budget)
        answer, rest = _read_line(sock)
        if not answer.get("ok"):
            res.update(error=f"server refused: {answer.get('error')}", t_start=t0, t_end=time.time())
            return res
        res["flow_id"] = answer.get("flow_id")
        res["server_cc"] = answer.get("cc")
        t_data = time.time()
        res["t_start"] = t_data
        flow_deadline = time.monotonic() + budget
        got = len(rest)
        res["bytes"] = got
        if spec.direction == "down":
            while True:
                left = flow_deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"flow not finished after {budget:.0f} s ({got} bytes received)")
                sock.settimeout(left)
                data = sock.recv(_CHUNK)
                if not data:
                    break
                got += len(data)
                res["bytes"] = got  # kept if the flow later fails
                if spec.quickack:
                    sock.setsockopt(socket.IPPROTO_TCP, TCP_QUICKACK, 1)
            t_end = time.time()
            if size_bytes is not None and got < size_bytes:
                res["error"] = f"short transfer: {got} of {size_bytes} bytes"
        else:
            buf = memoryview(os.urandom(_CHUNK))
            end = time.monotonic() + (duration_s or budget)
            while time.monotonic() < end and (size_bytes is None or got < size_bytes):
                want = _CHUNK if size_bytes is None else min(_CHUNK, size_bytes - got)
                got += sock.send(buf[:want])
            sock.shutdown(socket.SHUT_WR)
            t_end = time.time()
            final, _ = _read_line(sock)
            res["server_bytes_received"] = final.get("bytes_received")
        res.update(bytes=got, t_start=t_data, t_end=t_end,
                   goodput_bps=(got * 8 / (t_end - t_data)) if t_end > t_data else None)
    except (OSError, LabError, ValueError) as exc:
        res.update(error=f"{type(exc).__name__}: {exc}", t_start=res.get("t_start", t0), t_end=time.time(),
                   goodput_bps=None)
    finally:
        sock.close()
    return res


def _udp_flow(host: str, port: int, spec: FlowSpec, label: str, bind: str | None = None) -> dict:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((bind or "0.0.0.0", 0))
    udp.settimeout(0.2)
    req = {"v": PROTOCOL_VERSION, "kind": "udp", "duration_s": spec.duration_s, "rate_bps": spec.rate_bps,
           "udp_port": udp.getsockname()[1], "payload_bytes": spec.payload_bytes, "label": label}
    res: dict = {"label": label, "request": req, "error": None}
    sock = _connect(host, port, False, timeout=30.0, bind=bind)
    try:
        sock.sendall((json.dumps(req) + "\n").encode())
        sock.settimeout(30.0)
        answer, _ = _read_line(sock)
        if not answer.get("ok"):
            res["error"] = f"server refused: {answer.get('error')}"
            return res
        res["flow_id"] = answer["flow_id"]
        seqs = set()
        owd = []
        t_start = time.time()
        end = time.monotonic() + spec.duration_s + 2.0  # + late arrivals after a stall
        while time.monotonic() < end:
            try:
                data = udp.recv(65535)
            except TimeoutError:
                continue
            if len(data) >= _UDP_HEADER.size:
                seq, ts = _UDP_HEADER.unpack_from(data)
                seqs.add(seq)
                owd.append(time.time() - ts)
        sock.settimeout(5.0)
        try:
            final, _ = _read_line(sock)
            sent = final.get("datagrams_sent")
        except (OSError, LabError):
            sent = None
        res.update(t_start=t_start, t_end=time.time(), datagrams_received=len(seqs), datagrams_sent=sent,
                   loss_rate=(1 - len(seqs) / sent) if sent else None,
                   bytes=len(seqs) * spec.payload_bytes,
                   owd_median_s=sorted(owd)[len(owd) // 2] if owd else None)
    finally:
        sock.close()
        udp.close()
    return res
