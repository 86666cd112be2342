"""`hsrtcp figures`: exit codes, and the items that the committed campaign cannot make but
other inputs can (two generations; RESULTS with handoff and suspension samples)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.cli import main
from hsrtcp.study import stats

from ..study import handmade as hm

ROOT = Path(__file__).resolve().parents[3]
STUDY = ROOT / "tests" / "data" / "study"


def test_not_a_study_directory_is_an_input_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["figures", str(tmp_path / "empty"), "-o", str(tmp_path / "g")]) == 3
    assert "study.json: missing" in capsys.readouterr().err
    assert main(["figures", str(tmp_path / "nosuch"), "-o", str(tmp_path / "g")]) == 3
    assert not (tmp_path / "g").exists()


def test_damaged_study_table_names_the_file(tmp_path, capsys):
    st = tmp_path / "st"
    shutil.copytree(STUDY, st)
    (st / "dupack.parquet").write_bytes(b"not parquet")
    assert main(["figures", str(st), "-o", str(tmp_path / "g"), "--only", "seed000-table-IX"]) == 3
    assert "dupack.parquet: not a readable Parquet table" in capsys.readouterr().err


def test_usage_errors(tmp_path, capsys):
    assert main(["figures", str(STUDY), "-o", str(tmp_path / "g"), "--only", "seed009-fig-01"]) == 2
    assert "unknown item seed009-fig-01" in capsys.readouterr().err
    st = tmp_path / "st"
    shutil.copytree(STUDY, st)
    before = sorted(p.name for p in st.iterdir())
    assert main(["figures", str(st), "-o", str(st)]) == 2  # never among the tables it reads
    assert sorted(p.name for p in st.iterdir()) == before


def test_list_names_every_item(capsys):
    assert main(["figures", str(STUDY), "-o", "unused", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 59 and out[0].startswith("seed000-table-I\t")


def test_two_generations_make_table_iii_and_the_comparison(tmp_path):
    # the committed campaign with every other flow moved to 3G (HSPA+)
    st = tmp_path / "st"
    shutil.copytree(STUDY, st)
    flows = pl.read_parquet(st / "study_flows.parquet").with_row_index("i")
    flows = flows.with_columns(pl.when(pl.col("i") % 2 == 0).then(pl.lit("HSPA+")).otherwise(pl.col("rats"))
                               .alias("rats")).drop("i")
    flows.write_parquet(st / "study_flows.parquet")
    out = tmp_path / "g"
    assert main(["figures", str(st), "-o", str(out), "-q", "--only",
                 "seed000-table-III,seed000-3g-vs-4g,seed000-table-VII"]) == 0
    t3 = pl.read_csv(out / "seed000-table-III.csv")
    assert t3["flows"].sum() == flows.filter(pl.col("rats") == "HSPA+").height == 350
    cmp = pl.read_csv(out / "seed000-3g-vs-4g.csv")
    row = cmp.filter((pl.col("metric") == "dupack_rate") & (pl.col("generation") == "3G")
                     & (pl.col("flow_class") == "high_1_16")).row(0, named=True)
    sel = flows.filter((pl.col("rats") == "HSPA+") & pl.col("flow_class").is_in(["high_1_8", "high_9_16"]))
    v = sel["dupack_rate"].drop_nulls().to_numpy()
    assert row["n_flows"] == v.size and np.isclose(row["value"], v.mean())
    assert row["value_lo"] < row["value"] < row["value_hi"]
    cov = (out / "coverage.md").read_text()
    assert "| seed000-table-VII | spurious RTO rate | made |" in cov  # two generations: no gap left


def test_results_give_the_handoff_and_suspension_cdfs(tmp_path):
    flows = hm.flows([{"flow_id": 1, "vantage": "server"}, {"flow_id": 2, "vantage": "server"}])
    ctx = hm.context([{"flow_id": 1, "run_id": "A", "carrier": "M", "handoffs": 3, "flow_class": "high_1_8"},
                      {"flow_id": 2, "run_id": "A", "carrier": "M", "handoffs": 0, "flow_class": "high_0"}])
    handoffs = pl.DataFrame({"carrier": ["M"] * 5, "ts": [0.0, 4.0, 16.0, 21.0, 50.0], "run_id": ["A"] * 5,
                             "interval_s": [None, 4.0, 12.0, 5.0, 29.0]})
    susp = pl.DataFrame({"flow_id": [1, 1, 1], "carrier": ["M"] * 3, "handoff_ts": [4.0, 16.0, 21.0],
                         "suspension_s": [0.5, 11.0, 0.0]}, schema_overrides={"flow_id": pl.UInt64})
    res = hm.write(tmp_path / "r", flows=flows, context=ctx, handoffs=handoffs, suspensions=susp)
    out = tmp_path / "g"
    assert main(["figures", str(STUDY), str(res), "-o", str(out), "-q", "--only",
                 "seed003-fig-10,seed003-fig-11,seed000-fig-07"]) == 0
    h = pl.read_csv(out / "seed003-fig-10.csv")
    assert sorted(h["value"].to_list()) == [4.0, 5.0, 12.0, 29.0]
    s = pl.read_csv(out / "seed003-fig-11.csv")
    assert sorted(s["value"].to_list()) == [0.0, 0.5, 11.0] and set(s["group"]) == {"high_1_8"}
    assert (out / "seed003-fig-10.pdf").is_file()
    cov = (out / "coverage.md").read_text()
    # 4 intervals against the study's 843: not the study's inputs, so its summary stays beside them
    assert "| seed003-fig-10 | CDF of the handoff interval | partly |" in cov
    assert "the CDF is of the 4 samples of the RESULTS given; the study counts 843" in cov
    # a column the results do not have is named
    assert "flows.parquet of RESULTS: no column rto_bias_mean" in cov


def test_interval_cells_follow_the_study_rule():
    # the gallery's per-flow cells use the study's bootstrap and its 5-flow rule
    from hsrtcp.figures.draw import group_cells

    df = pl.DataFrame({"group": ["a"] * 4 + ["b"] * 6, "value": [1.0, 2, 3, 4, 1, 2, 3, 4, 5, 6]})
    t, _ = group_cells(df, ["a", "b"], "s", "k")
    a, b = t.row(0, named=True), t.row(1, named=True)
    assert a["mean"] == 2.5 and a["mean_lo"] is None  # 4 flows: no interval
    assert b["mean"] == 3.5 and b["mean_lo"] < 3.5 < b["mean_hi"]
    assert stats.MIN_INTERVAL_FLOWS == 5


def test_an_item_without_a_value_is_not_made(tmp_path):
    """A study of one server capture without a radio log (one flow, class unknown, no p_d): the
    study's cells of the seeds' classes are all empty and p_d, q have no value. Those items are
    not made, saying why, instead of 'made' as a table or figure with nothing in it."""
    from .test_committed import _coverage

    res, st, out = tmp_path / "r", tmp_path / "s", tmp_path / "g"
    assert main(["analyze", str(ROOT / "tests" / "data" / "drops_cubic.server.pcap"), "--vantage", "server",
                 "-q", "--no-plot", "-o", str(res)]) == 0
    assert main(["study", str(res), "-o", str(st), "-q"]) == 0
    assert main(["figures", str(st), str(res), "-o", str(out), "-q"]) == 0
    cov = _coverage(out)
    for item in ("seed000-table-VII", "seed000-table-VIII", "seed000-table-IX", "seed000-fig-12", "seed003-fig-12"):
        assert cov[item]["status"] == "not made", (item, cov[item])
        assert "no value of" in cov[item]["missing"], item
        assert "the study's flows by class: 1 unknown (no radio log" in cov[item]["missing"], item
    assert cov["seed001-fig-03"]["status"] == "not made"
    assert cov["seed001-fig-03"]["missing"].startswith("(data) study_flows.p_d, study_flows.q: no finite value")
    for item, row in cov.items():  # whatever is made holds something
        if row["status"] in ("made", "partly"):
            data = pl.read_csv(out / f"{item}.csv")
            assert data.height > 0, item
            if "value" in data.columns:
                assert data["value"].drop_nulls().len() > 0, item


def test_bars_without_a_workload_draw_no_empty_legend(tmp_path):
    """A study of a run analyzed without campaign labels has no workload: seed 000 Fig. 12's bars
    have no hue to name, so no legend (matplotlib warned "No artists with labels" before)."""
    import warnings

    from hsrtcp.figures import build

    res, st = tmp_path / "r", tmp_path / "s"
    assert main(["analyze", str(ROOT / "tests" / "data" / "lab_truth" / "run"), "-q", "--no-plot", "-o", str(res)]) == 0
    assert main(["study", str(res), "-o", str(st), "-q"]) == 0
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="No artists with labels")
        (o,) = build(st, only=["seed000-fig-12"]).outcomes
    assert o.status == "made" and o.made.data["workload"].is_null().all()
    assert o.made.figure.axes[0].get_legend() is None
