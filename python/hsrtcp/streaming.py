"""Analysis straight into Parquet files: :func:`analyze_to`.

The tables go from the Rust core to the files in row groups while the captures are read
(``hsrtcp._native.ParquetOut``), so memory stays flat however long the captures are, and
nothing here imports polars: this is the path ``hsrtcp analyze`` takes for single captures.
The files are the same tables :func:`hsrtcp.analyze` returns (docs/formats/), committed
together (:mod:`hsrtcp.output`).

Like :mod:`hsrtcp.runner` this module is on the command line's start-up path and imports
only ``os`` (see there why).
"""

from __future__ import annotations

import os

from hsrtcp.errors import OutputError
from hsrtcp.output import OutputSet, shown, stopped_writer
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
               progress: bool | Callable[[int, int], None] = False, keep_flows: bool = False,
               output: OutputSet | None = None, packets: bool = False,
               meanwhile: Callable[[list[dict] | None, list[dict]], object] | None = None) -> Written:
    """Analyze capture files into ``out_dir/{flows,events,rtt,series,captures}.parquet``.

    Same analysis and tables as :func:`hsrtcp.analyze` (single vantage per capture; use
    that for two-vantage pairs), but the rows are written while the captures are read
    instead of being collected in memory. The rows of several captures are in the order of
    ``paths`` (every run of the same input gives the same files); rows of one flow keep the
    order they were found in, flows may interleave in chunks (sort by ``flow_id`` for a
    fixed order). ``keep_flows`` also returns the flow rows as dicts (for a summary).

    The tables appear together or not at all (:mod:`hsrtcp.output`: the directory is locked
    while the run writes, and the files of an earlier run that this one does not write are
    removed). ``output``: an open :class:`hsrtcp.output.OutputSet` for ``out_dir`` to stage
    the tables in without committing them (the caller adds its own files, then commits).

    A capture that is cut or corrupt still yields the flows read before the error; the
    error is in ``captures.error`` and :attr:`Written.errors`. ``packets``: also
    ``packets.parquet``, a row per TCP segment (docs/formats/packets.md).
    ``meanwhile(flows, captures)`` (the rows :class:`Written` gives) runs while the writer
    finishes the files: the end of a caller's own work need not wait for them.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    vantages = check_captures(paths, vantage)
    names = [shown(p) for p in paths]
    outset = OutputSet(out_dir) if output is None else output
    try:
        try:
            out = native().ParquetOut(os.fspath(out_dir), outset.prefix, packets)
        except OSError as exc:
            raise OutputError(str(exc)) from None

        def job(i: int, report: Callable[[int], None]) -> dict:
            return out.analyze(native().FileJob(paths[i], names[i], vantages[i], i << ID_SHIFT, i), report, keep_flows)

        try:
            try:
                results = run_captures(paths, job, workers=workers, progress=progress)
            except OSError as exc:  # the writer stopped: its own error names file and reason
                err = stopped_writer(exc, out_dir, out.close)
                if err is None:
                    raise
                raise err from None
            flows = [f for r in results for f in r["flows"]] if keep_flows else None
            captures = [c for r in results for c in r["captures"]]
            if meanwhile is not None:
                out.start_close()
                meanwhile(flows, captures)
            with outset.holding():  # (close() removes the files it fails on)
                try:
                    staged = out.close()
                except OSError as exc:
                    raise outset.error(exc) from None
        finally:
            out.abort()  # after an error: nothing half-written is left
        files = outset.add_tables(staged, commit=output is None)
    finally:
        if output is None:
            outset.abort()
    return Written(files, captures, flows)


def stage_csv(output: OutputSet, names: Iterable[str]) -> list[str]:
    """Stage a CSV copy of each staged Parquet table ``names`` (``flows.parquet`` ...) in
    ``output``; returns the CSV names. Needs polars."""
    import polars as pl

    csvs = []
    for name in names:
        csv = name.removesuffix(".parquet") + ".csv"
        # (files opened here: polars takes no path that is not UTF-8)
        with open(output.staged(name), "rb") as src, open(output.stage(csv), "wb") as dst:
            pl.read_parquet(src).write_csv(dst)
        csvs.append(csv)
    return csvs
