"""packets.fate on the shared-server path (issue 31): two phone paths whose connections end at
one server capture (the layout of an MPTCP bundle, docs/formats/bundle.md), run with
``--packets``. Each packet gets its fate as in a single-path pair (docs/formats/packets.md).

Input: the server captures of two real fixture pairs (ack_blackout, data_blackout: taken one
after the other, distinct ports) joined into one capture, with each pair's client capture as
a phone path. Witness: per matched row, the counts of lost / ack_lost / sent rows equal the
row's own counters, and they equal what the single-path run of the same pair gives.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import polars as pl

from hsrtcp.pair import analyze_pairs_to

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fate_rows import sides  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
NAMES = ("ack_blackout", "data_blackout")


def _joined_server(dst: Path) -> Path:
    """One classic pcap holding both server captures' records in time order."""
    first, second = (DATA / f"{n}.server.pcap" for n in NAMES)
    a, b = first.read_bytes(), second.read_bytes()
    assert a[:24] == b[:24], "same pcap header (endianness, snaplen, link type)"
    ts = lambda d, off: struct.unpack_from("<II", d, off)  # noqa: E731  (first record's time)
    assert ts(a, 24) < ts(b, 24)
    dst.write_bytes(a + b[24:])
    return dst


def _counts(flows: pl.DataFrame, packets: pl.DataFrame) -> dict:
    """Per matched connection (by its server 4-tuple port): fate counts from the rows, each
    checked against the matched row's counters."""
    out = {}
    matched = flows.filter(pl.col("vantage") == "matched", pl.col("matched_data_dir").is_not_null())
    for m in matched.iter_rows(named=True):
        _, _, data, acks = sides(m, packets)
        c = {
            "lost": data.filter(pl.col("fate") == "lost").height,
            "sent": data.filter(pl.col("fate").is_in(["delivered", "lost", "capture_lost"])).height,
            "ack_lost": acks.filter(pl.col("fate") == "ack_lost").height,
            "acks_sent": acks.filter(pl.col("fate").is_in(["delivered", "ack_lost", "capture_lost"])).height,
        }
        assert c == {"lost": m["lost_data_packets"], "sent": m["data_packets_sent"],
                     "ack_lost": m["lost_ack_packets"], "acks_sent": m["ack_packets_sent"]}, m["flow_id"]
        out[m["data_packets_sent"], m["ack_packets_sent"]] = c
    return out


def test_shared_server_gives_each_packet_its_fate(tmp_path):
    server = _joined_server(tmp_path / "server.pcap")
    phones = [DATA / f"{n}.client.pcap" for n in NAMES]
    analyze_pairs_to([(p, server) for p in phones], tmp_path / "shared", packets=True, workers=2)
    flows = pl.read_parquet(tmp_path / "shared" / "flows.parquet")
    packets = pl.read_parquet(tmp_path / "shared" / "packets.parquet")
    shared = _counts(flows, packets)
    assert len(shared) == 2, shared
    # the same connections analyzed as two single-path pairs
    single, rows = {}, {}
    for n in NAMES:
        d = tmp_path / n
        analyze_pairs_to([(DATA / f"{n}.client.pcap", DATA / f"{n}.server.pcap")], d, packets=True)
        p = pl.read_parquet(d / "packets.parquet")
        single.update(_counts(pl.read_parquet(d / "flows.parquet"), p))
        for fate, k in p.group_by("fate").len().iter_rows():
            rows[fate] = rows.get(fate, 0) + k
    assert shared == single
    assert sum(c["lost"] for c in shared.values()) > 0 and sum(c["ack_lost"] for c in shared.values()) > 0
    # every row once (the server capture's rows too), with the verdicts of its own path's matcher
    assert dict(packets.group_by("fate").len().iter_rows()) == rows
