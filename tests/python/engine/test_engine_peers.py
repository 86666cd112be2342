"""Agreement with tshark and tcptrace on the same real-kernel captures where the definitions
match ours, and the documented differences where they do not (analyzers.md §2–§3):

- sender retransmissions = tcptrace "rexmt data pkts" (bytes sent twice);
- receiver: tcptrace counts only true duplicates as rexmt = our unnecessary retransmissions;
- DupACKs at the sender = tshark's duplicate_ack; at the receiver tshark also flags the
  immediate ACKs of duplicate arrivals, when nothing is outstanding (RFC 5681 requires data
  outstanding, M15), so ours is never above it;
- zero-window advertisements = tshark zero_window = tcptrace "zero win adv";
- RTT: tshark 4.0's ack_rtt ignores Karn's rule (it times retransmitted data from the first
  transmission), so across an RTO its maximum exceeds the RTO while ours and tcptrace's
  (Karn + intervening-transmission rule) stay at the path's RTT.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checks import analyze, flow_row  # noqa: E402

from hsrtcp.testing import peers  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
CASES = ["drops_cubic", "reno_nosack_nots", "zero_window", "bbr_drops", "ack_blackout", "data_blackout",
         "ipv6_drops", "nano"]


def _need(tool):
    if not peers.have(tool):
        pytest.skip(f"{tool} not installed")


def _setup(name, side):
    meta_p = DATA / f"{name}.json"
    if not meta_p.exists():
        pytest.skip(f"fixture {meta_p} missing")
    meta = json.loads(meta_p.read_text())
    pcap = DATA / f"{name}.{side}.pcap"
    port = meta["connections"][0]["client_port"]
    row = flow_row(analyze(pcap, side), port)
    if row["data_vantage"] is None:
        pytest.skip("vantage hint not wired into the engine yet (see checks.py)")
    return meta, pcap, port, row


def _dirs(counts, server_port):
    down = next(v for k, v in counts.items() if k[1] == server_port)
    up = next(v for k, v in counts.items() if k[3] == server_port)
    return down, up


def _tcptrace_dirs(pcap, server_port):
    rec = next(iter(peers.tcptrace(pcap).values()))[0]
    if rec["host_a"][1] == server_port:
        return rec["a2b"], rec["b2a"]
    return rec["b2a"], rec["a2b"]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("side", ["server", "client"])
def test_retransmissions_agree_with_tcptrace(name, side):
    _need("tcptrace")
    meta, pcap, port, row = _setup(name, side)
    down, _up = _tcptrace_dirs(pcap, meta["server_port"])
    if side == "server":
        assert row["retransmissions"] == down["rexmt_data_pkts"]
    else:
        # at the receiver tcptrace's rexmt are the bytes that arrived twice
        assert row["unnecessary_retransmissions"] == down["rexmt_data_pkts"]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("side", ["server", "client"])
def test_dupacks_and_zero_windows_agree_with_tshark(name, side):
    _need("tshark")
    meta, pcap, port, row = _setup(name, side)
    _down, up = _dirs(peers.tshark_flag_counts(peers.tshark_packets(pcap)), meta["server_port"])
    if side == "server":
        assert row["dupacks"] == up["duplicate_ack"]
    else:
        assert row["dupacks"] <= up["duplicate_ack"]
    assert row["zero_window_segments"] == up["zero_window"]


@pytest.mark.parametrize("name", ["ack_blackout", "data_blackout", "reno_nosack_nots"])
def test_tshark_rtt_ignores_karn_ours_and_tcptrace_do_not(name):
    _need("tshark")
    _need("tcptrace")
    meta, pcap, port, row = _setup(name, "server")
    rows = peers.tshark_packets(pcap)
    tshark_max = max(r["ack_rtt_s"] for r in rows if r["dport"] == meta["server_port"] and r["ack_rtt_s"] is not None)
    down, _up = _tcptrace_dirs(pcap, meta["server_port"])
    rto = row["rto_first_mean"]
    assert rto is not None and rto >= 0.2
    # tshark times the ACK of a retransmitted segment from its first transmission: its
    # maximum spans the RTO wait (Linux's RTO is at least 200 ms)
    assert tshark_max >= 0.2
    assert row["rtt_max"] < tshark_max / 2
    # tcptrace applies Karn's rule like we do: same maximum (tcptrace prints 0.1 ms steps)
    assert row["rtt_max"] == pytest.approx(down["rtt_max_s"], abs=1.5e-4)
    assert abs(row["rtt_ack_samples"] - down["rtt_samples"]) <= max(3, 0.02 * down["rtt_samples"])


SACK_CASES = ["drops_cubic", "bbr_drops", "data_blackout", "ipv6_drops", "nano", "ack_blackout", "zero_window",
              "twovantage_offset", "multi_concurrent"]


def _sack_rows(ds) -> dict[tuple, list[tuple]]:
    """Our sack_block events per data direction (src, sport, dst, dport): sorted
    (position, left, right, ts) tuples, and the classes."""
    import polars as pl

    f = ds.flows.select("flow_id", "client_addr", "client_port", "server_addr", "server_port")
    e = ds.events.filter(pl.col("kind") == "sack_block").join(f, on="flow_id")
    out: dict[tuple, list[tuple]] = {}
    for r in e.iter_rows(named=True):
        c, s = (r["client_addr"], r["client_port"]), (r["server_addr"], r["server_port"])
        key = (*c, *s) if r["dir"] == "c2s" else (*s, *c)
        out.setdefault(key, []).append((r["count"], r["seq_start"], r["seq_end"], r["ts"], r["class"]))
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.parametrize("name", SACK_CASES)
@pytest.mark.parametrize("side", ["server", "client"])
def test_sack_blocks_agree_with_tshark(name, side):
    """events kind sack_block: one row per SACK block tshark decodes, per flow and direction,
    same position in the option, same relative edges, same ACK time; class dsack exactly
    where tshark marks the first block as a D-SACK (tcp.options.sack.dsack_le)."""
    _need("tshark")
    pcap = DATA / f"{name}.{side}.pcap"
    if not pcap.exists():
        pytest.skip(f"fixture {pcap} missing")
    ours = _sack_rows(analyze(pcap, side))
    theirs: dict[tuple, list[tuple]] = {}
    for b in peers.tshark_sack_blocks(pcap):
        key = (b["dst"], b["dport"], b["src"], b["sport"])  # the data flows against the ACK
        theirs.setdefault(key, []).append((b["pos"], b["left"], b["right"], b["ts"]))
    assert theirs, f"{pcap.name}: no SACK block in the fixture"
    assert {k: len(v) for k, v in ours.items()} == {k: len(v) for k, v in theirs.items()}
    for k, rows in theirs.items():
        for (pos, le, re_, ts), (our_pos, our_le, our_re, our_ts, _cls) in zip(sorted(rows), ours[k]):
            assert (our_pos, our_le, our_re) == (pos, le, re_)
            # tshark prints nanosecond captures' times through a double as well
            assert our_ts == pytest.approx(ts, abs=2e-6)
    dsack = peers._exec(["tshark", "-n", "-r", str(pcap), "-Y", "tcp.options.sack.dsack_le", "-T", "fields",
                         "-e", "frame.time_epoch"]).split()
    assert sum(c == "dsack" for v in ours.values() for *_x, c in v) == len(dsack)
