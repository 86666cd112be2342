"""Analysis straight into Parquet files: :func:`analyze_to`.

The tables go from the Rust core to the files in row groups while the captures are read
(``hsrtcp._native.ParquetOut``), so memory stays flat however long the captures are, and
nothing here imports polars: this is the path ``hsrtcp analyze`` takes for single captures.
The files are the same tables :func:`hsrtcp.analyze` returns (docs/formats/), written
atomically (temporary name, then rename).

Like :mod:`hsrtcp.runner` this module is on the command line's start-up path and imports
only ``os`` (see there why).
"""

from __future__ import annotations

import os

from hsrtcp.errors import InputError
from hsrtcp.runner import ID_SHIFT, check_captures, native, run_captures


class Written:
    """What :func:`analyze_to` wrote and the rows a summary needs."""

    def __init__(self, files: list[str], captures: list[dict], flows: list[dict] | None) -> None:
        #: the files written, as strings (:attr:`paths` gives them as ``pathlib.Path``)
        self.files = files
        #: one row per capture (the ``captures`` table)
        self.captures = captures
        #: every flow row (dicts), or None unless asked for with ``keep_flows``
        self.flows = flows

    @property
    def paths(self) -> list[Path]:
        """The files written."""
        from pathlib import Path

        return [Path(f) for f in self.files]

    @property
    def errors(self) -> list[str]:
        """Errors that stopped reading a capture (each names the file and byte offset)."""
        return [c["error"] for c in self.captures if c["error"]]

    def __repr__(self) -> str:
        return f"Written(files={self.files!r}, captures={len(self.captures)} rows, errors={self.errors!r})"


def analyze_to(paths: str | os.PathLike | Iterable[str | os.PathLike], out_dir: str | os.PathLike, *,
               vantage: str | Sequence[str | None] | None = None, workers: int | None = None,
               progress: bool | Callable[[int, int], None] = False, keep_flows: bool = False) -> Written:
    """Analyze capture files into ``out_dir/{flows,events,rtt,series,captures}.parquet``.

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
    paths = [os.fspath(p) for p in paths]
    vantages = check_captures(paths, vantage)
    try:
        out = native().ParquetOut(os.fspath(out_dir))
    except OSError as exc:
        raise InputError(str(exc)) from exc

    def job(i: int, report: Callable[[int], None]) -> dict:
        return out.analyze(paths[i], paths[i], vantages[i], i << ID_SHIFT, report, keep_flows)

    try:
        results = run_captures(paths, job, workers=workers, progress=progress)
        files = [os.fspath(p) for p in out.close()]
    finally:
        out.abort()  # after an error: no half-written table keeps a final name
    flows = [f for r in results for f in r["flows"]] if keep_flows else None
    return Written(files, [c for r in results for c in r["captures"]], flows)


def parquet_to_csv(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """A CSV file next to each Parquet table (atomically); needs polars."""
    from pathlib import Path

    import polars as pl

    from hsrtcp.api import _atomic

    return [_atomic(Path(p).with_suffix(".csv"), pl.read_parquet(p).write_csv) for p in paths]
