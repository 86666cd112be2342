"""Running the native analysis over several captures: input checks, one progress bar of
bytes read, parallel threads (the core releases the GIL).

Shared by :func:`hsrtcp.analyze` (tables in memory) and :func:`hsrtcp.analyze_to` (tables
straight to Parquet). Light on purpose: no polars here, so the command line can start fast.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from hsrtcp.errors import InputError

TABLES = ("flows", "events", "series", "captures")
# Flow ids of capture i start at i << ID_SHIFT, so ids stay unique across captures.
ID_SHIFT = 40

T = TypeVar("T")


def native():
    """The compiled core (``hsrtcp._native``), with a clear message when it is not built."""
    try:
        from hsrtcp import _native
    except ImportError as exc:  # pragma: no cover - only without a build
        raise ImportError("hsrtcp's native module is not built: run `make build`") from exc
    return _native


def check_captures(paths: Sequence[Path], vantage: str | Sequence[str | None] | None) -> list[str | None]:
    """Raise :class:`InputError` for a missing file or a directory; return one vantage per path."""
    if not paths:
        raise InputError("no capture files given")
    for p in paths:
        if not p.exists():
            raise InputError(f"{p}: no such file")
        if p.is_dir():
            raise InputError(f"{p}: is a directory, not a capture file")
    if vantage is None or isinstance(vantage, str):
        vantages = [vantage] * len(paths)
    else:
        vantages = list(vantage)
        if len(vantages) != len(paths):
            raise ValueError("vantage needs one entry per capture")
    for v in vantages:
        if v not in (None, "client", "server"):
            raise ValueError(f"vantage must be 'client' or 'server', not {v!r}")
    return vantages


@contextmanager
def file_progress(paths: Sequence[Path], progress: bool | Callable[[int, int], None]):
    """One progress over several files read at once: yields ``for_file(i)``, a callback that
    takes the bytes of file i read so far. True draws a bar of bytes read over all files,
    a callable gets ``(done, total)``, False reports nothing."""
    total = sum(p.stat().st_size for p in paths if p.is_file())
    done = [0] * len(paths)
    bar = None
    report: Callable[[int, int], None] | None = progress if callable(progress) else None
    if progress is True:
        from hsrtcp.progress import ByteProgress

        bar = ByteProgress(total)
        report = bar.update

    def for_file(i: int) -> Callable[[int], None]:
        def cb(n: int) -> None:
            done[i] = n
            if report is not None:
                report(sum(done), total)

        return cb

    try:
        yield for_file
    finally:
        if bar is not None:
            bar.close()


def run_captures(paths: Sequence[Path], job: Callable[[int, Callable[[int], None]], T], *,
                 workers: int | None = None,
                 progress: bool | Callable[[int, int], None] = False) -> list[T]:
    """``job(i, report)`` for every capture i, on up to ``workers`` threads (default: CPUs).

    ``report(bytes_read)`` feeds the progress (see :func:`file_progress`). Results come
    back in the order of ``paths``.
    """
    n_workers = max(1, min(workers or os.cpu_count() or 1, len(paths)))
    with file_progress(paths, progress) as for_file:
        if n_workers == 1:
            return [job(i, for_file(i)) for i in range(len(paths))]
        from concurrent.futures import ThreadPoolExecutor  # (5 ms of start-up, when needed)

        with ThreadPoolExecutor(n_workers) as pool:
            return list(pool.map(lambda i: job(i, for_file(i)), range(len(paths))))
