"""Live witnesses (root): fresh transfers through the namespace testbed (client — router —
server, nftables random drops of data and of pure ACKs, explicit congestion control), each
checked against the server socket's TCP_INFO and the two-capture truth exactly as the
fixture tests do (checks.check_connection)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, check_connection  # noqa: E402

pytestmark = pytest.mark.netns


CASES = {
    "cubic_sack_ts": dict(bed=dict(p_data=0.03, p_ack=0.05), cc="cubic", nbytes=1_500_000),
    "reno_plain": dict(bed=dict(p_data=0.03, p_ack=0.03, sysctls={"tcp_sack": 0, "tcp_timestamps": 0}),
                       cc="reno", nbytes=800_000),
    "cubic_ack_blackout": dict(bed=dict(p_ack=1.0, drop_window=(0.2, 0.5), rate_bps=10_000_000), cc="cubic",
                               nbytes=1_000_000),
    "bbr_drops": dict(bed=dict(p_data=0.02, p_ack=0.02), cc="bbr", nbytes=1_000_000),
    "short_50k": dict(bed=dict(p_data=0.05), cc="cubic", nbytes=50_000),
    # Sub-millisecond RTT, tens of thousands of segments (many reader batches), RACK
    # re-sends after reordering and rare drops: the kernel takes no RTO at all here; on a
    # loaded machine originals arrive after their own re-send (receiver: late originals).
    "cubic_bulk_sub_ms": dict(bed=dict(p_data=0.0005, p_ack=0.001), cc="cubic", nbytes=60_000_000,
                              transfer=dict(max_pacing_rate=150_000_000)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_live_transfer_matches_kernel_and_truth(case, bed_ok, tmp_path):
    from hsrtcp.testing import truth
    from hsrtcp.testing.netbed import Testbed

    c = CASES[case]
    with Testbed(workdir=tmp_path, cc=c["cc"], **c["bed"]) as b:
        run = b.transfer(case, nbytes=c["nbytes"], cc=c["cc"], **c.get("transfer", {}))
    tr = truth.compute(run.server_pcap, run.client_pcap)
    srv = analyze(run.server_pcap, "server")
    cli = analyze(run.client_pcap, "client")
    for conn, ct in zip(run.connections, tr.connections):
        out = check_connection(srv, cli, conn["client_port"], conn["tcp_info"], ct, strict_receiver=False)
        assert out["server"]["handshake_seen"] and out["server"]["interrupted"] is False
