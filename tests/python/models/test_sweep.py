"""Sweeps reproduce models.md §4.4 / §4.5 and keep undefined points as nulls with a reason."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hsrtcp import models
from hsrtcp.errors import ModelDomainError
from hsrtcp.models.sweeping import plot_sweep, sweep


def test_pa_sweep_matches_model_functions_and_reference():
    values = [0.0, 0.001, 0.01, 0.3, 0.4, 0.5]
    t = sweep("P_a", values)
    assert t.height == len(values) * len(models.MODEL_KEYS)
    for key in ("enh_as_printed", "enh_corrected", "enh_rederived"):
        sub = t.filter(pl.col("model") == key)
        assert sub["value"].to_list() == values
        for v, tp, reason in zip(values, sub["throughput_pkts"], sub["reason"]):
            try:
                exp = models.enhanced(0.007526, v, 0.2726, 0.2, 2.0, 2, 1000, variant=key.removeprefix("enh_"))
            except ModelDomainError as exc:
                assert tp is None
                assert reason is not None and reason in str(exc)
                continue
            assert tp == pytest.approx(exp, rel=1e-14)
            assert reason is None
    # reference points of models.md §4.4 (ENH-R column)
    r = t.filter(pl.col("model") == "enh_rederived")
    assert f"{r['throughput_pkts'][2]:.6g}" == "28.7718"
    assert f"{r['throughput_pkts'][3]:.6g}" == "0.348811"
    assert r["throughput_pkts"][5] is None  # E11: E[W] < 1
    # PFTK ignores P_a
    assert t.filter(pl.col("model") == "pftk_full")["throughput_pkts"].n_unique() == 1


def test_aliases_and_base_override():
    t = sweep("wm", [30, 36.16, 36.18, 40], base={"p_d": 0.001, "P_a": 0.0, "q": 0.001, "rtt": 0.1, "rto": 0.5})
    assert t["param"].unique().to_list() == ["W_m"]
    r = t.filter(pl.col("model") == "enh_corrected")["throughput_pkts"].to_list()
    assert [f"{x:.6g}" for x in r] == ["239.734", "267.092", "263.683", "263.683"]  # models.md §4.5
    lim = t.filter(pl.col("model") == "enh_corrected")["window_limited"].to_list()
    assert lim == [True, True, False, False]


def test_default_ranges_and_errors(tmp_path):
    for p in ("p_d", "P_a", "q", "rtt", "rto", "b", "wm"):
        t = sweep(p)
        assert t.height > 0
        assert t.filter(pl.col("model") == "pftk_full")["throughput_pkts"].null_count() == 0
    with pytest.raises(ModelDomainError, match="unknown sweep parameter 'mss'"):
        sweep("mss")
    with pytest.raises(ModelDomainError, match="non-empty 1-D"):
        sweep("q", [])
    png = plot_sweep(sweep("q"), tmp_path / "q.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_sweep_decreases_in_q():
    t = sweep("q", np.linspace(0, 0.79, 40))
    for key in ("enh_as_printed", "enh_corrected", "enh_rederived"):
        y = t.filter(pl.col("model") == key)["throughput_pkts"].to_numpy()
        assert np.all(np.diff(y) < 0)
