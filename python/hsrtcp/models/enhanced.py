"""The enhanced PFTK model of seed 001 (TCP over high-speed rail), in three variants.

Seed 001 §IV extends PFTK with two HSR effects:

1. ACK burst loss: a congestion-avoidance (CA) round ends in a (spurious) timeout when all
   ACKs of the round are lost, with probability ``P_a`` per round (docs/metrics.md M36).
2. Lossy timeout recovery: each retransmission during a timeout sequence is lost with
   probability ``q`` (≫ p_d; seed 001 measured 27.26 %).

The printed equations contain typos and inconsistencies (audited in research/models.md
§2.3). The model is therefore offered in three variants, selected explicitly
(models.md §2.7):

``"as_printed"`` (ENH-P)
    Eq. (15)/(21) as printed, with only the unavoidable repairs: V in the branch-2 numerator
    read as V_P, RTT restored in the branch-2 denominator, eq. (10) reused for Q in branch 2.
    Reproduces seed 001's numbers. Defined for b = 2 only (eq. (4) is inconsistent for other
    b); other b raise unless ``allow_any_b=True``.
``"corrected"`` (ENH-C)
    The typos fixed and nothing else: E[Y] = E[W]/2·(3E[X]/2 − 1) (the +1 of eq. (7)/(15)
    sign error fixed, E[W] = 2E[X]/b − 2 for every b), E[Y^TO] = (1−q)·E[R] instead of the
    power (1−q)^E[R], branch 2 with its own Q.
``"rederived"`` (ENH-R)
    Re-derived so that P_a = 0, q = p_d gives back PFTK's full model (to 3·10⁻⁵ relative, the
    remaining difference being received vs sent packets in a timeout sequence):
    E[W] = 2(E[X] − 1)/b, PFTK's exact Q̂, PFTK's branch-2 accounting. Recommended for
    analysis and simulation.

Units: probabilities as fractions, RTT and T in seconds, windows in packets, results in
packets per second.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from hsrtcp.errors import ModelDomainError
from hsrtcp.models._domain import Domain, Floats, broadcast, finish
from hsrtcp.models.pftk import _ewu, _f, _geom_sum, _q_hat

Variant = Literal["as_printed", "corrected", "rederived"]
VARIANTS: tuple[str, ...] = ("as_printed", "corrected", "rederived")

__all__ = [
    "VARIANTS",
    "enhanced",
    "enhanced_details",
    "expected_ca_rounds",
    "independent_ack_burst_loss",
]


def _s(n: np.ndarray, pa: np.ndarray) -> np.ndarray:
    """S(n, P_a) = Σ_{k=1..n} (1−P_a)^(k−1) = (1 − (1−P_a)^n)/P_a, = n at P_a = 0 (models.md §2.7).

    Evaluated without cancellation for small P_a; n may be +inf (p_d = 0), giving 1/P_a.
    """
    return _geom_sum(n, pa)


def expected_ca_rounds(x_p: Floats, P_a: Floats) -> Floats:
    """E[X] = (1 − (1−P_a)^(X_P+1)) / P_a (seed 001 eq. 2): mean rounds of a CA phase.

    The phase ends at the first ACK burst loss (probability P_a per round) or, if none
    happens in the first X_P rounds, after X_P + 1 rounds (data loss, Table III).
    Tends to X_P + 1 as P_a → 0.
    """
    a, scalar = broadcast(x_p=x_p, P_a=P_a)
    dom = Domain(a["x_p"].shape)
    dom.check_range("x_p", a["x_p"], 0.0, np.inf, unit="rounds", allow_inf=True)
    dom.check_range("P_a", a["P_a"], 0.0, 1.0, hi_open=True)
    dom.raise_first("expected_ca_rounds", scalar)
    return finish(_s(a["x_p"] + 1.0, a["P_a"]), scalar)


def _domain(a: dict[str, np.ndarray], variant: str, allow_any_b: bool) -> Domain:
    dom = Domain(a["p_d"].shape)
    dom.check_range("p_d", a["p_d"], 0.0, 1.0, hi_open=True)
    dom.check_range("P_a", a["P_a"], 0.0, 1.0, hi_open=True)
    dom.check_range("q", a["q"], 0.0, 1.0, hi_open=True)
    dom.check_range("rtt", a["rtt"], 0.0, np.inf, lo_open=True, unit="s")
    dom.check_range("T", a["T"], 0.0, np.inf, lo_open=True, unit="s")
    dom.check_range("b", a["b"], 1.0, np.inf, unit="packets per ACK")
    dom.check_range("W_m", a["W_m"], 1.0, np.inf, unit="packets", allow_inf=True)
    if variant == "as_printed" and not allow_any_b:
        b = a["b"]
        dom.add(
            b != 2,
            lambda i: f"b = {b.flat[i]:.6g}: the as_printed variant is defined for b = 2 only "
            "(seed 001 eq. 4 is inconsistent otherwise; pass allow_any_b=True to evaluate it anyway)",
        )
    dom.add(
        (a["p_d"] == 0) & (a["P_a"] == 0) & np.isinf(a["W_m"]),
        lambda i: "p_d = 0 and P_a = 0 with W_m = inf: throughput is unbounded (give a receiver window W_m)",
    )
    return dom


def _core(a: dict[str, np.ndarray], variant: str) -> dict[str, np.ndarray]:
    """The three variants of models.md §2.7, vectorized. Returns all intermediates."""
    p_d, pa, q, rtt, T, b, wm = (a[k] for k in ("p_d", "P_a", "q", "rtt", "T", "b", "W_m"))
    R = variant == "rederived"
    with np.errstate(all="ignore"):
        # (1): PFTK's E[X] = b/2·E[W_u]; +inf at p_d = 0.
        x_p = b / 2.0 * _ewu(p_d, b)
        ex = _s(x_p + 1.0, pa)  # (2)
        ew = 2.0 * (ex - 1.0) / b if R else 2.0 * ex / b - 2.0  # (4), line 2
        survive_x = np.exp(x_p * np.log1p(-pa))  # (1−P_a)^X_P, 0 when X_P = inf and P_a > 0

        # Timeout sequence, shared by both branches: (11)–(14).
        p = 1.0 - (1.0 - q) * (1.0 - pa)
        er = 1.0 / (1.0 - p)
        eato = T * _f(p) / (1.0 - p)
        eyto = (1.0 - q) ** er if variant == "as_printed" else (1.0 - q) * er

        # Branch 1: E[W] < W_m.
        qp1 = _q_hat(ew, p_d) if R else np.minimum(1.0, 3.0 / ew)  # (9)
        q1 = 1.0 - (1.0 - qp1) * survive_x  # (10)
        if variant == "as_printed":
            ey1 = 3.0 * b / 8.0 * ex**2 - (6.0 + b) / 4.0 * ex - 1.0  # (15) numerator as printed
        elif variant == "corrected":
            ey1 = ew / 2.0 * (1.5 * ex - 1.0)  # (6)
        else:
            ey1 = (ex - 1.0) / 2.0 * (1.5 * ew - 1.0) + ew / 2.0
        ea1 = rtt * ex

        # Branch 2: E[W] ≥ W_m (window-limited), (16)–(20).
        v_p = (1.0 - p_d) / (p_d * wm) + 1.0 - 3.0 * b * wm / 8.0  # (17)
        ev = _s(v_p, pa)  # (18)
        if variant == "as_printed":
            q2 = q1  # (10) reused literally: Q_P at E[W], survival over X_P rounds
        else:
            qp2 = _q_hat(wm, p_d) if R else np.minimum(1.0, 3.0 / wm)
            q2 = 1.0 - (1.0 - qp2) * np.exp(np.maximum(v_p - 1.0, 0.0) * np.log1p(-pa))
        if R:
            ey2 = 3.0 * b * wm**2 / 8.0 + wm * ev
            ea2 = rtt * (b * wm / 2.0 + ev + 1.0)
        else:
            ey2 = 3.0 * b * wm**2 / 8.0 + wm * (ev - 0.5)  # (19)
            ea2 = rtt * (b * wm / 2.0 + ev)  # (20) in seconds: RTT restored

        limited = ew >= wm
        qq = np.where(limited, q2, q1)
        ey = np.where(limited, ey2, ey1)
        ea = np.where(limited, ea2, ea1)
        tp = (ey + qq * eyto) / (ea + qq * eato)  # (8)
        # No data loss and no ACK burst loss: every phase is window-limited forever; the
        # ratio above is inf/inf, its limit is W_m/RTT.
        tp = np.where((p_d == 0) & (pa == 0), wm / rtt, tp)
        ex_used = np.where(limited, b * wm / 2.0 + ev, ex)
    nan = np.full(tp.shape, np.nan)
    return {
        "throughput": tp,
        "window_limited": limited,
        "X_P": x_p,
        "E_X": ex_used,
        "E_X_phase1": ex,
        "E_W": ew,
        "Q": qq,
        "p": p,
        "E_R": er,
        "f": _f(p),
        "E_A_TO": eato,
        "E_Y_TO": eyto,
        "E_Y": ey,
        "E_A": ea,
        # Branch-2 quantities are meaningless (often negative) in branch 1.
        "V_P": np.where(limited, v_p, nan),
        "E_V": np.where(limited, ev, nan),
    }


def _evaluate(p_d, P_a, q, rtt, T, b, W_m, variant, allow_any_b):
    if variant not in VARIANTS:
        raise ModelDomainError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    a, scalar = broadcast(p_d=p_d, P_a=P_a, q=q, rtt=rtt, T=T, b=b, W_m=W_m)
    dom = _domain(a, variant, allow_any_b)
    res = _core(a, variant)
    ew = res["E_W"]
    # Guard of models.md §2.7: below one packet Q_P = 3/E[W] and E[Y] lose their meaning
    # (the printed numerator even turns negative). Only checked where inputs are valid.
    bad_w = ~dom.invalid & ~(ew >= 1.0) & ~((a["p_d"] == 0) & (a["P_a"] == 0))
    dom.add(
        bad_w,
        lambda i: f"E[W] = {ew.flat[i]:.6g} packets < 1 (ACK burst loss P_a = {a['P_a'].flat[i]:.6g} "
        f"and data loss p_d = {a['p_d'].flat[i]:.6g} leave less than one packet per window)",
    )
    # The printed eq. (15) numerator, (3b/8)E[X]² − ((6+b)/4)E[X] − 1, is still negative just
    # above E[W] = 1 (b = 2: up to E[X] = 3.097): a negative packet count is outside the model.
    ey = res["E_Y"]
    bad_y = ~dom.invalid & (ey < 0)
    dom.add(
        bad_y,
        lambda i: f"E[Y] = {ey.flat[i]:.6g} packets per CA phase is negative (E[X] = "
        f"{res['E_X'].flat[i]:.6g} rounds is too short for the {variant} formula)",
    )
    res["throughput"] = np.where(dom.invalid, np.nan, res["throughput"])
    return res, dom, scalar


def enhanced(
    p_d: Floats,
    P_a: Floats,
    q: Floats,
    rtt: Floats,
    T: Floats,
    b: Floats = 2.0,
    W_m: Floats = np.inf,
    *,
    variant: Variant,
    allow_any_b: bool = False,
) -> Floats:
    """Throughput of the seed-001 enhanced model, packets/s (seed 001 eq. 21).

    ::

        TP = (E[Y] + Q·E[Y^TO]) / (E[A] + Q·E[A^TO])                       (8)
        p = 1 − (1−q)(1−P_a),  E[R] = 1/(1−p),  E[A^TO] = T·f(p)/(1−p)       (11), (13)

    with E[Y], E[A], Q and E[Y^TO] per branch and variant as in research/models.md §2.7
    (branch 1 if E[W] < W_m, else the window-limited branch 2).

    Parameters
    ----------
    p_d : data loss rate in [0, 1) (models.md §3.1).
    P_a : ACK burst loss probability per round in [0, 1) (docs/metrics.md M36, models.md §3.4).
    q : loss probability of retransmissions during a timeout sequence, in [0, 1).
    rtt : mean round-trip time, seconds (> 0).
    T : first retransmission timeout of a timeout sequence, seconds (> 0).
    b : packets acknowledged per ACK (≥ 1); ``as_printed`` requires b = 2.
    W_m : receiver window limit, packets (≥ 1, inf for none).
    variant : ``"as_printed"``, ``"corrected"`` or ``"rederived"`` (required, see module doc).
    allow_any_b : evaluate ``as_printed`` at b ≠ 2 anyway (the formula is then not meaningful:
        at b = 1 it is 6.6× below PFTK, models.md E1b).

    Raises :class:`hsrtcp.errors.ModelDomainError` for inputs outside these ranges, when
    E[W] < 1 packet (e.g. P_a ≥ 1/3 at b = 2), and when the CA-phase packet count E[Y] is
    negative (only the as_printed formula can do that, for E[W] just above 1).

    Example: ``enhanced(0.007526, 0.001, 0.2726, 0.2, 2.0, 2, 1000, variant="rederived")``
    → 35.3118 packets/s (models.md E2, seed 001's average inputs).
    """
    res, dom, scalar = _evaluate(p_d, P_a, q, rtt, T, b, W_m, variant, allow_any_b)
    dom.raise_first(f"enhanced[{variant}]", scalar)
    return finish(res["throughput"], scalar)


def enhanced_details(
    p_d, P_a, q, rtt, T, b=2.0, W_m=np.inf, *, variant: Variant, allow_any_b: bool = False
) -> dict[str, float | bool | np.ndarray]:
    """Intermediate quantities of :func:`enhanced` (same arguments), for inspection and tests.

    Keys: ``throughput``, ``window_limited``, ``X_P``, ``E_X`` (eq. 2 in branch 1, eq. 20
    = bW_m/2 + E[V] in branch 2), ``E_X_phase1`` (eq. 2 always), ``E_W``, ``Q``, ``p`` (eq. 11), ``E_R``, ``f``,
    ``E_A_TO`` (s), ``E_Y_TO``, ``E_Y``, ``E_A`` (s), ``V_P``, ``E_V``.
    """
    res, dom, scalar = _evaluate(p_d, P_a, q, rtt, T, b, W_m, variant, allow_any_b)
    dom.raise_first(f"enhanced_details[{variant}]", scalar)
    if scalar:
        return {k: (bool(v) if v.dtype == bool else float(v)) for k, v in res.items()}
    return res


def independent_ack_burst_loss(
    p_a: float, p_d: float, b: float = 2.0, *, per_ack: bool = False, iterations: int = 50
) -> float:
    """P_a under independent ACK losses, P_a = p_a^w (seed 001 §IV-A), as a fixed point.

    w is the window of the re-derived model, E[W] = 2(E[X] − 1)/b, which itself depends on
    P_a; the iteration starts at P_a = 0. With ``per_ack=True`` the exponent is w/b (a round
    of w packets carries about w/b ACKs). Under independence the result is astronomically
    small at HSR rates (p_a = 0.661 %, p_d = 0.7526 %: 4.0e−31), which is why seed 001's
    P_a ≈ 10 % flows must come from correlated ACK losses measured directly (models.md §3.4).
    """
    for name, v in (("p_a", p_a), ("p_d", p_d)):
        if not 0.0 <= v < 1.0:
            raise ModelDomainError(f"{name} = {v!r} is outside its domain [0, 1)")
    if p_d == 0:
        raise ModelDomainError("p_d = 0: the window is unbounded, P_a = p_a^w is 0 for p_a < 1")
    pa = 0.0
    for _ in range(iterations):
        d = enhanced_details(p_d, pa, 0.0, 1.0, 1.0, b, np.inf, variant="rederived")
        w = d["E_W"] / b if per_ack else d["E_W"]
        new = p_a**w
        if new == pa:
            break
        pa = new
    return pa
