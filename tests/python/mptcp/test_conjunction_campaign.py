"""The shipped conjunction campaign parses into seed 004's design (no root needed); the runs
themselves are in tests/python/lab/test_mptcp_conjunction.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from hsrtcp.errors import InputError
from hsrtcp.lab import campaign
from hsrtcp.lab.measure import FlowSpec, path_address

ROOT = Path(__file__).resolve().parents[3]


def test_shipped_campaign_is_seed_004s_design():
    c = campaign.load(ROOT / "campaigns" / "mptcp-conjunction.toml")
    assert [f["type"] for f in c.flows] == ["conjunction"]
    assert c.reseed and c.repetitions >= 3 and c.duration_s == 120
    assert c.flows[0]["duration_s"] <= c.duration_s
    runs = c.runs()
    assert [r["run_id"] for r in runs][:2] == ["001_two-carriers_reno_conjunction-115s_r1",
                                               "002_two-carriers_reno_conjunction-115s_r2"]
    spec = campaign._flow_spec(c.flows[0], "reno", True, c.duration_s)
    assert spec.type == "conjunction" and spec.duration_s == 115


def test_conjunction_needs_a_duration():
    with pytest.raises(InputError, match="needs a duration"):
        FlowSpec(type="conjunction", duration_s=None).validate()
    assert path_address(3) == "10.1.3.1"


def _campaign(tmp_path, mptcp_table: str) -> Path:
    (tmp_path / "c.toml").write_text(
        f'[campaign]\nscenarios = ["{ROOT / "scenarios" / "two-carriers.toml"}"]\nccs = ["reno"]\n'
        f'[[flows]]\ntype = "conjunction"\nduration_s = 10\n{mptcp_table}')
    return tmp_path / "c.toml"


def test_mptcp_knobs_are_checked(tmp_path):
    c = campaign.load(_campaign(tmp_path, '[mptcp]\nendpoint_flags = ["subflow", "backup"]\nsubflows = 4\n'))
    assert c.mptcp_options == {"endpoint_flags": ["subflow", "backup"], "subflows": 4}
    assert campaign.load(_campaign(tmp_path, "")).mptcp_options == {}
    for bad, msg in (('endpoint_flags = ["subflow", "laminar"]', "endpoint_flags must be"),
                     ('endpoint_flags = ["backup"]', "needs 'subflow'"),
                     ("subflows = 9", "0..8"), ("scheduler = 1", "unknown key")):
        with pytest.raises(InputError, match=msg):
            campaign.load(_campaign(tmp_path, f"[mptcp]\n{bad}\n"))
