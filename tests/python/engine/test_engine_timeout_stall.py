"""M10 timeouts after a stall that held packets (issue 30): the sender's RTO is then seconds long
and its ACK-clocked re-sends, paced at a low rate, come a fraction of a second after an ACK.
The witness is the kernel: the server socket's tcpi_total_rto, sampled every 10 ms in the lab
run the excerpt was cut from (tests/data/README.md). Each expected sequence is given by the
sampling window in which the kernel's count grew at its first timeout, and the number of
timeouts (1 + back-offs) the kernel counted for it."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import hsrtcp

DATA = Path(__file__).resolve().parents[2] / "data"
# tcpdump stamps the packet just after the sample that saw the timer fire
SLACK_S = 0.002

CASES = {
    "stall_paced_resend": [((1795823473.379490, 1795823473.391576), 4),
                           ((1795823495.709579, 1795823495.719715), 1)],
    "stall_paced_recovery": [((1795823601.719797, 1795823601.729812), 3),
                             ((1795823609.629833, 1795823609.643504), 1)],
}


@pytest.mark.parametrize("name", list(CASES))
def test_timeouts_after_a_stall_are_the_kernels(name):
    ds = hsrtcp.analyze(str(DATA / f"{name}.server.pcap.gz"))
    flows = ds.flows.filter(pl.col("s2c_payload_bytes") > 0)
    assert flows.height == 1
    f = flows.row(0, named=True)
    kernel = CASES[name]
    assert f["timeouts"] == sum(n for _, n in kernel), f["timeouts"]
    assert f["timeout_sequences"] == len(kernel)
    seqs = ds.events.filter((pl.col("flow_id") == f["flow_id"]) & (pl.col("kind") == "timeout_sequence")).sort("ts")
    got = [(r["ts"] + r["value"], r["count"]) for r in seqs.iter_rows(named=True)]
    for (t, count), ((lo, hi), n) in zip(got, kernel):
        assert lo <= t <= hi + SLACK_S, (t, lo, hi)
        assert count == n, (t, count, n)
