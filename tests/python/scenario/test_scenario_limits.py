"""Counts of the lists a scenario repeats are bounded (docs/formats/scenario.md, Bounds):
beyond a bound is an input error naming the file and the key; at the bound it compiles."""

import json

import pytest

from hsrtcp.cli import main
from hsrtcp.lab import scenario as S

# the documented bounds (docs/formats/scenario.md)
MAX_HOLES, MAX_AREAS, MAX_AREA_TYPES, MAX_PATTERN, MAX_CARRIERS = 100, 1000, 100, 100, 8


def _holes_toml(n: int) -> str:
    # disjoint 4-s holes every 10 s, so none is merged with another
    lines = ["[scenario]", 'name = "many-holes"', "seed = 3", f"duration_s = {10 * n + 20}", "",
             "[trip]", "speed_kmh = 300", ""]
    for i in range(n):
        lines += ["[[holes]]", f"start_s = {10 * i + 5}", "duration_s = 4", "edge_pingpong_p = 0.0", ""]
    return "\n".join(lines)


def test_holes_beyond_the_limit_are_an_input_error(tmp_path, capsys):
    f = tmp_path / "holes.toml"
    f.write_text(_holes_toml(MAX_HOLES + 1))
    out = tmp_path / "o"
    assert main(["scenario", "generate", str(f), "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert str(f) in err and "[[holes]]" in err
    assert f"holds {MAX_HOLES + 1} holes, at most {MAX_HOLES}" in err
    assert not (out / "scenario.json").exists()


def test_holes_at_the_limit_compile_each_hole(tmp_path):
    f = tmp_path / "holes.toml"
    f.write_text(_holes_toml(MAX_HOLES))
    out = tmp_path / "o"
    assert main(["scenario", "generate", str(f), "-o", str(out)]) == 0
    cs = S.CompiledScenario.open(out)
    ev = cs.events()
    holes = ev.filter(ev["kind"] == "coverage_hole")
    assert holes.height == MAX_HOLES
    assert holes["t_start"].to_list() == [10.0 * i + 5 for i in range(MAX_HOLES)]
    # every hole is entered and left by an inter-system handoff
    doc = json.loads((out / "scenario.json").read_text())
    assert len(doc["params"]["holes"]) == MAX_HOLES
    assert doc["summary"]["M"]["inter_system_handoffs"] == 2 * MAX_HOLES
    # each hole's 2G cells have their own tracking area (the reason for the bound)
    radio = cs.radio()
    lacs = radio.filter(radio["rat"] == "EDGE")["lac"].unique()
    assert lacs.len() == MAX_HOLES


def _over(n):
    return n + 1


@pytest.mark.parametrize("doc, where, what", [
    ({"trip": {"areas": [{"from_km": float(i), "type": "rural"} for i in range(_over(MAX_AREAS))]}},
     "[[trip.areas]]", f"holds {MAX_AREAS + 1} areas, at most {MAX_AREAS}"),
    ({"area_types": {f"t{i}": {} for i in range(_over(MAX_AREA_TYPES))}},
     "[area_types]", f"defines {MAX_AREA_TYPES + 1} area types, at most {MAX_AREA_TYPES}"),
    ({"handoff": {"burst_pattern": [0.5] * _over(MAX_PATTERN)}},
     "[handoff]", f"'burst_pattern' holds {MAX_PATTERN + 1} probabilities, at most {MAX_PATTERN}"),
    ({"speed_channel": {"fade_pattern": [0.5] * _over(MAX_PATTERN)}},
     "[speed_channel]", f"'fade_pattern' holds {MAX_PATTERN + 1} probabilities"),
    ({"handoff": {"burst_directions": ["down"] * 3}}, "[handoff]", "each at most once"),
    ({"holes": [{"start_s": 1.0, "carriers": ["M"] * 3}]}, "[[holes]] #1", "each at most once"),
    ({"carriers": [{"name": f"c{i}"} for i in range(_over(MAX_CARRIERS))]},
     "[[carriers]]", f"at most {MAX_CARRIERS} carriers"),
])
def test_other_lists_beyond_their_limit(tmp_path, doc, where, what):
    with pytest.raises(S.ScenarioError) as e:
        S.resolve(doc, "x.toml")
    msg = str(e.value)
    assert msg.startswith(f"x.toml: {where}") and what in msg


@pytest.mark.parametrize("doc", [
    {"trip": {"areas": [{"from_km": float(i), "type": "rural"} for i in range(MAX_AREAS)]}},
    {"area_types": {f"t{i}": {} for i in range(MAX_AREA_TYPES)}},
    {"handoff": {"burst_pattern": [0.5] * MAX_PATTERN, "burst_directions": ["up", "down"]}},
])
def test_other_lists_at_their_limit(doc):
    p = S.resolve(doc, "x.toml")
    key = next(iter(doc))
    assert p[key]
