"""The figures' extra grouping keys in hsrtcp.context.classes (issue 33): seed 000 Table II's
speed bands (with the band below 150 km/h the M21 classes lack), the network generation of
a flow and its changes, handoff bands by count."""

from __future__ import annotations

import pytest

from hsrtcp.context import classes


@pytest.mark.parametrize(("vmin", "vmax", "band"), [
    (0.0, 0.0, "static"), (0.0, 5.0, "static"), (6.0, 149.9, "0-150"), (100.0, 100.0, "0-150"),
    (150.0, 279.0, "150-280"), (280.0, 310.0, "280-310"), (300.0, 310.0, "280-310"), (311.0, 320.0, ">310"),
    (0.0, 100.0, "mixed"), (140.0, 160.0, "mixed"), (250.0, 300.0, "mixed"), (None, None, None),
])
def test_speed_band(vmin, vmax, band):
    assert classes.speed_band(vmin, vmax) == band


@pytest.mark.parametrize(("rats", "gen"), [
    ("LTE", "4G"), ("HSPA+", "3G"), ("EDGE,LTE", "2G+4G"), ("HSDPA,UMTS", "3G"), ("NR", "5G SA"),
    ("LTE,NR", "4G+5G SA"), ("LTE,FOO", None), ("", None), (None, None),
    # context's generations
    ("5G NSA", "5G NSA"), ("4G,5G NSA", "4G+5G NSA"), ("2G", "2G"), ("5G SA", "5G SA"),
])
def test_flow_generation(rats, gen):
    assert classes.flow_generation(rats) == gen


@pytest.mark.parametrize(("n", "band"), [(0, "0"), (1, "1-8"), (8, "1-8"), (9, "9-16"), (16, "9-16"),
                                         (17, "17+"), (None, None)])
def test_handoff_band(n, band):
    assert classes.handoff_band(n) == band


def test_the_m21_classes_are_unchanged():
    # the study's classes (docs/study.md numbers) must not move with the extra keys
    assert classes.speed_class(6.0, 149.0) == "low"
    assert classes.speed_class(280.0, 310.0) == "high"
    assert classes.flow_class("high", 9) == ("high_9_16", None)


@pytest.mark.parametrize(("offset", "gen"), [(0.0, "5G NSA"), (1.604, "4G+5G NSA")])
def test_a_5g_nsa_flow_is_classed_5g_nsa(tmp_path, offset, gen):
    """The figures' generation of a flow is context's ``generations``: the EN-DC flow of
    tests/python/context/test_flow_generations.py (rats LTE) was classed 4G before."""
    from hsrtcp.cli import main
    from hsrtcp.figures.inputs import Inputs

    from ..context.test_flow_generations import NSA_OFFSET, analyze_irish

    analyze_irish(tmp_path / "out", NSA_OFFSET + offset)
    assert main(["study", str(tmp_path / "out"), "-o", str(tmp_path / "study"), "-q"]) == 0
    flows = Inputs(tmp_path / "study").flows()
    assert flows["rats"].to_list() == ["LTE"] and flows["generation"].to_list() == [gen]
