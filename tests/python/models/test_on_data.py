"""Seed 001's comparison on the lab's data (hsrtcp.models.on_data, docs/models.md
"On the lab's data"): D against a hand computation, a planted PFTK case, P_a as printed,
and the generated region of docs/models.md against its committed data."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp import docsgen, models
from hsrtcp.models.on_data import MSS_BYTES, RTO_MIN_S, lab_ack_loss, on_data

ROOT = Path(__file__).resolve().parents[3]
PKT_BPS = 8.0 * MSS_BYTES  # bit/s of one packet per second


def _flows(rows: list[dict]) -> pl.DataFrame:
    base = {"flow_id": 0, "scenario": "lab", "flow_class": "high_0", "workload": "2MB", "p_d": 0.0, "q": None,
            "rtt_mean_s": 0.1, "timeout_duration_mean_s": None, "timeout_sequences": 0, "spurious_ackl": 0,
            "duration_s": 10.0, "throughput_mean_bps": 0.0}
    return pl.DataFrame([{**base, "flow_id": i, **r} for i, r in enumerate(rows)],
                        schema_overrides={"flow_id": pl.UInt64, "q": pl.Float64,
                                          "timeout_duration_mean_s": pl.Float64, "spurious_ackl": pl.UInt64,
                                          "timeout_sequences": pl.UInt64})


def test_d_against_a_hand_computation_on_three_flows():
    flows = _flows([
        # PFTK P1 (docs/models.md: 69.5245 packets/s at p 1 %, RTT 0.1 s, T0 1 s, b 2): a timeout
        # sequence of 1 s with q = 0 and no ACK burst loss gives T = 1 s; measured 60 packets/s
        {"p_d": 0.01, "q": 0.0, "timeout_duration_mean_s": 1.0, "timeout_sequences": 1,
         "throughput_mean_bps": 60 * PKT_BPS},
        # no timeout sequence: q = p_d, T = RTT + 0.2 s; 2 ACK-loss timeouts in 400 rounds: P_a = 0.005
        {"p_d": 0.02, "rtt_mean_s": 0.05, "duration_s": 20.0, "spurious_ackl": 2,
         "throughput_mean_bps": 30 * PKT_BPS, "flow_class": "high_9_16"},
        # no data loss and no ACK burst loss, no window limit: no model is defined
        {"p_d": 0.0, "throughput_mean_bps": 100 * PKT_BPS, "flow_class": "static"},
    ])
    f = on_data(flows, {"lab": 0.0066}).flows.sort("flow_id")
    r0, r1, r2 = f.rows(named=True)
    # flow 0: D = |69.5245 - 60| / 60 = 0.158742 (to the six digits of P1)
    assert r0["rto_first_mean"] == pytest.approx(1.0, rel=1e-12)
    assert r0["pred_pftk_full"] == pytest.approx(69.5245, abs=5e-5)
    assert r0["d_pftk_full"] == pytest.approx((69.5245 - 60) / 60, abs=1e-6)
    # flow 1: inputs and D by hand from the model functions
    assert r1["cls"] == "high_1_16" and r1["q_source"] == "p_d" and r1["t_source"] == "floor"
    assert r1["ack_burst_loss"] == pytest.approx(2 / (20.0 / 0.05), rel=1e-12)
    T = 0.05 + RTO_MIN_S
    pftk = models.pftk_full(p=0.02, rtt=0.05, t0=T, b=2, w_max=np.inf)
    enh = models.enhanced(0.02, 0.005, 0.02, 0.05, T, 2, np.inf, variant="rederived")
    assert r1["d_pftk_full"] == pytest.approx(abs(pftk - 30) / 30, rel=1e-12)
    assert r1["d_enh_rederived"] == pytest.approx(abs(enh - 30) / 30, rel=1e-12)
    assert r1["d_enh_rederived"] != pytest.approx(r1["d_pftk_full"], rel=1e-3)  # P_a and q matter
    # flow 2: nothing predicted, D null, the reason noted
    assert all(r2[f"d_{k}"] is None for k in models.MODEL_KEYS)
    assert any("p = 0" in n or "p_d = 0" in n for n in r2["notes"])


def test_planted_flows_whose_throughput_is_pftk_give_d_zero_for_pftk():
    rng = np.random.default_rng(7)
    n = 40
    p_d = rng.uniform(0.002, 0.15, n)
    rtt = rng.uniform(0.04, 0.4, n)
    dur = rng.uniform(0.3, 6.0, n)
    q = rng.uniform(0.0, 0.6, n)
    # T as on_data derives it from the sequence duration (P_a = 0: eq. 11's p is q)
    T = models.rto_from_recovery_duration(dur, q)
    tp = models.pftk_full(p=p_d, rtt=rtt, t0=T, b=2, w_max=np.inf)
    flows = _flows([{"p_d": float(p_d[i]), "q": float(q[i]), "rtt_mean_s": float(rtt[i]),
                     "timeout_duration_mean_s": float(dur[i]), "timeout_sequences": 1,
                     "throughput_mean_bps": float(tp[i] * PKT_BPS)} for i in range(n)])
    res = on_data(flows, {"lab": 0.0066})
    d = res.flows["d_pftk_full"].to_numpy()
    assert np.all(np.abs(d) < 1e-12)
    cells = res.cells().filter(pl.col("workload") == "all").row(0, named=True)
    assert cells["n_pftk_full"] == n and cells["mean_pftk_full"] < 1e-12
    # the other models are not PFTK on these inputs: their D is not 0
    assert res.flows["d_enh_rederived"].min() > 1e-6
    assert res.flows["d_pftk_approx"].max() > 1e-3


def test_p_a_as_printed_is_the_independent_fixed_point():
    # docs/models.md: p_a 0.661 %, p_d 0.7526 % give P_a = p_a^w = 4.0e-31
    flows = _flows([{"p_d": 0.007526, "throughput_mean_bps": 50 * PKT_BPS}])
    r = on_data(flows, {"lab": 0.00661}).flows.row(0, named=True)
    assert r["P_a_printed"] == pytest.approx(4.0e-31, rel=0.02)
    assert r["P_a_printed_per_ack"] > r["P_a_printed"]
    # at that P_a the re-derived prediction equals the one at P_a = 0 to 1e-12
    assert r["pred_printed"] == pytest.approx(r["pred_pa0"], rel=1e-12)


def test_lab_ack_loss_from_the_committed_scenarios():
    # scenarios/study-*.toml: loss_up 0.0066 at 300 km/h, the speed channel's 0.000718 standing
    assert lab_ack_loss(ROOT / "scenarios/study-static.toml") == pytest.approx(0.000718, rel=1e-12)
    assert lab_ack_loss(ROOT / "scenarios/study-300-handoffs.toml") == pytest.approx(0.0066, rel=1e-12)
    assert lab_ack_loss(ROOT / "scenarios/study-300-nohandoff.toml") == pytest.approx(0.0066, rel=1e-12)


def test_generated_region_of_models_md_matches_its_data():
    assert docsgen.run(ROOT, ("docs/models.md",), check=True) == []


def _copy_inputs(dst: Path) -> None:
    for rel in ("docs/models.md", "tests/data/study/study_flows.parquet", "scenarios/study-static.toml",
                "scenarios/study-300-handoffs.toml", "scenarios/study-300-nohandoff.toml"):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst / rel)


def test_check_fails_when_a_number_is_edited_or_the_data_changes(tmp_path):
    _copy_inputs(tmp_path)
    assert docsgen.run(tmp_path, ("docs/models.md",), check=True) == []
    doc = tmp_path / "docs/models.md"
    text = doc.read_text(encoding="utf-8")
    body = docsgen.regions(text)["models-on-data"]
    row = next(line for line in body.splitlines() if line.startswith("| high_1_16 | all |"))
    doc.write_text(text.replace(row, row.replace("| 120 |", "| 121 |", 1)), encoding="utf-8")
    assert docsgen.run(tmp_path, ("docs/models.md",), check=True) == ["docs/models.md: models-on-data"]
    # the document as committed, but one connection's throughput halved in the data
    doc.write_text(text, encoding="utf-8")
    p = tmp_path / "tests/data/study/study_flows.parquet"
    f = pl.read_parquet(p)
    i = int(np.flatnonzero((f["p_d"] > 0).to_numpy())[0])
    f = f.with_columns(pl.when(pl.int_range(f.height) == i).then(pl.col("throughput_mean_bps") / 2)
                       .otherwise(pl.col("throughput_mean_bps")).alias("throughput_mean_bps"))
    f.write_parquet(p)
    assert docsgen.run(tmp_path, ("docs/models.md",), check=True) == ["docs/models.md: models-on-data"]


def test_flows_without_a_scenario_are_an_input_error_not_a_traceback():
    """A study of passive results has null scenarios: the message named them with
    ', '.join(None) and raised TypeError (hsrtcp figures exited 4 on docs/figures.md's example)."""
    from hsrtcp.errors import InputError
    from hsrtcp.models.on_data import _NEEDED, model_inputs

    flows = pl.DataFrame({c: [None, None] for c in _NEEDED}).with_columns(
        pl.Series("scenario", ["lab", None], dtype=pl.String))
    with pytest.raises(InputError, match=r"scenario\(s\) null \(1 flows without a scenario\)"):
        model_inputs(flows, {"lab": 0.01})
