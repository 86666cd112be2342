"""Running the native analysis over several captures: input checks, one progress bar of
bytes read, parallel threads (the core releases the GIL).

Shared by :func:`hsrtcp.analyze` (tables in memory) and :func:`hsrtcp.analyze_to` (tables
straight to Parquet). Light on purpose: this module and :mod:`hsrtcp.streaming` are on the
start-up path of ``hsrtcp analyze``, and on this kind of machine each standard module
costs about a millisecond to import (pathlib 10 ms, dataclasses 16 ms, click 30 ms), so
they import only ``os`` (loaded by the interpreter anyway); paths may be ``str`` or
``os.PathLike``. ``tests/python/foundation/test_streaming.py`` guards the import list.
Annotations are never evaluated (``from __future__ import annotations``): ``Callable`` and
``Sequence`` in them are ``collections.abc``'s, ``T`` is any result type.
"""

from __future__ import annotations

import os
import sys

from hsrtcp.errors import InputError

TABLES = ("flows", "events", "rtt", "series", "captures")
# MPTCP connections, their subflows and data-level series (docs/formats/mptcp.md): written by
# every analysis (empty without MPTCP); in a Dataset they are in ``extra``.
MPTCP_TABLES = ("mptcp", "mptcp_subflows", "mptcp_series")
# Flow ids of capture i start at i << ID_SHIFT, so ids stay unique across captures.
ID_SHIFT = 40


def native():
    """The compiled core (``hsrtcp._native``), with a clear message when it is not built."""
    try:
        from hsrtcp import _native
    except ImportError as exc:  # pragma: no cover - only without a build
        raise ImportError("hsrtcp's native module is not built: run `make build`") from exc
    return _native


def check_captures(paths: Sequence[str | os.PathLike],
                   vantage: str | Sequence[str | None] | None) -> list[str | None]:
    """Raise :class:`InputError` for a directory, a capture given twice (:func:`same_inputs`)
    or when none of ``paths`` exists; return one vantage per path.

    A missing file among existing ones is not raised: the analysis records it in the
    captures table with its error, as it does an unreadable one, and the others' results
    are written (issue 30)."""
    if not paths:
        raise InputError("no capture files given")
    for p in paths:
        if os.path.isdir(p):
            raise InputError(f"{os.fspath(p)}: is a directory, not a capture file")
    require_one(paths)
    twice = same_inputs(paths)
    if twice:
        raise InputError(twice)
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


def require_one(paths: Sequence[str | os.PathLike]) -> None:
    """Raise :class:`InputError` when not one of ``paths`` exists: there is nothing to
    analyze, and an output directory of empty tables would only replace earlier results."""
    if paths and not any(os.path.exists(p) for p in paths):
        raise InputError("; ".join(f"{os.fspath(p)}: no such file" for p in paths))


def same_inputs(captures: Sequence[str | os.PathLike] = (), client: Sequence[str | os.PathLike] = (),
                server: Sequence[str | os.PathLike] = ()) -> str | None:
    """A message when a command line names one capture twice where its flows would count
    twice, else None. One capture: the same file (a repeated path, a symlink, a hard link)
    or a byte-identical copy. Not allowed: a capture twice among ``captures``, a capture
    that is also a pair's side, a pair's client that is its server, a pair given twice,
    one capture under two names on pair sides. Allowed: one path serving several pairs
    on the same side (one server capture for several phone paths: analyzed once).
    Missing files and directories are left to the other checks."""
    from hsrtcp.output import shown

    inputs = [("", p) for p in captures] + [("--client ", p) for p in client] + [("--server ", p) for p in server]
    keys, idents = _capture_keys([p for _, p in inputs])
    seen: dict[object, list[int]] = {}
    for i, key in enumerate(keys):
        if key is None:
            continue
        for j in seen.get(key, ()):
            (rj, pj), (ri, pi) = inputs[j], inputs[i]
            how = "the same file" if idents[i] == idents[j] else "byte-identical copies of one capture"
            a, b = f"{rj}{shown(os.fspath(pj))}", f"{ri}{shown(os.fspath(pi))}"
            names = f"{a} is given twice" if a == b else f"{a} and {b} are {how}"
            if not rj or not ri:
                return f"{names}: its flows would be counted twice; give each capture once"
            if rj != ri:
                return f"{names}: give the two captures of the same connections"
            if _norm(pj) != _norm(pi):
                return (f"{names}: its flows would be counted twice; give a capture that serves "
                        f"several pairs under one name")
        seen.setdefault(key, []).append(i)
    sides = list(zip([_norm(p) for p in client], [_norm(p) for p in server]))
    for k, pair in enumerate(sides):
        if pair in sides[:k]:
            return (f"--client {shown(pair[0])} --server {shown(pair[1])} is given twice: its flows "
                    f"would be counted twice; give each pair once")
    return None


def _norm(p: str | os.PathLike) -> str:
    return os.path.normpath(os.fspath(p))


def _capture_keys(paths: list) -> tuple[list, list]:
    """``(keys, idents)``: per path, a key equal for paths that are one capture (the same
    file, or byte-identical copies) and its file identity; both None for what is not a
    regular file (missing, a directory: reported by other checks)."""
    import stat

    idents: list = []
    by_size: dict[int, list[tuple[int, int]]] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except (OSError, ValueError):
            idents.append(None)
            continue
        if not stat.S_ISREG(st.st_mode):
            idents.append(None)
            continue
        ident = (st.st_dev, st.st_ino)
        if ident not in idents and st.st_size > 0:  # (empty files are unreadable, not copies)
            by_size.setdefault(st.st_size, []).append(ident)
        idents.append(ident)
    first = {ident: idents.index(ident) for ident in set(idents) if ident is not None}
    key = {ident: ident for ident in first}
    for same_size in by_size.values():
        # Only files of equal size are read, and two different captures differ in their
        # first packet's time: a comparison mostly stops in the first block.
        for n, a in enumerate(same_size):
            for b in same_size[n + 1:]:
                if key[b] == b and _identical(paths[first[a]], paths[first[b]]):
                    key[b] = key[a]
    return [None if i is None else key[i] for i in idents], idents


def _identical(a, b, block: int = 1 << 20) -> bool:
    """Whether files ``a`` and ``b`` (of equal size) hold the same bytes."""
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                x, y = fa.read(block), fb.read(block)
                if x != y:
                    return False
                if not x:
                    return True
    except OSError:
        return False


BAR_MIN_BYTES = 1 << 30


class file_progress:
    """One progress over several files read at once. As a context manager it gives
    ``for_file(i)``, a callback that takes the bytes of file i read so far. ``progress``
    True draws a bar of bytes read over all files, a callable gets ``(done, total)``,
    False reports nothing.

    (A class rather than ``contextlib.contextmanager``: see the module docstring.)
    """

    def __init__(self, paths: Sequence[str | os.PathLike], progress: bool | Callable[[int, int], None]):
        self.total = sum(os.path.getsize(p) for p in paths if os.path.isfile(p))
        self.done = [0] * len(paths)
        self.bar = None
        self.report = progress if callable(progress) else None
        # The bar (rich) only where someone watches a run long enough to need one: its import
        # alone takes as long as analysing ~100 MB (issue 18: the default command's speed).
        if progress is True and self.total >= BAR_MIN_BYTES and sys.stderr.isatty():
            from hsrtcp.progress import ByteProgress

            self.bar = ByteProgress(self.total)
            self.report = self.bar.update

    def for_file(self, i: int) -> Callable[[int], None]:
        def cb(n: int) -> None:
            self.done[i] = n
            if self.report is not None:
                self.report(sum(self.done), self.total)

        return cb

    def __enter__(self) -> Callable[[int], Callable[[int], None]]:
        return self.for_file

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()


def result(future):
    """``future.result()``, waited for in slices of 50 ms: Ctrl-C may be delivered to one of
    the native threads, and the main thread then runs Python's handler (KeyboardInterrupt)
    only when it wakes up."""
    while True:
        try:
            return future.result(timeout=0.05)
        except TimeoutError:
            continue


def run_captures(paths: Sequence[str | os.PathLike], job: Callable[[int, Callable[[int], None]], T], *,
                 workers: int | None = None,
                 progress: bool | Callable[[int, int], None] = False) -> list[T]:
    """``job(i, report)`` for every capture i, on up to ``workers`` threads (default: CPUs).

    ``report(bytes_read)`` feeds the progress (see :class:`file_progress`). Results come
    back in the order of ``paths``.

    Ctrl-C: the native analysis on the main thread notices it by itself; analyses on worker
    threads learn it from their ``report``, which raises KeyboardInterrupt once the main
    thread was interrupted, so every thread stops within about a millisecond and the
    KeyboardInterrupt reaches the caller.
    """
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    n_workers = max(1, min(workers or os.cpu_count() or 1, len(paths)))
    with file_progress(paths, progress) as for_file:
        if n_workers == 1:
            return [job(i, for_file(i)) for i in range(len(paths))]
        from concurrent.futures import ThreadPoolExecutor  # (5 ms of start-up, when needed)

        interrupted = []

        def stoppable(i: int) -> T:
            report = for_file(i)

            def checked(n: int) -> None:
                if interrupted:
                    raise KeyboardInterrupt
                report(n)

            return job(i, checked)

        with ThreadPoolExecutor(n_workers) as pool:
            futures = [pool.submit(stoppable, i) for i in range(len(paths))]
            try:
                return [result(f) for f in futures]
            except KeyboardInterrupt:
                interrupted.append(True)
                for f in futures:
                    f.cancel()
                raise
