"""Campaign arms ([[variants]]: a cc with its own sysctls and route knobs), scenario windows,
blocks and shards (hsrtcp.lab.campaign); the route knobs through real `ip route` (root)."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest

from hsrtcp.errors import InputError
from hsrtcp.lab import agent, campaign

from labtools import one_path_campaign

SCEN = """
[scenario]
name = "s"
seed = 40
duration_s = 30
[trip]
speed_kmh = 300
area = "rural"
"""


def _write(tmp_path, body: str, scenarios: str | None = None):
    (tmp_path / "a.toml").write_text(SCEN)
    (tmp_path / "b.toml").write_text(SCEN.replace('"s"', '"b"'))
    scen = scenarios or '[{file = "a.toml", start_s = 12, label = "first"}, "b.toml"]'
    (tmp_path / "c.toml").write_text(f"""
[campaign]
name = "v"
scenarios = {scen}
repetitions = 2
reseed = true

[sysctls]
"net.ipv4.tcp_frto" = 2

{body}

[[flows]]
type = "duration"
duration_s = 4
""")
    return tmp_path / "c.toml"


VARIANTS = """
[[variants]]
name = "base"
cc = "cubic"
[[variants]]
name = "frto0"
cc = "cubic"
sysctls = {"net.ipv4.tcp_frto" = 0}
[[variants]]
name = "knobs"
cc = "reno"
route = {rto_min_ms = 50, quickack = true}
"""


def test_variants_run_in_blocks_of_seed_and_scenario(tmp_path):
    c = campaign.load(_write(tmp_path, VARIANTS))
    assert c.ccs == ["cubic", "cubic", "reno"]
    assert c.scenario_starts == [12.0, None] and c.scenario_label(0) == "first" and c.scenario_label(1) == "b"
    runs = c.runs()
    assert len(runs) == 2 * 2 * 3
    # repetition outermost, then scenario, then every arm: a block is 3 consecutive runs
    assert [(r["repetition"], r["scenario_index"], r["variant"]["name"]) for r in runs[:4]] == [
        (1, 0, "base"), (1, 0, "frto0"), (1, 0, "knobs"), (1, 1, "base")]
    assert runs[0]["run_id"] == "001_first_base_duration-4s_r1"
    assert runs[-1]["run_id"] == "012_b_knobs_duration-4s_r2"
    assert runs[2]["variant"]["route"] == {"rto_min_ms": 50, "quickack": True}
    assert runs[1]["variant"]["sysctls"] == {"net.ipv4.tcp_frto": 0}


def test_without_variants_nothing_changes(tmp_path):
    path = _write(tmp_path, "", scenarios='["a.toml"]')
    path.write_text(path.read_text().replace("reseed = true", 'reseed = true\nccs = ["cubic", "reno"]'))
    c = campaign.load(path)
    assert c.variants == []
    # the historical order and names: scenario, cc, flow, repetition
    assert [r["run_id"] for r in c.runs()] == ["001_a_cubic_duration-4s_r1", "002_a_cubic_duration-4s_r2",
                                               "003_a_reno_duration-4s_r1", "004_a_reno_duration-4s_r2"]
    assert all("variant" not in r for r in c.runs())


def test_first_repetition_continues_another_campaigns_draws(tmp_path):
    """An extension campaign (campaigns/study-static-timeouts.toml) numbers its repetitions
    after the main campaign's: new trip seeds (scenario seed + r - 1) and distinct run ids."""
    path = _write(tmp_path, "", scenarios='["a.toml"]')
    text = path.read_text()
    path.write_text(text.replace("reseed = true", "reseed = true\nfirst_repetition = 4"))
    assert [(r["run_id"], r["repetition"]) for r in campaign.load(path).runs()] == [
        ("001_a_cubic_duration-4s_r4", 4), ("002_a_cubic_duration-4s_r5", 5)]
    for bad in ("0", "1.5", "true", '"4"'):
        path.write_text(text.replace("reseed = true", f"reseed = true\nfirst_repetition = {bad}"))
        with pytest.raises(InputError, match="first_repetition must be a whole number"):
            campaign.load(path)


@pytest.mark.parametrize("body, scen, message", [
    ('[campaign.x]\n', None, "unknown keys"),
    ('[[variants]]\nname = "a"\ncc = "cubic"\n[[variants]]\nname = "a"\ncc = "reno"\n', None, "given twice"),
    ('[[variants]]\nname = "a"\ncc = "cubic"\nroute = {rto_max_ms = 5}\n', None, "route key 'rto_max_ms' unknown"),
    ('[[variants]]\nname = "a"\ncc = "cubic"\nroute = {rto_min_ms = 0}\n', None, "within 1..120000"),
    ('[[variants]]\nname = "a"\ncc = "cubic"\nroute = {quickack = 1}\n', None, "true or false"),
    ('[[variants]]\nname = "a"\ncc = "cubic"\nsysctls = {"kernel.x" = 1}\n', None, "net.* keys"),
    ('[[variants]]\nname = "a b"\ncc = "cubic"\n', None, "name must match"),
    ('[[variants]]\nname = "a"\n', None, "needs cc"),
    ('[[variants]]\nname = "a"\ncc = "nosuchcc"\n', None, "not available here"),
    ('', '[{file = "a.toml", start_s = -1}]', "start_s must be"),
    ('', '[{file = "a.toml", window = 3}]', "unknown key 'window'"),
    ('', '[{start_s = 3}]', "needs file"),
    ('', '[{file = "missing.toml"}]', "not found"),
])
def test_bad_variants_and_scenario_entries_are_named(tmp_path, body, scen, message):
    path = _write(tmp_path, body, scenarios=scen)
    if body.startswith("[campaign.x]"):
        path.write_text(path.read_text().replace("reseed = true", "reseed = true\nwindow = 3"))
    with pytest.raises(InputError) as exc:
        campaign.load(path)
    assert str(path) in str(exc.value) and message in str(exc.value)


def test_ccs_and_variants_together_are_refused(tmp_path):
    path = _write(tmp_path, VARIANTS)
    path.write_text(path.read_text().replace("reseed = true", 'reseed = true\nccs = ["bbr"]'))
    with pytest.raises(InputError, match="either \\[campaign\\] ccs or \\[\\[variants\\]\\]"):
        campaign.load(path)


def test_shards_split_whole_blocks(tmp_path):
    runs = campaign.load(_write(tmp_path, VARIANTS)).runs()
    shards = [campaign.shard_of(runs, k, 3) for k in range(3)]
    ids = [r["run_id"] for s in shards for r in s]
    assert sorted(ids) == sorted(r["run_id"] for r in runs) and len(set(ids)) == len(ids)
    for s in shards:  # every block (seed, scenario) lies in one shard, with all its arms
        blocks = {(r["repetition"], r["scenario_index"]) for r in s}
        assert len(s) == 3 * len(blocks)
    assert [len(s) for s in shards] == [6, 3, 3]  # 4 blocks over 3 shards
    with pytest.raises(ValueError):
        campaign.shard_of(runs, 2, 2)


def test_route_arguments():
    r = {"dst": "default", "gateway": "10.2.1.1", "dev": "vL1-L-x", "protocol": "static", "flags": ["onlink"]}
    assert agent.route_spec(r) == ["default", "via", "10.2.1.1", "dev", "vL1-L-x", "proto", "static", "onlink"]
    r = {"dst": "10.2.1.1", "dev": "v", "scope": "link", "prefsrc": "10.1.1.1", "flags": []}
    assert agent.route_spec(r) == ["10.2.1.1", "dev", "v", "scope", "link", "src", "10.1.1.1"]
    assert agent.route_knobs({"rto_min_ms": 50, "quickack": True}) == ["rto_min", "50ms", "quickack", "1"]
    assert agent.route_knobs({"quickack": False}) == ["quickack", "0"]
    assert agent.route_knobs({}) == []


@pytest.mark.netns
def test_variants_apply_their_knobs_in_the_lab(tmp_path):
    """Two arms on the same path: the knobs arm's routes carry rto_min 50 ms and quickack on
    both sides (ip's own read-back), its sysctls are read back from the namespaces, and
    the analyzer sees what quickack does: about one ACK per data segment instead of one per
    two (delayed ACKs)."""
    one_path_campaign(tmp_path, """
[campaign]
name = "knobs"
scenarios = ["rattan.toml"]
duration_s = 5
[[variants]]
name = "base"
cc = "cubic"
[[variants]]
name = "knobs"
cc = "cubic"
sysctls = {"net.ipv4.tcp_early_retrans" = 0, "net.ipv4.tcp_recovery" = 0}
route = {rto_min_ms = 50, quickack = true}
[[flows]]
type = "duration"
duration_s = 4
""", down_bw="10Mbps")
    c = campaign.load(tmp_path / "c.toml")
    runs = tmp_path / "runs"
    res = campaign.run(c, runs, progress=False)
    assert [r["status"] for r in res] == ["ok", "ok"]
    base, knobs = (runs / r["run_id"] for r in res)
    m = json.loads((knobs / "manifest.json").read_text())
    assert m["variant"]["name"] == "knobs" and m["variant"]["route"] == {"rto_min_ms": 50, "quickack": True}
    assert m["sysctls"]["server"]["net.ipv4.tcp_recovery"] == "0"
    assert m["sysctls"]["server"]["net.ipv4.tcp_early_retrans"] == "0"
    assert json.loads((base / "manifest.json").read_text())["sysctls"]["server"]["net.ipv4.tcp_recovery"] == "1"
    assert not (base / "routes-right.json").exists()
    for side in ("left", "right"):
        after = json.loads((knobs / f"routes-{side}.json").read_text())["after"]["main"]
        assert after and all(r["metrics"] == [{"rto_min": 50, "quickack": 1}] for r in after)
    acks = {}
    for name, b in (("base", base), ("knobs", knobs)):
        out = tmp_path / f"res-{name}"
        subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", str(b), "-o", str(out), "-q", "--no-plot"], check=True)
        f = pl.read_parquet(out / "flows.parquet").filter(pl.col("vantage") == "server")
        acks[name] = f["data_segments"][0] / f["pure_acks"][0]
    assert acks["knobs"] < 1.15 < 1.4 < acks["base"]
