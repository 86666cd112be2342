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
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid

_TUNED = False

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


def analyze_input(inp, results: str, window_s: float, record: dict) -> dict:
    """Analyze ``inp`` (:class:`hsrtcp.scale.discover.Input`) into ``results/input=<id>/``.

    ``record`` (keys, sources, version) is stored as the partition's ``_input.json``
    with this run's outcome added. Returns the record: ``status`` ``done`` (``errors``:
    capture errors and context problems, the partial results kept) or ``failed``
    (``reason``; no partition written), and ``seconds``, ``pid``, ``host``.
    """
    import resource
    import socket

    _tune_allocator()
    t0, cpu0 = time.perf_counter(), time.process_time()
    out = dict(record, pid=os.getpid(), host=socket.gethostname(), t_start=time.time())
    stage = os.path.join(results, STAGING, f"{inp.id}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        os.makedirs(stage)
        errors = _analyze(inp, stage, window_s)
        out.update(status="done", errors=errors, seconds=time.perf_counter() - t0)
        with open(os.path.join(stage, RECORD), "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, sort_keys=True)
        _commit(stage, partition_dir(results, inp.id), os.path.join(results, STAGING))
    except (ValueError, OSError) as exc:  # InputError is a ValueError: a bad input
        out.update(status="failed", kind="unreadable", reason=_message(exc), seconds=time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - one input's bug must not stop the corpus
        out.update(status="failed", kind="internal", reason=f"internal error: {exc!r}",
                   seconds=time.perf_counter() - t0)
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
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


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
            from hsrtcp.pair import analyze_pairs_to, bundle_pairs

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
            _, problems = write_context(stage, radio=inp.radio, radio_format=inp.radio_format,
                                        radio_map=inp.radio_map, radio_offset=inp.radio_offset, carrier=inp.carrier,
                                        labels=inp.labels or None, output=output, **kw)
            errors += [{"kind": "context", "source": inp.radio or inp.source, "reason": m} for m in problems]
        output.commit()
    return errors


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
