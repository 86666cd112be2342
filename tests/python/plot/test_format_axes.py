"""Issue 31 in the figures: every axis names its unit and its tick labels are plain numbers
(no 1e6 offset, no 10^6 on log axes, no SI letter), read back from the matplotlib Figure
objects; shares in %, RTTs in the unit their size asks for."""

from __future__ import annotations

import re

import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from hsrtcp.plot import figure

BAD = re.compile(r"\d[eE][+-]?\d|\^|×|\$|^-?[\d.]+[kMGmµ]$")
UNIT = re.compile(r"\((s|ms|µs|bytes|B|kB|MB|GB|bit/s|kbit/s|Mbit/s|Gbit/s|%|packets/s)[,)]|% of values")


def _ticks(fig):
    FigureCanvasAgg(fig).draw()
    out = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t.get_text() for t in axis.get_ticklabels(which="both") if t.get_text()]
            out.append((axis.get_label_text(), labels, axis.get_offset_text().get_text()))
    return out


def _server_flow(results):
    f = pl.read_parquet(results / "flows.parquet")
    return f.filter(pl.col("vantage").fill_null("server") == "server")["flow_id"][0]


@pytest.mark.parametrize("kind", ["tsg", "throughput", "window", "rtt"])
def test_per_flow_axes_carry_units_and_plain_ticks(pair, kind):
    for label, ticks, offset in _ticks(figure(kind, pair, _server_flow(pair))):
        assert UNIT.search(label), (kind, label)
        assert ticks and offset == "", (kind, label, ticks, offset)
        assert not [t for t in ticks if BAD.search(t)], (kind, label, ticks)


def test_rtt_axis_in_the_unit_its_values_ask_for(pair):
    flow = _server_flow(pair)
    rtt = pl.read_parquet(pair / "rtt.parquet").filter(pl.col("flow_id") == flow)["rtt_s"].max()
    fig = figure("rtt", pair, flow)
    want = "µs" if rtt < 1e-3 else "ms" if rtt < 1 else "s"
    assert fig.axes[0].get_ylabel() == f"round-trip time ({want})"


def test_cdf_log_axis_and_share_axis_in_percent(pair, multi):
    # the default throughput CDF on a log axis: matplotlib wrote 10^6 there
    for label, ticks, offset in _ticks(figure("cdf", multi, logx=True)):
        assert UNIT.search(label) and offset == "", label
        assert ticks and not [t for t in ticks if BAD.search(t)], (label, ticks)
    fig = figure("cdf", multi, logx=True)
    FigureCanvasAgg(fig).draw()
    assert fig.axes[0].get_ylabel() == "CDF (% of values ≤ x)"
    assert "100" in [t.get_text() for t in fig.axes[0].get_yticklabels()]
    # a share column (p_d of the matched row, a fraction) is drawn in percent
    fig = figure("cdf", pair, table="flows", metric="p_d", by="vantage")
    assert fig.axes[0].get_xlabel() == "p d (%)"
    (xlabel, xticks, _), _ = _ticks(fig)
    p_d = pl.read_parquet(pair / "flows.parquet")["p_d"].drop_nulls()
    lo, hi = fig.axes[0].get_xlim()
    assert lo <= 100 * p_d.min() and 100 * p_d.max() <= hi


def test_model_axes_plain(pair):
    for label, ticks, offset in _ticks(figure("model", pair)):
        assert UNIT.search(label) and offset == ""
        assert not [t for t in ticks if BAD.search(t)], (label, ticks)
