"""The drill-down's time–sequence graph from the packets table (issue 31), in headless Chromium:
every data segment a tick from seq to seq + len at its time (per-pixel envelopes above 3,000
in view), the cumulative ACK a step per ACK; without a packets table the chart says per 1-s
bin and how to get segments. Positions are checked against the packets table itself
(docs/formats/packets.md, the engine's per-packet rows: frame numbers as tshark's)."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest

from hsrtcp.report.build import build_report
from .browser import browser, load, require_chromium
from .common import DATA, run


def _results(tmp_path_factory, name: str, packets: bool = True):
    out = tmp_path_factory.mktemp("tsgseg") / name
    args = ["analyze", DATA / f"{name}.server.pcap", "--vantage", "server", "-q", "--no-plot", "-o", out]
    assert run(args + (["--packets"] if packets else [])) == 0
    return out


def _embedded(path) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', path.read_text(), re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def _flow(res):
    return pl.read_parquet(res / "flows.parquet").sort("s2c_payload_bytes", descending=True).row(0, named=True)


@pytest.fixture(scope="module")
def drops_pk(tmp_path_factory):
    require_chromium()
    res = _results(tmp_path_factory, "drops_cubic")
    build_report(res, None, res / "r.html")
    return res


def test_zoom_to_one_retransmission_draws_it_at_its_pixel(drops_pk):
    flow = _flow(drops_pk)
    p = pl.read_parquet(drops_pk / "packets.parquet").filter(
        (pl.col("flow_id") == flow["flow_id"]) & (pl.col("dir") == flow["data_dir"]) & (pl.col("len") > 0))
    rx = p.filter(pl.col("retrans").is_not_null()).sort("ts").row(0, named=True)
    t = rx["ts"] - flow["first_ts"]
    cid = f"tseq-{flow['flow_id']}"
    with browser() as d:
        load(d, drops_pk / "r.html")
        c = f"window.hsrtcpReport.charts['{cid}']"
        first = d.execute_script(f"return {c}.drawnSegments")
        # the whole flow in view: its 714 data segments, each drawn
        assert first["mode"] == "segments" and first["inView"] == len(first["segments"]) == p.height
        got = d.execute_script(f"""
            const ch = {c}, u = ch.plot;
            u.batch(() => {{ u.setScale('x', {{min: {t} - 0.0004, max: {t} + 0.0004}});
                             u.setScale('y', {{min: {rx['seq']} - 3000, max: {rx['seq'] + rx['len']} + 3000}}); }});
            const s = ch.drawnSegments;
            return {{mode: s.mode, segs: s.segments.filter(x => x.cls !== null),
                     x: u.valToPos({t}, 'x', true), y0: u.valToPos({rx['seq']}, 'y', true),
                     y1: u.valToPos({rx['seq'] + rx['len']}, 'y', true)}};""")
    assert got["mode"] == "segments"
    seg = [s for s in got["segs"] if s["s0"] == rx["seq"]]
    assert len(seg) == 1 and seg[0]["cls"] == rx["retrans"]
    assert seg[0]["s1"] == rx["seq"] + rx["len"]
    assert abs(seg[0]["x"] - got["x"]) < 0.5  # µs-rounded times: 1 µs is 1/10 pixel here
    assert abs(seg[0]["y0"] - got["y0"]) < 0.01 and abs(seg[0]["y1"] - got["y1"]) < 0.01


def test_ack_step_line_is_flat_across_the_blackout(tmp_path_factory):
    require_chromium()
    res = _results(tmp_path_factory, "ack_blackout")
    build_report(res, None, res / "r.html")
    flow = _flow(res)
    acks = (pl.read_parquet(res / "packets.parquet")
            .filter((pl.col("flow_id") == flow["flow_id"]) & (pl.col("dir") != flow["data_dir"])
                    & pl.col("ack").is_not_null()).sort("ts"))
    t = acks["ts"].to_numpy() - flow["first_ts"]
    k = int(np.argmax(np.diff(t)))
    start, end = t[k], t[k + 1]
    assert end - start > 0.3  # the fixture's blackout: no ACK for a third of a second or more
    with browser() as d:
        load(d, res / "r.html")
        got = d.execute_script(f"""
            const ch = window.hsrtcpReport.charts['tseq-{flow['flow_id']}'], u = ch.plot;
            return {{pts: ch.drawnSegments.ack, mode: ch.drawnSegments.mode,
                     a: u.valToPos({start}, 'x', true), b: u.valToPos({end}, 'x', true),
                     y: u.valToPos({acks['ack'][k]}, 'y', true)}};""")
    assert got["mode"] == "segments"
    pts = np.array(got["pts"])
    inside = pts[(pts[:, 0] > got["a"] + 0.5) & (pts[:, 0] < got["b"] - 0.5)]
    assert len(inside) == 0  # no vertex (no change) inside the blackout
    # a level piece from the last ACK before the blackout to the first after it, at that ACK's value
    level = [(x0, x1) for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:])
             if abs(y0 - y1) < 1e-9 and abs(y0 - got["y"]) < 0.01]
    assert any(x0 <= got["a"] + 0.5 and x1 >= got["b"] - 0.5 for x0, x1 in level)


def test_without_packets_the_charts_say_per_bin_and_how_to_get_segments(drops, tmp_path):
    # the time–sequence graph and the window chart (no per-ACK owin without packets)
    require_chromium()
    out = tmp_path / "r.html"
    build_report(drops, None, out)
    flow = _flow(drops)
    tseq, _tput, win = _embedded(out)["details"][0]["charts"][:3]
    assert tseq.get("segments") is None and win.get("per_ack") is None and win["series"]
    assert all("per 1-s bin" in s["label"] for s in tseq["series"])
    with browser() as d:
        load(d, out)
        titles = [d.find_element("css selector", f"#chart-{c}-{flow['flow_id']} h4").text for c in ("tseq", "win")]
        notes = d.find_element("id", "flow-notes").text
    assert all("per 1-s bin" in t and "hsrtcp analyze --packets" in t for t in titles)
    assert "no packets table" in notes and "bytes in flight and window: per 1-s bin, not per ACK" in notes


def test_above_the_limit_per_pixel_envelopes_cover_every_segment_and_zoom_returns_to_ticks(drops_pk, monkeypatch):
    # the limit lowered to 300 (the fixture's flow has 714 data segments), same code path
    from hsrtcp.report import flow_detail

    monkeypatch.setattr(flow_detail, "SEGMENTS_MAX", 300)
    out = drops_pk / "r100.html"
    build_report(drops_pk, None, out)
    flow = _flow(drops_pk)
    p = (pl.read_parquet(drops_pk / "packets.parquet")
         .filter((pl.col("flow_id") == flow["flow_id"]) & (pl.col("dir") == flow["data_dir"]) & (pl.col("len") > 0)))
    t = p["ts"].to_numpy() - flow["first_ts"]
    s0, s1 = p["seq"].to_numpy(), p["seq"].to_numpy() + p["len"].to_numpy()
    with browser() as d:
        load(d, out)
        c = f"window.hsrtcpReport.charts['tseq-{flow['flow_id']}']"
        env = d.execute_script(f"""const u = {c}.plot, s = {c}.drawnSegments;
            return {{mode: s.mode, bars: s.segments, pos: {json.dumps(t.tolist())}.map(v => u.valToPos(v, 'x', true)),
                     left: u.bbox.left}};""")
        mid = float(t[len(t) // 2])
        zoomed = d.execute_script(f"""const u = {c}.plot;
            u.batch(() => u.setScale('x', {{min: {mid} - 0.0003, max: {mid} + 0.0003}}));
            return {c}.drawnSegments;""")
    assert env["mode"] == "envelope" and 0 < len(env["bars"]) < len(t)
    cols = {round(b["x"] - 0.5 - env["left"]): b for b in env["bars"]}
    for x, a, b in zip(env["pos"], s0, s1):  # each segment inside the bar of its pixel column
        bar = cols[int(np.floor(x - env["left"] + 1e-6))]
        assert bar["s0"] <= a and b <= bar["s1"]
    want = int(((t >= mid - 0.0003) & (t <= mid + 0.0003)).sum())
    assert 0 < want <= 300
    assert zoomed["mode"] == "segments" and zoomed["inView"] == len(zoomed["segments"]) == want


def test_matched_row_draws_its_server_rows_segments_retransmissions_and_losses(tmp_path):
    require_chromium()
    res = tmp_path / "pair"
    assert run(["analyze", "--client", DATA / "drops_cubic.client.pcap", "--server", DATA / "drops_cubic.server.pcap",
                "--packets", "-q", "--no-plot", "-o", res]) == 0
    build_report(res, None, tmp_path / "r.html")
    flows = pl.read_parquet(res / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    p = pl.read_parquet(res / "packets.parquet").filter(
        (pl.col("flow_id") == m["server_flow_id"]) & (pl.col("dir") == m["data_dir"]) & (pl.col("len") > 0))
    rx = p.filter(pl.col("retrans").is_not_null()).sort("ts")
    with browser() as d:
        load(d, tmp_path / "r.html")
        assert d.execute_script(f"return window.hsrtcpReport.showFlow('{m['flow_id']}')") is True
        got = d.execute_script(f"""const ch = window.hsrtcpReport.charts['tseq-{m['flow_id']}'];
            return {{s: ch.drawnSegments, labels: ch.spec.series.map(x => x.label)}};""")
    assert got["s"]["mode"] == "segments" and len(got["s"]["segments"]) == p.height
    drawn = [(s["s0"], s["cls"]) for s in got["s"]["segments"] if s["cls"] is not None]
    assert drawn == list(zip(rx["seq"].to_list(), rx["retrans"].to_list())) and len(drawn) == m["retransmissions"]
    # the matcher's losses: one mark per lost segment from the packets table's fates
    # (tests/python/report/test_tsg_fates_report.py), no per-bin points
    assert not [lb for lb in got["labels"] if lb.startswith("lost")]
    assert len(got["s"]["lost"]) == m["lost_data_packets"] > 0
