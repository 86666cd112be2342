"""Guard rails for writing scenarios (issue 38): fixed handoff times or a count, warnings for
coverage holes outside the window, `scenario generate` saying what to run next."""

import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.lab import scenario as S
from hsrtcp.lab.scenario.config import ScenarioError

BASE = {"scenario": {"name": "f", "seed": 3, "duration_s": 60}, "trip": {"speed_kmh": 300},
        "handoff": {"rlf_p": 0.0}}


def _handoffs(cs, path=1):
    ev = cs.events()
    return ev.filter((pl.col("kind") == "handoff") & (pl.col("path") == path))["t_start"].to_list()


def test_handoffs_at_fixed_times_on_every_carrier(tmp_path):
    d = {**BASE, "handoff": {"rlf_p": 0.0, "outage_median_s": 0.5, "times_s": [5, 12.5, 40]},
         "carriers": [{"name": "A"}, {"name": "B"}]}
    cs = S.load(d).compile(tmp_path / "t")
    for p in (1, 2):  # before: 'times_s' was an unknown key
        assert _handoffs(cs, p) == [5.0, 12.5, 40.0]
    # each handoff still gets its impairments: an outage starting at the handoff
    out = cs.events().filter((pl.col("kind") == "outage") & (pl.col("path") == 1))["t_start"].to_list()
    assert out == [5.0, 12.5, 40.0]
    # the radio log changes cell exactly there
    r = cs.radio().filter(pl.col("carrier") == "A")
    cids = r.filter(pl.col("ts").is_in([4.0, 5.0, 12.0, 13.0]))["cid"].to_list()
    assert cids[0] != cids[1] and cids[1] == cids[2] != cids[3]


def test_a_count_spreads_the_handoffs_evenly(tmp_path):
    cs = S.load({**BASE, "handoff": {"rlf_p": 0.0, "count": 6}}).compile(tmp_path / "c")
    assert _handoffs(cs) == [5.0, 15.0, 25.0, 35.0, 45.0, 55.0]
    cs = S.load({**BASE, "handoff": {"count": 0}}).compile(tmp_path / "z")
    assert _handoffs(cs) == []
    # the same scenario without the keys compiles to what it did before (params unchanged)
    plain = S.load(BASE)
    assert "times_s" not in plain.params["handoff"] and "count" not in plain.params["handoff"]


@pytest.mark.parametrize("handoff, message", [
    ({"time_s": [1.0]}, "unknown key 'time_s' (did you mean 'times_s'?)"),
    ({"times_s": [5, 3]}, "key 'times_s' must increase strictly"),
    ({"times_s": [0]}, "key 'times_s[0]' must be > 0.0"),
    ({"times_s": [70]}, "holds 70 s, past the window's end (60 s)"),
    ({"times_s": [1], "count": 2}, "keys 'times_s' and 'count' exclude each other"),
    ({"count": 1.5}, "key 'count' must be an integer"),
])
def test_bad_fixed_handoffs_are_named(handoff, message):
    with pytest.raises(ScenarioError) as exc:
        S.load({**BASE, "handoff": handoff})
    assert message in str(exc.value) and "[handoff]" in str(exc.value)


def test_a_window_shortened_past_the_times_is_refused(tmp_path):
    sc = S.load({**BASE, "handoff": {"times_s": [50]}}).with_overrides(duration_s=30)
    with pytest.raises(ScenarioError, match="past the window's end"):
        sc.compile(tmp_path / "x")


def test_generate_options_fix_the_handoffs(tmp_path, capsys):
    out = tmp_path / "g"
    assert main(["scenario", "generate", "--speed", "200", "--duration", "40", "-o", str(out),
                 "--handoff-times", "4,9.5"]) == 0
    assert _handoffs(S.CompiledScenario.open(out)) == [4.0, 9.5]
    assert main(["scenario", "generate", "--speed", "200", "--duration", "40", "-o", str(out),
                 "--handoff-count", "2"]) == 0
    assert _handoffs(S.CompiledScenario.open(out)) == [10.0, 30.0]
    capsys.readouterr()
    for bad, msg in ((["--handoff-times", "4,x"], "expected window seconds"),
                     (["--handoff-times", "4,41"], "--handoff-times holds 41 s, past the window's end (40 s)"),
                     (["--handoff-times", "4", "--handoff-count", "1"], "exclude each other")):
        assert main(["scenario", "generate", "--speed", "200", "--duration", "40", "-o", str(out), *bad]) == 2
        assert msg in capsys.readouterr().err


def test_a_hole_outside_the_window_is_a_warning(tmp_path, capsys, scenarios_dir):
    """coverage-hole.toml's hole starts at trip second 60: a 30-s window misses it. Before,
    nothing was said."""
    f = scenarios_dir / "coverage-hole.toml"
    assert main(["scenario", "generate", str(f), "-o", str(tmp_path / "a"), "--duration", "30"]) == 0
    err = capsys.readouterr().err
    assert "warning: " in err and "[[holes]] #1 (trip 60-189 s) lies outside the emulated window (trip 0-30 s)" in err
    assert main(["scenario", "generate", str(f), "-o", str(tmp_path / "b"), "--duration", "90"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_generate_says_what_to_run_next(tmp_path, capsys, scenarios_dir):
    """Before: only `rattan run -c ABSOLUTE/rattan.toml --left ... --right ...`."""
    out = tmp_path / "sc"
    assert main(["scenario", "generate", str(scenarios_dir / "smoke.toml"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"hsrtcp scenario show {out}" in text
    assert f"hsrtcp emulate -s {out}/rattan.toml -o run --" in text
    assert "hsrtcp measure client '$HSRTCP_SERVER' --cc cubic -t 23" in text  # ends inside the 25-s window
