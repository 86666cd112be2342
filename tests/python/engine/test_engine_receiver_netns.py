"""Live receiver-side witnesses (root, issue 16): real kernel TCP through the namespace
testbed, the engine on the client (phone) capture checked against the two-capture truth of
receiver_truth.py and the kernel's own counters.

- a receiver that stops reading (small SO_RCVBUF, reader paused): Linux probes the zero
  window with empty segments at snd_una − 1; the server namespace's TcpExtTCPWinProbe, the
  probes in the server capture and the engine at both ends must agree;
- reno without SACK and timestamps, heavy data and ACK loss: retransmissions that arrive in
  sequence at the phone (NewReno partial-ACK re-sends and go-back-N copies whose originals
  were lost) must be counted as retransmissions, and the DupACKs the phone sent (RFC 5681,
  M15) must equal the truth's.
Each case runs in well under a minute.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, flow_row  # noqa: E402

pytestmark = pytest.mark.netns


@pytest.mark.parametrize("cc,sysctls", [("cubic", {}), ("reno", {"tcp_sack": 0, "tcp_timestamps": 0})])
def test_zero_window_probes_match_kernel_and_both_captures(cc, sysctls, bed_ok, tmp_path):
    from hsrtcp.testing import truth
    from hsrtcp.testing.netbed import Testbed
    from receiver_truth import nstat, retransmissions_arrived, window_probes

    with Testbed(workdir=tmp_path, cc=cc, sysctls=sysctls) as b:
        before = nstat(b.ns["srv"], "TcpExtTCPWinProbe")
        run = b.transfer("zwp", nbytes=400_000, cc=cc, rcvbuf=4096, pause_after=60_000, pause_s=2.5)
        kernel = nstat(b.ns["srv"], "TcpExtTCPWinProbe") - before
    port = run.connections[0]["client_port"]
    tr = window_probes(run.server_pcap, run.client_pcap, run.server_port)
    srv = flow_row(analyze(run.server_pcap, "server"), port)
    cli = flow_row(analyze(run.client_pcap, "client"), port)
    print(f"{cc}: kernel TCPWinProbe {kernel}, truth sent {tr.sent} arrived {tr.arrived}, "
          f"engine server {srv['zero_window_probes']} client {cli['zero_window_probes']}")
    # the backed-off persist timer fires several times in 2.5 s
    assert kernel >= 3
    assert tr.sent == kernel
    assert srv["zero_window_probes"] == kernel
    assert cli["zero_window_probes"] == tr.arrived
    # probes are not retransmissions at either end (the kernel may still re-send data
    # around the pause: every re-send is found at the sender, every arrival at the phone)
    ct = truth.compute(run.server_pcap, run.client_pcap).connections[0]
    assert srv["retransmissions"] + (srv["fin_retransmissions_server"] or 0) == run.tcp_info["total_retrans"]
    assert cli["retransmissions"] == retransmissions_arrived(ct)


@pytest.mark.parametrize("p_data,p_ack", [(0.03, 0.05), (0.05, 0.05), (0.08, 0.10)])
def test_reno_heavy_loss_receiver_counts_bounded_exactly(p_data, p_ack, bed_ok, tmp_path):
    """Reno without SACK and timestamps, heavy data and ACK drops. What the phone capture
    decides is exact, the rest is counted as undecided (docs/engine.md, "What a
    receiver-side capture cannot tell"): on every run the truth lies in
    [retransmissions, retransmissions + retransmissions_undecided], and the DupACKs sent in
    [dupacks, dupacks + dupacks_undecided] — for the ACKs that were lost on the way, whose
    being DupACKs depends on when they would have arrived, that is the truth's own interval
    (receiver_truth.dupacks_sent_bounds) meeting the engine's. Widths on the 11 runs of the
    issue-16 report (2-8 % data, 2-10 % ACK drops, 3 MB): 0-18 re-sends (of 46-217), 2-26
    DupACKs (of 311-703). The re-sends' width grows with the loss: each undecided stands
    for a packet lost while the sender was re-sending (receiver_truth.
    undecided_resends_ceiling), 7-36 undecided against 14-51 such losses on 25 runs at
    8 %/10 % (issue 30, FLAKE4)."""
    from hsrtcp.testing import truth
    from hsrtcp.testing.netbed import Testbed
    from receiver_truth import (dupacks_sent, dupacks_sent_bounds, overtaken_resends, retransmissions_arrived,
                                undecided_resends_ceiling)

    sysctls = {"tcp_sack": 0, "tcp_timestamps": 0}
    with Testbed(workdir=tmp_path, cc="reno", p_data=p_data, p_ack=p_ack, sysctls=sysctls) as b:
        run = b.transfer("reno_heavy", nbytes=3_000_000, cc="reno")
    ct = truth.compute(run.server_pcap, run.client_pcap).connections[0]
    cli_ds = analyze(run.client_pcap, "client")
    cli = flow_row(cli_ds, ct.client_port)
    rt = retransmissions_arrived(ct)
    ceiling = undecided_resends_ceiling(ct)
    dlo, dhi = dupacks_sent_bounds(run.server_pcap, run.client_pcap, ct)
    dt = dupacks_sent(run.server_pcap, run.client_pcap, ct)  # the median-delay convention
    r, ru = cli["retransmissions"], cli["retransmissions_undecided"]
    d, du = cli["dupacks"], cli["dupacks_undecided"]
    print(f"retransmissions truth {rt} engine [{r}, {r + ru}] (undecided ceiling {ceiling}); "
          f"dupacks truth [{dlo}, {dhi}] (median delay {dt}) engine [{d}, {d + du}]")
    assert rt > 0 and dt > 0
    assert r <= rt <= r + ru
    # lost ACKs near the edge are few (the median-delay count may lie outside: a lost ACK
    # whose neighbours were both slower or faster than the median)
    assert dhi - dlo <= max(3, 0.05 * dt)
    assert d <= dhi and dlo <= d + du
    # narrow: an undecided re-send is an arrival only a packet the phone never saw can
    # explain (an original or a re-send, docs/engine.md), so there are no more of them than
    # packets lost while the sender was re-sending; a fixed share of rt failed at 8 %: 36
    # undecided of 230, against 51 such losses (issue 30, FLAKE4). DupACKs: no arrival time
    # decides a candidate since issue 30 item 1, and 51 of 503 were undecided on one of 20
    # loaded runs
    # The ceiling is measured, not proven (docs/engine.md), and had 1 to spare at 5 %/5 %
    # where the old share had plenty: the width must stay under either, so a lazy engine
    # (undecided beyond both: the planted off-by-one gave 83 against 51 and 34.5) still fails
    assert ru <= max(ceiling, 0.15 * rt) and du <= max(3, 0.15 * dt)
    # a re-send that overtook its delayed original: the truth's spurious count misses it, the
    # phone counts it when the original arrives second, as a repeat (a live run of 27 Nov: 40
    # against 39 + 1) or, where the IP IDs tell the late copy for the original, as a late
    # original (test_engine_receiver_late_original.py)
    assert cli["unnecessary_retransmissions"] == ct.spurious_retrans + overtaken_resends(ct)
