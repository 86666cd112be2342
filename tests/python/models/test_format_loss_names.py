"""Issue 31: the per-ACK loss rate p_a and the ACK burst loss probability P_a have distinct
names on the command line. `model predict --p-a` was P_a while the analyze summary printed
the per-ACK rate as "ACK loss p_a": users pasted one for the other (the README did)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from hsrtcp.cli.model import model

BASE = ["--p-d", "0.007526", "--q", "0.2726", "--rtt", "0.2", "--rto", "2", "--b", "2", "--wm", "1000"]
README = Path(__file__).resolve().parents[3] / "README.md"


def _run(args):
    return CliRunner().invoke(model, args, catch_exceptions=False)


def _rows(out):
    return [ln for ln in out.splitlines() if "pftk_" in ln or "enh_" in ln]


def test_ack_burst_loss_is_p_a_and_the_old_names_warn():
    new = _run(["predict", *BASE, "--ack-burst-loss", "0.001"])
    assert new.exit_code == 0 and new.stderr == ""
    assert "41.9817" in new.stdout and "35.3118" in new.stdout  # E2 (models.md), P_a = 0.001
    for old_name in ("--p-a", "--P-a"):
        old = _run(["predict", *BASE, old_name, "0.001"])
        assert old.exit_code == 0
        assert _rows(old.stdout) == _rows(new.stdout)
        assert "deprecated" in old.stderr and "--ack-burst-loss" in old.stderr and "--ack-loss-rate" in old.stderr
    both = _run(["predict", *BASE, "--ack-burst-loss", "0.001", "--p-a", "0.001"])
    assert both.exit_code == 2 and "both given" in both.stderr


def test_help_names_the_two_quantities_apart():
    text = _run(["predict", "--help"]).stdout
    assert "--ack-burst-loss" in text and "--ack-loss-rate" in text
    assert "--p-a" not in text and "--P-a" not in text  # hidden aliases
    flat = " ".join(text.split())
    assert "ACK burst loss probability P_a" in flat and "per-ACK loss rate p_a" in flat


def test_sweep_takes_the_new_name_and_param_alias(tmp_path):
    res = _run(["sweep", "--param", "ack_burst_loss", "--from", "0", "--to", "0.2", "--steps", "3",
                "--ack-burst-loss", "0.001", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "sweep_P_a.csv").exists()


def test_readme_example_passes_the_per_ack_rate_to_its_option():
    """The README's example gives 0.0066, the per-ACK loss rate of T1-12 (0.661 %): it must go to
    --ack-loss-rate, not to the burst probability."""
    line = next(ln for ln in README.read_text().splitlines() if "hsrtcp model predict" in ln)
    assert "--ack-loss-rate 0.0066" in line and "--p-a" not in line and "--P-a" not in line
    args = line.split("#")[0].split()[2:]  # from "predict"
    res = _run(args)
    assert res.exit_code == 0 and res.stderr == ""
    assert "from p_a = 0.0066 under independent ACK losses" in res.stdout
