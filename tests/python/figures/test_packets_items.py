"""Items drawn from the committed captures analyzed with --packets (the RESULTS of
docs/seeds.md): each figure's data is checked against the engine's own per-connection
columns of the same run, which the engine computes without the packets table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.cli import main

ROOT = Path(__file__).resolve().parents[3]
STUDY = ROOT / "tests" / "data" / "study"
U64 = {"flow_id": pl.UInt64}


def _csv(out: Path, item: str) -> pl.DataFrame:
    return pl.read_csv(out / f"{item}.csv", schema_overrides=U64, infer_schema_length=None)


def _flows(d: Path, vantage: str) -> pl.DataFrame:
    return pl.read_parquet(d / "flows.parquet").filter(pl.col("vantage") == vantage)


def _per_server_flow(got: pl.DataFrame, res: dict):
    """``(run, its server flow, the rows of got for that flow)`` of each committed single-path
    run; together they are every row (the MPTCP directory has no server capture)."""
    n = 0
    for name in ("lab_truth_run", "lab_static_run", "ack_blackout", "data_blackout"):
        server = _flows(res[name], "server").row(0, named=True)
        mine = got.filter((pl.col("result") == str(res[name])) & (pl.col("flow_id") == server["flow_id"]))
        n += mine.height
        yield name, server, mine
    assert n == got.height


def test_one_way_delays_agree_with_the_matcher(committed):
    out, res = committed
    got = _csv(out, "seed001-fig-01")
    assert (out / "seed001-fig-01.pdf").stat().st_size > 1000
    for name in ("lab_truth_run", "ack_blackout", "data_blackout"):
        m = _flows(res[name], "matched").row(0, named=True)
        mine = got.filter(pl.col("result") == str(res[name]))
        down = mine.filter(pl.col("group").str.starts_with("data"))["value"]
        up = mine.filter(pl.col("group").str.starts_with("ACKs"))["value"]
        # every data transmission and pure ACK that arrived, once (the matcher's verdicts, p_d and p_a)
        assert down.len() == m["data_packets_sent"] - m["lost_data_packets"], name
        assert up.len() == m["ack_packets_sent"] - m["lost_ack_packets"], name
        # the matcher's medians (clock drift applied there, not here: 0.5 ms over the lab run's 10 s)
        assert abs(down.median() - m["owd_down_median_s"]) < 5e-4, name
        assert abs(up.median() - m["owd_up_median_s"]) < 5e-4, name
        # the frames named are the packets rows of each capture
        pk = pl.read_parquet(res[name] / "packets.parquet")
        srv = pk.filter(pl.col("flow_id") == m["server_flow_id"]).select("frame", "ts")
        j = mine.select("frame_server", "ts_server").join(srv, left_on="frame_server", right_on="frame")
        assert j.height == mine.height and np.allclose(j["ts_server"], j["ts"], rtol=0, atol=1e-9)


def _example_window(out: Path, item: str, res_dir: Path) -> pl.DataFrame:
    """The rows of example ``item``: all of the run in ``res_dir``, and every packets row of
    its flow in the window it draws (same frames, same sequence numbers)."""
    got = _csv(out, item)
    assert set(got["result"]) == {str(res_dir)}
    pk = pl.read_parquet(res_dir / "packets.parquet").filter(pl.col("flow_id") == got["flow_id"][0])
    lo, hi = got["ts"].min(), got["ts"].max()
    want = pk.filter((pl.col("ts") >= lo) & (pl.col("ts") <= hi)).sort("frame")
    assert got["frame"].to_list() == want["frame"].to_list()
    assert got["seq"].to_list() == want["seq"].to_list()
    return got


def test_spurious_rto_example_is_the_packets_around_it(committed):
    out, res = committed
    got = _example_window(out, "seed000-fig-05", res["ack_blackout"])
    # the timeout's re-send is drawn, at the bytes the spurious timeout names
    ev = pl.read_parquet(res["ack_blackout"] / "events.parquet")
    sp = ev.filter((pl.col("kind") == "spurious_timeout") & pl.col("seq_start").is_not_null())
    rto = got.filter(pl.col("retrans") == "rto")
    assert rto.height == _flows(res["ack_blackout"], "server")["retrans_rto"][0] == 1
    assert rto["seq"][0] in sp["seq_start"].to_list()
    assert got["ts"].min() <= sp["ts"].min() <= got["ts"].max()


def test_timeout_recovery_example_holds_every_rto_resend(committed):
    out, res = committed
    got = _example_window(out, "seed001-fig-02", res["data_blackout"])
    server = _flows(res["data_blackout"], "server").row(0, named=True)
    assert got.filter(pl.col("retrans") == "rto").height == server["retrans_rto"] == 56
    seq = pl.read_parquet(res["data_blackout"] / "events.parquet").filter(pl.col("kind") == "timeout_sequence")
    assert got["ts"].min() < seq["ts"][0] and seq["ts_end"][0] < got["ts"].max()


def _windows_are_the_flows(out: Path, item: str, res_dir: Path) -> None:
    """SWND (data outstanding) and AWND per ACK of ``item``: their mean and extremes are the
    engine's bif_* / awnd_* of the run's server flow."""
    got = _csv(out, item)
    server = _flows(res_dir, "server").row(0, named=True)
    assert set(got["flow_id"]) == {server["flow_id"]}
    assert got["swnd_bytes"].max() == server["bif_max"]
    assert got["swnd_bytes"].mean() == pytest.approx(server["bif_mean"], rel=1e-12)
    assert got["awnd_bytes"].min() == server["awnd_min"] and got["awnd_bytes"].max() == server["awnd_max"]
    assert got["awnd_bytes"].mean() == pytest.approx(server["awnd_mean"], rel=1e-12)


def test_windows_at_each_ack_are_the_flows_columns(committed):
    out, res = committed
    _windows_are_the_flows(out, "seed000-fig-09", res["lab_truth_run"])


def test_static_windows_are_the_standing_runs_flow(committed):
    # seed000-fig-08 from the committed run of a standing train: its bundle says 0 km/h and no
    # handoff (radio.csv, events.csv, read here); SWND and AWND per ACK as for fig-09
    import csv

    out, res = committed
    bundle = ROOT / "tests" / "data" / "lab_static" / "run"
    with open(bundle / "radio.csv", newline="") as fh:
        assert {float(r["speed_kmh"]) for r in csv.DictReader(fh)} == {0.0}
    with open(bundle / "events.csv", newline="") as fh:
        assert not [r for r in csv.DictReader(fh) if r["kind"] == "handoff"]
    _windows_are_the_flows(out, "seed000-fig-08", res["lab_static_run"])


def test_bytes_in_flight_cdf_is_every_ack_of_the_server_flows(committed):
    out, res = committed
    for name, server, mine in _per_server_flow(_csv(out, "seed000-fig-13"), res):
        assert mine["value"].mean() == pytest.approx(server["bif_mean"], rel=1e-12), name
        assert mine["value"].max() == server["bif_max"], name


def test_model_figure_is_the_fit_of_the_study_flows(committed):
    out, _ = committed
    got = _csv(out, "seed001-fig-10")
    flows = pl.read_parquet(STUDY / "study_flows.parquet")
    j = got.join(flows.select("result", "flow_id", "throughput_mean_bps", "p_d", "flow_class"),
                 on=["result", "flow_id"])
    assert j.height == got.height
    # the measured throughput in packets of 1448 bytes (docs/models.md) and D of seed 001 eq. 22
    assert np.allclose(j["measured"], j["throughput_mean_bps"] / (8 * 1448), rtol=1e-12)
    assert np.allclose(j["d"], (j["predicted"] - j["measured"]).abs() / j["measured"], rtol=1e-9)
    # PFTK predicts every flow with data loss (no window limit in the lab): docs/models.md's n
    pftk = j.filter(pl.col("group").str.starts_with("PFTK"))
    assert pftk.height == flows.filter(pl.col("p_d") > 0).height == 326


def test_mptcp_against_tcp_needs_both_in_one_directory(tmp_path, committed):
    g0 = tmp_path / "g0"  # the MPTCP fixtures alone (the committed gallery also has the instance tables)
    assert main(["figures", str(STUDY), str(committed[1]["mptcp"]), "-o", str(g0), "-q", "--only",
                 "seed001-fig-12"]) == 0
    assert "no RESULTS directory holds both MPTCP connections and single-path TCP flows" in (
        g0 / "coverage.md").read_text()
    res = tmp_path / "mix"
    assert main(["analyze", "--vantage", "client", str(ROOT / "tests/data/mptcp/two_paths.client.pcap"),
                 str(ROOT / "tests/data/drops_cubic.client.pcap"), "-o", str(res), "-q"]) == 0
    g = tmp_path / "g"
    assert main(["figures", str(STUDY), str(res), "-o", str(g), "-q", "--only", "seed001-fig-12"]) == 0
    got = pl.read_csv(g / "seed001-fig-12.csv")
    m = pl.read_parquet(res / "mptcp.parquet").row(0, named=True)
    tcp = pl.read_parquet(res / "flows.parquet").filter(~pl.col("mptcp")).row(0, named=True)
    assert got.filter(pl.col("group") == "MPTCP")["value"].to_list() == pytest.approx(
        [m["data_bytes_down"] * 8 / (m["last_ts"] - m["first_ts"])])
    assert got.filter(pl.col("group") == "TCP")["value"].to_list() == pytest.approx(
        [tcp["goodput_bytes"] * 8 / tcp["duration_s"]])
    assert "| seed001-fig-12 | MPTCP against TCP throughput | made |" in (g / "coverage.md").read_text()
    # a directory whose mptcp.parquet is empty (every analyze writes one) has no MPTCP connection
    g2 = tmp_path / "g2"
    assert main(["figures", str(STUDY), str(committed[1]["ack_blackout"]), "-o", str(g2), "-q", "--only",
                 "seed001-fig-12"]) == 0
    assert "mptcp.parquet of RESULTS: no MPTCP connection in any RESULTS directory given" in (
        g2 / "coverage.md").read_text()


def test_model_figure_samples_a_large_study(tmp_path, monkeypatch):
    # above the cap the fit takes a seeded sample of the flows and says so (the report's 1 M flows)
    from hsrtcp.figures import build, items

    monkeypatch.setattr(items, "FIG10_MAX_FLOWS", 100)
    made = build(STUDY, only=["seed001-fig-10"]).outcomes[0].made
    assert "fitted to 100 of 700 flows drawn at random (seed 0)" in made.gaps
    assert made.data.select("result", "flow_id").unique().height <= 100
    again = build(STUDY, only=["seed001-fig-10"]).outcomes[0].made
    assert made.data.equals(again.data)


def test_signal_over_the_trip_is_the_bundles_radio_log(committed):
    # the witness is the bundle's own radio.csv and the scenario's handoffs (events.csv), read here
    import csv

    out, res = committed
    got = _csv(out, "seed003-fig-05")
    bundle = ROOT / "tests" / "data" / "lab_truth" / "run"
    with open(bundle / "radio.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert got["rsrp_dbm"].to_list() == [float(r["rsrp_dbm"]) for r in rows]
    assert got["cid"].to_list() == [int(r["cid"]) for r in rows]
    assert np.allclose(got["t_rel"], [float(r["ts"]) - float(rows[0]["ts"]) for r in rows], atol=1e-6)
    with open(bundle / "events.csv", newline="") as fh:
        truth = [r for r in csv.DictReader(fh) if r["kind"] == "handoff"]
    md = (out / "seeds.md").read_text()
    assert f"12 samples over 9.0 s, {len(truth)} handoffs" in md
    assert "time per RAT: LTE 100 %" in md


def test_rtt_jitter_is_the_senders_consecutive_samples(committed):
    out, res = committed
    for name, server, mine in _per_server_flow(_csv(out, "seed003-fig-04"), res):
        rtt = pl.read_parquet(res[name] / "rtt.parquet").filter(
            (pl.col("flow_id") == server["flow_id"]) & (pl.col("method") == "ack")
            & (pl.col("dir") == server["data_dir"])).sort("ts", maintain_order=True)
        want = np.abs(np.diff(rtt["rtt_s"].to_numpy()))
        assert np.allclose(np.sort(mine["value"].to_numpy()), np.sort(want), rtol=0, atol=1e-12), name
        # the lab runs: a 300-km/h trip and a standing train (their radio logs); the netns pairs have none
        want = {"lab_truth_run": {"280-310 km/h"}, "lab_static_run": {"static"}}.get(name, {"(no radio log)"})
        assert set(mine["group"]) == want


def test_suspension_example_is_the_phone_flow_with_the_most_suspended_time(committed):
    """Seed 003 Fig. 12: the phone-side flow of RESULTS with the most suspended time
    (suspensions.parquet), every packets row of it, and its suspended seconds in the text."""
    out, res = committed
    totals = []
    for d in res.values():
        if (d / "suspensions.parquet").is_file():
            for (fid,), g in pl.read_parquet(d / "suspensions.parquet").group_by(["flow_id"]):
                totals.append((g["suspension_s"].fill_null(0.0).sum(), g.height, d, fid))
    total, handoffs, d, fid = max(totals, key=lambda t: (t[0], t[1]))
    assert total > 0
    got = _csv(out, "seed003-fig-12")
    assert set(got["result"]) == {str(d)} and set(got["flow_id"]) == {fid}
    pk = pl.read_parquet(d / "packets.parquet").filter(pl.col("flow_id") == fid).sort("frame")
    assert got["frame"].to_list() == pk["frame"].to_list() and got["seq"].to_list() == pk["seq"].to_list()
    f = _flows(d, "client").filter(pl.col("flow_id") == fid).row(0, named=True)
    life = f["last_ts"] - f["first_ts"]
    assert f"{total:.2f} s suspended at {handoffs} handoff(s) in {life:.1f} s" in (out / "seeds.md").read_text()
