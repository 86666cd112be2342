"""Option values no command can use are usage errors naming the option (exit 2), never a
traceback and never a run on NaN (issue 30, items 11 and 17): report, plot, mptcp, model
predict and model sweep; a compiled scenario whose trace is not a trace is an input error
naming the file (exit 3)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from hsrtcp.cli import main
from hsrtcp.models.evaluate import MODEL_KEYS, evaluate_all
from hsrtcp.models.sweeping import BASE, DOMAIN, domain_problem

from ..plot.conftest import analyze, drops  # noqa: F401 - pytest fixture, shared

DATA = Path(__file__).resolve().parents[2] / "data"
BIG = "99999999999999999999"  # beyond int64 and uint64


@pytest.fixture(scope="module")
def mp(tmp_path_factory) -> Path:
    """An MPTCP download analyzed at the server vantage: what `hsrtcp mptcp` reads."""
    return analyze(tmp_path_factory.mktemp("mp") / "mp", str(DATA / "mptcp" / "two_paths.client.pcap"),
                   "--vantage", "server")


def refused(capsys, argv, option, *words):
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert f"Invalid value for '{option}'" in err or f"Invalid value for {option}:" in err, err
    for w in words:
        assert w in err, (w, err)
    return err


# -- report, plot, mptcp ------------------------------------------------------------------

@pytest.mark.parametrize("args, option", [
    (["--top", BIG], "--top"),
    (["--width", BIG], "--width"),
])
def test_report_counts_beyond_int64(drops, tmp_path, capsys, args, option):
    out = tmp_path / "r.html"
    refused(capsys, ["report", drops, "-o", out, *args], option)
    assert not out.exists()


@pytest.mark.parametrize("args, option, word", [
    (["--from", "nan"], "--from", "NaN"),
    (["--to", "nan"], "--to", "NaN"),
    (["--from", "-1e308", "--to", "1e308"], "--from", "-1e+308"),
    (["--from", "0", "--to", "inf"], "--to", "inf"),
    (["--flow", BIG], "--flow", BIG),
])
@pytest.mark.parametrize("kind", ["tsg", "rtt"])
def test_plot_window_must_be_finite_and_bounded(drops, tmp_path, capsys, kind, args, option, word):
    out = tmp_path / "p.png"
    refused(capsys, ["plot", kind, drops, "-o", out, *args], option, word)
    assert not out.exists()


def test_plot_window_inside_the_bounds_still_draws(drops, tmp_path, capsys):
    assert main(["plot", "tsg", str(drops), "-o", str(tmp_path / "p.png"), "--from", "-1e9", "--to", "1e9"]) == 0
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, option", [
    (["--duration", "nan"], "--duration"),
    (["--duration", "inf"], "--duration"),
    (["--duration", "1e308"], "--duration"),
    (["--barrier", "nan"], "--barrier"),
    (["--before", "nan"], "--before"),
    (["--drop", "nan"], "--drop"),
    (["--drop", "1.5"], "--drop"),
    (["--after", "-inf"], "--after"),
    (["--window", BIG], "--window"),
    (["--min-after", BIG], "--min-after"),
    (["--hold", BIG], "--hold"),
])
def test_mptcp_options(mp, tmp_path, capsys, args, option):
    refused(capsys, ["mptcp", mp, "-o", tmp_path / "m", *args], option)
    assert not (tmp_path / "m").exists()


def test_mptcp_in_range_still_runs(mp, tmp_path, capsys):
    assert main(["mptcp", str(mp), "--duration", "2", "--barrier", "0.9"]) == 0
    assert "MPTCP" in capsys.readouterr().out


# -- model predict and model sweep: one check -------------------------------------------

PREDICT = {"--p-d": "0.007526", "--rtt": "0.2", "--rto": "2"}
OPTION = {"p_d": "--p-d", "P_a": "--P-a", "q": "--q", "rtt": "--rtt", "T": "--rto", "b": "--b", "W_m": "--wm"}
VALUES = ["nan", "-nan", "inf", "-inf", "-5", "0", "0.5", "1", "2", "1e308", "x"]


def run_model(capsys, argv):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("symbol", list(OPTION))
def test_predict_and_sweep_refuse_the_same_values_with_the_same_words(tmp_path, capsys, symbol):
    option = OPTION[symbol]
    for value in VALUES:
        given = {**PREDICT, option: value}
        p_code, p_err = run_model(capsys, ["model", "predict", *[x for kv in given.items() for x in kv]])
        out = tmp_path / f"sweep_{symbol}_{value}"
        s_code, s_err = run_model(capsys, ["model", "sweep", "--param", "q" if symbol != "q" else "P_a", option,
                                           value, "-o", out])
        p_refused = f"Invalid value for '{option}'" in p_err
        s_refused = f"Invalid value for '{option}'" in s_err
        assert p_refused == s_refused, (value, p_err, s_err)
        try:
            v = float(value)
        except ValueError:
            assert p_refused and "is not a number" in p_err
            continue
        assert p_refused == (domain_problem(symbol, v) is not None), (value, p_err)
        if p_refused:
            assert p_code == s_code == 2 and "Traceback" not in p_err + s_err
            assert p_err.splitlines()[-1].split(":", 1)[1] == s_err.splitlines()[-1].split(":", 1)[1]
            assert not out.exists()  # nothing written for a refused sweep
        else:
            assert s_code == 0, s_err


@pytest.mark.parametrize("args, option, words", [
    (["--param", "q", "--from", "nan", "--to", "0.5"], "--from", ["NaN"]),
    (["--param", "q", "--from", "0", "--to", "inf"], "--to", ["inf"]),
    (["--param", "q", "--from", "-0.1", "--to", "0.5"], "--from", ["q = -0.1 is outside its domain [0, 1)"]),
    (["--param", "rto", "--from", "0", "--to", "5"], "--from", ["T = 0 s is outside its domain (0, inf)"]),
    (["--p-d", "nan"], "--p-d", ["p_d = NaN"]),
    (["--rto", "0"], "--rto", ["T = 0 s is outside its domain"]),
    (["--wm", "-5"], "--wm", ["W_m = -5 packets is outside its domain [1, inf]"]),
])
def test_the_issue_sweeps_are_usage_errors(tmp_path, capsys, args, option, words):
    out = tmp_path / "sweep"
    refused(capsys, ["model", "sweep", *args, "-o", out], option, *words)
    assert not out.exists()


def test_the_help_gives_only_bounds_that_exist(capsys):
    """model sweep's --from/--to take any finite number; the help said "[x<=None]"."""
    assert main(["model", "sweep", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--from" in out and "None" not in out, out


def test_predict_mss_beyond_int64(capsys):
    refused(capsys, ["model", "predict", *[x for kv in PREDICT.items() for x in kv], "--mss", BIG], "--mss")


@pytest.mark.parametrize("symbol", list(OPTION))
def test_the_domain_table_is_the_models_own(symbol):
    """DOMAIN (the CLI's check) says "outside" exactly where the enhanced model's own domain
    check does."""
    lo, hi, _, _ = DOMAIN[symbol]
    probes = [lo, hi, np.nextafter(lo, -math.inf), np.nextafter(lo, math.inf), -1.0, 0.0, 0.5, 1.0, 3.0,
              1e300, math.inf, -math.inf, math.nan]
    point = dict(BASE)
    for v in probes:
        inputs = {k: np.array([v if k == symbol else point[k]]) for k in point}
        res = evaluate_all(**inputs, models=MODEL_KEYS)
        reason = res["enh_rederived"].reasons[0] or ""
        outside = reason.startswith(f"{symbol} = ") and "is outside its domain" in reason
        assert outside == (domain_problem(symbol, v) is not None), (v, reason)


def test_a_sweep_from_python_refuses_a_base_point_outside_the_domain():
    from hsrtcp.errors import ModelDomainError
    from hsrtcp.models.sweeping import sweep

    with pytest.raises(ModelDomainError, match="T = 0 s is outside its domain"):
        sweep("q", base={"T": 0})
    assert sweep("q", [0.1], base={"W_m": math.inf}).height == len(MODEL_KEYS)  # inf: no window limit


# -- a compiled scenario with a trace that is not one ------------------------------------

@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("scenario") / "sc"
    assert main(["scenario", "generate", "--speed", "300", "--area", "urban", "--duration", "20", "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize("content", ["[]", "null", '"bw"', "3", '{"BwReplay": {"pattern": [1]}}'])
@pytest.mark.parametrize("command", [["check", "--no-rattan"], ["show"], ["export-mahimahi"]])
def test_a_trace_of_another_shape_is_an_input_error_naming_it(compiled, tmp_path, capsys, command, content):
    bad = tmp_path / "sc"
    shutil.copytree(compiled, bad)
    trace = sorted((bad / "traces").glob("bw_*.json"))[0]
    trace.write_text(content + "\n")
    extra = {"show": ["-o", tmp_path / "s.png"], "export-mahimahi": ["-o", tmp_path / "mm"]}.get(command[0], [])
    code = main(["scenario", command[0], str(bad), *command[1:], *map(str, extra)])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "Traceback" not in err and f"{trace}: unreadable trace" in err
    assert "Error" not in err.replace("ScenarioError", ""), err  # the file's fault, not Python's words


def test_a_scenario_json_of_another_shape_is_an_input_error_naming_it(compiled, tmp_path, capsys):
    bad = tmp_path / "sc"
    shutil.copytree(compiled, bad)
    (bad / "scenario.json").write_text(json.dumps([]))
    assert main(["scenario", "check", str(bad), "--no-rattan"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{bad}: not a compiled scenario directory" in err


# -- library warnings on stderr -----------------------------------------------------------

def test_model_fit_on_inputs_outside_the_domain_says_why_in_the_table_not_in_numpy_warnings(tmp_path):
    """A flow whose q or p_d is far outside [0, 1) gets its reason in model_fit_flows; numpy's
    overflow warnings from the timeout polynomial f(p) used to follow it onto stderr."""
    import subprocess
    import sys

    import polars as pl

    flows = tmp_path / "res" / "flows.parquet"
    flows.parent.mkdir()
    pl.DataFrame({"flow_id": [1, 2, 3], "p_d": [0.007526, 5.0, 1e300], "ack_burst_loss": [0.001, 0.05, 0.0],
                  "q": [1e300, 0.35, 2.0], "rtt_mean": [0.2, 0.3, 0.05], "rto_first_mean": [2.0, 3.0, 0.65],
                  "w_m_packets": [1000.0] * 3, "b_packets_per_ack": [2.0] * 3, "throughput_pkts": [30.0, 3.5, 500.0]},
                 schema_overrides={"flow_id": pl.UInt64}).write_parquet(flows)
    for argv in (["model", "fit", flows.parent, "-o", tmp_path / "fit"], ["plot", "model", flows.parent, "-o",
                                                                          tmp_path / "m.png"]):
        p = subprocess.run([sys.executable, "-m", "hsrtcp", *map(str, argv)], capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        assert "Warning" not in p.stderr, p.stderr
    notes = pl.read_parquet(tmp_path / "fit" / "model_fit_flows.parquet").sort("flow_id")["notes"].to_list()
    assert "enh_rederived: q = 1e+300 is outside its domain [0, 1)" in notes[0]


@pytest.mark.parametrize("args, option", [
    (["--speed", "nan"], "--speed"),
    (["--speed", "inf"], "--speed"),
    (["--speed", "1e308"], "--speed"),
    (["--speed", "-5"], "--speed"),
    (["--area", "moon"], "--area"),
])
def test_scenario_generate_options_alone_are_usage_errors_naming_them(tmp_path, capsys, args, option):
    """Without a file the scenario is made of the options: a bad value is theirs (exit 2),
    not a bad input file called <dict> (exit 3)."""
    code = main(["scenario", "generate", *args, "-o", str(tmp_path / "sc")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"option {option} " in err and "<dict>" not in err and "Traceback" not in err
    assert not (tmp_path / "sc").exists()
