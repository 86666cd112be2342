"""The committed gallery, made once per session as docs/seeds.md is: the study tables of
tests/data/study, the committed captures analyzed with --packets and the committed MPTCP
instance tables (hsrtcp.figures.committed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hsrtcp.cli import main
from hsrtcp.figures.committed import analyze_committed, committed_tables

ROOT = Path(__file__).resolve().parents[3]
STUDY = ROOT / "tests" / "data" / "study"


@pytest.fixture(scope="session")
def committed(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """(gallery directory, {results name: results directory})."""
    base = tmp_path_factory.mktemp("committed")
    dirs = analyze_committed(base / "results", ROOT)
    out = base / "g"
    tables = committed_tables(ROOT)  # read as committed (seed 004's MPTCP instances)
    assert main(["figures", str(STUDY), *map(str, dirs), *map(str, tables), "-o", str(out), "-q"]) == 0
    return out, {d.name: d for d in dirs}
