"""Schema versions of the tables hsrtcp writes and the Parquet metadata that carries them.

:mod:`hsrtcp.results` checks every table a consumer opens against these; `hsrtcp query`,
which reads the files through DuckDB, checks the version in each file's metadata here too,
without loading polars (this module imports nothing but the native module).
"""

from __future__ import annotations

from hsrtcp.errors import InputError

#: Parquet key-value metadata keys: the table a file holds and its schema version
SCHEMA_KEY = "hsrtcp.schema"
VERSION_KEY = "hsrtcp.schema_version"

#: docs/formats page of each table (where it differs from ``<table>.md``)
DOCS: dict[str, str] = {
    "mptcp_subflows": "mptcp.md", "mptcp_series": "mptcp.md", "pair_stats": "matched.md",
    "truth_events": "truth.md", "truth_capacity": "truth.md",
    **{f"mptcp_{t}": "mptcp-metrics.md" for t in ("instances", "paths", "kt", "rates")},
}


def _versions() -> dict[str, int]:
    try:
        from hsrtcp import _native
    except ImportError:  # pragma: no cover - without a build only the Python tables are known
        _native = None
    return {
        # the engine's tables: the versions its Parquet writer puts into their files
        **(_native.schema_versions() if _native is not None else {}),
        # the tables Python writes (hsrtcp.context; hsrtcp.mptcp.metrics.SCHEMA_VERSION)
        "radio": 1, "context": 1, "handoffs": 1, "suspensions": 1, "labels": 1, "coverage": 1,
        "mptcp_instances": 1, "mptcp_paths": 1, "mptcp_kt": 1, "mptcp_rates": 1,
        "truth_events": 1, "truth_capacity": 1,  # hsrtcp.lab.truth
    }


#: Schema version of every table hsrtcp writes: the version in the title of its
#: docs/formats page. Adding columns keeps a version; removing, renaming or retyping one
#: raises it (and the reader must learn to upgrade or refuse the older one).
VERSIONS: dict[str, int] = _versions()


def doc(table: str) -> str:
    return f"docs/formats/{DOCS.get(table, table + '.md')}"


def file_version(path: str, table: str, meta: dict[str, str]) -> int | None:
    """The schema version in a file's metadata ``meta`` (None when it does not say); refuses
    another table's file, and a version newer than this hsrtcp reads."""
    name = meta.get(SCHEMA_KEY)
    if name is not None and name != table:
        raise InputError(f"{path}: holds the {name!r} table ({SCHEMA_KEY} in its metadata), not {table!r}")
    raw = meta.get(VERSION_KEY)
    if raw is None:
        return None
    try:
        v = int(raw)
    except ValueError:
        raise InputError(f"{path}: schema version {raw!r} in its metadata is not a number") from None
    current = VERSIONS.get(table)
    if current is not None and v > current:
        raise InputError(f"{path}: {table} schema version {v} is newer than version {current} that this "
                         f"hsrtcp reads ({doc(table)}); read it with a newer hsrtcp")
    return v
