"""Evaluate every model and variant on the same inputs, element by element.

Unlike the public model functions, :func:`evaluate_all` does not raise on domain errors:
it returns NaN for the offending elements together with the reason, so that a sweep or a
per-flow fit keeps every other element. Used by :mod:`hsrtcp.models.fit`,
:mod:`hsrtcp.models.sweep` and ``hsrtcp model predict``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hsrtcp.models._domain import Domain, broadcast
from hsrtcp.models.enhanced import _evaluate
from hsrtcp.models.pftk import _pftk_approx_core, _pftk_domain, _pftk_full_core

# Stable keys used as column suffixes (pred_<key>, d_<key>) and in figures.
MODEL_KEYS: tuple[str, ...] = ("pftk_full", "pftk_approx", "enh_as_printed", "enh_corrected", "enh_rederived")
MODEL_LABELS: dict[str, str] = {
    "pftk_full": "PFTK full",
    "pftk_approx": "PFTK approx.",
    "enh_as_printed": "Enhanced (as printed)",
    "enh_corrected": "Enhanced (corrected)",
    "enh_rederived": "Enhanced (re-derived)",
}


@dataclass
class ModelOutput:
    """Throughput (packets/s, NaN where undefined) and, per element, why it is undefined."""

    throughput: np.ndarray
    domain: Domain
    window_limited: np.ndarray

    @cached_property
    def reasons(self) -> np.ndarray:
        """Object array: None or the message of every element (all of them: see :meth:`reasons_at`)."""
        return self.domain.reasons()

    def reasons_at(self, at: np.ndarray) -> list[str | None]:
        """The messages of the flat elements ``at`` only (the first violation of each, as
        :attr:`reasons`): a fit of a million flows formats the few it writes, not every one."""
        out: list[str | None] = [None] * len(at)
        todo = np.ones(len(at), dtype=bool)
        for mask, message in self.domain.problems:
            hit = np.flatnonzero(todo & mask.reshape(-1)[at])
            for k in hit:
                out[k] = message(int(at[k]))
            todo[hit] = False
        return out


def evaluate_all(
    p_d, P_a, q, rtt, T, b=2.0, W_m=np.inf, *, models: tuple[str, ...] = MODEL_KEYS, allow_any_b: bool = False
) -> dict[str, ModelOutput]:
    """Every model of ``models`` on broadcast inputs (units as in :func:`hsrtcp.models.enhanced`).

    PFTK is evaluated with p = p_d, T0 = T, W_max = W_m and ignores P_a and q (they may be NaN).
    """
    unknown = [m for m in models if m not in MODEL_KEYS]
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}; choose from {', '.join(MODEL_KEYS)}")
    a, _ = broadcast(p_d=p_d, P_a=P_a, q=q, rtt=rtt, T=T, b=b, W_m=W_m)
    out: dict[str, ModelOutput] = {}
    pa = {"p": a["p_d"], "rtt": a["rtt"], "t0": a["T"], "b": a["b"], "w_max": a["W_m"]}
    for key in models:
        if key.startswith("pftk"):
            dom = _pftk_domain(pa)
            if key == "pftk_full":
                tp, ewu, limited = _pftk_full_core(pa["p"], pa["rtt"], pa["t0"], pa["b"], pa["w_max"])
            else:
                tp = _pftk_approx_core(pa["p"], pa["rtt"], pa["t0"], pa["b"], pa["w_max"])
                with np.errstate(all="ignore"):
                    limited = pa["w_max"] / pa["rtt"] <= tp
            invalid = dom.invalid
            out[key] = ModelOutput(np.where(invalid, np.nan, tp), dom, limited & ~invalid)
        else:
            variant = key.removeprefix("enh_")
            res, dom, _ = _evaluate(
                a["p_d"], a["P_a"], a["q"], a["rtt"], a["T"], a["b"], a["W_m"], variant, allow_any_b
            )
            out[key] = ModelOutput(res["throughput"], dom, res["window_limited"] & ~dom.invalid)
    return out
