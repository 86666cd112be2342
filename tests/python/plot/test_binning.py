"""A long flow is drawn by binning, never with a marker per sample, and keeps every
retransmission mark. The flow is synthetic (written here with polars in the tables' schema,
docs/formats/): one million RTT samples over 2 hours, 7,200 series bins, and 3,000
retransmissions of four classes at random times."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hsrtcp.plot import figure, plot
from hsrtcp.plot.binning import BINS, cloud_bins, envelope_line

T0 = 1.7e9
DURATION = 7200.0
N_RTT = 1_000_000
N_RETX = 3000
CLASSES = ["fast", "sack_refill", "rto", "tlp"]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    rng = np.random.default_rng(18)
    d = tmp_path_factory.mktemp("big")
    rate = 1_250_000  # bytes/s
    pl.DataFrame({"flow_id": [7], "vantage": ["server"], "data_dir": ["s2c"], "first_ts": [T0],
                  "last_ts": [T0 + DURATION], "duration_s": [DURATION], "c2s_payload_bytes": [0],
                  "s2c_payload_bytes": [rate * int(DURATION)], "data_vantage": ["sender"],
                  "retransmissions": [N_RETX]},
                 schema_overrides={c: pl.UInt64 for c in ("flow_id", "c2s_payload_bytes", "s2c_payload_bytes",
                                                          "retransmissions")}).write_parquet(d / "flows.parquet")
    bins = np.arange(int(DURATION))
    pl.DataFrame({"flow_id": np.full(len(bins), 7, dtype=np.uint64), "bin": bins.astype(np.uint64),
                  "t_rel": bins.astype(float), "bytes": np.full(len(bins), rate, dtype=np.uint64),
                  "goodput_bytes": np.full(len(bins), rate - 1000, dtype=np.uint64),
                  "awnd_min": np.full(len(bins), 3_000_000, dtype=np.uint64),
                  "awnd_mean": np.full(len(bins), 3_100_000.0), "bif_max": rng.integers(1e5, 2e6, len(bins)).astype(np.uint64),
                  "bif_mean": rng.uniform(1e5, 1e6, len(bins))}).write_parquet(d / "series.parquet")
    t = np.sort(rng.uniform(0, DURATION, N_RETX))
    seq = (t * rate * 0.99).astype(np.int64)
    pl.DataFrame({"flow_id": np.full(N_RETX, 7, dtype=np.uint64), "kind": "retransmission",
                  "class": rng.choice(CLASSES, N_RETX), "ts": T0 + t, "ts_end": None, "dir": "s2c",
                  "seq_start": seq, "seq_end": seq + 1448}).write_parquet(d / "events.parquet")
    ts = np.sort(rng.uniform(0, DURATION, N_RTT))
    pl.DataFrame({"flow_id": np.full(N_RTT, 7, dtype=np.uint64), "ts": T0 + ts, "dir": "s2c", "method": "ack",
                  "rtt_s": 0.05 + rng.exponential(0.02, N_RTT)}).write_parquet(d / "rtt.parquet")
    return d


def test_time_sequence_graph_bins_lines_and_keeps_every_retransmission(big, tmp_path):
    fig = figure("tsg", big, 7)
    ax = fig.axes[0]
    ev = pl.read_parquet(big / "events.parquet")
    for line in ax.lines:
        assert len(line.get_xdata()) <= 2 * BINS + 2, line.get_gid()
    for cls in CLASSES:
        coll = next(c for c in ax.collections if c.get_gid() == f"retx-{cls}")
        want = ev.filter(pl.col("class") == cls)
        assert len(coll.get_offsets()) == want.height
        np.testing.assert_allclose(np.sort(np.asarray(coll.get_offsets())[:, 0]), np.sort(want["ts"] - T0))
    assert sum(len(c.get_offsets()) for c in ax.collections if str(c.get_gid()).startswith("retx-")) == N_RETX
    out = plot("tsg", big, tmp_path / "big.svg", 7)
    assert (tmp_path / "big.svg").stat().st_size < 5_000_000, out


def test_rtt_of_a_million_samples_is_a_binned_band(big, tmp_path):
    fig = figure("rtt", big, 7)
    ax = fig.axes[0]
    (median,) = [line for line in ax.lines if line.get_gid() == "rtt-ack"]
    assert len(median.get_xdata()) <= BINS
    assert "1,000,000 samples" in median.get_label()
    # every retransmission still marked (ticks along the top)
    ticks = sum(len(line.get_xdata()) for line in ax.lines if str(line.get_gid()).startswith("retx-"))
    assert ticks == N_RETX
    plot("rtt", big, tmp_path / "rtt.pdf", 7)
    assert (tmp_path / "rtt.pdf").stat().st_size < 1_000_000


def test_window_figure_keeps_every_retransmission_tick(big):
    fig = figure("window", big, 7)
    ticks = sum(len(line.get_xdata()) for line in fig.axes[0].lines if str(line.get_gid()).startswith("retx-"))
    assert ticks == N_RETX


def test_envelope_keeps_each_bins_extremes_and_the_ends():
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 100, 200_000))
    y = np.cumsum(rng.normal(size=x.size))
    ex, ey = envelope_line(x, y)
    assert len(ex) <= 2 * BINS and np.all(np.diff(ex) >= 0)
    assert ey.max() == y.max() and ey.min() == y.min()
    assert ex[0] == x[0] or ey[0] in (y[x <= x[0] + 100 / BINS].min(), y[x <= x[0] + 100 / BINS].max())
    # each bin's min and max survive
    idx = np.minimum(((x - x.min()) / ((x.max() - x.min()) / BINS)).astype(int), BINS - 1)
    eidx = np.minimum(((ex - x.min()) / ((x.max() - x.min()) / BINS)).astype(int), BINS - 1)
    for b in rng.choice(BINS, 50, replace=False):
        assert ey[eidx == b].max() == y[idx == b].max() and ey[eidx == b].min() == y[idx == b].min()
    short_x, short_y = envelope_line(x[:100], y[:100])
    assert np.array_equal(short_x, x[:100])


def test_cloud_bins_statistics():
    x = np.repeat(np.arange(10.0), 5)
    y = np.tile(np.array([5.0, 1.0, 3.0, 2.0, 4.0]), 10)
    c, lo, med, hi, n = cloud_bins(x, y, bins=10)
    assert list(n) == [5] * 10 and list(lo) == [1.0] * 10 and list(hi) == [5.0] * 10 and list(med) == [3.0] * 10


def test_lines_are_flat_through_silences_and_keep_the_bin_ends():
    from hsrtcp.plot.tsg import merge, through_silences

    t = np.array([0.0, 1.0, 2.0])
    y = np.array([0.0, 100.0, 300.0])
    sil = merge([(0.5, 0.75), (0.6, 0.8), (1.5, 3.0)])
    assert sil.tolist() == [[0.5, 0.8], [1.5, 3.0]]
    x, yy = through_silences(t, y, sil)
    got = dict(zip(x.tolist(), yy.tolist()))
    assert got[0.0] == 0.0 and got[1.0] == 100.0 and got[2.0] == 300.0  # the measured points
    # first bin: 0.7 s of activity; at 0.5 s 5/7 of its bytes, then flat until 0.8 s
    assert got[0.5] == pytest.approx(100 * 0.5 / 0.7) and got[0.8] == pytest.approx(got[0.5])
    # second bin: silent from 1.5 s to its end: all its bytes before the silence
    assert got[1.5] == pytest.approx(300.0)


def test_lines_respect_what_retransmissions_prove():
    from hsrtcp.plot.tsg import within_retransmission_bounds

    x = np.array([0.0, 1.0])
    y = np.array([0.0, 1000.0])
    retx = pl.DataFrame({"t": [0.2, 0.5], "seq_start": [400, 100], "seq_end": [500, 200]})
    xs, data = within_retransmission_bounds(x, y, retx, 1.0, upper=False)
    assert xs.tolist() == [0.0, 0.2, 0.5, 1.0]
    assert data.tolist() == [0.0, 500.0, 500.0, 1000.0]  # sent at least up to 500 by 0.2 s
    xs, ack = within_retransmission_bounds(x, y, retx, 1.0, upper=True)
    assert ack.tolist() == [0.0, 100.0, 100.0, 1000.0]  # 100 still unacknowledged at 0.5 s
    assert np.all(np.diff(data) >= 0) and np.all(np.diff(ack) >= 0)


def test_time_window_zooms_with_y_fitted(big):
    fig = figure("tsg", big, 7, start=100.0, end=110.0)
    ax = fig.axes[0]
    assert ax.get_xlim() == (100.0, 110.0)
    lo, hi = ax.get_ylim()
    assert "(GB)" in ax.get_ylabel()
    # the lines over 100..110 s span about 12.5 MB of the flow's 9 GB: the y axis fits them
    assert 0.0125 <= hi - lo < 0.05
    assert lo <= 0.125 and hi >= 0.1375
    with pytest.raises(ValueError):
        figure("cdf", big, start=1.0)
