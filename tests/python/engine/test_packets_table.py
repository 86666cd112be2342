"""The `packets` table (docs/formats/packets.md) against tshark and the both-side truth.

Witnesses:
- tshark on every capture fixture of tests/data: for every TCP frame, frame number, time,
  sequence and acknowledgment numbers (raw through flows.seq_base_*, and relative, which
  equal Wireshark's when the direction's SYN was captured and are one less when not), payload
  length, flags, raw and scaled window, TSval/TSecr, IP ID and SACK blocks equal;
- hsrtcp.testing.truth (server and phone captures, an independent reader): the frames the
  server capture's rows mark as retransmissions are the truth's retransmitted data segments;
- the table agrees with the flows row it links to (retransmissions, DupACKs per class).
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

import hsrtcp
from hsrtcp.testing import peers
from hsrtcp.testing.packets_tshark import compare, tshark_rows
from hsrtcp.testing.truth import compute

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
FIXTURES = sorted(p for p in DATA.iterdir() if p.is_file() and (p.name.endswith((".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"))))
PAIRS = sorted({p.name.split(".")[0] for p in DATA.glob("*.server.pcap*")} & {p.name.split(".")[0] for p in DATA.glob("*.client.pcap*")})


def _need_tshark():
    if not peers.have("tshark"):
        pytest.skip("tshark not installed")


def analyze_packets(path: Path, **kw) -> tuple[pl.DataFrame, pl.DataFrame]:
    ds = hsrtcp.analyze(path, packets=True, **kw)
    return ds.extra["packets"], ds.flows


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_frame_equals_tshark(path):
    _need_tshark()
    packets, flows = analyze_packets(path)
    c = compare(path, packets, flows)
    assert c.mismatches == 0, c.first
    assert c.frames == len(packets)
    if c.frames:  # (quic.pcap: no TCP at all)
        assert c.checked_rel > 0 and c.checked_window > 0, (c.checked_rel, c.checked_window)


@pytest.mark.parametrize("name", PAIRS)
def test_server_retransmissions_are_the_truths(name):
    server = next(DATA.glob(f"{name}.server.pcap*"))
    client = next(DATA.glob(f"{name}.client.pcap*"))
    truth = compute(server, client)
    packets, flows = analyze_packets(server, vantage="server")
    ids = {(r["client_addr"], r["client_port"], r["server_addr"], r["server_port"], r["epoch"]): r["flow_id"]
           for r in flows.iter_rows(named=True)}
    compared = 0
    for ct in truth.connections:
        if not ct.data:
            continue
        fid = ids[(ct.client, ct.client_port, ct.server, ct.server_port, ct.epoch)]
        rows = packets.filter((pl.col("flow_id") == fid) & (pl.col("dir") == "s2c") & (pl.col("len") > 0))
        assert len(rows) == len(ct.data)
        for d, r in zip(ct.data, rows.iter_rows(named=True)):
            where = f"{name} frame {r['frame']} seq {d.seq}"
            assert (r["seq"], r["len"], r["ip_id"]) == (d.seq, d.length, d.ip_id), where
            assert abs(r["ts"] - d.ts_sent) < 5e-7, where
            # a zero-window probe repeats bytes sent before and is not a retransmission
            if r["note"] == "window_probe":
                continue
            assert (r["retrans"] is not None) == d.retrans, f"{where}: hsrtcp {r['retrans']}, truth {d.retrans}"
            compared += 1
    assert compared > 0


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_rows_add_up_to_the_flows_row(path):
    packets, flows = analyze_packets(path)
    per = packets.group_by("flow_id", "dir").agg(
        pl.len().alias("n"), pl.col("len").sum().alias("bytes"),
        pl.col("retrans").is_not_null().sum().alias("retrans"),
        (pl.col("dupack") == True).sum().alias("dupacks"),  # noqa: E712
        (pl.col("dupack").is_null() & ((pl.col("flags") & 16) > 0)).sum().alias("dupack_candidates"),
        (pl.col("note") == "undecided").sum().alias("undecided"),
        *[(pl.col("retrans") == c).sum().alias(c) for c in ("fast", "sack_refill", "rto", "tlp")])
    got = {(r["flow_id"], r["dir"]): r for r in per.iter_rows(named=True)}
    zero = {"n": 0, "bytes": 0, "retrans": 0, "dupacks": 0, "dupack_candidates": 0, "undecided": 0, "fast": 0, "sack_refill": 0, "rto": 0, "tlp": 0}
    for f in flows.iter_rows(named=True):
        for d in ("c2s", "s2c"):
            g = got.get((f["flow_id"], d), zero)
            assert g["n"] == f[f"{d}_packets"], (f["flow_id"], d)
            assert g["bytes"] == f[f"{d}_payload_bytes"], (f["flow_id"], d)
        if f["data_dir"] is None:
            continue
        dd = f["data_dir"]
        ack_dir = "c2s" if dd == "s2c" else "s2c"
        g, a = got.get((f["flow_id"], dd), zero), got.get((f["flow_id"], ack_dir), zero)
        # (null where the vantage cannot support the count: docs/formats/flows.md)
        assert g["retrans"] == (f["retransmissions"] or 0), f["flow_id"]
        for c in ("fast", "sack_refill", "rto", "tlp"):
            assert g[c] == (f[f"retrans_{c}"] or 0), (f["flow_id"], c)
        if f["retransmissions_undecided"] is not None:
            assert g["undecided"] == f["retransmissions_undecided"], f["flow_id"]
        if f["dupacks"] is not None:
            # candidates (null) are decided at later data: DupACKs or undecided
            lo, hi = a["dupacks"], a["dupacks"] + a["dupack_candidates"]
            assert lo <= f["dupacks"] <= hi, (f["flow_id"], lo, f["dupacks"], hi)
            if f["data_vantage"] == "sender":
                assert a["dupack_candidates"] == 0 and lo == f["dupacks"], f["flow_id"]


def _records(path: Path) -> tuple[bytes, list[bytearray]]:
    """Global header and records of a little-endian classic pcap."""
    raw = path.read_bytes()
    head, at, recs = raw[:24], 24, []
    while at < len(raw):
        caplen = struct.unpack_from("<I", raw, at + 8)[0]
        recs.append(bytearray(raw[at:at + 16 + caplen]))
        at += 16 + caplen
    return head, recs


def test_frames_count_every_record_not_only_tcp(tmp_path):
    """A TCP capture with a UDP (QUIC) record after every second TCP record, each at the time
    of the record before it: frame numbers are the file's, with the gaps where UDP was."""
    _need_tshark()
    head, tcp = _records(DATA / "small_50k.server.pcap")
    _, udp = _records(DATA / "quic.pcap")
    out, frames, tcp_frames = bytearray(head), 0, []
    for i, r in enumerate(tcp):
        out += r
        frames += 1
        tcp_frames.append(frames)
        if i % 2 == 1 and udp:
            u = udp.pop(0)
            u[0:8] = r[0:8]  # the time of the record before
            out += u
            frames += 1
    mixed = tmp_path / "mixed.pcap"
    mixed.write_bytes(bytes(out))
    packets, _ = analyze_packets(mixed)
    assert packets["frame"].to_list() == tcp_frames
    assert tcp_frames[-1] > len(tcp_frames)  # (the UDP records took numbers)
    assert sorted(tshark_rows(mixed)) == tcp_frames


def test_cli_writes_the_table_only_when_asked(tmp_path):
    cap = DATA / "drops_cubic.server.pcap"
    for argv, expect in ((["--packets"], True), ([], False)):
        out = tmp_path / ("with" if expect else "without")
        r = subprocess.run([str(ROOT / ".venv/bin/hsrtcp"), "analyze", str(cap), "-o", str(out), "-q", *argv],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert (out / "packets.parquet").exists() == expect
    meta = pq.read_metadata(tmp_path / "with" / "packets.parquet").metadata
    assert meta[b"hsrtcp.schema"] == b"packets" and meta[b"hsrtcp.schema_version"] == b"1"
    written = pl.read_parquet(tmp_path / "with" / "packets.parquet")
    in_memory, _ = analyze_packets(cap)
    assert written.equals(in_memory)


FRAMED = ("retransmission", "reordering", "duplicate", "window_probe", "sack_block", "spurious_retransmission")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_events_carry_the_frame_of_their_packet(path):
    ds = hsrtcp.analyze(path, packets=True)
    packets, events = ds.extra["packets"], ds.events
    framed = events.filter(pl.col("kind").is_in(FRAMED))
    assert framed["frame"].null_count() == 0
    assert events.filter(~pl.col("kind").is_in(FRAMED))["frame"].null_count() == len(events) - len(framed)
    rows = {r["frame"]: r for r in packets.iter_rows(named=True)}
    for e in framed.iter_rows(named=True):
        p = rows[e["frame"]]
        assert (p["flow_id"], p["ts"]) == (e["flow_id"], e["ts"]), e
        if e["kind"] == "retransmission":
            assert p["retrans"] == e["class"] and p["seq"] <= e["seq_start"] < p["seq"] + max(p["len"], 1), e
        elif e["kind"] == "sack_block":
            assert p["sack"] is not None and f"{e['seq_start']}-{e['seq_end']}" in p["sack"].split(","), e
        elif e["class"] == "dsack":  # the re-sent segment's bytes, inside the D-SACK block (which
            # may cover several duplicates: fixture cubic_sub_ms_acked_resend)
            blocks = [tuple(map(int, b.split("-"))) for b in (p["sack"] or "").split(",") if b]
            assert any(lo <= e["seq_start"] and e["seq_end"] <= hi for lo, hi in blocks), e
    # every retransmission row has its event
    retx = packets.filter(pl.col("retrans").is_not_null())["frame"].sort().to_list()
    assert retx == framed.filter(pl.col("kind") == "retransmission")["frame"].sort().to_list()
    # the default run (no packets table, connections kept as embryos) gives the same events
    assert hsrtcp.analyze(path).events.sort("flow_id", "ts", "kind", "frame").equals(
        events.sort("flow_id", "ts", "kind", "frame"))


def test_cli_refuses_packets_for_a_corpus(tmp_path):
    r = subprocess.run([str(ROOT / ".venv/bin/hsrtcp"), "analyze", "--corpus", str(DATA / "study"), "-o",
                        str(tmp_path / "o"), "--packets"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "--packets is for single runs" in r.stderr


def test_the_schema_is_declared_with_its_version():
    from hsrtcp.results import VERSIONS

    assert VERSIONS["packets"] == 1  # the fate column was added without a new version (adding keeps it)
    from hsrtcp.api import schemas

    doc = (ROOT / "docs" / "formats" / "packets.md").read_text()
    for c, t, meaning in schemas()["packets"]:
        assert f"| {c} | {t} | {meaning} |" in doc, c
