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


# (item, study table, its rows drawn, the key of a bar)
BARS = [
    ("seed000-fig-12", "failure", pl.col("flow_class") != "all", ["flow_class", "workload"]),
    ("seed003-fig-12", "suspensions", (pl.col("metric") == "suspension_gt_10s_share")
     & pl.col("flow_class").is_in(["high_0", "high_1_8", "high_9_16", "high_1_16"]), ["flow_class", "metric"]),
]


@pytest.mark.parametrize(("item", "table", "rows", "key"), BARS)
def test_bar_figures_are_the_study_cells(item, table, rows, key):
    # from the study alone: with RESULTS, seed 003 Fig. 12 is one flow's sequence numbers
    (o,) = build(STUDY, only=[item]).outcomes
    got = o.made.data
    want = _study(table).filter(rows)
    j = got.join(want, on=key, suffix="_s")
    assert j.height == want.height == got.height > 0
    for c in ("value", "value_lo", "value_hi", "n_flows", "n"):
        if c in want.columns:
            assert j[c].to_list() == j[f"{c}_s"].to_list(), c


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


#: a flow's speed band from its speed samples, written out here (not hsrtcp.context.classes):
#: static <= 5 km/h; every sample in (5, 150) km/h (seed 000's class b, seed 003's driving);
#: every sample in [280, 310] km/h
SPEED_BANDS = {"static": pl.col("speed_max_kmh") <= 5,
               "0-150": (pl.col("speed_min_kmh") > 5) & (pl.col("speed_max_kmh") < 150),
               "280-310": (pl.col("speed_min_kmh") >= 280) & (pl.col("speed_max_kmh") <= 310)}


def _by_speed_band(flows: pl.DataFrame) -> pl.DataFrame:
    band = pl.when(SPEED_BANDS["static"]).then(pl.lit("static"))
    for name in ("0-150", "280-310"):
        band = band.when(SPEED_BANDS[name]).then(pl.lit(name))
    return flows.with_columns(band.otherwise(pl.lit("other")).alias("speed_band"))


@pytest.mark.parametrize(("item", "column"), [("seed003-fig-02", "throughput_mean_bps"),
                                              ("seed003-fig-03", "rtt_mean_s"),
                                              ("seed003-fig-06", "rsrp_mean_dbm")])
def test_speed_figures_are_the_study_flows_by_their_speed_samples(gallery, item, column):
    got = pl.read_csv(gallery / f"{item}.csv", schema_overrides={"flow_id": pl.UInt64}, infer_schema_length=None)
    flows = _by_speed_band(_study("study_flows").filter(pl.col(column).cast(pl.Float64).is_finite()))
    want = flows.filter(pl.col("speed_band") != "other").select(
        "result", "flow_id", "speed_band", pl.col(column).cast(pl.Float64).alias("value"))
    key = ["result", "flow_id", "speed_band"]
    assert want.height > 0
    assert sorted(got.select(key).rows()) == sorted(want.select(key).rows())
    j = got.join(want, on=key, suffix="_w")
    assert np.array_equal(j["value"].to_numpy(), j["value_w"].to_numpy())


@pytest.mark.parametrize(("item", "key"), [
    ("seed000-table-II", ["scenario", "speed_band"]), ("seed004-table-I", ["scenario", "speed_band"]),
    ("seed000-table-IV", ["scenario", "carrier", "workload"]), ("seed001-table-I", ["scenario", "workload"]),
    ("seed003-table-I", ["scenario", "speed_band"]),
])
def test_data_set_tables_count_the_study_flows(gallery, item, key):
    got = pl.read_csv(gallery / f"{item}.csv")
    f = _by_speed_band(_study("study_flows"))
    aggs = {"flows": pl.len(), "runs": pl.col("result").n_unique(),
            "flow_hours": pl.col("duration_s").sum() / 3600, "flow_minutes": pl.col("duration_s").sum() / 60,
            "acked_GB": pl.col("acked_bytes").cast(pl.Float64).sum() / 1e9,
            "u_rate": pl.col("usable").cast(pl.Float64).mean(), "speed_kmh": pl.col("speed_mean_kmh").mean()}
    measured = [c for c in got.columns if c not in key]
    assert measured and set(measured) <= set(aggs), measured
    want = f.group_by(key).agg(aggs[c].alias(c) for c in measured)
    j = got.join(want, on=key, suffix="_w")
    assert j.height == got.height == want.height
    for c in measured:
        assert np.allclose(j[c].cast(pl.Float64).to_numpy(), j[f"{c}_w"].cast(pl.Float64).to_numpy(), rtol=1e-12), c


def test_rto_bias_figure_is_the_senders_rows_of_the_results(committed):
    """Seed 000 Fig. 7: every finite rto_bias_mean of the RESULTS' server rows, by the seed's
    classes. The committed RESULTS' only value is ack_blackout's, a pair without a radio log:
    no class a-e has a flow, so the item is partly and names them."""
    gallery, dirs = committed
    got = pl.read_csv(gallery / "seed000-fig-07.csv")
    want = []
    for d in dirs.values():
        f = pl.read_parquet(d / "flows.parquet").filter(pl.col("vantage") == "server")
        want += [(str(d), v) for v in f["rto_bias_mean"].drop_nulls().to_list() if np.isfinite(v)]
    assert want and sorted(zip(got["result"], got["value"])) == sorted(want)
    row = _coverage(gallery)["seed000-fig-07"]
    assert row["status"] == "partly" and "no flow with rto_bias_mean in: a: static; b: " in row["missing"]


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
