"""Rattan config handling: units, validation (what would crash 0.1.1 is refused with the file
and cell named), and the emulator's own timeline (`--visualize-trace`) of a hand-made trace."""

from __future__ import annotations

import csv
import io

import pytest

from hsrtcp.errors import InputError
from hsrtcp.lab import netns, rattan

from labtools import one_path_config, write_bw_trace


def test_parse_units():
    assert rattan.parse_rate("20Mbps") == 20e6
    assert rattan.parse_rate("1bps") == 1
    assert rattan.parse_rate("25Kbps") == 25e3
    assert rattan.parse_rate("1MBps") == 8e6
    assert rattan.parse_duration("25ms") == pytest.approx(0.025)
    with pytest.raises(ValueError):
        rattan.parse_rate("fast")


def test_validation_names_file_and_cell(tmp_path):
    write_bw_trace(tmp_path / "bw_down.json", [("20Mbps", 2)])
    cfg = one_path_config(tmp_path)
    rattan.validate_config(rattan.load_config(cfg), cfg)  # fine as written
    bad = rattan.load_config(cfg)
    bad["env"]["mode"] = "Compatible"
    with pytest.raises(InputError, match=r"rattan.toml.*Isolated"):
        rattan.validate_config(bad, cfg)
    bad = rattan.load_config(cfg)
    bad["cells"]["down_bw"]["trace"] = "nowhere.json"
    with pytest.raises(InputError, match=r"\[cells.down_bw\].*not found"):
        rattan.validate_config(bad, cfg)
    (tmp_path / "broken.toml").write_text("[env\n")
    with pytest.raises(InputError, match="broken.toml: not valid TOML"):
        rattan.load_config(tmp_path / "broken.toml")
    # read as campaigns and scenarios are (one TOML reader): not UTF-8 is a message, not a traceback
    (tmp_path / "latin1.toml").write_bytes(b"# caf\xe9\n[env]\n")
    with pytest.raises(InputError, match="latin1.toml: not UTF-8 text at byte 5"):
        rattan.load_config(tmp_path / "latin1.toml")


@pytest.mark.skipif(netns.find_tool("rattan") is None, reason="rattan not installed (make rattan)")
def test_visualize_matches_the_trace(tmp_path):
    write_bw_trace(tmp_path / "bw_down.json", [("20Mbps", 5), ("1bps", 2), ("10Mbps", 3)])
    cfg = one_path_config(tmp_path)
    rows = list(csv.DictReader(io.StringIO(rattan.visualize(cfg, 10))))
    got = [(float(r["start_time_secs"]), float(r["duration_secs"]), r["down_bw_bandwidth"]) for r in rows]
    assert got == [(0.0, 5.0, "20Mbps"), (5.0, 2.0, "1bps"), (7.0, 3.0, "10Mbps")]
