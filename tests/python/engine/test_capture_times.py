"""Corrupt capture timestamps through the command line (issue 30 item 6), on
tests/data/clean_200k.server.pcap (µs), nano.server.pcap (ns) and a pcapng built here from
the first (real kernel TCP, tests/data/README.md), each patched as the issue describes:

- a pcap record whose fraction of a second is one second or more (10^6 µs, 10^9 ns) was
  added as is (0xFFFFFFFF µs: a 0.02 s connection lasted 4294 s); it is skipped and counted
  as malformed (`bad_ts_fraction`), the connection's times are those without it;
- pcapng times beyond ±2^63 ns (a huge `if_tsoffset`, `if_tsresol` 10^0) were clamped to
  one instant (several agreeing records: a "clock step" to the year 2262); skipped and
  counted (`ts_out_of_range`);
- a clock stepped back more than a day: reading stops there, and the message ("results
  before it are kept, marked truncated") and both `truncated` columns now agree; a step
  forward is followed, and the message no longer claims truncation.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import polars as pl

DATA = Path(__file__).resolve().parents[2] / "data"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hsrtcp", *args], capture_output=True, text=True, timeout=120)


def _records(raw: bytes):
    """(header offset, seconds, fraction, caplen) of every record of a little-endian pcap."""
    at, out = 24, []
    while at + 16 <= len(raw):
        sec, frac, caplen = struct.unpack_from("<III", raw, at)
        out.append((at, sec, frac, caplen))
        at += 16 + caplen
    return out


def _patched(src: Path, dst: Path, patch) -> Path:
    """``src`` with each record's (seconds, fraction) replaced by ``patch(i, sec, frac)``."""
    b = bytearray(src.read_bytes())
    for i, (at, sec, frac, _) in enumerate(_records(bytes(b))):
        struct.pack_into("<II", b, at, *patch(i, sec, frac))
    dst.write_bytes(b)
    return dst


def _analyze(tmp_path, cap: Path):
    out = tmp_path / (cap.stem + "_out")
    r = _cli("analyze", str(cap), "-o", str(out), "--no-plot")
    flows = pl.read_parquet(out / "flows.parquet")
    return r, flows.row(0, named=True), pl.read_parquet(out / "captures.parquet").row(0, named=True)


def _span(src: Path) -> float:
    recs = _records(src.read_bytes())
    scale = 1e-9 if src.read_bytes()[:4] == bytes.fromhex("4d3cb2a1") else 1e-6
    t = [s + f * scale for _, s, f, _ in recs]
    return max(t) - min(t)


def test_pcap_fraction_of_a_second_or_more_is_malformed_microseconds(tmp_path):
    src = DATA / "clean_200k.server.pcap"
    # the record: 0xFFFFFFFF microseconds, 71 minutes
    bad = _patched(src, tmp_path / "us_frac.pcap", lambda i, s, f: (s, 0xFFFFFFFF) if i == 3 else (s, f))
    r, flow, cap = _analyze(tmp_path, bad)
    assert r.returncode == 0, r.stderr
    assert (cap["malformed_packets"], cap["malformed_reasons"]) == (1, "bad_ts_fraction=1")
    assert cap["packets"] == len(_records(src.read_bytes())) - 1
    assert abs(flow["duration_s"] - _span(src)) < 1e-3, flow["duration_s"]  # was 4293.99 s
    assert "1 malformed (bad_ts_fraction=1)" in r.stdout


def test_pcap_fraction_of_a_second_or_more_is_malformed_nanoseconds(tmp_path):
    src = DATA / "nano.server.pcap"
    n = len(_records(src.read_bytes()))
    # the last record 3 s late through its fraction field (10^9 + x nanoseconds)
    bad = _patched(src, tmp_path / "ns_frac.pcap",
                   lambda i, s, f: (s, f + 3_000_000_000) if i == n - 1 else (s, f))
    r, flow, cap = _analyze(tmp_path, bad)
    assert r.returncode == 0, r.stderr
    assert (cap["malformed_packets"], cap["malformed_reasons"]) == (1, "bad_ts_fraction=1")
    assert flow["duration_s"] <= _span(src) + 1e-6, flow["duration_s"]  # was 3 s longer


def _pcapng_with_far_interface(src: Path, dst: Path, far: range) -> Path:
    """``src`` (µs, Ethernet) as pcapng: interface 0 as the pcap, interface 1 with
    ``if_tsresol`` 10^0 and ``if_tsoffset`` 2^40 s; the records in ``far`` are put on
    interface 1 (time beyond 2^63 ns), the others keep their time on interface 0."""

    def block(btype: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)

    def opt(code: int, value: bytes) -> bytes:
        return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)

    raw = src.read_bytes()
    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)),
           block(1, struct.pack("<HHI", 1, 0, 262144) + opt(0, b"")),
           block(1, struct.pack("<HHI", 1, 0, 262144) + opt(9, b"\x00") + opt(14, struct.pack("<q", 1 << 40))
                 + opt(0, b""))]
    for i, (at, sec, frac, caplen) in enumerate(_records(raw)):
        orig = struct.unpack_from("<I", raw, at + 12)[0]
        iface, units = (1, sec) if i in far else (0, sec * 1_000_000 + frac)
        out.append(block(6, struct.pack("<IIIII", iface, units >> 32, units & 0xFFFFFFFF, caplen, orig)
                         + raw[at + 16:at + 16 + caplen]))
    dst.write_bytes(b"".join(out))
    return dst


def test_pcapng_time_beyond_2_63_ns_is_malformed(tmp_path):
    src = DATA / "clean_200k.server.pcap"
    # three records in a row: clamped, they agreed with each other (a clock step followed)
    bad = _pcapng_with_far_interface(src, tmp_path / "far.pcapng", range(100, 103))
    r, flow, cap = _analyze(tmp_path, bad)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (cap["malformed_packets"], cap["malformed_reasons"]) == (3, "ts_out_of_range=3")
    assert (cap["time_jumps"], cap["truncated"]) == (0, False)
    assert flow["duration_s"] < 1.0 and flow["last_ts"] < 4e9, flow  # not the year 2262


def test_clock_stepped_back_stops_reading_and_the_table_says_truncated(tmp_path):
    src = DATA / "clean_200k.server.pcap"
    bad = _patched(src, tmp_path / "back.pcap", lambda i, s, f: (s - 10_000_000, f) if i >= 50 else (s, f))
    r, flow, cap = _analyze(tmp_path, bad)
    assert r.returncode == 3, r.stderr
    at = _records(src.read_bytes())[50][0]
    assert f"steps back 10000000 s at byte {at}" in r.stdout
    assert "(results before it are kept, marked truncated)" in r.stdout
    assert (cap["truncated"], flow["truncated"]) == (True, True)
    assert (cap["packets"], cap["time_jumps"], cap["time_jump_offset"]) == (50, 1, at)
    assert flow["c2s_packets"] + flow["s2c_packets"] == 50


def test_clock_stepped_forward_is_followed_and_not_called_truncated(tmp_path):
    src = DATA / "clean_200k.server.pcap"
    bad = _patched(src, tmp_path / "fwd.pcap", lambda i, s, f: (s + 10_000_000, f) if i >= 50 else (s, f))
    r, flow, cap = _analyze(tmp_path, bad)
    assert r.returncode == 3, r.stderr
    assert "clock step followed" in r.stdout and "marked truncated" not in r.stdout
    assert "reading went on, nothing truncated" in r.stdout
    assert (cap["truncated"], flow["truncated"]) == (False, False)
    assert cap["packets"] == len(_records(src.read_bytes()))
