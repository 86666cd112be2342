"""The time–sequence graph of a known fixture shows its retransmissions where the tables put
them: each mark's position in the written SVG, mapped back to data coordinates, is a
retransmission of the events table (time since the flow's first packet, seq_start), class
by class, and there are exactly as many marks as rows (and as flows.retransmissions says)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import polars as pl
import pytest

from hsrtcp.plot import figure
from hsrtcp.plot.style import save

SVG = "{http://www.w3.org/2000/svg}"


def expected(results, flow_id: int) -> tuple[dict, pl.DataFrame]:
    row = pl.read_parquet(results / "flows.parquet").filter(pl.col("flow_id") == flow_id).row(0, named=True)
    ev = pl.read_parquet(results / "events.parquet").filter(
        (pl.col("flow_id") == flow_id) & (pl.col("kind") == "retransmission") & (pl.col("dir") == row["data_dir"]))
    return row, ev.with_columns(t=pl.col("ts") - row["first_ts"])


def svg_marks(path, gid: str) -> np.ndarray:
    """(x, y) in SVG points of the markers inside the group with id ``gid``."""
    root = ET.parse(path).getroot()
    group = next(g for g in root.iter(f"{SVG}g") if g.get("id") == gid)
    return np.array([(float(u.get("x")), float(u.get("y"))) for u in group.iter(f"{SVG}use")])


def to_svg_points(fig, ax, xy: np.ndarray) -> np.ndarray:
    """Data coordinates -> SVG user units (points, y down), as the SVG backend maps them."""
    disp = ax.transData.transform(xy) * 72.0 / fig.dpi
    height = fig.bbox.height * 72.0 / fig.dpi
    return np.column_stack([disp[:, 0], height - disp[:, 1]])


@pytest.fixture(scope="module")
def drawn(drops, tmp_path_factory):
    flows = pl.read_parquet(drops / "flows.parquet")
    fid = flows.sort("retransmissions", descending=True)["flow_id"][0]
    fig = figure("tsg", drops, fid)
    path = tmp_path_factory.mktemp("svg") / "tsg.svg"
    save(fig, path)
    return fid, fig, path


def test_every_retransmission_is_marked_at_its_time_and_sequence(drops, drawn):
    fid, fig, path = drawn
    row, ev = expected(drops, fid)
    assert ev.height == row["retransmissions"] > 5  # the fixture has retransmissions to find
    ax = fig.axes[0]
    div = {"(B)": 1, "(kB)": 1e3, "(MB)": 1e6}[re.search(r"\(\w+\)", ax.get_ylabel()).group(0)]
    classes = ev["class"].unique().to_list()
    assert len(classes) >= 2, classes  # several classes, each its own marks
    for cls in classes:
        want = ev.filter(pl.col("class") == cls).sort("ts")
        xy = np.column_stack([want["t"].to_numpy(), want["seq_start"].to_numpy() / div])
        # the artist's data ...
        coll = next(c for c in ax.collections if c.get_gid() == f"retx-{cls}")
        got = coll.get_offsets()
        np.testing.assert_allclose(np.asarray(got), xy, rtol=0, atol=1e-9)
        # ... and the picture written: the marks' positions in the SVG file
        marks = svg_marks(path, f"retx-{cls}")
        assert len(marks) == want.height
        exp = to_svg_points(fig, ax, xy)
        order = np.lexsort((marks[:, 1], marks[:, 0]))
        exp_order = np.lexsort((exp[:, 1], exp[:, 0]))
        np.testing.assert_allclose(marks[order], exp[exp_order], atol=0.05)  # 0.05 pt


def test_marks_lie_within_the_plotted_area_and_below_the_data_line(drops, drawn):
    fid, fig, _ = drawn
    ax = fig.axes[0]
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    data = next(line for line in ax.lines if line.get_gid() == "line-data")
    for coll in (c for c in ax.collections if str(c.get_gid()).startswith("retx-")):
        off = np.asarray(coll.get_offsets())
        assert ((off[:, 0] >= x0) & (off[:, 0] <= x1) & (off[:, 1] >= y0) & (off[:, 1] <= y1)).all()
        # a retransmission re-sends bytes already sent: the data line at the end of its bin is above it
        bin_end = np.minimum(np.floor(off[:, 0]) + 1, data.get_xdata()[-1])
        assert (np.interp(bin_end, data.get_xdata(), data.get_ydata()) >= off[:, 1]).all()


def test_spurious_timeout_of_the_ack_blackout_is_marked(pair):
    """ack_blackout's server flow has one spurious RTO (found by DSACK and Eifel: one episode)."""
    flows = pl.read_parquet(pair / "flows.parquet")
    fid = flows.filter(pl.col("vantage") == "server")["flow_id"][0]
    ev = pl.read_parquet(pair / "events.parquet").filter(
        (pl.col("flow_id") == fid) & (pl.col("kind") == "spurious_timeout"))
    fig = figure("tsg", pair, fid)
    coll = next(c for c in fig.axes[0].collections if c.get_gid() == "spurious")
    t0 = flows.filter(pl.col("flow_id") == fid)["first_ts"][0]
    assert sorted(np.asarray(coll.get_offsets())[:, 0]) == pytest.approx(sorted(set((ev["ts"] - t0).to_list())))
