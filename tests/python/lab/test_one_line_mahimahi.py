"""A one-line experiment over a Mahimahi trace (issue 38), as `mm-link TRACE -- cmd` with
`mm-throughput-graph`: `hsrtcp emulate --trace` makes a bundle, and the throughput figure of
its analysis draws the capacity the trace offered against what the flow got. Before, a run
without scheduled events (no handoffs) drew no ground truth at all, although its results held
truth_capacity."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.lab import bundle

pytestmark = pytest.mark.netns

REPO = Path(__file__).resolve().parents[3]
TRACE = REPO / "data" / "mahimahi" / "TMobile-LTE-short.down"
SVG = "{http://www.w3.org/2000/svg}"


def _y_axis(root: ET.Element) -> tuple[float, float]:
    """(scale, offset) from an SVG y coordinate to the axis value, read off the tick labels."""
    pos, val = [], []
    for g in root.iter(f"{SVG}g"):
        if re.fullmatch(r"ytick_\d+", g.get("id", "")):
            pos.append(float(next(g.iter(f"{SVG}use")).get("y")))
            val.append(float("".join(next(g.iter(f"{SVG}text")).itertext()).replace("−", "-")))
    assert len(pos) >= 2
    return tuple(np.polyfit(pos, val, 1))


def test_a_mahimahi_one_liner_draws_the_offered_capacity(tmp_path):
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    res = subprocess.run([sys.executable, "-m", "hsrtcp", "emulate", "--trace", str(TRACE), "--rate", "10Mbps/2Mbps",
                          "--duration", "10", "-o", str(run), "--", sys.executable, "-m", "hsrtcp", "measure",
                          "client", "$HSRTCP_SERVER", "--cc", "cubic", "-t", "6"],
                         capture_output=True, text=True, env=env, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"emulate: inline path: Mahimahi trace {TRACE} down, 2 Mbit/s up" in res.stderr
    assert "inside an outage" not in res.stderr  # no handoffs: nothing ends inside an outage
    # the DOWN rate of --rate is not used with a trace, and emulate says so (the uplink is)
    assert "10 Mbit/s down is not used; the uplink is 2 Mbit/s" in res.stderr
    assert bundle.check(run) == []
    out = tmp_path / "res"
    assert main(["analyze", str(run), "-o", str(out), "-q", "--no-plot"]) == 0
    assert pl.read_parquet(out / "truth_events.parquet").is_empty()
    cap = pl.read_parquet(out / "truth_capacity.parquet").filter(pl.col("direction") == "down")
    flow = pl.read_parquet(out / "flows.parquet").filter(pl.col("vantage") == "server").row(0, named=True)
    own = cap.filter((pl.col("ts_end") >= flow["first_ts"]) & (pl.col("ts") <= flow["last_ts"]))
    svg = tmp_path / "t.svg"
    assert main(["plot", "throughput", str(out), "--flow", "f1s", "-o", str(svg)]) == 0
    root = ET.parse(svg).getroot()
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g")}
    assert "truth-capacity" in groups, "the offered capacity is not drawn"
    d = next(groups["truth-capacity"].iter(f"{SVG}path")).get("d")
    ys = np.array([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]).reshape(-1, 2)[:, 1]
    a, b = _y_axis(root)
    drawn = (ys * a + b) * 1e6  # Mbit/s on the axis
    # the line spans the trace's pieces over the flow: its peak and its floor are the trace's
    assert drawn.max() == pytest.approx(own["bw_bps"].max(), rel=0.02)
    assert drawn.min() == pytest.approx(own["bw_bps"].min(), rel=0.02, abs=0.02e6)
    assert "truth: capacity offered" in " ".join(root.itertext())
