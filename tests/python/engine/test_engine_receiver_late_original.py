"""A re-send that overtook its own delayed original (fixture reno_late_original, origin in
tests/data/README.md; a live run of test_engine_receiver_netns.py at load 9.9 failed on it).

Reno without SACK and timestamps, 8 % data and 10 % ACK drops. Bytes 2737437-2738896 (relative
to the server's ISN) left the server as the original (IP ID 54742), and 41 us later as a re-send
(54748); the path delayed the original, the re-send reached the phone 19 us before it. Both
arrived: the re-send was unnecessary, and the phone can see it (the same bytes twice, the
second copy older by IP ID). The two-capture truth counts the re-send as not spurious (nothing
of it had arrived when it did); receiver_truth.overtaken_resends finds it.

The phone's engine classes the late copy `late_original` (reordering, docs/engine.md). It
used to count no unnecessary retransmission for these bytes (46 against 46 + 1); the late
original now makes the re-send that overtook it unnecessary, once (47). On a run where the
IP IDs did not decide (27 Nov) the late copy counted as a repeat instead and the totals agreed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, flow_row  # noqa: E402
from receiver_truth import overtaken_resends, retransmissions_arrived  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
SRV, CLI = DATA / "reno_late_original.server.pcap.gz", DATA / "reno_late_original.client.pcap.gz"


@pytest.fixture(scope="module")
def case():
    from hsrtcp.testing import truth

    ct = truth.compute(SRV, CLI).connections[0]
    ds = analyze(CLI, "client")
    return ct, ds, flow_row(ds, ct.client_port)


def test_the_fixture_holds_the_overtaken_resend(case):
    ct, ds, row = case
    assert overtaken_resends(ct) == 1 and ct.spurious_retrans == 46
    late = ds.events.filter((pl.col("flow_id") == row["flow_id"]) & (pl.col("class") == "late_original"))
    assert late["seq_start"].to_list() == [2737437]
    # the rest of the receiver's witnesses hold on it
    rt = retransmissions_arrived(ct)
    assert row["retransmissions"] <= rt <= row["retransmissions"] + row["retransmissions_undecided"]


def test_an_overtaken_resend_counts_as_unnecessary(case):
    ct, ds, row = case
    assert row["unnecessary_retransmissions"] == ct.spurious_retrans + overtaken_resends(ct) == 47
    # the re-send of the overtaken bytes is named, once, when its original arrives
    ev = ds.events.filter((pl.col("flow_id") == row["flow_id"]) & (pl.col("kind") == "spurious_retransmission")
                          & (pl.col("seq_start") == 2737437))
    assert ev.height == 1 and ev["class"].to_list() == ["receiver"]
