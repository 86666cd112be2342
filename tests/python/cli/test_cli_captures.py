"""`hsrtcp apps` and `hsrtcp congestion` match the captures given beside a results directory
through one helper (hsrtcp.cli.captures.match_captures, issue 37 item 4): the same refusals,
word for word, from both commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from hsrtcp.cli import main
from hsrtcp.cli.captures import match_captures
from hsrtcp.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data"
CAP = DATA / "multi_concurrent.server.pcap"  # (conftest.py's `results` fixture analyzes it)
OTHER = DATA / "nano.server.pcap"


@pytest.mark.parametrize("command", ["apps", "congestion"])
def test_both_commands_refuse_alike(command, results, tmp_path, capsys):
    missing = tmp_path / "gone.pcap"
    assert main([command, str(results), str(missing)]) == 3
    assert f"error: {missing}: no such capture file" in capsys.readouterr().err
    assert main([command, str(results), str(OTHER)]) == 3
    err = capsys.readouterr().err
    assert f"error: {OTHER}: not a capture of {results} (it read " in err and CAP.name in err


@pytest.mark.parametrize("command", ["apps", "congestion"])
def test_both_commands_take_the_capture_by_its_file_name(command, results, tmp_path, capsys):
    copy = tmp_path / CAP.name
    copy.write_bytes(CAP.read_bytes())
    assert main([command, str(results), str(copy), "-o", str(tmp_path / "o")]) == 0
    assert "3 flows" in capsys.readouterr().out


def test_match_captures_maps_the_read_name_to_the_path_given(tmp_path):
    copy = tmp_path / CAP.name
    copy.write_bytes(b"x")
    assert match_captures(tmp_path, {str(CAP), "elsewhere/b.pcap"}, [copy]) == {str(CAP): copy}
    with pytest.raises(InputError, match="it read no capture"):
        match_captures(tmp_path, set(), [copy])
