"""Kernel TCP state of a live socket: ``getsockopt(TCP_INFO)`` decoded into named fields.

The kernel's ``struct tcp_info`` (include/uapi/linux/tcp.h) only ever grows at the end, and
``getsockopt`` returns as many bytes as the running kernel knows. We decode the prefix we
know and report every field the kernel did not fill as ``None`` (missing is null, never 0).

Units follow the data contract: times in seconds (the kernel gives microseconds for
``rto``, ``ato``, ``rtt``, ``rttvar``, ``min_rtt``, ``rcv_rtt`` and the ``*_limited`` /
``busy_time`` counters, milliseconds for ``last_*`` and ``total_rto_time``), rates in bit/s
(the kernel gives bytes/s for ``pacing_rate``, ``max_pacing_rate``, ``delivery_rate``;
its "unlimited" ~0 is reported as ``None``), sizes
in bytes, counters as integers. ``snd_ssthresh`` while still in initial slow start is the
kernel's "infinity" (``TCP_INFINITE_SSTHRESH`` = 0x7fffffff) and is reported as ``None``.

This is the server-side kernel truth used as a witness for the analyzer: ``snd_cwnd`` and the
bytes in flight (docs/metrics.md M17), ``rto_s`` (M16's RTO), ``total_retrans`` (all retransmitted
data segments: the denominator of M13), ``dsack_dups`` (retransmissions the receiver reported
as duplicates: an upper bound on spurious retransmissions, M12/M13).

MPTCP: on an MPTCP socket ``TCP_INFO`` is not per subflow; :func:`read_mptcp_subflows` uses
``getsockopt(SOL_MPTCP, MPTCP_TCPINFO)`` to get one ``tcp_info`` per subflow.
"""

from __future__ import annotations

import ctypes
import socket
import struct
from dataclasses import dataclass

SOL_TCP = socket.IPPROTO_TCP
TCP_INFO = 11
SOL_MPTCP = 284
MPTCP_TCPINFO = 2
_TCP_INFINITE_SSTHRESH = 0x7FFFFFFF
_U64_MAX = 2**64 - 1
# Ask for more than any kernel returns today; the kernel copies min(len, its size).
_BUFLEN = 512

TCP_STATES = {
    1: "established", 2: "syn_sent", 3: "syn_recv", 4: "fin_wait1", 5: "fin_wait2",
    6: "time_wait", 7: "close", 8: "close_wait", 9: "last_ack", 10: "listen", 11: "closing",
}
CA_STATES = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}


@dataclass(frozen=True)
class _Field:
    name: str
    offset: int
    fmt: str  # struct code, native byte order
    div: float | None = None  # divide the raw value by this (unit conversion)
    mul: float | None = None  # or multiply by this


# What the kernel's unit becomes: µs and ms to seconds, bytes/s to bit/s.
_CONVERT = {"us": {"div": 1e6}, "ms": {"div": 1e3}, "Bps": {"mul": 8}, None: {}}

# struct tcp_info in the kernel's order, runs of members of one type and unit: (struct code,
# the kernel's unit, names). Every member is naturally aligned with no padding, so each
# offset is the sum of the sizes before it (test_tcpinfo.py checks the known ones; `ss -ti`
# witnesses the values). Bytes 6-7 are the bit fields, decoded in :func:`decode`.
_LAYOUT = (
    ("B", None, "state ca_state retransmits probes backoff options"),
    ("x", None, "_wscale _app_limited"),
    ("I", "us", "rto_s ato_s"),
    ("I", None, "snd_mss rcv_mss unacked sacked lost retrans fackets"),
    ("I", "ms", "last_data_sent_s last_ack_sent_s last_data_recv_s last_ack_recv_s"),
    ("I", None, "pmtu rcv_ssthresh"),
    ("I", "us", "rtt_s rttvar_s"),
    ("I", None, "snd_ssthresh snd_cwnd advmss reordering"),
    ("I", "us", "rcv_rtt_s"),
    ("I", None, "rcv_space total_retrans"),
    ("Q", "Bps", "pacing_rate_bps max_pacing_rate_bps"),
    ("Q", None, "bytes_acked bytes_received"),
    ("I", None, "segs_out segs_in notsent_bytes"),
    ("I", "us", "min_rtt_s"),
    ("I", None, "data_segs_in data_segs_out"),
    ("Q", "Bps", "delivery_rate_bps"),
    ("Q", "us", "busy_time_s rwnd_limited_s sndbuf_limited_s"),
    ("I", None, "delivered delivered_ce"),
    ("Q", None, "bytes_sent bytes_retrans"),
    ("I", None, "dsack_dups reord_seen rcv_ooopack snd_wnd rcv_wnd rehash"),
    ("H", None, "total_rto total_rto_recoveries"),
    ("I", "ms", "total_rto_time_s"),
)


def _fields() -> tuple[_Field, ...]:
    out, offset = [], 0
    for fmt, unit, names in _LAYOUT:
        for name in names.split():
            if fmt != "x":
                out.append(_Field(name, offset, fmt, **_CONVERT[unit]))
            offset += struct.calcsize("=" + fmt)
    return tuple(out)


_FIELDS = _fields()

#: Column order of a decoded sample (after ``ts``), as written to the per-flow CSV.
COLUMNS: tuple[str, ...] = (
    "state", "ca_state", "retransmits", "probes", "backoff", "options", "snd_wscale",
    "rcv_wscale", "delivery_rate_app_limited",
    *(f.name for f in _FIELDS[6:]),
)

_STRUCTS = {f.name: struct.Struct("=" + f.fmt) for f in _FIELDS}


def decode(buf: bytes) -> dict[str, float | int | None]:
    """Decode a ``struct tcp_info`` byte string; fields beyond ``len(buf)`` are ``None``."""
    out: dict[str, float | int | None] = {}
    n = len(buf)
    for f in _FIELDS:
        st = _STRUCTS[f.name]
        if f.offset + st.size > n:
            out[f.name] = None
            continue
        (v,) = st.unpack_from(buf, f.offset)
        if f.fmt == "Q" and v == _U64_MAX:
            out[f.name] = None  # ~0ULL: "unlimited" / unknown
        elif f.div is not None:
            out[f.name] = v / f.div
        elif f.mul is not None:
            out[f.name] = v * f.mul
        else:
            out[f.name] = v
    if n >= 8:
        out["snd_wscale"] = buf[6] & 0x0F
        out["rcv_wscale"] = buf[6] >> 4
        out["delivery_rate_app_limited"] = buf[7] & 0x01
    else:
        out["snd_wscale"] = out["rcv_wscale"] = out["delivery_rate_app_limited"] = None
    if out.get("snd_ssthresh") is not None and out["snd_ssthresh"] >= _TCP_INFINITE_SSTHRESH:
        out["snd_ssthresh"] = None
    return {c: out[c] for c in COLUMNS}


def read(sock: socket.socket) -> dict[str, float | int | None]:
    """``TCP_INFO`` of a TCP socket (or the MPTCP socket's aggregate view), decoded."""
    return decode(sock.getsockopt(SOL_TCP, TCP_INFO, _BUFLEN))


def read_mptcp_subflows(sock: socket.socket) -> list[dict[str, float | int | None]]:
    """One decoded ``tcp_info`` per subflow of an MPTCP socket (``MPTCP_TCPINFO``).

    The request is a ``struct mptcp_subflow_data`` header (size_subflow_data, num_subflows,
    size_kernel, size_user; 16 bytes) followed by room for the subflow records; the kernel
    fills ``num_subflows`` and ``size_kernel`` and copies ``min(size_user, size_kernel)``
    bytes per subflow. Returns ``[]`` on a plain TCP socket or a kernel without the option.
    """
    max_subflows = 8
    # Python's getsockopt cannot pass an input buffer, and this option reads its header
    # from the buffer, so call libc directly.
    size = 16 + _BUFLEN * max_subflows
    buf = ctypes.create_string_buffer(struct.pack("=IIII", 16, 0, 0, _BUFLEN), size)
    optlen = ctypes.c_uint32(size)
    rc = _libc().getsockopt(sock.fileno(), SOL_MPTCP, MPTCP_TCPINFO, buf, ctypes.byref(optlen))
    if rc != 0:
        return []
    raw = buf.raw[: optlen.value]
    _, num, size_kernel, size_user = struct.unpack_from("=IIII", raw, 0)
    step = size_user or min(size_kernel, _BUFLEN)
    out = []
    for i in range(min(num, max_subflows)):
        start = 16 + i * step
        chunk = raw[start : start + min(size_kernel, step)]
        if len(chunk) < 8:
            break
        out.append(decode(chunk))
    return out


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC
