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

The large tables (events, rtt) stay lazy scans: the report reads the rows of the flows it
draws, not the whole table.

A corpus results directory (`hsrtcp analyze CORPUS`, docs/scale.md: one ``input=<id>``
partition per input) is read as one: each partition checked as above, the tables stacked.
Its flow ids repeat across inputs, so in memory every row gets a new ``flow_id`` unique in
the corpus (its place in input order; links and the other tables follow), the file's own is
``input_flow_id`` next to ``input``; the rows' names (f1, ...) are the corpus's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.results import ResultsDir, declared, no_nulls, partitions, with_names

CORE_TABLES = ("flows", "events", "series", "rtt", "captures")
CONTEXT_TABLES = ("context", "handoffs", "suspensions", "labels")
#: columns read from the optional tables; without them the table is ignored with a note
CONTEXT_COLUMNS = {
    "context": ("flow_id", "flow_class"),
    "handoffs": ("ts",),
    "suspensions": ("flow_id", "gap_start_ts", "gap_end_ts"),
    "labels": (),
}


@dataclass
class ResultsData:
    """The tables of one results directory."""

    path: Path
    flows: pl.DataFrame
    captures: pl.DataFrame
    series: pl.LazyFrame
    events: pl.LazyFrame
    rtt: pl.LazyFrame
    context: pl.DataFrame | None = None
    handoffs: pl.DataFrame | None = None
    suspensions: pl.DataFrame | None = None
    labels: pl.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class StudyData:
    """The tables of a study directory and its manifest (docs/formats/study.md)."""

    path: Path
    manifest: dict
    tables: dict[str, pl.DataFrame]


def load_results(path: str | Path) -> ResultsData:
    """Check and open the tables of results directory ``path`` through the one results
    reader (:mod:`hsrtcp.results`); input errors name the file and column."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{root}: not a results directory (expected the -o directory of `hsrtcp analyze`)")
    parts = partitions(root)
    if parts != [str(root)]:
        return _load_corpus(root, [Path(p) for p in parts])
    res = ResultsDir(root)
    expected = declared()
    for name in CORE_TABLES:
        # the report shows every column of the core tables: an older schema is refused
        res.require(name, list(expected.get(name, ())))
    flows = res.read("flows")
    if flows.height == 0:
        raise InputError(f"{root / 'flows.parquet'}: no flows (no TCP connection in the analyzed captures): "
                         "nothing to report")
    no_nulls(flows, ["first_ts", "last_ts"], res.file("flows"))  # every flow has a first and a last packet
    data = ResultsData(
        path=root, flows=flows.sort("flow_id"), captures=res.read("captures"),
        series=res.scan("series"), events=res.scan("events"), rtt=res.scan("rtt"),
    )
    for name in CONTEXT_TABLES:
        if not res.has(name):
            continue
        table = res.open(name)
        lacking = [c for c in CONTEXT_COLUMNS[name] if c not in table.file_schema]
        if lacking:
            data.notes.append(f"{name}.parquet ignored: lacks column(s) {', '.join(lacking)} (older schema)")
            continue
        setattr(data, name, res.read(name))
    return data


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


def _load_corpus(root: Path, parts: list[Path]) -> ResultsData:
    """The partitions of a corpus results directory as one :class:`ResultsData` (module
    docstring: flow ids renumbered in memory, the file's in ``input_flow_id``)."""
    empty = [p for p in parts if ResultsDir(p).read("flows", ["flow_id"]).height == 0]
    parts = [p for p in parts if p not in empty]
    if not parts:
        raise InputError(f"{root}: a corpus whose {len(empty)} input(s) hold no flows (no TCP connection): "
                         "nothing to report")
    loaded = [load_results(p) for p in parts]
    inputs = [p.name[len("input="):] for p in parts]
    flows, offset, maps = [], 0, []
    for data, name in zip(loaded, inputs):
        f = data.flows.with_columns(input=pl.lit(name))
        ids = f.get_column("flow_id")
        m = pl.DataFrame({"flow_id": ids, "_new": pl.int_range(offset, offset + f.height, eager=True).cast(ids.dtype)})
        offset += f.height
        maps.append(m)
        flows.append((f, m))
    named = with_names(pl.concat([f for f, _ in flows], how="diagonal_relaxed"))

    def renumber(df, m, cols=("flow_id",)):
        for c in cols:
            if c in df.collect_schema().names():
                mm = m.rename({"flow_id": c, "_new": "_n"}).lazy() if isinstance(df, pl.LazyFrame) else \
                    m.rename({"flow_id": c, "_new": "_n"})
                df = df.join(mm, on=c, how="left").with_columns(pl.col("_n").alias(c)).drop("_n")
        return df

    stacked = []
    for (f, m), name in zip(flows, inputs):
        f = f.join(named.filter(pl.col("input") == name).select("flow_id", "short_id", "connection"), on="flow_id",
                   how="left").with_columns(pl.col("flow_id").alias("input_flow_id"))
        stacked.append(renumber(f, m, ("flow_id", "client_flow_id", "server_flow_id")))
    out = ResultsData(
        path=root, flows=pl.concat(stacked, how="diagonal_relaxed").sort("flow_id"),
        captures=pl.concat([d.captures for d in loaded], how="diagonal_relaxed"),
        series=pl.concat([renumber(d.series, m) for d, m in zip(loaded, maps)], how="diagonal_relaxed"),
        events=pl.concat([renumber(d.events, m) for d, m in zip(loaded, maps)], how="diagonal_relaxed"),
        rtt=pl.concat([renumber(d.rtt, m) for d, m in zip(loaded, maps)], how="diagonal_relaxed"),
        notes=[n for d in loaded for n in d.notes],
    )
    for name in CONTEXT_TABLES:
        frames = [renumber(getattr(d, name), m) for d, m in zip(loaded, maps) if getattr(d, name) is not None]
        if frames:
            setattr(out, name, pl.concat(frames, how="diagonal_relaxed"))
    if empty:
        out.notes.append(f"{len(empty)} input(s) without flows: {', '.join(p.name for p in empty[:8])}")
    out.notes.append(f"a corpus of {len(parts)} inputs: flow ids repeat across inputs, so the flow column numbers "
                     "the corpus's rows; each row's own flow_id is in 'flow_id in input'")
    return out
