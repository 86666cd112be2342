"""Engine witnesses on the real-kernel fixtures of tests/data (namespace testbed captures,
server side = data sender, client side = receiver): counts against the server's TCP_INFO
(total_retrans, total_rto, dsack_dups) and the two-capture truth (hsrtcp.testing.truth).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, check_connection, flow_row  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"

CASES = ["clean_200k", "small_50k", "drops_cubic", "reno_nosack_nots", "zero_window", "ipv6_drops",
         "bbr_drops", "ack_blackout", "data_blackout", "multi_concurrent", "multi_sequential",
         "sll1", "nano", "any_sll2"]


def _meta(name):
    p = DATA / f"{name}.json"
    if not p.exists():
        pytest.skip(f"fixture {p} missing (scripts/make_fixtures.py)")
    return json.loads(p.read_text())


@pytest.fixture(scope="module")
def truths():
    return {}


def _truth(name, meta, cache):
    from hsrtcp.testing import truth

    if name not in cache:
        cache[name] = truth.compute(DATA / f"{name}.server.pcap", DATA / f"{name}.client.pcap",
                                    client_time_offset_s=meta.get("time_offset_s") or 0.0)
    return cache[name]


@pytest.mark.parametrize("name", CASES)
def test_counts_match_kernel_and_truth(name, truths):
    meta = _meta(name)
    tr = _truth(name, meta, truths)
    srv = analyze(DATA / f"{name}.server.pcap", "server")
    cli = analyze(DATA / f"{name}.client.pcap", "client")
    for conn, ct in zip(meta["connections"], tr.connections):
        assert ct.client_port == conn["client_port"]
        check_connection(srv, cli, conn["client_port"], conn["tcp_info"], ct)


def test_ack_loss_blackout_spurious_timeout_found_three_ways():
    """Every pure ACK dropped for 0.3 s: the kernel's one RTO was spurious (dsack_dups = 1).
    The receiver sees the duplicate (M12), the sender gets a D-SACK and the Eifel echo."""
    meta = _meta("ack_blackout")
    ti = meta["connections"][0]["tcp_info"]
    assert ti["total_rto"] == 1 and ti["dsack_dups"] == 1
    port = meta["connections"][0]["client_port"]
    s = flow_row(analyze(DATA / "ack_blackout.server.pcap", "server"), port)
    c = flow_row(analyze(DATA / "ack_blackout.client.pcap", "client"), port)
    assert (s["spurious_timeouts_dsack"], s["spurious_timeouts_eifel"]) == (1, 1)
    assert c["spurious_timeouts_receiver"] == 1
    # M13: the only retransmission was the spurious RTO
    assert s["spurious_rto_rate"] == 1.0 and c["spurious_rto_rate"] == 1.0
    # M16: the original's ACK came back after the retransmission (bias > 0)
    assert s["rto_bias_mean"] > 0


def test_data_blackout_timeout_sequence_backs_off():
    """All data dropped for 0.9 s: one timeout sequence with the kernel's RTO count, its T
    at least Linux's 200 ms minimum RTO, and zero-throughput bins marked as back-off."""
    meta = _meta("data_blackout")
    ti = meta["connections"][0]["tcp_info"]
    ds = analyze(DATA / "data_blackout.server.pcap", "server")
    s = flow_row(ds, meta["connections"][0]["client_port"])
    assert s["timeout_sequences"] == 1 and s["timeouts"] == ti["total_rto"] >= 2
    assert s["rto_first_mean"] >= 0.2
    # the phase lasts past the last back-off retransmission
    ev = ds.events.filter((ds.events["flow_id"] == s["flow_id"]) & (ds.events["kind"] == "retransmission"))
    first_rto = ev["ts"].min()
    assert s["timeout_duration_mean"] > s["rto_first_mean"]
    seq = ds.events.filter(ds.events["kind"] == "timeout_sequence").row(0, named=True)
    assert seq["ts"] + seq["value"] == pytest.approx(first_rto, abs=1e-6)
    ser = ds.series.filter(ds.series["flow_id"] == s["flow_id"])
    assert ser["backoff"].any()


def test_zero_window_is_seen_from_both_sides():
    meta = _meta("zero_window")
    port = meta["connections"][0]["client_port"]
    s = flow_row(analyze(DATA / "zero_window.server.pcap", "server"), port)
    c = flow_row(analyze(DATA / "zero_window.client.pcap", "client"), port)
    for r in (s, c):
        assert r["zero_window_events"] >= 1 and r["zero_window_segments"] >= 1
        assert r["zero_window_duration"] > 0.5  # the reader paused for 1 s
        assert r["awnd_min"] == 0
    assert s["zero_window_segments"] == c["zero_window_segments"]
    assert s["full_window_segments"] > 0
