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
from hsrtcp.cli import main

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"


def run(args) -> int:
    try:
        return main([str(a) for a in args])
    except SystemExit as exc:  # `analyze` ends with SystemExit(code)
        return exc.code


def radio_log(path: Path, start: float, end: float, speed: float, handoff: bool) -> Path:
    first, last, mid = round(start * 1000) - 1000, round(end * 1000) + 1000, round((start + end) / 2 * 1000)
    lines = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    for ms in range(first, last, 2):
        lines.append(f"{ms},M,LTE,1,{8 if handoff and ms >= mid else 7},{speed},-80,-10")
    path.write_text("\n".join(lines) + "\n")
    return path


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
