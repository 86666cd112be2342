"""Sensitivity sweeps: throughput of every model and variant as one input varies.

The other inputs stay at a base point, by default seed 001's averages (models.md E2:
p_d = 0.7526 %, P_a = 0.1 %, q = 27.26 %, RTT 0.2 s, T 2 s, b = 2, W_m = 1000). The table
and figure reproduce models.md §4.4 (P_a and q sweeps) and §4.5 (branch boundary in W_m).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.errors import ModelDomainError
from hsrtcp.models.evaluate import MODEL_KEYS, MODEL_LABELS, evaluate_all

__all__ = ["BASE", "DEFAULT_RANGES", "PARAMS", "plot_sweep", "sweep"]

# Model symbol -> (description, unit).
PARAMS: dict[str, tuple[str, str]] = {
    "p_d": ("data loss rate p_d", "fraction"),
    "P_a": ("ACK burst loss probability P_a", "fraction"),
    "q": ("timeout retransmission loss q", "fraction"),
    "rtt": ("RTT", "s"),
    "T": ("first RTO T", "s"),
    "b": ("packets per ACK b", "packets"),
    "W_m": ("receiver window W_m", "packets"),
}
ALIASES = {"rto": "T", "t": "T", "wm": "W_m", "w_m": "W_m", "pa": "P_a", "pd": "p_d", "ack_burst_loss": "P_a"}

# Where each input is defined: (low, high, low end open, high end open). The model functions
# check the same (_domain.py; tests/python/models/test_domain.py holds the two together).
# +inf is in the domain of W_m alone ("no receiver window"); NaN is in none. p_a, the per-ACK
# loss rate of `model predict --ack-loss-rate`, is not swept.
DOMAIN: dict[str, tuple[float, float, bool, bool]] = {
    "p_d": (0.0, 1.0, False, True),
    "P_a": (0.0, 1.0, False, True),
    "q": (0.0, 1.0, False, True),
    "p_a": (0.0, 1.0, False, True),
    "rtt": (0.0, math.inf, True, True),
    "T": (0.0, math.inf, True, True),
    "b": (1.0, math.inf, False, True),
    "W_m": (1.0, math.inf, False, False),
}


def domain_problem(name: str, value: float) -> str | None:
    """Why ``value`` is outside the domain of input ``name`` (symbol or alias), in the words
    of the model functions; None when inside."""
    p = name if name in DOMAIN else canonical_param(name)
    lo, hi, lo_open, hi_open = DOMAIN[p]
    v = float(value)
    if not math.isnan(v) and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi):
        return None
    unit = PARAMS[p][1] if p in PARAMS and PARAMS[p][1] != "fraction" else ""
    interval = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    shown = "NaN" if math.isnan(v) else f"{v:.6g}"
    return f"{p} = {shown}{' ' + unit if unit else ''} is outside its domain {interval}"

BASE: dict[str, float] = {"p_d": 0.007526, "P_a": 0.001, "q": 0.2726, "rtt": 0.2, "T": 2.0, "b": 2.0, "W_m": 1000.0}

DEFAULT_RANGES: dict[str, np.ndarray] = {
    "p_d": np.logspace(-4, -1, 61),
    "P_a": np.linspace(0.0, 0.3, 61),
    "q": np.linspace(0.0, 0.79, 80),
    "rtt": np.linspace(0.02, 1.0, 50),
    "T": np.linspace(0.2, 5.0, 49),
    "b": np.linspace(1.0, 4.0, 31),
    "W_m": np.linspace(5.0, 55.0, 101),
}


def canonical_param(name: str) -> str:
    """Map a parameter name or alias (``rto``, ``wm``, …) to its model symbol."""
    if name in PARAMS:
        return name
    alias = ALIASES.get(name.lower())
    if alias is None:
        raise ModelDomainError(f"unknown sweep parameter {name!r}; choose from {', '.join(PARAMS)} (or rto, wm)")
    return alias


def sweep(
    param: str,
    values: np.ndarray | list[float] | None = None,
    *,
    base: dict[str, float] | None = None,
    models: tuple[str, ...] = MODEL_KEYS,
    allow_any_b: bool = False,
) -> pl.DataFrame:
    """Throughput of each model over ``values`` of ``param``, the rest held at ``base``.

    Returns a long table with columns ``param``, ``value``, ``model``, ``label``,
    ``throughput_pkts`` (null where the model is undefined), ``window_limited`` and
    ``reason`` (the domain error, if any). ``base`` overrides entries of :data:`BASE`.
    """
    p = canonical_param(param)
    point = dict(BASE)
    for k, v in (base or {}).items():
        point[canonical_param(k)] = float(v)
    for k, v in point.items():  # a base point outside the domain leaves every row undefined
        problem = domain_problem(k, v) if k != p else None
        if problem:
            raise ModelDomainError(f"base point of the {p} sweep: {problem}")
    x = np.asarray(DEFAULT_RANGES[p] if values is None else values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ModelDomainError(f"sweep values for {p} must be a non-empty 1-D sequence")
    inputs = {k: (x if k == p else np.full(x.shape, v)) for k, v in point.items()}
    res = evaluate_all(**inputs, models=models, allow_any_b=allow_any_b)
    frames = []
    for key in models:
        r = res[key]
        frames.append(
            pl.DataFrame(
                {
                    "param": [p] * x.size,
                    "value": x,
                    "model": [key] * x.size,
                    "label": [MODEL_LABELS[key]] * x.size,
                    "throughput_pkts": pl.Series(r.throughput, dtype=pl.Float64, nan_to_null=True),
                    "window_limited": r.window_limited,
                    "reason": pl.Series(list(r.reasons), dtype=pl.Utf8),
                }
            )
        )
    return pl.concat(frames)


def plot_sweep(table: pl.DataFrame, path: str | os.PathLike, *, base: dict[str, float] | None = None) -> Path:
    """Line plot of :func:`sweep` output (one line per model), written as PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hsrtcp.models.fitting import _atomic

    params = table.get_column("param").unique(maintain_order=True).to_list()
    if len(params) != 1:
        raise ValueError(f"plot_sweep expects one parameter per table, got {params}")
    p = params[0]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ymin, ymax = np.inf, 0.0
    for key in table.get_column("model").unique(maintain_order=True).to_list():
        sub = table.filter(pl.col("model") == key)
        x = sub.get_column("value").to_numpy()
        y = sub.get_column("throughput_pkts").fill_null(np.nan).to_numpy().astype(float)
        ax.plot(x, y, marker=".", ms=3, lw=1.2, label=MODEL_LABELS.get(key, key))
        fin = y[np.isfinite(y) & (y > 0)]
        if fin.size:
            ymin, ymax = min(ymin, fin.min()), max(ymax, fin.max())
    if ymax > 0 and ymax / ymin > 100:
        ax.set_yscale("log")
    if p == "p_d":
        ax.set_xscale("log")
    desc, unit = PARAMS[p]
    ax.set_xlabel(f"{desc} ({unit})")
    ax.set_ylabel("throughput (packets/s)")
    point = dict(BASE)
    point.update({canonical_param(k): float(v) for k, v in (base or {}).items()})
    fixed = ", ".join(f"{k}={v:g}" for k, v in point.items() if k != p)
    ax.set_title(f"Throughput vs {desc}\n({fixed})", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    _atomic(out, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)
    return out
