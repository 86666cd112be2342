"""Two-vantage analysis: a phone-side ("client") and a server-side capture read together.

:func:`analyze_pair` returns a :class:`hsrtcp.Dataset` whose ``flows`` hold, for every
connection, the single-capture row of each side (vantage ``client`` and ``server``, exactly
as :func:`hsrtcp.analyze` gives them for each file alone) plus one row with vantage
``matched``. The matched row starts from the server-side row (the vantage docs/metrics.md M2 and
M19 use; the client-side row when only the client capture has the connection) and adds the
columns only two captures can give (docs/formats/matched.md):

- ``p_d``, ``p_a`` (M8, M9), ``ack_burst_loss`` (P_a measured from rounds, M36),
  ``q`` (loss of retransmissions inside timeout sequences, M11);
- ``owd_down_*`` / ``owd_up_*`` one-way delays, ``clock_offset_s`` (server clock − client
  clock), ``clock_drift_ppm``, ``clock_offset_uncertainty_s`` (A9);
- ``spurious_timeouts_2v`` with ``spurious_timeouts_ack_loss`` and
  ``spurious_timeouts_rto_estimation`` (M12, M14), ``rto_bias_mean_s`` (M16);
- ``establishment_time_s`` (M18), ``lost_data_packets``, ``lost_ack_packets``,
  capture-loss counts per capture point, and ``pairing`` (``isn``, ``seq_proximity``,
  ``client_only``, ``server_only``).

``series`` gain the matched flows' rows (M6 per 1-s bin: ``data_sent``, ``data_lost``,
``loss_rate``; docs/formats/series.md). ``events`` gain one ``spurious_timeout`` row (class ``two_vantage``) per spurious timeout,
with ``cause`` = ``ack_loss`` | ``rto_estimation`` and ``value`` = the RTO estimation bias
t6 − t4 in seconds where defined.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hsrtcp.bundle import bundle_pairs, is_bundle
from hsrtcp.errors import InputError, OutputError
from hsrtcp.runner import ID_SHIFT, MPTCP_TABLES, TABLES, file_progress, require_one, result, same_inputs
from hsrtcp.runner import native as _native

# Matched row ids live above every single-capture id (those are capture_index << ID_SHIFT).
MATCH_ID_BASE = 1 << 62


def _norm(p: str | os.PathLike) -> str:
    """``str(PurePosixPath(p))`` without importing pathlib: that import is 10 ms of a
    two-vantage run's start (re, fnmatch, urllib.parse; bench/README.md, "Start-up").
    Repeated and trailing slashes and ``.`` parts go, ``..`` stays, as pathlib does."""
    s = os.fspath(p)
    lead = "//" if s.startswith("//") and not s.startswith("///") else "/" if s.startswith("/") else ""
    return (lead + "/".join(x for x in s.split("/") if x and x != ".")) or "."


def split_inputs(paths, vantage, client, server):
    """``(pairs, singles, single_vantages)`` of a command line: ``client`` and ``server``
    captures paired by order, every run bundle directory among ``paths`` as its pair(s),
    the other ``paths`` single captures with their ``vantage`` (one for all, or one each)."""
    client, server = list(client or ()), list(server or ())
    if len(client) != len(server):
        raise InputError(f"two-vantage analysis pairs client and server captures by order: got "
                         f"{len(client)} client and {len(server)} server capture(s)")
    pairs = [(_norm(c), _norm(s)) for c, s in zip(client, server)]
    vs = vantage if isinstance(vantage, (list, tuple)) else [vantage] * len(paths)
    if len(vs) != len(paths):  # (zip would drop the captures past the shorter list)
        raise ValueError("vantage needs one entry per capture")
    singles, single_vs = [], []
    for p, v in zip(paths, vs):
        if is_bundle(p):
            pairs += bundle_pairs(p)
        else:
            singles.append(_norm(p))
            single_vs.append(v)
    return pairs, singles, single_vs


def capture_files(pairs, singles, single_vantage):
    """The run's capture files as ``[(path, vantage)]``, the order their flow ids follow: each
    pair's client then server capture, each file once (one server capture may serve several
    phone paths), then the single captures; and ``{path: its number in that list}`` for the
    pairs' files. ``single_vantage`` is one vantage for every single capture or one each."""
    files: list = []
    slots: dict = {}
    for c, s in pairs:
        for p, v in ((c, "client"), (s, "server")):
            if p not in slots:
                slots[p] = len(files)
                files.append((p, v))
    vs = single_vantage if isinstance(single_vantage, (list, tuple)) else [single_vantage] * len(singles)
    return files + list(zip(singles, vs)), slots


def _plan(pairs, singles, single_vantage):
    """The run's capture files (:func:`capture_files`, paths normalised) and each pair's
    (client, server) numbers in that list. A missing file is analyzed as an unreadable one
    (its error in the captures table) unless no file of the run exists."""
    pairs = [(_norm(c), _norm(s)) for c, s in pairs]
    singles = [_norm(p) for p in singles]
    files, slots = capture_files(pairs, singles, single_vantage)
    for p, _ in files:
        if os.path.isdir(p):
            raise InputError(f"{p}: is a directory, not a capture file")
    require_one([p for p, _ in files])
    twice = same_inputs(singles, [c for c, _ in pairs], [s for _, s in pairs])
    if twice:
        raise InputError(twice)
    return pairs, files, [(slots[c], slots[s]) for c, s in pairs]


# The smallest round trip between a pair's two capture points (owd_down_min_s +
# owd_up_min_s: the clock offset cancels) cannot be below zero; this slack covers
# microsecond timestamps (the fixtures' pairs: 0 to 9 us, swapped -31 us and below).
CAUSALITY_SLACK_S = 10e-6


class PairWritten:
    """What :func:`analyze_pairs_to` wrote: ``files`` (paths), ``captures`` (rows of the
    captures table), ``flows`` (every flows row as dicts, single-capture then matched, or
    None unless asked for with ``keep_flows``), ``errors`` (read errors of the captures,
    then ``problems``: pairs without a connection in common, pairs whose clocks break
    causality either way round), ``warnings`` (pairs whose matcher hit its state budget:
    verdicts approximate; pairs given the other way round, analyzed swapped), ``swapped``
    (the pairs analyzed swapped, as given: (client, server))."""

    def __init__(self, files: list[str], captures: list[dict], flows: list[dict] | None,
                 warnings: list[str] = (), problems: list[str] = (),
                 swapped: list[tuple[str, str]] = ()) -> None:
        self.files, self.captures, self.flows, self.warnings = files, captures, flows, list(warnings)
        self.problems, self.swapped = list(problems), list(swapped)

    @property
    def errors(self) -> list[str]:
        return [c["error"] for c in self.captures if c["error"]] + self.problems


def analyze_pairs_to(pairs: Sequence[tuple[str | os.PathLike, str | os.PathLike]], out_dir: str | os.PathLike, *,
                     window_s: float = 30.0, use_ip_id: bool = False, first_index: int = 0,
                     singles: Sequence[str | os.PathLike] = (), single_vantage=None,
                     workers: int | None = None, progress=False, keep_flows: bool = False,
                     output=None, match_memory_mb: int = 256, packets: bool = False) -> PairWritten:
    """:func:`analyze_pairs` straight into ``out_dir/{flows,events,rtt,series,captures,pair_stats}.parquet``.

    The same tables, written while the captures are read (``hsrtcp._native.PairOut``):
    every capture's single-capture tables stream to the files as in
    :func:`hsrtcp.analyze_to`, and each pair's matcher runs alongside; only the flows rows
    (one per connection) and the matcher's own rows wait in memory until the matched rows
    are joined and written after them. Peak memory is bounded by the matcher's window and
    the open connections, not by the captures' length (bench/README.md, "Two vantages").
    Row order: the files' rows in the order of the files (client then server of each pair,
    then ``singles``), then each pair's matched rows; within a capture, events and rtt rows
    of several flows may interleave in chunks as in :func:`hsrtcp.analyze_to` (sort by
    ``flow_id`` for the order :func:`analyze_pairs` gives).

    Each pair is checked for sense before its numbers are kept (docs/two-vantage.md,
    "Checks"): a pair given the other way round (packets arriving before they are sent)
    is analyzed again with its sides swapped, named in ``warnings`` and ``swapped``; a pair
    without a connection in common, or impossible either way round, is in ``errors``.

    ``output``: an open :class:`hsrtcp.output.OutputSet` for ``out_dir`` to stage into
    (the caller commits); without it the tables are committed here. ``match_memory_mb``: the
    matcher's state budget per pair (docs/two-vantage.md, "Memory"); a pair that exceeds it
    is named in ``warnings``.
    """
    from hsrtcp.output import OutputSet, shown

    given = [(_norm(c), _norm(s)) for c, s in pairs]
    pairs, files, numbers = _plan(pairs, singles, single_vantage)
    if not (window_s > 0):
        raise ValueError("window_s must be positive")
    if match_memory_mb < 1:
        raise ValueError("match_memory_mb must be at least 1")
    outset = OutputSet(out_dir) if output is None else output
    run = dict(window_s=window_s, use_ip_id=use_ip_id, first_index=first_index, workers=workers,
               progress=progress, keep_flows=keep_flows, match_memory_mb=match_memory_mb, packets=packets)
    staged: list = []
    try:
        try:
            staged, results, matched, warnings = _write_pairs(out_dir, outset.prefix, pairs, files, numbers, **run)
            trips = _round_trips(matched, len(pairs), first_index)
            swap = [k for k, rt in sorted(trips.items())
                    if rt < -CAUSALITY_SLACK_S and _causal_swapped(pairs[k], window_s, use_ip_id)]
            given_trips = dict(trips)
            if swap:
                # Analyzed again with those pairs' sides swapped: the files are then exactly
                # those of the run given the right way round.
                _discard(staged)
                pairs, files, numbers = _plan([(s, c) if k in swap else (c, s) for k, (c, s) in enumerate(pairs)],
                                              singles, single_vantage)
                staged, results, matched, warnings = _write_pairs(out_dir, outset.prefix, pairs, files, numbers,
                                                                  **run)
                trips = _round_trips(matched, len(pairs), first_index)
            problems = _unpaired(pairs, numbers, results, matched, first_index)
        except BaseException:
            _discard(staged)
            raise
        for k in swap:
            c, s = (shown(p) for p in pairs[k])
            warnings.append(f"{s} (given as the client side) and {c} (given as the server side) are the other "
                            f"way round: packets arrive before they are sent (smallest round trip between the "
                            f"captures {given_trips[k] * 1e3:.3f} ms); analyzed with {c} as the client side "
                            f"(docs/two-vantage.md, Checks)")
        for k, rt in sorted(trips.items()):
            if rt < -CAUSALITY_SLACK_S:
                c, s = (shown(p) for p in pairs[k])
                problems.append(f"{c} + {s}: the smallest round trip between the captures is {rt * 1e3:.3f} ms, "
                                f"impossible either way round (did a capture's clock jump?): the pair's one-way "
                                f"delays, clock offset and the loss verdicts that rest on them are not to be "
                                f"trusted (docs/two-vantage.md, Checks)")
        written = outset.add_tables(staged, commit=output is None)
    finally:
        if output is None:
            outset.abort()
    flows = [f for r in results for f in r["flows"]] + matched if keep_flows else None
    return PairWritten(written, [c for r in results for c in r["captures"]], flows, warnings, problems,
                       [given[k] for k in swap])


def _write_pairs(out_dir, prefix, pairs, files, numbers, *, window_s, use_ip_id, first_index, workers, progress,
                 keep_flows, match_memory_mb, packets=False):
    """One analysis of the run into staged files: ``(staged, results, matched, warnings)``
    — ``[(table, staged path)]``, each file's result (captures rows, flows rows with
    ``keep_flows``), the matched flows rows (dicts, always: the checks read them), the
    matcher's budget warnings."""
    from functools import partial

    from hsrtcp.output import Holding, shown, stopped_writer, writer_error

    interrupted: list[bool] = []

    def stoppable(report):
        def checked(n: int) -> None:
            try:
                if interrupted:
                    raise KeyboardInterrupt
                report(n)
            except KeyboardInterrupt:
                # Ctrl-C reached this thread (the main one runs Python's handler): the
                # other threads of the run stop at their next report.
                interrupted.append(True)
                raise

        return checked

    try:
        native = _native()
        out = native.PairOut(os.fspath(out_dir), prefix, packets)
    except OSError as exc:
        raise OutputError(str(exc)) from None
    # A pair whose two files serve no other pair is one job: both files analyzed at once
    # and the matcher fed the segments their readers decode (each file read once).
    # Files shared by several pairs (an MPTCP bundle's server capture) are analyzed
    # once, and each of their pairs' matcher reads both files itself.
    uses = [0] * len(files)
    for c, s in numbers:
        uses[c] += 1
        uses[s] += 1
    fused = [k for k, (c, s) in enumerate(numbers) if uses[c] == 1 and uses[s] == 1]
    alone = [k for k in range(len(pairs)) if k not in set(fused)]
    in_fused = {i for k in fused for i in numbers[k]}
    singles_left = [i for i in range(len(files)) if i not in in_fused]
    # The matchers first: each is the longest job of its pair, and the pool may be
    # smaller than the number of jobs.
    n_jobs = len(fused) + len(alone) + len(singles_left)
    n_workers = max(1, min(workers or os.cpu_count() or 1, n_jobs))
    pool = None
    try:
        with file_progress([p for p, _ in files], progress) as for_file:
            def match_id(k: int) -> int:
                return MATCH_ID_BASE + ((first_index + k) << ID_SHIFT)

            def file_job(i: int):
                return native.FileJob(files[i][0], shown(files[i][0]), files[i][1], i << ID_SHIFT, i)

            def pair_job(k: int):
                c, s = numbers[k]
                return native.PairJob(file_job(c), file_job(s), k, match_id(k), window_s, use_ip_id, match_memory_mb)

            jobs = [partial(out.analyze_pair_files, pair_job(k),
                            tuple(stoppable(for_file(i)) for i in numbers[k]), keep_flows) for k in fused]
            jobs += [partial(out.match_pair, pair_job(k)) for k in alone]
            # a shared file's packets rows wait for its pairs' fates (packets.fate)
            in_alone = {i for k in alone for i in numbers[k]}
            jobs += [partial(out.analyze, file_job(i), stoppable(for_file(i)), keep_flows, i in in_alone)
                     for i in singles_left]
            if n_workers == 1:
                # One job at a time (one pair: its job has threads of its own): no pool,
                # whose import (concurrent.futures) was ~10 ms of a 0.3-s pair run.
                done = [_off_main_thread(job) for job in jobs]
            else:
                from concurrent.futures import ThreadPoolExecutor

                pool = ThreadPoolExecutor(n_workers)
                futures = [pool.submit(job) for job in jobs]
                done = [result(f) for f in futures]
            by_file = {}
            for k, (rc, rs) in zip(fused, done[:len(fused)]):
                by_file[numbers[k][0]], by_file[numbers[k][1]] = rc, rs
            for i, r in zip(singles_left, done[len(fused) + len(alone):]):
                by_file[i] = r
            results = [by_file[i] for i in range(len(files))]
        matched, warnings = out.finish_pairs(len(files), True)
        with Holding(out_dir):  # (a full disk still looks full when close() has failed)
            try:
                staged = out.close()
            except OSError as exc:
                raise writer_error(exc, out_dir) from None
    except OSError as exc:  # the writer stopped: its own error names file and reason
        err = stopped_writer(exc, out_dir, out.close)
        if err is None:
            raise
        raise err from None
    except KeyboardInterrupt:
        interrupted.append(True)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=False)
        out.abort()
    return staged, results, matched, list(warnings)


def _discard(staged) -> None:
    """Remove the files a run staged (``[(table, path)]``) that will not be committed."""
    for _, path in staged:
        try:
            os.unlink(path)
        except OSError:
            pass


def _pair_of(flow_id: int, first_index: int) -> int:
    """The pair number of a matched row (its id is ``match_id(k)`` plus the row's number)."""
    return ((flow_id - MATCH_ID_BASE) >> ID_SHIFT) - first_index


def _round_trips(matched: list[dict], n_pairs: int, first_index: int) -> dict[int, float]:
    """Per pair with a connection seen in both directions in both captures, the smallest
    round trip between the two capture points, seconds (negative: impossible)."""
    trips: dict[int, float] = {}
    for row in matched:
        down, up = row.get("owd_down_min_s"), row.get("owd_up_min_s")
        if down is None or up is None:
            continue
        k = _pair_of(row["flow_id"], first_index)
        if 0 <= k < n_pairs:
            trips[k] = min(trips.get(k, down + up), down + up)
    return trips


def _causal_swapped(pair: tuple[str, str], window_s: float, use_ip_id: bool) -> bool:
    """Whether the pair's captures, sides swapped, have a possible smallest round trip
    (the matcher alone; otherwise the pair is left as given, with a warning)."""
    import polars as pl

    from hsrtcp.output import shown

    c, s = pair
    r = _off_main_thread(lambda: _native().analyze_pair(s, c, shown(s), shown(c), MATCH_ID_BASE, window_s, use_ip_id))
    m = pl.read_ipc_stream(r["matched"]).select("flow_id", "owd_down_min_s", "owd_up_min_s")
    trips = _round_trips(m.to_dicts(), 1, 0)
    return bool(trips) and trips[0] >= -CAUSALITY_SLACK_S


def _unpaired(pairs, numbers, results, matched, first_index) -> list[str]:
    """A message per pair whose captures share no connection though one has some and
    neither had a read error (that error says already why)."""
    from hsrtcp.output import shown

    sides = [[0, 0, 0] for _ in pairs]  # paired, client only, server only
    for row in matched:
        k = _pair_of(row["flow_id"], first_index)
        if 0 <= k < len(pairs):
            sides[k][{"client_only": 1, "server_only": 2}.get(row.get("pairing"), 0)] += 1
    problems = []
    for k, (paired, client_only, server_only) in enumerate(sides):
        read_errors = [c["error"] for i in numbers[k] for c in results[i]["captures"] if c["error"]]
        if paired == 0 and (client_only or server_only) and not read_errors:
            c, s = (shown(p) for p in pairs[k])
            problems.append(f"{c} + {s}: no TCP connection in common ({client_only} in the client-side "
                            f"capture, {server_only} in the server-side one), so no two-vantage numbers: "
                            f"are they captures of the same traffic? (docs/two-vantage.md, Checks)")
    return problems


def _off_main_thread(job):
    """``job()`` on a thread of its own while the main thread waits in slices of 50 ms, as
    :func:`hsrtcp.runner.result` does: Python runs the Ctrl-C handler on the main thread
    only, and must do so at once (the job then stops at its next progress report)."""
    import threading

    box: dict = {}

    def run() -> None:
        try:
            box["r"] = job()
        except BaseException as exc:  # handed to the main thread below
            box["e"] = exc

    t = threading.Thread(target=run, name="hsrtcp-job", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.05)
    if "e" in box:
        raise box["e"]
    return box["r"]


def match_tables(client: str | os.PathLike, server: str | os.PathLike, *, index: int = 0,
                 window_s: float = 30.0, use_ip_id: bool = False) -> dict:
    """Run only the matcher on one pair: ``{"matched", "events", "series": DataFrame,
    "stats": dict}`` (``series``: M6 per-bin loss rows of the matched flows).

    ``matched`` has one row per connection (paired or seen on one side) with the identity of
    each side (``cv_*`` as the client capture shows it, ``sv_*`` as the server capture shows
    it) and the two-vantage columns. ``index`` keeps ids of several pairs apart.
    """
    c, s = _norm(client), _norm(server)
    for p in (c, s):
        if not os.path.exists(p):
            raise InputError(f"{p}: no such file")
        if os.path.isdir(p):
            raise InputError(f"{p}: is a directory, not a capture file")
    import polars as pl

    from hsrtcp.output import shown

    r = _native().analyze_pair(c, s, shown(c), shown(s), MATCH_ID_BASE + (index << ID_SHIFT),
                               window_s, use_ip_id)
    return {"matched": pl.read_ipc_stream(r["matched"]), "events": pl.read_ipc_stream(r["events"]),
            "series": pl.read_ipc_stream(r["series"]), "stats": dict(r["stats"])}


def analyze_pair(client: str | os.PathLike, server: str | os.PathLike, *, index: int = 0,
                 window_s: float = 30.0, use_ip_id: bool = False):
    """Analyze one phone-side and one server-side capture of the same connections.

    Returns a :class:`hsrtcp.Dataset`: the single-capture tables of both files (unchanged by
    the pairing) plus the matched rows and the two-vantage events. See the module docstring
    for the columns; ``Dataset.extra["pair_stats"]`` holds the run facts (clock fit, pair
    counts, packets per side).

    Example
    -------
    >>> ds = hsrtcp.analyze_pair("phone.pcap", "server.pcap")                     # doctest: +SKIP
    >>> ds.flows.filter(pl.col("vantage") == "matched").select("p_d", "p_a", "q")  # doctest: +SKIP
    """
    return analyze_pairs([(client, server)], window_s=window_s, use_ip_id=use_ip_id, first_index=index)


def analyze_pairs(pairs: Sequence[tuple[str | os.PathLike, str | os.PathLike]], *,
                  window_s: float = 30.0, use_ip_id: bool = False, first_index: int = 0,
                  singles: Sequence[str | os.PathLike] = (), single_vantage=None,
                  workers: int | None = None, progress=False, packets: bool = False):
    """Several (client, server) pairs, plus optional single captures, into one Dataset.

    The tables of :func:`analyze_pairs_to`, written into a temporary directory and read
    back; events and rtt rows grouped by flow (each flow's own order kept), as
    :func:`hsrtcp.analyze` gives them. ``progress``: True for a progress bar, or a callback
    ``(bytes_done, bytes_total)``. What the command line prints as warnings, and pairs
    without a connection in common, come as :class:`UserWarning` (a pair given the other
    way round is analyzed swapped: docs/two-vantage.md, Checks)."""
    import tempfile
    import warnings

    import polars as pl

    from hsrtcp.dataset import Dataset

    with tempfile.TemporaryDirectory(prefix="hsrtcp-pair-") as tmp:
        w = analyze_pairs_to(pairs, tmp, window_s=window_s, use_ip_id=use_ip_id, first_index=first_index,
                             singles=singles, single_vantage=single_vantage, workers=workers, progress=progress,
                             packets=packets)
        for message in w.warnings + w.problems:
            warnings.warn(message, UserWarning, stacklevel=3)
        extra = ("pair_stats", *MPTCP_TABLES, "packets")
        frames = {t: pl.read_parquet(os.path.join(tmp, f"{t}.parquet")) for t in (*TABLES, *extra)
                  if t in TABLES or os.path.exists(os.path.join(tmp, f"{t}.parquet"))}
    for t in ("events", "rtt"):
        frames[t] = frames[t].sort("flow_id", maintain_order=True)
    return Dataset(**{t: frames[t] for t in TABLES}, extra={t: frames[t] for t in extra if t in frames})
