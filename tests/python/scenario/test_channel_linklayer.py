"""Issue 35: bursty loss ([ge_loss], [handoff_episode]) and link-layer retransmission ([harq])
compiled into the rattan traces. The statistical checks read the compiled trace files back,
are seeded (deterministic) and use 4 standard errors of the estimator as tolerance."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hsrtcp.lab import scenario as S
from hsrtcp.lab.scenario.linklayer import ge_stationary, harq_draw
from hsrtcp.lab.scenario.traces import read_trace, self_check

REPO = Path(__file__).resolve().parents[3]


def _per_ms(path: Path) -> np.ndarray:
    """A trace expanded to one value per millisecond (loss: the first probability)."""
    runs = read_trace(path)
    vals = [v[0] if isinstance(v, tuple) else v for _, v in runs]
    return np.repeat(np.array(vals, dtype=float), [d for d, _ in runs])


def _standing(**tables) -> dict:
    # a standing train: no cell boundary is crossed, so no handoff touches the traces
    d = {"scenario": {"name": "ch", "seed": 35, "duration_s": 3000},
         "trip": {"speed_kmh": 0.0},
         "link": {"loss_down": 0.004, "loss_up": 0.004}}
    d.update(tables)
    return d


GE = {"slot_ms": 10, "p_gb": 0.01, "p_bg": 0.2, "loss_good": 0.001, "loss_bad": 0.3, "directions": ["up"]}


def _runs_of(mask: np.ndarray) -> np.ndarray:
    """Lengths of the runs of True in a boolean array."""
    e = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return np.flatnonzero(e == -1) - np.flatnonzero(e == 1)


def test_ge_stationary_loss_and_burst_length(tmp_path):
    cs = S.load(_standing(ge_loss=GE)).compile(tmp_path / "c")
    assert self_check(cs) == []
    up = _per_ms(cs.trace_file("loss", "up", 1))
    slot = GE["slot_ms"]
    assert len(up) == 3_000_000 and set(np.unique(up)) <= {GE["loss_good"], GE["loss_bad"]}
    bad = up[::slot] == GE["loss_bad"]            # one value per slot (state changes on the grid)
    assert np.array_equal(np.repeat(bad, slot), up == GE["loss_bad"])
    n = len(bad)
    pi_b, loss = ge_stationary(GE)
    lam = 1 - GE["p_gb"] - GE["p_bg"]
    # variance of a two-state Markov chain's sample mean: pi_b pi_g (1 + lam) / (1 - lam) / n
    se_frac = math.sqrt(pi_b * (1 - pi_b) * (1 + lam) / (1 - lam) / n)
    se_loss = (GE["loss_bad"] - GE["loss_good"]) * se_frac
    assert abs(up.mean() - loss) <= 4 * se_loss, (up.mean(), loss, se_loss)
    runs = _runs_of(bad)
    # bad runs are geometric(p_bg): mean 1/p_bg, variance (1 - p_bg)/p_bg^2
    mean_b = 1 / GE["p_bg"]
    se_b = math.sqrt((1 - GE["p_bg"]) / GE["p_bg"] ** 2 / len(runs))
    assert abs(runs.mean() - mean_b) <= 4 * se_b, (runs.mean(), mean_b, se_b)
    good = _runs_of(~bad)[1:-1]                  # first and last are cut by the window
    se_g = math.sqrt((1 - GE["p_gb"]) / GE["p_gb"] ** 2 / len(good))
    assert abs(good.mean() - 1 / GE["p_gb"]) <= 4 * se_g
    # the check has power: a burst length 25 % off is outside the tolerance
    assert abs(runs.mean() - 1.25 * mean_b) > 4 * se_b
    # the direction without [ge_loss] keeps the i.i.d. background loss
    assert set(np.unique(_per_ms(cs.trace_file("loss", "down", 1)))) == {0.004}


def test_ge_same_seed_same_trace_and_window_prefix(tmp_path):
    d = _standing(ge_loss=GE)
    a = S.load(d).compile(tmp_path / "a", duration=200)
    b = S.load(d).compile(tmp_path / "b", duration=100)
    la, lb = _per_ms(a.trace_file("loss", "up", 1)), _per_ms(b.trace_file("loss", "up", 1))
    # draws on trip time: a shorter window is a prefix of the longer one
    assert np.array_equal(la[:100_000], lb)
    c = S.load(d).compile(tmp_path / "c", duration=200)
    assert a.trace_file("loss", "up", 1).read_bytes() == c.trace_file("loss", "up", 1).read_bytes()


EP = {"before_s": 0.5, "after_s": 2.0, "slot_ms": 10, "p_gb": 0.1, "p_bg": 0.1, "loss_good": 0.05,
      "loss_bad": 0.8, "directions": ["down"]}


def test_handoff_episode_window_and_its_chain(tmp_path):
    times = [float(t) for t in range(10, 2000, 10)]
    d = _standing(handoff_episode=EP)
    d["scenario"]["duration_s"] = 2000
    d["trip"] = {"speed_kmh": 300.0}
    d["handoff"] = {"times_s": times, "outage_kind": "held", "burst_s": 0.0, "spike_p": 0.0}
    cs = S.load(d).compile(tmp_path / "c")
    assert self_check(cs) == []
    ev = cs.events()
    out = ev.filter(ev["kind"] == "outage").sort("t_start")
    ho = ev.filter(ev["kind"] == "handoff").sort("t_start")
    assert ho["t_start"].to_list() == times
    down = _per_ms(cs.trace_file("loss", "down", 1))
    inside = np.zeros(len(down), dtype=bool)
    ends = dict(zip(out["t_start"].to_list(), out["t_end"].to_list()))
    for h in times:
        a, b = int(round((h - EP["before_s"]) * 1000)), int(round((ends.get(h, h) + EP["after_s"]) * 1000))
        inside[a:min(b, len(down))] = True
    # outside the episodes the background; inside only the episode's two states
    assert set(np.unique(down[~inside])) == {0.004}
    assert set(np.unique(down[inside])) <= {EP["loss_good"], EP["loss_bad"]}
    # pooled over the episodes the bad share is the chain's pi_b (correlated slots: the
    # Markov variance, conservative since episodes are separate draws of the same chain)
    bad = down[inside][::EP["slot_ms"]] == EP["loss_bad"]
    pi_b, _ = ge_stationary(EP)
    lam = 1 - EP["p_gb"] - EP["p_bg"]
    se = math.sqrt(pi_b * (1 - pi_b) * (1 + lam) / (1 - lam) / len(bad))
    assert abs(bad.mean() - pi_b) <= 4 * se, (bad.mean(), pi_b, se)
    # the uplink is not in the episode's directions
    assert set(np.unique(_per_ms(cs.trace_file("loss", "up", 1)))) == {0.004}


HQ = {"rtt_ms": 8, "max_attempts": 4, "slot_ms": 1, "directions": ["up"]}


def test_harq_hides_loss_as_delay(tmp_path):
    q = 0.2
    d = _standing(harq=HQ)
    d["scenario"]["duration_s"] = 300
    d["link"] = {"loss_down": q, "loss_up": q, "base_owd_ms": 30.0}
    cs = S.load(d).compile(tmp_path / "c")
    assert self_check(cs) == []
    loss_up = _per_ms(cs.trace_file("loss", "up", 1))
    m = HQ["max_attempts"]
    # lost only after the last attempt: q^M per packet, everywhere
    assert np.allclose(loss_up, round(q ** m, 9))
    extra = _per_ms(cs.trace_file("delay", "up", 1)) - 30_000      # µs per ms of ingress time
    k = extra / (HQ["rtt_ms"] * 1000)
    assert np.array_equal(k, np.round(k)) and k.min() == 0 and k.max() <= m - 1
    n = len(k)
    for j in range(m):
        pj = q ** j * (1 - q) / (1 - q ** m)       # P(k = j | delivered)
        fj = float((k == j).mean())
        assert abs(fj - pj) <= 4 * math.sqrt(pj * (1 - pj) / n), (j, fj, pj)
    # the downlink (not in [harq] directions) keeps its loss and its delay
    assert set(np.unique(_per_ms(cs.trace_file("loss", "down", 1)))) == {q}
    assert set(np.unique(_per_ms(cs.trace_file("delay", "down", 1)))) == {30_000}


def test_harq_leaves_outages_and_bursts(tmp_path):
    d = _standing(harq={"directions": ["down", "up"]})
    d["scenario"]["duration_s"] = 200
    d["trip"] = {"speed_kmh": 300.0}
    d["handoff"] = {"count": 10, "outage_kind": "dropped", "burst_s": 1.0, "spike_p": 0.0}
    cs = S.load(d).compile(tmp_path / "c")
    assert self_check(cs) == []          # every dropped outage is loss 1.0 over its whole span
    seg = cs.segments()
    ev = cs.events()
    bursts = ev.filter(ev["kind"] == "loss_burst")
    assert len(bursts) == 10
    for r in bursts.iter_rows(named=True):
        s = seg.filter((seg["t_start"] >= r["t_start"] - 1e-9) & (seg["t_end"] <= r["t_end"] + 1e-9))
        assert len(s) and all(lp == S.resolve({})["handoff"]["burst_pattern"] for lp in s["loss_pattern"].to_list())
    # elsewhere the background 0.004 became 0.004^4 (2.6e-10, written rounded to 1e-9) and
    # 0.4 % of the milliseconds carry one HARQ round trip more
    bg = seg.filter(seg["loss_rate"] < 0.001)
    assert len(bg) and set(bg["loss_rate"].to_list()) == {round(0.004 ** 4, 9)}
    assert set((bg["delay_s"] - 0.030).round(6).to_list()) >= {0.0, 0.008}


def test_harq_draw_inverse_cdf():
    # exact quantiles of P(k | k < M): u just below/above each cumulative step
    q, m = 0.5, 3
    cdf = np.cumsum([q ** j * (1 - q) for j in range(m)]) / (1 - q ** m)
    u = np.concatenate([cdf - 1e-9, cdf[:-1] + 1e-9])
    k, r = harq_draw(np.full(len(u), q), u, m)
    assert k.tolist() == [0, 1, 2, 1, 2] and np.allclose(r, q ** m)
    k, r = harq_draw(np.array([0.0, 1.0]), np.array([0.7, 0.7]), m)
    assert k.tolist() == [0, 0] and r.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("table, key, value, said", [
    ("ge_loss", "p_gb", 0.0, "key 'p_gb' must be > 0.0"),
    ("ge_loss", "loss_bad", 1.5, "key 'loss_bad' must be <= 1.0"),
    ("harq", "max_attempts", 0, "key 'max_attempts' must be >= 1"),
    ("handoff_episode", "directions", ["sideways"], "key 'directions' must be a non-empty list"),
    ("harq", "rtt", 8, "unknown key 'rtt' (did you mean 'rtt_ms'?)"),
])
def test_bad_values_name_the_table_and_key(table, key, value, said):
    with pytest.raises(S.ScenarioError) as ei:
        S.resolve({table: {key: value}}, "x.toml")
    assert f"x.toml: [{table}]" in str(ei.value) and said in str(ei.value)


def test_v2_scenario_compiles_and_rattan_reads_it_the_same(tmp_path):
    from hsrtcp.lab.scenario.traces import check_against_rattan, rattan_binary

    cs = S.load(REPO / "scenarios" / "study-300-handoffs-v2.toml").compile(tmp_path / "v2", duration=30)
    assert self_check(cs) == []
    seg = cs.segments()
    # HARQ made delay vary by whole round trips above the base 10 ms + jitter
    assert seg.filter(seg["delay_s"] >= 0.010 + 0.008)["delay_s"].len() > 0
    if rattan_binary() is None:
        pytest.skip("rattan not installed (make rattan): the compiled files were checked without it")
    assert check_against_rattan(cs) == []


def test_rlc_hides_what_harq_lost_as_delay(tmp_path):
    # HARQ of 2 attempts at q = 0.5 leaves r = 0.25; RLC of 3 transmissions leaves r^3
    q, hq, rlc = 0.5, {"rtt_ms": 8, "max_attempts": 2, "slot_ms": 1, "directions": ["up"]}, \
        {"rtt_ms": 40, "max_attempts": 3}
    d = _standing(harq=hq, rlc=rlc)
    d["scenario"]["duration_s"] = 300
    d["link"] = {"loss_down": q, "loss_up": q, "base_owd_ms": 30.0}
    cs = S.load(d).compile(tmp_path / "c")
    assert self_check(cs) == []
    r = q ** hq["max_attempts"]
    assert np.allclose(_per_ms(cs.trace_file("loss", "up", 1)), round(r ** rlc["max_attempts"], 9))
    extra = (_per_ms(cs.trace_file("delay", "up", 1)) - 30_000) / 1000      # ms
    j = extra // rlc["rtt_ms"]                    # HARQ adds at most 8 ms, less than one RLC round
    k = (extra - j * rlc["rtt_ms"]) / hq["rtt_ms"]
    assert np.array_equal(k, np.round(k)) and k.max() <= hq["max_attempts"] - 1
    n = len(j)
    for jj in range(rlc["max_attempts"]):
        pj = r ** jj * (1 - r) / (1 - r ** rlc["max_attempts"])   # P(j | delivered)
        fj = float((j == jj).mean())
        assert abs(fj - pj) <= 4 * math.sqrt(pj * (1 - pj) / n), (jj, fj, pj)
    # the downlink (not in [harq] directions) is untouched by RLC too
    assert set(np.unique(_per_ms(cs.trace_file("loss", "down", 1)))) == {q}


@pytest.mark.parametrize("held", [False, True])
def test_harq_under_held_outages_only_when_asked(tmp_path, held):
    q = 0.2
    d = _standing(harq={"directions": ["down", "up"], "held_outages": held})
    d["scenario"]["duration_s"] = 200
    d["trip"] = {"speed_kmh": 300.0}
    d["link"] = {"loss_down": q, "loss_up": q}
    d["handoff"] = {"count": 10, "outage_kind": "held", "burst_s": 0.0, "spike_p": 0.0}
    cs = S.load(d).compile(tmp_path / "c")
    assert self_check(cs) == []
    seg, ev = cs.segments(), cs.events()
    outs = ev.filter(ev["kind"] == "outage")
    assert len(outs) == 10
    inside = []
    for o in outs.iter_rows(named=True):
        s = seg.filter((seg["t_start"] >= o["t_start"] - 1e-9) & (seg["t_end"] <= o["t_end"] + 1e-9))
        inside += s["loss_rate"].to_list()
    assert inside
    # held: the packets still in the delay line keep their link layer (q^4); v1-v3: raw q
    assert set(inside) == ({round(q ** 4, 9)} if held else {q})


@pytest.mark.parametrize("user, said", [
    ({"rlc": {"rtt_ms": 40}}, "[rlc] needs [harq]"),
    ({"harq": {}, "rlc": {"max_attempts": 0}}, "[rlc] key 'max_attempts' must be >= 1"),
    ({"harq": {"held_outages": 1}}, "[harq] key 'held_outages' must be true or false"),
])
def test_rlc_and_held_outages_bad_values(user, said):
    with pytest.raises(S.ScenarioError) as ei:
        S.resolve(user, "x.toml")
    assert said in str(ei.value)


def test_v5_post_handoff_episode_is_delay_and_the_phone_window_fits_the_buffer(tmp_path):
    # Channel v5 (docs/lab.md): after each outage the target cell's blind scheduling costs HARQ/RLC
    # rounds, not packets (RLC-AM, X2 forwarding), and the eNodeB buffer holds the whole flight
    # the phone's receive buffer allows (campaigns/study-v5-*.toml), so cubic never overflows it.
    import tomllib

    version = "v5"
    name = f"study-300-handoffs-{version}"
    sc = S.load(REPO / "scenarios" / f"{name}.toml")
    cs = sc.compile(tmp_path / name, duration=60)
    seg, ev = cs.segments(), cs.events()
    seg = seg.filter(seg["direction"] == "down")
    outs = ev.filter(ev["kind"] == "outage")
    assert len(outs) >= 2
    after = []
    for o in outs.iter_rows(named=True):
        s = seg.filter((seg["t_start"] >= o["t_end"] - 1e-9) & (seg["t_end"] <= o["t_end"] + 0.2 + 1e-9))
        after.append(s)
    loss = max(float(s["loss_rate"].max()) for s in after)
    late = max(float(s["delay_s"].max()) for s in after)
    rlc = sc.params["rlc"]
    assert loss <= 0.9 ** (4 * rlc["max_attempts"]) + 1e-6       # a bad slot's residual after RLC
    assert late >= 0.010 + rlc["rtt_ms"] / 1000                  # at least one RLC round of delay
    for kind in ("levels", "classes"):
        camp = tomllib.loads((REPO / "campaigns" / f"study-{version}-{kind}.toml").read_text())
        rmem_max = int(camp["sysctls"]["net.ipv4.tcp_rmem"].split()[2])
        for rel in camp["campaign"]["scenarios"]:
            q = S.load(REPO / "campaigns" / rel).params["link"]["queue_bytes"]
            assert rmem_max <= q, (rel, rmem_max, q)


def test_v6_dropped_outage_flushes_downlink_and_holds_uplink(tmp_path):
    # channel v6 (docs/lab.md "Channel v6"): the same trip compiled with and without the two
    # [handoff] keys differs only inside its dropped outages: the downlink bandwidth is the
    # flush rate there (loss 1.0 as before), the uplink is held (1 bit/s, no loss 1.0)
    d = _standing(harq={"directions": ["down", "up"]})
    d["scenario"]["duration_s"] = 200
    d["trip"] = {"speed_kmh": 300.0}
    d["handoff"] = {"count": 10, "outage_kind": "mixed", "dropped_p": 0.5, "spike_p": 0.0, "burst_s": 0.0}
    v5 = S.load(d).compile(tmp_path / "v5")
    d["handoff"] |= {"dropped_uplink": "held", "dropped_flush_bps": 1e9}
    v6 = S.load(d).compile(tmp_path / "v6")
    assert self_check(v6) == []
    ev = v6.events()
    out = ev.filter(ev["kind"] == "outage")
    drops = [(round(r["t_start"] * 1000), round(r["t_end"] * 1000)) for r in out.iter_rows(named=True)
             if r["outage_kind"] == "dropped"]
    assert 2 <= len(drops) <= 8 and len(out) > len(drops)          # both kinds on this trip
    inside = np.zeros(200_000, dtype=bool)
    for a, b in drops:
        inside[a:b] = True
    for what, direction, v5_in, v6_in in (("bw", "down", None, 1e9), ("loss", "down", 1.0, 1.0),
                                          ("bw", "up", None, 1.0), ("loss", "up", 1.0, None)):
        a = _per_ms(v5.trace_file(what, direction, 1))
        b = _per_ms(v6.trace_file(what, direction, 1))
        assert (a[~inside] == b[~inside]).all(), (what, direction)    # nothing else moved
        if v5_in is not None:
            assert (a[inside] == v5_in).all()
        if v6_in is not None:
            assert (b[inside] == v6_in).all(), (what, direction)
    assert (_per_ms(v6.trace_file("loss", "up", 1))[inside] < 1.0).all()
    for direction in ("down", "up"):  # delay: only the held uplink's HARQ rounds inside
        a, b = _per_ms(v5.trace_file("delay", direction, 1)), _per_ms(v6.trace_file("delay", direction, 1))
        assert (a[~inside] == b[~inside]).all() and (direction == "up" or (a == b).all())


def test_v6_dropped_keys_checked(tmp_path):
    d = _standing()
    d["handoff"] = {"dropped_uplink": "kept"}
    with pytest.raises(S.ScenarioError, match="dropped_uplink"):
        S.load(d)
    d["handoff"] = {"dropped_flush_bps": -1}
    with pytest.raises(S.ScenarioError, match="dropped_flush_bps"):
        S.load(d)
    # absent keys stay absent: the scenarios before v6 resolve as before
    assert "dropped_uplink" not in S.resolve({})["handoff"]
    assert S.resolve({"handoff": {"dropped_uplink": "held"}})["handoff"]["dropped_uplink"] == "held"
