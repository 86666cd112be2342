"""`model fit` at scale (issue 32): the models run on slices of FIT_CHUNK flows and notes are
kept sparse; the result must be the one of a single pass, flow for flow, whatever the slice
size and wherever a slice ends. Inputs: the real two-vantage analyses of tests/data (every
row of the analyzer's flows table, client, server and matched, with the schema it writes),
tiled with fresh flow ids, plus the hand-made edge rows of test_fit.py."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hsrtcp.models import fitting
from hsrtcp.models.evaluate import evaluate_all

from .pairs import analyze_pairs
from .test_fit import flows as edge_flows

PAIRS = ["data_blackout", "ack_blackout", "drops_cubic", "bbr_drops", "ack_delay", "reno_nosack_nots"]


@pytest.fixture(scope="module")
def analyzed() -> pl.DataFrame:
    ds = analyze_pairs(PAIRS)
    return ds.flows


def _tiled(f: pl.DataFrame, n: int) -> pl.DataFrame:
    """``n`` rows of ``f`` in turn, flow ids 0 … n−1, the losses scaled a little per copy so
    that copies differ."""
    out = f[np.arange(n) % f.height].with_columns(pl.Series("flow_id", np.arange(n, dtype=np.uint64)))
    scale = pl.Series(1.0 + (np.arange(n) // f.height) * 0.01)
    return out.with_columns(pl.col("p_d") * scale, pl.col("throughput_pkts") / scale)


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_slices_give_the_single_pass_result(analyzed, monkeypatch, chunk):
    df = _tiled(analyzed, 150)
    assert df.filter(pl.col("p_d").is_not_null()).height > 0  # the matched rows carry the inputs
    monkeypatch.setattr(fitting, "FIT_CHUNK", 1 << 30)
    whole = fitting.fit_flows(df, group_by="vantage")
    monkeypatch.setattr(fitting, "FIT_CHUNK", chunk)
    sliced = fitting.fit_flows(df, group_by="vantage")
    assert_frame_equal(sliced.flows, whole.flows)
    assert_frame_equal(sliced.summary, whole.summary)
    # the client/server rows lack p_d: their missing inputs are listed, the flows are kept
    assert whole.flows.filter(pl.col("vantage") != "matched")["missing_inputs"].list.contains("p_d").all()


@pytest.mark.parametrize("chunk", [1, 2, 4])
@pytest.mark.parametrize("kw", [{}, {"allow_any_b": True, "pa_fallback": True}])
def test_notes_per_flow_as_in_one_pass(monkeypatch, chunk, kw):
    """The edge rows (b null, P_a from p_a, E[W] < 1, b = 1, measurement 0) keep their notes
    and their order within a flow when slices are smaller than the table."""
    monkeypatch.setattr(fitting, "FIT_CHUNK", 1 << 30)
    whole = fitting.fit_flows(edge_flows(), group_by="class", **kw).flows
    monkeypatch.setattr(fitting, "FIT_CHUNK", chunk)
    sliced = fitting.fit_flows(edge_flows(), group_by="class", **kw).flows
    assert_frame_equal(sliced, whole)
    assert sliced["notes"].list.len().sum() >= 5


def test_reasons_at_are_the_reasons():
    """The messages formatted only for the flows the fit writes are the messages of all."""
    rng = np.random.default_rng(3)
    n = 400
    p_d = rng.uniform(-0.1, 0.6, n)
    pa = rng.uniform(-0.1, 1.1, n)
    q = rng.uniform(0, 1.2, n)
    rtt = rng.uniform(-0.05, 0.4, n)
    out = evaluate_all(p_d, pa, q, rtt, rng.uniform(0.1, 3, n), rng.choice([1.0, 2.0], n), 64.0)
    at = np.flatnonzero(rng.random(n) < 0.5)
    for res in out.values():
        assert res.reasons_at(at) == list(res.reasons[at])
        assert any(r is not None for r in res.reasons_at(at))


def test_figure_samples_the_scatter_beyond_plot_points(tmp_path, monkeypatch, analyzed):
    """Over PLOT_POINTS flows the figure is still written (a sample in the scatter, every flow
    in the box plots)."""
    monkeypatch.setattr(fitting, "PLOT_POINTS", 40)
    res = fitting.fit_flows(_tiled(analyzed, 300), group_by="vantage")
    path = res.figure(tmp_path / "fit.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_progress_as_plain_lines_when_not_on_a_terminal(tmp_path, monkeypatch):
    """A fit of more than one slice says how far it is on standard error, as plain lines when
    that is not a terminal (a log), and writes the same tables."""
    from click.testing import CliRunner

    from hsrtcp.cli.model import model

    df = edge_flows().with_columns(pl.col("flow_id").cast(pl.UInt64))
    df.write_parquet(tmp_path / "flows.parquet")
    monkeypatch.setattr(fitting, "FIT_CHUNK", 4)
    r = CliRunner().invoke(model, ["fit", str(tmp_path / "flows.parquet"), "-o", str(tmp_path / "m")],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    lines = [x for x in r.stderr.splitlines() if x.startswith("model fit: ")]
    assert [x.split(" flows")[0] for x in lines] == ["model fit: 4/9", "model fit: 8/9", "model fit: 9/9"]
    assert lines[-1].startswith("model fit: 9/9 flows through the models (100 %), ")
    got = pl.read_parquet(tmp_path / "m" / "model_fit_flows.parquet")
    assert_frame_equal(got, fitting.fit_flows(df).flows)
