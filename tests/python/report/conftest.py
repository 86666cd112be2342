"""Results directories for the report tests, made by `hsrtcp analyze` from tests/data captures
(real kernel TCP, tests/data/README.md), and reports built from them.

- ``drops``: drops_cubic.server.pcap alone (server side = data sender): 15 fast retransmissions.
- ``pair``: the drops_cubic client/server pair with a radio log written around the flow's real
  packet times (300 km/h, one handoff in the middle, as the study tests do), so the results
  hold context, handoffs and suspensions; ``study``: `hsrtcp study` over it and the
  small_50k pair (one cell, high_0).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hsrtcp

from .common import DATA, RMAP, radio_log, run


@pytest.fixture(scope="session")
def drops(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "drops"
    assert run(["analyze", DATA / "drops_cubic.server.pcap", "--vantage", "server", "-q", "--no-plot", "-o", out]) == 0
    return out


def _pair(base: Path, name: str, handoff: bool) -> Path:
    client, server = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
    f = hsrtcp.analyze([client], vantage="client").flows
    log = radio_log(base / f"{name}.csv", float(f["first_ts"].min()), float(f["last_ts"].max()), 300.0, handoff)
    out = base / name
    assert run(["analyze", "--client", client, "--server", server, "--radio", log, "--radio-map", RMAP,
                "--label", f"case={name}", "-q", "--no-plot", "-o", out]) == 0
    return out


@pytest.fixture(scope="session")
def pair(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("report_pair")
    res = {"drops_cubic": _pair(base, "drops_cubic", True), "small_50k": _pair(base, "small_50k", False)}
    res["study"] = base / "study"
    assert run(["study", res["drops_cubic"], res["small_50k"], "-o", res["study"], "--min-flows", "1",
                "--bootstrap", "50", "-q"]) == 0
    return res
