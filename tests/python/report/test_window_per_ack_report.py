"""The drill-down's window chart per ACK from the packets table (issue 31), in headless Chromium:
outstanding data (owin) and the advertised window as step lines at every ACK, the values those
of `hsrtcp plot window` (plot/window.py:outstanding). Without a packets table it draws the bins,
titled so: test_tsg_segments_report.py's test_without_packets_the_charts_say_per_bin_..."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hsrtcp.plot.tables import Results
from hsrtcp.plot.tsg import flow_packets
from hsrtcp.plot.window import outstanding
from hsrtcp.report.build import build_report
from .browser import browser, load, require_chromium
from .test_tsg_segments_report import _flow, _results


@pytest.fixture(scope="module")
def blackout(tmp_path_factory):
    require_chromium()
    res = _results(tmp_path_factory, "ack_blackout")
    flow = _flow(res)
    pk = flow_packets(Results(res), flow)
    return res, flow, outstanding(pk["data"], pk["acks"])


def _drawn(html, flow) -> dict:
    with browser() as d:
        load(d, html)
        return d.execute_script(f"""
            const ch = window.hsrtcpReport.charts['win-{flow['flow_id']}'];
            const s = ch.drawnSegments;
            return {{title: ch.spec.title, mode: s.mode, owin: s.owinVals, win: s.windowVals}};""")


def test_owin_and_window_per_ack_equal_plot_window_and_stay_flat_across_the_blackout(blackout):
    res, flow, ref = blackout
    build_report(res, None, res / "r.html")
    got = _drawn(res / "r.html", flow)
    assert "per ACK" in got["title"] and got["mode"] == "per ACK"
    owin = ref.filter(pl.col("owin").is_not_null())
    assert owin.height > 100 and len(got["owin"]) == owin.height  # every ACK after the first data, drawn
    o = np.array(got["owin"])
    assert np.abs(o[:, 0] - owin["t"].to_numpy()).max() < 1e-6  # µs-rounded times
    assert np.array_equal(o[:, 1], owin["owin"].to_numpy())
    w = np.array(got["win"])
    assert len(w) == ref.height and np.array_equal(w[:, 1], ref["window"].to_numpy())
    # the blackout (no ACK for a third of a second or more): one level piece, no vertex inside
    t = ref["t"].to_numpy()
    k = int(np.argmax(np.diff(t)))
    assert t[k + 1] - t[k] > 0.3
    inside = o[(o[:, 0] > t[k] + 1e-6) & (o[:, 0] < t[k + 1] - 1e-6)]
    assert len(inside) == 0



def test_above_the_limit_per_pixel_envelopes_keep_every_columns_extremes(blackout, monkeypatch):
    # the limit lowered to 20 (exact up to 40 ACKs in view; the flow has more), same code path
    from hsrtcp.report import flow_detail

    res, flow, ref = blackout
    monkeypatch.setattr(flow_detail, "SEGMENTS_MAX", 20)
    build_report(res, None, res / "r20.html")
    got = _drawn(res / "r20.html", flow)
    owin = ref.filter(pl.col("owin").is_not_null())
    o = np.array(got["owin"])
    assert got["mode"] == "envelope" and 0 < len(o) < owin.height
    # every vertex is an ACK's (time, owin), and the flow's highest and lowest owin are drawn
    pairs = set(zip(np.round(owin["t"].to_numpy(), 6).tolist(), owin["owin"].to_list()))
    assert all((round(t, 6), v) in pairs for t, v in o.tolist())
    assert o[:, 1].max() == owin["owin"].max() and o[:, 1].min() == owin["owin"].min()
