"""[link] queue_ms (issue 34 item 1): a bottleneck buffer given in milliseconds compiles to
rattan's DropTail byte_limit at each path's and direction's nominal rate."""

from __future__ import annotations

import tomllib

import pytest

from hsrtcp.lab import scenario


def _trace(path, per_ms):
    # Mahimahi: one line per 1500-byte delivery opportunity; per_ms a millisecond = per_ms x 12 Mbit/s
    path.write_text("".join(f"{i}\n" * per_ms for i in range(1, 1001)))


def _scenario(tmp_path, link):
    _trace(tmp_path / "one.trace", 1)
    _trace(tmp_path / "two.trace", 2)
    p = tmp_path / "s.toml"
    p.write_text('[scenario]\nname = "q"\nseed = 1\nduration_s = 20\n'
                 f"[link]\n{link}\n"
                 '[[carriers]]\nname = "M"\ntrace_down = "two.trace"\ntrace_up = "one.trace"\n')
    return p


def test_queue_ms_compiles_to_bytes_at_each_rate(tmp_path):
    c = scenario.load(_scenario(tmp_path, "queue_ms = 100")).compile(tmp_path / "out")
    cells = tomllib.loads(c.rattan_config.read_text())["cells"]
    # 100 ms at 24 Mbit/s down = 300,000 bytes; at 12 Mbit/s up = 150,000 bytes
    assert cells["p1_dn_bw"]["queue_config"]["byte_limit"] == 300_000
    assert cells["p1_up_bw"]["queue_config"]["byte_limit"] == 150_000


def test_queue_ms_and_queue_bytes_together_are_refused(tmp_path):
    with pytest.raises(scenario.ScenarioError, match="queue_ms.*queue_bytes"):
        scenario.load(_scenario(tmp_path, "queue_ms = 100\nqueue_bytes = 150000"))


def test_without_queue_ms_no_byte_limit(tmp_path):
    c = scenario.load(_scenario(tmp_path, "")).compile(tmp_path / "out")
    cells = tomllib.loads(c.rattan_config.read_text())["cells"]
    assert "byte_limit" not in cells["p1_dn_bw"]["queue_config"]
