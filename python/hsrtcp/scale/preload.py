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


def dask_setup(worker=None) -> None:
    """Dask calls this once when the worker starts: the imports, and the worker's
    statistical profiler off. The profiler samples every thread's Python stack every 10 ms
    for the dashboard; an hsrtcp task is one Python frame waiting on native code, so the
    samples show nothing and cost CPU beside every input (docs/scale.md, "On Dask")."""
    for name in MODULES:
        importlib.import_module(name)
    callbacks = getattr(worker, "periodic_callbacks", None)
    if callbacks is not None:
        for name in ("profile", "profile-cycle"):
            pc = callbacks.pop(name, None)
            if pc is not None:
                pc.stop()
