"""[speed_channel] (lab/scenario/channel.py, docs/formats/scenario.md): loss, jitter, link
stalls and fades follow the train's speed. Checked on the compiled trace files read back
(CompiledScenario.segments) and events.csv — the files rattan replays — against the
formula and the seeds' anchors; no TCP involved."""

import json

import numpy as np
import polars as pl
import pytest

from hsrtcp.lab import scenario as S
from hsrtcp.lab.scenario.config import SPEED_CHANNEL_DEFAULTS as D

LINK = {"base_owd_ms": 30, "loss_down": 0.0075, "loss_up": 0.0066, "jitter_ms": 20}


def _sc(speed, seed=5, duration=120.0, **channel):
    return S.load({"scenario": {"name": f"sc{speed}", "seed": seed, "duration_s": duration},
                   "trip": {"speed_kmh": speed, "area": "farmland"},
                   "area_types": {"farmland": {"median_spacing_m": 1e6, "speed_limit_kmh": 450}},
                   "link": LINK, "speed_channel": channel})


def _background(cs, direction):
    """Loss values of the steps that no stall/fade/handoff touches (single-value chains)."""
    seg = cs.segments().filter(pl.col("direction") == direction)
    return {round(p[0], 6) for p in seg["loss_pattern"].to_list() if len(p) == 1}


@pytest.mark.parametrize("speed, s", [(0, 0.0), (100, (100 / 300) ** 2), (300, 1.0), (350, (350 / 300) ** 2)])
def test_background_loss_follows_speed(tmp_path, speed, s):
    cs = _sc(speed).compile(tmp_path)
    for d, static in (("down", D["loss_down_static"]), ("up", D["loss_up_static"])):
        want = round(static + (LINK[f"loss_{d}"] - static) * s, 6)
        assert _background(cs, d) == {want}, (speed, d)
    if speed == 100:  # T0-35: below 100 km/h only a slight effect
        assert _background(cs, "down") == {round(D["loss_down_static"] + 0.111111 * (0.0075 - 0.000818), 6)}


def test_standing_train_matches_the_seeds_stationary_values(tmp_path):
    """0 km/h: the stationary ACK loss of T1-12, no fade at all, stalls rare enough that
    >= 99.6 % of the time the RTT is base + jitter (T3-06), jitter <= 7.6 ms in >= 90 % (T3-07)."""
    shares, jit_ok = [], []
    for seed in range(10):
        cs = _sc(0, seed=seed, duration=300.0).compile(tmp_path / str(seed))
        ev = cs.events()
        assert ev.filter(pl.col("kind") == "loss_burst").is_empty()
        sp = ev.filter(pl.col("kind") == "stall")
        shares.append(float((sp["t_end"] - sp["t_start"]).sum()) / cs.duration_s)
        seg = cs.segments()
        rtt = []
        for d in ("down", "up"):
            g = seg.filter(pl.col("direction") == d)
            i = np.searchsorted(g["t_start"].to_numpy(), np.arange(0.5, 300.0, 1.0), "right") - 1
            rtt.append(g["delay_s"].to_numpy()[i])
        r = rtt[0] + rtt[1]
        jit_ok.append(float((np.abs(np.diff(r)) <= 0.0076).mean()))
    assert np.mean(shares) <= 0.004
    assert np.median(jit_ok) >= 0.90
    assert _background(cs, "up") == {D["loss_up_static"]}


def test_events_are_in_the_traces(tmp_path):
    """Every speed stall holds both directions (1 bit/s, as a held outage) for its whole
    window; every fade sets the fade chain in both directions."""
    cs = _sc(300, seed=11, duration=200.0).compile(tmp_path)
    ev = cs.events().filter(pl.col("detail").str.starts_with("speed"))
    assert ev["handoff_id"].null_count() == len(ev)
    stalls, fades = ev.filter(pl.col("kind") == "stall"), ev.filter(pl.col("kind") == "loss_burst")
    assert len(stalls) >= 5 and len(fades) >= 1  # rates 0.1 and 0.02 /s over 200 s
    seg = cs.segments()
    for r in stalls.iter_rows(named=True):
        for d in ("down", "up"):
            g = seg.filter((pl.col("direction") == d) & (pl.col("t_end") > r["t_start"] + 1e-9)
                           & (pl.col("t_start") < r["t_end"] - 1e-9))
            assert (g["bw_bps"] == 1).all(), (r, g)
            assert g["t_start"].min() <= r["t_start"] + 1e-9 and g["t_end"].max() >= r["t_end"] - 1e-9
    for r in fades.iter_rows(named=True):
        inside = seg.filter((pl.col("t_start") >= r["t_start"] - 1e-9) & (pl.col("t_end") <= r["t_end"] + 1e-9))
        assert len(inside) >= 2 and all(p == D["fade_pattern"] or b == 1 for p, b in
                                        zip(inside["loss_pattern"].to_list(), inside["bw_bps"].to_list()))


def test_a_shorter_window_keeps_the_earlier_events(tmp_path):
    long = _sc(300, seed=3, duration=200.0).compile(tmp_path / "a").events()
    short = _sc(300, seed=3, duration=100.0).compile(tmp_path / "b").events()
    cut = long.filter(pl.col("t_end") < 99.0)
    assert cut.equals(short.filter(pl.col("t_end") < 99.0))


def test_without_the_table_nothing_changes(tmp_path, scenarios_dir):
    """Scenarios without [speed_channel] have no such key in scenario.json and no speed events."""
    for name in ("smoke", "bt-300kmh", "urban-handoffs"):
        cs = S.load(scenarios_dir / f"{name}.toml").compile(tmp_path / name, duration=60.0)
        doc = json.loads(cs.scenario_json.read_text())
        assert "speed_channel" not in doc["params"]
        assert cs.events().filter(pl.col("detail").fill_null("").str.starts_with("speed")).is_empty()


def test_study_scenarios_share_one_channel(scenarios_dir):
    """The three study classes differ only by motion and handoffs (campaigns/study.toml)."""
    ps = [S.load(scenarios_dir / f"study-{n}.toml").params for n in ("static", "300-nohandoff", "300-handoffs")]
    assert all(p["speed_channel"] == ps[0]["speed_channel"] for p in ps)
    assert all(p["link"] == ps[0]["link"] for p in ps)


def test_bad_keys_are_named():
    with pytest.raises(S.ScenarioError, match=r"\[speed_channel\] unknown key 'fade_rate'"):
        S.load({"speed_channel": {"fade_rate": 1}})
    with pytest.raises(S.ScenarioError, match=r"\[speed_channel\] key 'exponent'"):
        S.load({"speed_channel": {"exponent": -1}})


CAP = {"down_bps_static": 1663400.0, "down_bps_ref": 1500000.0}  # T3-03/04, the study scenarios


@pytest.mark.parametrize("speed", [0, 100, 300])
def test_radio_limited_capacity_caps_the_signal_downlink(tmp_path, speed):
    """down_bps_static/_ref: every downlink step is min(signal model, X(v)); the uplink and
    everything else are the uncapped scenario's (same draws)."""
    def load(**channel):  # a strong site (as study-300-nohandoff), so the signal exceeds the cap
        return S.load({"scenario": {"name": "cap", "seed": 5, "duration_s": 120.0},
                       "trip": {"speed_kmh": speed, "area": "plain"},
                       "area_types": {"plain": {"median_spacing_m": 60000, "spacing_sigma": 0.05,
                                                "pingpong_p": 0.0, "site_offset_m": 150,
                                                "rsrp_ref_dbm": -50, "speed_limit_kmh": 450}},
                       "link": LINK, "speed_channel": channel})
    free = load().compile(tmp_path / "free").segments()
    capped = load(**CAP).compile(tmp_path / "cap").segments()
    s = (speed / 300) ** 2
    cap = CAP["down_bps_static"] + (CAP["down_bps_ref"] - CAP["down_bps_static"]) * s
    for d in ("down", "up"):
        f, c = free.filter(pl.col("direction") == d), capped.filter(pl.col("direction") == d)
        assert f.select("t_start", "t_end", "delay_s", "loss_pattern").equals(
            c.select("t_start", "t_end", "delay_s", "loss_pattern"))
        want = f["bw_bps"].to_numpy() if d == "up" else np.minimum(f["bw_bps"].to_numpy(), np.rint(cap))
        assert np.array_equal(c["bw_bps"].to_numpy(), want.astype(np.int64)), (speed, d)
    assert (capped.filter(pl.col("direction") == "down")["bw_bps"] == round(cap)).mean() > 0.5


def test_the_study_standing_train_is_radio_limited(tmp_path, scenarios_dir):
    """study-static: the downlink is T3-03's stationary 1663.4 kbit/s outside its stalls."""
    cs = S.load(scenarios_dir / "study-static.toml").compile(tmp_path, duration=60.0)
    down = cs.segments().filter((pl.col("direction") == "down") & (pl.col("bw_bps") > 1))
    assert set(down["bw_bps"].to_list()) == {1663400}


def test_capacity_keys_go_together():
    with pytest.raises(S.ScenarioError, match=r"\[speed_channel\].*'down_bps_static' and 'down_bps_ref'"):
        S.load({"speed_channel": {"down_bps_static": 1e6}})
