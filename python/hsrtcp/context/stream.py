"""A radio log read block by block (issue 32): :func:`scan_radio` checks it, writes its rows
to Parquet and computes what the analysis needs of it — handoffs, coverage, each flow's
samples — with the state that crosses a block's end carried: the previous cell and the last
sample of every carrier, running sums, the boundaries of the complementary coverage not yet
swept, each flow's window of samples. Memory is a block plus that state, not the log.

The tables equal the whole-frame ones (:func:`hsrtcp.context.handoffs.handoffs`,
:func:`hsrtcp.context.coverage.coverage`, :func:`hsrtcp.context.classes.flow_context`) bit for
bit: running sums in the same order, each flow's statistics over the same samples. Times
must increase per carrier (the checks' rule). The coverage ``*`` and the flows' speed
samples also need the log in time order across carriers (as the lab writes it); a log that
is not (:class:`Unordered`) is read back whole from its Parquet file by the caller.
"""

from __future__ import annotations

import os
import queue
import threading

import numpy as np
import polars as pl

from hsrtcp.context.handoffs import _CELL, cell_type, finish
from hsrtcp.context.readers import GAP_S
from hsrtcp.schemas import COVERAGE_SCHEMA, HANDOFF_SCHEMA


def _why(exc: BaseException) -> str:
    """What a failed write says: an OSError's text, or the OS's text in polars' error."""
    if isinstance(exc, OSError):
        return str(exc.strerror or exc)
    text = str(exc)
    for e in (28, 122, 5, 13, 30):  # ENOSPC, EDQUOT, EIO, EACCES, EROFS
        if os.strerror(e) in text:
            return os.strerror(e)
    return text.splitlines()[0] if text else type(exc).__name__


class RowSink:
    """Rows to one Parquet file through polars' streaming sink, fed a frame at a time: the
    radio rows from the scan, handoffs.parquet from the spill files (no pyarrow in the run:
    importing it and its writer cost 45-55 MB of issue 32's 200). The sink runs in a thread
    of its own and pulls the frames from a queue of one: the scanners' polars operations stay
    on the calling thread (run inside the sink's source, on polars' threads, the same scan
    peaked 50-60 MB higher). ``what``: the file as a failed write names it; ``row_group_size``:
    rows the sink gathers before it writes (None: polars' default)."""

    def __init__(self, path: str, schema: dict, meta: dict, what: str = "the radio rows' temporary file",
                 row_group_size: int | None = None):
        from polars.io.plugins import register_io_source

        self.path, self.what, self.error = path, what, None
        self._q: queue.Queue = queue.Queue(maxsize=1)

        def source(*_):
            while (block := self._q.get()) is not None:
                yield block

        def run():
            try:
                register_io_source(source, schema=schema).sink_parquet(path, compression="zstd", metadata=meta,
                                                                       row_group_size=row_group_size)
            except BaseException as exc:  # noqa: BLE001 (given to the caller by write and close)
                self.error = exc
        self._t = threading.Thread(target=run, name="radio.parquet", daemon=True)
        self._t.start()

    def _put(self, item) -> bool:
        """``item`` handed to the sink; False when its thread has ended (an error)."""
        while self._t.is_alive():
            try:
                self._q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def write(self, block: pl.DataFrame) -> None:
        if not self._put(block):
            self._failed()

    def close(self) -> None:
        """The file complete (after an error of the scan too: the caller removes it)."""
        self._put(None)
        self._t.join()
        if self.error is not None:
            self._failed()

    def _failed(self):
        from hsrtcp.errors import OutputError

        raise OutputError(f"{self.path}: cannot write {self.what}: {_why(self.error)}")


class Unordered(ValueError):
    """A block holds a time before the previous blocks' latest (the ``*`` sweep needs time order)."""


class WholeOnly(Exception):
    """The log cannot be read block by block with the rows of the whole read (a G-NetTrack
    second that comes back after later ones): :func:`scan_radio` gives None, the caller
    reads it whole."""


def _with_run(block: pl.DataFrame) -> pl.DataFrame:
    if "run_id" not in block.columns:
        block = block.with_columns(pl.lit(None, pl.String).alias("run_id"))
    for c, t in (("arfcn", pl.Int64), ("generation", pl.String)):
        if c not in block.columns:
            block = block.with_columns(pl.lit(None, t).alias(c))
    return block


class HandoffScan:
    """Serving-cell changes block by block: the carried state is each (run, carrier)'s last
    sample with a cell and its last handoff. A block's handoffs are finished at once (their
    ``interval_s`` and ``ping_pong`` count from the carried handoff) and kept per carrier in
    the table's order: :meth:`result` only puts them side by side (no sort, no copy of the
    table at the end: issue 32's peak)."""

    _KEEP = ("run_id", "carrier", "ts", *_CELL, "source", "line")
    # small pieces of a carrier are joined into one every so many (fewer, larger buffers)
    _JOIN = 64

    def __init__(self, spill: str | None = None):
        self._last: pl.DataFrame | None = None  # one row per (run, carrier): its last cell sample
        self._tail: pl.DataFrame | None = None  # idem: its last handoff, finished
        self._found: dict[tuple, list[pl.DataFrame]] = {}  # (run, carrier) -> finished pieces
        self._small: dict[tuple, int] = {}      # pieces at the end of the list not yet joined
        # spill: path prefix of Parquet files, one per (run, carrier), that take the finished
        # pieces instead of memory; what the analysis reads of them (time, inter-system,
        # ping-pong: 10 bytes a handoff) stays in memory as numpy arrays (issue 32)
        self._spill = spill
        self._writers: dict[tuple, list[str]] = {}  # (run, carrier) -> its spill files, in order
        self._n = 0
        self._arrays: dict[tuple, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def add(self, block: pl.DataFrame) -> None:
        df = _with_run(block).select(self._KEEP)
        df = df.filter(pl.col("cid").is_not_null() & pl.col("carrier").is_not_null())
        if df.is_empty():
            return
        df = df.with_columns(pl.lit(False).alias("_carried"))
        if self._last is not None:
            df = pl.concat([self._last.with_columns(pl.lit(True).alias("_carried")), df], how="vertical")
        g = [pl.col("run_id").fill_null(""), "carrier"]
        # no sort: times increase per carrier (the checks pass this block before it comes
        # here), so a carrier's rows are in time order and its carried row is first
        df = df.with_columns(*(pl.col(c).shift(1).over(g).alias(f"old_{c}") for c in _CELL))
        moved = pl.lit(False)
        for c in _CELL:
            moved = moved | pl.col(c).ne_missing(pl.col(f"old_{c}"))
        h = df.filter(~pl.col("_carried") & pl.col("old_cid").is_not_null() & moved)
        self._last = (df.select(self._KEEP).group_by(g, maintain_order=True).last()
                      .select(self._KEEP))
        if h.is_empty():
            return
        h = finish(h.drop("_carried").rename({c: f"new_{c}" for c in _CELL})
                   .with_columns(cell_type().alias("type")), self._tail)
        tail = h if self._tail is None else pl.concat([self._tail, h], how="vertical")
        self._tail = tail.group_by(g, maintain_order=True).last().select(list(HANDOFF_SCHEMA))
        for (run, carrier), part in h.partition_by("run_id", "carrier", as_dict=True,
                                                   maintain_order=True).items():
            key = ("" if run is None else run, carrier, run)
            pieces = self._found.setdefault(key, [])
            pieces.append(part)
            self._small[key] = self._small.get(key, 0) + 1
            if self._spill is not None:
                self._arrays.setdefault(key, []).append(
                    (part["ts"].to_numpy(), (part["system"] == "inter").to_numpy(), part["ping_pong"].to_numpy()))
                if self._small[key] >= self._JOIN:
                    self._write(key)
            elif self._small[key] >= self._JOIN:
                joined = pl.concat(pieces[-self._JOIN:], how="vertical", rechunk=True)
                del pieces[-self._JOIN:]
                pieces.append(joined)
                self._small[key] = 0

    def _write(self, key: tuple) -> None:
        """The key's pieces in memory to a spill file of their own (polars' writer: no pyarrow
        in the scan); a key's files follow each other in time."""
        from hsrtcp.errors import OutputError

        if not self._found.get(key):
            return
        # the pieces' arrays joined into one a column: a few thousand small arrays (some of
        # them views of polars' buffers) grew the 1 GB log's peak by 10-15 MB (issue 32)
        arrays, n = self._arrays[key], len(self._found[key])
        arrays[-n:] = [tuple(np.concatenate([a[j] for a in arrays[-n:]]) for j in range(3))]
        path = f"{self._spill}.handoffs{self._n}"
        self._n += 1
        self._writers.setdefault(key, []).append(path)
        try:
            pl.concat(self._found[key], how="vertical").write_parquet(path, compression="zstd")
        except (OSError, pl.exceptions.PolarsError) as exc:  # a full disk: the file is an output of the run
            raise OutputError(f"{path}: cannot write the handoffs' temporary file: {_why(exc)}") from None
        self._found[key], self._small[key] = [], 0

    def spilled(self) -> tuple[list[str], dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """The spill files in the table's order (run, carrier; each in time order) and each
        (run, carrier)'s (ts, inter-system, ping-pong) arrays."""
        for k in list(self._found):
            self._write(k)
        files = [p for k in sorted(self._writers, key=lambda k: (k[0].encode(), k[1].encode()))
                 for p in self._writers[k]]
        arrays = {(k[2], k[1]): tuple(np.concatenate([p[j] for p in parts]) for j in range(3))
                  for k, parts in self._arrays.items()}
        return files, arrays

    def close(self) -> None:
        """Remove the spill files (on an error; a log's files otherwise: ScannedLog.discard)."""
        for paths in self._writers.values():
            for path in paths:
                if os.path.exists(path):
                    os.remove(path)
        self._writers = {}

    def result(self) -> pl.DataFrame:
        if self._last is None:
            return pl.DataFrame(schema=HANDOFF_SCHEMA)
        if not self._found:
            return finish(self._empty())
        # the order of finish(): run (null as ""), carrier, then time (each piece's order). The
        # pieces hold every column, so the columns' chunks are alike and nothing is copied (a
        # column added to the whole, or columns of unlike chunks that a consumer's first select
        # aligns, copied the table once: +60 MB at 500 k handoffs)
        parts = [p for k in sorted(self._found, key=lambda k: (k[0].encode(), k[1].encode()))
                 for p in self._found[k]]
        return pl.concat(parts, how="vertical")

    def _empty(self) -> pl.DataFrame:
        cols = ["run_id", "carrier", "ts", *(f"new_{c}" for c in _CELL), "source", "line",
                *(f"old_{c}" for c in _CELL), "type"]
        return pl.DataFrame(schema={c: HANDOFF_SCHEMA.get(c, pl.String) for c in cols})


def _run_sum(carry: float, x: np.ndarray) -> float:
    """``carry`` then ``x`` added left to right (the same float as one running sum over all)."""
    return float(np.cumsum(np.concatenate(([carry], x)))[-1]) if len(x) else carry


class _Carrier:
    __slots__ = ("ts", "lte", "total", "lte_s")

    def __init__(self):
        self.ts = None      # last sample's time and RAT: the open piece's start
        self.lte = False
        self.total = 0.0
        self.lte_s = 0.0


class _Run:
    def __init__(self):
        self.carriers: dict[str, _Carrier] = {}
        self.latest = -np.inf            # latest time seen in the run
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (t, dk, dl) not swept
        self.known = 0                   # carriers known / on LTE after the swept boundaries
        self.lte_n = 0
        self.t_prev = None               # the last swept boundary
        self.total = 0.0
        self.lte_s = 0.0


class CoverageScan:
    """LTE coverage block by block (hsrtcp.context.coverage): per carrier the running sums
    and the last sample; for ``*`` the sweep over piece boundaries, done up to the time no
    later block can put a boundary before."""

    def __init__(self):
        self._runs: dict = {}

    def add(self, block: pl.DataFrame) -> None:
        df = _with_run(block).select("run_id", "carrier", "rat", "ts")
        for (rid,), part in df.group_by(["run_id"], maintain_order=True):
            run = self._runs.setdefault(rid, _Run())
            r = part.filter(pl.col("carrier").is_not_null() & pl.col("rat").is_not_null())
            if r.is_empty():
                continue
            lo, hi = r["ts"].min(), r["ts"].max()
            if lo < run.latest:
                raise Unordered(f"time {lo} after {run.latest}: the log is not in time order")
            for (c,), g in r.group_by(["carrier"], maintain_order=True):
                st = run.carriers.setdefault(c, _Carrier())
                ts, lte = g["ts"].to_numpy(), (g["rat"] == "LTE").to_numpy()
                if st.ts is not None:
                    ts, lte = np.concatenate(([st.ts], ts)), np.concatenate(([st.lte], lte))
                st.ts, st.lte = float(ts[-1]), bool(lte[-1])
                if len(ts) < 2:
                    continue
                keep = np.diff(ts) <= GAP_S
                s, e, x = ts[:-1][keep], ts[1:][keep], lte[:-1][keep]
                st.total, st.lte_s = _run_sum(st.total, e - s), _run_sum(st.lte_s, (e - s)[x])
                xi = x.astype(np.int64)
                run.pending.append((np.concatenate([s, e]),
                                    np.concatenate([np.ones(len(s), np.int64), -np.ones(len(e), np.int64)]),
                                    np.concatenate([xi, -xi])))
            run.latest = max(run.latest, hi)
            # a later piece starts at a carrier's open start (if its next sample can still come
            # within GAP_S) or at a later sample: boundaries before that are final
            live = [st.ts for st in run.carriers.values() if st.ts is not None and run.latest - st.ts <= GAP_S]
            self._sweep(run, min([run.latest, *live]))

    @staticmethod
    def _sweep(run: _Run, upto: float) -> None:
        if not run.pending:
            return
        t = np.concatenate([p[0] for p in run.pending])
        dk = np.concatenate([p[1] for p in run.pending])
        dl = np.concatenate([p[2] for p in run.pending])
        order = np.lexsort((dl, dk, t))
        t, dk, dl = t[order], dk[order], dl[order]
        n = int(np.searchsorted(t, upto, side="left"))  # boundaries strictly before ``upto``
        run.pending = [(t[n:], dk[n:], dl[n:])] if n < len(t) else []
        if n == 0:
            return
        t, dk, dl = t[:n], dk[:n], dl[:n]
        known = run.known + np.concatenate(([0], np.cumsum(dk)[:-1]))
        lte_n = run.lte_n + np.concatenate(([0], np.cumsum(dl)[:-1]))
        dt = np.diff(t, prepend=t[:1] if run.t_prev is None else [run.t_prev])
        on = (dt > 0) & (known > 0)
        run.total = _run_sum(run.total, dt[on])
        run.lte_s = _run_sum(run.lte_s, dt[on & (lte_n > 0)])
        run.known += int(dk.sum())
        run.lte_n += int(dl.sum())
        run.t_prev = float(t[-1])

    def result(self) -> pl.DataFrame:
        rows = []
        for rid, run in self._runs.items():
            for c, st in run.carriers.items():
                rows.append({"run_id": rid, "carrier": c, "lte_s": st.lte_s, "total_s": st.total,
                             "lte_coverage": st.lte_s / st.total if st.total > 0 else None})
            if len(run.carriers) > 1:
                self._sweep(run, np.inf)
                rows.append({"run_id": rid, "carrier": "*", "lte_s": run.lte_s, "total_s": run.total,
                             "lte_coverage": run.lte_s / run.total if run.total > 0 else None})
        return pl.DataFrame(rows, schema=COVERAGE_SCHEMA) if rows else pl.DataFrame(schema=COVERAGE_SCHEMA)


class CheckScan:
    """:func:`hsrtcp.context.readers.check` block by block (lab and generic CSV logs): the same
    first error (a missing time first, then the first time that does not increase for its
    carrier, then the earliest value out of range) and the same warnings."""

    def __init__(self, file: str):
        self.file = file
        self._last: dict = {}         # carrier ("" for none) -> (ts, line) of its last row
        self._order: str | None = None
        self._range: str | None = None  # the first value out of range
        self.gaps: list[str] = []
        self.n_gaps = 0
        self.rows = 0

    def add(self, df: pl.DataFrame) -> None:
        from hsrtcp.context.schema import RadioLogError, first_out_of_range

        f = self.file
        self.rows += len(df)
        nulls = df["ts"].is_null()
        if nulls.any():  # first in priority and in file order: nothing later can come before it
            raise RadioLogError(f"{f}:{df['line'][int(nulls.arg_max())]}: no time")
        k = pl.col("carrier").fill_null("")
        d = df.select("ts", "line", k.alias("_k"), "carrier")
        carried = pl.DataFrame([(c, t, ln) for c, (t, ln) in self._last.items()],
                               schema={"_k": pl.String, "ts": pl.Float64, "line": pl.Int64}, orient="row")
        d = pl.concat([carried.with_columns(pl.lit(None, pl.String).alias("carrier"), pl.lit(True).alias("_c")),
                       d.select("_k", "ts", "line", "carrier", pl.lit(False).alias("_c"))], how="vertical")
        d = d.with_columns(pl.col("ts").shift(1).over("_k").alias("_prev_ts"),
                           pl.col("line").shift(1).over("_k").alias("_prev_line")).filter(~pl.col("_c"))
        if self._order is None:
            bad = d.filter(pl.col("ts") <= pl.col("_prev_ts")).head(1)
            if not bad.is_empty():
                r = bad.row(0, named=True)
                who = f" for carrier {r['carrier']}" if r["carrier"] is not None else ""
                what = "duplicate time" if r["ts"] == r["_prev_ts"] else "time goes backwards"
                self._order = (f"{f}:{r['line']}: {what}{who}: {r['ts']:.3f} after {r['_prev_ts']:.3f} "
                               f"(line {r['_prev_line']}); times must increase per carrier")
        bad = None if self._range is not None else first_out_of_range(df)
        if bad is not None:  # blocks come in file order: the first block's earliest row is the file's
            i, what = bad
            self._range = f"{f}:{df['line'][i]}: {what}"
        gaps = d.filter(pl.col("ts") - pl.col("_prev_ts") > GAP_S)
        self.n_gaps += len(gaps)
        for r in gaps.head(max(0, 20 - len(self.gaps))).iter_rows(named=True):
            who = f" of carrier {r['carrier']}" if r["carrier"] is not None else ""
            self.gaps.append(f"{f}:{r['line']}: no sample{who} for {r['ts'] - r['_prev_ts']:.1f} s before "
                             f"this line (gap > {GAP_S:g} s): flows across it get class unknown")
        last = d.group_by("_k", maintain_order=True).agg(pl.col("ts").last(), pl.col("line").last())
        for c, t, ln in last.iter_rows():
            self._last[c] = (t, ln)

    @property
    def failed(self) -> bool:
        return self._order is not None or self._range is not None

    def finish(self) -> list[str]:
        """The warnings; raises the first error (RadioLogError) as :func:`check` would."""
        from hsrtcp.context.schema import RadioLogError

        if self.rows == 0:
            raise RadioLogError(f"{self.file}: no samples (only a header?)")
        if self._order is not None:
            raise RadioLogError(self._order)
        if self._range is not None:
            raise RadioLogError(self._range)
        out = list(self.gaps)
        if self.n_gaps > 20:
            out.append(f"{self.file}: {self.n_gaps - 20} more gaps > {GAP_S:g} s")
        return out


class _Window:
    """For each flow [a, b] over one sorted stream of samples: the last sample at or before
    ``a``, the samples in (a, b] and the first one after ``b`` — what
    :func:`hsrtcp.context.classes._one` reads of the stream — collected block by block."""

    def __init__(self, a: np.ndarray, b: np.ndarray, strict: bool = True):
        self.a, self.b = a, b
        self.strict = strict  # times strictly increasing (else: equal times are dropped, the first kept)
        self.started = np.zeros(len(a), dtype=bool)
        self.done = np.zeros(len(a), dtype=bool)
        self.parts: dict[int, list] = {}
        self.carry = None  # the last sample so far: (ts, *values) arrays of length 1
        self.empty = True

    def add(self, ts: np.ndarray, *cols: np.ndarray) -> None:
        if len(ts) == 0:
            return
        prev = self.carry[0][0] if self.carry is not None else -np.inf
        if not self.strict:  # the speed samples: one per time, the first of the file
            keep = np.diff(ts, prepend=prev) != 0
            ts, cols = ts[keep], tuple(c[keep] for c in cols)
            if len(ts) == 0:
                return
        if ts[0] <= prev or (len(ts) > 1 and not (np.diff(ts) > 0).all()):
            raise Unordered("samples not in time order")
        self.empty = False
        rows = (ts, *cols)
        n = len(ts)
        p = np.searchsorted(ts, self.a, side="right")
        q = np.searchsorted(ts, self.b, side="right")
        new = ~self.started & (p < n)
        active = np.flatnonzero((self.started & ~self.done) | new)
        for i in active:
            parts = self.parts.setdefault(int(i), [])
            lo = 0
            # (copies: a view would keep the whole block alive)
            if new[i]:
                lo = int(p[i])
                if lo > 0:
                    parts.append(tuple(c[lo - 1:lo].copy() for c in rows))
                elif self.carry is not None:
                    parts.append(self.carry)
            hi = int(q[i])
            if hi > lo:
                parts.append(tuple(c[lo:hi].copy() for c in rows))
            if hi < n:
                parts.append(tuple(c[hi:hi + 1].copy() for c in rows))
                self.done[i] = True
                if len(parts) > 1:  # one array a column from now on (each array costs ~100 bytes)
                    self.parts[int(i)] = [tuple(np.concatenate([q[k] for q in parts]) for k in range(len(rows)))]
        self.started |= new
        self.carry = tuple(c[-1:].copy() for c in rows)

    def of(self, i: int, ncols: int) -> tuple[np.ndarray, ...]:
        """The flow's samples: (ts, *values) arrays."""
        parts = self.parts.get(i)
        if not self.started[i]:
            parts = [self.carry] if self.carry is not None else []
        if not parts:
            return tuple(np.empty(0) for _ in range(ncols + 1))
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(ncols + 1))


class FlowWindows:
    """The radio samples each flow of a run needs for its context (speed samples of every
    carrier, each carrier's cell samples, the log's first and last time), block by block;
    :meth:`log_for` gives :func:`hsrtcp.context.classes._one` what it reads of the run's log."""

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        self.speed = _Window(self.a, self.b, strict=False)
        self.cells: dict[str, _Window] = {}
        self.carriers: list[str] = []
        self.rat_names: list[str] = []
        self.lo, self.hi = np.inf, -np.inf
        self.rows = 0

    def add(self, df: pl.DataFrame) -> None:
        if df.is_empty():
            return
        self.rows += len(df)
        ts = df["ts"]
        self.lo, self.hi = min(self.lo, ts.min()), max(self.hi, ts.max())
        for c in df["carrier"].unique(maintain_order=True).to_list():
            if c is not None and c not in self.cells:
                self.carriers.append(c)
                self.cells[c] = _Window(self.a, self.b)
        for r in df["rat"].unique(maintain_order=True).to_list():
            if r is not None and r not in self.rat_names:
                self.rat_names.append(r)
        sp = df.filter(pl.col("speed_kmh").is_not_null())
        self.speed.add(sp["ts"].to_numpy(), sp["speed_kmh"].to_numpy())
        from hsrtcp.context.classes import _codes, generation_codes

        cells = df.filter(pl.col("carrier").is_not_null() & pl.col("cid").is_not_null())
        for (c,), g in cells.group_by(["carrier"], maintain_order=True):
            self.cells[c].add(g["ts"].to_numpy(), _codes(g["rat"], self.rat_names),
                              g["rsrp_dbm"].cast(pl.Float64).to_numpy(), g["rsrq_db"].cast(pl.Float64).to_numpy(),
                              generation_codes(g))

    def log_for(self, i: int, handoffs: dict):
        """A :class:`hsrtcp.context.classes._RunLog` holding only flow ``i``'s samples.
        ``handoffs``: carrier -> (ts, inter, ping_pong) arrays of the run."""
        from hsrtcp.context.classes import _RunLog

        log = object.__new__(_RunLog)
        log.speed_ts, log.speed = self.speed.of(i, 1)
        log.all_ts = np.array([self.lo, self.hi]) if self.rows else np.empty(0)
        log.carriers = list(self.carriers)
        log.rat_names = list(self.rat_names)
        log.cells = {}
        for c in self.carriers:
            t, rat, rsrp, rsrq, gen = self.cells[c].of(i, 4)
            log.cells[c] = {"ts": t, "rat": rat.astype(np.int32) if len(rat) else np.empty(0, np.int32),
                            "rsrp": rsrp, "rsrq": rsrq,
                            "gen": gen.astype(np.int32) if len(gen) else np.empty(0, np.int32)}
        log.handoffs = handoffs
        return log


# the formats read block by block (docs/formats/radio.md says why the others are not)
STREAMED_FORMATS = ("lab", "csv", "gnettrack")


class ScannedLog:
    """A radio log read block by block (:func:`scan_radio`): what the analysis needs of it,
    its rows in a Parquet file (``parquet``), never the whole log in memory."""

    def __init__(self, path: str, fmt: str):
        self.path, self.format = path, fmt
        self.run_id = None
        self.warnings: list[str] = []
        self.carriers: list[str] = []
        self.handoffs = None  # (the log states no handoffs: they come from its cell changes)
        self.lo = self.hi = None
        self.parquet: str | None = None
        self._derived: pl.DataFrame | None = None
        #: its handoffs in Parquet files, in the table's order (None: in ``derived`` only)
        self.handoff_files: list[str] | None = None
        #: carrier -> (ts, inter-system, ping-pong) arrays of its handoffs, by time
        self.handoff_arrays: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.coverage: pl.DataFrame | None = None  # None: the log is not in time order
        self.windows: FlowWindows | None = None    # None: idem (the caller reads the rows whole)

    @property
    def derived(self) -> pl.DataFrame:
        """Its handoffs (finished), the whole table: read from its files when they were spilled."""
        if self._derived is None and self.handoff_files is not None:
            if not self.handoff_files:
                return pl.DataFrame(schema=HANDOFF_SCHEMA)
            parts = []
            for p in self.handoff_files:
                with open(p, "rb") as f:
                    parts.append(pl.read_parquet(f))
            return pl.concat(parts, how="vertical")
        return self._derived

    @derived.setter
    def derived(self, value) -> None:
        self._derived = value

    def rows(self) -> pl.DataFrame:
        """The whole log with its ``run_id`` (for a log not in time order)."""
        with open(self.parquet, "rb") as f:
            return pl.read_parquet(f)

    def discard(self) -> None:
        """Remove its temporary files (the handoffs' spill files, the rows' Parquet file if
        it was not moved into place)."""
        for p in [*(self.handoff_files or []), *([self.parquet] if self.parquet else [])]:
            if os.path.exists(p):
                os.remove(p)


def _blocks(file: str, fmt: str, mapping: dict | None, t0: float | None):
    from hsrtcp.context.csvlog import iter_generic, iter_lab

    if fmt == "gnettrack":
        from hsrtcp.context.gnettrack import iter_gnettrack

        return iter_gnettrack(file)
    return iter_lab(file, t0) if fmt == "lab" else iter_generic(file, mapping or {})


def scan_radio(path, fmt: str, *, mapping: dict | None = None, t0: float | None = None, offset_s: float = 0.0,
               run_id: str | None = None, first_ts=(), last_ts=(), parquet) -> ScannedLog | None:
    """Read a radio log of :data:`STREAMED_FORMATS` block by block (None for the other formats
    and for a log that cannot be, :class:`WholeOnly`: the caller reads them whole with
    :func:`hsrtcp.context.readers.read_radio`): checks as
    :func:`~hsrtcp.context.readers.check`, writes the rows (with ``run_id``) to ``parquet``,
    finds the handoffs and the coverage, and collects each flow's samples (``first_ts``,
    ``last_ts``: the run's flows). Raises RadioLogError (``parquet`` then removed)."""

    from hsrtcp.context.options import check_offset
    from hsrtcp.context.readers import resolve
    from hsrtcp.schemas import RADIO_SCHEMA

    offset_s = check_offset(offset_s)
    file, fmt = resolve(path, fmt, mapping)
    if fmt not in STREAMED_FORMATS:
        return None
    log = ScannedLog(file, fmt)
    log.run_id = run_id
    # the handoffs go to files beside ``parquet`` (the run's output, never the input's directory)
    chk, ho, cov = CheckScan(file), HandoffScan(spill=os.fspath(parquet)), CoverageScan()
    win = FlowWindows(np.array([np.nan if x is None else x for x in first_ts], dtype=np.float64),
                      np.array([np.nan if x is None else x for x in last_ts], dtype=np.float64))
    ordered = True
    from hsrtcp.results import metadata

    # the radio table's columns and schema version: the file can become radio.parquet as it is
    rows = RowSink(os.fspath(parquet), dict(RADIO_SCHEMA, run_id=pl.String), metadata("radio"))
    try:
        for block in _blocks(file, fmt, mapping, t0):
            chk.add(block)
            if chk.failed:
                continue  # the log will be rejected: only the checks go on (for the first error)
            if offset_s:
                block = block.with_columns(pl.col("ts") + float(offset_s))
            block = block.with_columns(pl.lit(run_id, pl.String).alias("run_id"))
            rows.write(block)
            for c in block["carrier"].unique(maintain_order=True).to_list():
                if c is not None and c not in log.carriers:
                    log.carriers.append(c)
            lo, hi = block["ts"].min(), block["ts"].max()
            log.lo = lo if log.lo is None else min(log.lo, lo)
            log.hi = hi if log.hi is None else max(log.hi, hi)
            ho.add(block)
            if ordered:
                try:
                    cov.add(block)
                    win.add(block)
                except Unordered:
                    ordered = False
        w, rows = rows, None
        w.close()
        log.warnings = chk.finish()
        files, arrays = ho.spilled()
    except BaseException as exc:
        ho.close()
        if rows is not None:
            try:
                rows.close()
            except Exception:  # noqa: BLE001 (the scan's error is the one to raise)
                pass
        rows = None
        if os.path.exists(parquet):
            os.remove(parquet)
        if isinstance(exc, WholeOnly):
            return None
        raise
    log.parquet = parquet
    log.handoff_files = files
    log.handoff_arrays = {c: a for (_, c), a in arrays.items()}
    if ordered:
        log.coverage, log.windows = cov.result(), win
    return log
