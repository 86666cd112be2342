"""Every column the engine declares is documented in docs/formats (the docs are generated
from the declared schemas; this catches a column added without regenerating them)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("table", ["flows", "events", "rtt", "series"])
def test_every_declared_column_is_documented(table):
    native = pytest.importorskip("hsrtcp._native")
    doc = (ROOT / "docs" / "formats" / f"{table}.md").read_text()
    missing = [name for name, _ty, _doc in native.schemas()[table] if f"| {name} |" not in doc]
    assert missing == [], f"columns of {table} not in docs/formats/{table}.md: {missing}"
