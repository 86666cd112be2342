"""The lab's ground truth in the per-flow figures (issue 38): a results directory made from a
run bundle carries the scenario's truth (truth_events, truth_capacity) and `hsrtcp plot`
draws it. The witnesses are the bundle's own files, read here without hsrtcp: events.csv
(scheduled outages), the compiled capacity trace (scenario/traces/bw_down_p1.json), the
manifest's t0, and the flow's first packet read from the capture with dpkt
(hsrtcp.testing.pcapio). The SVG is read back: each truth element's position is converted to
seconds with the x axis's own tick marks and labels.

Bundle: tests/data/lab_truth (README there: a 10-s scenario, three handoffs, outages held,
dropped, held, made with hsrtcp emulate).
"""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.testing import pcapio

from .conftest import DATA, analyze

BUNDLE = DATA / "lab_truth" / "run"
SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    return analyze(tmp_path_factory.mktemp("lab") / "res", str(BUNDLE))


def _events() -> list[dict]:
    with open(BUNDLE / "events.csv", newline="") as f:
        return list(csv.DictReader(f))


def _t0() -> float:
    return float(json.loads((BUNDLE / "manifest.json").read_text())["t0"])


def _first_packet(capture: str) -> float:
    return next(iter(pcapio.read_tcp(BUNDLE / "capture" / capture))).ts


def _plot(lab: Path, kind: str, flow: str, out: Path) -> ET.Element:
    from hsrtcp.cli import main

    assert main(["plot", kind, str(lab), "--flow", flow, "-o", str(out)]) == 0
    return ET.parse(out).getroot()


def _numbers(d: str) -> np.ndarray:
    return np.array([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]).reshape(-1, 2)


def _axis(root: ET.Element, axis: str) -> tuple[float, float]:
    """(scale, offset) turning an SVG coordinate into the axis's value, from its tick marks
    and the numbers written under them."""
    pos, val = [], []
    for g in root.iter(f"{SVG}g"):
        if not re.fullmatch(f"{axis}tick_\\d+", g.get("id", "")):
            continue
        use = next(g.iter(f"{SVG}use"))
        text = "".join(next(g.iter(f"{SVG}text")).itertext()).replace("−", "-")
        pos.append(float(use.get("x" if axis == "x" else "y")))
        val.append(float(text))
    assert len(pos) >= 2, f"no {axis} ticks in the SVG"
    a, b = np.polyfit(pos, val, 1)
    return a, b


def _by_id(root: ET.Element, prefix: str) -> dict[str, ET.Element]:
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith(prefix)}


@pytest.mark.parametrize("kind,flow,capture", [("throughput", "f1s", "server.pcap"), ("tsg", "f1c", "phone_p1.pcap"),
                                               ("window", "f1s", "server.pcap"), ("rtt", "f1c", "phone_p1.pcap")])
def test_every_scheduled_outage_at_its_time(lab, tmp_path, kind, flow, capture):
    root = _plot(lab, kind, flow, tmp_path / f"{kind}.svg")
    a, b = _axis(root, "x")
    first = _first_packet(capture)
    outages = [e for e in _events() if e["kind"] == "outage"]
    assert {e["outage_kind"] for e in outages} == {"held", "dropped"}  # the bundle has both
    drawn = _by_id(root, "truth-outage-")
    assert len(drawn) == len(outages) == 3
    styles = {}
    for e in outages:
        gid = f"truth-outage-{e['outage_kind']}-p{e['path']}-{float(e['t_start']):.3f}-{float(e['t_end']):.3f}"
        assert gid in drawn, (gid, sorted(drawn))
        path = next(drawn[gid].iter(f"{SVG}path"))
        xs = _numbers(path.get("d"))[:, 0] * a + b  # seconds since the flow's first packet
        want = (_t0() + float(e["t_start"]) - first, _t0() + float(e["t_end"]) - first)
        assert xs.min() == pytest.approx(want[0], abs=0.01) and xs.max() == pytest.approx(want[1], abs=0.01)
        styles.setdefault(e["outage_kind"], set()).add(path.get("style"))
    # held and dropped look different (each kind one look)
    assert len(styles["held"]) == 1 and len(styles["dropped"]) == 1 and styles["held"] != styles["dropped"]


def test_delay_spikes_loss_bursts_and_handoffs_are_marked(lab, tmp_path):
    root = _plot(lab, "throughput", "f1s", tmp_path / "t.svg")
    a, b = _axis(root, "x")
    first = _first_packet("server.pcap")
    for kind in ("rtt_spike", "loss_burst", "handoff"):
        rows = [e for e in _events() if e["kind"] == kind]
        drawn = _by_id(root, f"truth-{kind}-")
        assert len(drawn) == len(rows) == 3, (kind, sorted(drawn))
        for gid, g in drawn.items():
            xs = _numbers(next(g.iter(f"{SVG}path")).get("d"))[:, 0] * a + b
            t_start = float(gid.split("-")[-2 if kind != "handoff" else -1])
            assert xs.min() == pytest.approx(_t0() + t_start - first, abs=0.01), gid


def test_offered_capacity_against_the_delivered_throughput(lab, tmp_path):
    """The capacity line equals the compiled trace the emulator replayed, piece by piece."""
    root = _plot(lab, "throughput", "f1c", tmp_path / "t.svg")
    ax, bx = _axis(root, "x")
    ay, by = _axis(root, "y")
    label = "".join(t for t in root.itertext() if "throughput (" in t)
    assert "Mbit/s" in label  # the y ticks are Mbit/s
    line = _by_id(root, "truth-capacity")["truth-capacity"]
    pts = _numbers(next(line.iter(f"{SVG}path")).get("d"))
    x, y = pts[:, 0] * ax + bx, (pts[:, 1] * ay + by) * 1e6
    pieces = json.loads((BUNDLE / "scenario" / "traces" / "bw_down_p1.json").read_text())
    pieces = pieces["RepeatedBwPatternConfig"]["pattern"]
    first, t, checked = _first_packet("phone_p1.pcap"), 0.0, 0
    for p in pieces:
        c = p["StaticBwConfig"]
        d = int(c["duration"].removesuffix("ms")) / 1000
        mid = _t0() + t + d / 2 - first
        t += d
        if not (x.min() < mid < x.max()):
            continue
        i = np.searchsorted(x, mid, side="right") - 1  # the post-step line's value at mid
        assert y[i] == pytest.approx(int(c["bw"].removesuffix("bps")), rel=0.01, abs=2e3), (mid, c)
        checked += 1
    assert checked >= 10
    # the delivered line is there too, and the legend says which is which
    text = " ".join(root.itertext())
    assert "truth: capacity offered" in text and "throughput (payload received)" in text
    assert "truth: outage, held" in text and "truth: outage, dropped" in text
    assert "inferred: handoff (radio log)" in text


def test_the_results_carry_the_bundles_truth(lab):
    ev = pl.read_parquet(lab / "truth_events.parquet")
    rows = _events()
    assert ev.height == len(rows)
    assert ev["kind"].to_list() == [r["kind"] for r in rows]
    assert np.allclose(ev["ts"].to_numpy(), [_t0() + float(r["t_start"]) for r in rows])
    assert ev["outage_kind"].drop_nulls().to_list() == [r["outage_kind"] for r in rows if r["outage_kind"]]
    cap = pl.read_parquet(lab / "truth_capacity.parquet").filter(pl.col("direction") == "down")
    assert cap["t_start"].min() == 0 and cap["t_end"].max() == pytest.approx(10.0)
    assert (cap["t_end"].head(-1).to_numpy() == cap["t_start"].tail(-1).to_numpy()).all()  # contiguous
    meta = pl.read_parquet_metadata(lab / "truth_events.parquet")
    assert meta["hsrtcp.schema"] == "truth_events" and meta["hsrtcp.schema_version"] == "1"


def test_results_of_captures_draw_no_truth(drops, tmp_path):
    root = _plot(drops, "throughput", "f1", tmp_path / "t.svg")
    assert not _by_id(root, "truth-")
    assert "truth:" not in " ".join(root.itertext())
