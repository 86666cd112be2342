"""A quiet lab and campaigns that reproduce (issue 34): the host's load recorded at the start
and end of every run, a run above the campaign's bound marked noisy, the emulator and the
endpoints pinned to cores of their own, the checks a campaign names before it runs, and the
mitigation campaigns pointed at the control scenario the committed findings ran.

The load is read from a file given in its place (``bundle.LOADAVG``) and the clock and sleep
of the wait are fakes: nothing here depends on how busy the machine is. The tests marked
netns make real short runs through Rattan (root)."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path

import pytest

from hsrtcp.errors import InputError
from hsrtcp.lab import bundle, campaign, emulate

from labtools import SMALL_SCENARIO

ROOT = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------ the load of the host

def test_host_load_reads_the_1_min_load_average(tmp_path):
    f = tmp_path / "loadavg"
    f.write_text("3.52 2.10 1.00 2/345 6789\n")
    assert bundle.host_load(f) == {"loadavg_1min": 3.52, "cpus": os.cpu_count()}
    f.write_text("garbage\n")
    assert bundle.host_load(f)["loadavg_1min"] is None
    assert bundle.host_load(tmp_path / "missing")["loadavg_1min"] is None
    # the real one, where there is one: a number
    if Path("/proc/loadavg").is_file():
        assert isinstance(bundle.host_load()["loadavg_1min"], float)


class _Clock:
    def __init__(self):
        self.t = 0.0
        self.slept = []

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.slept.append(s)
        self.t += s


def test_a_run_waits_for_the_load_to_fall_and_no_longer_than_its_bound():
    clock = _Clock()
    loads = iter([5.0, 4.0, 1.5, 9.0])
    reading, waited = campaign.wait_for_quiet(2.0, 300, read=lambda: {"loadavg_1min": next(loads), "cpus": 2},
                                              sleep=clock.sleep, clock=clock)
    assert reading["loadavg_1min"] == 1.5 and waited == 20.0 and clock.slept == [10.0, 10.0]
    # never quiet: it stops at the bound (the last sleep cut to what is left)
    clock = _Clock()
    reading, waited = campaign.wait_for_quiet(2.0, 25, read=lambda: {"loadavg_1min": 7.0, "cpus": 2},
                                              sleep=clock.sleep, clock=clock)
    assert reading["loadavg_1min"] == 7.0 and waited == 25.0 and clock.slept == [10.0, 10.0, 5.0]
    # no wait asked (the default): one reading; an unreadable load does not wait either
    for load, bound in ((7.0, 0), (None, 300)):
        clock = _Clock()
        reading, waited = campaign.wait_for_quiet(2.0, bound, read=lambda: {"loadavg_1min": load, "cpus": 2},
                                                  sleep=clock.sleep, clock=clock)
        assert waited == 0 and clock.slept == []


def test_a_run_above_the_bound_at_its_start_or_end_is_noisy():
    pin = {"emulator": [1], "endpoints": [0]}
    quiet = campaign.host_record({"loadavg_1min": 0.4, "cpus": 2}, {"loadavg_1min": 1.9, "cpus": 2}, 2.0, 0, pin)
    assert quiet["noisy"] is False and quiet["noisy_why"] is None
    assert quiet["loadavg_1min_start"] == 0.4 and quiet["loadavg_1min_end"] == 1.9 and quiet["pinned"] == pin
    late = campaign.host_record({"loadavg_1min": 3.0, "cpus": 2}, {"loadavg_1min": 9.5, "cpus": 2}, 2.0, 300.0, pin)
    assert late["noisy"] is True
    assert late["noisy_why"] == "load 3 > 2 at the start (after waiting 300 s); load 9.5 > 2 at the end"
    unknown = campaign.host_record({"loadavg_1min": None, "cpus": 2}, {"loadavg_1min": None, "cpus": 2}, 2.0, 0, pin)
    assert unknown["noisy"] is False


def test_pinning_gives_each_shard_two_cores_and_leaves_one_when_it_can():
    # 2 cores, one shard: emulator and endpoints apart, nothing left over
    assert campaign.plan_pinning([0, 1]) == {"emulator": [1], "endpoints": [0]}
    # 2 cores, 2 shards: not enough, nothing pinned, and why
    p = campaign.plan_pinning([0, 1], (1, 2))
    assert p["emulator"] is None and p["endpoints"] is None and "2 core(s) for 2 shard(s)" in p["why"]
    # 5 cores, 2 shards: core 0 for the rest, shard 0 on 1+2, shard 1 on 3+4
    assert campaign.plan_pinning([0, 1, 2, 3, 4], (0, 2)) == {"emulator": [1], "endpoints": [2]}
    assert campaign.plan_pinning([0, 1, 2, 3, 4], (1, 2)) == {"emulator": [3], "endpoints": [4]}
    # the cores this process may use, not the machine's numbering
    assert campaign.plan_pinning([4, 6, 9]) == {"emulator": [6], "endpoints": [9]}
    assert campaign.plan_pinning([3])["emulator"] is None


def test_the_agents_run_on_the_endpoint_cores():
    argv = emulate._agent_argv("left", Path("/x"), [0])
    assert argv[:3] == ["taskset", "-c", "0"] and argv[3] == "env"
    assert emulate._agent_argv("left", Path("/x"))[0] == "env"


# ------------------------------------------------------------------ campaign file keys

CAMP = """
[campaign]
name = "quiet"
scenarios = ["s.toml"]
ccs = ["cubic"]
{extra}

[[flows]]
type = "duration"
duration_s = 4
{checks}
"""


def _camp(tmp_path, extra="", checks=""):
    (tmp_path / "s.toml").write_text(SMALL_SCENARIO)
    (tmp_path / "c.toml").write_text(CAMP.format(extra=extra, checks=checks))
    return tmp_path / "c.toml"


def test_campaign_file_quiet_lab_keys_and_checks(tmp_path):
    c = campaign.load(_camp(tmp_path))
    assert c.max_load is None and c.load_wait_s == 0 and c.pin is True and c.checks is None
    c = campaign.load(_camp(tmp_path, "max_load = 1.5\nload_wait_s = 120\npin = false",
                            '[checks]\nnames = ["cc/all-hsr/bbr-vs-cubic/goodput_bps", "a/b"]'))
    assert (c.max_load, c.load_wait_s, c.pin) == (1.5, 120.0, False)
    assert c.checks == ["cc/all-hsr/bbr-vs-cubic/goodput_bps", "a/b"]
    bad = [("max_load = 0", "", "max_load must be a load average above 0"),
           ("max_load = true", "", "max_load must be"),
           ("load_wait_s = -1", "", "load_wait_s must be within 0..86400"),
           ("pin = 1", "", "pin must be true or false"),
           ("max_lod = 2", "", "did you mean 'max_load'"),
           ("", "[checks]\nnames = \"x\"", "[checks] names must be a list"),
           ("", "[checks]\nnames = [\"x\", \"x\"]", "gives 'x' twice"),
           ("", "[checks]\nname = [\"x\"]", "did you mean 'names'"),
           ("", "[chekcs]\nnames = [\"x\"]", "did you mean 'checks'")]
    for extra, checks, message in bad:
        with pytest.raises(InputError, match=None) as exc:
            campaign.load(_camp(tmp_path, extra, checks))
        assert message in str(exc.value) and "c.toml" in str(exc.value), (extra, checks, str(exc.value))


# ------------------------------------------------------------------ the restored control

def _paths_hash(outdir: Path) -> str:
    """The compiled path's content, hashed as it was for the witness below."""
    h = hashlib.sha256()
    names = sorted(str(x.relative_to(outdir)) for x in (outdir / "traces").glob("*.json"))
    names += [n for n in ("events.csv", "radio.csv") if (outdir / n).is_file()]
    for n in names:
        h.update(n.encode())
        h.update((outdir / n).read_bytes())
    return h.hexdigest()


#: the standing-train paths of seeds 170 and 174 (60-s window) as the code of commit 6adf483
#: compiled scenarios/study-static.toml of that commit, the runs of docs/findings/ (witnessed
#: by running that commit's hsrtcp.lab.emulate.compile_source, 27 Nov)
CONTROL_V1 = {170: "b5823a754d877433", 174: "f20affe9c102925f"}


def test_the_mitigation_campaigns_run_the_control_the_committed_findings_ran(tmp_path):
    files = {}
    for name in ("mitigations", "mitigations-aa", "mitigations-bbr"):
        c = campaign.load(ROOT / "campaigns" / f"{name}.toml")
        files[name] = [(p.name, c.scenario_label(i), c.scenario_start(i)) for i, p in enumerate(c.scenarios)]
        assert c.load_wait_s > 0  # a quiet lab: runs wait for the load to fall
    # the three campaigns are paired with each other: the same scenario files and windows
    assert files["mitigations"] == files["mitigations-aa"] == files["mitigations-bbr"]
    static = [f for f, label, _ in files["mitigations"] if label == "static"]
    assert static == ["mitigations-control-v1.toml"]
    c = campaign.load(ROOT / "campaigns" / "mitigations.toml")
    si = [c.scenario_label(i) for i in range(len(c.scenarios))].index("static")
    for seed, expected in CONTROL_V1.items():
        comp = emulate.compile_source(c.scenarios[si], tmp_path / f"s{seed}", c.duration_s, seed=seed)
        assert _paths_hash(Path(comp.outdir))[:16] == expected, seed
        traces = Path(comp.outdir) / "traces"
        bw = json.loads((traces / "bw_down_p1.json").read_text())["RepeatedBwPatternConfig"]["pattern"]
        loss = json.loads((traces / "loss_down_p1.json").read_text())["RepeatedLossPatternConfig"]["pattern"]
        # the control of the committed runs: a 20 Mbit/s carrier (the standing train's signal
        # gives 20 for seed 170, 14.05 for 174) and 0.75 % loss, not the study's 1.66 Mbit/s
        rates = {int(p["StaticBwConfig"]["bw"].removesuffix("bps")) for p in bw}
        assert rates == {20_000_000 if seed == 170 else 14_052_608}
        assert {p["StaticLossConfig"]["loss"][0] for p in loss} == {0.0075}


def test_the_mitigation_campaigns_name_the_report_s_headline_checks():
    from hsrtcp.findings.multiplicity import HEADLINES
    from hsrtcp.findings.runs import check_name

    names = [check_name(h.question, h.group, h.contrast.label, h.outcome) for h in HEADLINES]
    for name in ("mitigations", "mitigations-aa", "mitigations-bbr"):
        raw = tomllib.loads((ROOT / "campaigns" / f"{name}.toml").read_text())
        assert raw["checks"]["names"] == names, name


# ------------------------------------------------------------------ real runs (root, Rattan)

@pytest.mark.netns
def test_a_campaign_run_records_its_host_load_pinning_path_hash_and_checks(tmp_path, monkeypatch):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("7.25 5.00 3.00 3/300 1234\n")
    monkeypatch.setattr(bundle, "LOADAVG", loadavg)
    c = campaign.load(_camp(tmp_path, "max_load = 2", '[checks]\nnames = ["a/b/c/d"]'))
    runs = tmp_path / "runs"
    first = campaign.run(c, runs, progress=False, quiet=True)
    assert [r["status"] for r in first] == ["ok"] and first[0]["noisy"] is True
    m = json.loads((runs / first[0]["run_id"] / "manifest.json").read_text())
    host = m["host"]
    assert host["loadavg_1min_start"] == 7.25 and host["loadavg_1min_end"] == 7.25 and host["max_load"] == 2
    assert host["noisy"] is True and host["noisy_why"] == "load 7.25 > 2 at the start; load 7.25 > 2 at the end"
    assert host["cpus"] == os.cpu_count()
    assert host["pinned"] == campaign.plan_pinning(sorted(os.sched_getaffinity(0)))
    assert m["scenario"]["compiled_sha256"] == m["config"]["scenario"]["sha256"]
    assert len(m["scenario"]["compiled_sha256"]) == 64
    assert m["checks"] == ["a/b/c/d"]
    assert bundle.check(runs / first[0]["run_id"]) == []
    # run again: the noisy bundle counts as done, unless asked to make it again (now quiet)
    again = campaign.run(c, runs, progress=False, quiet=True)
    assert [r["status"] for r in again] == ["skipped (already done)"]
    loadavg.write_text("0.50 0.40 0.30 1/300 1234\n")
    redo = campaign.run(c, runs, progress=False, quiet=True, redo_noisy=True)
    assert [r["status"] for r in redo] == ["ok"] and redo[0]["noisy"] is False
    m = json.loads((runs / first[0]["run_id"] / "manifest.json").read_text())
    assert m["host"]["noisy"] is False and m["host"]["loadavg_1min_start"] == 0.5


def test_a_run_outside_a_campaign_records_its_load_without_judging_it():
    class Outcome:
        load_start = {"loadavg_1min": 1.25, "cpus": 2}
        load_end = {"loadavg_1min": 3.5, "cpus": 2}

    assert bundle._host(Outcome()) == {"host": {"loadavg_1min_start": 1.25, "loadavg_1min_end": 3.5, "cpus": 2,
                                                "max_load": None, "noisy": None}}
    Outcome.load_start = Outcome.load_end = None
    assert bundle._host(Outcome()) == {}


@pytest.mark.netns
def test_rattan_and_the_endpoints_run_on_the_cores_they_were_given(tmp_path, monkeypatch):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("4.00 3.00 2.00 1/100 99\n")
    monkeypatch.setattr(bundle, "LOADAVG", loadavg)
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs 2 cores")
    pin = {"emulator": [cores[1]], "endpoints": [cores[0]]}
    # the command runs under the left agent, the agent under Rattan: each reports its cores
    script = ("import os\n"
              "def cores(pid):\n"
              "    for ln in open(f'/proc/{pid}/status'):\n"
              "        if ln.startswith('Cpus_allowed_list:'):\n"
              "            return ln.split()[1]\n"
              "def parent(pid):\n"
              "    return int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
              "agent = os.getppid()\n"
              "print('command', cores(os.getpid()), 'agent', cores(agent), 'above', cores(parent(agent)))\n")
    (tmp_path / "probe.py").write_text(script)
    before = os.sched_getaffinity(0)
    out = emulate.run(ROOT / "scenarios" / "smoke.toml", tmp_path / "run",
                      {"kind": "command", "argv": [os.sys.executable, str(tmp_path / "probe.py")]},
                      duration_s=5, cpus=pin)
    assert out.ok, out.errors
    assert os.sched_getaffinity(0) == before  # this process got its cores back
    assert out.load_start["loadavg_1min"] == out.load_end["loadavg_1min"] == 4.0
    said = (tmp_path / "run" / "command.out").read_text().split()
    got = dict(zip(said[0::2], said[1::2]))
    assert got["command"] == str(cores[0]) and got["agent"] == str(cores[0])
    assert got["above"] == str(cores[1])  # Rattan, which started the agent
