"""``model fit`` and ``scenario generate`` write their files all together or not at all
(issue 16 item 4; hsrtcp.output.OutputSet with a manifest of their own): a failure half-way
leaves the previous run's files and no partial set, and writing them into an analysis
directory leaves the analysis's files and manifest alone.

Inputs: the flows table of tests/python/models/test_fit.py (built there) and the scenarios
shipped in scenarios/ (two-carriers.toml, smoke.toml)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import hsrtcp.lab.scenario.compile as compile_mod
import hsrtcp.models.fitting as fitting
from hsrtcp.cli import main
from hsrtcp.errors import OutputError
from hsrtcp.lab import scenario as S
from hsrtcp.output import MANIFEST, OutputSet

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios"
SERVER = ROOT / "tests" / "data" / "clean_200k.server.pcap"
FIT_FILES = ["model_fit.png", "model_fit_flows.csv", "model_fit_flows.parquet", "model_fit_summary.csv"]


def _fit_flows() -> pl.DataFrame:
    # two flows of tests/python/models/test_fit.py's table (seed 001's averages, and a
    # window-limited one)
    cols = ["flow_id", "class", "p_d", "p_a", "ack_burst_loss", "q", "rtt_mean", "rto_first_mean",
            "w_m_packets", "b_packets_per_ack", "throughput_pkts"]
    rows = [(1, "hsr", 0.007526, 0.0066, 0.001, 0.2726, 0.2, 2.0, 1000, 2.0, 30.0),
            (9, None, 0.0, 0.0, 0.0, 0.0, 0.1, 1.0, 40, 2.0, 380.0)]
    return pl.DataFrame(rows, schema=cols, orient="row")


def _tree(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` (hidden ones too, but the directory's lock) and its bytes."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*"))
            if p.is_file() and p.name != ".hsrtcp.lock"}


def test_model_fit_failing_half_way_leaves_the_previous_files(tmp_path, monkeypatch):
    out = tmp_path / "fit"
    first = fitting.fit_flows(_fit_flows())
    first.write(out)
    before = _tree(out)
    assert sorted(n for n in before if not n.startswith("hsrtcp-manifest")) == FIT_FILES

    # a second fit of other flows whose figure fails after the tables were written
    second = fitting.fit_flows(_fit_flows().with_columns(pl.col("throughput_pkts") * 2))
    assert not second.flows.equals(first.flows)

    def broken_plot(res, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fitting, "_plot_fit", broken_plot)
    with pytest.raises(OutputError, match="model_fit.png: cannot write: No space left on device"):
        second.write(out)
    assert _tree(out) == before, "the first fit's files, unchanged, and nothing of the second"


def test_model_fit_into_an_analysis_directory_keeps_the_analysis(tmp_path):
    res = tmp_path / "res"
    assert main(["analyze", str(SERVER), "-o", str(res), "-q", "--no-plot"]) == 0
    analysis = _tree(res)
    assert main(["model", "fit", str(res), "-o", str(res)]) == 0
    after = _tree(res)
    assert {n: after[n] for n in analysis} == analysis, "flows, events, manifest ... untouched"
    assert sorted(set(after) - set(analysis)) == sorted([*FIT_FILES, fitting.FIT_MANIFEST])
    assert (res / MANIFEST).read_text() == analysis[MANIFEST].decode()


def _two_carriers(tmp_path) -> Path:
    """A directory holding the compiled two-carrier scenario (traces of paths 1 and 2)."""
    out = tmp_path / "sc"
    S.load(SCENARIOS / "two-carriers.toml").compile(out)
    return out


def _one_carrier_fails_leaving(out, before: dict, error, match: str) -> None:
    """Compiling the one-carrier scenario over ``out`` (it would remove the p2 traces) fails
    with ``error`` and leaves the files as ``before``."""
    with pytest.raises(error, match=match):
        S.load(SCENARIOS / "smoke.toml").compile(out)
    assert _tree(out) == before


def test_scenario_compile_failing_half_way_leaves_the_previous_files(tmp_path, monkeypatch):
    out = _two_carriers(tmp_path)
    before = _tree(out)
    assert "traces/bw_down_p2.json" in before

    # the next compile fails after its traces
    def broken(*a, **k):
        raise RuntimeError("radio log failed")

    monkeypatch.setattr(compile_mod, "radio_csv", broken)
    _one_carrier_fails_leaving(out, before, RuntimeError, "radio log")


def test_scenario_compile_failing_at_the_commit_leaves_the_previous_files(tmp_path):
    out = _two_carriers(tmp_path)
    before = _tree(out)
    (out / "traces" / "bw_up_p1.json").unlink()
    (out / "traces" / "bw_up_p1.json").mkdir()  # in the way of the next compile's trace
    before.pop("traces/bw_up_p1.json")
    _one_carrier_fails_leaving(out, before, OutputError, "is a directory")


def test_a_smaller_scenario_removes_the_traces_of_a_larger_one_also_without_a_manifest(tmp_path):
    out = _two_carriers(tmp_path)
    (out / compile_mod.SCENARIO_MANIFEST).unlink()  # as compiled before the manifest existed
    S.load(SCENARIOS / "smoke.toml").compile(out)
    assert sorted(p.name for p in (out / "traces").iterdir()) == sorted(
        f"{w}_{d}_p1.json" for w in ("bw", "delay", "loss") for d in ("down", "up"))


def test_output_set_names_one_subdirectory_down_and_nothing_outside(tmp_path):
    with OutputSet(tmp_path / "o", manifest="hsrtcp-manifest.x.txt", replaces=frozenset()) as o:
        Path(o.stage("sub/a.json")).write_text("1")
        for bad in ("../a", "/etc/x", "a/b/c", ".hidden", "sub/.x", ""):
            with pytest.raises(ValueError):
                o.stage(bad)
        o.commit()
    assert (tmp_path / "o" / "sub" / "a.json").read_text() == "1"
    assert not [p for p in (tmp_path / "o" / "sub").iterdir() if p.name != "a.json"]
