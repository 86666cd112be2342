"""TOML validation: bad input gives a clear error naming the file and the key."""

import pytest

from hsrtcp.errors import InputError
from hsrtcp.lab import scenario as S
from hsrtcp.lab.scenario.config import ScenarioError


def _write(tmp_path, text):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return p


def test_unknown_key_names_file_section_and_suggests(tmp_path):
    p = _write(tmp_path, "[handoff]\noutage_medain_s = 0.3\n")
    with pytest.raises(ScenarioError) as e:
        S.load(p)
    msg = str(e.value)
    assert str(p) in msg and "[handoff]" in msg and "'outage_medain_s'" in msg
    assert "did you mean 'outage_median_s'" in msg


def test_unknown_top_level_table(tmp_path):
    p = _write(tmp_path, "[handof]\n")
    with pytest.raises(ScenarioError, match=r"unknown key 'handof'.*did you mean 'handoff'"):
        S.load(p)


@pytest.mark.parametrize("text, key", [
    ("[link]\nloss_down = 1.5\n", "loss_down"),
    ("[link]\nloss_up = 'high'\n", "loss_up"),
    ("[trip]\nspeed_kmh = -3\n", "speed_kmh"),
    ("[handoff]\noutage_kind = 'lost'\n", "outage_kind"),
    ("[handoff]\nburst_pattern = [0.1, 2.0]\n", "burst_pattern[1]"),
    ("[scenario]\nseed = 1.5\n", "seed"),
    ("[trip]\nstations_km = [10, 5]\n", "stations_km"),
    ("[[trip.areas]]\nfrom_km = 0\ntype = 'jungle'\n", "type"),
    ("[[carriers]]\nname = 'M'\npeak_down_bps = 10\n", "peak_down_bps"),
    ("[[holes]]\nduration_s = 10\n", "start_s"),
    ("[[holes]]\nstart_s = 1\ncarriers = ['X']\n", "carriers"),
])
def test_bad_values_name_the_key(tmp_path, text, key):
    p = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as e:
        S.load(p)
    assert str(p) in str(e.value)
    assert f"'{key}'" in str(e.value)


def test_syntax_error_names_line(tmp_path):
    p = _write(tmp_path, "[trip]\nspeed_kmh = = 3\n")
    with pytest.raises(ScenarioError, match=r"bad\.toml: not valid TOML.*line 2"):
        S.load(p)


def test_errors_are_input_errors(tmp_path):
    # the CLI maps InputError to exit code 3
    assert issubclass(ScenarioError, InputError)
    with pytest.raises(InputError, match="cannot read"):
        S.load(tmp_path / "missing.toml")


def test_constant_speed_needs_duration():
    with pytest.raises(ScenarioError, match="duration_s"):
        S.load({"trip": {"speed_kmh": 300}}).realize()


def test_all_examples_load(scenarios_dir):
    names = set()
    for f in scenarios_dir.glob("*.toml"):
        names.add(S.load(f).name)
    assert {"smoke", "bt-300kmh", "urban-handoffs", "coverage-hole", "two-carriers"} <= names


def test_resolved_params_round_trip(compiled_examples):
    # scenario.json holds the fully resolved parameters: loading them gives the same scenario
    for cs in compiled_examples.values():
        again = S.load(cs.outdir)
        assert again.params == S.load(cs.scenario_json).params
        assert again.seed == cs.seed
