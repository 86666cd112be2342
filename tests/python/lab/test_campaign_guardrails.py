"""Guard rails for writing campaigns (issue 38): "did you mean" for misspelt keys and
sysctls, an explicit path for a single-path flow on a multi-carrier scenario (refused
before anything runs without one), a warning for a flow longer than the scenario window."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hsrtcp.errors import InputError
from hsrtcp.lab import campaign
from hsrtcp.testing import pcapio

REPO = Path(__file__).resolve().parents[3]

BASE = """
[campaign]
name = "g"
scenarios = ["two.toml"]
ccs = ["cubic"]
duration_s = 8
{campaign}
[sysctls]
"net.ipv4.tcp_frto" = 2
{tables}
[[flows]]
type = "duration"
duration_s = 4
{flow}
"""


def _write(tmp_path, campaign_extra="", flow="", tables=""):
    shutil.copyfile(REPO / "scenarios" / "two-carriers.toml", tmp_path / "two.toml")
    (tmp_path / "c.toml").write_text(BASE.format(campaign=campaign_extra, flow=flow, tables=tables))
    return tmp_path / "c.toml"


@pytest.mark.parametrize("where, text, message", [
    ("campaign", "reseeed = true", "[campaign]: unknown key 'reseeed' (did you mean 'reseed'?)"),
    ("flow", "duraton = 3", "[[flows]] #1: unknown key 'duraton' (did you mean 'duration_s'?)"),
    ("tables", "[flow]\ntype = \"size\"", "top level: unknown key 'flow' (did you mean 'flows'?)"),
    ("tables", "[mptcp]\nsubflow = 2", "[mptcp]: unknown key 'subflow' (did you mean 'subflows'?)"),
    ("tables", "[[variants]]\nname = \"a\"\ncc = \"cubic\"\nsysctl = {}",
     "unknown key 'sysctl' (did you mean 'sysctls'?)"),
    ("tables", "[[variants]]\nname = \"a\"\ncc = \"cubic\"\nroute = {rto_min = 50}",
     "route key 'rto_min' unknown (did you mean 'rto_min_ms'?)"),
    ("sysctl", '"net.ipv4.tcp_frot" = 0', "no sysctl 'net.ipv4.tcp_frot' on this kernel (did you mean 'net.ipv4.tcp_frto'?)"),
    ("flow", "path = 0", "path must be a path number within 1..8"),
    ("campaign", "mptcp = true\n[[flows]]\ntype = \"size\"\nsize = \"1MB\"\npath = 2",
     "path chooses the path of a single-path flow"),
])
def test_misspelt_keys_are_named_with_a_suggestion(tmp_path, where, text, message):
    """Before: `unknown keys ['reseeed']` with no hint (scenario files had one); a misspelt
    sysctl reached the namespaces."""
    if where == "sysctl":
        path = _write(tmp_path)
        path.write_text(path.read_text().replace('"net.ipv4.tcp_frto" = 2', text))
    elif where == "tables" and text.startswith("[[variants]]"):
        path = _write(tmp_path, tables=text)
        path.write_text(path.read_text().replace('ccs = ["cubic"]\n', ""))
    else:
        path = _write(tmp_path, **{{"campaign": "campaign_extra", "flow": "flow", "tables": "tables"}[where]: text})
    with pytest.raises(InputError) as exc:
        campaign.load(path)
    assert str(path) in str(exc.value) and message in str(exc.value), str(exc.value)


@pytest.mark.netns
def test_a_single_path_flow_on_two_carriers_must_choose_its_path(tmp_path, capsys):
    """Before: it ran on path 1, silently. Now: refused before anything runs; with path = 2
    every data byte goes through carrier 2's emulated path."""
    runs = tmp_path / "runs"
    with pytest.raises(InputError) as exc:
        campaign.run(campaign.load(_write(tmp_path)), runs, progress=False)
    assert "[[flows]] #1: scenario two-carriers has 2 paths (carriers)" in str(exc.value)
    assert "path = 1..2" in str(exc.value)
    assert not [p for p in runs.iterdir() if not p.name.startswith(".")]
    with pytest.raises(InputError, match="path = 3, but scenario two-carriers has 2 path"):
        campaign.run(campaign.load(_write(tmp_path, flow="path = 3")), runs, progress=False)
    # a 4-s flow in a 3-s window: a warning, and it runs
    path = _write(tmp_path, flow="path = 2")
    path.write_text(path.read_text().replace("duration_s = 8", "duration_s = 3"))
    res = campaign.run(campaign.load(path), runs, progress=False)
    err = capsys.readouterr().err
    assert "warning: " in err and "[[flows]] #1 (duration) lasts 4 s but the scenario's window is 3 s" in err
    assert [r["status"] for r in res] == ["ok"]
    b = runs / res[0]["run_id"]
    m = json.loads((b / "manifest.json").read_text())
    assert m["flow"]["path"] == 2
    client = json.loads((b / "client.json").read_text())
    assert client[0]["local"].startswith("10.1.2.1:") and client[0]["bytes"] > 0
    data = {p: sum(x.payload_len for x in pcapio.read_tcp(b / "capture" / f"phone_p{p}.pcap") if x.sport == 5201)
            for p in (1, 2)}
    assert data[1] == 0 and data[2] >= client[0]["bytes"]
