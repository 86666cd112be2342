"""Analysis straight into Parquet files: :func:`analyze_to`.

The tables go from the Rust core to the files in row groups while the captures are read
(``hsrtcp._native.ParquetOut``), so memory stays flat however long the captures are, and
nothing here imports polars: this is the path ``hsrtcp analyze`` takes for single captures.
The files are the same tables :func:`hsrtcp.analyze` returns (docs/formats/), written
atomically (temporary name, then rename).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hsrtcp.errors import InputError
from hsrtcp.runner import ID_SHIFT, check_captures, native, run_captures


@dataclass
class Written:
    """What :func:`analyze_to` wrote and the rows a summary needs."""

    paths: list[Path]
    captures: list[dict]
    #: every flow row (dicts), or None unless asked for with ``keep_flows``
    flows: list[dict] | None

    @property
    def errors(self) -> list[str]:
        """Errors that stopped reading a capture (each names the file and byte offset)."""
        return [c["error"] for c in self.captures if c["error"]]


def analyze_to(paths: str | os.PathLike | Iterable[str | os.PathLike], out_dir: str | os.PathLike, *,
               vantage: str | Sequence[str | None] | None = None, workers: int | None = None,
               progress: bool | Callable[[int, int], None] = False, keep_flows: bool = False) -> Written:
    """Analyze capture files into ``out_dir/{flows,events,series,captures}.parquet``.

    Same analysis and tables as :func:`hsrtcp.analyze` (single vantage per capture; use
    that for two-vantage pairs), but the rows are written while the captures are read
    instead of being collected in memory. Rows of one flow keep the order they were
    found in; flows may interleave in chunks (sort by ``flow_id`` for a fixed order).
    ``keep_flows`` also returns the flow rows as dicts (for a summary).

    A capture that is cut or corrupt still yields the flows read before the error; the
    error is in ``captures.error`` and :attr:`Written.errors`.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    vantages = check_captures(paths, vantage)
    try:
        out = native().ParquetOut(str(out_dir))
    except OSError as exc:
        raise InputError(str(exc)) from exc

    def job(i: int, report: Callable[[int], None]) -> dict:
        return out.analyze(str(paths[i]), str(paths[i]), vantages[i], i << ID_SHIFT, report, keep_flows)

    try:
        results = run_captures(paths, job, workers=workers, progress=progress)
        written = [Path(p) for p in out.close()]
    finally:
        out.abort()  # after an error: no half-written table keeps a final name
    flows = [f for r in results for f in r["flows"]] if keep_flows else None
    return Written(written, [c for r in results for c in r["captures"]], flows)


def parquet_to_csv(paths: Iterable[Path]) -> list[Path]:
    """A CSV file next to each Parquet table (atomically); needs polars."""
    import polars as pl

    from hsrtcp.api import _atomic

    return [_atomic(p.with_suffix(".csv"), pl.read_parquet(p).write_csv) for p in paths]
