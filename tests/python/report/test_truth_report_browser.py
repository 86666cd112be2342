"""The lab's ground truth in the report's flow drill-downs (issue 38), in a real headless
Chromium: the results of a run bundle (tests/data/lab_truth) carry its truth, and every chart
of a flow draws each scheduled outage as a band where events.csv puts it — the band's pixels
checked against the chart's own scale — held and dropped apart, with the delay spikes, loss
bursts, handoffs and, on the throughput chart, the capacity the path offered. Witnesses:
events.csv, the manifest's t0, the flow's first packet read from the capture with dpkt, and
the compiled capacity trace. Results from plain captures show no truth."""

from __future__ import annotations

import csv
import json

import polars as pl
import pytest

from hsrtcp.report.build import build_report
from hsrtcp.testing import pcapio

from .browser import browser, load, require_chromium
from .common import DATA, run

BUNDLE = DATA / "lab_truth" / "run"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("lab_truth")
    assert run(["analyze", BUNDLE, "-q", "--no-plot", "-o", base / "res"]) == 0
    build_report(base / "res", None, base / "r.html")
    return base


def _events(kind: str) -> list[dict]:
    with open(BUNDLE / "events.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["kind"] == kind]


def _flow_time(t_window: float, capture: str) -> float:
    t0 = float(json.loads((BUNDLE / "manifest.json").read_text())["t0"])
    first = next(iter(pcapio.read_tcp(BUNDLE / "capture" / capture))).ts
    return t0 + t_window - first


def _state(d, cid: str) -> dict:
    return d.execute_script(f"""
        const c = window.hsrtcpReport.charts['{cid}'], u = c.plot;
        return {{bands: c.drawnBands, bbox: u.bbox, x: [u.scales.x.min, u.scales.x.max],
                 series: u.series.map(s => s.label), spec: c.spec}};""")


def test_every_chart_draws_the_scheduled_outages_at_their_times(lab):
    require_chromium()
    flows = pl.read_parquet(lab / "res" / "flows.parquet")
    outages = _events("outage")
    assert [o["outage_kind"] for o in outages] == ["held", "dropped", "held"]
    with browser() as d:
        log = load(d, lab / "r.html")
        assert [m for m in log if m["level"] in ("SEVERE", "WARNING")] == []
        for vantage, capture in (("server", "server.pcap"), ("client", "phone_p1.pcap")):
            fid = flows.filter(pl.col("vantage") == vantage)["flow_id"][0]
            assert d.execute_script(f"return window.hsrtcpReport.showFlow('{fid}')")
            for chart in ("tseq", "tput", "win", "rtt"):
                st = _state(d, f"{chart}-{fid}")
                drawn = {b["id"]: b for b in st["bands"] if (b["id"] or "").startswith("truth-outage-")}
                assert len(drawn) == len(outages), (chart, sorted(drawn))
                (x0, x1), box = st["x"], st["bbox"]
                for o in outages:
                    gid = f"truth-outage-{o['outage_kind']}-p1-{float(o['t_start']):.3f}-{float(o['t_end']):.3f}"
                    b = drawn[gid]
                    for t, px in ((float(o["t_start"]), b["x0"]), (float(o["t_end"]), b["x1"])):
                        want = box["left"] + (_flow_time(t, capture) - x0) / (x1 - x0) * box["width"]
                        assert px == pytest.approx(want, abs=1.0), (chart, gid)
                    assert b["label"] == f"truth: outage, {o['outage_kind']}"
                spec_bands = {b["id"]: b for b in st["spec"]["bands"] if b.get("id")}
                held = spec_bands[next(k for k in spec_bands if k.startswith("truth-outage-held"))]
                dropped = spec_bands[next(k for k in spec_bands if k.startswith("truth-outage-dropped"))]
                assert held["color"] != dropped["color"] and dropped.get("hatch") and not held.get("hatch")
                # spikes on top, bursts at the bottom, handoffs as solid lines
                for kind, n in (("rtt_spike", 3), ("loss_burst", 3)):
                    assert sum((b["id"] or "").startswith(f"truth-{kind}-") for b in st["bands"]) == n
                assert sum((b["id"] or "").startswith("truth-handoff-") for b in st["bands"]) == 3
                # the analyzer's own bands are told apart
                assert all(b["label"].startswith(("truth:", "inferred:")) for b in st["spec"]["bands"])
            tput = _state(d, f"tput-{fid}")
            assert tput["series"][1].startswith("truth: capacity offered (down")
        # the legend says which is which
        text = d.execute_script("return document.getElementById('detail-charts').innerText")
        assert "truth: outage, held (2)" in text and "truth: outage, dropped (1)" in text
        assert "inferred: handoff (radio log) (3)" in text and "truth: handoff (3)" in text


def test_capacity_series_is_the_compiled_trace(lab):
    """The capacity series of the throughput chart, piece by piece, against the trace file."""
    import json as _json

    from hsrtcp.report.build import _details, _flow_frame, _top_flows
    from hsrtcp.report.inputs import load_results

    res = load_results(lab / "res")
    f = _flow_frame(res)
    details = _details(res, f, _top_flows(f, 10), 1200)
    client = f.filter(pl.col("vantage") == "client")["flow_id"][0]
    d = next(x for x in details if x["flow_id"] == str(client))
    cap = next(s for s in d["charts"][1]["series"] if s["label"].startswith("truth: capacity"))
    pieces = _json.loads((BUNDLE / "scenario" / "traces" / "bw_down_p1.json").read_text())
    t, checked = 0.0, 0
    for p in pieces["RepeatedBwPatternConfig"]["pattern"]:
        c = p["StaticBwConfig"]
        dur = int(c["duration"].removesuffix("ms")) / 1000
        mid = _flow_time(t + dur / 2, "phone_p1.pcap")
        t += dur
        if not cap["x"][0] < mid < cap["x"][-1]:
            continue
        i = max(k for k, x in enumerate(cap["x"]) if x <= mid)
        assert cap["y"][i] == pytest.approx(int(c["bw"].removesuffix("bps")), rel=1e-4)
        checked += 1
    assert checked >= 10


def test_results_of_captures_show_no_truth(tmp_path):
    res = tmp_path / "res"
    assert run(["analyze", DATA / "drops_cubic.server.pcap", "--vantage", "server", "-q", "--no-plot",
                "-o", res]) == 0
    build_report(res, None, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    data = page.split('<script type="application/json" id="report-data">')[1].split("</script>")[0]
    details = json.loads(data)["details"]
    assert details and all(not b.get("truth") and not b["label"].startswith(("truth", "inferred"))
                           for d in details for c in d["charts"] for b in c["bands"])
    assert '"truth-' not in data and "truth: " not in data
