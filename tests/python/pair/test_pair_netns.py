"""Lab witnesses (root): fresh runs through the namespace testbed with nftables drops of
data and of pure ACKs, a rate collapse, and a clock offset added on purpose to the phone
capture. Ground truth: hsrtcp.testing.truth on the same captures with the known offset, the
router's nft counters, and the independent cause check of witness.py (on the true clock).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.pair import analyze_pair

sys.path.insert(0, str(Path(__file__).resolve().parent))
from witness import check_loss_series, check_spurious_columns, check_spurious_events, spurious_rto_packets  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.netns


def _run(tmp, name, offset, **bed):
    from hsrtcp.testing import truth
    from hsrtcp.testing.netbed import Testbed

    with Testbed(workdir=tmp, **bed) as b:
        run = b.transfer(name, nbytes=3_000_000, cc="cubic", time_offset_s=offset)
    tr = truth.compute(run.server_pcap, run.client_pcap, client_time_offset_s=offset)
    return run, tr


def _check(run, tr, offset, ds):
    m = ds.flows.filter(pl.col("vantage") == "matched")
    assert m.height == 1
    row = m.row(0, named=True)
    t = tr.totals()
    assert row["data_packets_sent"] == t["data_sent"] and row["lost_data_packets"] == t["data_lost"]
    assert row["ack_packets_sent"] == t["acks_sent"] and row["lost_ack_packets"] == t["acks_lost"]
    assert row["p_d"] == pytest.approx(t["data_lost"] / t["data_sent"], abs=0)
    assert row["p_a"] == pytest.approx(t["acks_lost"] / t["acks_sent"], abs=0)
    assert row["lost_ack_packets"] == run.nft.get("ack_dropped", 0)
    # the client clock was moved by +offset: server = client - offset, within 1 ms
    assert abs(row["clock_offset_s"] + offset) < 1e-3
    ev = ds.events.filter((pl.col("kind") == "spurious_timeout") & (pl.col("class") == "two_vantage"))
    port = run.connections[0]["client_port"]
    assert check_spurious_events(run.server_pcap, run.client_pcap, ev.to_dicts(), client_port=port,
                                 server_port=run.server_port, client_offset_s=offset) == []
    # M12-M14 in the matched row: two-vantage count = its causes; M13 against the truth's
    # data retransmissions and an independent count of the spurious episodes' retransmissions
    assert check_spurious_columns(row) == []
    assert row["retransmitted_packets"] == t["data_retrans"]
    assert row["spurious_rto_packets"] == spurious_rto_packets(run.server_pcap, ev.to_dicts(),
                                                               server_port=run.server_port)
    check_loss_series(ds, tr.connections)  # M6 per bin against the lab truth
    return row, ev


def test_random_drops_with_clock_offset(bed_ok, tmp_path):
    """1 % data and 10 % pure-ACK drops, 10 Mbit/s falling to 200 kbit/s for 1.2 s."""
    offset = -0.5678
    run, tr = _run(tmp_path, "drops", offset, p_data=0.01, p_ack=0.1, rate_queue_s=1.0,
                   rate_schedule=[(0.0, 10_000_000), (0.8, 200_000), (2.0, 10_000_000)])
    assert run.nft["data_dropped"] > 0 and run.nft["ack_dropped"] > 0
    ds = analyze_pair(run.client_pcap, run.server_pcap)
    _check(run, tr, offset, ds)
    # NAT: the same phone capture with rewritten address and port still pairs, same numbers
    spec = importlib.util.spec_from_file_location("rewrite_nat", ROOT / "scripts" / "rewrite_nat.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    nat = tmp_path / "nat.pcap"
    mod.rewrite_nat(run.client_pcap, nat, addr_map={run.client_addr: "100.64.1.1"},
                    port_map={run.connections[0]["client_port"]: 60001})
    a = ds.flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    b = analyze_pair(nat, run.server_pcap).flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    assert b["pairing"] == "isn" and b["cv_client_addr"] == "100.64.1.1"
    for k in ("p_d", "p_a", "ack_burst_loss", "q", "spurious_timeouts_2v", "clock_offset_s"):
        assert a[k] == b[k], k


def test_rate_collapse_gives_rto_estimation_spurious_timeouts(bed_ok, tmp_path):
    """No drops by nft; the link toward the phone falls to 8 kbit/s for 1.7 s with a deep
    queue: the head segment waits in the queue longer than the RTO, the server times out,
    and the original arrives (and is acknowledged) late — RTO estimation inaccuracy, with a
    positive RTO bias t6 - t4 (M16)."""
    offset = 2.5
    run, tr = _run(tmp_path, "collapse", offset, rate_queue_s=60.0,
                   rate_schedule=[(0.0, 10_000_000), (0.8, 8_000), (2.5, 10_000_000)])
    row, ev = _check(run, tr, offset, analyze_pair(run.client_pcap, run.server_pcap))
    assert ev.height >= 1
    assert set(ev["cause"]) == {"rto_estimation"}
    assert row["spurious_timeouts_rto_estimation"] == ev.height
    assert all(v is not None and v > 0 for v in ev["value"])


def test_clock_drift_and_offset_are_recovered(bed_ok, tmp_path):
    """A 4-s download at 4 Mbit/s; the phone capture's clock is then made 0.7 s late and
    150 ppm fast (t' = t + 0.7 + 150e-6 (t - t_first)). Expected: drift -150 ppm, and at the
    fit's reference time an offset of -(0.7 + 150e-6 (t_ref - t_first)), within 1 ms."""
    from hsrtcp.pair import match_tables
    from hsrtcp.testing.netbed import Testbed
    from hsrtcp.testing.pcapio import read_records

    with Testbed(workdir=tmp_path, rate_bps=4_000_000) as b:
        run = b.transfer("drift", duration=4.0, cc="cubic")
    spec = importlib.util.spec_from_file_location("rewrite_nat", ROOT / "scripts" / "rewrite_nat.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    drifted = tmp_path / "drifted.pcap"
    mod.rewrite_nat(run.client_pcap, drifted, time_offset_s=0.7, drift_ppm=150.0)
    t_first = next(iter(read_records(run.client_pcap))).ts
    st = match_tables(drifted, run.server_pcap)["stats"]
    assert st["clock_drift_ppm"] == pytest.approx(-150.0, abs=15.0)
    expected = -(0.7 + 150e-6 * (st["clock_ref_ts"] - t_first))
    assert abs(st["clock_offset_s"] - expected) < 1e-3
