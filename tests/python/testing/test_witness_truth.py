"""Ground truth of the committed fixtures against three independent witnesses: the kernel
(TCP_INFO of the server socket), the router (nft drop counters) and the peer tools."""

from __future__ import annotations

import pytest
from witness_helpers import DATA, fixture_names, load_meta, pcaps

from hsrtcp.testing import peers, truth

NAMES = fixture_names()


def _truth(name):
    meta = load_meta(name)
    srv, cli = pcaps(name)
    return meta, truth.compute(srv, cli, client_time_offset_s=meta["time_offset_s"] or 0.0)


def test_there_are_fixtures():
    assert len(NAMES) >= 14


@pytest.mark.parametrize("name", NAMES)
def test_truth_agrees_with_kernel_and_router(name):
    meta, t = _truth(name)
    # the server agent lists connections in accept order; pair them by client port, in order
    # (a reused 4-tuple appears twice with the same port)
    queue: dict = {}
    for c in meta["connections"]:
        queue.setdefault(c["client_port"], []).append(c)
    assert len(t.connections) == len(meta["connections"])
    for c in t.connections:
        server = queue[c.client_port].pop(0)
        info = server["tcp_info"]
        # Linux counts every retransmitted packet, SYN-ACK and FIN included
        assert c.sender_retrans_total == info["total_retrans"], c.summary()
        # data_segs_out counts every data-carrying segment, retransmissions included
        assert c.data_sent == info["data_segs_out"], c.summary()
        # the highest byte sent is exactly what the application wrote
        assert max(d.seq + d.length for d in c.data) - 1 == server["bytes_sent"]
        assert c.unmatched_client_data == 0 and c.unmatched_server_acks == 0
        # Every packet the server socket sent or received, as the kernel counts them. Not in
        # segs_out/segs_in: the ACK of the client's FIN (sent once the socket is in TIME_WAIT)
        # and handshake retransmissions handled by the listener's request socket.
        assert c.server_packets_sent == info["segs_out"] + 1 + c.synack_retrans
        assert c.server_packets_received == info["segs_in"] + c.syn_retrans
    tot = t.totals()
    nft = meta["nft"]
    assert tot["data_lost"] == nft["data_dropped"] + (nft["qdisc_dropped"] or 0)
    assert tot["acks_lost"] == nft["ack_dropped"] + (nft.get("qdisc_dropped_up") or 0)
    if meta["testbed"].get("p_data") or meta["testbed"].get("p_ack"):
        assert tot["data_sent"] == nft["data_seen"]
        assert tot["acks_sent"] == nft["ack_seen"]


@pytest.mark.parametrize("name", NAMES)
def test_recorded_truth_is_reproducible(name):
    meta, t = _truth(name)
    assert t.summary() == meta["truth"]


def test_blackouts_produce_the_events_they_are_for():
    _, ack = _truth("ack_blackout")
    assert ack.totals()["spurious_retrans"] >= 1 and ack.totals()["data_lost"] == 0
    # all ACKs vanished in the window: the spurious RTO is caused by ACK loss (M14)
    assert ack.totals()["spurious_ack_loss"] >= 1
    _, delay = _truth("ack_delay")
    # ACKs only delayed, none lost: the spurious RTO is an RTO estimation problem (M14)
    assert delay.totals()["acks_lost"] == 0 and delay.totals()["spurious_rto_estimation"] >= 1
    _, data = _truth("data_blackout")
    assert data.totals()["retrans_lost"] >= 1  # a retransmission lost inside the RTO phase


def test_reused_four_tuple_gives_two_epochs():
    _, t = _truth("reuse_4tuple")
    c0, c1 = t.connections
    assert (c0.client, c0.client_port, c0.server, c0.server_port) == \
        (c1.client, c1.client_port, c1.server, c1.server_port)
    assert (c0.epoch, c1.epoch) == (0, 1) and c0.client_isn != c1.client_isn


@pytest.mark.skipif(not peers.have("tcptrace"), reason="tcptrace not installed")
@pytest.mark.parametrize("name", NAMES)
def test_truth_agrees_with_tcptrace_at_the_sender(name):
    meta, t = _truth(name)
    table = peers.tcptrace(DATA / f"{name}.server.pcap")
    for c in t.connections:
        recs = peers.lookup(table, c.client, c.client_port, c.server, c.server_port)
        r = recs[c.epoch]
        side = "b2a" if r["host_a"] == (c.client, c.client_port) else "a2b"
        d = r[side]
        # tcptrace's rexmt also counts a retransmitted SYN-ACK: the SYN occupies a sequence number
        assert d["rexmt_data_pkts"] == c.data_retrans + c.synack_retrans
        assert d["actual_data_pkts"] == c.data_sent
        assert d["actual_data_bytes"] == c.payload_bytes_sent
        assert d["unique_bytes_sent"] == max(x.seq + x.length for x in c.data) - 1


@pytest.mark.skipif(not peers.have("tshark"), reason="tshark not installed")
@pytest.mark.parametrize("name", ["drops_cubic", "reno_nosack_nots", "ipv6_drops", "data_blackout"])
def test_truth_agrees_with_tshark_at_the_sender(name):
    # At the sender nothing can arrive out of order, so tshark's out-of-order flags on data it
    # sends are retransmissions it misclassified (short-iRTT rule, analyzers.md §2.2).
    meta, t = _truth(name)
    rows = peers.tshark_packets(DATA / f"{name}.server.pcap")
    flagged = sum(1 for r in rows if r["src"] == meta["server_addr"] and r["len"] and (
        r["retransmission"] or r["spurious_retransmission"] or r["out_of_order"]))
    assert flagged == t.totals()["data_retrans"]


def test_readme_lists_every_fixture_file():
    readme = (DATA / "README.md").read_text()
    files = [p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"]
    assert files
    missing = [f for f in files if f"| {f} |" not in readme]
    assert not missing, f"tests/data/README.md does not list: {missing}"


@pytest.mark.parametrize("name", ["drops_cubic", "data_blackout", "multi_concurrent"])
def test_series_adds_up(name):
    _, t = _truth(name)
    for c in t.connections:
        rows = c.series(0.1)
        assert sum(r["data_sent"] for r in rows) == c.data_sent
        assert sum(r["data_lost"] for r in rows) == c.data_lost
        assert sum(r["bytes_received"] for r in rows) == sum(d.length for d in c.data if d.arrived)
        assert all((r["loss_rate"] is None) == (r["data_sent"] == 0) for r in rows)


@pytest.mark.skipif(not peers.have("tshark"), reason="tshark not installed")
def test_series_bytes_received_agree_with_tshark_io_stat():
    # The example download: tshark bins from the first packet of the phone capture (the SYN),
    # our bins from the connection's first packet at the client: the same instant.
    root = DATA.parent.parent / "python/hsrtcp/examples"
    t = truth.compute(root / "server.pcap", root / "phone.pcap")
    (c,) = t.connections
    ours = [r["bytes_received"] for r in c.series(1.0)]
    io = peers.tshark_io_sum(root / "phone.pcap", "tcp.len", f"ip.src=={c.server}")
    assert [r["sum"] for r in io] == ours
    assert len(ours) >= 3 and min(ours[:3]) < 0.5 * max(ours)  # the rate step is visible


def test_frames_have_one_row_per_segment():
    pytest.importorskip("polars")
    _, t = _truth("multi_concurrent")
    data, acks = t.frames()
    assert data.height == t.totals()["data_sent"] and acks.height == t.totals()["acks_sent"]
    assert data.filter(~data["arrived"]).height == t.totals()["data_lost"]
    assert set(data["client_port"].unique()) == {c.client_port for c in t.connections}


def test_fixture_accessor():
    from hsrtcp.testing.fixtures import fixture, names

    assert names() == NAMES
    fx = fixture("drops_cubic")
    assert fx.server_pcap.exists() and fx.client_pcap.exists()
    assert fx.truth().totals()["data_lost"] == fx.meta["nft"]["data_dropped"]
    with pytest.raises(KeyError, match="no fixture"):
        fixture("nope")
