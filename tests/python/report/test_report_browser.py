"""The report in a real headless Chromium (tests/python/report/browser.py): it loads without
console errors, has every section and chart, draws something (screenshot), and its
time–sequence graph draws the retransmissions of drops_cubic.server.pcap where the events
table puts them. Skipped with a message when chromium/chromedriver are missing."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import polars as pl
import pytest

from hsrtcp.report.build import build_report
from hsrtcp.report.charts import RETRANS_COLOURS
from .browser import browser, built_page, load, require_chromium

SECTIONS = ("summary", "captures", "flows", "classes", "detail", "models", "mptcp", "provenance")


@pytest.fixture(scope="module")
def pair_report(pair, tmp_path_factory):
    return built_page(tmp_path_factory, "pair", pair["drops_cubic"], pair["study"])


@pytest.fixture(scope="module")
def drops_report(drops, tmp_path_factory):
    return built_page(tmp_path_factory, "drops", drops)


def _problems(log):
    return [m for m in log if m["level"] in ("SEVERE", "WARNING")]


def _drawn(d, cid: str, attr: str) -> dict:
    """What chart ``cid`` drew (its ``attr``: drawnMarks, drawnSacks), its plot box and the
    x and y scales' ranges."""
    return d.execute_script(f"""
        const c = window.hsrtcpReport.charts['{cid}'], u = c.plot;
        return {{drawn: c.{attr}, bbox: u.bbox, x: [u.scales.x.min, u.scales.x.max],
                 y: [u.scales.y.min, u.scales.y.max]}};""")


def _data_events(results, kind: str, *order: str) -> tuple[dict, pl.DataFrame]:
    """The first flow of ``results`` and its events of ``kind`` in the data direction."""
    flow = pl.read_parquet(results / "flows.parquet").row(0, named=True)
    ev = (pl.read_parquet(results / "events.parquet")
          .filter((pl.col("kind") == kind) & (pl.col("dir") == flow["data_dir"])).sort(*order))
    return flow, ev


@contextlib.contextmanager
def _time_sequence(report, flow: dict, attr: str):
    """``(driver, chart id, what it drew)`` of the flow's time-sequence graph in the loaded
    report (which logged no problem)."""
    cid = f"tseq-{flow['flow_id']}"
    with browser() as d:
        assert _problems(load(d, report)) == []
        yield d, cid, _drawn(d, cid, attr)


def _assert_colour_near(d, cid: str, x: float, y: float, colour: str) -> None:
    """The canvas of chart ``cid`` has ``colour`` (#rrggbb) at one of the three pixels around
    (x, y), within 40 per channel (anti-aliasing)."""
    rgb = d.execute_script(f"""
        const u = window.hsrtcpReport.charts['{cid}'].plot;
        return Array.from(u.ctx.getImageData({round(x) - 1}, {round(y)}, 3, 1).data);""")
    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    pixels = [rgb[i:i + 3] for i in (0, 4, 8)]
    assert any(max(abs(p[k] - want[k]) for k in range(3)) < 40 for p in pixels), (pixels, want)


def test_loads_without_console_errors_with_every_section_and_chart(pair_report, pair):
    with browser() as d:
        log = load(d, pair_report)
        assert _problems(log) == []
        assert d.execute_script("return document.body.dataset.ready") == "1"
        for sec in SECTIONS:
            assert d.execute_script(f"return document.getElementById('{sec}') !== null"), sec
        charts = d.execute_script("return Object.keys(window.hsrtcpReport.charts)")
        flows = pl.read_parquet(pair["drops_cubic"] / "flows.parquet")
        top = flows.sort("s2c_payload_bytes", descending=True)["flow_id"][0]
        for cid in (f"tseq-{top}", f"tput-{top}", f"win-{top}", f"rtt-{top}", "cdf-throughput", "cdf-rtt_mean_s"):
            assert cid in charts, (cid, charts)
            # each chart is a uPlot with a canvas of its size
            assert d.execute_script(f"return document.querySelector('#chart-{cid} canvas').width") > 300
        # per-class tables from the study, the class of the flow, the labels as provenance
        text = d.find_element("id", "classes").text
        assert "performance" in text and "high_1_8" in text
        assert "case" in d.find_element("id", "provenance").text
        # the handoff of the radio log, inside the flow, is a line on the time–sequence graph
        vlines = d.execute_script(f"return window.hsrtcpReport.charts['tseq-{top}'].spec.vlines")
        handoffs = pl.read_parquet(pair["drops_cubic"] / "handoffs.parquet")
        first_ts = flows.filter(pl.col("flow_id") == top)["first_ts"][0]
        assert [round(v["t"], 6) for v in vlines] == [round(t - first_ts, 6) for t in handoffs["ts"]]
        # the flow table lists every flows row
        assert d.find_element("id", "flow-count").text == f"{flows.height} of {flows.height} flows"
        # uint64 ids above 2^53 (matched rows) survive JavaScript: the table shows them exactly and
        # the drill-down of exactly that flow opens
        matched = flows.filter(pl.col("vantage") == "matched")["flow_id"][0]
        assert matched > 2**53
        assert str(matched) in d.find_element("id", "flow-table").text
        assert d.execute_script(f"return window.hsrtcpReport.showFlow('{matched}')") is True
        # the title names the row first (short id), then its long id (issue 31)
        assert f"(flow {matched}):" in d.find_element("id", "flow-title").text
        png = d.get_screenshot_as_png()
    _assert_not_blank(png)


def _assert_not_blank(png: bytes) -> None:
    import matplotlib.image as mpimg

    img = mpimg.imread(io.BytesIO(png), format="png")[..., :3]
    non_white = np.mean(np.any(img < 0.95, axis=2))
    colours = len(np.unique((img * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    assert non_white > 0.02 and colours > 20, (non_white, colours)


def test_time_sequence_marks_are_the_events_retransmissions_at_their_places(drops_report, drops):
    flow, ev = _data_events(drops, "retransmission", "ts")
    assert ev.height == 15  # drops_cubic: 15 fast retransmissions (tests/data/drops_cubic.json truth)
    with _time_sequence(drops_report, flow, "drawnMarks") as (d, cid, state):
        marks, bbox = state["drawn"], state["bbox"]
        assert len(marks) == ev.height
        for m, e in zip(marks, ev.iter_rows(named=True)):
            assert m["t"] == pytest.approx(e["ts"] - flow["first_ts"], abs=1e-6)
            assert (m["s0"], m["s1"], m["cls"]) == (e["seq_start"], e["seq_end"], e["class"])
            # where it is drawn: the axis scales map time and sequence to canvas pixels
            x = bbox["left"] + (m["t"] - state["x"][0]) / (state["x"][1] - state["x"][0]) * bbox["width"]
            mid = (e["seq_start"] + e["seq_end"]) / 2
            y = bbox["top"] + (state["y"][1] - mid) / (state["y"][1] - state["y"][0]) * bbox["height"]
            assert m["x"] == pytest.approx(x, abs=0.5)
            assert (m["y0"] + m["y1"]) / 2 == pytest.approx(y, abs=0.5)
            # and the canvas there has the class colour
            _assert_colour_near(d, cid, m["x"], y, RETRANS_COLOURS[e["class"]])

        # zoom in on one retransmission: only the marks of that window are drawn
        t = marks[7]["t"]
        zoomed = d.execute_async_script(f"""
            const done = arguments[arguments.length - 1], c = window.hsrtcpReport.charts['{cid}'];
            c.plot.setScale('x', {{min: {t - 1e-5}, max: {t + 1e-5}}});
            setTimeout(() => done(c.drawnMarks), 50);  // uPlot redraws in a microtask""")
        inside = [m for m in marks if abs(m["t"] - t) <= 1e-5]
        assert 1 <= len(zoomed) == len(inside) < len(marks)


def test_time_sequence_sack_blocks_are_the_events_at_their_places(drops_report, drops):
    """The SACK series of the time–sequence graph: one segment per sack_block row of the data
    direction (98 for drops_cubic.server.pcap, = tshark: tests/python/engine/test_engine_peers.py),
    at its ACK's time over the block's bytes, in the SACK colour; the legend counts them."""
    from hsrtcp.report.charts import SACK_COLOURS

    flow, ev = _data_events(drops, "sack_block", "ts", "count")
    assert ev.height == 98 and set(ev["class"]) == {"sack"}
    retx_t = (pl.read_parquet(drops / "events.parquet").filter(pl.col("kind") == "retransmission")["ts"]
              - flow["first_ts"]).to_numpy()
    with _time_sequence(drops_report, flow, "drawnSacks") as (d, cid, state):
        sacks, bbox = state["drawn"], state["bbox"]
        assert len(sacks) == ev.height
        got = sorted((round(m["t"], 6), m["s0"], m["s1"], m["cls"]) for m in sacks)
        want = sorted((round(e["ts"] - flow["first_ts"], 6), e["seq_start"], e["seq_end"], e["class"])
                      for e in ev.iter_rows(named=True))
        assert got == want
        far = None
        for m in sacks:
            x = bbox["left"] + (m["t"] - state["x"][0]) / (state["x"][1] - state["x"][0]) * bbox["width"]
            y1 = bbox["top"] + (state["y"][1] - m["s1"]) / (state["y"][1] - state["y"][0]) * bbox["height"]
            assert m["x"] == pytest.approx(x, abs=0.5)
            if abs(m["y1"] - m["y0"]) > 3:  # not widened to the 2-px minimum
                assert m["y1"] == pytest.approx(y1, abs=0.5)
            if far is None and np.abs(retx_t - m["t"]).min() * bbox["width"] / (state["x"][1] - state["x"][0]) > 6:
                far = m
        # the canvas at a segment with no retransmission tick nearby has the SACK colour
        assert far is not None
        _assert_colour_near(d, cid, far["x"], (far["y0"] + far["y1"]) / 2, SACK_COLOURS["sack"])
        legend = d.find_element("css selector", f"#chart-{cid} .marks-legend").text
        assert "SACK block (98)" in legend and "D-SACK" not in legend


def test_dsack_block_is_its_own_series(tmp_path):
    """ack_blackout.server.pcap: its one SACK block is a D-SACK (the spurious RTO's duplicate,
    tshark's tcp.options.sack.dsack_le too): drawn as class dsack, counted apart in the legend."""
    from .common import DATA, run

    require_chromium()
    for tmp in (tmp_path,):
        res = tmp / "blackout"
        assert run(["analyze", DATA / "ack_blackout.server.pcap", "--vantage", "server", "-q", "--no-plot",
                    "-o", res]) == 0
        build_report(res, None, tmp / "r.html")
        flow = pl.read_parquet(res / "flows.parquet").row(0, named=True)
        ev = pl.read_parquet(res / "events.parquet").filter(pl.col("kind") == "sack_block")
        assert ev["class"].to_list() == ["dsack"]
        with browser() as d:
            assert _problems(load(d, tmp / "r.html")) == []
            sacks = d.execute_script(f"return window.hsrtcpReport.charts['tseq-{flow['flow_id']}'].drawnSacks")
            assert [(m["cls"], m["s0"], m["s1"]) for m in sacks] == [("dsack", ev["seq_start"][0], ev["seq_end"][0])]
            assert sacks[0]["t"] == pytest.approx(ev["ts"][0] - flow["first_ts"], abs=1e-6)
            assert "D-SACK block (1)" in d.find_element(
                "css selector", f"#chart-tseq-{flow['flow_id']} .marks-legend").text


def test_flow_table_sorts_and_filters(drops_report):
    with browser() as d:
        load(d, drops_report)
        box = d.find_element("id", "flow-filter")
        box.send_keys("retx>100")
        assert d.find_element("id", "flow-count").text == "0 of 1 flows"
        box.clear()
        box.send_keys("retx=15 s2c")
        assert d.find_element("id", "flow-count").text == "1 of 1 flows"
        d.find_element("css selector", "#flow-table th[data-col='0']").click()
        assert "sorted-asc" in d.find_element("css selector", "#flow-table th[data-col='0']").get_attribute("class")


def test_model_chart_and_bands_render_cleanly(tmp_path):
    """data_blackout pair (a data blackout: RTOs, silences): the log–log model chart and the
    bands of timeout sequences are drawn without console errors."""
    from .common import DATA, run

    require_chromium()
    res = tmp_path / "blackout"
    assert run(["analyze", "--client", DATA / "data_blackout.client.pcap", "--server",
                DATA / "data_blackout.server.pcap", "-q", "--no-plot", "-o", res]) == 0
    build_report(res, None, tmp_path / "r.html")
    with browser() as d:
        assert _problems(load(d, tmp_path / "r.html")) == []
        # one flow has every input: one point per model series (the last series is the identity line)
        per_series = d.execute_script("""const data = window.hsrtcpReport.charts['model-fit'].plot.data;
            return data.slice(1, -1).map(ys => ys.filter(v => v !== null && v !== undefined).length)""")
        assert per_series and set(per_series) == {1}
        bands = d.execute_script("""return Object.values(window.hsrtcpReport.charts)
            .filter(c => c.spec.id.startsWith('tseq-')).map(c => c.spec.bands.length)""")
        assert sum(bands) >= 1


def test_flows_without_bins_or_data_open_without_errors(drops, tmp_path):
    """Edge cases of the drill-down: a flow whose series and rtt tables are empty gets notes
    and a time–sequence graph of its marks only; results where no flow carried data get a
    message instead of charts. Neither may raise in the page."""
    import shutil

    nobins, nodata = tmp_path / "nobins", tmp_path / "nodata"
    for d in (nobins, nodata):
        shutil.copytree(drops, d)
    for t in ("series", "rtt"):
        pl.read_parquet(nobins / f"{t}.parquet").clear().write_parquet(nobins / f"{t}.parquet")
    (pl.read_parquet(nodata / "flows.parquet")
     .with_columns(pl.lit(0, dtype=pl.UInt64).alias("s2c_payload_bytes"), pl.lit(0, dtype=pl.UInt64).alias("c2s_payload_bytes"))
     .write_parquet(nodata / "flows.parquet"))
    build_report(nobins, None, tmp_path / "nobins.html")
    build_report(nodata, None, tmp_path / "nodata.html")
    with browser() as d:
        assert _problems(load(d, tmp_path / "nobins.html")) == []
        assert "no series bins" in d.find_element("id", "flow-notes").text
        assert len(d.execute_script("return window.hsrtcpReport.charts['tseq-0'].drawnMarks")) == 15
        assert _problems(load(d, tmp_path / "nodata.html")) == []
        assert d.find_element("id", "flow-title").text == "No flow carried data: no drill-down."
