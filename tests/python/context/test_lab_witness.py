"""Lab witness for the context (root: runs the smoke campaign in network namespaces with
Rattan, about two minutes; skipped without root or rattan).

For every bundle, `hsrtcp analyze BUNDLE` (the bundle brings its radio.csv and t0) must give:

- per flow row (phone, server and matched), ``handoffs`` = the ``handoff`` rows of the
  scenario's events.csv (the ground truth, written by the scenario compiler independently of
  radio.csv's rows) inside [first_ts, last_ts], on the bundle clock t0 + t_start;
- ``flow_class`` = the M21/A2 rule applied here to radio.csv's speed samples and that count;
- for each handoff inside the phone flow, a suspension that contains the scenario's outage
  [h, h + o) seen at the phone: it starts at most one downlink delay after h (the
  suspension module's AFTER_S) and ends after h + o. The flow is a 23-s bulk download, so
  data is outstanding at every outage. The silences are read from the phone pcap with dpkt
  (a peer reader, not the engine); when the engine writes ``gap`` events the analysis' own
  suspensions.parquet must agree with them.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import dpkt
import polars as pl
import pytest

import hsrtcp

from hsrtcp.context.classes import flow_class, speed_class
from hsrtcp.context.readers import GAP_S
from hsrtcp.context.suspension import AFTER_S, suspensions
from hsrtcp.testing.cli import run_campaign

ROOT = Path(__file__).resolve().parents[3]
# the subprocesses run the hsrtcp this test imported
PKG_ROOT = str(Path(hsrtcp.__file__).resolve().parents[1])
pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    found = run_campaign(ROOT / "campaigns" / "smoke.toml", tmp_path_factory.mktemp("runs"), PYTHONPATH=PKG_ROOT)
    assert len(found) == 2
    return found


def _analyze(bundle: Path, out: Path) -> dict[str, pl.DataFrame]:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(bundle), "-o", str(out), "-q", "--no-plot"],
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stderr
    return {t: pl.read_parquet(out / f"{t}.parquet")
            for t in ("flows", "context", "handoffs", "suspensions", "labels")}


def _truth(bundle: Path, t0: float):
    with open(bundle / "events.csv") as fh:
        ev = list(csv.DictReader(fh))
    hand = [(int(e["path"]), t0 + float(e["t_start"])) for e in ev if e["kind"] == "handoff"]
    outage = {(int(e["path"]), e["handoff_id"]): (t0 + float(e["t_start"]), t0 + float(e["t_end"]))
              for e in ev if e["kind"] == "outage"}
    ids = {(int(e["path"]), t0 + float(e["t_start"])): e["handoff_id"] for e in ev if e["kind"] == "handoff"}
    return hand, {h: outage.get((p, ids[(p, h)])) for p, h in hand}


def _silences(pcap: Path, port: int) -> list[tuple[float, float]]:
    """Silences >= 0.2 s between consecutive packets of the connection on ``port`` (either
    direction), from the phone capture."""
    ts = []
    with open(pcap, "rb") as fh:
        for t, buf in dpkt.pcap.Reader(fh):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP) and port in (ip.data.sport, ip.data.dport):
                ts.append(t)
    return [(a, b) for a, b in zip(ts, ts[1:]) if b - a >= 0.2]


def _log_hole(ts: list[float], a: float, e: float) -> float:
    """Longest time [a, e] goes without a radio sample describing it: from the last sample at or
    before ``a`` (or from ``a``) through the samples inside to ``e``."""
    before = [t for t in ts if t <= a]
    inside = sorted(t for t in ts if a < t <= e)
    points = ([max(before)] if before else [a]) + inside + [e]
    return max(y - x for x, y in zip(points, points[1:]))


def test_handoffs_classes_and_suspensions_match_the_scenario(bundles, tmp_path):
    checked_suspensions = 0
    for b in bundles:
        t0 = json.loads((b / "manifest.json").read_text())["t0"]
        t = _analyze(b, tmp_path / b.name)
        hand, outages = _truth(b, t0)
        assert hand, f"{b.name}: the smoke scenario has handoffs"
        radio = pl.read_csv(b / "radio.csv").with_columns(pl.col("ts") + t0)
        ctx = t["context"].join(t["flows"].select("flow_id", "vantage", "client_port"), on="flow_id")
        assert len(ctx) == len(t["flows"])
        assert set(ctx["run_id"]) == {t["labels"]["run_id"][0]}
        for r in ctx.iter_rows(named=True):
            a, e = r["first_ts"], r["last_ts"]
            expected = sum(1 for p, h in hand if p == 1 and a <= h <= e)
            assert r["handoffs"] == expected, (b.name, r["vantage"])
            why = (b.name, r["vantage"], r["class_reason"], a - t0, e - t0, radio["ts"].min() - t0, radio["ts"].max() - t0)
            if _log_hole(radio["ts"].to_list(), a, e) > GAP_S:
                # the log stops (or starts) more than GAP_S away from the flow: the rule cannot
                # judge the speed there, so the flow is unknown, and says why
                assert r["flow_class"] == "unknown" and "gps gap" in (r["class_reason"] or ""), why
                continue
            v = radio.filter((pl.col("ts") >= a) & (pl.col("ts") <= e))["speed_kmh"]
            assert r["flow_class"] == flow_class(speed_class(v.min(), v.max()), expected)[0], why
            assert r["class_reason"] is None and r["usable"], why
        phone = ctx.filter(pl.col("vantage") == "client")
        assert len(phone) == 1
        pf = phone.row(0, named=True)
        sil = _silences(b / "capture" / "phone_p1.pcap", pf["client_port"])
        gaps = pl.DataFrame({"flow_id": [pf["flow_id"]] * len(sil), "ts": [s for s, _ in sil],
                             "ts_end": [e for _, e in sil], "class": ["stalled"] * len(sil)},
                            schema_overrides={"flow_id": pl.UInt64})
        phone_in = phone.select("flow_id", "run_id", "carrier", "first_ts", "last_ts")
        sus = suspensions(phone_in, t["handoffs"], gaps)
        assert len(sus) == pf["handoffs"]
        for s in sus.iter_rows(named=True):
            o_start, o_end = outages[s["handoff_ts"]]
            if o_end > pf["last_ts"]:
                continue
            assert s["gap_start_ts"] is not None, f"{b.name}: no silence at the handoff at {s['handoff_ts'] - t0:.3f}"
            assert s["gap_start_ts"] <= o_start + AFTER_S
            assert s["gap_end_ts"] >= o_end
            assert s["suspension_s"] >= (o_end - o_start) - AFTER_S
            checked_suspensions += 1
        engine = t["suspensions"]
        assert engine["handoff_ts"].to_list() == sus["handoff_ts"].to_list()
        if engine["suspension_s"].is_not_null().all():  # the engine writes gap events
            assert engine["suspension_s"].to_list() == pytest.approx(sus["suspension_s"].to_list(), abs=1e-6)
            assert engine.filter(pl.col("suspension_s") > 0)["stalled"].all()
    assert checked_suspensions >= 2
