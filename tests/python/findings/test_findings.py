"""The findings pipeline (hsrtcp.findings) on a small generated result set, and its effect
arithmetic on hand-made values.

The result set: pairs of committed fixture captures (tests/data, real kernel TCP through the
netns testbed, origin in tests/data/README.md) analyzed by ``hsrtcp analyze --client --server``
exactly as a campaign bundle is, each given a bundle manifest that names its arm, scenario and
trip seed as hsrtcp.lab.campaign writes them. The expected effects are computed here from the
analyzer's matched flows rows with numpy, independently of the study layer the package uses.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.errors import InputError
from hsrtcp.findings import build, effects, outcomes
from hsrtcp.findings.outcomes import BY_NAME
from hsrtcp.study import stats

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"

# (scenario, seed, arm) -> fixture pair name
LAYOUT = {
    ("cruise", 1, "cubic"): "drops_cubic", ("cruise", 1, "cubic-frto-off"): "clean_200k",
    ("cruise", 2, "cubic"): "twovantage_offset", ("cruise", 2, "cubic-frto-off"): "small_50k",
    ("cruise", 3, "cubic"): "reno_nosack_nots", ("cruise", 3, "cubic-frto-off"): "bbr_drops",
    ("urban", 1, "cubic"): "data_blackout", ("urban", 1, "cubic-frto-off"): "ack_delay",
}
# a second campaign (the A/A one) in its own runs directory
LAYOUT_AA = {("cruise", 1, "cubic-aa"): "zero_window", ("cruise", 2, "cubic-aa"): "ipv6_drops",
             ("cruise", 3, "cubic-aa"): "ack_blackout"}


def _manifest(run_id: str, scenario: str, seed: int, arm: str, status: str = "ok") -> dict:
    return {"run_id": run_id, "status": status, "cc": "cubic", "repetition": seed, "campaign": "pytest",
            "scenario": {"name": scenario}, "seeds": {"scenario": 100 + seed},
            "variant": {"name": arm, "cc": "cubic", "sysctls": {}, "route": {}, "scenario_label": scenario,
                        "scenario_start_s": None}}


@pytest.fixture(scope="module")
def result_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("findings")
    runs, results = root / "runs", root / "results"
    for where, layout in ((runs, LAYOUT), (root / "runs-aa", LAYOUT_AA)):
        for i, ((scenario, seed, arm), name) in enumerate(sorted(layout.items()), 1):
            run_id = f"{i:03d}_{scenario}_{arm}_r{seed}"
            (where / run_id).mkdir(parents=True)
            (where / run_id / "manifest.json").write_text(json.dumps(_manifest(run_id, scenario, seed, arm)))
            subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", "--client",
                            str(DATA / f"{name}.client.pcap"), "--server", str(DATA / f"{name}.server.pcap"),
                            "-o", str(results / run_id), "-q"], check=True)
    # a failed run and a run nobody analyzed: both left out of their pairs, with a note
    (runs / "090_urban_cubic_r2").mkdir()
    (runs / "090_urban_cubic_r2" / "manifest.json").write_text(
        json.dumps(_manifest("090_urban_cubic_r2", "urban", 2, "cubic", status="failed")))
    (runs / "091_urban_cubic-frto-off_r2").mkdir()
    (runs / "091_urban_cubic-frto-off_r2" / "manifest.json").write_text(
        json.dumps(_manifest("091_urban_cubic-frto-off_r2", "urban", 2, "cubic-frto-off")))
    return runs, results


def _matched(results, run_id: str) -> dict:
    """The matched row of the run's one connection, with ``phone_acked``: the bytes the phone
    acknowledged (M20), the phone-side row's ACK advance."""
    flows = pl.read_parquet(results / run_id / "flows.parquet")
    f = flows.filter(pl.col("vantage") == "matched")
    assert f.height == 1
    row = f.row(0, named=True)
    phone = flows.filter(pl.col("flow_id") == row["client_flow_id"])
    row["phone_acked"] = phone["goodput_bytes"][0]
    return row


def test_pipeline_pairs_runs_by_scenario_and_seed(result_set, tmp_path):
    runs, results = result_set
    f = build(runs, results, seed=1, n_boot=400, min_pairs=2)
    a = f.arms
    assert a.height == len(LAYOUT) + 2
    assert dict(zip(a["run_id"], a["status"]))["091_urban_cubic-frto-off_r2"] == "not analyzed"
    assert any("failed" in n and "090_urban_cubic_r2" in n for n in f.notes)
    assert any("without an analysis" in n and "091_urban_cubic-frto-off_r2" in n for n in f.notes)
    # per-run outcomes are the analyzer's rows (goodput: bytes the phone acknowledged over M2)
    for row in a.filter(pl.col("status") == "ok").iter_rows(named=True):
        m = _matched(results, row["run_id"])
        assert row["goodput_bps"] == pytest.approx(m["phone_acked"] * 8 / m["duration_s"], rel=1e-12)
        assert row["spurious_timeouts"] == (m["spurious_timeouts_2v"] or 0)
        assert row["dupack_rate"] == pytest.approx(m["dupack_rate"])
        assert row["p_d"] == pytest.approx(m["p_d"])
    # F-RTO on (cubic) vs off on cruise: 3 pairs, computed here from the flows tables
    ids = dict(zip(zip(a["scenario"], a["seed"], a["arm"]), a["run_id"]))

    def good(sc, seed, arm):
        m = _matched(results, ids[(sc, 100 + seed, arm)])
        return m["phone_acked"] * 8 / m["duration_s"]

    ratios = [good("cruise", s, "cubic") / good("cruise", s, "cubic-frto-off") for s in (1, 2, 3)]
    expected = (math.exp(np.mean(np.log(ratios))) - 1) * 100
    e = f.effects.filter((pl.col("question") == "frto") & (pl.col("group") == "cruise")
                         & (pl.col("outcome") == "goodput_bps")).row(0, named=True)
    assert e["n_pairs"] == 3 and e["effect"] == pytest.approx(expected, rel=1e-9)
    assert e["effect_lo"] <= e["effect"] <= e["effect_hi"]
    # the bootstrap of 3 pairs cannot leave their range
    assert (min(ratios) - 1) * 100 - 1e-9 <= e["effect_lo"] and e["effect_hi"] <= (max(ratios) - 1) * 100 + 1e-9
    d = [(_matched(results, ids[("cruise", 100 + s, "cubic")])["dupack_rate"]
          - _matched(results, ids[("cruise", 100 + s, "cubic-frto-off")])["dupack_rate"]) for s in (1, 2, 3)]
    e = f.effects.filter((pl.col("question") == "frto") & (pl.col("group") == "cruise")
                         & (pl.col("outcome") == "spurious_timeouts")).row(0, named=True)
    assert e["n_pairs"] == 3
    # no quickack arm in this set: every quickack cell has too few pairs
    assert set(f.effects.filter(pl.col("question") == "quickack")["verdict"]) == {"too few pairs"}
    # urban: one analyzed pair (seed 2 failed / not analyzed) < min_pairs 2, so no effect
    u = f.effects.filter((pl.col("question") == "frto") & (pl.col("group") == "urban")
                         & (pl.col("outcome") == "goodput_bps")).row(0, named=True)
    assert u["n_pairs"] == 1 and u["effect"] is None and u["verdict"] == "too few pairs"
    # all HSR pools cruise and urban: 4 pairs
    h = f.effects.filter((pl.col("question") == "frto") & (pl.col("group") == "all HSR")
                         & (pl.col("outcome") == "goodput_bps")).row(0, named=True)
    assert h["n_pairs"] == 4
    dq = f.effects.filter((pl.col("question") == "quickack") & (pl.col("group") == "cruise")
                          & (pl.col("outcome") == "dupack_rate")).row(0, named=True)
    assert dq["n_pairs"] == 0
    assert len(d) == 3
    # written: tables, csv, one figure per question
    paths = f.write(tmp_path / "out")
    names = {p.name for p in paths}
    assert {"arms.csv", "effects.csv", "causes.csv", "tables.md", "findings-frto.svg", "findings-cc.png"} <= names
    md = (tmp_path / "out" / "tables.md").read_text()
    assert "| cruise | F-RTO on vs off | 3 |" in md


def test_a_second_campaign_is_paired_with_the_first(result_set):
    runs, results = result_set
    f = build(runs, results, seed=1, n_boot=200, min_pairs=2, also_runs=[runs.parent / "runs-aa"])
    e = f.effects.filter((pl.col("question") == "noise") & (pl.col("group") == "cruise")
                         & (pl.col("outcome") == "goodput_bps")).row(0, named=True)
    assert e["n_pairs"] == 3 and e["effect"] is not None
    without = build(runs, results, n_boot=0, min_pairs=2)
    assert without.effects.filter(pl.col("question") == "noise")["n_pairs"].max() == 0
    # the same campaign twice: its run ids would share analyses
    with pytest.raises(InputError, match="more than one runs directory"):
        build(runs, results, also_runs=[runs])


def test_cli_exit_codes(result_set, tmp_path):
    runs, results = result_set
    ok = subprocess.run([sys.executable, "-m", "hsrtcp.findings", str(runs), str(results), "-o", str(tmp_path / "o"),
                         "--bootstrap", "50", "--no-figures"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "runs used" in ok.stderr and (tmp_path / "o" / "effects.csv").is_file()
    bad = tmp_path / "bad"
    (bad / "001_x").mkdir(parents=True)
    (bad / "001_x" / "manifest.json").write_text("{not json")
    r = subprocess.run([sys.executable, "-m", "hsrtcp.findings", str(bad), str(results), "-o", str(tmp_path / "o2")],
                       capture_output=True, text=True)
    assert r.returncode == 3 and "001_x/manifest.json" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "hsrtcp.findings", str(tmp_path / "none"), str(results), "-o",
                        str(tmp_path / "o3")], capture_output=True, text=True)
    assert r.returncode == 3 and "no such runs directory" in r.stderr


# ------------------------------------------------------------------ effect arithmetic


def _rng():
    return stats.rng_for(0, "test")


def test_ratio_effect_is_the_geometric_mean_of_paired_ratios():
    o = BY_NAME["goodput_bps"]
    e = effects.effect([2.0, 8.0, 3.0], [1.0, 2.0, 3.0], o, rng=_rng(), n_boot=500)
    assert e["effect"] == pytest.approx((math.exp(np.mean(np.log([2, 4, 1]))) - 1) * 100)
    assert e["n_pairs"] == 3 and e["dropped"] == 0
    assert (e["pair_min"], e["pair_max"]) == pytest.approx((0.0, 300.0))  # x1 and x4
    # every pair doubles: the interval is that exactly, and doubling goodput helps
    e = effects.effect([2.0, 4.0, 6.0, 8.0], [1.0, 2.0, 3.0, 4.0], o, rng=_rng(), n_boot=500)
    assert (e["effect"], e["effect_lo"], e["effect_hi"]) == pytest.approx((100.0, 100.0, 100.0))
    assert e["verdict"] == "helps"
    # a zero cannot be a ratio: that pair is dropped and counted; nulls are not pairs
    e = effects.effect([0.0, 2.0, 4.0, None, 6.0], [1.0, 1.0, 2.0, 5.0, 3.0], o, rng=_rng(), n_boot=100)
    assert e["n_pairs"] == 3 and e["dropped"] == 1


def test_difference_effect_scale_and_verdicts():
    o = BY_NAME["spurious_rto_rate"]  # lower is better, shown in percentage points
    e = effects.effect([0.1, 0.2, 0.3, 0.1], [0.3, 0.4, 0.5, 0.3], o, rng=_rng(), n_boot=500)
    assert e["effect"] == pytest.approx(-20.0) and e["verdict"] == "helps"
    e = effects.effect([0.5, 0.6, 0.7], [0.1, 0.2, 0.3], o, rng=_rng(), n_boot=500)
    assert e["verdict"] == "hurts"
    # differences of both signs: the interval holds 0, the effect is within noise
    e = effects.effect([0.3, 0.1, 0.35, 0.15], [0.1, 0.3, 0.15, 0.35], o, rng=_rng(), n_boot=2000)
    assert e["effect_lo"] < 0 < e["effect_hi"] and e["verdict"] == "within noise"
    e = effects.effect([0.3, None], [0.1, 0.2], o, rng=_rng(), min_pairs=2)
    assert e["n_pairs"] == 1 and e["verdict"] == "too few pairs" and e["effect"] is None
    assert effects.effect([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], o, rng=_rng(), n_boot=0)["verdict"] == "no interval"


def test_effects_are_held_against_the_a_a_interval():
    rows = [  # (question, group, outcome, effect, lo, hi)
        ("noise", "cruise", "goodput_bps", 1.0, -20.0, 25.0),
        ("frto", "cruise", "goodput_bps", 40.0, 30.0, 50.0),     # beyond the A/A interval
        ("frto", "cruise", "p_d", 1.0, 0.5, 1.5),                # no A/A cell for p_d here
        ("cc", "cruise", "goodput_bps", 20.0, 10.0, 30.0),       # overlaps it
        ("cc", "urban", "goodput_bps", 20.0, 10.0, 30.0),        # no A/A for urban
    ]
    df = pl.DataFrame([dict(zip(("question", "group", "outcome", "effect", "effect_lo", "effect_hi"), r))
                       for r in rows])
    out = effects.with_noise(df, "noise")
    got = {(r["question"], r["group"], r["outcome"]): (r["beyond_noise"], r["noise_lo"])
           for r in out.iter_rows(named=True)}
    assert got[("frto", "cruise", "goodput_bps")] == (True, -20.0)
    assert got[("cc", "cruise", "goodput_bps")] == (False, -20.0)
    assert got[("frto", "cruise", "p_d")] == (None, None)
    assert got[("cc", "urban", "goodput_bps")] == (None, None)
    assert got[("noise", "cruise", "goodput_bps")] == (None, None)


def test_per_run_keeps_unmeasured_counts_null():
    sf = pl.DataFrame({"result": ["a", "b"], "acked_bytes": [1000, 0], "duration_s": [2.0, 0.0],
                       "spurious_2v": [None, 2], "timeout_sequences": [1, None], "failed": [False, True],
                       "spurious_rto_rate": [None, 0.5], "dupack_rate": [0.1, 0.2], "p_d": [0.01, None],
                       "spurious_ackl": [None, 1], "spurious_rtoei": [None, 1], "timeout_duration_mean_s": [0.5, None]})
    r = outcomes.per_run(sf)
    a, b = r.row(0, named=True), r.row(1, named=True)
    assert a["goodput_bps"] == 4000.0 and b["goodput_bps"] is None  # no duration: no goodput, not 0
    assert a["spurious_timeouts"] is None and b["spurious_timeouts"] == 2.0
    assert a["interrupted"] == 0.0 and b["interrupted"] == 1.0


def test_unreadable_runs_directory():
    with pytest.raises(InputError, match="no such runs directory"):
        build("/nonexistent/runs", "/nonexistent/results")
