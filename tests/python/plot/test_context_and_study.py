"""Figures with context and study tables: handoffs from handoffs.parquet on the per-flow
figures, and CDFs per class from a study directory made by `hsrtcp study`. The results come
from tests/data capture pairs (real kernel TCP) analyzed with a radio log written here
around the flow's real packet times (generic CSV, every 2 ms): drops_cubic at 300 km/h with
one serving-cell change in the middle of the flow (class high_1_8), data_blackout standing
still (static). The witnesses are the context and study tables."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import hsrtcp
from hsrtcp.plot import figure, plot

DATA = Path(__file__).resolve().parents[2] / "data"
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"


def radio_log(path: Path, start: float, end: float, speed: float, handoff: bool) -> Path:
    first, last, mid = round(start * 1000) - 1000, round(end * 1000) + 1000, round((start + end) / 2 * 1000)
    lines = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    lines += [f"{ms},M,LTE,1,{8 if handoff and ms >= mid else 7},{speed},-80,-10" for ms in range(first, last, 2)]
    path.write_text("\n".join(lines) + "\n")
    return path


def hsrtcp_cli(*args) -> None:
    p = subprocess.run([sys.executable, "-m", "hsrtcp", *map(str, args)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr


@pytest.fixture(scope="module")
def trips(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("ctx")
    out = {}
    for name, speed, handoff in (("drops_cubic", 300.0, True), ("data_blackout", 0.0, False)):
        client, server = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
        f = hsrtcp.analyze([client], vantage="client").flows
        log = radio_log(base / f"{name}.csv", float(f["first_ts"].min()), float(f["last_ts"].max()), speed, handoff)
        out[name] = base / name
        hsrtcp_cli("analyze", "--client", client, "--server", server, "--radio", log, "--radio-map", RMAP,
                   "-o", out[name], "-q")
    return out


def test_handoff_drawn_where_handoffs_parquet_puts_it(trips, tmp_path):
    d = trips["drops_cubic"]
    ho = pl.read_parquet(d / "handoffs.parquet")
    flows = pl.read_parquet(d / "flows.parquet")
    row = flows.filter(pl.col("vantage") == "client").row(0, named=True)
    inside = ho.filter(pl.col("ts").is_between(row["first_ts"], row["last_ts"]))
    assert inside.height == 1  # the one cell change of the log, inside the flow
    want = inside["ts"][0] - row["first_ts"]
    fig = figure("tsg", d, row["flow_id"])
    lines = [ln for ln in fig.axes[0].lines if ln.get_label() == "handoff"]
    assert len(lines) == 1 and lines[0].get_xdata()[0] == pytest.approx(want)
    fig = figure("throughput", d, row["flow_id"])
    stems = [c for c in fig.axes[0].containers if "handoff" in str(c.get_label())]
    assert len(stems) == 1
    assert np.asarray(stems[0].markerline.get_xdata()) == pytest.approx([want])
    for kind in ("tsg", "throughput", "window", "rtt"):
        plot(kind, d, tmp_path / f"{kind}.pdf", row["flow_id"])


def test_cdf_per_class_from_a_study(trips, tmp_path):
    study = tmp_path / "study"
    hsrtcp_cli("study", trips["drops_cubic"], trips["data_blackout"], "-o", study, "-q", "--bootstrap", "0")
    samples = pl.read_parquet(study / "throughput_samples.parquet")
    classes = set(samples["flow_class"].to_list())
    assert {"static", "high_1_8"} <= classes
    fig = figure("cdf", study)
    curves = {ln.get_gid(): ln for ln in fig.axes[0].lines}
    assert {"cdf-static", "cdf-high_1_8", "cdf-high_1_16"} <= set(curves)
    ax = fig.axes[0]
    unit = re.search(r"\((\w*bit/s)\)", ax.get_xlabel()).group(1)
    div = {"bit/s": 1, "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9}[unit]
    for cls in ("static", "high_1_8"):
        want = np.sort(samples.filter(pl.col("flow_class") == cls)["throughput_bps"].to_numpy())
        x = curves[f"cdf-{cls}"].get_xdata()[1:] * div
        np.testing.assert_allclose(x, want, rtol=1e-12)
        assert curves[f"cdf-{cls}"].get_ydata()[-1] == 1.0
    # high_1_16 = high_1_8 ∪ high_9_16 (seed 000's column)
    assert len(curves["cdf-high_1_16"].get_xdata()) == len(curves["cdf-high_1_8"].get_xdata())
    for fmt in ("png", "svg", "pdf"):
        plot("cdf", study, tmp_path / f"cdf.{fmt}")
    # any column of study_flows, by any column
    plot("cdf", study, tmp_path / "rtt.pdf", table="study_flows", metric="rtt_mean_s", by="flow_class")
