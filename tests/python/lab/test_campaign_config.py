"""A campaign never mixes configurations (issue 38): a bundle is reused only when its recorded
scenario (as compiled), workload, knobs and software equal the run's; a changed campaign is
refused before anything runs, naming each run that differs, and campaign.toml in the folder
keeps describing its bundles; --force makes the runs again."""

from __future__ import annotations

import json
import shutil

import pytest

from hsrtcp.cli import main
from hsrtcp.lab import campaign, runconfig

from labtools import SMALL_SCENARIO

pytestmark = pytest.mark.netns


CAMP = """
[campaign]
name = "mix"
scenarios = ["s.toml"]
ccs = ["cubic"]

[sysctls]
"net.ipv4.tcp_frto" = 2

[[flows]]
type = "duration"
duration_s = 4
"""


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_changed_campaign_never_reuses_a_run(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(SMALL_SCENARIO)
    (tmp_path / "c.toml").write_text(CAMP)
    runs = tmp_path / "runs"
    first = campaign.run(campaign.load(tmp_path / "c.toml"), runs, progress=False)
    assert [r["status"] for r in first] == ["ok"]
    rid = first[0]["run_id"]
    m = json.loads((runs / rid / "manifest.json").read_text())
    assert set(m["config"]) == set(runconfig.PARTS)
    assert m["config"]["scenario"]["seed"] == 42 and m["config"]["knobs"]["sysctls"] == {"net.ipv4.tcp_frto": "2"}
    # the same campaign again: reused
    again = campaign.run(campaign.load(tmp_path / "c.toml"), runs, progress=False)
    assert [r["status"] for r in again] == ["skipped (already done)"]
    # a comment in the scenario does not change the run
    _edit(tmp_path / "s.toml", "[trip]", "# a comment\n[trip]")
    assert campaign.run(campaign.load(tmp_path / "c.toml"), runs, progress=False)[0]["status"].startswith("skipped")
    toml_before = (runs / "campaign.toml").read_text()

    changes = [  # (file, old, new, what the refusal names)
        ("s.toml", "seed = 42", "seed = 43", "scenario differs (seed 42 -> 43"),
        ("s.toml", "base_owd_ms = 20", "base_owd_ms = 25", "scenario differs (the compiled path"),
        ("c.toml", '"net.ipv4.tcp_frto" = 2', '"net.ipv4.tcp_frto" = 0',
         "knobs differs (sysctls.net.ipv4.tcp_frto 2 -> 0)"),
        ("c.toml", "duration_s = 4", "duration_s = 3\nlabel = \"duration-4s\"", "workload differs (flow.duration_s 4"),
        ("c.toml", 'ccs = ["cubic"]', 'ccs = ["reno"]', "not a run of this campaign"),
    ]
    for fname, old, new, named in changes:
        shutil.copyfile(tmp_path / "s.toml", tmp_path / "s.keep")
        shutil.copyfile(tmp_path / "c.toml", tmp_path / "c.keep")
        _edit(tmp_path / fname, old, new)
        with pytest.raises(campaign.ConfigConflict) as exc:
            campaign.run(campaign.load(tmp_path / "c.toml"), runs, progress=False)
        assert rid in str(exc.value) and named in str(exc.value), (fname, new, str(exc.value))
        assert exc.value.runs == [rid]
        # nothing ran, nothing was replaced: the folder still describes its bundle
        assert (runs / "campaign.toml").read_text() == toml_before
        assert json.loads((runs / rid / "manifest.json").read_text())["config"] == m["config"]
        shutil.copyfile(tmp_path / "s.keep", tmp_path / "s.toml")
        shutil.copyfile(tmp_path / "c.keep", tmp_path / "c.toml")

    # the command line: exit 3 (an input error: the bundles in OUT ran another path) with the
    # runs named, both compiled paths by hash, nothing run
    _edit(tmp_path / "s.toml", "seed = 42", "seed = 43")
    capsys.readouterr()
    assert main(["campaign", str(tmp_path / "c.toml"), "-o", str(runs), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert rid in err and "seed 42 -> 43" in err and "--force" in err
    now = runconfig.scenario_part(campaign._prepare(campaign.load(tmp_path / "c.toml"), campaign.load(
        tmp_path / "c.toml").runs()[0], tmp_path / "scratch", {}, m["versions"])["compiled"])["sha256"]
    assert now != m["config"]["scenario"]["sha256"]
    assert f"compiled sha256 {m['config']['scenario']['sha256'][:12]} in the bundle, {now[:12]} now" in err
    # --force deletes the bundle that differs and makes the run again with the new seed
    assert main(["campaign", str(tmp_path / "c.toml"), "-o", str(runs), "--no-progress", "--force"]) == 0
    m2 = json.loads((runs / rid / "manifest.json").read_text())
    assert m2["seeds"]["scenario"] == 43 and m2["config"]["scenario"]["seed"] == 43
    assert (runs / "campaign.toml").read_text() == (tmp_path / "c.toml").read_text()


def test_a_bundle_without_a_recorded_configuration_is_not_reused(tmp_path):
    """Bundles from before the configuration was recorded cannot be shown to match."""
    (tmp_path / "s.toml").write_text(SMALL_SCENARIO)
    (tmp_path / "c.toml").write_text(CAMP)
    c = campaign.load(tmp_path / "c.toml")
    runs = tmp_path / "runs"
    rid = campaign.run(c, runs, progress=False)[0]["run_id"]
    mpath = runs / rid / "manifest.json"
    m = json.loads(mpath.read_text())
    del m["config"]
    mpath.write_text(json.dumps(m))
    with pytest.raises(campaign.ConfigConflict, match="no configuration recorded"):
        campaign.run(c, runs, progress=False)
