"""Issue 31: the time–sequence graph from the packets table, witnessed by tshark on the same
capture. Each data segment is a tick from seq to seq+len at its time (read back from the SVG
with the axes' own tick labels), the ACK line is a step per ACK (flat across a blackout where
no ACK came), long views are per-pixel envelopes covering every segment, and a figure drawn
from 1-s bins never says it shows segments."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.python.plot.conftest import DATA, analyze

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

SVG = "{http://www.w3.org/2000/svg}"
SERVER_PORT = "5201"


def tshark(capture: Path, fields: list[str], filt: str) -> np.ndarray:
    out = subprocess.run(["tshark", "-r", str(capture), "-Y", filt, "-T", "fields",
                          *[a for f in fields for a in ("-e", f)]],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return np.array([[float(v) for v in line.split("\t")] for line in out.splitlines() if line], dtype=float)


def data_segments(capture: Path) -> np.ndarray:
    """(time since the first frame, relative seq, len) of the server's data segments."""
    return tshark(capture, ["frame.time_relative", "tcp.seq", "tcp.len"],
                  f"tcp.srcport == {SERVER_PORT} && tcp.len > 0")


@pytest.fixture(scope="module")
def reno(tmp_path_factory) -> Path:
    """reno_nosack_nots, server side, with the packets table: fast and RTO re-sends."""
    return analyze(tmp_path_factory.mktemp("reno") / "reno", str(DATA / "reno_nosack_nots.server.pcap"), "--packets")


def _plot(results: Path, out: Path, *args: str) -> ET.Element:
    from hsrtcp.cli import main

    assert main(["plot", "tsg", str(results), "-o", str(out), *args]) == 0
    return ET.parse(out).getroot()


def _axis(root: ET.Element, axis: str) -> tuple[float, float]:
    """(scale, offset) from SVG coordinate to axis value, fitted on the tick marks and their labels."""
    pos, val = [], []
    for g in root.iter(f"{SVG}g"):
        if not re.fullmatch(f"{axis}tick_\\d+", g.get("id", "")):
            continue
        use = next(g.iter(f"{SVG}use"))
        pos.append(float(use.get("x" if axis == "x" else "y")))
        val.append(float("".join(next(g.iter(f"{SVG}text")).itertext()).replace("−", "-")))
    assert len(pos) >= 2
    a, b = np.polyfit(pos, val, 1)
    return a, b


def _unit(root: ET.Element) -> float:
    """Bytes per unit of the y axis, from its label ("relative sequence number (kB)")."""
    label = next("".join(t.itertext()) for t in root.iter(f"{SVG}text") if "relative sequence" in "".join(t.itertext()))
    return {"(B)": 1.0, "(kB)": 1e3, "(MB)": 1e6, "(GB)": 1e9}[label[label.rindex("("):]]


def _paths(root: ET.Element, gid: str) -> list[np.ndarray]:
    group = next((g for g in root.iter(f"{SVG}g") if g.get("id") == gid), None)
    assert group is not None, f"no group {gid} in the SVG"
    return [np.array([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", p.get("d"))]).reshape(-1, 2)
            for p in group.iter(f"{SVG}path")]


def test_every_segment_is_a_tick_at_its_seq_and_time_as_tshark_reads_it(reno, tmp_path):
    capture = DATA / "reno_nosack_nots.server.pcap"
    want = data_segments(capture)  # the capture starts with the flow's SYN: same time origin
    root = _plot(reno, tmp_path / "tsg.svg")
    ax, bx = _axis(root, "x")
    ay, by = _axis(root, "y")
    unit = _unit(root)
    ticks = []
    for gid in ("seg-data", "seg-retx-fast", "seg-retx-rto", "seg-retx-unclassified", "seg-retx-tlp",
                "seg-retx-sack_refill"):
        if gid != "seg-data" and not any(g.get("id") == gid for g in root.iter(f"{SVG}g")):
            continue
        for p in _paths(root, gid):
            assert len(p) == 2 and p[0, 0] == p[1, 0], "a tick is vertical"
            ticks.append((ax * p[0, 0] + bx, (ay * p[0, 1] + by) * unit, (ay * p[1, 1] + by) * unit))
    got = np.array(sorted(ticks))
    assert len(got) == len(want), "one tick per data segment"
    want = np.array(sorted((t, s, s + n) for t, s, n in want))
    tol_t = abs(ax) * 0.02 + 1e-6  # SVG coordinates are written to 0.01 pt
    tol_s = abs(ay) * unit * 0.02 + 1.0
    assert np.abs(got[:, 0] - want[:, 0]).max() <= tol_t
    low, high = np.minimum(got[:, 1], got[:, 2]), np.maximum(got[:, 1], got[:, 2])
    assert np.abs(low - want[:, 1]).max() <= tol_s
    assert np.abs(high - want[:, 2]).max() <= tol_s


def test_the_figure_holds_the_exact_numbers_and_re_sends_by_class(reno):
    import polars as pl

    from hsrtcp.plot import figure

    capture = DATA / "reno_nosack_nots.server.pcap"
    want = data_segments(capture)
    fig = figure("tsg", reno)
    colls = {c.get_gid(): c for c in fig.axes[0].collections if str(c.get_gid()).startswith("seg-")}
    segs = np.concatenate([np.array(c.get_segments()) for c in colls.values()])
    div = 1e3 if "kB" in fig.axes[0].get_ylabel() else 1.0
    got = np.array(sorted((s[0, 0], s[0, 1] * div, s[1, 1] * div) for s in segs))
    exp = np.array(sorted((t, s, s + n) for t, s, n in want))
    assert got.shape == exp.shape
    assert np.allclose(got, exp, rtol=0, atol=1e-6)
    # the re-sent ticks are the packets table's re-sends, class by class, as many as flows counts
    flows = pl.read_parquet(reno / "flows.parquet")
    packets = pl.read_parquet(reno / "packets.parquet").filter(pl.col("retrans").is_not_null())
    for cls, n in packets.group_by("retrans").len().iter_rows():
        assert len(colls[f"seg-retx-{cls}"].get_segments()) == n
    assert sum(len(c.get_segments()) for g, c in colls.items() if g.startswith("seg-retx-")) == \
        flows["retransmissions"].sum()


@pytest.mark.parametrize("name", ["data_blackout", "ack_blackout"])
def test_ack_line_is_flat_across_the_blackout(name, tmp_path):
    capture = DATA / f"{name}.server.pcap"
    res = analyze(tmp_path / "r", str(capture), "--packets")
    acks = tshark(capture, ["frame.time_relative", "tcp.ack"], f"tcp.dstport == {SERVER_PORT} && tcp.flags.ack == 1")
    gaps = np.diff(acks[:, 0])
    i = int(np.argmax(gaps))
    start, end = acks[i, 0], acks[i + 1, 0]
    assert end - start > 0.3  # the fixture's blackout: no ACK for a third of a second or more
    root = _plot(res, tmp_path / "tsg.svg")
    ax, bx = _axis(root, "x")
    ay, by = _axis(root, "y")
    (line,) = _paths(root, "seg-line-ack")
    x, y = ax * line[:, 0] + bx, line[:, 1]
    # every piece of the drawn polyline over the blackout (less the 0.01-pt rounding) is level
    d = abs(ax) * 0.05
    over = (np.maximum(x[:-1], x[1:]) > start + d) & (np.minimum(x[:-1], x[1:]) < end - d)
    assert over.any() and x.min() <= start + d and x.max() >= end - d
    level = np.r_[y[:-1][over], y[1:][over]]
    assert np.ptp(level) < 0.02, "the ACK line moves while no ACK arrives"
    unit = _unit(root)
    assert (ay * level[0] + by) * unit == pytest.approx(acks[i, 1], abs=abs(ay) * unit * 0.02 + 1)


def test_a_figure_from_bins_says_so_and_never_claims_segments(tmp_path):
    from hsrtcp.plot import figure
    from hsrtcp.plot.tsg import BINS_NOTE

    capture = str(DATA / "data_blackout.server.pcap")
    bins = figure("tsg", analyze(tmp_path / "bins", capture))
    segs = figure("tsg", analyze(tmp_path / "segs", capture, "--packets"))

    def labels(fig):
        ax = fig.axes[0]
        return [a.get_label() for a in [*ax.lines, *ax.collections] if not a.get_label().startswith("_")]

    def notes(fig):
        return [t.get_text() for t in fig.axes[0].texts]

    lines = [ln.get_label() for ln in bins.axes[0].lines if str(ln.get_gid()).startswith("line-")]
    assert lines and all("per 1-s bin" in lb for lb in lines), lines
    assert not any("segment" in lb.lower() for lb in labels(bins))
    assert not any(str(c.get_gid()).startswith("seg-") for c in [*bins.axes[0].lines, *bins.axes[0].collections])
    assert BINS_NOTE in notes(bins)
    # and the one from packets says per ACK / per segment, without the note
    assert any(lb.startswith("data segment") for lb in labels(segs))
    assert not any("1-s bin" in lb for lb in labels(segs)) and BINS_NOTE not in notes(segs)


def test_the_window_figure_from_bins_holds_each_bin_and_says_so(tmp_path):
    """`plot window` without a packets table drew each bin's value at the bin's middle with a
    line to the next: across the blackout its advertised window rose from 60 kB to 267 kB
    where no ACK came, and no note said how to get every ACK. Now each bin's value is held
    over the bin (a step changing only at bin starts) with the bins' note."""
    import polars as pl

    from hsrtcp.plot import figure
    from hsrtcp.plot.tsg import BINS_NOTE

    res = analyze(tmp_path / "bins", str(DATA / "data_blackout.server.pcap"))
    fig = figure("window", res)
    starts = pl.read_parquet(res / "series.parquet").sort("bin")["t_rel"].to_numpy()
    lines = [ln for ln in fig.axes[0].lines if str(ln.get_gid()).startswith("line-")]
    assert lines
    for ln in lines:
        assert ln.get_drawstyle() == "steps-post", (ln.get_gid(), ln.get_drawstyle())
        x = np.asarray(ln.get_xdata(), dtype=float)
        assert np.isin(x[:-1], starts).all(), (ln.get_gid(), x)  # values change at bin starts only
        assert "per ACK" not in ln.get_label() and "segment" not in ln.get_label()
    assert BINS_NOTE in [t.get_text() for t in fig.axes[0].texts]


def test_long_views_are_per_pixel_envelopes_covering_every_segment(reno, monkeypatch):
    from hsrtcp.plot import figure, tsg

    want = data_segments(DATA / "reno_nosack_nots.server.pcap")
    monkeypatch.setattr(tsg, "SEGMENTS_MAX", 50)  # the fixture's 500-odd segments count as many
    fig = figure("tsg", reno)
    colls = {c.get_gid(): c for c in fig.axes[0].collections if str(c.get_gid()).startswith("seg-")}
    assert set(colls) == {"seg-envelope"}
    bars = np.array(colls["seg-envelope"].get_segments())
    div = 1e3 if "kB" in fig.axes[0].get_ylabel() else 1.0
    assert len(bars) <= tsg.PIXELS
    # every segment lies inside a bar at most one pixel column before it (a column is 1/PIXELS
    # of the flow's time span); the bars reach no further than the segments do
    column = 1.01 * max(want[:, 0].max(), 1e-9) / tsg.PIXELS + 1e-5
    xs, low, high = bars[:, 0, 0], bars[:, 0, 1] * div, bars[:, 1, 1] * div
    for t, s, n in want:
        near = (xs <= t + 1e-5) & (xs >= t - column)
        assert ((low[near] <= s + 1e-6) & (high[near] >= s + n - 1e-6)).any(), (t, s, n)
    assert low.min() == pytest.approx(want[:, 1].min())
    assert high.max() == pytest.approx((want[:, 1] + want[:, 2]).max())
    # zoomed to a window holding few segments: exact ticks again
    t = np.sort(want[:, 0])
    i = next(i for i in range(len(t) - 40) if t[i + 40] - t[i] > 1e-3)  # 40 segments over 1 ms or more
    zoomed = figure("tsg", reno, start=float(t[i]) + 1e-7, end=float(t[i + 40]) - 1e-7)
    gids = {c.get_gid() for c in zoomed.axes[0].collections}
    assert "seg-data" in gids and "seg-envelope" not in gids


def test_window_figure_draws_owin_per_ack_as_tshark_fields_give_it(tmp_path):
    """owin at each ACK = the highest seq+len the server sent in frames before it minus the
    ACK number (tcptrace's outstanding data), computed here from tshark's fields."""
    from hsrtcp.plot import figure

    capture = DATA / "ack_blackout.server.pcap"
    rows = tshark(capture, ["frame.time_relative", "tcp.srcport", "tcp.seq", "tcp.len", "tcp.ack", "tcp.flags.ack"],
                  "tcp")
    high, want = np.nan, []
    for t, port, seq, n, ack, has_ack in rows:
        if int(port) == int(SERVER_PORT):
            if n > 0:
                high = seq + n if np.isnan(high) else max(high, seq + n)
        elif has_ack and not np.isnan(high):
            want.append((t, max(high - ack, 0.0)))
    want = np.array(want)
    fig = figure("window", analyze(tmp_path / "r", str(capture), "--packets"))
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "seg-line-owin"]
    div = 1e3 if "kB" in fig.axes[0].get_ylabel() else 1.0
    x, y = line.get_xdata(), line.get_ydata() * div
    # explicit steps: the even vertices are (time, owin) of each ACK in capture order
    x, y = x[0::2][:len(want)], y[0::2][:len(want)]
    assert len(line.get_xdata()) in (2 * len(want) - 1, 2 * len(want))
    assert np.allclose(x, want[:, 0], atol=2e-6) and np.allclose(y, want[:, 1], atol=1e-6)
    assert want[:, 1].max() > 10_000  # the fixture keeps tens of kB outstanding
    assert "per ACK" in fig.axes[0].get_ylabel()
