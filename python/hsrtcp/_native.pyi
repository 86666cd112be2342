# Types of the compiled core, hsrtcp._native (crates/hsrtcp-py/src/lib.rs, pair.rs).
# tests/python/packaging/test_typing.py checks every name, parameter and default against the
# built module, so this file cannot drift from the binding.
import os
from collections.abc import Callable
from typing import Any, TypeAlias, final


_Path: TypeAlias = str | os.PathLike[str]
#: Called with the bytes of the file read so far; a KeyboardInterrupt it raises stops the run.
_Progress: TypeAlias = Callable[[int], object] | None
#: One table row: {column: value}, null as None.
_Row: TypeAlias = dict[str, Any]
#: {"captures": [row], "flows": [rows] with keep_flows, else None}
_FileResult: TypeAlias = dict[str, list[_Row] | None]

__version__: str

def analyze_capture(
    path: _Path,
    name: str,
    vantage: str | None = None,
    id_base: int = 0,
    progress: _Progress = None,
    packets: bool = False,
) -> dict[str, bytes]:
    """Analyze one capture; returns {table: Arrow IPC stream bytes} (flows, events, rtt, series,
    captures, mptcp, mptcp_subflows, mptcp_series; packets when ``packets``). Bad input is
    reported in the captures row."""

def analyze_pair(
    client: _Path,
    server: _Path,
    client_name: str,
    server_name: str,
    id_base: int = 0,
    window_s: float = 30.0,
    use_ip_id: bool = False,
) -> dict[str, Any]:
    """Match a client-side and a server-side capture: {"matched", "events", "series": Arrow IPC
    bytes, "stats": dict of run facts}. Raises ValueError unless window_s > 0."""

def schemas() -> dict[str, list[tuple[str, str, str]]]:
    """The declared schema of every table: {table: [(column, type, doc), ...]}."""

def schema_versions() -> dict[str, int]:
    """The schema version of every table of schemas(): {table: version}; the Parquet writer
    puts it in every file (key-value metadata hsrtcp.schema, hsrtcp.schema_version)."""

def matched_schemas() -> dict[str, list[tuple[str, str, str]]]:
    """The columns a two-vantage run adds to flows (matched rows) and series:
    {table: [(column, type, doc), ...]}."""

def keep_freed_memory() -> None:
    """Let the C allocator keep freed memory for the rest of the process (the CLI only)."""

@final
class FileJob:
    """A capture file of a run: its path, the name the tables show, its vantage (None: inferred;
    a pair's files are its client and server whatever it says), the base of its flow ids and its
    number in the run (the files hold the rows in this order)."""

    def __init__(self, path: _Path, name: str, vantage: str | None = None, id_base: int = 0, order: int = 0) -> None: ...

@final
class PairJob:
    """A pair of two files of a run (client, server): its number ``slot`` (its rows come after
    the files'), the ``id_base`` of its matched rows and the matcher's settings (the run's: no
    defaults). Raises ValueError unless window_s > 0 and state_budget_mb >= 1."""

    def __init__(
        self,
        client: FileJob,
        server: FileJob,
        slot: int,
        id_base: int,
        window_s: float,
        use_ip_id: bool,
        state_budget_mb: int,
    ) -> None: ...

class _TableOut:
    # not in the module: the constructor, close and abort both output classes have
    def __init__(self, dir: _Path, prefix: str = ".hsrtcp-new.", packets: bool = False) -> None: ...
    def close(self) -> list[tuple[str, str]]:
        """Finish the files; returns [(table, staged path)]. A write the system refused raises
        OSError(errno, strerror, staged path); any other failure OSError("PATH: reason")."""
    def abort(self) -> None:
        """Give up: the files are removed. A no-op after close()."""

@final
class ParquetOut(_TableOut):
    """An output directory analyses write their tables into as Parquet while they run."""

    def analyze(self, file: FileJob, progress: _Progress = None, keep_flows: bool = False) -> _FileResult: ...
    def start_close(self) -> None:
        """No more analyses: the writer starts finishing the files; close() waits for them."""

@final
class PairOut(_TableOut):
    """A two-vantage run straight into Parquet: each file's tables as ParquetOut, the matched
    rows written by finish_pairs."""

    def analyze(
        self, file: FileJob, progress: _Progress = None, keep_flows: bool = False, hold_packets: bool = False
    ) -> _FileResult: ...
    def analyze_pair_files(
        self, job: PairJob, progress: tuple[_Progress, _Progress], keep_flows: bool = False
    ) -> tuple[_FileResult, _FileResult]:
        """Both files of ``job`` analyzed at once and matched (``progress``: client's, server's)."""
    def match_pair(self, job: PairJob) -> None: ...
    def finish_pairs(self, first_order: int, keep_flows: bool = False) -> tuple[list[_Row] | None, list[str]]: ...
