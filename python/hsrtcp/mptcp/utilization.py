"""M29 conjunction efficiency U_c, M30 total utilization U_t, M32 subflow utilization.

S4 eq. (1) and (2), with R_n the average rate of single-path TCP on carrier n and R'_n the
average rate of the MPTCP subflow on carrier n, n = 1..N:

    U_c = Σ_n R'_n / max_n R_n        (M29; > 1: conjunction beats choosing the best carrier)
    U_t = Σ_n R'_n / Σ_n R_n          (M30)
    R'_n / R_n                        (M32, per subflow)

U_c is nominally within [0, N] (A23: the paper's [0, 2] is the N = 2 case); in practice it can
exceed N. A carrier without a single-path rate makes U_c, U_t and its M32 null (not 0).
"""

from __future__ import annotations


def conjunction_efficiency(sub_rates: list[float | None], single_rates: list[float | None]) -> float | None:
    """M29 (S4 eq. 1)."""
    if not single_rates or any(r is None for r in single_rates) or any(r is None for r in sub_rates):
        return None
    best = max(single_rates)
    return sum(sub_rates) / best if best > 0 else None


def total_utilization(sub_rates: list[float | None], single_rates: list[float | None]) -> float | None:
    """M30 (S4 eq. 2)."""
    if not single_rates or any(r is None for r in single_rates) or any(r is None for r in sub_rates):
        return None
    total = sum(single_rates)
    return sum(sub_rates) / total if total > 0 else None


def subflow_utilization(sub_rate: float | None, single_rate: float | None) -> float | None:
    """M32: R'_n / R_n."""
    if sub_rate is None or single_rate is None or single_rate <= 0:
        return None
    return sub_rate / single_rate
