"""fit_flows on flows tables built here; expected predictions and D recomputed independently
from the scalar model functions and eq. (22)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from hsrtcp import models
from hsrtcp.errors import InputError, ModelDomainError
from hsrtcp.models.fitting import fit_flows

COLS = ["flow_id", "class", "p_d", "p_a", "ack_burst_loss", "q", "rtt_mean", "rto_first_mean", "w_m_packets",
        "b_packets_per_ack", "throughput_pkts"]
ROWS = [
    # flow_id, class, p_d, p_a, P_a, q, rtt, T, W_m, b, measured
    (1, "hsr", 0.007526, 0.0066, 0.001, 0.2726, 0.2, 2.0, 1000, 2.0, 30.0),
    (2, "hsr", 0.02, 0.01, 0.05, 0.35, 0.3, 3.0, 1000, None, 3.5),     # b null → 2
    (3, "hsr", 0.001, None, 0.001, None, 0.08, 1.0, 30, 2.0, 250.0),    # q missing
    (4, "stationary", 0.001, 0.0007, None, 0.25, 0.05, 0.65, 64, 2.0, 480.0),  # P_a missing, p_a known
    (5, "hsr", 0.007526, 0.2, 0.5, 0.3, 0.2, 2.0, 1000, 2.0, 10.0),   # E[W] < 1 in every variant
    (6, "stationary", 0.001, 0.0, 0.0, 0.001, 0.1, 0.5, 20, 2.0, None),  # no measurement
    (7, "stationary", 0.001, 0.0, 0.0, 0.001, 0.1, 0.5, 30, 1.0, 255.0),  # b = 1: as_printed undefined
    (8, "hsr", 0.01, 0.0, 0.0, 0.01, 0.1, 1.0, 1000, 2.0, 0.0),         # measured 0: D undefined
    (9, None, 0.0, 0.0, 0.0, 0.0, 0.1, 1.0, 40, 2.0, 380.0),            # no loss at all: W_m/RTT
]
KEYS = models.MODEL_KEYS


def flows() -> pl.DataFrame:
    return pl.DataFrame(ROWS, schema=COLS, orient="row")


def expected_prediction(row, key, *, allow_any_b=False, pa_override=None):
    _, _, p_d, _, pa, q, rtt, T, wm, b, _ = row
    b = 2.0 if b is None else b
    pa = pa if pa_override is None else pa_override
    try:
        if key == "pftk_full":
            return models.pftk_full(p_d, rtt, T, b, wm)
        if key == "pftk_approx":
            return models.pftk_approx(p_d, rtt, T, b, wm)
        if pa is None or q is None:
            return None
        return models.enhanced(p_d, pa, q, rtt, T, b, wm, variant=key.removeprefix("enh_"), allow_any_b=allow_any_b)
    except ModelDomainError:
        return None


def test_per_flow_predictions_and_deviation():
    res = fit_flows(flows(), group_by="class")
    out = res.flows
    assert out.height == len(ROWS)
    assert out.get_column("flow_id").to_list() == [r[0] for r in ROWS]
    for i, row in enumerate(ROWS):
        measured = row[-1]
        assert out["throughput_pkts"][i] == measured
        for key in KEYS:
            exp = expected_prediction(row, key)
            got = out[f"pred_{key}"][i]
            if exp is None:
                assert got is None, (row[0], key)
                assert out[f"d_{key}"][i] is None
                continue
            assert got == pytest.approx(exp, rel=1e-12), (row[0], key)
            d = out[f"d_{key}"][i]
            if measured is None or measured <= 0:
                assert d is None
            else:
                assert d == pytest.approx(abs(exp - measured) / measured, rel=1e-12)


def test_missing_inputs_and_notes():
    out = fit_flows(flows()).flows
    missing = dict(zip(out["flow_id"], out["missing_inputs"].to_list()))
    notes = dict(zip(out["flow_id"], out["notes"].to_list()))
    assert missing[1] == [] and notes[1] == []
    assert missing[2] == [] and notes[2] == ["b_packets_per_ack null: assumed b = 2"]
    assert missing[3] == ["q"]
    assert missing[4] == ["ack_burst_loss"]
    assert missing[6] == ["throughput_pkts"]
    assert missing[5] == []
    assert {n.split(":")[0] for n in notes[5]} == {"enh_as_printed", "enh_corrected", "enh_rederived"}
    assert all("E[W] =" in n and "< 1" in n for n in notes[5])
    assert len(notes[7]) == 1 and notes[7][0].startswith("enh_as_printed: b = 1") and "b = 2 only" in notes[7][0]
    assert notes[8] == ["throughput_pkts = 0 is not > 0: D undefined"]
    # models that do not need the missing column still predict
    row3 = out.filter(pl.col("flow_id") == 3)
    assert row3["pred_pftk_full"][0] is not None and row3["pred_enh_rederived"][0] is None
    # flow 9: no loss at all → every model at the window limit W_m/RTT = 400
    row9 = out.filter(pl.col("flow_id") == 9).row(0, named=True)
    for key in KEYS:
        assert row9[f"pred_{key}"] == pytest.approx(400.0)
        assert row9[f"d_{key}"] == pytest.approx(20 / 380)


def test_allow_any_b_and_pa_fallback():
    out = fit_flows(flows(), allow_any_b=True, pa_fallback=True).flows
    r7 = out.filter(pl.col("flow_id") == 7).row(0, named=True)
    assert r7["pred_enh_as_printed"] == pytest.approx(expected_prediction(ROWS[6], "enh_as_printed", allow_any_b=True))
    r4 = out.filter(pl.col("flow_id") == 4).row(0, named=True)
    exponent = math.ceil(models.expected_unconstrained_window(0.001, 2.0) / 2.0)
    pa = 0.0007**exponent
    assert r4["missing_inputs"] == []
    assert r4["pred_enh_rederived"] == pytest.approx(expected_prediction(ROWS[3], "enh_rederived", pa_override=pa))
    assert any("from p_a under independent ACK losses" in n for n in r4["notes"])


def test_group_summary():
    res = fit_flows(flows(), group_by="class")
    s = res.summary
    assert set(s.columns) >= {"class", "model", "n_flows", "n_with_d", "mean_d", "median_d"}
    assert s.height == 3 * len(KEYS)  # hsr, stationary, (null)
    for group in ("hsr", "stationary", "(null)"):
        rows = [r for r in ROWS if (r[1] or "(null)") == group]
        for key in KEYS:
            ds = []
            for r in rows:
                e = expected_prediction(r, key)
                if e is not None and r[-1] is not None and r[-1] > 0:
                    ds.append(abs(e - r[-1]) / r[-1])
            got = s.filter((pl.col("class") == group) & (pl.col("model") == key)).row(0, named=True)
            assert got["n_flows"] == len(rows)
            assert got["n_with_d"] == len(ds)
            if ds:
                assert got["mean_d"] == pytest.approx(float(np.mean(ds)), rel=1e-12)
                assert got["median_d"] == pytest.approx(float(np.median(ds)), rel=1e-12)
            else:
                assert got["mean_d"] is None


def test_ungrouped_summary_has_one_group():
    s = fit_flows(flows()).summary
    assert s.get_column("group").unique().to_list() == ["all"]
    assert s.get_column("model").to_list() == list(KEYS)


def test_parquet_dir_file_and_outputs(tmp_path):
    df = flows().with_columns(pl.col("flow_id").cast(pl.UInt64))  # a file has the analyzer's id type
    df.write_parquet(tmp_path / "flows.parquet")
    from_dir = fit_flows(tmp_path, group_by="class")
    from_file = fit_flows(tmp_path / "flows.parquet", group_by="class")
    direct = fit_flows(df, group_by="class")
    assert from_dir.flows.equals(direct.flows) and from_file.flows.equals(direct.flows)
    paths = from_dir.write(tmp_path / "out")
    assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths["figure"].stat().st_size > 10_000
    back = pl.read_parquet(paths["flows_parquet"])
    assert back.equals(direct.flows)
    csv = pl.read_csv(paths["flows_csv"])
    assert csv.filter(pl.col("flow_id") == 3)["missing_inputs"][0] == "q"
    assert pl.read_csv(paths["summary_csv"]).height == direct.summary.height
    # no temporary files left (the lock file of the output directory stays, docs/formats/output.md)
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".") and p.name != ".hsrtcp.lock"]


def test_absent_columns_count_as_missing():
    df = flows().drop("q", "ack_burst_loss", "p_a")
    out = fit_flows(df).flows
    assert out["pred_enh_rederived"].null_count() == out.height
    assert all(set(m) >= {"q", "ack_burst_loss"} for m in out["missing_inputs"].to_list())
    assert out["pred_pftk_full"].null_count() < out.height


def test_bad_inputs(tmp_path):
    with pytest.raises(InputError, match=r"nope: no such file"):
        fit_flows(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty/flows\.parquet: no such file"):
        fit_flows(tmp_path / "empty")
    (tmp_path / "flows.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match=r"flows\.parquet: cannot read as Parquet"):
        fit_flows(tmp_path)
    with pytest.raises(InputError, match="column 'flow_id' is missing"):
        fit_flows(flows().drop("flow_id"))
    with pytest.raises(InputError, match="group-by column 'carrier' is missing"):
        fit_flows(flows(), group_by="carrier")
    with pytest.raises(InputError, match="column 'q' is not numeric"):
        fit_flows(flows().with_columns(pl.lit("x").alias("q")))
