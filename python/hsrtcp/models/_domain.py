"""Input broadcasting and domain bookkeeping shared by the model functions.

The model cores are written once, vectorized over numpy arrays. They never raise on their
own: each domain violation is recorded as a boolean mask plus a message builder, the
offending elements become NaN, and the caller decides. The public model functions raise
:class:`hsrtcp.errors.ModelDomainError` on the first violation (naming the input, its value
and, for arrays, its position); the fitting and sweep code keeps the NaN and writes the
message next to the row instead, so one bad flow does not hide the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np

from hsrtcp.errors import ModelDomainError

#: A model input or result: a number, or an array of them (inputs broadcast together;
#: scalars in, a float out).
Floats: TypeAlias = float | np.ndarray


def broadcast(**inputs: object) -> tuple[dict[str, np.ndarray], bool]:
    """Convert inputs to float64 arrays of one common shape.

    Returns the arrays and whether every input was a scalar (then the public functions
    return a plain float instead of a 0-d array).
    """
    scalar = all(np.ndim(v) == 0 for v in inputs.values())
    try:
        arrays = [np.asarray(v, dtype=np.float64) for v in inputs.values()]
    except (TypeError, ValueError) as exc:
        raise ModelDomainError(f"model inputs must be numbers or numeric arrays: {exc}") from None
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        shapes = ", ".join(f"{k}{np.shape(v)}" for k, v in inputs.items())
        raise ModelDomainError(f"model inputs have incompatible shapes: {shapes}") from None
    return {k: np.array(a, dtype=np.float64) for k, a in zip(inputs, arrays)}, scalar


@dataclass
class Domain:
    """Accumulates domain violations as (mask, message-for-element) pairs."""

    shape: tuple[int, ...]
    problems: list[tuple[np.ndarray, Callable[[int], str]]] = field(default_factory=list)

    def add(self, mask: np.ndarray, message: Callable[[int], str]) -> None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), self.shape)
        if mask.any():
            self.problems.append((mask, message))

    def check_range(
        self,
        name: str,
        values: np.ndarray,
        lo: float,
        hi: float,
        *,
        lo_open: bool = False,
        hi_open: bool = False,
        unit: str = "",
        allow_inf: bool = False,
    ) -> None:
        """Record elements of ``values`` outside [lo, hi] (ends open as requested) or NaN."""
        v = values
        bad = np.isnan(v)
        bad |= (v <= lo) if lo_open else (v < lo)
        if hi == np.inf:
            if not allow_inf:
                bad |= np.isinf(v)
        else:
            bad |= (v >= hi) if hi_open else (v > hi)
        left = "(" if lo_open else "["
        right = ")" if hi_open or (hi == np.inf and not allow_inf) else "]"
        interval = f"{left}{_fmt(lo)}, {_fmt(hi)}{right}"
        suffix = f" {unit}" if unit else ""

        def message(i: int, name=name, v=v, interval=interval, suffix=suffix) -> str:
            return f"{name} = {_fmt(v.flat[i])}{suffix} is outside its domain {interval}"

        self.add(bad, message)

    @property
    def invalid(self) -> np.ndarray:
        """Boolean mask of elements with at least one violation."""
        out = np.zeros(self.shape, dtype=bool)
        for mask, _ in self.problems:
            out |= mask
        return out

    def reasons(self) -> np.ndarray:
        """Object array: None where valid, else the first violation's message."""
        out = np.full(self.shape, None, dtype=object)
        for mask, message in self.problems:
            for i in np.flatnonzero(mask & np.equal(out, None)):
                out.flat[i] = message(int(i))
        return out

    def raise_first(self, model: str, scalar: bool) -> None:
        """Raise ModelDomainError for the first violation, if any."""
        for mask, message in self.problems:
            i = int(np.flatnonzero(mask)[0])
            where = "" if scalar or mask.size == 1 else f" (at flat index {i} of the broadcast inputs)"
            n = int(mask.sum())
            more = f"; {n} elements affected" if n > 1 else ""
            raise ModelDomainError(f"{model}: {message(i)}{where}{more}")


def _fmt(x: float) -> str:
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def finish(values: np.ndarray, scalar: bool) -> Floats:
    return float(values) if scalar else values
