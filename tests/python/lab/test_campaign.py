"""A short campaign with two congestion controls produces complete, valid bundles; a second
campaign runs right after; re-running skips finished runs; nothing is left behind."""

from __future__ import annotations

import json

import polars as pl
import pytest

from hsrtcp.lab import bundle, campaign, netns

from labtools import one_path_campaign

pytestmark = pytest.mark.netns


def _setup(tmp_path, flows: str, ccs: str) -> campaign.Campaign:
    return campaign.load(one_path_campaign(tmp_path, f"""
[campaign]
name = "pytest"
scenarios = ["rattan.toml"]
ccs = {ccs}
duration_s = 5

[sysctls]
"net.ipv4.tcp_frto" = 0

{flows}
"""))


def test_campaign_two_ccs_then_another(tmp_path):
    c = _setup(tmp_path, '[[flows]]\ntype = "duration"\nduration_s = 4\n', '["cubic", "reno"]')
    runs = tmp_path / "runs"
    res = campaign.run(c, runs, progress=False)
    assert [r["status"] for r in res] == ["ok", "ok"]
    for r, cc in zip(res, ["cubic", "reno"]):
        b = runs / r["run_id"]
        assert bundle.check(b) == []
        m = json.loads((b / "manifest.json").read_text())
        assert m["cc"] == cc and m["flow"]["type"] == "duration"
        assert m["versions"]["rattan"] == "0.1.1"
        assert m["sysctls"]["server"]["net.ipv4.tcp_frto"] == "0"
        assert m["start_time"] < m["t0"] < m["end_time"]
        flows = [json.loads(x) for x in (b / "server_flows.jsonl").read_text().splitlines()]
        assert [f["cc"] for f in flows] == [cc]
        ti = pl.read_parquet(b / "tcpinfo.parquet")
        assert ti.height > 300 and ti["flow_id"].n_unique() == 1
        client = json.loads((b / "client.json").read_text())
        assert client[0]["error"] is None and client[0]["bytes"] > 1e6
    # the same campaign again: everything is already done
    again = campaign.run(c, runs, progress=False)
    assert all(r["status"].startswith("skipped") for r in again)
    # a different campaign right after, into the same machine state
    c2 = _setup(tmp_path, '[[flows]]\ntype = "sequence"\nsize = "64KB"\ncount = 3\n', '["bbr"]')
    res2 = campaign.run(c2, tmp_path / "runs2", progress=False)
    assert res2[0]["status"] == "ok"
    b2 = tmp_path / "runs2" / res2[0]["run_id"]
    assert bundle.check(b2) == []
    client = json.loads((b2 / "client.json").read_text())
    assert [x["bytes"] for x in client] == [64000] * 3
    # nothing of ours left: namespaces (by the ids the manifests recorded), processes
    ids = [json.loads((d / "manifest.json").read_text())["rattan"]["id"]
           for d in [*runs.glob("0*"), *(tmp_path / "runs2").glob("0*")]]
    assert len(ids) == 3 and all(ids)
    assert [n for n in netns.list_netns() if any(n.endswith("-" + i) for i in ids)] == []
    assert netns.pids_mentioning(str(tmp_path)) == []


def test_bundle_check_finds_missing_files(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"bundle_format_version": 1}))
    problems = bundle.check(tmp_path)
    assert any("missing key 'run_id'" in p for p in problems)
