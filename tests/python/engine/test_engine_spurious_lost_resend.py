"""A spurious timeout whose first re-send was lost (fixture cubic_lost_resend, origin in
tests/data/README.md; a live run of test_engine_netns.py[cubic_sack_ts] failed on it).

Cubic with SACK and timestamps, 3 % data and 5 % ACK drops. The original of bytes
1160073-1161521 (relative to the server's ISN) arrived at the phone; the two ACKs after it
were dropped, so the server's timer expired. That first re-send was dropped as well; the
timer backed off and the second re-send arrived as a duplicate, answered by a D-SACK whose
timestamp echo is the original's. The timeout was for a segment that was not lost: spurious
(M12, docs/metrics.md). The test's truth rule used to judge only the first re-send's own
arrival and counted 0 against the engine's 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import fixture_case, truth_spurious_timeouts  # noqa: E402

SEQ = 1160073


@pytest.fixture(scope="module")
def case():
    return fixture_case("cubic_lost_resend", client=True)


def test_the_fixture_is_a_lost_first_resend_after_a_delivered_original(case):
    ct = case[0]
    copies = sorted((d for d in ct.data if d.seq == SEQ), key=lambda d: d.ts_sent)
    assert [(d.retrans, d.arrived) for d in copies] == [(False, True), (True, False), (True, True)]
    assert copies[2].spurious  # the back-off re-send arrived as a duplicate


def test_truth_counts_the_timeout_spurious(case):
    ct, srv, row, _ = case
    st = truth_spurious_timeouts(srv, row, ct)
    assert [s["seq_start"] for s in st] == [SEQ]


def test_sender_and_receiver_count_one_spurious_timeout(case):
    _, _, s, c = case
    assert (s["timeouts"], s["timeout_sequences"]) == (2, 1)
    assert (s["spurious_timeouts"], s["spurious_timeouts_dsack"], s["spurious_timeouts_eifel"]) == (1, 1, 1)
    assert c["spurious_timeouts"] == 1
