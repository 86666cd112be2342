"""Throughput models: PFTK (full, approximate) and the seed-001 HSR-enhanced model.

Every model is a plain function, vectorized over numpy arrays, with inputs in
probabilities (fractions), seconds and packets and the result in packets per second::

    >>> from hsrtcp import models
    >>> round(models.pftk_full(p=0.01, rtt=0.1, t0=1.0, b=2, w_max=1000), 4)
    69.5245
    >>> round(models.enhanced(0.007526, 0.001, 0.2726, 0.2, 2.0, 2, 1000, variant="rederived"), 4)
    35.3118

Inputs outside a model's domain raise :class:`hsrtcp.errors.ModelDomainError` naming the
input. See docs/models.md for the equations, the three variants of the enhanced model and
the typos they fix; research/models.md holds the derivations and reference values.

Submodules: :mod:`.pftk`, :mod:`.enhanced`, :mod:`.common` (D, unit conversion),
:mod:`.evaluate` (all models at once), :mod:`.fitting` (:func:`fit_flows`: per-flow comparison
with measurements), :mod:`.sweeping` (:func:`sweep`: sensitivity sweeps).
"""

from __future__ import annotations

from hsrtcp.models.common import deviation, rto_from_recovery_duration, to_bits_per_second
from hsrtcp.models.enhanced import (
    VARIANTS,
    enhanced,
    enhanced_details,
    expected_ca_rounds,
    independent_ack_burst_loss,
)
from hsrtcp.models.evaluate import MODEL_KEYS, MODEL_LABELS, evaluate_all
from hsrtcp.models.pftk import (
    backoff_factor,
    expected_unconstrained_window,
    pftk_approx,
    pftk_details,
    pftk_full,
    timeout_probability,
)

__all__ = [
    "MODEL_KEYS",
    "MODEL_LABELS",
    "VARIANTS",
    "backoff_factor",
    "deviation",
    "enhanced",
    "enhanced_details",
    "evaluate_all",
    "expected_ca_rounds",
    "expected_unconstrained_window",
    "fit_flows",
    "independent_ack_burst_loss",
    "pftk_approx",
    "pftk_details",
    "pftk_full",
    "rto_from_recovery_duration",
    "sweep",
    "timeout_probability",
    "to_bits_per_second",
]


def __getattr__(name: str):
    # fit_flows and sweep pull in polars/matplotlib; load them only when asked for.
    import importlib

    if name == "fit_flows":
        return importlib.import_module("hsrtcp.models.fitting").fit_flows
    if name == "sweep":
        return importlib.import_module("hsrtcp.models.sweeping").sweep
    raise AttributeError(name)
