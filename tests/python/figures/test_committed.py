"""The gallery of the committed lab campaign (tests/data/study, docs/study.md run H):
docs/seeds.md is what `hsrtcp figures` writes from it, its coverage.md says what is made and
what is missing, and every made item's data is the study table it comes from."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.figures import build
from hsrtcp.figures.inputs import SEED000_CLASSES
from hsrtcp.figures.items import ITEMS

ROOT = Path(__file__).resolve().parents[3]
STUDY = ROOT / "tests" / "data" / "study"


@pytest.fixture(scope="module")
def gallery(committed) -> Path:
    return committed[0]


def _study(name: str) -> pl.DataFrame:
    return pl.read_parquet(STUDY / f"{name}.parquet")


def _coverage(gallery: Path) -> dict[str, dict[str, str]]:
    rows = {}
    for line in (gallery / "coverage.md").read_text().splitlines():
        m = re.match(r"^\| (seed\S+) \| (.*?) \| (made|partly|not made|drawing) \| (.*?) \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = {"status": m.group(3), "files": m.group(4), "missing": m.group(5)}
    return rows


def test_docs_seeds_md_is_the_generated_one(gallery):
    generated = (gallery / "seeds.md").read_text(encoding="utf-8")
    committed = (ROOT / "docs" / "seeds.md").read_text(encoding="utf-8")
    assert committed == generated, "docs/seeds.md is stale: run python -m hsrtcp.figures.committed"


def test_coverage_of_the_committed_campaign(gallery):
    cov = _coverage(gallery)
    assert list(cov) == [i.id for i in ITEMS]  # every item once, in the registry's order
    # what the campaign has: 4G only, one carrier, no class below 150 km/h; RESULTS: the
    # committed captures (a 300-km/h lab run, two netns pairs, MPTCP without single-path flows)
    # and the conjunction campaign's MPTCP instance tables
    assert cov["seed000-table-VII"]["status"] == "partly"
    assert "4G only" in cov["seed000-table-VII"]["missing"]
    assert cov["seed000-table-III"]["status"] == "not made"
    assert "no 3G flow" in cov["seed000-table-III"]["missing"]
    assert cov["seed000-fig-01"]["status"] == "partly"
    assert "b: < 150 km/h" in cov["seed000-fig-01"]["missing"]
    for item in ("seed000-fig-04", "seed000-fig-05", "seed000-fig-09", "seed000-fig-13", "seed001-fig-01",
                 "seed001-fig-02", "seed001-fig-06"):
        assert cov[item]["status"] == "made", (item, cov[item])
    assert cov["seed000-fig-08"]["status"] == "made"  # the committed run of a standing train
    assert cov["seed001-fig-10"]["status"] == "partly"
    # MPTCP: seed 004's instances from the committed conjunction tables (no static or low-speed
    # instance, no LIA); seed 001 Fig. 12 from the same instances
    assert cov["seed001-fig-12"]["status"] == "made"
    for item in ("seed004-fig-04", "seed004-fig-07"):
        assert cov[item]["status"] == "partly", (item, cov[item])
    assert "no instance in: static" in cov["seed004-fig-04"]["missing"]
    assert "LIA" in cov["seed004-fig-07"]["missing"]
    # the study's flows crossed no inter-system handoff: drawn from the conjunction runs instead
    assert cov["seed003-fig-08"]["status"] == "made"
    assert cov["seed000-fig-06"]["status"] == "drawing"
    assert cov["seed000-fig-12"]["status"] == "made"
    for item, row in cov.items():
        if row["status"] in ("made", "partly"):
            for f in row["files"].split(", "):
                assert (gallery / f).is_file(), f
            assert f"{item}.csv" in row["files"]
        else:
            assert row["files"] == "" and row["missing"], item
    # docs/seeds.md counts the same statuses
    letters = {"made": "Y", "partly": "P", "not made": "N", "drawing": "–"}
    doc = (ROOT / "docs" / "seeds.md").read_text()
    for item, row in cov.items():
        assert re.search(rf"^\| {re.escape(item)} \| .* \| {letters[row['status']]} \|$", doc, re.M), item


@pytest.mark.parametrize(("item", "table", "metrics"), [
    ("seed000-table-VII", "spurious_rto", ["spurious_rto_rate"]),
    ("seed000-table-VIII", "spurious_rto", ["rtoei_share", "ackl_share"]),
    ("seed000-table-IX", "dupack", ["dupack_rate"]),
])
def test_seed_tables_are_the_study_cells(gallery, item, table, metrics):
    got = pl.read_csv(gallery / f"{item}.csv")
    want = _study(table).filter(pl.col("metric").is_in(metrics) & (pl.col("flow_class") != "all"))
    cols = ["flow_class", "metric", "n_flows", "n", "value", "value_lo", "value_hi"]
    a = got.select(cols).sort("flow_class", "metric")
    b = want.select(cols).sort("flow_class", "metric")
    assert a.height == b.height > 0
    for c in cols:
        if b[c].dtype == pl.Float64:
            assert np.allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=1e-12, equal_nan=True), c
        else:
            assert a[c].to_list() == b[c].to_list(), c
    md = (gallery / f"{item}.md").read_text()
    v = want.filter(pl.col("flow_class") == "high_1_16")["value"][0]
    assert f"{100 * v:.3g} %" in md


def test_failure_figure_is_the_study_failure_table(gallery):
    got = pl.read_csv(gallery / "seed000-fig-12.csv")
    want = _study("failure").filter(pl.col("flow_class") != "all")
    key = ["flow_class", "workload"]
    j = got.join(want, on=key, suffix="_s")
    assert j.height == want.height == got.height
    for c in ("value", "value_lo", "value_hi", "n_flows"):
        assert j[c].to_list() == j[f"{c}_s"].to_list()


# (item, column, workload, grouping, groups)
PER_FLOW = [
    ("seed000-fig-01", "p_d", "duration", "flow_class", list(SEED000_CLASSES)),
    ("seed000-fig-02", "rtt_mean_s", "duration", "flow_class", list(SEED000_CLASSES)),
    ("seed000-fig-03", "throughput_mean_bps", "duration", "flow_class", list(SEED000_CLASSES)),
    ("seed000-fig-10", "establishment_s", "50KB", "flow_class", list(SEED000_CLASSES)),
    ("seed000-fig-11", "closure_s", "50KB", "flow_class", list(SEED000_CLASSES)),
    ("seed003-fig-07", "throughput_mean_bps", None, "signal_s3", ["good", "average", "weak", "bad"]),
]


@pytest.mark.parametrize(("item", "column", "workload", "group", "groups"), PER_FLOW)
def test_per_flow_figures_are_the_study_flows(gallery, item, column, workload, group, groups):
    got = pl.read_csv(gallery / f"{item}.csv", schema_overrides={"flow_id": pl.UInt64}, infer_schema_length=None)
    flows = _study("study_flows")
    want = flows.filter(pl.col(column).is_not_null() & pl.col(column).is_finite())
    if workload:
        want = want.filter(pl.col("workload") == workload)
    if group:
        want = want.filter(pl.col(group).is_in(groups))
    assert sorted(zip(got["result"], got["flow_id"])) == sorted(zip(want["result"], want["flow_id"]))
    j = got.join(want.select("result", "flow_id", column), on=["result", "flow_id"])
    assert np.array_equal(j["value"].to_numpy(), j[column].cast(pl.Float64).to_numpy())


def test_the_drawn_curves_are_the_csv(gallery):
    # the figure's step curves hold exactly the CSV's values, group by group
    g = build(STUDY, only=["seed000-fig-02"])
    made = g.outcomes[0].made
    data = pl.read_csv(gallery / "seed000-fig-02.csv")
    lines = {ln.get_gid(): ln for ln in made.figure.axes[0].lines}
    for name in data["group"].unique():
        x = lines[f"cdf-{name}"].get_xdata()[1:]  # the first point is the curve's foot
        v = np.sort(data.filter(pl.col("group") == name)["value"].to_numpy()) * 1000  # ms on the axis
        assert np.allclose(x, v)


def test_seed001_fig3_is_p_d_and_q(gallery):
    got = pl.read_csv(gallery / "seed001-fig-03.csv")
    flows = _study("study_flows")
    for col, prefix in (("p_d", "p_d"), ("q", "q")):
        want = flows[col].drop_nulls()
        part = got.filter(pl.col("group").str.starts_with(prefix + ":"))
        assert sorted(part["value"].to_list()) == sorted(want.filter(want.is_finite()).to_list())


def test_table_iv_counts_the_study_flows(gallery):
    got = pl.read_csv(gallery / "seed000-table-IV.csv")
    flows = _study("study_flows")
    assert got["flows"].sum() == flows.height
    n = flows.filter((pl.col("scenario") == "study-static") & (pl.col("workload") == "50KB")).height
    assert got.filter((pl.col("scenario") == "study-static") & (pl.col("workload") == "50KB"))["flows"][0] == n
    assert got["u_rate"].to_list() == [1.0] * got.height  # every lab flow is classed (A2)
