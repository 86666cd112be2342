"""A needed timeout whose back-off was needless is not a spurious timeout (issue 35: the
audit's first false alarms, runs 002 and 007 of the dropped-outage campaign; fixtures
cubic_backoff_plain and cubic_backoff_dsack, origin in tests/data/README.md).

In both, every copy of a segment sent before its first RTO re-send was lost; an RTO re-send
arrived, the phone's ACK of it was lost, and the timer fired again: that back-off copy
arrived as a duplicate. M12's unit is the timeout sequence, judged by its first RTO re-send
(docs/metrics.md): not spurious. The detectors used to judge it by the needless back-off:
- without SACK, the sender engine took the first RTO re-send (5 ms after a DupACK) for a
  second fast retransmit, and the two-capture method (no SACK, no RACK) likewise; the
  kernel's TCP_INFO counted total_rto 2 (the witness of the engine's timeouts);
- with SACK, the D-SACK of the fourth copy marked the sequence spurious, though its
  timestamp echo names the third copy (an RTO re-send) as the one that arrived.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, flow_row, truth_spurious_timeouts  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
CASES = {"cubic_backoff_plain": 7765846, "cubic_backoff_dsack": 9097826}


def _pair(name: str):
    return DATA / f"{name}.server.pcap.gz", DATA / f"{name}.client.pcap.gz"


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    from hsrtcp.testing import truth

    srv_pcap, cli_pcap = _pair(request.param)
    ct = truth.compute(srv_pcap, cli_pcap).connections[0]
    srv = analyze(srv_pcap, "server")
    return request.param, ct, srv, flow_row(srv, ct.client_port)


def test_the_fixture_is_a_needed_timeout_with_a_needless_back_off(case):
    name, ct, _, _ = case
    copies = sorted((d for d in ct.data if d.seq == CASES[name]), key=lambda d: d.ts_sent)
    arrived = [d.arrived for d in copies]
    # every copy up to the first arrival lost, that one arrived, then one duplicate
    first = arrived.index(True)
    assert first >= 2 and arrived[first + 1:] == [True]
    assert copies[-1].spurious and not copies[first].spurious


def test_truth_finds_no_spurious_timeout(case):
    _, ct, srv, row = case
    assert truth_spurious_timeouts(srv, row, ct) == []


def test_the_sender_counts_no_spurious_timeout(case):
    _, _, _, row = case
    # without timestamps Eifel has no verdict (null)
    methods = [row["spurious_timeouts_dsack"], row["spurious_timeouts_eifel"]]
    assert row["spurious_timeouts"] == 0 and all(m in (0, None) for m in methods)


def test_without_sack_both_expirations_are_timeouts():
    srv_pcap, cli_pcap = _pair("cubic_backoff_plain")
    from hsrtcp.testing import truth

    ct = truth.compute(srv_pcap, cli_pcap).connections[0]
    row = flow_row(analyze(srv_pcap, "server"), ct.client_port)
    # the server's TCP_INFO at the end of the run: total_rto 2, total_rto_recoveries 1
    assert (row["timeouts"], row["timeout_sequences"]) == (2, 1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_two_vantage_counts_no_spurious_timeout(name, tmp_path):
    import subprocess

    import polars as pl

    srv_pcap, cli_pcap = _pair(name)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "hsrtcp", "analyze", "--client", str(cli_pcap), "--server", str(srv_pcap), "-o", str(out), "-q", "--no-plot"]
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    m = pl.read_parquet(out / "flows.parquet").filter(pl.col("vantage") == "matched").row(0, named=True)
    assert (m["spurious_timeouts_2v"], m["spurious_timeouts"], m["rto_sequences"]) == (0, 0, 1)
