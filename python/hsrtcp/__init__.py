"""hsrtcp: measure, analyze, model and emulate TCP and MPTCP under high-speed mobility.

The main entry points:

- :func:`hsrtcp.analyze` reads captures and returns a :class:`hsrtcp.Dataset` of polars
  DataFrames (``flows``, ``events``, ``rtt``, ``series``, ``captures``);
  :func:`hsrtcp.analyze_to` writes the same tables straight to Parquet files with flat
  memory.
- :mod:`hsrtcp.models` holds the throughput models (PFTK and the HSR-enhanced model).
- :mod:`hsrtcp.lab` runs real Linux TCP/MPTCP through an emulated high-speed-rail path.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "analyze", "analyze_to", "Dataset", "study"]


def __getattr__(name: str):
    # Lazy: importing hsrtcp must not require the native module (analysis code is testable
    # without it), only calling analyze() does.
    if name in ("analyze", "Dataset"):
        from hsrtcp import api

        return getattr(api, name)
    if name == "analyze_to":
        from hsrtcp.streaming import analyze_to

        return analyze_to
    if name == "study":
        # the package hsrtcp.study is callable: hsrtcp.study(results, by=...) (polars, numpy)
        import importlib

        return importlib.import_module("hsrtcp.study")
    raise AttributeError(name)
