"""`hsrtcp model` through click's CliRunner."""

from __future__ import annotations

import polars as pl
import pytest
from click.testing import CliRunner

from hsrtcp import models
from hsrtcp.errors import InputError
from hsrtcp.cli.model import model

E2 = ["--p-d", "0.007526", "--ack-burst-loss", "0.001", "--q", "0.2726", "--rtt", "0.2", "--rto", "2", "--b", "2", "--wm", "1000"]


def run(args, ok=True):
    res = CliRunner().invoke(model, args, catch_exceptions=False)
    if ok:
        assert res.exit_code == 0, res.output
    return res


def test_predict_prints_every_model_side_by_side():
    out = run(["predict", *E2, "--mss", "1448"]).output
    for key, printed in (("pftk_full", "41.9817"), ("pftk_approx", "42.6742"), ("enh_as_printed", "33.3707"),
                         ("enh_corrected", "33.8879"), ("enh_rederived", "35.3118")):
        line = next(ln for ln in out.splitlines() if key in ln)
        assert printed in line
        # the rate column as the summary prints rates (human_rate): 486 kbit/s, not 486316
        assert f"{float(printed) * 1448 * 8 / 1e3:.0f} kbit/s" in line, line
        assert f"{float(printed) * 1448 * 8:.0f}" not in line
    assert "loss-limited" in out


def test_predict_lowercase_alias_and_domain_notes():
    out = run(["predict", "--p-d", "0.007526", "--p-a", "0.4", "--q", "0.3", "--rtt", "0.2", "--rto", "2"]).output
    assert "0.111504" in out  # E12, ENH-R
    assert out.count("E[W] =") == 2  # ENH-P and ENH-C undefined, with the reason


def test_predict_defaults_and_ack_loss_rate():
    out = run(["predict", "--p-d", "0.01", "--rtt", "0.1", "--rto", "1"]).output
    assert "q not given: q = p_d" in out
    assert "69.5245" in out and "69.5227" in out  # PFTK, ENH-R at P_a = 0 (E1)
    out = run(["predict", "--p-d", "0.007526", "--ack-loss-rate", "0.00661", "--rtt", "0.2", "--rto", "2"]).output
    assert "P_a = 0.0000000000000000000000000000004036 from p_a = 0.00661" in out  # 4.03594e-31, no exponent


def test_predict_bad_input_is_a_usage_error():
    res = run(["predict", "--p-d", "1.5", "--rtt", "0.2", "--rto", "2"], ok=False)
    assert res.exit_code == 2
    assert "p_d = 1.5 is outside its domain" in res.output


def _flows():
    return pl.DataFrame(
        {
            "flow_id": [1, 2, 3],
            "class": ["hsr", "hsr", "stationary"],
            "p_d": [0.007526, 0.02, 0.001],
            "ack_burst_loss": [0.001, 0.05, 0.0],
            "q": [0.2726, 0.35, None],
            "rtt_mean": [0.2, 0.3, 0.05],
            "rto_first_mean": [2.0, 3.0, 0.65],
            "w_m_packets": [1000.0, 1000.0, 1000.0],
            "b_packets_per_ack": [2.0, 2.0, 2.0],
            "throughput_pkts": [30.0, 3.5, 500.0],
        },
        schema_overrides={"flow_id": pl.UInt64},  # the analyzer's id type (hsrtcp.results checks it)
    )


def test_fit_writes_outputs(tmp_path):
    _flows().write_parquet(tmp_path / "flows.parquet")
    res = run(["fit", str(tmp_path), "--group-by", "class", "-o", str(tmp_path / "m")])
    for name in ("model_fit_flows.parquet", "model_fit_flows.csv", "model_fit_summary.csv", "model_fit.png"):
        assert (tmp_path / "m" / name).exists(), name
    summary = pl.read_csv(tmp_path / "m" / "model_fit_summary.csv")
    hsr = summary.filter((pl.col("class") == "hsr") & (pl.col("model") == "enh_rederived"))["mean_d"][0]
    d1 = abs(models.enhanced(0.007526, 0.001, 0.2726, 0.2, 2.0, 2, 1000, variant="rederived") - 30) / 30
    d2 = abs(models.enhanced(0.02, 0.05, 0.35, 0.3, 3.0, 2, 1000, variant="rederived") - 3.5) / 3.5
    assert hsr == pytest.approx((d1 + d2) / 2, rel=1e-12)
    assert f"{(d1 + d2) / 2:.4f}" in res.output
    assert "1 flow(s) lack inputs" in res.output


def test_fit_default_outdir_and_missing_file(tmp_path):
    _flows().write_parquet(tmp_path / "flows.parquet")
    run(["fit", str(tmp_path / "flows.parquet")])
    assert (tmp_path / "model" / "model_fit.png").exists()
    # an input error, left to `hsrtcp` main (exit code 3), naming the path
    res = CliRunner().invoke(model, ["fit", str(tmp_path / "absent")])
    assert isinstance(res.exception, InputError)
    assert "absent: no such file" in str(res.exception)
    from hsrtcp.cli import main
    from hsrtcp.errors import ExitCode

    assert main(["model", "fit", str(tmp_path / "absent")]) == ExitCode.INPUT == 3


def test_sweep_writes_png_and_csv(tmp_path):
    res = run(["sweep", "--param", "P_a", "--param", "rto", "-o", str(tmp_path)])
    for p in ("P_a", "T"):
        assert (tmp_path / f"sweep_{p}.png").read_bytes()[:4] == b"\x89PNG"
        t = pl.read_csv(tmp_path / f"sweep_{p}.csv")
        assert set(t["model"].unique()) == set(models.MODEL_KEYS)
    assert "sweep_T.csv" in res.output
    run(["sweep", "--param", "q", "--from", "0", "--to", "0.6", "--steps", "7", "--P-a", "0.001", "-o", str(tmp_path)])
    t = pl.read_csv(tmp_path / "sweep_q.csv").filter(pl.col("model") == "enh_rederived")
    assert t.height == 7
    assert f"{t['throughput_pkts'][-1]:.6g}" == "12.1765"  # models.md §4.4, q = 0.6


def test_sweep_usage_errors(tmp_path):
    res = CliRunner().invoke(model, ["sweep", "--param", "mss", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "unknown sweep parameter" in res.output
    res = CliRunner().invoke(model, ["sweep", "--param", "q", "--param", "P_a", "--from", "0", "--to", "1"])
    assert res.exit_code == 2 and "exactly one --param" in res.output


def test_group_is_importable_as_the_lead_registers_it():
    import importlib

    assert importlib.import_module("hsrtcp.cli.model").model is model
    assert set(model.commands) == {"predict", "fit", "sweep"}
