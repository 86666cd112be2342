"""The ``hsrtcp scenario`` commands through the real entry point (exit codes included)."""

import json

from hsrtcp.cli import main


def test_generate_from_options_show_and_check(tmp_path, capsys):
    out = tmp_path / "u60"
    assert main(["scenario", "generate", "--speed", "300", "--area", "urban", "--duration", "60",
                 "--seed", "4", "-o", str(out)]) == 0
    for f in ("rattan.toml", "radio.csv", "events.csv", "scenario.json", "traces/bw_down_p1.json"):
        assert (out / f).is_file(), f
    doc = json.loads((out / "scenario.json").read_text())
    assert doc["seed"] == 4 and doc["duration_s"] == 60.0 and doc["paths"] == 1
    assert doc["params"]["trip"]["area"] == "urban"
    assert "carrier M:" in capsys.readouterr().out
    assert main(["scenario", "check", str(out), "--no-rattan"]) == 0
    png = tmp_path / "fig.png"
    assert main(["scenario", "show", str(out), "-o", str(png)]) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_generate_file_with_overrides(tmp_path, scenarios_dir):
    out = tmp_path / "s"
    assert main(["scenario", "generate", str(scenarios_dir / "smoke.toml"), "-o", str(out),
                 "--seed", "99", "--duration", "12.5"]) == 0
    doc = json.loads((out / "scenario.json").read_text())
    assert doc["seed"] == 99 and doc["duration_s"] == 12.5


def test_bad_file_exit_code_and_message(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[link]\nloss_dwn = 0.1\n")
    assert main(["scenario", "generate", str(bad), "-o", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert "bad.toml" in err and "'loss_dwn'" in err and "loss_down" in err


def test_check_detects_tampering(tmp_path, scenarios_dir, capsys):
    out = tmp_path / "s"
    assert main(["scenario", "generate", str(scenarios_dir / "smoke.toml"), "-o", str(out)]) == 0
    f = out / "traces" / "bw_up_p1.json"
    f.write_text(f.read_text().replace('"1bps"', '"0bps"'))
    assert main(["scenario", "check", str(out), "--no-rattan"]) == 3
    assert "below 1 bit/s" in capsys.readouterr().err


def test_file_and_options_conflict(tmp_path, scenarios_dir):
    assert main(["scenario", "generate", str(scenarios_dir / "smoke.toml"), "--speed", "100",
                 "-o", str(tmp_path / "x")]) == 2
