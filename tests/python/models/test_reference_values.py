"""Reference values of research/models.md §4, reproduced to their printed 6 significant digits.

Each printed value is compared after rounding ours to 6 significant digits, so the test fails
on any disagreement visible at the printed precision.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hsrtcp import models
from hsrtcp.errors import ModelDomainError


def sig6(x: float) -> float:
    return float(f"{x:.6g}")


def assert_printed(value: float, printed: str) -> None:
    assert sig6(value) == float(printed), f"got {value!r} ({value:.6g}), models.md prints {printed}"


# ---------------------------------------------------------------- §4.1 self-checks


@pytest.mark.parametrize(("x_p", "pa", "printed"), [(5, 0.1, "4.68559"), (12, 0.03, "10.8991"), (30, 0.2, "4.99505")])
def test_eq2_matches_direct_table_iii_sum(x_p, pa, printed):
    # Table III, summed directly here: X = k w.p. (1−P_a)^(k−1)·P_a for k ≤ X_P, X_P+1 w.p. (1−P_a)^X_P.
    direct = sum(k * (1 - pa) ** (k - 1) * pa for k in range(1, x_p + 1)) + (x_p + 1) * (1 - pa) ** x_p
    closed = models.expected_ca_rounds(x_p, pa)
    assert closed == pytest.approx(direct, rel=1e-12)
    assert_printed(closed, printed)


@pytest.mark.parametrize(("p", "printed"), [(0.01, "1.02041"), (0.2726, "2.17713"), (0.5, "8")])
def test_timeout_duration_matches_backoff_series(p, printed):
    # Duration of a sequence of k transmissions: (2^k − 1)·T for k ≤ 6, then 63T + 64T per
    # further timeout; P[R = k] = p^(k−1)(1−p). Summed here to 2000 terms.
    def length(k):
        return 2**k - 1 if k <= 6 else 63 + 64 * (k - 6)

    series = sum(length(k) * p ** (k - 1) * (1 - p) for k in range(1, 2000))
    closed = models.backoff_factor(p) / (1 - p)
    assert closed == pytest.approx(series, rel=1e-12)
    assert_printed(closed, printed)


@pytest.mark.parametrize(
    ("ex", "derived", "printed"), [(3, "0.583333", "-0.0833333"), (10, "5.6", "5.4"), (40, "28.025", "27.975")]
)
def test_eq7_sign_error(ex, derived, printed):
    """(E[W]/2)(3E[X]/2 − 1)/E[X] vs printed eq. (7); b = 2, RTT = 1; differ by exactly 2/E[X]."""
    b = 2
    ew = b / 2 * ex - 2  # eq. (4) line 1 (= line 2 at b = 2)
    ours_derived = ew / 2 * (1.5 * ex - 1) / ex
    ours_printed = 3 * b / 8 * ex - 1 / ex - (6 + b) / 4
    assert_printed(ours_derived, derived)
    assert_printed(ours_printed, printed)
    assert ours_derived - ours_printed == pytest.approx(2 / ex)


def test_independent_ack_burst_loss_fixed_point():
    assert_printed(models.independent_ack_burst_loss(0.00661, 0.007526, 2), "4.03594e-31")
    assert_printed(models.independent_ack_burst_loss(0.00661, 0.007526, 2, per_ack=True), "6.3529e-16")
    # the exponent of the fixed point is the re-derived window at P_a ≈ 0, i.e. PFTK's E[W_u]
    assert_printed(models.expected_unconstrained_window(0.007526, 2), "13.9435")


def test_rto_from_recovery_duration():
    assert_printed(models.rto_from_recovery_duration(5.05, 0.2726), "2.31957")
    assert_printed(models.rto_from_recovery_duration(0.65, 0.0), "0.65")


# ---------------------------------------------------------------- §4.2 PFTK

PFTK = {
    # id: (p, rtt, t0, b, w_max, E[W_u], Q̂(E[W_u]), B full, B approx, Q̂ used in limited branch)
    "P1": (0.01, 0.1, 1.0, 2, 1000, "12.1751", "0.279922", "69.5245", "70.6544", None),
    "P2": (0.01, 0.1, 1.0, 1, 1000, "17.2788", "0.210479", "98.8291", "99.9204", None),
    "P3": (0.001, 0.1, 0.5, 2, 20, "37.1693", "0.0848494", "176.567", "200", "0.153822"),
    "P4": (0.1, 0.2, 1.0, 2, 1000, "4.19434", "0.824081", "6.81984", "5.51029", None),
    "P5": (0.007526, 0.2, 2.0, 2, 1000, "13.9435", "0.241521", "41.9817", "42.6742", None),
    "P6": (0.001, 0.05, 0.65, 2, 1000, "37.1693", "0.0848494", "527.697", "532.156", None),
    "P7": (0.02, 0.2, 1.0, 2, 8, "8.77702", "0.399447", "23.23", "24.9362", "0.429692"),
}


@pytest.mark.parametrize("case", sorted(PFTK))
def test_pftk_reference(case):
    p, rtt, t0, b, w, ewu, qh, full, approx, qh_limited = PFTK[case]
    assert_printed(models.expected_unconstrained_window(p, b), ewu)
    assert_printed(models.timeout_probability(models.expected_unconstrained_window(p, b), p), qh)
    assert_printed(models.pftk_full(p, rtt, t0, b, w), full)
    assert_printed(models.pftk_approx(p, rtt, t0, b, w), approx)
    d = models.pftk_details(p, rtt, t0, b, w)
    assert d["window_limited"] is (qh_limited is not None)
    if qh_limited is not None:
        assert_printed(d["Q_hat"], qh_limited)
        assert_printed(models.timeout_probability(w, p), qh_limited)


def test_pftk_vectorized_equals_scalar():
    rows = [PFTK[k][:5] for k in sorted(PFTK)]
    cols = [np.array(c, dtype=float) for c in zip(*rows)]
    full = models.pftk_full(*cols)
    approx = models.pftk_approx(*cols)
    assert isinstance(full, np.ndarray) and full.shape == (len(rows),)
    for i, k in enumerate(sorted(PFTK)):
        assert full[i] == models.pftk_full(*rows[i])
        assert_printed(full[i], PFTK[k][7])
        assert_printed(approx[i], PFTK[k][8])


# ---------------------------------------------------------------- §4.3 enhanced model

ENH = {
    # id: (p_d, P_a, q, b, rtt, T, W_m, branch, ENH-P, ENH-C, ENH-R, PFTK); None = domain error
    "E1": (0.01, 0, 0.01, 2, 0.1, 1.0, 1000, 1, "64.786", "66.0444", "69.5227", "69.5245"),
    "E1b": (0.01, 0, 0.01, 1, 0.1, 1.0, 1000, 1, "15.0268", "102.052", "98.8273", "98.8291"),
    "E2": (0.007526, 0.001, 0.2726, 2, 0.2, 2.0, 1000, 1, "33.3707", "33.8879", "35.3118", "41.9817"),
    "E3": (0.007526, 0.1, 0.3, 2, 0.2, 2.0, 1000, 1, "3.97556", "4.29593", "4.82754", "41.9817"),
    "E4": (0.001, 0.001, 0.25, 2, 0.08, 1.0, 30, 2, "283.176", "284.507", "281.755", "291.675"),
    "E5": (0.001, 0, 0.001, 2, 0.05, 0.65, 1000, 1, "517.413", "518.433", "527.697", "527.697"),
    "E6": (0.007526, 0, 0.2726, 2, 0.2, 2.0, 1000, 1, "34.2038", "34.7246", "36.1498", "41.9817"),
    "E7": (0.02, 0.05, 0.35, 2, 0.3, 3.0, 1000, 1, "3.00722", "3.24414", "3.6742", "13.9152"),
    "E8": (0.001, 0, 0.001, 2, 0.1, 0.5, 20, 2, "179.025", "177.976", "176.567", "176.567"),
    "E9": (0.001, 0, 0.001, 1, 0.1, 0.5, 30, 2, "264.521", "263.054", "260.063", "260.063"),
    "E10": (0.001, 0.05, 0.25, 2, 0.08, 1.0, 30, 1, "54.5949", "55.2795", "57.7697", "291.675"),
    "E11": (0.007526, 0.5, 0.3, 2, 0.2, 2.0, 1000, None, None, None, None, "41.9817"),
    "E12": (0.007526, 0.4, 0.3, 2, 0.2, 2.0, 1000, 1, None, None, "0.111504", "41.9817"),
}


def _args(case):
    p_d, pa, q, b, rtt, T, wm = ENH[case][:7]
    return dict(p_d=p_d, P_a=pa, q=q, rtt=rtt, T=T, b=b, W_m=wm)


@pytest.mark.parametrize("case", sorted(ENH))
@pytest.mark.parametrize("col", [0, 1, 2], ids=["as_printed", "corrected", "rederived"])
def test_enhanced_reference(case, col):
    variant = models.VARIANTS[col]
    printed = ENH[case][8 + col]
    a = _args(case)
    # the as_printed variant is only defined for b = 2; E1b and E9 print it anyway
    any_b = variant == "as_printed" and a["b"] != 2
    if printed is None:
        with pytest.raises(ModelDomainError, match=r"E\[W\] = .* < 1"):
            models.enhanced(**a, variant=variant, allow_any_b=any_b)
        return
    value = models.enhanced(**a, variant=variant, allow_any_b=any_b)
    assert_printed(value, printed)
    d = models.enhanced_details(**a, variant=variant, allow_any_b=any_b)
    assert d["window_limited"] is (ENH[case][7] == 2)


@pytest.mark.parametrize("case", sorted(ENH))
def test_enhanced_pftk_column(case):
    a = _args(case)
    assert_printed(models.pftk_full(a["p_d"], a["rtt"], a["T"], a["b"], a["W_m"]), ENH[case][11])


def test_as_printed_rejects_b_not_2():
    for case in ("E1b", "E9"):
        with pytest.raises(ModelDomainError, match=r"b = 1.*b = 2 only"):
            models.enhanced(**_args(case), variant="as_printed")


def test_e11_domain_error_value():
    with pytest.raises(ModelDomainError, match=r"E\[W\] = 0\.999937 packets < 1"):
        models.enhanced(**_args("E11"), variant="rederived")


def test_e2_intermediates():
    a = _args("E2")
    for variant, ew, q in (("as_printed", "12.8398", "0.244266"), ("corrected", "12.8398", "0.244266"),
                           ("rederived", "13.8398", "0.253564")):
        d = models.enhanced_details(**a, variant=variant)
        assert_printed(d["X_P"], "13.9435")
        assert_printed(d["E_X"], "14.8398")
        assert_printed(d["E_W"], ew)
        assert_printed(d["p"], "0.273327")
        assert_printed(d["E_R"], "1.37614")
        assert_printed(d["f"], "1.58682")
        assert_printed(d["E_A_TO"], "4.36737")
        assert_printed(d["Q"], q)
    assert_printed(models.enhanced_details(**a, variant="as_printed")["E_Y_TO"], "0.645329")
    assert_printed(models.enhanced_details(**a, variant="corrected")["E_Y_TO"], "1.001")


def test_e4_e8_e9_e10_intermediates():
    d = models.enhanced_details(**_args("E4"), variant="corrected")
    assert_printed(d["X_P"], "37.1693")
    assert_printed(d["E_X_phase1"], "37.4684")
    assert_printed(d["E_W"], "35.4684")
    assert_printed(d["V_P"], "11.8")
    assert_printed(d["E_V"], "11.7365")
    assert_printed(models.enhanced_details(**_args("E4"), variant="rederived")["E_W"], "36.4684")
    d8 = models.enhanced_details(**_args("E8"), variant="rederived")
    assert d8["E_V"] == d8["V_P"]
    assert_printed(d8["E_V"], "35.95")
    assert_printed(models.enhanced_details(**_args("E9"), variant="rederived")["V_P"], "23.05")
    d10 = models.enhanced_details(**_args("E10"), variant="corrected")
    assert_printed(d10["E_X"], "17.1767")
    assert_printed(d10["E_W"], "15.1767")
    assert not d10["window_limited"]
    assert_printed(models.enhanced_details(**_args("E10"), variant="rederived")["E_W"], "16.1767")


# ---------------------------------------------------------------- §4.4 sweeps

E2_BASE = dict(p_d=0.007526, q=0.2726, b=2, rtt=0.2, T=2.0, W_m=1000)
PA_SWEEP = {
    0: ("34.2038", "34.7246", "36.1498"),
    0.0001: ("34.1194", "34.6398", "36.0649"),
    0.001: ("33.3707", "33.8879", "35.3118"),
    0.01: ("26.9035", "27.3921", "28.7718"),
    0.05: ("11.4089", "11.8165", "12.7954"),
    0.1: ("4.41263", "4.76174", "5.3493"),
    0.2: ("0.724657", "0.987217", "1.2086"),
    0.3: ("0.0737597", "0.258751", "0.348811"),
}


@pytest.mark.parametrize("variant_idx", [0, 1, 2])
def test_pa_sweep(variant_idx):
    variant = models.VARIANTS[variant_idx]
    pas = np.array(sorted(PA_SWEEP))
    values = models.enhanced(P_a=pas, **E2_BASE, variant=variant)
    for pa, v in zip(pas, values):
        assert_printed(v, PA_SWEEP[pa][variant_idx])


Q_SWEEP = {0.007526: ("41.307", "2.03466"), 0.1: ("39.9381", "2.50562"), 0.25: ("36.1593", "3.99068"),
           0.2726: ("35.3118", "4.36737"), 0.4: ("28.3958", "8.28186"), 0.6: ("12.1765", "34.9046")}


def test_q_sweep():
    base = {k: v for k, v in E2_BASE.items() if k != "q"}
    for q, (tp, eato) in Q_SWEEP.items():
        d = models.enhanced_details(q=q, P_a=0.001, **base, variant="rederived")
        assert_printed(d["throughput"], tp)
        assert_printed(d["E_A_TO"], eato)


# ---------------------------------------------------------------- §4.5 branch boundary

BOUNDARY = {
    30: ("240.215", "239.734", "237.552", "237.552"),
    36: ("266.492", "266.479", "264.133", "264.133"),
    36.16: ("267.093", "267.092", "264.745", "264.745"),
    36.18: ("263.165", "263.683", "264.821", "264.821"),
    37.16: ("263.165", "263.683", "268.465", "268.465"),
    37.18: ("263.165", "263.683", "268.498", "268.498"),
    40: ("263.165", "263.683", "268.498", "268.498"),
}


def test_branch_boundary():
    wm = np.array(sorted(BOUNDARY))
    args = dict(p_d=0.001, P_a=0.0, q=0.001, b=2, rtt=0.1, T=0.5, W_m=wm)
    out = [models.enhanced(**args, variant=v) for v in models.VARIANTS]
    out.append(models.pftk_full(0.001, 0.1, 0.5, 2, wm))
    for i, w in enumerate(wm):
        for j in range(4):
            assert_printed(out[j][i], BOUNDARY[w][j])


def test_suggested_assertion_2_rederived_nests_pftk():
    """models.md §4.6 item 2: ENH-R(P_a = 0, q = p_d) within 1e-4 of PFTK full."""
    for case in ("E1", "E1b", "E5", "E8", "E9"):
        a = _args(case)
        assert a["P_a"] == 0 and a["q"] == a["p_d"]
        r = models.enhanced(**a, variant="rederived")
        p = models.pftk_full(a["p_d"], a["rtt"], a["T"], a["b"], a["W_m"])
        assert abs(r - p) / p < 1e-4
        assert r < p  # received count Q̂ < sent count Q̂/(1−p) in the timeout sequence


def test_approx_limited_branch_is_w_over_rtt():
    assert models.pftk_approx(0.001, 0.1, 0.5, 2, 20) == pytest.approx(20 / 0.1, rel=1e-15)
    assert math.isclose(models.pftk_approx(0.001, 0.1, 0.5, 2, 20), 200.0)
