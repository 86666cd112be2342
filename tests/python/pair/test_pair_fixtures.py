"""Two-vantage analysis on the real-kernel fixture pairs (tests/data/README.md).

Witnesses: the ground truth stored with each fixture (hsrtcp.testing.truth, computed by an
independent pure-Python matcher and backed by the router's nft drop counters), the clock
offset the fixture maker added on purpose, and the independent cause check in witness.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.pair import analyze_pair, match_tables

sys.path.insert(0, str(Path(__file__).resolve().parent))
from witness import check_loss_series, check_spurious_columns, check_spurious_events, spurious_rto_packets  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
PAIRS = ["twovantage_offset", "drops_cubic", "ack_blackout", "ack_delay", "data_blackout", "ipv6_drops",
         "reno_nosack_nots", "multi_concurrent", "multi_sequential", "reuse_4tuple", "bbr_drops",
         "clean_200k", "zero_window", "sll1", "any_sll2", "nano"]


def _meta(name):
    return json.loads((DATA / f"{name}.json").read_text())


def _run(name):
    return analyze_pair(DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap")


def _matched(ds):
    return ds.flows.filter(pl.col("vantage") == "matched")


@pytest.mark.parametrize("name", PAIRS)
def test_data_and_ack_loss_equal_truth(name):
    meta = _meta(name)
    m = _matched(_run(name))
    truth = {(t["client_port"], t["client_isn"]): t for t in meta["truth"]["connections"]}
    assert m.filter(pl.col("pairing").is_in(["client_only", "server_only"])).is_empty()
    assert len(m) == len(truth)
    for row in m.to_dicts():
        # match truth by the client port and the epoch order of the 4-tuple
        cands = [t for (port, _), t in truth.items() if port == row["sv_client_port"]]
        t = cands[row["sv_epoch"]] if len(cands) > 1 else cands[0]
        assert row["data_packets_sent"] == t["data_sent"], name
        assert row["lost_data_packets"] == t["data_lost"], name
        assert row["ack_packets_sent"] == t["acks_sent"], name
        assert row["lost_ack_packets"] == t["acks_lost"], name
        if t["data_sent"]:
            assert row["p_d"] == pytest.approx(t["p_data"], abs=0)
        if t["acks_sent"]:
            assert row["p_a"] == pytest.approx(t["p_ack"], abs=0)
        assert row["capture_loss_client_packets"] == 0 and row["capture_loss_server_packets"] == 0
        assert row["unknown_fate_packets"] == 0


def test_router_counters_agree():
    """The nft counters of the router are the strongest witness: every drop is counted there."""
    for name in ("drops_cubic", "twovantage_offset", "ipv6_drops"):
        meta = _meta(name)
        m = _matched(_run(name))
        assert m["lost_data_packets"].sum() == meta["nft"]["data_dropped"], name
        assert m["lost_ack_packets"].sum() == meta["nft"]["ack_dropped"], name


def test_clock_offset_added_on_purpose_is_found():
    meta = _meta("twovantage_offset")
    ds = _run("twovantage_offset")
    m = _matched(ds).row(0, named=True)
    # the client capture's clock was moved forward: server = client - offset
    assert abs(m["clock_offset_s"] + meta["time_offset_s"]) < 1e-3
    assert m["clock_offset_uncertainty_s"] < 1e-3
    # establishment time (M18) on the aligned clock, witnessed with the independent (dpkt) reader and
    # the true clock: server's first receipt of an ACK of its SYN-ACK - client's first SYN
    from hsrtcp.testing.pcapio import read_tcp

    srv = list(read_tcp(DATA / "twovantage_offset.server.pcap"))
    cli = list(read_tcp(DATA / "twovantage_offset.client.pcap"))
    synack = next(p for p in srv if p.syn and p.has_ack)
    hs_ack = next(p for p in srv if p.dport == synack.sport and p.has_ack and not p.syn
                  and p.ack == (synack.seq + 1) % (1 << 32))
    syn = next(p for p in cli if p.syn and not p.has_ack)
    expected = hs_ack.ts - (syn.ts - meta["time_offset_s"])
    assert m["establishment_time_s"] == pytest.approx(expected, abs=1e-6)
    # one-way delays on the aligned clock: a netns path has microsecond delays
    assert 0 <= m["owd_down_min_s"] < 1e-3 and 0 <= m["owd_up_min_s"] < 1e-3


def test_clock_offset_is_found_for_every_fixture():
    for name in ("drops_cubic", "ack_blackout", "multi_concurrent"):
        st = match_tables(DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap")["stats"]
        assert abs(st["clock_offset_s"] - 0.0) < 1e-3, name
        assert abs(st["clock_offset_s"]) <= st["clock_offset_uncertainty_s"] + 1e-6, name


@pytest.mark.parametrize("name,offset", [("ack_blackout", 0.0), ("reno_nosack_nots", 0.0),
                                         ("data_blackout", 0.0), ("twovantage_offset", None),
                                         ("ack_delay", 0.0)])
def test_every_spurious_timeout_has_the_witnessed_cause(name, offset):
    meta = _meta(name)
    offset = meta.get("time_offset_s") or 0.0 if offset is None else offset
    ds = _run(name)
    ev = ds.events.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == "two_vantage"))
    port = meta["connections"][0]["client_port"] if "client_port" in meta["connections"][0] else \
        meta["truth"]["connections"][0]["client_port"]
    problems = check_spurious_events(DATA / f"{name}.server.pcap", DATA / f"{name}.client.pcap",
                                     ev.to_dicts(), client_port=port,
                                     server_port=meta["server_port"], client_offset_s=offset)
    assert problems == []
    m = _matched(ds).row(0, named=True)
    assert m["spurious_timeouts_2v"] == len(ev)
    assert m["spurious_timeouts_ack_loss"] == ev.filter(pl.col("cause") == "ack_loss").height


def test_ack_blackout_spurious_timeout_is_ack_loss():
    """Every pure ACK dropped for 300 ms: the server times out although the data arrived."""
    ds = _run("ack_blackout")
    ev = ds.events.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == "two_vantage"))
    assert ev.height >= 1
    assert set(ev["cause"]) == {"ack_loss"}
    m = _matched(ds).row(0, named=True)
    # the ACK burst loss is counted per round (M36), not from p_a^w
    assert m["ack_burst_loss_rounds"] >= 1 and 0 < m["ack_burst_loss"] < 1


def test_q_in_data_blackout_counts_the_lost_rto_retransmissions():
    """All data dropped 0.3-1.2 s: no ACK arrives, so every retransmission the truth counts as
    lost is an RTO retransmission of the head (exponential backoff), and q is their share."""
    meta = _meta("data_blackout")
    m = _matched(_run("data_blackout")).row(0, named=True)
    t = meta["truth"]["connections"][0]
    assert m["rto_sequences"] == 1
    assert m["rto_retransmissions_lost"] == t["retrans_lost"]
    assert m["q"] == pytest.approx(m["rto_retransmissions_lost"] / m["rto_retransmissions"])
    assert m["spurious_timeouts_2v"] == 0  # the data really was lost


def test_connections_in_one_capture_only_are_reported():
    r = match_tables(DATA / "clean_200k.client.pcap", DATA / "small_50k.server.pcap")
    pairing = sorted(r["matched"]["pairing"].to_list())
    assert pairing == ["client_only", "server_only"]


@pytest.mark.parametrize("name", ["ack_blackout", "data_blackout", "reno_nosack_nots"])
def test_timeouts_agree_with_the_single_capture_engine(name):
    """Peer check: the server-side engine (its own RTO classifier) calls the first
    retransmission of every two-vantage timeout sequence an RTO retransmission."""
    ds = _run(name)
    server_id = ds.flows.filter(pl.col("vantage") == "server")["flow_id"][0]
    rto = ds.events.filter((pl.col("flow_id") == server_id) & (pl.col("kind") == "retransmission")
                           & (pl.col("class") == "rto"))
    if rto.is_empty():
        pytest.skip("the single-capture engine emits no RTO retransmissions (not built in)")
    mine = ds.events.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == "two_vantage"))
    starts = set(zip(rto["seq_start"].to_list(), [round(t, 6) for t in rto["ts"].to_list()]))
    for e in mine.to_dicts():
        assert (e["seq_start"], round(e["ts"], 6)) in starts, e


@pytest.mark.parametrize("name", ["twovantage_offset", "ack_blackout", "reno_nosack_nots", "ack_delay"])
def test_spurious_timeouts_are_spurious_retransmissions_of_the_truth_with_its_cause(name):
    """hsrtcp.testing.truth classifies every spurious retransmission with M14 on the true
    clock; each two-vantage spurious timeout is one of them (its first RTO retransmission),
    with the same cause."""
    from hsrtcp.testing import truth

    meta = _meta(name)
    tr = truth.compute(DATA / f"{name}.server.pcap", DATA / f"{name}.client.pcap",
                       client_time_offset_s=meta.get("time_offset_s") or 0.0)
    segs = [d for c in tr.connections for d in c.data]
    ev = _run(name).events.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == "two_vantage"))
    assert ev.height >= 1
    for e in ev.to_dicts():
        hit = [d for d in segs if d.seq == e["seq_start"] and abs(d.ts_sent - e["ts"]) < 1e-6]
        assert len(hit) == 1, e
        assert hit[0].spurious and hit[0].spurious_cause == e["cause"], (e, hit[0])


def _rto_scan(server_pcap):
    """Pure-Python scan of the sender capture (witness for M10 as docs/two-vantage.md defines
    it): a retransmission of the segment holding snd_una, >= 180 ms after that segment's
    previous transmission, not within 0.5 ms of an ACK arrival, and not within 180 ms of a
    duplicate ACK that was the last ACK to arrive. Returns (sequences = distinct heads,
    retransmissions)."""
    from hsrtcp.testing.pcapio import read_tcp

    pk = list(read_tcp(server_pcap))
    synack = next(p for p in pk if p.syn and p.has_ack)
    isn, port = synack.seq, synack.sport
    rel = lambda x: (x - isn) % (1 << 32)  # noqa: E731
    nxt = una = None
    last_ack = last_dup = float("-inf")
    prev_tx, heads, n = {}, set(), 0
    for p in pk:
        if p.dport == port and p.has_ack and una is not None:
            if rel(p.ack) > una:
                una = rel(p.ack)
            elif nxt > una:
                last_dup = p.ts
            last_ack = p.ts
        elif p.sport == port and p.payload_len > 0:
            s = rel(p.seq)
            if una is None:
                una = nxt = s
            prev = prev_tx.get(s)
            dup_recent = last_dup >= last_ack and p.ts - last_dup < 0.18
            if (s < nxt and s <= una < s + p.payload_len and prev is not None
                    and p.ts - prev >= 0.18 and p.ts - last_ack >= 0.0005 and not dup_recent):
                heads.add(s)
                n += 1
            prev_tx[s] = p.ts
            nxt = max(nxt, s + p.payload_len)
    return len(heads), n


@pytest.mark.parametrize("name", ["reno_nosack_nots", "data_blackout", "ack_blackout", "drops_cubic",
                                  "twovantage_offset", "ack_delay"])
def test_timeout_sequences_match_an_independent_scan(name):
    m = _matched(_run(name)).row(0, named=True)
    assert (m["rto_sequences"], m["rto_retransmissions"]) == _rto_scan(DATA / f"{name}.server.pcap")


def test_ack_delay_spurious_timeout_is_rto_estimation_with_its_bias():
    """Uplink throttled to 2 kbit/s for 0.4 s, nothing dropped: the ACK of the head arrives
    after the RTO fired. Cause RTOEI; bias t6 - t4 = the ACK's arrival - the retransmission,
    witnessed with the independent (dpkt) reader."""
    from hsrtcp.testing.pcapio import read_tcp

    ds = _run("ack_delay")
    ev = ds.events.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == "two_vantage"))
    assert ev["cause"].to_list() == ["rto_estimation"]
    e = ev.row(0, named=True)
    srv = list(read_tcp(DATA / "ack_delay.server.pcap"))
    synack = next(p for p in srv if p.syn and p.has_ack)
    first_cover = next(p for p in srv if p.dport == synack.sport and p.has_ack and p.ts > e["ts"]
                       and (p.ack - synack.seq) % (1 << 32) > e["seq_start"])
    assert e["value"] == pytest.approx(first_cover.ts - e["ts"], abs=1e-6)
    assert e["value"] > 0


@pytest.mark.parametrize("name", PAIRS)
def test_matched_spurious_columns_are_two_vantage_and_add_up(name):
    """M12–M14 in the matched row come from the two-vantage detection: the spurious count
    equals spurious_timeouts_2v and the sum of its causes (ACKL + RTOEI), M13 = spurious RTO
    retransmissions / all retransmissions with the denominator equal to the truth's data
    retransmissions and the numerator to an independent count on the server capture. (Before,
    the matched row copied the server row: ack_delay and reno_nosack_nots showed 0 spurious
    timeouts next to spurious_timeouts_2v = 1.)"""
    meta = _meta(name)
    ds = _run(name)
    m = _matched(ds)
    truth = {(t["client_port"], t["client_isn"]): t for t in meta["truth"]["connections"]}
    ev = ds.events.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == "two_vantage"))
    for row in m.to_dicts():
        assert check_spurious_columns(row) == [], name
        cands = [t for (port, _), t in truth.items() if port == row["sv_client_port"]]
        t = cands[row["sv_epoch"]] if len(cands) > 1 else cands[0]
        assert row["retransmitted_packets"] == t["data_retrans"], name
        mine = ev.filter(pl.col("flow_id") == row["flow_id"]).to_dicts()
        assert len(mine) == row["spurious_timeouts"]
        if mine:
            assert row["spurious_rto_packets"] == spurious_rto_packets(
                DATA / f"{name}.server.pcap", mine, server_port=row["sv_server_port"]), name
    if name in ("ack_delay", "reno_nosack_nots"):
        assert m["spurious_timeouts"].sum() == 1


@pytest.mark.parametrize("name", ["drops_cubic", "data_blackout", "twovantage_offset", "multi_concurrent",
                                  "ipv6_drops"])
def test_matched_series_has_m6_loss_per_bin(name):
    from hsrtcp.testing import truth

    meta = _meta(name)
    tr = truth.compute(DATA / f"{name}.server.pcap", DATA / f"{name}.client.pcap",
                       client_time_offset_s=meta.get("time_offset_s") or 0.0)
    check_loss_series(_run(name), tr.connections)
