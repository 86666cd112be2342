"""radio.csv (docs/formats/radio.md) against events.csv and the trip."""

import math

import numpy as np
import polars as pl
import pytest

from hsrtcp.lab.scenario.compile import RADIO_COLUMNS


def test_schema_and_one_hertz_rows(compiled_examples):
    for name, cs in compiled_examples.items():
        radio = cs.radio()
        assert radio.columns == RADIO_COLUMNS
        assert radio["ts"].is_sorted()
        for c in radio["carrier"].unique().to_list():
            r = radio.filter(pl.col("carrier") == c)
            whole = r.filter((pl.col("ts") - pl.col("ts").round()).abs() < 1e-9)["ts"].to_list()
            assert whole == [float(k) for k in range(math.ceil(cs.duration_s))], name


def test_cid_changes_exactly_at_handoffs(compiled_examples):
    total = 0
    for name, cs in compiled_examples.items():
        radio, ev = cs.radio(), cs.events()
        for c in radio["carrier"].unique().to_list():
            r = radio.filter(pl.col("carrier") == c)
            cid = r["cid"].to_numpy()
            ch = np.nonzero(cid[1:] != cid[:-1])[0] + 1
            ts = r["ts"].to_numpy()
            got = [(round(float(ts[i]), 3), int(cid[i - 1]), int(cid[i])) for i in ch]
            h = ev.filter((pl.col("kind") == "handoff") & (pl.col("carrier") == c) & (pl.col("t_start") > 0))
            want = [(round(a, 3), int(b), int(cc)) for a, b, cc in zip(h["t_start"], h["from_cid"], h["to_cid"])]
            assert got == want, (name, c)
            total += len(want)
    assert total > 50


def test_signal_fields(compiled_examples):
    for name, cs in compiled_examples.items():
        radio = cs.radio()
        lte = radio.filter(pl.col("rat") == "LTE")
        assert lte["rsrp_dbm"].null_count() == 0
        assert lte["rsrp_dbm"].min() >= -140 and lte["rsrp_dbm"].max() <= -44
        assert lte["rsrq_db"].min() >= -19.5 and lte["rsrq_db"].max() <= -3
        other = radio.filter(pl.col("rat") != "LTE")
        assert other["rsrp_dbm"].null_count() == other.height  # missing is null, never a number
    edge = compiled_examples["coverage-hole"].radio().filter(pl.col("rat") == "EDGE")
    assert edge["ts"].min() == pytest.approx(60.0) and edge["ts"].max() == pytest.approx(188.0)


def test_positions_follow_speed(compiled_examples):
    cs = compiled_examples["bt-300kmh"]
    r = cs.radio().filter((pl.col("carrier") == "M") & ((pl.col("ts") - pl.col("ts").round()).abs() < 1e-9))
    lat, lon = np.radians(r["lat"].to_numpy()), np.radians(r["lon"].to_numpy())
    a = np.sin(np.diff(lat) / 2) ** 2 + np.cos(lat[:-1]) * np.cos(lat[1:]) * np.sin(np.diff(lon) / 2) ** 2
    dist = 2 * 6_371_000 * np.arcsin(np.sqrt(a))
    v = r["speed_kmh"].to_numpy() / 3.6
    expected = (v[1:] + v[:-1]) / 2
    assert np.abs(dist - expected).max() < 1.0  # metres per second of travel
    assert r["speed_kmh"][0] == 0.0 and r["speed_kmh"].max() == pytest.approx(300.0, abs=0.5)


def test_bandwidth_follows_signal(compiled_examples):
    cs = compiled_examples["bt-300kmh"]
    radio = cs.radio().filter((pl.col("rat") == "LTE") & ((pl.col("ts") - pl.col("ts").round()).abs() < 1e-9))
    tl = cs.timeline().filter((pl.col("direction") == "down") & ~pl.col("outage"))
    j = radio.join(tl, left_on="ts", right_on="t").filter(pl.col("bw_bps") > 0)
    # rank correlation: stronger signal, more capacity
    rho = np.corrcoef(j["rsrp_dbm"].rank().to_numpy(), j["bw_bps"].rank().to_numpy())[0, 1]
    assert j.height > 300 and rho > 0.5


def test_window_offset_shifts_everything(tmp_path, scenarios_dir):
    # a window starting inside the trip is the same trip seen from start_s: events shift by
    # start_s, and the radio log still changes cell exactly at the (shifted) handoffs
    from hsrtcp.lab import scenario as S

    sc = S.load(scenarios_dir / "bt-300kmh.toml")
    full = sc.with_overrides(duration_s=700).compile(tmp_path / "full")
    part = sc.with_overrides(start_s=400.25, duration_s=250).compile(tmp_path / "part")
    hf = full.events().filter((pl.col("kind") == "handoff") & pl.col("t_start").is_between(400.25, 650.25, closed="left"))
    hp = part.events().filter(pl.col("kind") == "handoff")
    assert hp.height == hf.height >= 3
    assert np.allclose(hp["t_start"].to_numpy(), hf["t_start"].to_numpy() - 400.25, atol=1e-9)
    assert hp["to_cid"].to_list() == hf["to_cid"].to_list()
    r = part.radio()
    cid = r["cid"].to_numpy()
    ch = np.nonzero(cid[1:] != cid[:-1])[0] + 1
    assert [round(float(r["ts"][int(i)]), 3) for i in ch] == [round(t, 3) for t in hp["t_start"].to_list()]
