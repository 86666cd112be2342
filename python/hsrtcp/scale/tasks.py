"""One input of a corpus analyzed into its partition: :func:`analyze_input`.

This is the function the process pool and the Dask workers run; it takes and returns
plain, picklable values and never raises for a bad input (the result says what failed).
The analysis itself is the one ``hsrtcp analyze`` runs for one input
(:mod:`hsrtcp.cli.run_analysis`, without summary, CSV and plot):

- a single capture streams to Parquet (:func:`hsrtcp.analyze_to`);
- a client/server pair or a run bundle streams to Parquet as well
  (:func:`hsrtcp.pair.analyze_pairs_to`: both captures' tables, then the matched rows);
- then the context layer (:func:`hsrtcp.context.enrich.write_context`) when the input has a
  radio log or labels, or is a bundle.

Everything is written into a staging directory ``RESULTS/.staging/<id>.<pid>.<rand>`` on
the same file system, with the record ``_input.json`` (sources, content and state keys,
version, errors) last; then the directory is renamed to ``RESULTS/input=<id>``. A reader
sees a partition whole or not at all; a partition without ``_input.json`` cannot exist.

The rename happens only while the run that asked for it still holds RESULTS
(:func:`run_holds`): a worker that outlives its run (the run was killed) or finishes after
the run began to stop (Ctrl-C, SIGTERM, a full disk) leaves no partition behind the run's
``inputs.parquet``. A failure to write into RESULTS (disk full, quota, read-only) is not
the input's fault: the result's ``kind`` is ``output`` and the run stops.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
import uuid

_TUNED = False
#: tokens of this process's runs that are stopping (their thread-pool tasks commit nothing)
_STOPPED: set[str] = set()
#: in a pool worker, its end of the run's life pipe (hsrtcp.scale.pool.worker_init)
LIFE = None
#: failures of the results directory's file system: the run stops (not the input's fault)
OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
#: ... and these when they concern a path in RESULTS (reading an input can give them too)
DENIED = (errno.EACCES, errno.EPERM)

STAGING = ".staging"
RECORD = "_input.json"
PARTITION = "input="


def partition_dir(results: str, input_id: str) -> str:
    return os.path.join(results, PARTITION + input_id)


def read_record(results: str, input_id: str) -> dict | None:
    """The record of a committed partition, or None (missing, unreadable)."""
    try:
        with open(os.path.join(partition_dir(results, input_id), RECORD), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class RunGone(Exception):
    """The run that asked for this input stopped or died: nothing may be committed."""


def stop_run(token: str) -> None:
    """The run ``token`` of this process is stopping: its thread-pool tasks commit nothing more."""
    _STOPPED.add(token)


def run_holds(results: str, run: dict | None) -> bool:
    """Whether the run ``run`` (``{"pid", "token"}`` of the run's process; None: no run to
    check) still holds ``results``: in its own process, until it stops; elsewhere, while
    its life pipe is open (a local pool's worker) and its pid holds the lock (any worker)."""
    if run is None:
        return True
    if run["pid"] == os.getpid():
        return run["token"] not in _STOPPED
    if LIFE is not None and LIFE.poll():  # the run never writes to it: readable = closed
        return False
    return _lock_holder(results) == run["pid"]


def _lock_holder(results: str) -> int | None:
    """The pid in the results lock when a process holds it, else None."""
    import fcntl

    from hsrtcp.scale.lock import LOCK

    try:
        fd = os.open(os.path.join(results, LOCK), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: by whom
            text = os.pread(fd, 64, 0).decode("ascii", "replace").split()
            return int(text[0]) if text and text[0].isdigit() else None
        return None  # nobody holds it (closing the descriptor drops this probe's lock)
    finally:
        os.close(fd)


def analyze_input(inp, results: str, window_s: float, record: dict, run: dict | None = None) -> dict:
    """Analyze ``inp`` (:class:`hsrtcp.scale.discover.Input`) into ``results/input=<id>/``.

    ``record`` (keys, sources, version) is stored as the partition's ``_input.json``
    with this run's outcome added. Returns the record: ``status`` ``done`` (``errors``:
    capture errors and context problems, the partial results kept), ``failed``
    (``kind``, ``reason``; no partition written; ``kind`` ``output`` when RESULTS could not
    be written) or ``stopped`` (``run`` stopped: nothing written), and ``seconds``,
    ``pid``, ``host``.
    """
    import resource
    import socket

    _tune_allocator()
    t0, cpu0 = time.perf_counter(), time.process_time()
    out = dict(record, pid=os.getpid(), host=socket.gethostname(), t_start=time.time())
    stage = os.path.join(results, STAGING, f"{inp.id}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        if not run_holds(results, run):
            raise RunGone
        os.mkdir(stage)  # (not makedirs: a .staging removed by a stopping run stays removed)
        errors = _analyze(inp, stage, window_s)
        out.update(status="done", errors=errors, seconds=time.perf_counter() - t0)
        with open(os.path.join(stage, RECORD), "w", encoding="utf-8") as f:
            json.dump(_printable(out), f, indent=1, sort_keys=True)
        if not run_holds(results, run):  # checked last: the rename follows at once
            raise RunGone
        _commit(stage, partition_dir(results, inp.id), os.path.join(results, STAGING))
    except RunGone:
        out.update(status="stopped", seconds=time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - one input's bug must not stop the corpus
        why = _output_problem(exc, results, stage)
        if why is not None:
            out.update(status="failed", kind="output", reason=why)
        elif isinstance(exc, (ValueError, OSError)):  # InputError is a ValueError: a bad input
            out.update(status="failed", kind="unreadable", reason=_message(exc))
        else:
            out.update(status="failed", kind="internal", reason=f"internal error: {exc!r}")
        out["seconds"] = time.perf_counter() - t0
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    # for bench/corpus.py: CPU of this process (all its threads) and its peak RSS so far
    out.update(cpu_s=time.process_time() - cpu0, rss_peak_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
               t_end=time.time())
    return out


def _tune_allocator() -> None:
    """Let glibc keep freed memory for the next input, as a one-input run does
    (:func:`hsrtcp.cli.run_analysis.run`). A worker analyzes one input after another, so
    its peak stays one input's peak. Needed on Dask above all: its nanny starts workers
    with ``MALLOC_TRIM_THRESHOLD_=65536``, which made every analysis there 2-3x slower
    (bench/README.md, "Corpus")."""
    global _TUNED
    if not _TUNED:
        from hsrtcp.runner import native

        native().keep_freed_memory()
        _TUNED = True


def _message(exc: BaseException) -> str:
    from hsrtcp.output import shown

    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{shown(exc.filename)}: {exc.strerror or exc}"
    return shown(str(exc))


def _output_problem(exc: BaseException, results: str, stage: str) -> str | None:
    """The message when ``exc`` is a failure of ``results`` as a whole (its disk full, a
    quota, read-only, no permission), else None: a problem of this input, such as a name
    too long for the file system, is its failure row. ``stage``: where it was writing,
    named when the error names no file (a write(): "[Errno 28] ...")."""
    from hsrtcp.errors import OutputError
    from hsrtcp.output import shown

    text = str(exc)
    if isinstance(exc, OSError):
        if exc.errno in OUTPUT_ERRNOS:
            return _message(exc) if exc.filename is not None else f"{shown(stage)}: {exc.strerror}"
        inside = exc.filename is not None and os.path.abspath(os.fsdecode(exc.filename)).startswith(
            os.path.join(os.path.abspath(results), ""))
        return _message(exc) if exc.errno in DENIED and inside else None
    if isinstance(exc, OutputError):  # (the native writer names the file and the errno)
        return None if os.strerror(errno.ENAMETOOLONG) in text else _message(exc)
    # writers that drop the errno (Arrow, polars) still spell it
    if any(os.strerror(e) in text for e in OUTPUT_ERRNOS):
        return f"{shown(stage)}: {shown(text)}"
    return None


def _printable(value):
    """``value`` with every string printable (a file name that is not UTF-8 has its
    undecodable bytes as U+FFFD, as in the tables): JSON readers reject lone surrogates."""
    from hsrtcp.output import shown

    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {k: _printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_printable(v) for v in value]
    return value


def _analyze(inp, stage: str, window_s: float) -> list[dict]:
    """Write the tables of ``inp`` into ``stage``; the errors and problems, as
    ``{"kind", "source", "reason"}`` (the failures table's columns)."""
    from hsrtcp.output import OutputSet

    errors: list[dict] = []
    # One output set for the tables and the context tables: committed together, all listed
    # in the partition's manifest (Dataset.read loads what the manifest lists).
    with OutputSet(stage) as output:
        if inp.kind == "capture":
            from hsrtcp.streaming import analyze_to

            w = analyze_to(inp.files, stage, vantage=[inp.vantage], workers=1, output=output)
            capture_errors = w.errors
        else:
            from hsrtcp.bundle import bundle_pairs
            from hsrtcp.pair import analyze_pairs_to

            if inp.kind == "pair":
                pairs = [(inp.files[0], inp.files[1])]
            elif inp.kind == "bundle":
                pairs = bundle_pairs(inp.files[0])
            else:
                raise ValueError(f"{inp.source}: unknown input kind {inp.kind!r}")
            w = analyze_pairs_to(pairs, stage, window_s=window_s, workers=1, output=output)
            capture_errors = w.errors
        errors += [{"kind": "broken", "source": _file_of(e, inp), "reason": e} for e in capture_errors]
        if inp.kind == "bundle" or inp.radio is not None or inp.labels or inp.carrier:
            from hsrtcp.context.enrich import write_context

            kw = {"captures": [inp.files[0]]} if inp.kind in ("bundle", "capture") else \
                 {"client": [inp.files[0]], "server": [inp.files[1]]}
            radio = inp.radio
            special = _not_regular(radio)
            if special is not None:  # a FIFO would block the run, /dev/zero never ends
                errors.append({"kind": "context", "source": radio, "reason": f"{radio}: {special}"})
                radio = None
            _, problems = write_context(stage, radio=radio, radio_format=inp.radio_format,
                                        radio_map=inp.radio_map, radio_offset=inp.radio_offset, carrier=inp.carrier,
                                        labels=inp.labels or None, output=output, **kw)
            errors += [{"kind": "context", "source": inp.radio or inp.source, "reason": m} for m in problems]
        output.commit()
    return errors


def _not_regular(path: str | None) -> str | None:
    """Why ``path`` (a radio log) is not read when it exists and is not a regular file, else
    None (a file, or missing: the context layer reports that)."""
    from hsrtcp.scale.hashing import special_kind

    if path is None:
        return None
    try:
        what = special_kind(os.stat(path).st_mode)
    except OSError:
        return None
    return None if what is None else f"is {what}, not a regular file; radio log not read"


def _file_of(message: str, inp) -> str:
    """The file a core error message starts with (``PATH: ...``), else the input."""
    for f in inp.files:
        if message.startswith(f + ":"):
            return f
    return inp.source


def _commit(stage: str, final: str, staging: str) -> None:
    """Rename ``stage`` to ``final``; an older partition there is moved aside first and
    removed after (a reader may find the partition missing for that instant, never mixed)."""
    old = None
    if os.path.lexists(final):
        old = os.path.join(staging, f"old.{os.path.basename(final)}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    try:
        os.replace(stage, final)
    except OSError:
        if old is not None:
            os.replace(old, final)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
