"""MPTCP over two emulated carriers: two subflows, one per path, seen in the phone captures."""

from __future__ import annotations

import polars as pl
import pytest

from hsrtcp.lab import emulate
from hsrtcp.testing import pcapio

from labtools import two_path_config

pytestmark = pytest.mark.netns

MP_CAPABLE, MP_JOIN = 0, 1


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("mptcp")
    cfg = two_path_config(d)
    out = emulate.run(cfg, d / "run", {"kind": "measure", "flow": {"type": "duration", "duration_s": 6,
                                                                     "cc": "cubic", "mptcp": True}}, mptcp=True)
    assert out.ok, out.errors
    return d / "run"


def _tuples(pkts):
    return {(p.src, p.sport, p.dst, p.dport) for p in pkts if p.mptcp_subtypes}


def test_one_subflow_per_path(run):
    p1 = list(pcapio.read_tcp(run / "capture" / "phone_p1.pcap"))
    p2 = list(pcapio.read_tcp(run / "capture" / "phone_p2.pcap"))
    t1, t2 = _tuples(p1), _tuples(p2)
    # each direction of one connection per path, all carrying MPTCP options
    assert len({tuple(sorted([(a, b), (c, d)])) for a, b, c, d in t1}) == 1
    assert len({tuple(sorted([(a, b), (c, d)])) for a, b, c, d in t2}) == 1
    assert all(src in ("10.1.1.1", "10.2.1.1") for src, *_ in t1)
    assert all(src in ("10.1.2.1", "10.2.1.1") for src, *_ in t2)
    syn1 = next(p for p in p1 if p.flags & pcapio.TCP_SYN)
    syn2 = next(p for p in p2 if p.flags & pcapio.TCP_SYN)
    assert MP_CAPABLE in syn1.mptcp_subtypes and syn1.src == "10.1.1.1"
    assert MP_JOIN in syn2.mptcp_subtypes and syn2.src == "10.1.2.1"
    # both subflows carried a real share of the data (capacities 20 and 10 Mbit/s)
    data1 = sum(p.payload_len for p in p1 if p.sport == 5201)
    data2 = sum(p.payload_len for p in p2 if p.sport == 5201)
    assert data1 > 2e6 and data2 > 1e6, (data1, data2)


def test_join_rtt_is_the_second_paths(run):
    p2 = list(pcapio.read_tcp(run / "capture" / "phone_p2.pcap"))
    syn = next(p for p in p2 if p.flags == pcapio.TCP_SYN)
    synack = next(p for p in p2 if p.flags & pcapio.TCP_SYN and p.flags & pcapio.TCP_ACK)
    # no faster than path 2's two 30-ms delay cells (path 1 would give 20 ms). No upper bound
    # on this one sample: the emulator is a userspace process, and one late wake-up on a
    # loaded host adds tens of ms (84.5 ms measured at load 6.6, 24 ms of it on the way down).
    assert synack.ts - syn.ts >= 0.060
    # The kernel's minimum RTT per subflow over the whole run (server TCP_INFO every 10 ms;
    # subflows in the kernel's list order, the initial one first): scheduling delays add to
    # single samples, not to the minimum of hundreds. 5 ms above the configured delays is
    # far from either mistake it must catch: the other path's RTT (40 ms away) or a delay
    # applied twice.
    df = pl.read_csv(next((run / "server" / "tcpinfo").glob("*.csv")))
    min_rtt = dict(df.group_by("subflow").agg(pl.col("min_rtt_s").drop_nulls().min()).iter_rows())
    assert 0.020 <= min_rtt[0] < 0.025, min_rtt  # path 1: 2 × 10 ms
    assert 0.060 <= min_rtt[1] < 0.065, min_rtt  # the join, path 2: 2 × 30 ms


def test_tcpinfo_per_subflow(run):
    files = list((run / "server" / "tcpinfo").glob("*.csv"))
    df = pl.read_csv(files[0])
    assert set(df["subflow"].drop_nulls().to_list()) == {0, 1}
