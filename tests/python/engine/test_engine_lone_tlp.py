"""A tail-loss probe with one segment outstanding (fixture cubic_lone_tlp, origin in
tests/data/README.md; a live run of test_engine_netns.py[cubic_sack_ts] failed on it with
"engine 1 timeout, kernel total_rto 0").

Cubic with SACK: the last 664 bytes were the only data outstanding and were lost. Linux
delays the probe to about the RTO then (PTO = 2·SRTT + 200 ms, capped at the RTO timer) but
sends it as a probe: total_rto stays 0. The engine read the lone re-send as a timeout;
with SACK and no recovery under way it is the probe (docs/engine.md, "Known limits").
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data"
SRV = DATA / "cubic_lone_tlp.server.pcap.gz"
TAIL = (1499337, 1500001)


def test_the_lone_tail_resend_is_a_probe_not_a_timeout():
    ds = analyze(SRV, "server")
    f = ds.flows.row(0, named=True)
    assert f["sack_permitted"]
    # the kernel's witness: total_rto 0 (tests/data/README.md)
    assert (f["timeouts"], f["timeout_sequences"], f["retrans_rto"]) == (0, 0, 0)
    assert f["retrans_tlp"] == 1
    probe = ds.events.filter((pl.col("kind") == "retransmission") & (pl.col("class") == "tlp"))
    assert probe.select(["seq_start", "seq_end"]).rows() == [TAIL]
    # it waited about the RTO: this is the case the delay alone cannot tell
    assert probe["value"][0] > 0.2


def test_the_lone_tail_resend_in_a_recovery_is_a_timeout_not_a_probe():
    """cubic_recovery_rto (origin in tests/data/README.md; a live run of
    test_engine_netns.py[cubic_sack_ts] failed on it with "engine 3 timeouts, kernel
    total_rto 4"): RACK re-sent 1341657 and then the newest segment 1344553, the only one
    left outstanding; 212 ms later 1344553 went again. The same shape as above, but in a
    recovery, where Linux arms no probe: the timer's (docs/engine.md, "Known limits")."""
    ds = analyze(DATA / "cubic_recovery_rto.server.pcap.gz", "server")
    f = ds.flows.row(0, named=True)
    # the kernel's witness: total_rto 4 (tests/data/README.md)
    assert (f["timeouts"], f["retrans_rto"], f["retrans_tlp"]) == (4, 4, 0)
    t0 = ds.events["ts"].min()
    again = ds.events.filter((pl.col("kind") == "retransmission") & (pl.col("seq_start") == 1344553))
    assert again.select(["class"]).rows() == [("fast",), ("rto",)]
    assert again["ts"][1] - t0 > 0.98 and again["value"][1] > 0.2
