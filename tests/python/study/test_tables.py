"""Each study table on hand-made results with answers worked out by hand (handmade.py)."""

from __future__ import annotations

import re

import polars as pl
import pytest

import hsrtcp
from hsrtcp.errors import InputError
from hsrtcp.study import groups

from . import handmade as hm

STATIC, HIGH0, HIGH_1_8, HIGH_9_16 = range(1, 6), range(6, 11), range(11, 14), range(14, 16)


def _results(d):
    """17 server-side flows: 5 static (run A, 50 KB objects), 5 high_0 (run C, duration
    flows), 3 high_1_8 + 2 high_9_16 (run B, 2 MB objects), flow 16 without a context row,
    flow 17 classed 'other'."""
    rows, ctx = [], []
    for i in range(1, 18):
        r = {"flow_id": i, "dupack_rate": i / 100, "spurious_rto_rate": i / 50, "rtt_mean": 0.01 * i,
             "establishment_s": 0.1 * i, "closure_s": 1.0 * i}
        if i in STATIC:
            r["goodput_bytes"] = 50_100                       # all of the 50 KB object (+ the answer line)
        if i in HIGH0:
            r["interrupted"] = i == 7                         # size unknown: the engine's verdict
        if i >= 11 and i <= 15:
            r["goodput_bytes"] = {11: 2_000_100, 12: 1000, 13: 2_000_100, 14: 2_000_100, 15: 500}[i]
            r["spurious_timeouts_ack_loss"] = {11: 1, 12: 0, 13: 0, 14: 1, 15: 0}[i]
            r["spurious_timeouts_rto_estimation"] = {11: 1, 12: 2, 13: 3, 14: 1, 15: 3}[i]
            r["spurious_timeouts_2v"] = r["spurious_timeouts_ack_loss"] + r["spurious_timeouts_rto_estimation"]
            r["rto_sequences"] = 4
            r["q"] = 0.2 * (i - 10)
            r["p_d"] = 0.01
        rows.append(r)
        cls = ("static" if i in STATIC else "high_0" if i in HIGH0 else "high_1_8" if i in HIGH_1_8
               else "high_9_16" if i in HIGH_9_16 else "other")
        run = "A" if i in STATIC else "C" if i in HIGH0 else "B"
        if i != 16:
            ctx.append({"flow_id": i, "run_id": run, "carrier": "M", "flow_class": cls,
                        "class_reason": "rat change" if cls == "other" else None})
    series = []
    for i in STATIC:                                          # rates i Mbit/s, then 0 over a half bin
        series += [(i, 0, 125_000 * i, 1.0), (i, 1, 0, 0.5)]
    events = []
    for fid, durations in {11: [2.0, 4.0], 12: [6.0], 14: [8.0]}.items():
        events += [{"flow_id": fid, "kind": "timeout_sequence", "class": "recovered", "ts": 1.0, "duration_s": x}
                   for x in durations]
    events.append({"flow_id": 13, "kind": "timeout_sequence", "class": "unfinished", "ts": 1.0, "duration_s": 100.0})
    events.append({"flow_id": 13, "kind": "retransmission", "class": "rto", "ts": 1.0, "duration_s": None})
    labels = pl.DataFrame({"run_id": ["A", "B", "C"], "scenario": ["s", "h", "n"], "cc": ["cubic"] * 3,
                           "flow_type": ["sequence", "sequence", "duration"],
                           "flow_size_bytes": [50_000, 2_000_000, None]},
                          schema_overrides={"flow_size_bytes": pl.Int64})
    suspensions = pl.DataFrame({"flow_id": [11, 11, 12, 13, 14, 15], "carrier": ["M"] * 6,
                                "handoff_ts": [1.0] * 6, "suspension_s": [0.0, 12.0, 3.0, 25.0, 0.0, 1.0],
                                "stalled": [False, True, True, True, False, False]},
                               schema_overrides={"flow_id": pl.UInt64})
    handoffs = pl.DataFrame({"carrier": ["M"] * 8, "ts": list(range(8)), "run_id": ["B"] * 5 + ["C"] * 3,
                             "interval_s": [None, 5.0, 15.0, 8.0, 12.0, None, 2.0, 30.0]})
    coverage = pl.DataFrame({"carrier": ["M", "*"], "lte_s": [80.0, 95.0], "total_s": [100.0, 100.0],
                             "lte_coverage": [0.8, 0.95]})
    return hm.write(d, flows=hm.flows(rows), series=hm.series(series), events=hm.events(events),
                    context=hm.context(ctx), labels=labels, suspensions=suspensions, handoffs=handoffs,
                    coverage=coverage)


def _cell(df: pl.DataFrame, cls: str, metric: str, **by) -> dict:
    f = df.filter((pl.col("flow_class") == cls) & (pl.col("metric") == metric))
    for k, v in by.items():
        f = f.filter(pl.col(k) == v)
    assert f.height == 1, f
    return f.row(0, named=True)


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    return _results(tmp_path_factory.mktemp("hand") / "r")


@pytest.fixture(scope="module")
def s5(res):
    return hsrtcp.study(res, min_flows=5, bootstrap=200, seed=1)


def test_classes_and_u_rate(s5):
    c = {r["flow_class"]: r for r in s5.classes.iter_rows(named=True)}
    assert {k: v["n_flows"] for k, v in c.items()} == {
        "static": 5, "high_0": 5, "high_1_16": 5, "high_1_8": 3, "high_9_16": 2, "other": 1, "unknown": 1, "all": 17}
    assert c["high_1_16"]["share"] == pytest.approx(5 / 17)
    assert c["unknown"]["reasons"] == "no context row for this flow (1)"
    assert c["other"]["reasons"] == "rat change (1)"
    assert list(c) == ["static", "high_0", "high_1_16", "high_1_8", "high_9_16", "other", "unknown", "all"]
    u = _cell(s5.u_rate, "all", "u_rate")
    assert u["value"] == pytest.approx(15 / 17) and u["n_flows"] == 17


def test_table_vii_viii_ix_means_over_flows_and_pooled_causes(s5):
    for table, metric, scale in (("dupack", "dupack_rate", 100), ("spurious_rto", "spurious_rto_rate", 50)):
        t = s5.tables[table]
        assert _cell(t, "static", metric)["value"] == pytest.approx(3 / scale)        # flows 1..5
        assert _cell(t, "high_0", metric)["value"] == pytest.approx(8 / scale)        # flows 6..10
        union = _cell(t, "high_1_16", metric)                                         # flows 11..15
        assert union["value"] == pytest.approx(13 / scale) and union["median"] == pytest.approx(13 / scale)
        assert union["value_lo"] <= union["value"] <= union["value_hi"]
        assert _cell(t, "high_1_8", metric)["note"] == "3 flows < --min-flows 5"
        assert _cell(t, "high_1_8", metric)["value"] is None
        assert _cell(t, "all", metric)["value"] == pytest.approx(9 / scale)           # flows 1..17
    ackl = _cell(s5.spurious_rto, "high_1_16", "ackl_share")
    rtoei = _cell(s5.spurious_rto, "high_1_16", "rtoei_share")
    assert ackl["value"] == pytest.approx(2 / 12) and rtoei["value"] == pytest.approx(10 / 12)
    assert ackl["n"] == 12 and ackl["n_flows"] == 5
    share_2v = _cell(s5.spurious_rto, "high_1_16", "spurious_timeout_share_2v")
    assert share_2v["value"] == pytest.approx(12 / 20) and share_2v["n"] == 20
    assert _cell(s5.spurious_rto, "static", "ackl_share")["note"] == "none of the 5 flows has a value"


def test_handshake_times(s5):
    est = _cell(s5.handshake, "high_1_16", "establishment_s")
    assert est["value"] == pytest.approx(1.3) and est["n_flows"] == 5
    assert _cell(s5.handshake, "static", "closure_s")["value"] == pytest.approx(3.0)


def test_failure_rate_uses_the_object_size_when_known(s5):
    f = s5.failure
    assert _cell(f, "high_1_16", "failure_rate", workload="2MB")["value"] == pytest.approx(2 / 5)
    assert _cell(f, "static", "failure_rate", workload="50KB")["value"] == 0.0
    assert _cell(f, "high_0", "failure_rate", workload="duration")["value"] == pytest.approx(1 / 5)


def test_throughput_pooled_samples_use_bin_s(s5):
    t = _cell(s5.performance, "static", "throughput_bps")
    # samples i Mbit/s and 0 for i = 1..5: mean 1.5 Mbit/s, median between 0 and 1 Mbit/s
    assert t["value"] == pytest.approx(1.5e6) and t["n"] == 10 and t["n_flows"] == 5
    assert t["median"] == pytest.approx(0.5e6)
    assert _cell(s5.performance, "static", "throughput_zero_share")["value"] == pytest.approx(0.5)
    # per flow: 125000 i bytes over 1.5 s
    assert _cell(s5.performance, "static", "throughput_flow_mean_bps")["value"] == pytest.approx(3 * 1e6 / 1.5)
    samples = s5.throughput_samples.filter(pl.col("flow_id") == 2).sort("bin")
    assert samples["throughput_bps"].to_list() == [2e6, 0.0]
    assert samples["flow_class"].to_list() == ["static", "static"]


def test_rtt_and_loss(s5):
    assert _cell(s5.performance, "static", "rtt_mean_s")["value"] == pytest.approx(0.03)
    assert _cell(s5.performance, "high_1_16", "p_d")["value"] == pytest.approx(0.01)


def test_timeout_recovery_pools_finished_phases(res):
    s = hsrtcp.study(res, min_flows=3, bootstrap=100)
    tr = s.timeout_recovery
    phases = _cell(tr, "high_1_16", "timeout_recovery_s")
    assert phases["value"] == pytest.approx(5.0) and phases["n"] == 4 and phases["n_flows"] == 3
    assert _cell(tr, "high_1_16", "q")["value"] == pytest.approx(0.6)   # 0.2, 0.4, ..., 1.0
    assert _cell(hsrtcp.study(res, min_flows=5, bootstrap=0).timeout_recovery,
                 "high_1_16", "timeout_recovery_s")["note"] == "3 flows < --min-flows 5"


def test_suspensions_and_handoff_intervals(res):
    s = hsrtcp.study(res, min_flows=2, bootstrap=100)
    assert _cell(s.suspensions, "high_1_16", "suspension_s")["value"] == pytest.approx(41 / 6)
    assert _cell(s.suspensions, "high_1_16", "suspension_gt_10s_share")["value"] == pytest.approx(2 / 6)
    assert _cell(s.suspensions, "high_1_16", "suspension_zero_share")["value"] == pytest.approx(2 / 6)
    assert _cell(s.suspensions, "high_1_16", "suspension_stalled_share")["value"] == pytest.approx(3 / 6)
    h = s.handoff_intervals.filter(pl.col("carrier") == "M")
    iv = h.filter(pl.col("metric") == "handoff_interval_s").row(0, named=True)
    assert iv["value"] == pytest.approx(12.0) and iv["n"] == 6 and iv["n_flows"] == 2
    le10 = h.filter(pl.col("metric") == "handoff_interval_le_10s_share").row(0, named=True)
    assert le10["value"] == pytest.approx(0.5)


def test_by_labels_and_context_columns(res):
    s = hsrtcp.study(res, by="scenario,carrier", min_flows=1, bootstrap=0)
    t = s.dupack
    assert _cell(t, "static", "dupack_rate", scenario="s", carrier="M")["value"] == pytest.approx(0.03)
    assert _cell(t, "high_1_16", "dupack_rate", scenario="h", carrier="M")["value"] == pytest.approx(0.13)
    # handoff intervals carry the labels of their run
    h = s.handoff_intervals.filter((pl.col("metric") == "handoff_interval_s") & (pl.col("scenario") == "n"))
    assert h["value"].to_list() == [pytest.approx(16.0)]
    with pytest.raises(ValueError, match="--by nosuch: no such column"):
        hsrtcp.study(res, by="nosuch")
    # a flows column works as a dimension too
    assert "data_dir" in hsrtcp.study(res, by="data_dir", bootstrap=0).dupack.columns


def test_coverage_per_result_and_pooled(tmp_path, res):
    other = _results(tmp_path / "r2")
    pl.DataFrame({"carrier": ["M", "*"], "lte_s": [40.0, 60.0], "total_s": [100.0, 100.0],
                  "lte_coverage": [0.4, 0.6]}).write_parquet(other / "coverage.parquet")
    cov = hsrtcp.study([res, other], bootstrap=0).coverage
    pooled = {r["carrier"]: r["lte_coverage"] for r in cov.filter(pl.col("result").is_null()).iter_rows(named=True)}
    assert pooled == {"M": pytest.approx(0.6), "*": pytest.approx(0.775)}
    assert cov.filter(pl.col("result").is_not_null()).height == 4


def test_many_results_as_one(tmp_path, res):
    other = _results(tmp_path / "again")
    s = hsrtcp.study([res, other], min_flows=5, bootstrap=0)
    assert s.study_flows.height == 34           # flow ids repeat across directories: keyed by result
    c = _cell(s.dupack, "high_1_16", "dupack_rate")
    assert c["n_flows"] == 10 and c["value"] == pytest.approx(0.13)


def test_matched_connection_counted_once_with_the_phone_series(tmp_path):
    flows = hm.flows([
        {"flow_id": 0, "vantage": "client", "goodput_bytes": 2_000_100, "establishment_s": 0.05},
        {"flow_id": 1, "vantage": "server", "goodput_bytes": 1_000_000, "establishment_s": 0.1, "dupack_rate": 0.1},
        {"flow_id": 10, "vantage": "matched", "client_flow_id": 0, "server_flow_id": 1, "goodput_bytes": 1_000_000,
         "establishment_s": 0.1, "establishment_time_s": 0.2, "dupack_rate": 0.1, "p_d": 0.02},
        {"flow_id": 2, "vantage": "server", "dupack_rate": 0.3, "establishment_s": 0.4},
    ])
    series = hm.series([(0, 0, 1000), (0, 1, 0), (1, 0, 5000), (1, 1, 5000), (2, 0, 250)])
    d = hm.write(tmp_path / "m", flows=flows, series=series)
    s = hsrtcp.study(d, min_flows=1, bootstrap=0)
    f = s.study_flows.sort("flow_id")
    assert f["flow_id"].to_list() == [2, 10]
    assert f["throughput_vantage"].to_list() == ["server", "client"]
    assert f["establishment_s"].to_list() == [pytest.approx(0.4), pytest.approx(0.2)]   # A9 two-vantage time
    assert f["acked_bytes"].to_list() == [None, 2_000_100]                             # the phone's ACKs
    tp = s.throughput_samples.filter(pl.col("flow_id") == 10).sort("bin")["throughput_bps"].to_list()
    assert tp == [8000.0, 0.0]                                                          # phone row 0, not server row 1
    assert "series without bin_s" in " ".join(s.notes)


def test_no_context_classes_everything_unknown_with_a_reason(tmp_path):
    d = hm.write(tmp_path / "nc", flows=hm.flows([{"flow_id": i, "dupack_rate": 0.1} for i in range(6)]))
    s = hsrtcp.study(d, bootstrap=0)
    assert set(s.study_flows["flow_class"]) == {"unknown"}
    assert set(s.study_flows["class_reason"]) == {groups.NO_CONTEXT_REASON}
    assert any("no context.parquet" in n for n in s.notes)
    assert _cell(s.dupack, "unknown", "dupack_rate")["value"] == pytest.approx(0.1)
    assert _cell(s.dupack, "static", "dupack_rate")["note"] == "no flows"


@pytest.mark.parametrize("damage, message", [
    ("no_series", "series.parquet is missing"),
    ("old_flows", "without the column(s) dupack_rate"),
    ("corrupt_events", "events.parquet: cannot read as Parquet: not a readable Parquet file"),
    ("old_context", "context table without the column(s) flow_class"),
    ("missing_dir", "no such results directory"),
])
def test_bad_input_names_the_file(tmp_path, damage, message):
    d = hm.write(tmp_path / "bad", flows=hm.flows([{"flow_id": 1}]))
    if damage == "no_series":
        (d / "series.parquet").unlink()
    elif damage == "old_flows":
        hm.flows([{"flow_id": 1}]).drop("dupack_rate").write_parquet(d / "flows.parquet")
    elif damage == "corrupt_events":
        (d / "events.parquet").write_bytes(b"PAR1 this is not parquet")
    elif damage == "old_context":
        pl.DataFrame({"flow_id": [1], "speed_class": ["static"]}).write_parquet(d / "context.parquet")
    elif damage == "missing_dir":
        d = tmp_path / "nowhere"
    with pytest.raises(InputError, match=re.escape(message)) as info:
        hsrtcp.study(d)
    assert str(d) in str(info.value)


def test_labels_join_on_input_id_when_context_has_it(tmp_path):
    # two inputs analyzed together (no run ids: field pairs): context names each flow's input
    flows = hm.flows([{"flow_id": i, "dupack_rate": 0.1 * i} for i in (1, 2, 3)])
    ctx = hm.context([{"flow_id": i, "flow_class": "static"} for i in (1, 2, 3)]).with_columns(
        pl.Series("input_id", [0, 1, 1], dtype=pl.Int64))
    labels = pl.DataFrame({"input_id": [0, 1], "run_id": [None, None], "site": ["BJ", "TJ"]},
                          schema_overrides={"run_id": pl.String})
    d = hm.write(tmp_path / "two", flows=flows, context=ctx, labels=labels)
    s = hsrtcp.study(d, by="site", min_flows=1, bootstrap=0)
    assert dict(s.study_flows.select("flow_id", "site").iter_rows()) == {1: "BJ", 2: "TJ", 3: "TJ"}
    assert _cell(s.dupack, "static", "dupack_rate", site="TJ")["value"] == pytest.approx(0.25)


def test_results_without_any_flow(tmp_path):
    d = hm.write(tmp_path / "empty", flows=hm.flows([]).head(0))
    s = hsrtcp.study(d)
    assert s.study_flows.height == 0
    assert s.dupack["note"].to_list() == ["no flows"] * 3          # the seed's three classes
    assert "study: 0 flows from 1 results directories" in s.summary()


def test_the_computed_columns_are_declared(res):
    """Every column the study adds to a flow's row after context and labels is in
    groups.COMPUTED (so a labels column of that name is kept aside, never overwritten)."""
    from hsrtcp.study import flow_frame, groups, load
    from hsrtcp.study.connections import connections
    r = load.read([res])
    attached = groups.attach_context(connections(r.flows, r.one_result), r)
    frame, _, _ = flow_frame(r, [])
    assert set(frame.columns) - set(attached.columns) <= set(groups.COMPUTED)


@pytest.mark.parametrize("name", ["tput_samples", "failed_value", "bin", "value", "workload"])
def test_a_labels_column_named_like_the_studys_own(tmp_path, res, name):
    """A labels column named like a column the study writes or computes: the tables are those of
    the same results without it, it is a dimension as labels.<name>, and --by <name> is refused
    (workload, the study's own dimension, is the computed one) -- it used to crash (polars
    DuplicateError, a float conversion of the label) or write a table with the label lost."""
    d = _results(tmp_path / "r")
    lab = pl.read_parquet(d / "labels.parquet")
    lab.with_columns(pl.Series(name, ["x", "y", "z"])).write_parquet(d / "labels.parquet")
    plain, odd = hsrtcp.study(res, bootstrap=0), hsrtcp.study(d, bootstrap=0)
    for t in ("performance", "spurious_rto", "dupack", "timeout_recovery", "suspensions", "throughput_samples"):
        assert odd.tables[t].drop("result", strict=False).equals(plain.tables[t].drop("result", strict=False)), t
    dims = hsrtcp.study(d, by=f"labels.{name}", bootstrap=0).dupack
    assert set(dims[f"labels.{name}"].drop_nulls()) == {"x", "y", "z"}
    if name == "workload":
        assert "workload" in hsrtcp.study(d, by="workload", bootstrap=0).dupack.columns
    else:
        with pytest.raises(ValueError, match=f"--by {name}: a column the study writes itself"):
            hsrtcp.study(d, by=name, bootstrap=0)
