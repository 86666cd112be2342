"""SACK blocks on the time–sequence graph, from the events table alone (kind sack_block,
whose rows equal tshark's SACK blocks: tests/python/engine/test_engine_peers.py): one thin
segment per block at its ACK's time over its bytes, in the artist and in the SVG written;
D-SACK blocks apart; long flows merged per time bin without losing a SACKed byte."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import polars as pl
import pytest

from hsrtcp.plot import figure
from hsrtcp.plot.binning import merge_ranges
from hsrtcp.plot.style import OKABE_ITO, SACK_STYLE, save

from .test_tsg_marks import SVG, to_svg_points


def blocks(results, flow_id: int, cls: str) -> tuple[dict, pl.DataFrame]:
    row = pl.read_parquet(results / "flows.parquet").filter(pl.col("flow_id") == flow_id).row(0, named=True)
    ev = pl.read_parquet(results / "events.parquet").filter(
        (pl.col("flow_id") == flow_id) & (pl.col("kind") == "sack_block") & (pl.col("dir") == row["data_dir"])
        & (pl.col("class") == cls))
    return row, ev.with_columns(t=pl.col("ts") - row["first_ts"]).sort("ts", "count")


def segments(ax, gid: str) -> np.ndarray:
    """(t, y0, y1) of each segment of the line collection ``gid``, sorted."""
    coll = next(c for c in ax.collections if c.get_gid() == gid)
    seg = np.array([[s[0][0], s[0][1], s[1][1]] for s in coll.get_segments()])
    return seg[np.lexsort((seg[:, 2], seg[:, 1], seg[:, 0]))]


def svg_segments(path, gid: str) -> np.ndarray:
    """(x, y0, x, y1) in SVG points of the paths inside the group ``gid``."""
    root = ET.parse(path).getroot()
    group = next(g for g in root.iter(f"{SVG}g") if g.get("id") == gid)
    out = []
    for p in group.iter(f"{SVG}path"):
        nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", p.get("d"))]
        out.append(nums[:4])
    return np.array(out)


def _div(ax) -> float:
    return {"(B)": 1, "(kB)": 1e3, "(MB)": 1e6}[re.search(r"\(\w+\)", ax.get_ylabel()).group(0)]


def test_every_sack_block_is_a_segment_at_its_ack_time(sack, tmp_path):
    fid = pl.read_parquet(sack / "flows.parquet")["flow_id"][0]
    row, ev = blocks(sack, fid, "sack")
    assert ev.height == 98  # drops_cubic.server: tshark decodes 98 SACK blocks (the peer test)
    fig = figure("tsg", sack, fid)
    ax = fig.axes[0]
    div = _div(ax)
    want = np.column_stack([ev["t"].to_numpy(), ev["seq_start"].to_numpy() / div, ev["seq_end"].to_numpy() / div])
    want = want[np.lexsort((want[:, 2], want[:, 1], want[:, 0]))]
    np.testing.assert_allclose(segments(ax, "sack-sack"), want, rtol=0, atol=1e-9)
    coll = next(c for c in ax.collections if c.get_gid() == "sack-sack")
    assert tuple(coll.get_color()[0][:3]) == pytest.approx(tuple(int(SACK_STYLE["sack"][i:i + 2], 16) / 255
                                                                for i in (1, 3, 5)))
    assert SACK_STYLE["sack"] in OKABE_ITO.values() and SACK_STYLE["dsack"] in OKABE_ITO.values()
    labels = ax.get_legend_handles_labels()[1]
    assert "SACK block (98)" in labels
    # the picture written: each block's segment where the axes put its time and edges
    path = save(fig, tmp_path / "tsg.svg")
    got = svg_segments(path, "sack-sack")
    assert len(got) == ev.height
    lo = to_svg_points(fig, ax, want[:, [0, 1]])
    hi = to_svg_points(fig, ax, want[:, [0, 2]])
    exp = np.column_stack([lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]])
    key = lambda a: a[np.lexsort((a[:, 3], a[:, 1], a[:, 0]))]  # noqa: E731
    np.testing.assert_allclose(key(got), key(exp), atol=0.01)  # SVG keeps 6 decimals of a point


def test_dsack_block_is_drawn_apart(pair):
    """ack_blackout's server flow: one D-SACK (the spurious RTO's duplicate), no ordinary block."""
    flows = pl.read_parquet(pair / "flows.parquet")
    fid = flows.filter(pl.col("vantage") == "server")["flow_id"][0]
    row, ev = blocks(pair, fid, "dsack")
    assert ev.height == 1
    fig = figure("tsg", pair, fid)
    ax = fig.axes[0]
    div = _div(ax)
    np.testing.assert_allclose(segments(ax, "sack-dsack"),
                               [[ev["t"][0], ev["seq_start"][0] / div, ev["seq_end"][0] / div]], atol=1e-9)
    assert "D-SACK block (1)" in ax.get_legend_handles_labels()[1]
    assert not any(c.get_gid() == "sack-sack" for c in ax.collections)
    # D-SACK below the cumulative ACK (RFC 2883 §4.1.1): the duplicate had been acknowledged
    assert ev["seq_end"][0] <= row["acked_bytes"] + 1


def test_long_flows_merge_blocks_per_time_bin_and_keep_every_byte(sack):
    """Forced binning of the fixture's 98 blocks into 5 time bins: fewer segments, each the
    union of overlapping blocks of its bin; every block lies inside a segment of its bin, and
    every segment is covered by blocks of its bin (nothing invented)."""
    fid = pl.read_parquet(sack / "flows.parquet")["flow_id"][0]
    _row, ev = blocks(sack, fid, "sack")
    t, s0, s1 = ev["t"].to_numpy(), ev["seq_start"].to_numpy(), ev["seq_end"].to_numpy()
    bins = 5
    mt, m0, m1 = merge_ranges(t, s0, s1, max_marks=10, bins=bins)
    assert len(mt) < len(t) / 4
    width = (t.max() - t.min()) / bins
    b_of = lambda x: np.minimum(((x - t.min()) / width).astype(int), bins - 1)  # noqa: E731
    bt, bm = b_of(t), b_of(mt)
    for i in range(len(t)):
        assert ((bm == bt[i]) & (m0 <= s0[i]) & (m1 >= s1[i]) & (mt <= t[i])).sum() == 1
    for j in range(len(mt)):
        mine = (bt == bm[j]) & (s0 >= m0[j]) & (s1 <= m1[j])
        assert mt[j] == t[mine].min()
        # the blocks of the segment cover it without a hole
        order = np.argsort(s0[mine])
        reach = np.maximum.accumulate(s1[mine][order])
        assert s0[mine][order][0] == m0[j] and reach[-1] == m1[j]
        assert (s0[mine][order][1:] <= reach[:-1]).all()
    # below the threshold nothing changes
    same = merge_ranges(t, s0, s1)
    assert all(np.array_equal(a, b) for a, b in zip(same, (t, s0, s1)))
