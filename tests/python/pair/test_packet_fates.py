"""packets.fate (docs/formats/packets.md, "Fates"): the matcher's verdict on every packet
of a pair, per capture record.

Witnesses: the matched row's own counters (p_d's and p_a's numerators and denominators,
capture loss) counted again from the rows, and the independent ground truth
(hsrtcp.testing.truth: a pure-Python matcher over both captures) frame by frame.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.pair import analyze_pairs_to
from hsrtcp.testing import truth

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fate_rows import pure_ack, sides  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
# Every pair fixture: X.client.pcap[.gz] with X.server.pcap[.gz] of the same suffix.
PAIRS = sorted(p.name.split(".client.")[0] + "|" + p.name.split(".client.")[1]
               for p in DATA.glob("*.client.pcap*") if (DATA / p.name.replace(".client.", ".server.")).exists())


def _run(tmp_path, name):
    stem, suffix = name.split("|")
    c, s = DATA / f"{stem}.client.{suffix}", DATA / f"{stem}.server.{suffix}"
    analyze_pairs_to([(c, s)], tmp_path, packets=True)
    return c, s, pl.read_parquet(tmp_path / "flows.parquet"), pl.read_parquet(tmp_path / "packets.parquet")




@pytest.mark.parametrize("name", PAIRS)
def test_fates_count_as_the_matched_row(tmp_path, name):
    _, _, flows, packets = _run(tmp_path, name)
    matched = flows.filter(pl.col("vantage") == "matched", pl.col("matched_data_dir").is_not_null())
    assert matched.height > 0
    assert set(packets["fate"].drop_nulls().unique()) <= {
        "delivered", "lost", "ack_lost", "capture_lost", "sender_missed", "unknown"}
    total_lost = 0
    for m in matched.iter_rows(named=True):
        at_snd, at_rcv, data, acks = sides(m, packets)
        sent = data.filter(pl.col("fate").is_in(["delivered", "lost", "capture_lost"]))
        assert data.filter(pl.col("fate") == "lost").height == m["lost_data_packets"], m["flow_id"]
        assert sent.height == m["data_packets_sent"]
        assert acks.filter(pl.col("fate") == "ack_lost").height == m["lost_ack_packets"]
        assert acks.filter(pl.col("fate").is_in(["delivered", "ack_lost", "capture_lost"])).height \
            == m["ack_packets_sent"]
        # a delivered packet is delivered in both captures: as many rows on either side
        for d in ("c2s", "s2c"):
            n = [t.filter(pl.col("dir") == d, pl.col("fate") == "delivered").height for t in (at_snd, at_rcv)]
            assert n[0] == n[1]
        total_lost += m["lost_data_packets"]
    # the receiver's rows never carry a sender's verdict
    assert packets.filter(pl.col("fate") == "lost").height >= total_lost


@pytest.mark.parametrize("name", [n for n in PAIRS if n.startswith(("data_blackout", "drops_cubic|", "ack_blackout",
                                                                     "bbr_drops", "ipv6_drops"))])
def test_fates_equal_the_truth_per_frame(tmp_path, name):
    c, s, flows, packets = _run(tmp_path, name)
    t = truth.compute(s, c)
    data, acks = t.frames()
    m = flows.filter(pl.col("vantage") == "matched", pl.col("matched_data_dir") == "s2c")
    srv = packets.filter(pl.col("flow_id").is_in(m["server_flow_id"].implode()), pl.col("dir") == "s2c",
                         pl.col("len") > 0)
    cli = packets.filter(pl.col("flow_id").is_in(m["client_flow_id"].implode()), pl.col("dir") == "c2s")
    us = pl.col("ts").mul(1e6).round().cast(pl.Int64)
    # server data rows <-> truth data segments by (time, seq, length)
    j = srv.with_columns(us.alias("us")).join(
        data.with_columns(pl.col("ts_sent").mul(1e6).round().cast(pl.Int64).alias("us"),
                          pl.col("length").cast(pl.UInt32).alias("len")),
        on=["us", "seq", "len"], how="inner")
    assert j.height == data.height == srv.height, (j.height, data.height, srv.height)
    judged = j.filter(pl.col("fate") != "unknown")
    assert judged.height >= 0.99 * j.height
    # lost <=> the truth has it never arriving (capture loss is no network loss: none here)
    assert judged.filter(pl.col("fate") == "capture_lost").height == 0
    # Identical copies (a fast retransmit in its original's TSval tick: same seq, length,
    # TSval) are matched first sent <-> first seen, the truth tells them apart by IP ID: per
    # group of copies the lost ones are as many; every other frame has the truth's fate.
    key = ["seq", "len", "tsval"]
    judged = judged.with_columns(pl.len().over(key).alias("copies"))
    unique = judged.filter(pl.col("copies") == 1)
    bad = unique.filter((pl.col("fate") == "lost") == pl.col("arrived"))
    assert bad.height == 0, bad.select("frame", "seq", "fate", "arrived").head()
    groups = judged.filter(pl.col("copies") > 1).group_by(key).agg(
        (pl.col("fate") == "lost").sum().alias("lost"), (~pl.col("arrived")).sum().alias("truth"))
    assert groups.filter(pl.col("lost") != pl.col("truth")).height == 0
    assert unique.height >= 0.9 * judged.height
    assert judged.filter(pl.col("fate") == "lost").height == (~judged["arrived"]).sum()
    # client pure ACK rows <-> truth ACKs by (time, ack, window, IP ID)
    ca = cli.filter(pure_ack(cli)).with_columns(us.alias("us"), pl.col("window_raw").cast(pl.Int64).alias("w"),
                                                 pl.col("ip_id").cast(pl.Int64).fill_null(-1).alias("id"))
    ja = ca.join(acks.with_columns(pl.col("ts_sent").mul(1e6).round().cast(pl.Int64).alias("us"),
                                   pl.col("window").cast(pl.Int64).alias("w"),
                                   pl.col("ip_id").cast(pl.Int64).fill_null(-1).alias("id")),
                 on=["us", "ack", "w", "id"], how="inner")
    assert ja.height == acks.height
    ja = ja.filter(pl.col("fate") != "unknown").with_columns(pl.len().over("ack", "w", "tsval", "sack").alias("copies"))
    bad = ja.filter(pl.col("copies") == 1, (pl.col("fate") == "ack_lost") == pl.col("arrived"))
    assert bad.height == 0, bad.select("frame", "ack", "fate", "arrived").head()
    assert ja.filter(pl.col("fate") == "ack_lost").height == (~ja["arrived"]).sum()
    if name.startswith("data_blackout"):
        assert j.filter(pl.col("fate") == "lost").height == 56  # the matched row's lost_data_packets


def test_single_capture_fate_is_null(tmp_path):
    import hsrtcp

    packets = hsrtcp.analyze(DATA / "data_blackout.server.pcap", packets=True).extra["packets"]
    assert packets.height > 0
    assert packets["fate"].null_count() == packets.height
