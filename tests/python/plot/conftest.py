"""Results directories the figure and query tests draw from: fixtures of tests/data
(real kernel TCP through the namespace testbed, tests/data/README.md) analyzed by the CLI
into a temporary directory once per session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data"


def analyze(out: Path, *args: str) -> Path:
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", *args, "-o", str(out), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture(scope="session")
def drops(tmp_path_factory) -> Path:
    """reno_nosack_nots, server side: 2 % data and ACK drops, no SACK: retransmissions of two
    classes (fast and rto, 17 and 10 with the committed fixture)."""
    return analyze(tmp_path_factory.mktemp("drops") / "drops", str(DATA / "reno_nosack_nots.server.pcap"))


@pytest.fixture(scope="session")
def pair(tmp_path_factory) -> Path:
    """ack_blackout, both sides: a spurious RTO, a suspension, matched rows with model inputs."""
    return analyze(tmp_path_factory.mktemp("pair") / "pair", "--client", str(DATA / "ack_blackout.client.pcap"),
                   "--server", str(DATA / "ack_blackout.server.pcap"))


@pytest.fixture(scope="session")
def multi(tmp_path_factory) -> Path:
    """multi_concurrent, server side: three concurrent flows."""
    return analyze(tmp_path_factory.mktemp("multi") / "multi", str(DATA / "multi_concurrent.server.pcap"))


@pytest.fixture(scope="session")
def sack(tmp_path_factory) -> Path:
    """drops_cubic, server side: SACK recovery (98 SACK blocks, 15 fast retransmissions)."""
    return analyze(tmp_path_factory.mktemp("sack") / "sack", str(DATA / "drops_cubic.server.pcap"))
