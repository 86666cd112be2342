"""The models fitted on real two-vantage analyses (issue: D from real inputs, not hard-coded).

The pairs in tests/data are real kernel TCP through the namespace testbed with random drops
and blackouts (origins in tests/data/README.md). The analyzer's matched rows give p_d, P_a,
q, RTT, T, W_m and b; `fit_flows` must predict from exactly those values, and D must be
|prediction − measurement| / measurement of each flow (seed 001 eq. 22, docs/metrics.md M35).
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from hsrtcp import models
from hsrtcp.models import fit_flows

from .pairs import analyze_pairs

PAIRS = ["data_blackout", "ack_blackout", "drops_cubic", "bbr_drops", "ack_delay", "clean_200k"]


@pytest.fixture(scope="module")
def matched() -> pl.DataFrame:
    ds = analyze_pairs(PAIRS)
    m = ds.flows.filter(pl.col("vantage") == "matched")
    assert m.height == len(PAIRS)
    return m


def test_predictions_and_d_come_from_the_flows_own_inputs(matched):
    res = fit_flows(matched).flows.join(matched, on="flow_id", suffix="_in")
    complete = res.filter(pl.col("missing_inputs").list.len() == 0)
    # the blackout runs have timeouts, so every input is measured for them
    assert complete.height >= 2
    assert complete.filter(pl.col("p_d") > 0).height >= 1  # a loss-limited one, not only W_m/RTT
    ds = []
    for r in complete.iter_rows(named=True):
        assert r["throughput_pkts"] > 0
        b = r["b_packets_per_ack"]
        pftk = models.pftk_full(p=r["p_d"], rtt=r["rtt_mean"], t0=r["rto_first_mean"], b=b,
                                w_max=r["w_m_packets"])
        enh = models.enhanced(r["p_d"], r["ack_burst_loss"], r["q"], r["rtt_mean"], r["rto_first_mean"],
                              b, r["w_m_packets"], variant="rederived")
        assert r["pred_pftk_full"] == pytest.approx(pftk, rel=1e-12)
        assert r["pred_enh_rederived"] == pytest.approx(enh, rel=1e-12)
        meas = r["throughput_pkts_in"]
        assert r["d_pftk_full"] == pytest.approx(abs(pftk - meas) / meas, rel=1e-12)
        assert r["d_enh_rederived"] == pytest.approx(abs(enh - meas) / meas, rel=1e-12)
        ds.append(r["d_pftk_full"])
    # different runs, different deviations: nothing constant slipped in
    assert len({round(d, 9) for d in ds}) == len(ds)


def test_flows_lacking_an_input_are_listed_not_predicted(matched):
    res = fit_flows(matched).flows.join(matched, on="flow_id", suffix="_in")
    lacking = res.filter(pl.col("missing_inputs").list.len() > 0)
    assert lacking.height >= 1  # clean runs have no timeout, hence no T (and no q)
    for r in lacking.iter_rows(named=True):
        for col in r["missing_inputs"]:
            value = r["throughput_pkts_in" if col == "throughput_pkts" else col]  # the flow's own
            assert value is None or math.isnan(value)
        if "rto_first_mean" in r["missing_inputs"]:
            assert r["pred_pftk_full"] is None and r["d_enh_rederived"] is None
