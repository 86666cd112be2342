"""The receiver-side bounds on three live captures where they failed (issue 30 item 1;
fixtures reno_short_resend, reno_stale_dupacks, reno_early_data, origin in
tests/data/README.md): reno without SACK and timestamps through the namespace testbed,
kept gzip-compressed. On each, the truth of both captures must lie in the phone's interval
[retransmissions, + retransmissions_undecided] and meet [dupacks, + dupacks_undecided]
(test_engine_receiver_netns.py asserts the same on fresh runs).

- reno_short_resend (8 % data, 10 % ACK drops): one IP ID missing after the newest original
  (a 1296-byte segment, lost), its re-send counted as one; the next new segment still lay
  within one full segment of it and was counted too: 174 decided against 173.
- reno_stale_dupacks (3 %, 5 %): the missing ID was a lost re-send of older bytes the phone
  had sent DupACKs for, not the original of the data after it: 65 against 64.
- reno_early_data (3 %, 5 %): a DupACK candidate (lost on the way) whose next data arrived
  26 us after it, within half the SRTT, but was sent after the ACK sent just before it had
  arrived: 421 decided DupACKs against 420.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, flow_row  # noqa: E402
from receiver_truth import dupacks_sent_bounds, retransmissions_arrived  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize("name", ["reno_short_resend", "reno_stale_dupacks", "reno_early_data"])
def test_truth_inside_the_receivers_bounds(name):
    from hsrtcp.testing import truth

    srv, cli = DATA / f"{name}.server.pcap.gz", DATA / f"{name}.client.pcap.gz"
    ct = truth.compute(srv, cli).connections[0]
    row = flow_row(analyze(cli, "client"), ct.client_port)
    rt = retransmissions_arrived(ct)
    dlo, dhi = dupacks_sent_bounds(srv, cli, ct)
    r, ru = row["retransmissions"], row["retransmissions_undecided"]
    d, du = row["dupacks"], row["dupacks_undecided"]
    assert r <= rt <= r + ru, (rt, r, ru)
    assert d <= dhi and dlo <= d + du, (dlo, dhi, d, du)
    # narrow, as on fresh runs
    assert ru <= max(3, 0.15 * rt) and du <= max(3, 0.15 * dlo)
