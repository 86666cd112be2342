"""The lab feeds the analyzer: a short campaign with two congestion controls produces complete
bundles, and `hsrtcp analyze` reads their captures like field captures.

Witnesses: the phone capture's payload bytes equal the bytes the client application received
(plus duplicates), and the server capture's retransmissions equal the kernel's TCP_INFO.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.lab import bundle
from hsrtcp.testing.cli import run_campaign

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_campaign(ROOT / "campaigns" / "smoke.toml", tmp_path_factory.mktemp("runs"))


def test_bundles_are_complete(runs):
    assert len(runs) == 2
    ccs = sorted(json.loads((b / "manifest.json").read_text())["cc"] for b in runs)
    assert ccs == ["bbr", "cubic"]
    for b in runs:
        assert bundle.check(b) == []


def test_analyze_reads_bundle_captures(runs):
    for b in runs:
        phone = sorted((b / "capture").glob("phone_p*.pcap"))
        server = b / "capture" / "server.pcap"
        ds = hsrtcp.analyze([*phone, server], vantage=["client"] * len(phone) + ["server"])
        assert ds.errors == []
        client = json.loads((b / "client.json").read_text())
        received = sum(c["bytes"] for c in client)
        for vantage in ("client", "server"):
            f = ds.flows.filter((pl.col("vantage") == vantage) & (pl.col("data_dir") == "s2c"))
            assert len(f) == len(client), f"{b.name}: {vantage} connections"
            # bytes seen at each end cover what the application got (duplicates included)
            assert f["s2c_payload_bytes"].sum() >= received
        phone_flows = ds.flows.filter(pl.col("vantage") == "client")
        assert phone_flows["handshake_seen"].all()
        # the data direction per 1-s bin at the phone sums to the payload it captured
        s = ds.series.join(phone_flows.select("flow_id", "s2c_payload_bytes"), on="flow_id")
        assert s["bytes"].sum() == phone_flows["s2c_payload_bytes"].sum()
