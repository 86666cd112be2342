"""What a gallery reads: one study directory (``hsrtcp study -o STUDY``) and, optionally,
results directories of ``hsrtcp analyze`` for what the study tables do not keep (per-second
series of one flow, handoff and suspension samples, flows columns the study drops), and
directories of seed 004's MPTCP instance tables (``hsrtcp mptcp RUNS -o DIR``, alone or
written into a results directory).

A missing input is not an error: the item that needs it raises :class:`Missing` naming the
file or column, and the gallery says so in ``coverage.md``. A study directory that is not
one, or a table that cannot be read, is an :class:`hsrtcp.errors.InputError` naming the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl

from hsrtcp.context import classes
from hsrtcp.errors import InputError


class Missing(Exception):
    """An item cannot be made: ``reason`` says exactly which input or column is missing;
    ``kind`` is "data" (the inputs lack it) unless the tool could not make it from any."""

    def __init__(self, reason: str, kind: str = "data") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


# seed 000 §V's five classes of 3-minute flows, by the study's flow_class
SEED000_CLASSES = {"static": "a: static", "low": "b: < 150 km/h, 0 handoffs", "high_0": "c: 280-310 km/h, 0 handoffs",
                   "high_1_8": "d: 280-310 km/h, 1-8 handoffs", "high_9_16": "e: 280-310 km/h, 9-16 handoffs"}


#: docs/seeds.md's RESULTS (hsrtcp.figures.committed analyzes them): (results directory name,
#: hsrtcp analyze arguments relative to the repository root, what it holds)
COMMITTED_RESULTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("lab_truth_run", ("tests/data/lab_truth/run",),
     "a Rattan run at 300 km/h, phone and server captures, radio log (handoffs, context)"),
    ("lab_static_run", ("tests/data/lab_static/run",),
     "a Rattan run of a standing train (0 km/h, no handoff), phone and server captures, radio log"),
    ("ack_blackout", ("--client", "tests/data/ack_blackout.client.pcap",
                      "--server", "tests/data/ack_blackout.server.pcap"),
     "netns pair: ACKs blacked out, a spurious timeout caused by ACK loss"),
    ("data_blackout", ("--client", "tests/data/data_blackout.client.pcap",
                       "--server", "tests/data/data_blackout.server.pcap"),
     "netns pair: data blacked out, a timeout recovery with re-sent segments lost"),
    ("mptcp", ("--vantage", "client", "tests/data/mptcp/two_paths.client.pcap",
               "tests/data/mptcp/reinject.client.pcap"),
     "kernel MPTCP v1 over two paths (docs/mptcp.md fixtures)"),
)

#: docs/seeds.md's RESULTS read as committed (their captures are too large to commit; the
#: README of each says how they were made): (name, directory relative to the root, what it holds)
COMMITTED_TABLES: tuple[tuple[str, str, str], ...] = (
    ("mptcp-conjunction", "tests/data/mptcp-conjunction",
     "seed 004's instances: `hsrtcp mptcp` tables of the lab's conjunction campaign "
     "(campaigns/mptcp-conjunction.toml; tests/data/mptcp-conjunction/README.md)"),
)

#: the MPTCP instance tables (docs/formats/mptcp-metrics.md) a gallery reads
MPTCP_TABLES = ("instances", "paths", "kt", "rates")


class Inputs:
    """The study tables (read on first use) and the results directories, if any."""

    def __init__(self, study_dir: str | os.PathLike, results: list[str | os.PathLike] = ()) -> None:
        self.study_dir = Path(study_dir)
        # a directory of MPTCP instance tables only (hsrtcp mptcp -o DIR) is no results
        # directory of hsrtcp analyze: the results reader would refuse it
        given = [os.fspath(r) for r in results]
        self.mptcp_dirs = [r for r in given if os.path.isfile(os.path.join(r, "mptcp_instances.parquet"))]
        self.results_dirs = [r for r in given if r not in self.mptcp_dirs
                             or os.path.isfile(os.path.join(r, "flows.parquet"))]
        self._mptcp: dict[str, pl.DataFrame] = {}
        manifest = self.study_dir / "study.json"
        if not self.study_dir.is_dir():
            raise InputError(f"{self.study_dir}: no such study directory (make one with hsrtcp study RESULTS -o DIR)")
        if not manifest.is_file():
            raise InputError(f"{manifest}: missing: {self.study_dir} is not a study directory "
                             f"(make one with hsrtcp study RESULTS -o DIR)")
        try:
            self.manifest = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{manifest}: not readable as JSON: {exc}") from None
        from hsrtcp.study import SCHEMA_VERSION

        version = self.manifest.get("study_schema_version") if isinstance(self.manifest, dict) else None
        if version != SCHEMA_VERSION:
            raise InputError(f"{manifest}: study_schema_version {version!r}, this hsrtcp reads {SCHEMA_VERSION} "
                             f"(make the study again with this version)")
        self._tables: dict[str, pl.DataFrame | None] = {}
        self._results = None

    # -- the study directory -------------------------------------------------------------
    def table(self, name: str) -> pl.DataFrame | None:
        if name not in self._tables:
            path = self.study_dir / f"{name}.parquet"
            if not path.is_file():
                self._tables[name] = None
            else:
                try:
                    self._tables[name] = pl.read_parquet(path)
                except Exception as exc:  # polars raises several kinds for a damaged file
                    raise InputError(f"{path}: not a readable Parquet table: {str(exc).splitlines()[0]}") from None
        return self._tables[name]

    def need(self, name: str, columns: tuple[str, ...] = ()) -> pl.DataFrame:
        df = self.table(name)
        if df is None:
            raise Missing(f"{name}.parquet of STUDY (hsrtcp study writes it)")
        absent = [c for c in columns if c not in df.columns]
        if absent:
            raise Missing(f"{name}.parquet of STUDY: no column {', '.join(absent)}")
        return df

    def flows(self, columns: tuple[str, ...] = ()) -> pl.DataFrame:
        """``study_flows`` with the figures' extra grouping keys: ``speed_band``,
        ``generation``, ``handoff_band`` (hsrtcp.context.classes)."""
        df = self.need("study_flows", ("flow_class", *columns))
        extra = []
        if "speed_min_kmh" in df.columns and "speed_max_kmh" in df.columns:
            extra.append(pl.struct("speed_min_kmh", "speed_max_kmh").map_elements(
                lambda s: classes.speed_band(s["speed_min_kmh"], s["speed_max_kmh"]), return_dtype=pl.String)
                .alias("speed_band"))
        # context's generations (an EN-DC flow is 5G NSA over LTE); rats for a study made before it
        by = "generations" if "generations" in df.columns else ("rats" if "rats" in df.columns else None)
        if by is not None:
            extra.append(pl.col(by).map_elements(classes.flow_generation, return_dtype=pl.String)
                         .alias("generation"))
        if "handoffs" in df.columns:
            extra.append(pl.col("handoffs").map_elements(classes.handoff_band, return_dtype=pl.String)
                         .alias("handoff_band"))
        return df.with_columns(extra) if extra else df

    # -- results directories -------------------------------------------------------------
    def results(self, what: str):
        """The results directories read as one (:func:`hsrtcp.study.load.read`), or
        :class:`Missing` saying that ``what`` needs them."""
        if not self.results_dirs:
            raise Missing(f"{what} of RESULTS (hsrtcp analyze output): no RESULTS directory given")
        if self._results is None:
            from hsrtcp.study import load

            self._results = load.read(self.results_dirs)
        return self._results

    def extra(self, table: str, what: str) -> pl.LazyFrame:
        """RESULTS' ``table`` that the study does not read (packets, mptcp, ...), every
        directory that has it stacked with a ``result`` column, as a lazy scan; :class:`Missing`
        names the table (and how to get it) when no directory has it."""
        stack = self.results(what).stack
        if not stack.has(table):
            how = " (hsrtcp analyze --packets writes it)" if table == "packets" else ""
            raise Missing(f"{table}.parquet of RESULTS: in no RESULTS directory given{how}")
        return stack.scan(table)

    # -- MPTCP instance tables -----------------------------------------------------------
    def mptcp(self, table: str) -> pl.DataFrame:
        """``mptcp_<table>.parquet`` of every MPTCP directory given, stacked with a ``result``
        column (schema checked: :class:`hsrtcp.results.ResultsDir`); :class:`Missing` names
        the table and how to make it when no directory has it."""
        name = f"mptcp_{table}"
        df = self.beside_mptcp(name)
        if df is None:
            given = "no RESULTS directory given" if not self.mptcp_dirs and not self.results_dirs else \
                "in no RESULTS directory given"
            raise Missing(f"{name}.parquet of RESULTS (hsrtcp mptcp RUNS -o DIR on a conjunction campaign: an "
                          f"MPTCP download and single-path flows on each carrier at once, docs/mptcp.md): {given}")
        return df

    def beside_mptcp(self, name: str) -> pl.DataFrame | None:
        """Table ``name`` of the MPTCP directories (the instance tables, or a context table such
        as ``radio`` kept beside them), stacked with a ``result`` column; None when none has it."""
        if name not in self._mptcp:
            from hsrtcp.results import ResultsDir

            frames = []
            for d in self.mptcp_dirs:
                rd = ResultsDir(d)
                if rd.has(name):
                    frames.append(rd.read(name).with_columns(pl.lit(d).alias("result")))
            self._mptcp[name] = pl.concat(frames, how="diagonal_relaxed") if frames else None
        return self._mptcp[name]
