"""Fixtures of the command-line tests: one analyzed capture, shared by the module's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from hsrtcp.cli import main

#: three TCP connections, server side
CAP = Path(__file__).resolve().parents[2] / "data" / "multi_concurrent.server.pcap"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """`hsrtcp analyze CAP -o RESULTS` (read-only for the tests: copy before changing it)."""
    out = tmp_path_factory.mktemp("res")
    assert main(["analyze", str(CAP), "-o", str(out), "-q"]) == 0
    return out
