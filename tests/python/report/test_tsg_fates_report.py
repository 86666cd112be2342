"""The report's matched drill-down marks the matcher's per-packet fates (issue 31): on a pair
analyzed with --packets, the time–sequence chart's embedded data (flow_detail.packet_segments)
lists exactly the data segments the packets table marks ``lost`` (decoded back to time and
seq) and the pure ACKs marked ``ack_lost``; headless Chromium draws a cross at each lost
segment's pixel. Single-capture results carry no fates."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest

from hsrtcp.report.build import build_report
from .browser import browser, load, require_chromium
from .common import DATA, run


def _pair(tmp_path_factory, name: str):
    out = tmp_path_factory.mktemp("fates") / name
    assert run(["analyze", "--client", DATA / f"{name}.client.pcap", "--server", DATA / f"{name}.server.pcap",
                "--packets", "-q", "--no-plot", "-o", out]) == 0
    build_report(out, None, out / "r.html")
    return out


def _embedded(path) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', path.read_text(), re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def _tseq(res, fid) -> dict:
    d = next(x for x in _embedded(res / "r.html")["details"] if x["flow_id"] == str(fid))
    return next(c for c in d["charts"] if c["id"].startswith("tseq-"))


def _decode(sp: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """As static/report.js decodes it: data (t s, seq) and ACKs (t s, ack)."""
    t = np.cumsum(sp["data"]["dt"]) / 1e6
    ln = np.array(sp["data"]["len"])
    ends = np.cumsum(np.array(sp["data"]["ds"]) + ln)
    return t, ends - ln, np.cumsum(sp["acks"]["dt"]) / 1e6, np.cumsum(sp["acks"]["ack"])


@pytest.fixture(scope="module")
def blackout(tmp_path_factory):
    return _pair(tmp_path_factory, "data_blackout")


def test_matched_drilldown_lists_every_lost_segment(blackout):
    flows = pl.read_parquet(blackout / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    srv = flows.filter(pl.col("flow_id") == m["server_flow_id"]).row(0, named=True)
    lost = pl.read_parquet(blackout / "packets.parquet").filter(
        (pl.col("flow_id") == srv["flow_id"]) & (pl.col("dir") == srv["data_dir"]) & (pl.col("len") > 0)
        & (pl.col("fate") == "lost")).sort("ts")
    assert lost.height == m["lost_data_packets"] == 56
    sp = _tseq(blackout, m["flow_id"])["segments"]
    t, s0, _, _ = _decode(sp)
    i = np.array(sp["fates"]["lost_i"])
    assert len(i) == 56 and sp["fates"]["ack_lost_t"] == []
    np.testing.assert_allclose(t[i], (lost["ts"] - srv["first_ts"]).to_numpy(), atol=1e-6)  # µs-coded times
    np.testing.assert_array_equal(s0[i], lost["seq"].to_numpy())
    # the exact marks replace the per-bin approximation
    assert not [s for s in _tseq(blackout, m["flow_id"])["series"] if s["label"].startswith("lost")]


def test_phone_rows_drilldown_lists_every_lost_ack(tmp_path_factory):
    res = _pair(tmp_path_factory, "ack_blackout")
    flows = pl.read_parquet(res / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    cli = flows.filter(pl.col("vantage") == "client").row(0, named=True)
    lost = pl.read_parquet(res / "packets.parquet").filter(
        (pl.col("flow_id") == cli["flow_id"]) & (pl.col("fate") == "ack_lost")).sort("ts")
    assert lost.height == m["lost_ack_packets"] == 22
    # the report drills down into the biggest flows; the phone's row is one of three
    sp = _tseq(res, cli["flow_id"])["segments"]
    assert len(sp["fates"]["ack_lost_t"]) == 22 and sp["fates"]["lost_i"] == []
    np.testing.assert_allclose(np.array(sp["fates"]["ack_lost_t"]) / 1e6, (lost["ts"] - cli["first_ts"]).to_numpy(),
                               atol=1e-6)
    np.testing.assert_array_equal(sp["fates"]["ack_lost_ack"], lost["ack"].to_numpy())


def test_matched_drilldown_lists_the_phones_lost_acks_at_their_true_send_time(tmp_path_factory):
    """twovantage_offset: the phone capture's clock moved 1.234567 s on purpose (lab metadata);
    the matched drill-down (the server's packets) shows the phone's lost ACKs at their send
    time on the server clock. Witness: hsrtcp.testing.truth with the known offset."""
    from hsrtcp.testing import truth

    name = "twovantage_offset"
    res = _pair(tmp_path_factory, name)
    off = json.loads((DATA / f"{name}.json").read_text())["time_offset_s"]
    lost = sorted((a.ts_sent - off, a.ack) for c in truth.compute(
        DATA / f"{name}.server.pcap", DATA / f"{name}.client.pcap", client_time_offset_s=off).connections
        for a in c.acks if not a.arrived)
    flows = pl.read_parquet(res / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    srv = flows.filter(pl.col("flow_id") == m["server_flow_id"]).row(0, named=True)
    assert len(lost) == m["lost_ack_packets"] == 17
    f = _tseq(res, m["flow_id"])["segments"]["fates"]
    got = sorted(zip(f["ack_lost_t"], f["ack_lost_ack"]))
    np.testing.assert_allclose([t / 1e6 for t, _ in got], [t - srv["first_ts"] for t, _ in lost], atol=1e-4)
    assert [a for _, a in got] == [a for _, a in lost]


def test_single_capture_drilldown_has_no_fates(tmp_path):
    out = tmp_path / "single"
    assert run(["analyze", DATA / "data_blackout.server.pcap", "--packets", "-q", "--no-plot", "-o", out]) == 0
    build_report(out, None, out / "r.html")
    for d in _embedded(out / "r.html")["details"]:
        tseq = next(c for c in d["charts"] if c["id"].startswith("tseq-"))
        assert tseq["segments"] is not None and "fates" not in tseq["segments"]


def test_browser_draws_a_cross_at_each_lost_segment(blackout):
    require_chromium()
    flows = pl.read_parquet(blackout / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    srv = flows.filter(pl.col("flow_id") == m["server_flow_id"]).row(0, named=True)
    lost = pl.read_parquet(blackout / "packets.parquet").filter(
        (pl.col("flow_id") == srv["flow_id"]) & (pl.col("fate") == "lost")).sort("ts")
    t = (lost["ts"] - srv["first_ts"]).to_numpy()
    with browser() as d:
        load(d, blackout / "r.html")
        assert d.execute_script(f"return window.hsrtcpReport.showFlow('{m['flow_id']}')") is True
        got = d.execute_script(f"""const ch = window.hsrtcpReport.charts['tseq-{m['flow_id']}'], u = ch.plot;
            return {{lost: ch.drawnSegments.lost,
                     x: {json.dumps(t.tolist())}.map(v => u.valToPos(v, 'x', true)),
                     y: {json.dumps(lost['seq'].to_list())}.map(v => u.valToPos(v, 'y', true)),
                     legend: document.querySelector('#chart-tseq-{m['flow_id']} .fate-legend').textContent}};""")
    assert len(got["lost"]) == 56
    drawn = np.array(sorted((p["x"], p["y"]) for p in got["lost"]))
    want = np.array(sorted(zip(got["x"], got["y"])))
    np.testing.assert_allclose(drawn, want, atol=0.5)  # µs-rounded times: well under a pixel
    assert "56 data segments" in got["legend"]


def test_browser_draws_the_phones_lost_acks_on_the_matched_chart(tmp_path_factory):
    require_chromium()
    res = _pair(tmp_path_factory, "ack_blackout")
    m = pl.read_parquet(res / "flows.parquet").filter(pl.col("vantage") == "matched").row(0, named=True)
    f = _tseq(res, m["flow_id"])["segments"]["fates"]
    with browser() as d:
        load(d, res / "r.html")
        assert d.execute_script(f"return window.hsrtcpReport.showFlow('{m['flow_id']}')") is True
        got = d.execute_script(f"""const ch = window.hsrtcpReport.charts['tseq-{m['flow_id']}'], u = ch.plot;
            return {{drawn: ch.drawnSegments.ackLost,
                     x: {json.dumps(f['ack_lost_t'])}.map(v => u.valToPos(v / 1e6, 'x', true)),
                     y: {json.dumps(f['ack_lost_ack'])}.map(v => u.valToPos(v, 'y', true))}};""")
    assert len(got["drawn"]) == m["lost_ack_packets"] == 22
    np.testing.assert_allclose(sorted((p["x"], p["y"]) for p in got["drawn"]), sorted(zip(got["x"], got["y"])),
                               atol=0.01)
