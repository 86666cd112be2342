"""M31 instance classes (S4 §IV-A, footnote 6; A24: the rule exactly, whatever the rounding
of the paper's shares)."""

from __future__ import annotations

#: S4's 90 % barrier; the paper calls a different value "strict mode".
DEFAULT_BARRIER = 0.90


def instance_class(u_c: float | None, u_t: float | None, barrier: float = DEFAULT_BARRIER) -> str | None:
    """``negative`` (U_c < 1), ``positive`` (U_c ≥ 1 and U_t > barrier, strictly),
    ``semi-positive`` (U_c ≥ 1 and U_t ≤ barrier); None when U_c or U_t is unknown."""
    if u_c is None or u_t is None:
        return None
    if u_c < 1:
        return "negative"
    return "positive" if u_t > barrier else "semi-positive"
