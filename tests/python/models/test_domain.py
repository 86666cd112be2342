"""Domain errors name the offending input; vectorized calls keep shapes and scalar types."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hsrtcp import models
from hsrtcp.errors import ModelDomainError

GOOD = dict(p_d=0.007526, P_a=0.001, q=0.2726, rtt=0.2, T=2.0, b=2, W_m=1000)


@pytest.mark.parametrize(
    ("name", "value", "pattern"),
    [
        ("p_d", -0.1, r"p_d = -0\.1 is outside its domain \[0, 1\)"),
        ("p_d", 1.0, r"p_d = 1 is outside"),
        ("P_a", 1.0, r"P_a = 1 is outside its domain \[0, 1\)"),
        ("q", 1.0, r"q = 1 is outside"),
        ("q", math.nan, r"q = NaN is outside"),
        ("rtt", 0.0, r"rtt = 0 s is outside its domain \(0, inf\)"),
        ("rtt", math.inf, r"rtt = inf s is outside"),
        ("T", -1.0, r"T = -1 s is outside"),
        ("b", 0.5, r"b = 0\.5 packets per ACK is outside its domain \[1, inf\)"),
        ("W_m", 0.5, r"W_m = 0\.5 packets is outside its domain \[1, inf\]"),
    ],
)
@pytest.mark.parametrize("variant", models.VARIANTS)
def test_enhanced_names_the_input(name, value, pattern, variant):
    with pytest.raises(ModelDomainError, match=rf"enhanced\[{variant}\]: {pattern}"):
        models.enhanced(**{**GOOD, name: value}, variant=variant)


@pytest.mark.parametrize("fn", [models.pftk_full, models.pftk_approx])
@pytest.mark.parametrize(
    ("kw", "pattern"),
    [
        (dict(p=1.2), r"p = 1\.2 is outside"),
        (dict(rtt=-0.1), r"rtt = -0\.1 s"),
        (dict(t0=0.0), r"t0 = 0 s"),
        (dict(b=0.0), r"b = 0 packets per ACK"),
        (dict(w_max=0.0), r"w_max = 0 packets"),
        (dict(p=0.0, w_max=math.inf), r"p = 0 with w_max = inf"),
    ],
)
def test_pftk_names_the_input(fn, kw, pattern):
    args = dict(p=0.01, rtt=0.1, t0=1.0, b=2, w_max=1000) | kw
    with pytest.raises(ModelDomainError, match=pattern):
        fn(**args)


def test_array_error_names_position():
    p = np.array([0.01, 0.02, 1.5, 2.0])
    with pytest.raises(ModelDomainError, match=r"p = 1\.5 is outside .* \(at flat index 2 of the broadcast inputs\); 2 elements affected"):
        models.pftk_full(p, 0.1, 1.0)


def test_variant_is_required_and_checked():
    with pytest.raises(TypeError):
        models.enhanced(**GOOD)  # type: ignore[call-arg]
    with pytest.raises(ModelDomainError, match="variant must be one of as_printed, corrected, rederived"):
        models.enhanced(**GOOD, variant="fixed")  # type: ignore[arg-type]


def test_non_numeric_input():
    with pytest.raises(ModelDomainError, match="numbers or numeric arrays"):
        models.pftk_full("a lot", 0.1, 1.0)
    with pytest.raises(ModelDomainError, match="incompatible shapes"):
        models.pftk_full(np.array([0.01, 0.02]), np.array([0.1, 0.2, 0.3]), 1.0)


def test_model_domain_error_is_a_value_error():
    with pytest.raises(ValueError):
        models.enhanced(**{**GOOD, "P_a": 0.5}, variant="rederived")


def test_scalar_in_float_out_array_in_array_out():
    assert type(models.enhanced(**GOOD, variant="rederived")) is float
    assert type(models.pftk_full(0.01, 0.1, 1.0)) is float
    grid = models.enhanced(**{**GOOD, "rtt": np.array([[0.1], [0.2]]), "q": np.array([0.1, 0.2, 0.3])},
                           variant="corrected")
    assert grid.shape == (2, 3)
    assert grid[1, 2] == models.enhanced(**{**GOOD, "rtt": 0.2, "q": 0.3}, variant="corrected")


def test_zero_data_loss_with_ack_burst_loss():
    """p_d = 0: CA phases end only by ACK burst loss, E[X] = 1/P_a and every loss is a timeout."""
    d = models.enhanced_details(0.0, 0.05, 0.3, 0.2, 2.0, 2, np.inf, variant="rederived")
    assert d["E_X"] == pytest.approx(20.0)
    assert d["Q"] == 1.0
    assert d["E_W"] == pytest.approx(2 * (20 - 1) / 2)
    # and it is the limit of p_d → 0
    near = models.enhanced(1e-12, 0.05, 0.3, 0.2, 2.0, 2, np.inf, variant="rederived")
    assert d["throughput"] == pytest.approx(near, rel=1e-5)
    with pytest.raises(ModelDomainError, match="p_d = 0 and P_a = 0 with W_m = inf"):
        models.enhanced(0.0, 0.0, 0.3, 0.2, 2.0, variant="rederived")


def test_deviation_and_bits():
    assert models.deviation(110.0, 100.0) == pytest.approx(0.10)
    assert models.deviation(np.array([50.0, 150.0]), 100.0).tolist() == [0.5, 0.5]
    with pytest.raises(ModelDomainError, match=r"tp_trace = 0 is outside"):
        models.deviation(1.0, 0.0)
    assert models.to_bits_per_second(100.0, 1448) == 100 * 1448 * 8
    with pytest.raises(ModelDomainError, match="mss_bytes = 0 bytes"):
        models.to_bits_per_second(100.0, 0)


def test_package_docstring_examples():
    import doctest

    import hsrtcp.models

    result = doctest.testmod(hsrtcp.models)
    assert result.attempted >= 3 and result.failed == 0
