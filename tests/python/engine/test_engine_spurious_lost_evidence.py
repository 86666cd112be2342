"""A spurious timeout the sender cannot decide (fixture cubic_lost_evidence, origin in
tests/data/README.md; 1 failure of 20 runs of test_engine_netns.py[cubic_sack_ts]).

Cubic with SACK and timestamps, 3 % data and 5 % ACK drops. The original of bytes
1225497-1226945 (relative to the server's ISN) was lost; the fast retransmit arrived and
its ACK was lost; the first RTO re-send arrived as a duplicate and its D-SACK was lost; the
back-off re-send drew the one D-SACK the server sees, which is also the first ACK past the
segment and echoes that back-off copy's own TSval. The truth: spurious (an earlier copy, the
fast retransmit, arrived before the first RTO re-send). From the sender this is the same as
a needed first RTO re-send whose ACK was lost with a needless back-off: undecided
(docs/engine.md, "Spurious timeouts"; flows.spurious_timeouts_undecided).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, fixture_case, flow_row, truth_spurious_timeouts  # noqa: E402

CLI = Path(__file__).resolve().parents[2] / "data" / "cubic_lost_evidence.client.pcap.gz"
SEQ = 1225497


@pytest.fixture(scope="module")
def case():
    return fixture_case("cubic_lost_evidence")


def test_the_fixture_is_an_earlier_copy_arrived_with_its_evidence_lost(case):
    ct = case[0]
    copies = sorted((d for d in ct.data if d.seq == SEQ), key=lambda d: d.ts_sent)
    # original lost, fast retransmit arrived, both RTO re-sends arrived as duplicates
    assert [(d.retrans, d.arrived, d.spurious) for d in copies] == [
        (False, False, False), (True, True, False), (True, True, True), (True, True, True)]


def test_truth_counts_the_timeout_spurious(case):
    ct, srv, row = case
    assert [s["seq_start"] for s in truth_spurious_timeouts(srv, row, ct)] == [SEQ]


def test_the_truth_lies_within_the_senders_bounds(case):
    ct, srv, row = case
    truth = len(truth_spurious_timeouts(srv, row, ct))
    lo, und = row["spurious_timeouts"], row["spurious_timeouts_undecided"]
    # the three timeout sequences: the undecided one, and two needed ones without D-SACKs
    assert (row["timeout_sequences"], lo, und) == (3, 0, 1)
    assert lo <= truth <= lo + und


def test_the_column_is_the_senders_only(case):
    # null at the receiver, whose verdict (the bytes had all arrived) is definitive
    row = flow_row(analyze(CLI, "client"), case[0].client_port)
    assert row["spurious_timeouts_undecided"] is None and row["spurious_timeouts"] == 1
