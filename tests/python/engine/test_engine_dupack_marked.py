"""New data re-sent after DupACKs that followed it is recovery, not a timer (fixture
reno_dupack_marked, origin in tests/data/README.md; 1 failure of 20 runs of
test_engine_netns.py[reno_plain] on the rule of 29 Nov 12:35).

Reno without SACK or timestamps. The RTO at 0.4185 s re-sends the holes (frames 688-716);
new data follows 5 µs after the burst's last re-send (717-744); eight DupACKs come back
(727-741: that data arrived above a hole), then advancing ACKs, and 6-17 µs after them the
server re-sends five of those new segments (746-766). Linux counts the DupACKs as SACKed
segments without SACK and marks the head lost: a recovery re-send, and the kernel counted
3 RTOs in the whole run (TCP_INFO total_rto). No re-send sent after that data was acked
before it (the burst's last went out 5 µs earlier), so RACK's rule alone -- "a later copy
was acknowledged" -- took them for a fourth timeout (docs/engine.md, "Retransmission classes").
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import events_of, fixture_case  # noqa: E402

FRAMES = [746, 749, 752, 755, 766]


@pytest.fixture(scope="module")
def case():
    return fixture_case("reno_dupack_marked")


def test_the_server_counts_the_kernels_timeouts(case):
    ct, srv, row = case
    assert (row["timeouts"], row["timeout_sequences"]) == (3, 3)  # the kernel's total_rto: 3
    assert row["retransmissions"] == sum(1 for d in ct.data if d.retrans) == 50


def test_the_re_sends_after_the_dupacks_are_recovery(case):
    _, srv, row = case
    ev = events_of(srv, row["flow_id"], "retransmission").filter(pl.col("frame").is_in(FRAMES))
    assert ev.sort("frame").select("frame", "class").rows() == [(f, "fast") for f in FRAMES]


def test_a_re_send_of_bytes_already_acknowledged_is_no_timer():
    """Fixture cubic_sub_ms_acked_resend (server side only; 1 failure of 3 loop runs of
    test_engine_netns.py[cubic_bulk_sub_ms] on the rule of 13:36): at a 0.26-ms RTT the server
    re-sends 28098665 and 28100113 (frames 20597-20598) 23 µs after an ACK, though an ACK had
    covered them since frame 20556: the sender's queue lagged the wire. A timer re-sends the
    sender's snd_una, never bytes an ACK it had taken covered: no timeout (kernel total_rto 0)."""
    from checks import analyze

    srv = analyze(Path(__file__).resolve().parents[2] / "data" / "cubic_sub_ms_acked_resend.server.pcap.gz",
                  "server")
    row = srv.flows.filter(pl.col("retransmissions") > 0).row(0, named=True)
    assert (row["timeouts"], row["retrans_rto"], row["retransmissions"]) == (0, 0, 120)
    ev = events_of(srv, row["flow_id"], "retransmission").filter(pl.col("frame").is_in([20597, 20598]))
    assert ev.sort("frame").select("frame", "class").rows() == [(20597, "fast"), (20598, "fast")]
