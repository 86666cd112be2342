"""`gap` events (M24, A12) on real captures: every silence of at least 200 ms between two
consecutive packets of a connection, either direction. Witness: the packet times read with
the project's pure-Python pcap reader (hsrtcp.testing.pcapio, independent of the Rust core),
gaps computed from them here.

data_blackout drops every data segment from 0.3 s to 1.2 s: the phone (client capture)
receives nothing and so sends nothing; the server retransmits with back-off."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


def _witness_gaps(pcap: Path, port: int) -> list[tuple[float, float]]:
    from hsrtcp.testing.pcapio import read_tcp

    times = [p.ts_ns for p in read_tcp(pcap) if port in (p.sport, p.dport)]
    return [(a * 1e-9, b * 1e-9) for a, b in zip(times, times[1:]) if b - a >= 200_000_000]


@pytest.mark.parametrize("name,side", [("data_blackout", "client"), ("data_blackout", "server"),
                                       ("ack_blackout", "server"), ("ack_delay", "client")])
def test_gap_events_are_every_silence_of_200_ms(name, side):
    import hsrtcp
    import polars as pl

    pcap = DATA / f"{name}.{side}.pcap"
    if not pcap.exists():
        pytest.skip(f"fixture {pcap} missing (scripts/make_fixtures.py)")
    ds = hsrtcp.analyze([str(pcap)], vantage=side)
    flow = ds.flows.row(0, named=True)
    want = _witness_gaps(pcap, flow["client_port"])
    got = ds.events.filter((pl.col("flow_id") == flow["flow_id"]) & (pl.col("kind") == "gap")).sort("ts")
    assert got.height == len(want), (got.select("ts", "ts_end"), want)
    for row, (a, b) in zip(got.iter_rows(named=True), want):
        assert abs(row["ts"] - a) < 2e-6 and abs(row["ts_end"] - b) < 2e-6
        assert abs(row["duration_s"] - (b - a)) < 2e-6
        assert row["value"] == 0.2 and row["class"] in ("stalled", "idle")
    if name == "data_blackout":
        # the blackout (0.3 s to 1.2 s after the start) is a long gap at both ends; the
        # server has data outstanding in it (stalled), the phone had acknowledged all it got
        long = got.filter(pl.col("duration_s") >= 0.5)
        assert long.height >= 1 and long["ts"].min() - flow["first_ts"] < 1.2, long
        want_class = "stalled" if side == "server" else "idle"
        assert (long["class"] == want_class).all(), long
