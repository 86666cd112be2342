"""The PFTK model of TCP Reno throughput (Padhye, Firoiu, Towsley, Kurose).

J. Padhye, V. Firoiu, D. Towsley, J. Kurose, "Modeling TCP Reno performance: a simple model
and its empirical validation", IEEE/ACM ToN 8(2), 2000. The formulas are restated, with the
general-b window-limited branch re-derived, in research/models.md §1; reference values in
§4.2 are reproduced by tests/python/models/.

Units everywhere: probabilities as fractions in [0, 1), times in seconds, windows in packets
(MSS-sized segments), results in packets per second (see :func:`hsrtcp.models.to_bits_per_second`).

All functions accept scalars or numpy arrays (broadcast against each other) and return a
float for all-scalar input, an array otherwise. Inputs outside the domain raise
:class:`hsrtcp.errors.ModelDomainError` naming the input.

Note: PFTK's B(p) is a *send* rate (retransmissions included). At HSR loss rates the
difference from the receive rate is below 1 % (models.md §1.6).
"""

from __future__ import annotations

import numpy as np

from hsrtcp.models._domain import Domain, Floats, broadcast, finish

__all__ = [
    "backoff_factor",
    "expected_unconstrained_window",
    "pftk_approx",
    "pftk_full",
    "timeout_probability",
]


def _one_minus_pow(p: np.ndarray, k: np.ndarray) -> np.ndarray:
    """1 − (1−p)^k, accurate for small p (k may be +inf)."""
    with np.errstate(all="ignore"):
        return -np.expm1(k * np.log1p(-p))


def _geom_sum(n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """S(n, p) = Σ_{k=1..n} (1−p)^(k−1) = (1 − (1−p)^n)/p, continued to real n; S(n, 0) = n.

    Evaluated as n·r·g(u) with r = −ln(1−p)/p and g(u) = (e^u − 1)/u at u = n·ln(1−p), so
    that neither tiny (even subnormal) p nor p = 0 divides two rounded small numbers.
    n = +inf gives 1/p (and +inf at p = 0).
    """
    with np.errstate(all="ignore"):
        r = np.where(p < 1e-8, 1.0 + p / 2.0, -np.log1p(-p) / p)
        u = -(n * r) * p
        g = np.where(np.abs(u) < 1e-10, 1.0 + u / 2.0, np.expm1(u) / u)
        out = n * r * g
        return np.where(np.isinf(n), np.where(p > 0, 1.0 / p, np.inf), out)


def backoff_factor(p: Floats) -> Floats:
    """f(p) = 1 + p + 2p² + 4p³ + 8p⁴ + 16p⁵ + 32p⁶ (PFTK; seed 001 eq. 14).

    T0·f(p)/(1−p) is the expected duration of a timeout sequence whose k-th timeout lasts
    2^(k−1)·T0, capped at 64·T0, when each retransmission fails with probability p.
    """
    arr, scalar = broadcast(p=p)
    x = arr["p"]
    out = 1 + x + 2 * x**2 + 4 * x**3 + 8 * x**4 + 16 * x**5 + 32 * x**6
    return finish(out, scalar)


def _q_hat(w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Q̂(w): probability that a loss indication in a window of w packets is a timeout.

    Q̂ = 1 for w ≤ 3, else min(1, (1−(1−p)³)(1 + (1−p)³(1−(1−p)^(w−3))) / (1−(1−p)^w)).
    At p = 0 the expression is 0/0; its limit min(1, 3/w) is what the evaluation gives.
    """
    # (1−(1−p)³)/(1−(1−p)^w) = S(3, p)/S(w, p): no 0/0 at p = 0, where it is 3/w.
    with np.errstate(all="ignore"):
        survive3 = (1.0 - p) ** 3
        ratio = _geom_sum(np.float64(3.0), p) / _geom_sum(w, p)
        out = np.minimum(1.0, ratio * (1.0 + survive3 * _one_minus_pow(p, w - 3.0)))
    return np.where(w <= 3, 1.0, out)


def timeout_probability(w: Floats, p: Floats) -> Floats:
    """PFTK's Q̂(w): probability that a loss indication is a timeout (not a triple dupACK).

    Parameters
    ----------
    w : window in packets (≥ 1; may be inf).
    p : loss probability in [0, 1).
    """
    arr, scalar = broadcast(w=w, p=p)
    dom = Domain(arr["w"].shape)
    dom.check_range("w", arr["w"], 1.0, np.inf, unit="packets", allow_inf=True)
    dom.check_range("p", arr["p"], 0.0, 1.0, hi_open=True)
    dom.raise_first("timeout_probability", scalar)
    return finish(_q_hat(arr["w"], arr["p"]), scalar)


def _ewu(p: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        c = (2.0 + b) / (3.0 * b)
        return c + np.sqrt(8.0 * (1.0 - p) / (3.0 * b * p) + c * c)


def expected_unconstrained_window(p: Floats, b: Floats = 2.0) -> Floats:
    """E[W_u] = (2+b)/(3b) + sqrt(8(1−p)/(3bp) + ((2+b)/(3b))²), packets (PFTK).

    The mean window at the end of a triple-dupACK period without a receiver limit;
    +inf at p = 0.
    """
    arr, scalar = broadcast(p=p, b=b)
    dom = Domain(arr["p"].shape)
    dom.check_range("p", arr["p"], 0.0, 1.0, hi_open=True)
    dom.check_range("b", arr["b"], 1.0, np.inf, unit="packets per ACK")
    dom.raise_first("expected_unconstrained_window", scalar)
    return finish(_ewu(arr["p"], arr["b"]), scalar)


def _pftk_domain(a: dict[str, np.ndarray]) -> Domain:
    dom = Domain(a["p"].shape)
    dom.check_range("p", a["p"], 0.0, 1.0, hi_open=True)
    dom.check_range("rtt", a["rtt"], 0.0, np.inf, lo_open=True, unit="s")
    dom.check_range("t0", a["t0"], 0.0, np.inf, lo_open=True, unit="s")
    dom.check_range("b", a["b"], 1.0, np.inf, unit="packets per ACK")
    dom.check_range("w_max", a["w_max"], 1.0, np.inf, unit="packets", allow_inf=True)
    dom.add(
        (a["p"] == 0) & np.isinf(a["w_max"]),
        lambda i: "p = 0 with w_max = inf: throughput is unbounded (give a receiver window w_max)",
    )
    return dom


def _pftk_full_core(p, rtt, t0, b, w_max):
    """Vectorized PFTK full model; returns (B, E[W_u], window_limited mask). No checks."""
    with np.errstate(all="ignore"):
        ewu = _ewu(p, b)
        limited = ewu >= w_max
        w = np.where(limited, w_max, ewu)
        qh = _q_hat(w, p)
        to_time = qh * t0 * _f(p) / (1.0 - p)
        to_pkts = qh / (1.0 - p)
        lossfree = (1.0 - p) / p
        num = lossfree + w + to_pkts
        den1 = rtt * (b / 2.0 * ewu + 1.0)
        den2 = rtt * (b / 8.0 * w_max + (1.0 - p) / (p * w_max) + 2.0)
        den = np.where(limited, den2, den1) + to_time
        out = num / den
        # p = 0: the limited branch tends to w_max/RTT (no loss, no timeouts).
        out = np.where(p == 0, w_max / rtt, out)
    return out, ewu, limited


def _f(p: np.ndarray) -> np.ndarray:
    # quiet: a p outside the domain (already a reason in the result) may overflow
    with np.errstate(over="ignore", invalid="ignore"):
        return 1 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6


def _inputs(model: str, p, rtt, t0, b, w_max) -> tuple[dict[str, np.ndarray], bool]:
    """The PFTK inputs broadcast together (and whether all were scalars), their domain
    checked: ModelDomainError naming ``model`` for the first violation."""
    a, scalar = broadcast(p=p, rtt=rtt, t0=t0, b=b, w_max=w_max)
    _pftk_domain(a).raise_first(model, scalar)
    return a, scalar


def pftk_full(p: Floats, rtt: Floats, t0: Floats, b: Floats = 2.0, w_max: Floats = np.inf) -> Floats:
    """PFTK full model of the TCP Reno send rate, packets/s (models.md §1.4).

    ::

        E[W_u] < W_max:  B = ((1−p)/p + E[W_u] + Q̂(E[W_u])/(1−p))
                             / (RTT·(b/2·E[W_u] + 1) + Q̂(E[W_u])·T0·f(p)/(1−p))
        otherwise:       B = ((1−p)/p + W_max + Q̂(W_max)/(1−p))
                             / (RTT·(b/8·W_max + (1−p)/(p·W_max) + 2) + Q̂(W_max)·T0·f(p)/(1−p))

    Parameters
    ----------
    p : loss-event probability in [0, 1) (PFTK's correlated-loss p; estimate with the data
        loss rate p_d or the loss-indication rate, models.md §3.1). At p = 0 the result is
        the limit W_max/RTT.
    rtt : mean round-trip time, seconds (> 0).
    t0 : first retransmission timeout T0, seconds (> 0).
    b : packets acknowledged per ACK (≥ 1; 2 with delayed ACKs).
    w_max : receiver window limit, packets (≥ 1; inf for none).

    Example: ``pftk_full(0.01, 0.1, 1.0, 2, 1000)`` → 69.5245 packets/s (models.md P1).
    """
    a, scalar = _inputs("pftk_full", p, rtt, t0, b, w_max)
    out, _, _ = _pftk_full_core(a["p"], a["rtt"], a["t0"], a["b"], a["w_max"])
    return finish(out, scalar)


def _pftk_approx_core(p, rtt, t0, b, w_max):
    with np.errstate(all="ignore"):
        den = rtt * np.sqrt(2.0 * b * p / 3.0) + t0 * np.minimum(1.0, 3.0 * np.sqrt(3.0 * b * p / 8.0)) * p * (
            1.0 + 32.0 * p * p
        )
        return np.minimum(w_max / rtt, 1.0 / den)


def pftk_approx(p: Floats, rtt: Floats, t0: Floats, b: Floats = 2.0, w_max: Floats = np.inf) -> Floats:
    """PFTK approximate model, packets/s (models.md §1.5)::

        B ≈ min(W_max/RTT, 1 / (RTT·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²)))

    Same parameters and domain as :func:`pftk_full`. The window-limited branch is the crude
    W_max/RTT, so it overestimates near the limit (models.md P3: 200 vs 176.567).
    Dropping the timeout term gives the square-root law sqrt(3/(2bp))/RTT.
    """
    a, scalar = _inputs("pftk_approx", p, rtt, t0, b, w_max)
    return finish(_pftk_approx_core(a["p"], a["rtt"], a["t0"], a["b"], a["w_max"]), scalar)


def pftk_details(p, rtt, t0, b=2.0, w_max=np.inf) -> dict[str, Floats]:
    """Intermediate quantities of :func:`pftk_full`, for inspection and tests.

    Keys: ``throughput`` (packets/s), ``E_Wu`` (packets), ``window_limited`` (bool),
    ``Q_hat`` (Q̂ at the window the branch uses: E[W_u] or W_max), ``f`` (f(p)).
    """
    a, scalar = _inputs("pftk_details", p, rtt, t0, b, w_max)
    out, ewu, limited = _pftk_full_core(a["p"], a["rtt"], a["t0"], a["b"], a["w_max"])
    qh = _q_hat(np.where(limited, a["w_max"], ewu), a["p"])
    res = {"throughput": out, "E_Wu": ewu, "window_limited": limited, "Q_hat": qh, "f": _f(a["p"])}
    if scalar:
        return {k: (bool(v) if v.dtype == bool else float(v)) for k, v in res.items()}
    return res
