"""The tests/data capture pairs analyzed together (both vantages), for the model-fit tests."""

from __future__ import annotations

from pathlib import Path

import hsrtcp

DATA = Path(__file__).resolve().parents[2] / "data"


def analyze_pairs(names: list[str]):
    """``hsrtcp.analyze`` of the client and server captures of each pair in ``names``."""
    return hsrtcp.analyze([], client=[DATA / f"{n}.client.pcap" for n in names],
                          server=[DATA / f"{n}.server.pcap" for n in names], progress=False)
