"""Items drawn from results directories of real captures analyzed with a radio log (the
study tests' cases): one flow's throughput with handoffs and windows (seed 000 Figs. 4, 8,
9, drawn by hsrtcp plot) and per-flow columns of one vantage (Figs. 7, 13; seed 001 Fig. 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import main

from ..study.test_cli_study import DATA, RMAP, _analyze, _radio_log

ROOT = Path(__file__).resolve().parents[3]
STUDY = ROOT / "tests" / "data" / "study"
CASES = {"data_blackout": (0.0, False), "drops_cubic": (300.0, True)}


@pytest.fixture(scope="module")
def gallery(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    base = tmp_path_factory.mktemp("fig_results")
    res = {}
    for name, (speed, handoff) in CASES.items():
        client, server = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
        f = hsrtcp.analyze([client], vantage="client").flows
        log = _radio_log(base / f"{name}.csv", float(f["first_ts"].min()), float(f["last_ts"].max()), speed, handoff)
        res[name] = base / name
        _analyze("--client", client, "--server", server, "--radio", log, "--radio-map", RMAP, "-o", res[name])
    out = base / "g"
    assert main(["figures", str(STUDY), *map(str, res.values()), "-o", str(out), "-q", "--only",
                 "seed000-fig-04,seed000-fig-08,seed000-fig-09,seed000-fig-07,seed000-fig-13,seed001-fig-06"]) == 0
    return out, res


def _coverage(out: Path) -> dict[str, str]:
    rows = {}
    for line in (out / "coverage.md").read_text().splitlines():
        if line.startswith("| seed"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = cells[2]
    return rows


def test_one_flow_figures_are_its_series(gallery):
    out, res = gallery
    cov = _coverage(out)
    assert cov["seed000-fig-04"] == "made" and cov["seed000-fig-08"] == "made"
    # Fig. 4 takes the flow with handoffs (drops_cubic crosses one), Fig. 8 the static one
    for item, name in (("seed000-fig-04", "drops_cubic"), ("seed000-fig-08", "data_blackout")):
        got = pl.read_csv(out / f"{item}.csv", schema_overrides={"flow_id": pl.UInt64})
        assert set(got["result"]) == {str(res[name])}
        fid = got["flow_id"][0]
        series = pl.read_parquet(res[name] / "series.parquet").filter(pl.col("flow_id") == fid).sort("bin")
        assert got["bin"].to_list() == series["bin"].to_list()
        col = "bytes" if item.endswith("04") else "bif_mean"
        assert np.allclose(got[col].to_numpy().astype(float), series[col].to_numpy().astype(float), equal_nan=True)
        assert (out / f"{item}.pdf").stat().st_size > 1000
    # Fig. 9: the 300-km/h case's server row
    assert cov["seed000-fig-09"] == "made"


def test_flows_columns_keep_one_vantage(gallery):
    out, res = gallery
    cov = _coverage(out)
    for item, column, vantage in (("seed000-fig-13", "bif_mean", "server"), ("seed001-fig-06", "p_a", "matched")):
        # without --packets the bytes in flight are each flow's mean, not the seed's samples: partly
        if cov[item] != ("partly" if item == "seed000-fig-13" else "made"):
            pytest.fail(f"{item}: {cov[item]}")
        got = pl.read_csv(out / f"{item}.csv")
        want = []
        for d in res.values():
            f = pl.read_parquet(d / "flows.parquet").filter(pl.col("vantage") == vantage)
            want += [float(v) for v in f[column].drop_nulls().to_list() if np.isfinite(v)]
        assert sorted(got["value"].to_list()) == pytest.approx(sorted(want))
