"""Issue 36 item 4: the sender's congestion control inferred from a capture.

Witnesses: captures of real kernel senders whose congestion control is known (the namespace
testbed; tests/data/congestion, the training runs of the thresholds), the fixtures without a
bottleneck (nothing to infer: "unknown"), receiver-side captures ("unknown"), and the docs'
accuracy tables recomputed from the committed campaign summary (scripts/cc_accuracy.py).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.passive import congestion as c

from .common import cli, results_of

pytest.importorskip("hsrtcp._native")

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


def _infer(path: Path, vantage: str | None = None) -> dict:
    ds = hsrtcp.analyze([str(path)], vantage=vantage) if vantage else hsrtcp.analyze([str(path)])
    flows = ds.flows.sort("s2c_payload_bytes", descending=True).head(1)
    return c.infer(flows, {flows["capture"][0]: path}).row(0, named=True)


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_known_senders(cc):
    r = _infer(DATA / "congestion" / f"cc_{cc}.server.pcap.gz")
    assert (r["congestion_control"], r["reason"]) == (cc, "response"), r
    assert r["episodes"] >= c.MIN_EPISODES


def test_unknown_rather_than_a_guess():
    # no bottleneck: 38 µs RTT, the window limits nothing
    r = _infer(DATA / "drops_cubic.server.pcap")
    assert r["congestion_control"] == "unknown" and "loss episodes" in r["reason"]
    # the receiver cannot see the flight
    r = _infer(DATA / "drops_cubic.client.pcap", vantage="client")
    assert r["congestion_control"] == "unknown" and r["reason"].startswith("receiver vantage")


def test_decide():
    assert c.decide([0.4, 0.5, 0.45], []) == ("reno", "response")
    assert c.decide([0.65, 0.7, 0.6], []) == ("cubic", "response")
    assert c.decide([0.95, 1.0, 0.9], []) == ("bbr", "response")
    assert c.decide([0.5, 0.5], [])[0] == "unknown"
    assert c.decide([], [1.0, 11.2]) == ("bbr", "probe_rtt")  # ProbeRTT about every 10 s
    assert c.decide([], [1.0, 3.0])[0] == "unknown"


def test_cli(tmp_path):
    cap = DATA / "congestion" / "cc_cubic.server.pcap.gz"
    res = results_of(cap, tmp_path / "r")
    p = cli("congestion", res, cap, "-o", tmp_path / "o")
    assert p.returncode == 0, p.stderr
    assert "cubic 1" in p.stdout
    t = pl.read_parquet(tmp_path / "o" / "congestion.parquet")
    assert t["congestion_control"].to_list() == ["cubic"]
    other = DATA / "congestion" / "cc_reno.server.pcap.gz"
    p = cli("congestion", res, other)
    assert p.returncode == 3 and "not a capture of" in p.stderr and "Traceback" not in p.stderr


def test_docs_accuracy_tables_are_the_committed_summary():
    summary = ROOT / "docs" / "passive" / "cc_accuracy.csv"
    doc = (ROOT / "docs" / "passive.md").read_text()
    assert c.accuracy_markdown(summary) in doc
