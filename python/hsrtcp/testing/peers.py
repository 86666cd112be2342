"""Peer tools as witnesses: run tshark and tcptrace on a capture and parse their numbers.

Where each peer is right and wrong is described in research/analyzers.md §2 and §4; in short:
tcptrace counts sender-side retransmissions well (Karn-filtered RTT, "rexmt" = bytes sent
twice) but cannot read LINUX_SLL2; tshark flags every packet (retransmission, fast
retransmission, spurious, duplicate ACK, zero window, ack_rtt without Karn's rule) and reads
every link type, but its ``conv,tcp`` byte columns are rounded to kB/MB.

Every function raises :class:`PeerMissing` (a ``LookupError``) when the tool is not installed,
so tests can ``pytest.skip`` cleanly; :func:`have` tells in advance.

Keys: conversations are keyed by the 4-tuple ``(a_addr, a_port, b_addr, b_port)`` as the tool
prints it (host a is the side of the first packet, normally the client). The value is a *list*
of records, one per connection in capture order, because a 4-tuple reused after close is two
connections (tcptrace splits them on the new SYN; tshark ``conv,tcp`` does too).
Times are converted to seconds (``_s``), sizes are bytes, as the rest of hsrtcp.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path


class PeerMissing(LookupError):
    """The peer tool is not installed."""


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def _exec(cmd: list[str], timeout: float = 600) -> str:
    if not have(cmd[0]):
        raise PeerMissing(f"{cmd[0]} is not installed")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[:500]}")
    return p.stdout


def _split_endpoint(s: str) -> tuple[str, int]:
    """'addr:port' → (canonical address, port); tcptrace prints IPv6 with leading zeros."""
    import ipaddress

    addr, port = s.rsplit(":", 1)
    try:
        addr = str(ipaddress.ip_address(addr))
    except ValueError:
        pass
    return addr, int(port)


# --- tshark conv,tcp -------------------------------------------------------------------------

_UNITS = {"bytes": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}
_CONV = re.compile(
    r"^(?P<a>\S+)\s+<->\s+(?P<b>\S+)\s+"
    r"(?P<f_to_a>\d+)\s+(?P<by_to_a>\d+)\s+(?P<u_to_a>bytes|kB|MB|GB|TB)\s+"
    r"(?P<f_to_b>\d+)\s+(?P<by_to_b>\d+)\s+(?P<u_to_b>bytes|kB|MB|GB|TB)\s+"
    r"(?P<f_tot>\d+)\s+(?P<by_tot>\d+)\s+(?P<u_tot>bytes|kB|MB|GB|TB)\s+"
    r"(?P<start>[\d.]+)\s+(?P<dur>[\d.]+)\s*$"
)


def parse_tshark_conv(text: str) -> dict[tuple, list[dict]]:
    """Parse the table printed by ``tshark -q -z conv,tcp``.

    Per conversation: ``frames_a_to_b``, ``frames_b_to_a``, ``frames``, the byte counts
    (frame bytes, i.e. captured length on the wire incl. link headers) ``bytes_a_to_b``,
    ``bytes_b_to_a``, ``bytes``, ``bytes_exact`` (False when tshark rounded to kB/MB: then
    the byte values are only accurate to the printed unit), ``rel_start_s``, ``duration_s``.
    In tshark's table the ``<-`` column is traffic *toward* host a, ``->`` *from* a.
    """
    out: dict[tuple, list[dict]] = defaultdict(list)
    for line in text.splitlines():
        m = _CONV.match(line.strip())
        if not m:
            continue
        a, ap = _split_endpoint(m["a"])
        b, bp = _split_endpoint(m["b"])
        exact = all(m[u] == "bytes" for u in ("u_to_a", "u_to_b", "u_tot"))
        out[(a, ap, b, bp)].append({
            "frames_b_to_a": int(m["f_to_a"]), "frames_a_to_b": int(m["f_to_b"]),
            "frames": int(m["f_tot"]),
            "bytes_b_to_a": int(m["by_to_a"]) * _UNITS[m["u_to_a"]],
            "bytes_a_to_b": int(m["by_to_b"]) * _UNITS[m["u_to_b"]],
            "bytes": int(m["by_tot"]) * _UNITS[m["u_tot"]], "bytes_exact": exact,
            "rel_start_s": float(m["start"]), "duration_s": float(m["dur"]),
        })
    return dict(out)


def tshark_conv(pcap: str | Path) -> dict[tuple, list[dict]]:
    """Run ``tshark -n -q -z conv,tcp -r PCAP`` and parse it (see :func:`parse_tshark_conv`)."""
    return parse_tshark_conv(_exec(["tshark", "-n", "-q", "-z", "conv,tcp", "-r", str(pcap)]))


# --- tshark per-packet analysis flags -------------------------------------------------------

TSHARK_FIELDS = [
    ("frame", "frame.number", int),
    ("ts", "frame.time_epoch", float),
    ("src4", "ip.src", str), ("dst4", "ip.dst", str),
    ("src6", "ipv6.src", str), ("dst6", "ipv6.dst", str),
    ("sport", "tcp.srcport", int), ("dport", "tcp.dstport", int),
    ("stream", "tcp.stream", int),
    ("seq_raw", "tcp.seq_raw", int), ("ack_raw", "tcp.ack_raw", int),
    ("len", "tcp.len", int),
    ("retransmission", "tcp.analysis.retransmission", bool),
    ("fast_retransmission", "tcp.analysis.fast_retransmission", bool),
    ("spurious_retransmission", "tcp.analysis.spurious_retransmission", bool),
    ("out_of_order", "tcp.analysis.out_of_order", bool),
    ("lost_segment", "tcp.analysis.lost_segment", bool),
    ("duplicate_ack", "tcp.analysis.duplicate_ack", bool),
    ("zero_window", "tcp.analysis.zero_window", bool),
    ("zero_window_probe", "tcp.analysis.zero_window_probe", bool),
    ("window_full", "tcp.analysis.window_full", bool),
    ("ack_rtt_s", "tcp.analysis.ack_rtt", float),
    ("bytes_in_flight", "tcp.analysis.bytes_in_flight", int),
    ("window", "tcp.window_size", int),
]

FLAG_NAMES = [n for n, _f, t in TSHARK_FIELDS if t is bool]


def tshark_packets(pcap: str | Path, display_filter: str = "tcp") -> list[dict]:
    """Per-packet TCP analysis of tshark (``-T fields -E occurrence=f``, tab separated).

    Each row: frame number, epoch time ``ts``, ``src``/``dst`` (IPv4 or IPv6), ports,
    ``stream`` (tshark's conversation index), raw seq/ack, payload ``len``, boolean flags
    (``retransmission``, ``fast_retransmission``, ``spurious_retransmission``,
    ``out_of_order``, ``lost_segment``, ``duplicate_ack``, ``zero_window``,
    ``zero_window_probe``, ``window_full``), ``ack_rtt_s`` (None when absent; not
    Karn-filtered in tshark 4.0), ``bytes_in_flight`` and the scaled ``window``.
    ``occurrence=f`` keeps the columns aligned when a field repeats (analyzers.md §2.2).
    """
    cmd = ["tshark", "-n", "-r", str(pcap), "-Y", display_filter, "-T", "fields",
           "-E", "header=n", "-E", "separator=/t", "-E", "occurrence=f"]
    for _n, f, _t in TSHARK_FIELDS:
        cmd += ["-e", f]
    rows = []
    for line in _exec(cmd).splitlines():
        cols = line.split("\t")
        if len(cols) != len(TSHARK_FIELDS):
            raise RuntimeError(f"tshark row with {len(cols)} columns, expected {len(TSHARK_FIELDS)}: {line!r}")
        r: dict = {}
        for (name, _f, typ), v in zip(TSHARK_FIELDS, cols):
            if typ is bool:
                r[name] = v != ""
            elif v == "":
                r[name] = None
            else:
                r[name] = typ(v)
        r["src"] = r.pop("src4") or r.pop("src6")
        r["dst"] = r.pop("dst4") or r.pop("dst6")
        r.pop("src6", None)
        r.pop("dst6", None)
        rows.append(r)
    return rows


def tshark_flag_counts(rows: list[dict]) -> dict[tuple, dict]:
    """Count tshark's flags per direction: key ``(src, sport, dst, dport)`` → counts of each
    flag, ``packets``, ``data_packets``, ``payload_bytes``, ``ack_rtt_samples``."""
    out: dict[tuple, dict] = {}
    for r in rows:
        k = (r["src"], r["sport"], r["dst"], r["dport"])
        c = out.setdefault(k, {"packets": 0, "data_packets": 0, "payload_bytes": 0,
                               "ack_rtt_samples": 0, **{f: 0 for f in FLAG_NAMES}})
        c["packets"] += 1
        if r["len"]:
            c["data_packets"] += 1
            c["payload_bytes"] += r["len"]
        if r["ack_rtt_s"] is not None:
            c["ack_rtt_samples"] += 1
        for f in FLAG_NAMES:
            c[f] += r[f]
    return out


# --- tshark SACK blocks ----------------------------------------------------------------------


def tshark_sack_blocks(pcap: str | Path) -> list[dict]:
    """Every SACK block tshark decodes (RFC 2018), one dict per block in capture order:
    ``ts`` (epoch s), ``stream``, the ACK's ``src``/``sport``/``dst``/``dport`` (the SACKed data
    flows the other way), ``pos`` (1-based position in the option) and ``left``/``right``,
    relative to the SACKed direction's base (its ISN when the SYN was captured; tshark's
    default relative sequence numbers)."""
    fields = ["frame.time_epoch", "tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst",
              "tcp.dstport", "tcp.options.sack_le", "tcp.options.sack_re"]
    cmd = ["tshark", "-n", "-r", str(pcap), "-Y", "tcp.options.sack_le", "-T", "fields",
           "-E", "header=n", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in fields:
        cmd += ["-e", f]
    out = []
    for line in _exec(cmd).splitlines():
        ts, stream, src4, src6, sport, dst4, dst6, dport, les, res = line.split("\t")
        left, right = les.split(","), res.split(",")
        if len(left) != len(right):
            raise RuntimeError(f"tshark SACK row with {len(left)} left and {len(right)} right edges: {line!r}")
        for k, (le, re_) in enumerate(zip(left, right), start=1):
            out.append({"ts": float(ts), "stream": int(stream), "src": src4 or src6, "sport": int(sport),
                        "dst": dst4 or dst6, "dport": int(dport), "pos": k, "left": int(le), "right": int(re_)})
    return out


# --- tshark io,stat ------------------------------------------------------------------------

_IO_ROW = re.compile(r"^\|\s*([\d.]+)\s*<>\s*([\d.]+|Dur)\s*\|(.*)\|\s*$")


def tshark_io_sum(pcap: str | Path, field: str, display_filter: str, interval_s: float = 1.0) -> list[dict]:
    """``tshark -z io,stat,INTERVAL,"SUM(field)filter"``: the sum of ``field`` per interval.

    Bins start at the first packet of the capture. The summed field must also appear in the
    filter, or tshark returns 0 in every bin (analyzers.md §2.2), so ``field > 0 &&`` is
    prepended. Returns [{"t_start", "t_end" (None for the last, partial bin), "sum"}].
    """
    flt = f"{field}>0 && ({display_filter})" if display_filter else f"{field}>0"
    text = _exec(["tshark", "-n", "-q", "-r", str(pcap), "-z", f"io,stat,{interval_s},SUM({field}){flt}"])
    rows = []
    for line in text.splitlines():
        m = _IO_ROW.match(line.strip())
        if not m:
            continue
        cells = [c.strip() for c in m.group(3).split("|") if c.strip()]
        rows.append({"t_start": float(m.group(1)),
                     "t_end": None if m.group(2) == "Dur" else float(m.group(2)),
                     "sum": int(cells[0]) if cells else 0})
    return rows


# --- tcptrace -n -l -r ---------------------------------------------------------------------

_PAIR = re.compile(r"^\s*(?P<k1>[^:]+?):\s+(?P<v1>.*?)\s{2,}(?P<k2>[^:]+?):\s+(?P<v2>.*?)\s*$")
_NUM = re.compile(r"^(-?[\d.]+)\s*(ms|bytes|pkts|times|Bps|secs)?$")


def _key(label: str) -> str:
    k = re.sub(r"[^a-z0-9]+", "_", label.strip().lower()).strip("_")
    return k


def _value(label: str, raw: str):
    """Convert a tcptrace value: numbers lose their unit, milliseconds become seconds."""
    m = _NUM.match(raw.strip())
    if not m:
        return _key(label), raw.strip()
    num = float(m.group(1))
    unit = m.group(2)
    if unit == "ms":
        return _key(label) + "_s", num / 1000.0
    if unit == "secs":
        return _key(label) + "_s", num
    if num.is_integer() and "." not in m.group(1):
        return _key(label), int(num)
    return _key(label), num


def parse_tcptrace(text: str) -> dict[tuple, list[dict]]:
    """Parse ``tcptrace -n -l -r`` output.

    Per connection: ``host_a``/``host_b`` endpoints, ``complete`` (bool), ``a2b`` and ``b2a``
    dicts with every per-direction line of the long output in snake_case, e.g.
    ``total_packets``, ``actual_data_pkts``, ``actual_data_bytes``, ``rexmt_data_pkts``,
    ``rexmt_data_bytes``, ``unique_bytes_sent``, ``missed_data``, ``duplicate_acks``,
    ``triple_dupacks``, ``zero_win_adv``, ``outoforder_pkts``, ``rtt_samples``,
    ``rtt_min_s``/``rtt_max_s``/``rtt_avg_s``/``rtt_stdev_s``, ``max_retr_time_s``.
    Repeated labels (tcptrace prints "initial window" twice: bytes, then pkts) get a
    ``_pkts`` suffix the second time.
    """
    out: dict[tuple, list[dict]] = defaultdict(list)
    cur: dict | None = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("TCP connection ") and s.endswith(":") and s[15:-1].isdigit():
            cur = {"index": int(s[15:-1]), "a2b": {}, "b2a": {}}
            continue
        if cur is None:
            continue
        m = re.match(r"host (\w+):\s+(\S+)$", s)
        if m:
            # tcptrace names the hosts a/b, c/d, e/f … per connection
            ep = _split_endpoint(m.group(2))
            if "host_a" not in cur:
                cur["host_a"] = ep
            else:
                cur["host_b"] = ep
                a, b = cur["host_a"], cur["host_b"]
                out[(a[0], a[1], b[0], b[1])].append(cur)
            continue
        elif s.startswith("complete conn:"):
            cur["complete"] = s.split(":", 1)[1].strip().startswith("yes")
        elif re.fullmatch(r"total packets:\s+\d+", s):
            cur["total_packets"] = int(s.split(":")[1])  # connection-level, one column
            continue
        if re.match(r"^\w+->\w+:", s):
            continue  # the "a->b:  b->a:" column header
        m = _PAIR.match(line)
        if m:
            for k, v, side in ((m["k1"], m["v1"], "a2b"), (m["k2"], m["v2"], "b2a")):
                key, val = _value(k, v)
                if key in cur[side]:
                    key += "_pkts"
                cur[side][key] = val
    return dict(out)


def tcptrace(pcap: str | Path) -> dict[tuple, list[dict]]:
    """Run ``tcptrace -n -l -r PCAP`` and parse it (see :func:`parse_tcptrace`).

    tcptrace cannot read LINUX_SLL2 captures (``tcpdump -i any`` with libpcap ≥ 1.10) and
    says "did not understand link format"; that raises RuntimeError.
    """
    text = _exec(["tcptrace", "-n", "-l", "-r", str(pcap)])
    if "did not understand link format" in text or "is not a valid" in text:
        raise RuntimeError(f"tcptrace cannot read {pcap}: {text.strip()[:200]}")
    return parse_tcptrace(text)


def lookup(table: dict[tuple, list[dict]], addr1: str, port1: int, addr2: str, port2: int) -> list[dict]:
    """Records of a conversation whichever endpoint the tool printed first."""
    return table.get((addr1, port1, addr2, port2)) or table.get((addr2, port2, addr1, port1)) or []
