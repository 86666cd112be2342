"""A figure of a column with no finite value (an older results table whose floats were NaN,
read as null) is drawn without a word on stderr: numpy's "All-NaN slice encountered" reached
the user through `hsrtcp report` (issue 30, item 17: no library warning on stderr)."""

import warnings

import numpy as np
import polars as pl
import pytest

from hsrtcp.figures import draw


@pytest.mark.parametrize("values", [[None, None, None], [float("nan")] * 3])
def test_samples_with_marks_of_no_value_is_silent(values):
    df = pl.DataFrame({"t_rel": [0.0, 1.0, 2.0], "rtt_s": values}, schema={"t_rel": pl.Float64, "rtt_s": pl.Float64})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draw.samples_with_marks(df, "rtt_s", [1.0], "RTT", "s", "RTT of one flow")


@pytest.mark.parametrize("unit", ["s", "bit/s"])
def test_the_scale_of_no_value_is_the_smallest_and_silent(unit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert draw._scale(unit, np.array([np.nan, np.nan])) == draw._scale(unit, np.array([]))


def test_a_rate_of_no_value_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draw.rate_with_marks(np.array([0.0, 1.0]), np.array([np.nan, np.nan]), [0.5], "rate", "onset", "a rate")
