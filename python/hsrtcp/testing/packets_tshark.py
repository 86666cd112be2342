"""The `packets` table (docs/formats/packets.md) frame by frame against tshark.

One comparison for the fixtures' test (tests/python/engine/test_packets_table.py) and the
bench capture (bench/run.py --packets): for every TCP frame, frame number, time, raw and
relative seq/ack, payload length, flags, raw and scaled window, TSval/TSecr, IP ID and SACK
blocks. tshark's rows are streamed in frame order and merged with the table's rows, so the
850 k-frame bench capture is compared without holding tshark's output in memory.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import polars as pl

MOD = 1 << 32
FIELDS = ["frame.number", "frame.time_epoch", "ip.src", "ipv6.src", "tcp.srcport", "tcp.seq", "tcp.seq_raw",
          "tcp.ack", "tcp.ack_raw", "tcp.len", "tcp.flags", "tcp.window_size_value", "tcp.window_size",
          "tcp.window_size_scalefactor", "tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr", "ip.id",
          "tcp.options.sack_le", "tcp.options.sack_re", "_ws.malformed"]


def _command(path: Path) -> list[str]:
    cmd = ["tshark", "-n", "-r", str(path), "-Y", "tcp and not icmp and not icmpv6", "-T", "fields", "-E", "occurrence=a",
           "-E", "separator=\t", "-o", "tcp.relative_sequence_numbers:TRUE", "-o", "tcp.desegment_tcp_streams:FALSE"]
    for f in FIELDS:
        cmd += ["-e", f]
    return cmd


def tshark_stream(path: Path) -> Iterator[dict]:
    """Every TCP frame tshark dissects, in frame order (relative numbers on, no reassembly)."""
    with subprocess.Popen(_command(path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            yield dict(zip(FIELDS, line.rstrip("\n").split("\t")))
        err = p.stderr.read()
    if p.returncode:
        raise subprocess.CalledProcessError(p.returncode, p.args, stderr=err)


def tshark_rows(path: Path) -> dict[int, dict]:
    """tshark_stream by frame number."""
    return {int(v["frame.number"]): v for v in tshark_stream(path)}


def _int(s: str) -> int | None:
    return None if s == "" else int(s, 0)


@dataclass
class Comparison:
    frames: int = 0  # frames both sides have, each compared field by field
    mismatches: int = 0
    first: list[str] = field(default_factory=list)  # the first few mismatches, said in words
    checked_rel: int = 0  # frames whose direction's SYN was captured (relative numbers = Wireshark's)
    checked_window: int = 0  # frames with a scaled window
    checked_sack: int = 0

    def miss(self, what: str) -> None:
        self.mismatches += 1
        if len(self.first) < 20:
            self.first.append(what)


def _frame(c: Comparison, r: dict, w: dict, b: dict, where: str) -> None:
    """One frame: every disagreement is one mismatch named in c.first."""
    def eq(name, ours, theirs):
        if ours != theirs:
            c.miss(f"{where}: {name} hsrtcp {ours!r}, tshark {theirs!r}")

    own, other = ("c2s", "s2c") if r["dir"] == "c2s" else ("s2c", "c2s")
    if abs(r["ts"] - float(w["frame.time_epoch"])) >= 5e-7:
        c.miss(f"{where}: time hsrtcp {r['ts']!r}, tshark {w['frame.time_epoch']}")
    eq("raw seq", (r["seq"] + b[f"seq_base_{own}"]) % MOD, int(w["tcp.seq_raw"]))
    syn_seen = {"c2s": b["syn_count"] > 0, "s2c": b["synack_count"] > 0}
    # Wireshark starts a direction whose SYN it has not seen at 1, hsrtcp at 0
    eq("relative seq - tshark's", int(w["tcp.seq"]) - r["seq"], 0 if syn_seen[own] else 1)
    c.checked_rel += syn_seen[own]
    flags = int(w["tcp.flags"], 16) & 0x1FF
    eq("flags", r["flags"], flags)
    if flags & 0x10:
        eq("raw ack", (r["ack"] + b[f"seq_base_{other}"]) % MOD if r["ack"] is not None else None,
           int(w["tcp.ack_raw"]))
        if r["ack"] is not None:
            eq("relative ack - tshark's", int(w["tcp.ack"]) - r["ack"], 0 if syn_seen[other] else 1)
    else:
        eq("ack without the ACK flag", r["ack"], None)
    eq("len", r["len"], int(w["tcp.len"]))
    eq("window_raw", r["window_raw"], int(w["tcp.window_size_value"]))
    scale = _int(w["tcp.window_size_scalefactor"])
    if r["window"] is None:
        if not (scale == -1 and not flags & 0x2):
            c.miss(f"{where}: window unknown to hsrtcp, scale known to tshark ({scale})")
    else:
        eq("window", r["window"], int(w["tcp.window_size"]))
        c.checked_window += 1
    eq("tsval", r["tsval"], _int(w["tcp.options.timestamp.tsval"]))
    eq("tsecr", r["tsecr"], _int(w["tcp.options.timestamp.tsecr"]))
    eq("ip_id", r["ip_id"], _int(w["ip.id"]))
    if w["tcp.options.sack_le"] and syn_seen[other]:
        blocks = ",".join(f"{le}-{re}" for le, re in zip(w["tcp.options.sack_le"].split(","),
                                                          w["tcp.options.sack_re"].split(",")))
        eq("sack", r["sack"], blocks)
        c.checked_sack += 1
    elif not w["tcp.options.sack_le"]:
        eq("sack", r["sack"], None)


def compare(path: Path, packets: pl.DataFrame, flows: pl.DataFrame) -> Comparison:
    """The packets table of `path` against tshark on `path`: every frame either side has.

    A frame only one side has is a mismatch; frames tshark calls malformed are left out.
    """
    c = Comparison()
    name = Path(path).name
    base = {r["flow_id"]: r for r in flows.select(
        "flow_id", "seq_base_c2s", "seq_base_s2c", "syn_count", "synack_count").iter_rows(named=True)}
    ours = packets.iter_rows(named=True)
    theirs = (w for w in tshark_stream(path) if not w["_ws.malformed"])
    r, w, last = next(ours, None), next(theirs, None), 0
    while r is not None or w is not None:
        rf = r["frame"] if r is not None else None
        wf = int(w["frame.number"]) if w is not None else None
        if rf is not None and rf <= last:
            c.miss(f"{name} frame {rf}: rows not in capture order (after frame {last})")
        if wf is None or (rf is not None and rf < wf):
            c.miss(f"{name} frame {rf}: a row hsrtcp has and tshark does not")
            last, r = rf, next(ours, None)
        elif rf is None or wf < rf:
            c.miss(f"{name} frame {wf}: a TCP frame tshark has and hsrtcp does not")
            w = next(theirs, None)
        else:
            _frame(c, r, w, base[r["flow_id"]], f"{name} frame {rf}")
            c.frames += 1
            last, r, w = rf, next(ours, None), next(theirs, None)
    return c
