"""Issue 16 items 1 and 2 through the command line: a record with an absurd time is reported
with its byte offset (exit 3, the other rows kept), a 200,000-SYN scan stays in bounded
memory with a flows row per connection, and a pair denser than the matcher's state budget
is bounded and named on stderr. Captures: tests/data/clean_200k.server.pcap (real kernel
TCP, tests/data/README.md) patched as in the issue, scripts/make_scan.py and
scripts/make_dense_pair.py."""

from __future__ import annotations

import importlib.util
import resource
import struct
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[3]
HSRTCP = [sys.executable, "-m", "hsrtcp"]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _make_scan():
    return _script("make_scan").write_scan


def test_a_pair_denser_than_the_matcher_budget_is_bounded_and_named(tmp_path):
    """One timestamp per capture (100,000 segments, 200,000 packets a side): nothing settles
    by time, so with a 2-MB budget the matcher drops buffered segments and closes windows
    early — counted in pair_stats and said on stderr, exit 0; with the default budget the
    same pair needs none of it."""
    c, s = tmp_path / "phone.pcap", tmp_path / "server.pcap"
    _script("make_dense_pair").write_dense_pair(str(c), str(s), 100_000, 0)
    # At one timestamp both captures come out byte-identical, which analyze refuses as one
    # capture given twice: the server's header gets sigfigs 1 (a field no reader uses).
    with open(s, "r+b") as f:
        f.seek(12)
        f.write(struct.pack("<I", 1))
    tight = subprocess.run([*HSRTCP, "analyze", "--client", str(c), "--server", str(s), "-o", str(tmp_path / "t"),
                            "-q", "--no-plot", "--match-memory", "2"], capture_output=True, text=True, timeout=300)
    assert tight.returncode == 0, tight.stderr
    assert f"warning: {c} + {s}:" in tight.stderr and "(2 MB, --match-memory)" in tight.stderr, tight.stderr
    st = pl.read_parquet(tmp_path / "t" / "pair_stats.parquet").row(0, named=True)
    assert st["pairs"] == 1 and st["budget_dropped_segments"] > 0, st
    room = subprocess.run([*HSRTCP, "analyze", "--client", str(c), "--server", str(s), "-o", str(tmp_path / "r"),
                           "-q", "--no-plot"], capture_output=True, text=True, timeout=300)
    assert room.returncode == 0 and "warning" not in room.stderr, room.stderr
    st = pl.read_parquet(tmp_path / "r" / "pair_stats.parquet").row(0, named=True)
    assert (st["budget_flushes"], st["budget_dropped_segments"]) == (0, 0), st


def test_absurd_record_time_is_reported_with_its_offset(tmp_path):
    b = bytearray((ROOT / "tests/data/clean_200k.server.pcap").read_bytes())
    struct.pack_into("<I", b, 286, 0xFFFFFFFF)  # the reproduction
    bad = tmp_path / "ts_bad.pcap"
    bad.write_bytes(b)
    r = subprocess.run([*HSRTCP, "analyze", str(bad), "-o", str(tmp_path / "o"), "--no-plot"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    assert "byte offset 286" in r.stdout + r.stderr
    cap = pl.read_parquet(tmp_path / "o" / "captures.parquet").row(0, named=True)
    assert (cap["time_jumps"], cap["time_jump_offset"], cap["truncated"]) == (1, 286, False)
    assert "time_jump=1" in cap["malformed_reasons"]
    series = pl.read_parquet(tmp_path / "o" / "series.parquet")
    assert series.height < 10  # a 0.02 s connection, not 2.5e9 one-second bins


def test_syn_scan_memory_is_bounded(tmp_path):
    scan = tmp_path / "scan.pcap"
    _make_scan()(str(scan), 200_000)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = subprocess.run([*HSRTCP, "analyze", str(scan), "-o", str(tmp_path / "o"), "-q", "--no-plot"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # 5.3 GB before (issue 16); the budget is 512 MB of connection state (docs/engine.md)
    if peak_kb > before:
        assert peak_kb < 700_000, f"peak RSS {peak_kb} KB"
    flows = pl.read_parquet(tmp_path / "o" / "flows.parquet", columns=["syn_count", "end_reason"])
    assert flows.height == 200_000
    assert flows["syn_count"].to_list() == [1] * 200_000
