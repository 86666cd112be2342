"""Issue 31 ("no exponent notation"): `hsrtcp model predict` as the README runs it printed
``P_a=3.51875e-31`` on its title line and in its note (P_a derived from the per-ACK rate).
Every number it prints is now positional (hsrtcp.units.plain)."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from hsrtcp.cli.model import model
from hsrtcp.models import independent_ack_burst_loss
from hsrtcp.units import plain

README = Path(__file__).resolve().parents[3] / "README.md"
EXPONENT = re.compile(r"\d[eE][+-]?\d")


def test_readme_predict_prints_no_exponent_and_the_derived_p_a_in_full():
    line = next(ln for ln in README.read_text().splitlines() if "hsrtcp model predict" in ln)
    args = line.split("#")[0].split()[2:]  # from "predict"
    res = CliRunner().invoke(model, [*args, "--mss", "1460"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert not EXPONENT.search(res.stdout), res.stdout
    P_a = independent_ack_burst_loss(0.0066, 0.0075, 2.0)  # noqa: N806 - the models' name
    assert P_a < 1e-20  # (the case that printed an exponent)
    assert f"P_a={plain(P_a, 4)} " in res.stdout and f"P_a = {plain(P_a, 4)} from p_a = 0.0066" in res.stdout
