"""Option types shared by the commands: numbers that are finite and within bounds.

click's ``FloatRange`` lets ``nan`` through (every comparison with it is false) and ``inf``
through an open upper end, and ``IntRange`` without a maximum takes integers no library
below can hold; each then failed deep inside numpy, polars or matplotlib with a traceback.
These types refuse such values as usage errors naming the option (exit 2).
"""

from __future__ import annotations

import math

import click

# Larger than any table or plot can hold (int64 less one, so that ``n + 1`` still fits).
MAX_COUNT = 2**63 - 2


class Number(click.FloatRange):
    """``click.FloatRange`` that refuses NaN, and infinities unless ``allow_inf`` (then
    ``+inf`` alone, for "no limit")."""

    name = "float"

    def __init__(self, min: float | None = None, max: float | None = None, *, min_open: bool = False,  # noqa: A002
                 max_open: bool = False, allow_inf: bool = False) -> None:
        super().__init__(min, max, min_open=min_open, max_open=max_open)
        self.allow_inf = allow_inf

    def convert(self, value, param, ctx):
        v = super().convert(value, param, ctx)
        if math.isnan(v):
            self.fail("NaN is not a number", param, ctx)
        if math.isinf(v) and not (self.allow_inf and v > 0):
            self.fail(f"{v} is not a finite number", param, ctx)
        return v

    def _describe_range(self) -> str:
        if self.min is None and self.max is None:  # any finite number: click would print "x<=None"
            return ""
        return super()._describe_range() + (", or inf" if self.allow_inf and self.max is not None else "")


def count(lo: int = 0, hi: int = MAX_COUNT) -> click.IntRange:
    """An integer option in ``[lo, hi]``; bounded above by default (:data:`MAX_COUNT`)."""
    return click.IntRange(lo, hi)
