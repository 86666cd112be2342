"""The namespace testbed on fresh runs: ground truth against the kernel and the router.

The router's nft counters are the strongest witness: they count exactly the packets the drop
rules discarded, so truth's lost data and lost ACKs must equal them to the packet.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from witness_helpers import ROOT

from hsrtcp.errors import LabError
from hsrtcp.testing import pcapio, peers, truth
from hsrtcp.testing.netbed import Testbed

pytestmark = pytest.mark.netns


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _assert_truth_matches(run, t):
    tot = t.totals()
    assert tot["data_lost"] == run.nft["data_dropped"] + (run.qdisc_dropped or 0)
    assert tot["acks_lost"] == run.nft["ack_dropped"] + (run.nft["qdisc_dropped_up"] or 0)
    assert tot["unmatched_client_data"] == 0 and tot["unmatched_server_acks"] == 0
    assert len(t.connections) == len(run.connections)
    # Paired by client port, in order within a port (a reused 4-tuple): concurrent
    # connections' SYNs can reach the capture in another order than the run lists them.
    by_port: dict[int, list] = {}
    for s in run.connections:
        by_port.setdefault(s["client_port"], []).append(s)
    for c in t.connections:
        assert by_port.get(c.client_port), f"capture has client port {c.client_port}, the run does not"
        s = by_port[c.client_port].pop(0)
        assert c.sender_retrans_total == s["tcp_info"]["total_retrans"]
        assert c.data_sent == s["tcp_info"]["data_segs_out"]
        # offloads off: no segment larger than the MSS (1460 without, 1448 with timestamps)
        assert max(d.length for d in c.data) <= s["tcp_info"]["snd_mss"] <= 1460


def test_random_drops_truth_equals_nft_and_tcp_info(netns_ok, tmp_path):
    with Testbed(p_data=0.03, p_ack=0.05, cc="cubic", workdir=tmp_path) as bed:
        run = bed.transfer("drops", nbytes=1_000_000)
    t = truth.from_run(run)
    _assert_truth_matches(run, t)
    tot = t.totals()
    # ~700 data packets at 3 %: zero drops would mean the rules did not work (P < 1e-9)
    assert tot["data_lost"] > 0 and tot["acks_lost"] > 0
    assert tot["data_sent"] == run.nft["data_seen"] and tot["acks_sent"] == run.nft["ack_seen"]
    assert run.connections[0]["cc"] == "cubic"
    assert run.client[0]["bytes_received"] == 1_000_000
    assert run.capture_stats["server"]["dropped_by_kernel"] == 0


def test_duration_mode_and_bbr(netns_ok, tmp_path):
    with Testbed(cc="bbr", rate_bps=20_000_000, workdir=tmp_path) as bed:
        run = bed.transfer("dur", duration=0.4)
    conn = run.connections[0]
    assert conn["cc"] == "bbr"
    # 0.4 s at 20 Mbit/s is about 1 MB; the socket buffer lets the sender run somewhat ahead
    assert 0.5e6 < conn["bytes_sent"] < 3e6
    assert run.client[0]["bytes_received"] == conn["bytes_sent"]
    _assert_truth_matches(run, truth.from_run(run))


def test_reno_without_sack_and_timestamps(netns_ok, tmp_path):
    with Testbed(p_data=0.03, cc="reno", sysctls={"tcp_sack": 0, "tcp_timestamps": 0},
                 workdir=tmp_path) as bed:
        run = bed.transfer("reno", nbytes=400_000, ipv6=True)
    assert run.sysctls["srv"]["tcp_sack"] == "0" and run.sysctls["cli"]["tcp_timestamps"] == "0"
    assert run.connections[0]["cc"] == "reno"
    syn = next(p for p in pcapio.read_tcp(run.client_pcap) if p.syn)
    assert syn.family == 6 and not syn.sack_permitted and syn.tsval is None
    _assert_truth_matches(run, truth.from_run(run))


def test_drop_first_n_drops_only_among_the_first_packets(netns_ok, tmp_path):
    # Every server→client data packet among the first 5 of the connection's reply direction
    # (the SYN-ACK is the first) is dropped, none after.
    with Testbed(p_data=1.0, drop_first_n=5, workdir=tmp_path) as bed:
        run = bed.transfer("firstn", nbytes=200_000)
    t = truth.from_run(run)
    _assert_truth_matches(run, t)
    srv_pkts = [p for p in pcapio.read_tcp(run.server_pcap) if p.src == run.server_addr]
    first5_data = sum(1 for p in srv_pkts[:5] if p.payload_len)
    assert t.totals()["data_lost"] == first5_data == 4
    lost = [d for d in t.connections[0].data if not d.arrived]
    assert all(d.ts_sent <= srv_pkts[4].ts for d in lost)


def test_drop_window_and_rate_limit(netns_ok, tmp_path):
    # 8 Mbit/s for 1 MB: about one second; all pure ACKs dropped from 0.3 s to 0.5 s.
    with Testbed(p_ack=1.0, drop_window=(0.3, 0.5), rate_bps=8_000_000, workdir=tmp_path) as bed:
        run = bed.transfer("window", nbytes=1_000_000)
    t = truth.from_run(run)
    _assert_truth_matches(run, t)
    acks = t.connections[0].acks
    lost = [a for a in acks if not a.arrived]
    assert lost, "no ACK dropped inside the window"
    # both timers and captures use the host clock; allow scheduling slack of 50 ms
    assert all(run.t0 + 0.25 <= a.ts_sent <= run.t0 + 0.55 for a in lost)
    assert any(a.arrived and a.ts_sent > run.t0 + 0.6 for a in acks)
    # The tbf's rate where its queue is backlogged: from 0.1 s after the sender's stall (the
    # longest silence of the data at the client: the blackout and the RTO after it) to the last
    # data. Not a window from run.t0: t0 is taken before the client process starts, which on
    # a loaded host takes a while (at load 9.2 the SYN came 0.14 s after t0, and the old
    # window t0+0.1..0.3 held 6.10 Mbit/s while every backlogged 50-ms bin held 7.6).
    times = [p.ts for p in pcapio.read_tcp(run.client_pcap) if p.payload_len]
    sizes = [p.payload_len for p in pcapio.read_tcp(run.client_pcap) if p.payload_len]
    stall = max(range(1, len(times)), key=lambda i: times[i] - times[i - 1])
    start, end = times[stall] + 0.1, times[-1]
    assert end - start > 0.4, (start, end)  # most of the 1 MB comes after the blackout
    rate = sum(n for t, n in zip(times, sizes) if start < t <= end) * 8 / (end - start)
    # tbf counts Ethernet frames: the payload rate is 8 Mbit/s × 1448/1514 ≈ 7.65 Mbit/s.
    # ±12 %: the capture may stamp packets late in bunches on a loaded host (8.47 Mbit/s
    # over a 0.2-s window at load 1.8); over this window of 0.4 s or more that costs at most
    # half as much. A missing or mis-scaled limit (no tbf: hundreds of Mbit/s; bits vs
    # bytes: x8) is far outside.
    assert 6.7e6 < rate < 8.6e6, rate


def test_a_schedule_step_at_zero_holds_from_the_first_packet(netns_ok, tmp_path):
    # 2 Mbit/s from 0 s: 300 kB take over a second. The step used to be set by a timer thread
    # racing the client's connect; the first bytes then crossed the bare veth (a 3-MB
    # transfer of test_pair_netns finished in 10 ms, before its tbf existed).
    with Testbed(rate_schedule=[(0.0, 2_000_000), (5.0, None)], workdir=tmp_path) as bed:
        run = bed.transfer("step0", nbytes=300_000)
    pk = list(pcapio.read_tcp(run.client_pcap))
    syn = next(p.ts for p in pk if p.syn)
    early = sum(p.payload_len for p in pk if p.payload_len and p.ts - syn < 0.2)
    # at most the tbf's burst (32 kB) plus 0.2 s at 2 Mbit/s (50 kB), payload being less than
    # the frames tbf counts; unshaped, a veth carries the whole 300 kB in a few ms
    assert early <= 32_000 + 50_000, early
    assert run.client[0]["bytes_received"] == 300_000


def test_uplink_rate_limit_delays_acks_without_losing_them(netns_ok, tmp_path):
    # 2 kbit/s toward the server from 0.2 s to 0.5 s: an ACK (80 bytes on the wire) needs
    # 0.32 s to pass, so ACKs queue; lifting the limit drains the queue, nothing is lost.
    with Testbed(rate_bps=10_000_000, uplink_rate_schedule=[(0.2, 2000), (0.5, None)],
                 workdir=tmp_path) as bed:
        run = bed.transfer("ackdelay", nbytes=600_000)
    t = truth.from_run(run)
    _assert_truth_matches(run, t)
    acks = t.connections[0].acks
    assert t.totals()["acks_lost"] == 0 and run.nft["qdisc_dropped_up"] == 0
    assert max(a.ts_arrived - a.ts_sent for a in acks) > 0.2
    assert all(a.ts_arrived - a.ts_sent < 0.01 for a in acks if a.ts_sent < run.t0 + 0.15)


def test_zero_window_is_visible_in_both_the_capture_and_tshark(netns_ok, tmp_path):
    with Testbed(workdir=tmp_path) as bed:
        run = bed.transfer("zw", nbytes=300_000, rcvbuf=4096, pause_after=50_000, pause_s=0.6)
    zero = [p for p in pcapio.read_tcp(run.client_pcap)
            if p.src == run.client_addr and p.window == 0 and not p.syn]
    assert zero
    if peers.have("tshark"):
        rows = peers.tshark_packets(run.client_pcap)
        assert sum(r["zero_window"] for r in rows) == len(zero)
    assert run.client[0]["bytes_received"] == 300_000


def test_clock_offset_shifts_the_client_capture(netns_ok, tmp_path):
    with Testbed(p_data=0.02, workdir=tmp_path) as bed:
        run = bed.transfer("offset", nbytes=300_000, time_offset_s=3.25)
    a = list(pcapio.read_records(run.client_pcap_orig))
    b = list(pcapio.read_records(run.client_pcap))
    assert [y.ts_ns - x.ts_ns for x, y in zip(a, b)] == [3_250_000_000] * len(a)
    t = truth.from_run(run)  # matching uses the offset; arrival times stay on the client clock
    _assert_truth_matches(run, t)
    arrived = [d for d in t.connections[0].data if d.arrived]
    assert all(3.2 < d.ts_arrived - d.ts_sent < 3.3 for d in arrived)


def test_sequential_reuse_and_concurrent_connections(netns_ok, tmp_path):
    with Testbed(p_data=0.02, workdir=tmp_path) as bed:
        reuse = bed.transfer("reuse", nbytes=100_000, conns=2, gap_s=0.05, client_port=40001)
        conc = bed.transfer("conc", nbytes=150_000, conns=3, concurrent=True)
    tr = truth.from_run(reuse)
    _assert_truth_matches(reuse, tr)
    assert [c.epoch for c in tr.connections] == [0, 1]
    assert {c.client_port for c in tr.connections} == {40001}
    tc = truth.from_run(conc)
    _assert_truth_matches(conc, tc)
    assert len({c.client_port for c in tc.connections}) == 3


# Other jobs on this machine create namespaces concurrently: only our own names are checked.

def test_two_testbeds_coexist_and_are_removed(netns_ok, tmp_path):
    with Testbed(workdir=tmp_path / "a") as a, Testbed(workdir=tmp_path / "b") as b:
        ours = set(a.ns.values()) | set(b.ns.values())
        assert len(ours) == 6 and ours <= _namespaces()
        ra = a.transfer("x", nbytes=50_000)
        rb = b.transfer("x", nbytes=50_000)
        assert ra.client[0]["bytes_received"] == rb.client[0]["bytes_received"] == 50_000
    assert not ours & _namespaces()


def test_namespaces_removed_on_exception(netns_ok, tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with Testbed(workdir=tmp_path) as bed:
            ours = set(bed.ns.values())
            assert ours <= _namespaces()
            raise RuntimeError("boom")
    assert not ours & _namespaces()


def test_namespaces_removed_on_sigint_and_sigterm(netns_ok, tmp_path):
    code = (
        "import sys, time; sys.path.insert(0, %r)\n"
        "from hsrtcp.testing.netbed import Testbed\n"
        "with Testbed(workdir=%r) as bed:\n"
        "    print(' '.join(bed.ns.values()), flush=True)\n"
        "    time.sleep(60)\n"
    ) % (str(ROOT / "python"), str(tmp_path))
    for sig in (signal.SIGINT, signal.SIGTERM):
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        try:
            names = p.stdout.readline().split()
            assert len(names) == 3 and set(names) <= _namespaces()
            p.send_signal(sig)
            p.wait(20)
        finally:  # a child that ignored the signal must not hold its namespaces for a minute
            if p.poll() is None:
                p.terminate()
                p.wait(20)
        time.sleep(0.1)
        assert not set(names) & _namespaces(), sig


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        Testbed(p_data=1.5)
    with pytest.raises(ValueError):
        Testbed(sysctls={"tcp_bogus": 1})


@pytest.mark.skipif(os.geteuid() == 0, reason="checks the refusal for non-root users")
def test_refuses_without_root(tmp_path):
    with pytest.raises(LabError, match="root"):
        with Testbed(workdir=tmp_path):
            pass
