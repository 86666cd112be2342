"""Property tests of scenario TOML (issue 16): any valid small scenario compiles into
self-consistent files and survives a TOML round trip unchanged; any invalid value is refused
with a :class:`ScenarioError` (an ``InputError``: exit 3 from the CLI) naming the file, the
table and the key — never another exception, never a traceback."""

import json

import numpy as np
import polars as pl
import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsrtcp.cli import main
from hsrtcp.lab import scenario as S
from hsrtcp.lab.scenario.config import CARRIER_DEFAULTS, DEFAULTS, HOLE_DEFAULTS
from hsrtcp.lab.scenario.traces import self_check

areas = st.sampled_from(["dense_urban", "urban", "suburban", "rural", "farmland"])
FIXTURE_OK = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _f(lo: float, hi: float):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


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


@st.composite
def rich_scenarios(draw):
    """Valid scenarios touching every table: stop-to-stop trips, area lists and overrides,
    link/handoff/radio values anywhere in their valid ranges, carriers and holes. Small
    enough (<= 60 s windows, <= 8 km between stations) to compile in well under a second."""
    d: dict = {}
    dur = draw(_f(2.0, 60.0))
    stations = draw(st.booleans())
    d["scenario"] = {"name": draw(st.text(min_size=1, max_size=12)), "seed": draw(st.integers(0, 2**63 - 1)),
                     "duration_s": dur, "start_s": draw(_f(0.0, 30.0)),
                     "step_s": draw(st.sampled_from([0.1, 0.5, 1.0, 3.0]))}
    trip = {"speed_kmh": draw(_f(1.0 if stations else 0.0, 450.0)), "accel_mps2": draw(_f(0.01, 5.0)),
            "decel_mps2": draw(_f(0.01, 5.0)), "bearing_deg": draw(_f(0.0, 360.0)),
            "origin": [draw(_f(-89.0, 89.0)), draw(_f(-180.0, 180.0))], "area": draw(areas)}
    if stations:
        km = sorted(draw(st.lists(_f(0.0, 8.0), min_size=2, max_size=3, unique=True)))
        if all(b - a > 0.01 for a, b in zip(km, km[1:])):
            trip |= {"stations_km": km, "dwell_s": draw(_f(0.0, 20.0)), "depart_after_s": draw(_f(0.0, 5.0)),
                     "end_dwell_s": draw(_f(0.0, 5.0))}
            if km[-1] - km[0] < 2.0 and draw(st.booleans()):
                # the window is the whole trip (from start_s): keep that trip short
                del d["scenario"]["duration_s"]
                trip |= {"speed_kmh": draw(_f(60.0, 450.0)), "accel_mps2": draw(_f(0.3, 5.0)),
                         "decel_mps2": draw(_f(0.3, 5.0))}
    if draw(st.booleans()):
        second = {"from_km": draw(_f(0.5, 5.0)), "type": draw(areas)}
        if draw(st.booleans()):
            second["speed_limit_kmh"] = draw(_f(1.0, 400.0))
        trip["areas"] = [{"from_km": 0.0, "type": draw(areas)}, second]
    d["trip"] = trip
    if draw(st.booleans()):
        d["area_types"] = {draw(areas): {"median_spacing_m": draw(_f(300.0, 5000.0)),
                                         "pingpong_p": draw(_f(0.0, 1.0))}}
    d["link"] = {"base_owd_ms": draw(_f(0.0, 300.0)), "jitter_ms": draw(_f(0.0, 50.0)),
                 "loss_down": draw(_f(0.0, 1.0)), "loss_up": draw(_f(0.0, 1.0)),
                 "queue_packets": draw(st.integers(1, 10_000))}
    if draw(st.booleans()):
        d["link"]["queue_bytes"] = draw(st.integers(1500, 10**8))
    d["handoff"] = {"outage_median_s": draw(_f(0.0, 3.0)), "outage_sigma": draw(_f(0.0, 3.0)),
                    "outage_max_s": draw(_f(0.0, 20.0)), "rlf_p": draw(_f(0.0, 1.0)),
                    "outage_kind": draw(st.sampled_from(["held", "dropped", "mixed"])),
                    "dropped_p": draw(_f(0.0, 1.0)), "burst_s": draw(_f(0.0, 3.0)),
                    "burst_pattern": draw(st.lists(_f(0.0, 1.0), min_size=1, max_size=6)),
                    "burst_directions": draw(st.lists(st.sampled_from(["down", "up"]), max_size=2, unique=True)),
                    "spike_p": draw(_f(0.0, 1.0)), "spike_median_ms": draw(_f(0.0, 2000.0)),
                    "spike_s": draw(_f(0.0, 3.0))}
    d["radio"] = {"pathloss_exponent": draw(_f(1.5, 6.0)), "shadowing_db": draw(_f(0.0, 20.0)),
                  "load": draw(_f(0.01, 1.0)), "se_efficiency": draw(_f(0.01, 1.0)),
                  "se_max": draw(_f(0.1, 30.0)), "min_bps": draw(_f(1.0, 1e6))}
    names = draw(st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True),
                          min_size=1, max_size=3, unique=True))
    d["carriers"] = [{"name": nm, "peak_down_bps": draw(_f(1e4, 1e9)), "peak_up_bps": draw(_f(1e4, 1e9)),
                      "rsrp_offset_db": draw(_f(-20.0, 20.0)), "lac_cells": draw(st.integers(1, 100))}
                     for nm in names]
    if draw(st.booleans()):
        lo, hi = sorted([draw(_f(1000.0, 1e5)), draw(_f(1000.0, 1e5))])
        d["holes"] = [{"start_s": draw(_f(0.0, 60.0)), "duration_s": draw(_f(0.5, 60.0)),
                       "carriers": draw(st.lists(st.sampled_from(names), min_size=1, unique=True)),
                       "down_bps": [lo, hi], "loss_down": draw(_f(0.0, 1.0))}]
    return d


@settings(FIXTURE_OK, max_examples=25)
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


@settings(FIXTURE_OK, max_examples=30)
@given(rich_scenarios())
def test_toml_round_trip_and_compile(tmp_path, d):
    """A scenario written as TOML loads to exactly the parameters of its dict; the resolved
    parameters are a fixed point of validation (scenario.json reloads unchanged, through
    JSON); and the scenario compiles into files that pass the self-check — or, when its
    window starts after the end of its trip, is refused with an error naming start_s."""
    path = tmp_path / f"r{abs(hash(str(d))) % 10**9}.toml"
    path.write_text(tomli_w.dumps(d))
    sc = S.load(path)
    assert sc.params == S.resolve(d)
    assert S.resolve(json.loads(json.dumps(sc.params))) == sc.params
    try:
        cs = sc.compile(path.with_suffix(""))
    except S.ScenarioError as exc:
        assert "duration_s" not in d["scenario"] and "'start_s'" in str(exc) and str(path) in str(exc), exc
        return
    assert self_check(cs) == []
    assert S.load(cs.scenario_json).params == sc.params
    assert cs.paths == len(d["carriers"])


# --- invalid values ----------------------------------------------------------------------------

def _numeric(defaults: dict, also=()) -> list[str]:
    return [k for k, v in defaults.items()
            if k in also or (isinstance(v, (int, float)) and not isinstance(v, bool))]


# (table, key) of every number a scenario holds; "carriers"/"holes" are arrays of tables.
NUMERIC = ([(t, k) for t in ("scenario", "trip", "link", "handoff", "radio")
            for k in _numeric(DEFAULTS[t], also=("duration_s", "queue_bytes"))]
           + [("carriers", k) for k in _numeric(CARRIER_DEFAULTS)]
           + [("holes", k) for k in _numeric(HOLE_DEFAULTS, also=("start_s",))])
# Numbers that may be negative (dB offsets and levels); every other one is a duration, rate,
# probability, count, speed, angle or seed.
SIGNED = {"rsrp_offset_db", "noise_dbm"}
INTEGER = {"seed", "queue_packets", "queue_bytes", "lac_cells"}


def _is_probability(key: str) -> bool:
    return key.endswith("_p") or key.startswith("loss_")


@st.composite
def invalid_values(draw):
    """(table, key, value) with a value no valid scenario can hold, whatever the bounds."""
    table, key = draw(st.sampled_from(NUMERIC))
    bad = [st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2),
           st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=1),
           st.sampled_from([float("nan"), float("inf"), float("-inf")])]
    if key not in SIGNED:
        bad.append(st.floats(max_value=-1e-6, allow_infinity=False, allow_nan=False))
    if _is_probability(key):
        bad.append(st.floats(min_value=1.000001, max_value=1e300))
    if key in INTEGER:
        bad.append(_f(0.5, 1e6).filter(lambda v: not v.is_integer()))
    return table, key, draw(st.one_of(bad))


def _with(table: str, key: str, value) -> tuple[dict, str]:
    """A scenario dict holding ``value`` at (table, key), and the table's name in messages."""
    if table == "carriers":
        return {"carriers": [{key: value}]}, "[[carriers]] #1"
    if table == "holes":
        return {"holes": [{"start_s": 0.0, key: value}]}, "[[holes]] #1"
    return {table: {key: value}}, f"[{table}]"


@settings(FIXTURE_OK, max_examples=300)
@given(invalid_values())
def test_invalid_value_names_file_table_and_key(tmp_path, bad):
    table, key, value = bad
    d, where = _with(table, key, value)
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(d))  # TOML holds nan and inf as floats too
    with pytest.raises(S.ScenarioError) as err:
        S.load(path)
    msg = str(err.value)
    assert str(path) in msg and where in msg and key in msg, msg


@settings(FIXTURE_OK, max_examples=40)
@given(invalid_values())
def test_cli_refuses_invalid_values_with_exit_3_and_no_traceback(tmp_path, capsys, bad):
    table, key, value = bad
    d, _ = _with(table, key, value)
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(d))
    capsys.readouterr()
    assert main(["scenario", "generate", str(path), "-o", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert key in err and "bad.toml" in err and "Traceback" not in err, err


@settings(FIXTURE_OK, max_examples=200)
@given(st.sampled_from(sorted(DEFAULTS)), st.text(min_size=1, max_size=20))
def test_unknown_keys_are_named(tmp_path, table, key):
    if table in ("carriers", "holes", "area_types") or key in DEFAULTS[table]:
        return  # arrays of tables / free-form names, or a real key
    with pytest.raises(S.ScenarioError) as err:
        S.load({table: {key: 1}})
    assert repr(key) in str(err.value) and f"[{table}]" in str(err.value)


# Absurd magnitudes (issue 16 #7): once accepted, then a MemoryError, a run of minutes or
# an integer overflow in the compiler; config.py now bounds every one of these keys.


@pytest.mark.parametrize("table, key, value", [
    pytest.param("scenario", "duration_s", 1e7),
    pytest.param("scenario", "duration_s", 1e12),
    pytest.param("scenario", "start_s", 1e300),
    pytest.param("trip", "stations_km", [0, 1e9]),
    pytest.param("trip", "stations_km", [0, 100000]),
    pytest.param("trip", "dwell_s", 1e300),
    pytest.param("carriers", "peak_down_bps", 1e300),
    pytest.param("carriers", "peak_up_bps", 1e300),
    pytest.param("holes", "duration_s", 1e300),
    ("scenario", "seed", 2**64),
    ("scenario", "seed", -5),
])
def test_absurd_magnitudes_are_refused_at_load(table, key, value):
    d, where = _with(table, key, value)
    try:
        S.load(d)
    except S.ScenarioError as exc:
        assert where in str(exc) and key in str(exc), str(exc)
    else:
        raise AssertionError(f"{where} {key} = {value!r} was accepted")
