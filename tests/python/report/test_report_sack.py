"""The report's SACK series for a chart narrower than its blocks: the ordinary blocks are
merged per pixel column (every block still covered, a note says so), the legend keeps the
number of blocks (events rows). The browser tests check the unmerged drawing."""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.report.flow_detail import flow_charts


def test_narrow_chart_merges_sack_blocks_per_pixel_column(drops):
    flow = pl.read_parquet(drops / "flows.parquet").row(0, named=True)
    ev = pl.read_parquet(drops / "events.parquet").filter(pl.col("flow_id") == flow["flow_id"])
    blocks = ev.filter(pl.col("kind") == "sack_block")
    assert blocks.height == 98
    wide = flow_charts(flow, None, ev, None, np.array([]), None, 1200)["charts"][0]
    assert len(wide["sacks"]) == 98 and wide["sack_counts"] == {"sack": 98}
    d = flow_charts(flow, None, ev, None, np.array([]), None, 10)
    tseq = d["charts"][0]
    assert tseq["sack_counts"] == {"sack": 98}
    assert 0 < len(tseq["sacks"]) < 40  # at most 4 per pixel column
    assert any("segments drawn for 98 blocks" in n for n in d["notes"])
    t = blocks["ts"].to_numpy() - flow["first_ts"]
    m = tseq["sacks"]
    for ti, a, b in zip(t, blocks["seq_start"], blocks["seq_end"]):
        # covered by a merged segment at or before its time
        assert any(s["s0"] <= a and s["s1"] >= b and s["t"] <= round(ti, 6) + 1e-9 for s in m)
