"""Read what `hsrtcp report` shows: one results directory (the ``-o`` of `hsrtcp analyze`) and,
optionally, a study directory (the ``-o`` of `hsrtcp study`).

The report draws from the tables only (Parquet in, HTML out), so it can be rebuilt without the
captures. Which tables must be there:

- ``flows``, ``events``, ``series``, ``rtt``, ``captures`` (docs/formats/): written by every
  `hsrtcp analyze`. A missing one, or one without a column of the schema this hsrtcp writes
  (``hsrtcp._native.schemas()``, the same lists as docs/formats/), is an input error naming
  the file: such a directory comes from an older hsrtcp and must be analyzed again.
- ``context``, ``handoffs``, ``suspensions``, ``labels`` (docs/formats/context.md): only when
  the analysis had a radio log or a bundle; used when present.

The large tables (events, rtt) stay lazy scans: the report reads the rows of the flows it
draws, not the whole table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from hsrtcp.errors import InputError

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


def _expected_columns() -> dict[str, list[str]]:
    from hsrtcp._native import schemas

    return {name: [c[0] for c in cols] for name, cols in schemas().items()}


def _parquet_columns(path: Path) -> list[str]:
    """Column names from the file's footer (no data read); an input error if not Parquet."""
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path).names
    except Exception as exc:  # pyarrow raises several types for bad files
        raise InputError(f"{path}: cannot read as Parquet: {exc}") from None


def _read(path: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except Exception as exc:
        raise InputError(f"{path}: cannot read as Parquet: {exc}") from None


def load_results(path: str | Path) -> ResultsData:
    """Check and open the tables of results directory ``path`` (input errors name the file)."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{root}: not a results directory (expected the -o directory of `hsrtcp analyze`)")
    expected = _expected_columns()
    for name in CORE_TABLES:
        file = root / f"{name}.parquet"
        if not file.exists():
            raise InputError(f"{file}: missing table '{name}' (every `hsrtcp analyze` writes it; "
                             "analyze the captures again with this hsrtcp)")
        have = set(_parquet_columns(file))
        lacking = [c for c in expected.get(name, []) if c not in have]
        if lacking:
            shown = ", ".join(lacking[:8]) + (f" and {len(lacking) - 8} more" if len(lacking) > 8 else "")
            raise InputError(f"{file}: written by an older hsrtcp: lacks column(s) {shown} of the "
                             f"current '{name}' schema (docs/formats/{name}.md); analyze the captures again")
    flows = _read(root / "flows.parquet")
    if flows.height == 0:
        raise InputError(f"{root / 'flows.parquet'}: no flows (no TCP connection in the analyzed captures): "
                         "nothing to report")
    data = ResultsData(
        path=root, flows=flows.sort("flow_id"), captures=_read(root / "captures.parquet"),
        series=pl.scan_parquet(root / "series.parquet"), events=pl.scan_parquet(root / "events.parquet"),
        rtt=pl.scan_parquet(root / "rtt.parquet"),
    )
    for name in CONTEXT_TABLES:
        file = root / f"{name}.parquet"
        if not file.exists():
            continue
        df = _read(file)
        lacking = [c for c in CONTEXT_COLUMNS[name] if c not in df.columns]
        if lacking:
            data.notes.append(f"{file.name} ignored: lacks column(s) {', '.join(lacking)} (older schema)")
            continue
        setattr(data, name, df)
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
    tables = {p.stem: _read(p) for p in sorted(root.glob("*.parquet"))}
    return StudyData(path=root, manifest=manifest, tables=tables)
