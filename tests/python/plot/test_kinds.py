"""Every figure kind renders from analyzed fixtures to PNG, SVG and PDF through the CLI."""

from __future__ import annotations

import polars as pl
import pytest

from hsrtcp.cli import main

MAGIC = {"png": b"\x89PNG", "svg": b"<?xml", "pdf": b"%PDF"}


def server_flow(results) -> int:
    f = pl.read_parquet(results / "flows.parquet")
    return f.filter(pl.col("vantage").fill_null("server") == "server")["flow_id"][0]


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
@pytest.mark.parametrize("kind", ["tsg", "throughput", "window", "rtt"])
def test_per_flow_kinds_render(pair, tmp_path, capsys, kind, fmt):
    out = tmp_path / f"{kind}.{fmt}"
    assert main(["plot", kind, str(pair), "--flow", str(server_flow(pair)), "-o", str(out)]) == 0
    assert out.read_bytes()[:5].startswith(MAGIC[fmt])
    assert out.stat().st_size > 5_000
    assert f"wrote {out}" in capsys.readouterr().err
    assert not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_throughput_of_the_largest_flows_and_default_flow(multi, tmp_path, fmt):
    assert main(["plot", "throughput", str(multi), "-o", str(tmp_path / f"t.{fmt}")]) == 0
    assert main(["plot", "tsg", str(multi), "-o", str(tmp_path / f"s.{fmt}")]) == 0  # default flow


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_cdf_and_model_render(pair, multi, tmp_path, fmt):
    assert main(["plot", "cdf", str(multi), "-o", str(tmp_path / f"c.{fmt}")]) == 0
    assert main(["plot", "cdf", str(pair), "--table", "flows", "--metric", "rtt_mean", "--by", "vantage",
                 "-o", str(tmp_path / f"c2.{fmt}")]) == 0
    assert main(["plot", "model", str(pair), "-o", str(tmp_path / f"m.{fmt}")]) == 0


def test_svg_is_vector_with_text_as_text(pair, tmp_path):
    out = tmp_path / "t.svg"
    assert main(["plot", "tsg", str(pair), "--flow", str(server_flow(pair)), "-o", str(out)]) == 0
    svg = out.read_text()
    assert "<image" not in svg  # nothing rasterised
    assert "relative sequence number" in svg and "time since the flow" in svg  # units on the axes


def test_throughput_figure_draws_the_series(multi):
    """The witness is the table: the step line's values are series.bytes × 8 per bin, over
    the bin's real length (series.bin_s: the last bin ends at the last packet, M3)."""
    from hsrtcp.plot import figure

    flows = pl.read_parquet(multi / "flows.parquet").sort("flow_id")
    fid = flows["flow_id"][0]
    fig = figure("throughput", multi, fid)
    line = next(a for a in fig.axes[0].lines if a.get_gid() == "throughput")
    s = pl.read_parquet(multi / "series.parquet").filter(pl.col("flow_id") == fid).sort("bin")
    bps = (s["bytes"] * 8 / s["bin_s"].fill_null(1.0)).to_list()
    assert s["bin_s"].drop_nulls()[:-1].to_list() == [1.0] * (s["bin_s"].drop_nulls().len() - 1)
    unit = fig.axes[0].get_ylabel()
    div = {"(bit/s": 1, "(kbit/s": 1e3, "(Mbit/s": 1e6, "(Gbit/s": 1e9}[unit.split(" ", 1)[1].split(",")[0]]
    assert [v * div for v in line.get_ydata()[:-1]] == pytest.approx(bps, rel=1e-9)


def test_throughput_from_frames_in_memory_is_the_file_figure(multi, tmp_path):
    """plot_throughput(flows, series, path) (the run's staging path) draws what the
    directory's tables give."""
    from hsrtcp.plot import figure
    from hsrtcp.plot.throughput import plot_throughput

    flows, series = pl.read_parquet(multi / "flows.parquet"), pl.read_parquet(multi / "series.parquet")
    assert plot_throughput(flows, series, tmp_path / "t.svg") == str(tmp_path / "t.svg")
    lines = [ln for ln in figure("throughput", multi).axes[0].lines if str(ln.get_gid()).startswith("flow-")]
    svg = (tmp_path / "t.svg").read_text()
    assert len(lines) == 3 and all(f'id="{ln.get_gid()}"' in svg for ln in lines)
    assert plot_throughput(flows.clear(), series, tmp_path / "none.png") is None
