"""Seed 004's MPTCP items (Figs. 4-7, Table II) from the committed instance tables of the lab's
conjunction campaign (tests/data/mptcp-conjunction, `hsrtcp mptcp` output): every figure's
data is checked against the table it is drawn from, and the tables against the applications'
own byte counts and the definitions (S4 eqs. 1-2, M31)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.figures import build

ROOT = Path(__file__).resolve().parents[3]
STUDY = ROOT / "tests" / "data" / "study"
CONJ = ROOT / "tests" / "data" / "mptcp-conjunction"
ITEMS = ("seed004-table-II", "seed004-fig-04", "seed004-fig-05", "seed004-fig-06", "seed004-fig-07", "seed001-fig-12",
         "seed004-fig-01", "seed004-fig-08", "seed003-fig-08")
CLASSES = ("positive", "semi-positive", "negative")


def _t(name: str, d: Path = CONJ) -> pl.DataFrame:
    return pl.read_parquet(d / f"mptcp_{name}.parquet")


@pytest.fixture(scope="module")
def gallery(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mptcp_items") / "g"
    # a directory of hsrtcp mptcp tables alone is a RESULTS directory of the gallery
    assert main(["figures", str(STUDY), str(CONJ), "-o", str(out), "-q", "--only", ",".join(ITEMS)]) == 0
    return out


def _status(out: Path) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in (out / "coverage.md").read_text().splitlines():
        if line.startswith("| seed"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = (cells[2], cells[4])
    return rows


def _csv(out: Path, item: str) -> pl.DataFrame:
    return pl.read_csv(out / f"{item}.csv", schema_overrides={"result": pl.String, "instance": pl.String})


def test_tables_against_the_applications_and_the_definitions():
    """The committed R_n are the single-path clients' own byte counts over the instance (the
    application read them; the tables come from the server capture), and U_c, U_t and the
    classes follow from the per-carrier rates by S4 eqs. 1-2 and M31."""
    inst, paths = _t("instances"), _t("paths")
    assert inst.height >= 4 and inst["u_c"].null_count() == 0
    checked = 0
    for r in inst.iter_rows(named=True):
        client = json.loads((CONJ / "client" / f"{r['instance']}.json").read_text())
        p = paths.filter(pl.col("instance") == r["instance"])
        for flow in client:
            if flow["role"] != "single_path":
                continue
            rate = p.filter(pl.col("path") == flow["path"])["rate_single_path_bps"][0]
            assert rate * r["duration_s"] / 8 == pytest.approx(flow["bytes"], rel=0.02), (r["instance"], flow["path"])
            checked += 1
        r_sub, r_single = p["rate_subflow_bps"].fill_null(0.0), p["rate_single_path_bps"]
        assert r["u_c"] == pytest.approx(r_sub.sum() / r_single.max(), rel=1e-9)
        assert r["u_t"] == pytest.approx(r_sub.sum() / r_single.sum(), rel=1e-9)
        want = ("negative" if r["u_c"] < 1 else "positive" if r["u_t"] > r["barrier"] else "semi-positive")
        assert r["instance_class"] == want
    assert checked == 2 * inst.height


def test_fig_4_is_u_c_of_every_instance(gallery):
    status, missing = _status(gallery)["seed004-fig-04"]
    inst = _t("instances")
    got = _csv(gallery, "seed004-fig-04").sort("instance")
    assert got["instance"].to_list() == sorted(inst["instance"].to_list())
    want = dict(zip(inst["instance"].to_list(), inst["u_c"].to_list()))
    assert np.allclose(got["u_c"].to_numpy(), [want[i] for i in got["instance"].to_list()])
    # the lab's scenario is a 300-km/h trip on carriers M and U: one violin, the rest missing
    assert set(got["combination"]) == {"(M, U)"} and set(got["mobility"]) == {"high-speed 280-310 km/h"}
    assert status == "partly" and "static" in missing and "(M, T)" in missing
    seeds = (gallery / "seeds.md").read_text()
    u = inst["u_c"].to_numpy()
    assert (f"median U_c {np.median(u):.3g} (range {u.min():.3g}-{u.max():.3g}), "
            f"P(U_c > 1) = {int((u > 1).sum())}/{u.size}") in seeds


def test_fig_5_points_are_the_instances_and_their_subflows(gallery):
    inst, paths = _t("instances"), _t("paths")
    got = _csv(gallery, "seed004-fig-05")
    for r in inst.iter_rows(named=True):
        mine = got.filter(pl.col("instance") == r["instance"])
        assert set(mine["class"]) == {r["instance_class"]}
        v = dict(zip(mine["quantity"].to_list(), mine["value"].to_list()))
        assert v["U_c"] == pytest.approx(r["u_c"]) and v["U_t"] == pytest.approx(r["u_t"])
        for path, carrier in ((1, "M"), (2, "U")):  # scenarios/two-carriers.toml: path 1 = M, 2 = U
            want = paths.filter((pl.col("instance") == r["instance"]) & (pl.col("path") == path))["subflow_utilization"][0]
            assert v[f"R'/R of {carrier}"] == pytest.approx(want)
    assert list(dict.fromkeys(got["quantity"].to_list())) == ["U_c", "U_t", "R'/R of M", "R'/R of U"]
    status, missing = _status(gallery)["seed004-fig-05"]
    present = set(inst["instance_class"].to_list())
    assert status == ("made" if present == set(CLASSES) else "partly"), missing
    seeds = (gallery / "seeds.md").read_text()
    for c in CLASSES:
        k = inst.filter(pl.col("instance_class") == c).height
        assert f"- lab: {c}: {k}/{inst.height} (" in seeds


def test_fig_6_panels_are_the_rates_of_one_instance_per_class(gallery):
    inst, paths, rates = _t("instances"), _t("paths"), _t("rates")
    got = _csv(gallery, "seed004-fig-06")
    panels = [p for p in dict.fromkeys(got["panel"].to_list()) if not p.startswith("(d)")]
    assert panels == [c for c in CLASSES if c in set(inst["instance_class"].to_list())]
    degraded = paths.filter(pl.col("degraded").fill_null(False))
    for p in panels:
        part = got.filter(pl.col("panel") == p)
        (name,) = set(part["instance"])
        r = inst.filter(pl.col("instance") == name).row(0, named=True)
        assert r["instance_class"] == p
        # the class's instance whose subflow degraded first, when one did (as the seed's examples)
        mine = degraded.join(inst.filter(pl.col("instance_class") == p).select("instance"), on="instance")
        if mine.height:
            assert name == mine.sort("degradation_onset_s", "instance")["instance"][0]
        want = rates.filter(pl.col("instance") == name)
        assert part.height == want.height
        for (role, path), w in want.group_by("role", "path"):
            line = f"{'MU'[path - 1]}-subflow" if role == "subflow" else f"{'MU'[path - 1]} single path"
            g = part.filter(pl.col("line") == line).sort("t_s")
            assert g["t_s"].to_list() == w.sort("t")["t"].cast(pl.Float64).to_list()
            assert np.allclose(g["value"].to_numpy(), w.sort("t")["rate_bps"].to_numpy())
    d = got.filter(pl.col("panel").str.starts_with("(d)")).sort("instance", "line")
    assert d.height == degraded.height
    assert sorted(d["t_s"].to_list()) == sorted(float(x) for x in degraded["degradation_onset_s"].to_list())


def test_fig_7_is_k_t_of_the_negative_instance(gallery):
    inst, kt = _t("instances"), _t("kt")
    got = _csv(gallery, "seed004-fig-07")
    (name,) = set(got["instance"])
    cls = inst.filter(pl.col("instance") == name)["instance_class"][0]
    assert cls == ("negative" if "negative" in set(inst["instance_class"].to_list()) else cls)
    want = kt.filter((pl.col("instance") == name) & pl.col("k_t").is_not_null()).sort("flow_id", "loss2_s")
    g = got.sort("flow_id", "loss2_s")
    assert g.height == want.height > 0
    assert np.allclose(g["k_t"].to_numpy(), want["k_t"].to_numpy())
    assert np.allclose(g["k_t_literal"].to_numpy(), want["k_t_literal"].to_numpy(), equal_nan=True)
    status, missing = _status(gallery)["seed004-fig-07"]
    assert status == "partly" and "LIA" in missing  # (a) needs coupled LIA, not in upstream Linux


def test_table_2_counts_the_flows_and_bytes_of_each_data_set(gallery):
    inst, paths = _t("instances"), _t("paths")
    got = _csv(gallery, "seed004-table-II")
    rows = {r["dataset"]: r for r in got.iter_rows(named=True)}
    assert set(rows) == {"M-S", "U-S", "MU-D"}
    assert rows["MU-D"]["flows"] == inst.height
    assert rows["MU-D"]["size_GB"] == pytest.approx((inst["rate_mptcp_bps"] * inst["duration_s"]).sum() / 8e9, rel=1e-3)
    for path, name in ((1, "M-S"), (2, "U-S")):
        p = paths.filter(pl.col("path") == path).join(inst.select("instance", "duration_s"), on="instance")
        assert rows[name]["flows"] == p.height
        assert rows[name]["size_GB"] == pytest.approx((p["rate_single_path_bps"] * p["duration_s"]).sum() / 8e9, rel=1e-3)


def test_seed_001_fig_12_pairs_mptcp_with_each_carriers_tcp(gallery):
    """Seed 001 Fig. 12 from the instances: the MPTCP rate beside each carrier's concurrent
    single-path rate, and per carrier the gain of the means."""
    inst, paths = _t("instances"), _t("paths")
    got = _csv(gallery, "seed001-fig-12")
    assert _status(gallery)["seed001-fig-12"][0] == "made"
    assert got.height == 2 * paths.height
    rate = dict(zip(inst["instance"].to_list(), inst["rate_mptcp_bps"].to_list()))
    for path, carrier in ((1, "M"), (2, "U")):
        p = paths.filter(pl.col("path") == path).sort("instance")
        g = got.filter(pl.col("carrier") == carrier).sort("instance")
        tcp = g.filter(pl.col("series") == "TCP on the carrier")
        mp = g.filter(pl.col("series").str.starts_with("MPTCP"))
        assert tcp["instance"].to_list() == p["instance"].to_list() == mp["instance"].to_list()
        assert np.allclose(tcp["value"].to_numpy(), p["rate_single_path_bps"].to_numpy())
        assert np.allclose(mp["value"].to_numpy(), [rate[i] for i in p["instance"].to_list()])
        gain = 100 * (mp["value"].mean() / tcp["value"].mean() - 1)
        assert f"(means over {p.height} instances): {gain:+.1f} %" in (gallery / "seeds.md").read_text()


def _log(name: str) -> pl.DataFrame:
    """A context table kept beside the instance tables (hsrtcp analyze of the same runs)."""
    return pl.read_parquet(CONJ / f"{name}.parquet")


def test_the_logs_handoffs_are_their_cell_changes():
    """handoffs.parquet beside the instance tables is every change of (RAT, cell) between a
    carrier's consecutive samples in radio.parquet, counted here from the rows."""
    radio, hand = _log("radio"), _log("handoffs")
    assert set(radio["run_id"]) == set(_t("instances")["instance"])
    for (run, carrier), part in radio.sort("ts").group_by("run_id", "carrier"):
        cells = list(zip(part["rat"].to_list(), part["cid"].to_list()))
        changes = [part["ts"][i] for i in range(1, len(cells)) if cells[i] != cells[i - 1]]
        h = hand.filter((pl.col("run_id") == run) & (pl.col("carrier") == carrier)).sort("ts")
        assert h["ts"].to_list() == pytest.approx(changes), (run, carrier)
        inter = [i for i in range(1, len(cells)) if cells[i] != cells[i - 1] and cells[i][0] != cells[i - 1][0]]
        assert int((h["system"] == "inter").sum()) == len(inter)


def test_fig_8_is_one_instance_without_degradation_beside_its_logs(gallery):
    inst, paths, rates = _t("instances"), _t("paths"), _t("rates")
    radio, hand = _log("radio"), _log("handoffs")
    got = _csv(gallery, "seed004-fig-08")
    (name,) = set(got["instance"])
    # the instance of highest U_c among those whose two subflows carried data and none degraded
    fine = paths.group_by("instance").agg((~pl.col("degraded").fill_null(False) & (pl.col("rate_subflow_bps") > 0))
                                          .all().alias("fine")).filter("fine")
    assert name == inst.join(fine, on="instance").sort("u_c", descending=True)["instance"][0]
    r = inst.filter(pl.col("instance") == name).row(0, named=True)
    t0, end = r["t0"], r["t0"] + r["duration_s"]
    sub = rates.filter((pl.col("instance") == name) & (pl.col("role") == "subflow"))
    for path, carrier in ((1, "M"), (2, "U")):
        g = got.filter((pl.col("panel") == "(a) rate") & (pl.col("line") == f"{carrier}-subflow")).sort("t_s")
        w = sub.filter(pl.col("path") == path).sort("t")
        assert g["t_s"].to_list() == w["t"].cast(pl.Float64).to_list()
        assert np.allclose(g["value"].to_numpy(), w["rate_bps"].to_numpy())
        log = radio.filter((pl.col("run_id") == name) & (pl.col("carrier") == carrier)
                           & (pl.col("ts") >= t0) & (pl.col("ts") <= end)).sort("ts")
        rsrp = got.filter((pl.col("panel") == "(c) RSRP") & (pl.col("line") == carrier)).sort("t_s")
        assert rsrp["t_s"].to_numpy() == pytest.approx((log["ts"] - t0).to_numpy())
        assert np.allclose(rsrp["value"].to_numpy(), log["rsrp_dbm"].cast(pl.Float64).to_numpy(), equal_nan=True)
        lte = got.filter((pl.col("panel") == "(b) on LTE") & (pl.col("line") == carrier)).sort("t_s")
        assert lte["value"].to_list() == [1.0 if x == "LTE" else 0.0 for x in log["rat"].to_list()]
        h = hand.filter((pl.col("run_id") == name) & (pl.col("carrier") == carrier) & (pl.col("ts") >= t0)
                        & (pl.col("ts") <= end))
        marks = got.filter((pl.col("panel") == "(a) handoff") & pl.col("line").str.starts_with(f"{carrier} "))
        assert sorted(marks["t_s"].to_list()) == pytest.approx(sorted((h["ts"] - t0).to_list()))
    total = got.filter((pl.col("panel") == "(a) rate") & (pl.col("line") == "MPTCP")).sort("t_s")
    per_t = sub.group_by("t").agg(pl.col("rate_bps").sum()).sort("t")
    assert np.allclose(total["value"].to_numpy(), per_t["rate_bps"].to_numpy())
    assert _status(gallery)["seed004-fig-08"][0] == "made"


def test_fig_1_draws_a_conjunction_runs_two_carriers(gallery):
    radio, cov = _log("radio"), _log("coverage")
    got = _csv(gallery, "seed004-fig-01")
    (run,) = set(got["run_id"])
    log = radio.filter(pl.col("run_id") == run)
    assert sorted(zip(got["carrier"], got["ts"], got["rat"])) == sorted(zip(log["carrier"], log["ts"], log["rat"]))
    text = (gallery / "seeds.md").read_text()
    for x in cov.filter(pl.col("run_id") == run).iter_rows(named=True):
        who = "either carrier" if x["carrier"] == "*" else f"carrier {x['carrier']}"
        assert f"LTE coverage, {who}: {100 * x['lte_coverage']:.4g} % of {x['total_s']:.1f} s" in text
    # the seed's four panels: LTE coverage, RSRP, RSRQ, handoffs (each carrier's cell changes)
    mine = got.sort("carrier", "ts")
    want = log.sort("carrier", "ts")
    assert np.allclose(mine["rsrq_db"].to_numpy(), want["rsrq_db"].cast(pl.Float64).to_numpy(), equal_nan=True)
    assert np.allclose(mine["rsrp_dbm"].to_numpy(), want["rsrp_dbm"].cast(pl.Float64).to_numpy(), equal_nan=True)
    hand = _log("handoffs").filter(pl.col("run_id") == run)
    for c in ("M", "U"):
        assert f"carrier {c}: {hand.filter(pl.col('carrier') == c).height} handoffs" in text
    assert _status(gallery)["seed004-fig-01"][0] == "made"


def test_seed_003_fig_8_single_path_across_inter_system_handoffs(gallery):
    """The study's flows crossed no inter-system handoff; the conjunction runs' single-path
    flows on carrier U did (its hole is EDGE): one flow's per-second rate with those handoffs,
    and every flow's mean rate per RAT, each second given the RAT of the carrier's last sample."""
    import bisect

    inst, rates, radio, hand = _t("instances"), _t("rates"), _log("radio"), _log("handoffs")
    got = _csv(gallery, "seed003-fig-08")
    assert _status(gallery)["seed003-fig-08"][0] == "made"
    inter = hand.filter(pl.col("system") == "inter")
    name = sorted(set(inter["run_id"]))[0]
    t0 = inst.filter(pl.col("instance") == name)["t0"][0]
    rate = got.filter(pl.col("kind") == "rate").sort("t_s")
    want = rates.filter((pl.col("instance") == name) & (pl.col("role") == "single_path") & (pl.col("path") == 2)).sort("t")
    assert set(rate["instance"]) == {name} and set(rate["carrier"]) == {"U"}
    assert np.allclose(rate["value"].to_numpy(), want["rate_bps"].to_numpy())
    marks = got.filter(pl.col("kind") == "inter-system handoff")["t_s"].to_list()
    assert marks == pytest.approx((inter.filter(pl.col("run_id") == name)["ts"] - t0).to_list())
    sums: dict[str, list[float]] = {}
    for r in inst.iter_rows(named=True):
        if inter.filter((pl.col("run_id") == r["instance"]) & (pl.col("carrier") == "U")).is_empty():
            continue
        log = radio.filter((pl.col("run_id") == r["instance"]) & (pl.col("carrier") == "U")).sort("ts")
        ts, rats = log["ts"].to_list(), log["rat"].to_list()
        per: dict[str, list[float]] = {}
        for t, v in zip(*rates.filter((pl.col("instance") == r["instance"]) & (pl.col("role") == "single_path")
                                      & (pl.col("path") == 2)).sort("t").select("t", "rate_bps").to_dict().values()):
            i = bisect.bisect_right(ts, r["t0"] + t) - 1
            if i >= 0:
                per.setdefault(rats[i], []).append(v)
        for rat, v in per.items():
            sums.setdefault(rat, []).append(float(np.mean(v)))
    text = (gallery / "seeds.md").read_text()
    from hsrtcp.figures.draw import fmt

    for rat, means in sums.items():
        assert f"on {rat}: mean {fmt(float(np.mean(means)), 'bit/s')} per second over {len(means)} flows" in text


def _subset(tmp_path: Path, keep: list[str]) -> Path:
    """The committed tables of the instances ``keep`` only, written as hsrtcp mptcp writes them."""
    from hsrtcp.mptcp.metrics import write

    d = tmp_path / "sub"
    write({t: _t(t).filter(pl.col("instance").is_in(keep)) for t in ("instances", "paths", "kt", "rates")}, d)
    return d


def test_a_class_without_an_instance_is_partly(tmp_path):
    inst = _t("instances").sort("instance")
    one = inst.row(0, named=True)
    g = build(STUDY, [_subset(tmp_path, [one["instance"]])], only=["seed004-fig-05", "seed004-fig-06"])
    by = {o.item.id: o for o in g.outcomes}
    others = " or ".join(c for c in CLASSES if c != one["instance_class"])
    assert by["seed004-fig-05"].status == "partly"
    assert by["seed004-fig-05"].made.gaps == [f"no {others} instance among the 1"]
    assert by["seed004-fig-06"].made.gaps == [f"no {others} instance to draw"]
    assert set(by["seed004-fig-06"].made.data["instance"]) == {one["instance"]}


def test_without_instance_tables_the_items_say_which(tmp_path, capsys):
    g = build(STUDY, [], only=["seed004-fig-04", "seed004-table-II"])
    by = {o.item.id: o for o in g.outcomes}
    assert by["seed004-fig-04"].status == "not made"
    assert by["seed004-fig-04"].missing.startswith("mptcp_instances.parquet of RESULTS (hsrtcp mptcp RUNS -o DIR")
    # Table II falls back on the study's single-path flows and says what it lacks
    assert by["seed004-table-II"].status == "partly"
    assert "mptcp_instances.parquet of RESULTS" in by["seed004-table-II"].made.gaps[0]
    # a damaged instance table is an input error naming the file (exit 3)
    bad = tmp_path / "bad"
    shutil.copytree(CONJ, bad)
    (bad / "mptcp_paths.parquet").write_bytes(b"not parquet")
    assert main(["figures", str(STUDY), str(bad), "-o", str(tmp_path / "g"), "--only", "seed004-fig-05"]) == 3
    assert "mptcp_paths.parquet" in capsys.readouterr().err


def test_a_gallery_is_never_written_among_instance_tables(tmp_path, capsys):
    d = tmp_path / "conj"
    shutil.copytree(CONJ, d)
    before = sorted(p.name for p in d.iterdir())
    assert main(["figures", str(STUDY), "-o", str(d), "--only", "seed004-fig-04"]) == 2
    assert "holds hsrtcp tables (mptcp_instances.parquet)" in capsys.readouterr().err
    assert sorted(p.name for p in d.iterdir()) == before

