"""Property test: any valid small scenario compiles into self-consistent files."""

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsrtcp.lab import scenario as S
from hsrtcp.lab.scenario.traces import self_check

areas = st.sampled_from(["dense_urban", "urban", "suburban", "rural", "farmland"])


@st.composite
def scenarios(draw):
    dur = draw(st.floats(5.0, 90.0)).__round__(3)
    n = draw(st.integers(1, 3))
    holes = []
    if draw(st.booleans()):
        s = draw(st.floats(0.0, dur))
        holes.append({"start_s": s, "duration_s": draw(st.floats(1.0, 60.0)),
                      "edge_pingpong_p": draw(st.sampled_from([0.0, 1.0]))})
    return {
        "scenario": {"seed": draw(st.integers(0, 2**32)), "duration_s": dur,
                     "step_s": draw(st.sampled_from([0.25, 1.0, 2.0]))},
        "trip": {"speed_kmh": draw(st.sampled_from([0.0, 80.0, 300.0, 350.0])), "area": draw(areas)},
        "link": {"jitter_ms": draw(st.sampled_from([0.0, 5.0]))},
        "handoff": {"outage_kind": draw(st.sampled_from(["held", "dropped", "mixed"])),
                    "spike_p": draw(st.sampled_from([0.0, 1.0])), "rlf_p": draw(st.sampled_from([0.0, 0.5]))},
        "carriers": [{"name": f"C{i}"} for i in range(n)],
        "holes": holes,
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenarios())
def test_any_scenario_is_consistent(tmp_path, d):
    out = tmp_path / f"s{abs(hash(str(d))) % 10**9}"
    cs = S.load(d).compile(out)
    assert self_check(cs) == []
    radio, ev = cs.radio(), cs.events()
    for c in radio["carrier"].unique().to_list():
        r = radio.filter(pl.col("carrier") == c)
        cid = r["cid"].to_numpy()
        ch = np.nonzero(cid[1:] != cid[:-1])[0] + 1
        h = ev.filter((pl.col("kind") == "handoff") & (pl.col("carrier") == c) & (pl.col("t_start") > 0))
        assert len(ch) == h.height
    tl = cs.timeline()
    assert tl.height == cs.paths * 2 * int(np.ceil(cs.duration_s - 1e-9))
    assert tl["bw_min_bps"].min() >= 1
