"""The Python face of the analyzer: :func:`analyze` and :class:`Dataset`.

The heavy lifting happens in the Rust core (``hsrtcp._native``) with the GIL released;
tables cross the boundary as Arrow IPC streams and arrive here as polars DataFrames.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import polars as pl

from hsrtcp.dataset import Dataset  # (here for callers of hsrtcp.api.Dataset)
from hsrtcp.errors import InputError
from hsrtcp.runner import ID_SHIFT, MPTCP_TABLES, TABLES, check_captures, run_captures
from hsrtcp.runner import native as _native

__all__ = ["ID_SHIFT", "TABLES", "Dataset", "analyze", "analyze_one", "schemas"]


def _frames(ipc: dict[str, bytes]) -> dict[str, pl.DataFrame]:
    frames = {name: pl.read_ipc_stream(stream) for name, stream in ipc.items()}
    # A long connection hands its events and RTT samples on in chunks while it is open, so
    # flows can interleave; in memory they are grouped by flow again (each flow's own order kept).
    for t in ("events", "rtt"):
        frames[t] = frames[t].sort("flow_id", maintain_order=True)
    return frames


def analyze_one(path: str | os.PathLike, *, vantage: str | None = None, index: int = 0,
                progress: Callable[[int], None] | None = None, packets: bool = False) -> dict[str, pl.DataFrame]:
    """Analyze a single capture; returns its tables (see :func:`analyze`)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, not a capture file")
    return _analyze_path(p, vantage, index, progress, packets)


def _analyze_path(p: Path, vantage: str | None, index: int,
                  progress: Callable[[int], None] | None, packets: bool = False) -> dict[str, pl.DataFrame]:
    """The tables of one capture; a file that cannot be read (missing too) is a captures
    row with its error, as for a cut one."""
    from hsrtcp.output import shown

    ipc = _native().analyze_capture(p, shown(p), vantage, index << ID_SHIFT, progress, packets)
    return _frames(ipc)


def analyze(paths: str | os.PathLike | Iterable[str | os.PathLike] | None = None, *,
            vantage: str | Sequence[str | None] | None = None, workers: int | None = None,
            progress: bool | Callable[[int, int], None] = False,
            client: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
            server: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
            window_s: float = 30.0, packets: bool = False) -> Dataset:
    """Analyze capture files (pcap / pcapng, plain or gzip) and return a :class:`Dataset`.

    Each capture is analyzed on its own (single vantage); several captures run in
    parallel threads. A capture that is cut or corrupt still yields the flows read before
    the error (marked ``truncated``); the error, naming file and byte offset, is in
    ``captures.error`` and :attr:`Dataset.errors`. So is a missing file among existing
    ones; :class:`hsrtcp.errors.InputError` when none exists, for a directory, and for a
    capture given twice (the same file, or a byte-identical copy: its flows would count twice).

    Parameters
    ----------
    paths: one path or several.
    vantage: "client" or "server" for all captures, or one entry per capture.
    workers: parallel captures (default: number of CPUs, at most the number of captures).
    progress: True for a progress bar of bytes read, or a callback ``(done, total)``.
    client, server: phone-side and server-side captures of the same connections, one or
        several (paired by order). Each pair also goes through the two-vantage matcher
        (:mod:`hsrtcp.pair`): ``flows`` then hold rows with vantage ``matched`` carrying p_d,
        p_a, ack_burst_loss, q, one-way delays, clock offset, spurious-timeout causes …, and
        the single-capture rows of each file, unchanged. A positional path that is a run
        bundle directory (docs/formats/bundle.md) is analyzed as its pair(s).
    window_s: how long the matcher waits for a packet's twin in the other capture.
    packets: also the ``packets`` table, a row per TCP segment (docs/formats/packets.md), in
        :attr:`Dataset.extra`.

    Examples
    --------
    >>> ds = hsrtcp.analyze(["examples/server.pcap"], vantage="server")   # doctest: +SKIP
    >>> ds.flows.select("flow_id", "s2c_payload_bytes")                   # doctest: +SKIP
    """
    from hsrtcp.pair import split_inputs

    pairs, singles, single_vs = split_inputs(_listed(paths), vantage, _listed(client), _listed(server))
    paths = [Path(p) for p in singles]
    if pairs:
        from hsrtcp.pair import analyze_pairs

        return analyze_pairs(pairs, window_s=window_s, singles=paths, single_vantage=single_vs,
                             workers=workers, progress=progress, packets=packets)
    vantages = check_captures(paths, single_vs)

    def job(i: int, report: Callable[[int], None]) -> dict[str, pl.DataFrame]:
        return _analyze_path(paths[i], vantages[i], i, report, packets)

    results = run_captures(paths, job, workers=workers, progress=progress)
    extra = {t: pl.concat([r[t] for r in results], how="vertical")
             for t in (*MPTCP_TABLES, "packets") if results and all(t in r for r in results)}
    return Dataset(**{t: pl.concat([r[t] for r in results], how="vertical") for t in TABLES}, extra=extra)


def _listed(x) -> list:
    """One path or several as a list (None: none)."""
    if x is None:
        return []
    return [x] if isinstance(x, (str, os.PathLike)) else list(x)


def schemas() -> dict[str, list[tuple[str, str, str]]]:
    """Declared columns of every table: ``{table: [(name, type, doc), ...]}``."""
    return dict(_native().schemas())
