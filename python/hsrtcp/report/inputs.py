"""Read what `hsrtcp report` shows: one results directory (the ``-o`` of `hsrtcp analyze`) and,
optionally, a study directory (the ``-o`` of `hsrtcp study`).

The report draws from the tables only (Parquet in, HTML out), so it can be rebuilt without the
captures. Which tables must be there:

- ``flows``, ``events``, ``series``, ``rtt``, ``captures`` (docs/formats/): written by every
  `hsrtcp analyze`. A missing one, one without a column of the schema this hsrtcp writes
  (``hsrtcp._native.schemas()``, the same lists as docs/formats/), or one the results
  reader refuses (:mod:`hsrtcp.results`: a damaged file, a column of another type) is an
  input error naming the file: an older directory must be analyzed again.
- ``context``, ``handoffs``, ``suspensions``, ``labels`` (docs/formats/context.md): only when
  the analysis had a radio log or a bundle; used when present.

The report reads what it draws (issue 32: 1 M flows in under 1 GB): of ``flows``, only the
columns of :data:`FLOW_COLUMNS` for every flow (the flow table, the per-class CDFs, the model
fit, the connections, captures and MPTCP sections); every column only for the drilled-down
flows (:meth:`ResultsData.detail_rows`, a filter on ``flow_id`` pushed into the Parquet
scan). The large tables (series, events, rtt) stay lazy scans: the report reads the rows of
the flows it draws, not the whole table.

A corpus results directory (`hsrtcp analyze CORPUS`, docs/scale.md: one ``input=<id>``
partition per input) is read as one through the corpus reader (:class:`hsrtcp.results.Corpus`):
each partition checked as above, the tables stacked.
Its flow ids repeat across inputs, so in memory every row gets a new ``flow_id`` unique in
the corpus (its place in input order; links and the other tables follow), the file's own is
``input_flow_id`` next to ``input``; the rows' names (f1, ...) are the corpus's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.results import (Corpus, ResultsDir, Tables, declared, flow_names, no_nulls, optional_tables,
                            partitions)

CORE_TABLES = ("flows", "events", "series", "rtt", "captures")
#: the optional tables the report reads, and their columns it needs: without them the table
#: is ignored with a note (the report never reads coverage)
CONTEXT_COLUMNS = {
    "context": ("flow_id", "flow_class"),
    "handoffs": ("ts",),
    "suspensions": ("flow_id", "gap_start_ts", "gap_end_ts"),
    "labels": (),
}


#: flows columns read for every flow (the other columns only for the drilled-down flows):
#: names and links (results.flow_names), the flow table and its derived columns (data bytes,
#: endpoints, rate), the connections view's cells the report keeps, the MPTCP section
FLOW_COLUMNS = (
    "flow_id", "capture", "vantage", "data_dir", "client_addr", "client_port", "server_addr", "server_port",
    "first_ts", "last_ts", "duration_s", "c2s_payload_bytes", "s2c_payload_bytes", "goodput_bytes",
    "retransmissions", "timeouts", "spurious_timeouts", "rtt_mean", "p_d", "end_reason", "mptcp", "truncated",
    "client_flow_id", "server_flow_id", "capture_near", "p_a", "ack_burst_loss", "q", "spurious_timeouts_2v",
    "clock_offset_s",
)


def flow_columns() -> tuple[str, ...]:
    """:data:`FLOW_COLUMNS` and the model fit's inputs and measurement (models.fitting)."""
    from hsrtcp.models.fitting import COLUMNS, MEASURED

    return tuple(dict.fromkeys([*FLOW_COLUMNS, *COLUMNS.values(), MEASURED]))


@dataclass(kw_only=True)
class ResultsData(Tables):
    """The tables of one results directory. ``flows`` holds the columns of
    :func:`flow_columns` (every column when read with ``columns=None``); ``full`` scans every
    column of every flow, under the same ``flow_id`` (a corpus's renumbered ids)."""

    path: Path
    captures: pl.DataFrame
    rtt: pl.LazyFrame
    full: pl.LazyFrame | None = None

    def detail_rows(self, f: pl.DataFrame, ids) -> pl.DataFrame:
        """The rows of ``f`` (the report's flow frame: ``flows`` with derived columns) whose
        ``flow_id`` is in ``ids``, with every flows column: the columns not read for every
        flow are read for these rows only."""
        ids = list(ids)
        rows = f.filter(pl.col("flow_id").is_in(ids))
        if self.full is None:
            return rows
        rest = [c for c in self.full.collect_schema().names() if c not in rows.columns]
        if not rest:
            return rows
        more = self.full.filter(pl.col("flow_id").is_in(ids)).select("flow_id", *rest).collect()
        return rows.join(more, on="flow_id", how="left", maintain_order="left")


@dataclass
class StudyData:
    """The tables of a study directory and its manifest (docs/formats/study.md)."""

    path: Path
    manifest: dict
    tables: dict[str, pl.DataFrame]


_ALL = "all"


def load_results(path: str | Path, columns: tuple[str, ...] | None | str = _ALL) -> ResultsData:
    """Check and open the tables of results directory ``path`` through the one results
    reader (:mod:`hsrtcp.results`); input errors name the file and column. ``columns``: the
    flows columns read for every flow (default :func:`flow_columns`; None: every column)."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{root}: not a results directory (expected the -o directory of `hsrtcp analyze`)")
    if columns == _ALL:
        columns = flow_columns()
    parts = partitions(root)
    if parts != [str(root)]:
        return _load_corpus(root, [Path(p) for p in parts], columns)
    res = ResultsDir(root)
    _check_core(res)
    # (a single capture's table has no matched columns: the projection reads those present)
    flows = res.read("flows") if columns is None else res.read("flows", ["flow_id"], optional=columns)
    if flows.height == 0:
        raise InputError(f"{root / 'flows.parquet'}: no flows (no TCP connection in the analyzed captures): "
                         "nothing to report")
    no_nulls(flows, ["first_ts", "last_ts"], res.file("flows"))  # every flow has a first and a last packet
    data = ResultsData(
        path=root, flows=_by_flow_id(flows), captures=res.read("captures"),
        series=res.scan("series"), events=res.scan("events"), rtt=res.scan("rtt"),
        full=res.scan("flows") if columns is not None else None,
    )
    for name, frame in optional_tables(res, CONTEXT_COLUMNS, data.notes).items():
        setattr(data, name, frame)
    return data


def _by_flow_id(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` sorted by ``flow_id`` (as ``df.sort("flow_id")``), one column at a time: each
    column is released once gathered, so the table is not held twice."""
    ids = df.get_column("flow_id")
    if ids.is_sorted():
        return df
    order = ids.arg_sort()
    names = df.columns
    cols = {}
    for name in names:
        cols[name] = df.drop_in_place(name).gather(order)
    return pl.DataFrame([cols[n] for n in names])


def load_study(path: str | Path) -> StudyData:
    """Open a study directory: ``study.json`` and every ``<table>.parquet``."""
    root = Path(path)
    manifest_file = root / "study.json"
    if not root.is_dir() or not manifest_file.exists():
        raise InputError(f"{root}: not a study directory (expected the -o directory of `hsrtcp study` "
                         "with study.json)")
    try:
        manifest = json.loads(manifest_file.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{manifest_file}: unreadable study manifest: {exc}") from None
    version = manifest.get("study_schema_version")
    if version != 1:
        raise InputError(f"{manifest_file}: study_schema_version {version!r}; this report reads version 1 "
                         "(docs/formats/study.md): run `hsrtcp study` again")
    res = ResultsDir(root)
    tables = {p.stem: res.read(p.stem) for p in sorted(root.glob("*.parquet"))}
    return StudyData(path=root, manifest=manifest, tables=tables)


def _check_core(res: ResultsDir) -> None:
    """The report shows every column of the core tables: an older schema is refused."""
    expected = declared()
    for name in CORE_TABLES:
        res.require(name, list(expected.get(name, ())))


def _load_corpus(root: Path, parts: list[Path], columns: tuple[str, ...] | None) -> ResultsData:
    """The partitions of a corpus results directory as one :class:`ResultsData`, read through
    the corpus reader (:class:`hsrtcp.results.Corpus`; module docstring: flow ids renumbered
    in memory, the file's in ``input_flow_id``)."""
    empty = [p for p in parts if ResultsDir(p).read("flows", ["flow_id"]).height == 0]
    parts = [p for p in parts if p not in empty]
    if not parts:
        raise InputError(f"{root}: a corpus whose {len(empty)} input(s) hold no flows (no TCP connection): "
                         "nothing to report")
    corpus = Corpus(root, [str(p) for p in parts])
    for res in corpus.parts.values():
        _check_core(res)
    flows = corpus.read("flows") if columns is None else corpus.read("flows", ["flow_id"], optional=columns)
    order = pl.DataFrame({"input": list(corpus.parts), "_p": range(len(corpus.parts))})
    # each input's rows by flow_id, the inputs in order: a row's place is its new flow_id
    flows = flows.join(order, on="input", how="left", maintain_order="left").sort(["_p", "flow_id"]).drop("_p")
    for name, res in corpus.parts.items():
        no_nulls(flows.filter(pl.col("input") == name), ["first_ts", "last_ts"], res.file("flows"))
    ids = flows.get_column("flow_id")
    new_ids = pl.DataFrame({"input": flows["input"], "flow_id": ids,
                            "_new": pl.int_range(0, flows.height, eager=True).cast(ids.dtype)})

    def renumber(df, cols=("flow_id",)):
        """``df`` (with ``input``) with the corpus's ids in ``cols``, without ``input``."""
        lazy = isinstance(df, pl.LazyFrame)
        for c in cols:
            if c in (df.collect_schema().names() if lazy else df.columns):
                m = new_ids.rename({"flow_id": c, "_new": "_n"})
                df = (df.join(m.lazy() if lazy else m, on=["input", c], how="left", maintain_order="left")
                      .with_columns(pl.col("_n").alias(c)).drop("_n"))
        return df.drop("input")

    names = flow_names(flows).select("input", "flow_id", "short_id", "connection")
    named = (flows.join(names, on=["input", "flow_id"], how="left", maintain_order="left")
             .with_columns(pl.col("flow_id").alias("input_flow_id"), pl.col("input").alias("_input")))
    named = renumber(named, ("flow_id", "client_flow_id", "server_flow_id")).rename({"_input": "input"})
    out = ResultsData(
        path=root, flows=named,
        captures=corpus.read("captures").drop("input"),
        series=renumber(corpus.scan("series")), events=renumber(corpus.scan("events")),
        rtt=renumber(corpus.scan("rtt")),
        full=None if columns is None else renumber(corpus.scan("flows"), ("flow_id", "client_flow_id",
                                                                          "server_flow_id")),
    )
    frames: dict[str, list[pl.DataFrame]] = {}
    for name, res in corpus.parts.items():
        for table, frame in optional_tables(res, CONTEXT_COLUMNS, out.notes).items():
            frames.setdefault(table, []).append(renumber(frame.with_columns(input=pl.lit(name))))
    for table, parts_of in frames.items():
        setattr(out, table, pl.concat(parts_of, how="diagonal_relaxed"))
    if empty:
        out.notes.append(f"{len(empty)} input(s) without flows: {', '.join(p.name for p in empty[:8])}")
    out.notes.append(f"a corpus of {len(parts)} inputs: flow ids repeat across inputs, so the flow column numbers "
                     "the corpus's rows; each row's own flow_id is in 'flow_id in input'")
    return out
