"""Every table is declared once, in the core's registry (crates/hsrtcp-core/src/table/
registry.tsv, issue 37), and reaches Python through ``hsrtcp._native.schemas()``. These tests
fail when a table is added to the registry but not to the places that must know it: its
docs/formats page, the readers' lists of tables, and the version check."""

from __future__ import annotations

from pathlib import Path

import pytest

from hsrtcp import runner
from hsrtcp.versions import VERSIONS, doc

native = pytest.importorskip("hsrtcp._native")

ROOT = Path(__file__).resolve().parents[3]
REGISTRY = ROOT / "crates" / "hsrtcp-core" / "src" / "table" / "registry.tsv"
# The tables no analysis returns by default, and who writes them: they reach a Dataset's extra.
ON_REQUEST = {"packets": "analyze --packets", "pair_stats": "a two-vantage run"}


def registry_tables() -> list[str]:
    """The `[table NAME ...]` lines of registry.tsv, read as text: the witness that the
    native module lists what the registry declares (and not a build of an older one)."""
    return [line.split()[1] for line in REGISTRY.read_text().splitlines() if line.startswith("[table ")]


def registry_versions() -> dict[str, int]:
    """{table: version} from registry.tsv's `[version CONST N]` and `[table NAME CONST ...]` lines."""
    lines = [line.strip("[]").split() for line in REGISTRY.read_text().splitlines() if line.startswith("[")]
    consts = {w[1]: int(w[2]) for w in lines if w[0] == "version"}
    return {w[1]: consts[w[2]] for w in lines if w[0] == "table"}


def test_the_native_module_lists_the_registry_tables_in_order():
    assert list(native.schemas()) == registry_tables()
    assert list(native.schema_versions()) == registry_tables()


@pytest.mark.parametrize("table", registry_tables())
def test_every_column_is_on_the_format_page(table):
    page = (ROOT / doc(table)).read_text()
    missing = [name for name, _ty, _doc in native.schemas()[table]
               if f"| {name} |" not in page and f"| `{name}` |" not in page]
    assert missing == [], f"columns of {table} not in {doc(table)}: {missing}"


@pytest.mark.parametrize("table", registry_tables())
def test_every_table_is_one_the_readers_know(table):
    read = set(runner.TABLES) | set(runner.MPTCP_TABLES) | set(ON_REQUEST)
    assert table in read, f"{table}: add it to hsrtcp.runner's TABLES or MPTCP_TABLES, or to ON_REQUEST here"
    # the version check of results and `hsrtcp query` (its names of tables) come from the
    # registry: the version its text declares, which the format page's title says too
    assert VERSIONS[table] == registry_versions()[table]
    assert f"(version {VERSIONS[table]})" in (ROOT / doc(table)).read_text().splitlines()[0]
