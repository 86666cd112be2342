"""What a worker imports before its first input, so that no input pays for it.

:data:`MODULES` is the analysis one input needs (no polars: single captures, pairs and
bundles all stream to Parquet without it; the context layer imports it in the worker when
an input has a radio log or labels). The local pool's fork server imports them once
(:mod:`.pool`); a Dask worker imports them at start when given this module as a preload:
``dask worker ... --preload hsrtcp.scale.preload`` (docs/scale.md), and the local cluster
of ``--dask`` does so itself (:mod:`.dask`).
"""

from __future__ import annotations

import importlib

MODULES = ("hsrtcp.scale.tasks", "hsrtcp.streaming", "hsrtcp.pair", "hsrtcp.output")


def dask_setup(worker=None) -> None:  # noqa: ARG001 - Dask's preload hook signature
    """Dask calls this once when the worker starts."""
    for name in MODULES:
        importlib.import_module(name)
