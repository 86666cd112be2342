"""A re-send reordered behind later data at the phone (issue 30).

tests/data/reno_reordered_resend.{client,server}.pcap.gz: the live heavy-loss receiver test
(test_engine_receiver_netns.py, reno, 3 % data / 5 % ACK drops) in a run that failed its
exact bound under CPU load (28 Nov). One re-send (seq 1322565, IP ID 22383) reached the phone
after a segment with IP ID 22385; the engine calls it no re-send and leaves nothing undecided,
though its IP ID lies above that of new data with a higher sequence number (1331325, IP ID
22378), so it was sent later: a re-send. Truth 73 re-sends arrived; the engine counted 72 + 0
before the rule "a fill sent after a copy of later data is a re-send" (docs/engine.md), 73 after.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, flow_row  # noqa: E402
from receiver_truth import retransmissions_arrived  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
SRV, CLI = DATA / "reno_reordered_resend.server.pcap.gz", DATA / "reno_reordered_resend.client.pcap.gz"


def test_the_fixture_holds_the_reordered_resend():
    from hsrtcp.testing import truth

    ct = truth.compute(SRV, CLI).connections[0]
    assert retransmissions_arrived(ct) == 73


def test_the_receiver_bound_holds_on_a_reordered_resend():
    from hsrtcp.testing import truth

    ct = truth.compute(SRV, CLI).connections[0]
    row = flow_row(analyze(CLI, "client"), ct.client_port)
    rt = retransmissions_arrived(ct)
    assert row["retransmissions"] <= rt <= row["retransmissions"] + row["retransmissions_undecided"]


def test_the_reordered_resend_is_counted_as_a_retransmission_not_reordering():
    import polars as pl

    from hsrtcp.testing import truth

    ct = truth.compute(SRV, CLI).connections[0]
    ds = analyze(CLI, "client")
    row = flow_row(ds, ct.client_port)
    ev = ds.events.filter(pl.col("flow_id") == row["flow_id"])
    at = ev.filter(pl.col("seq_start") == 1322565)
    # the late re-send itself (the truth marks it retrans; its arrival is the later copy)
    kinds = at.sort("ts")["kind"].to_list()
    assert "retransmission" in kinds and "reordering" not in kinds, kinds
