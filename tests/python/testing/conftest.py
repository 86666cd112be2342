"""Shared set-up for the tests of hsrtcp.testing (the witnesses themselves)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # witness_helpers
try:  # the package may not be installed (maturin develop) when only the witnesses are tested
    import hsrtcp  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(ROOT / "python"))


@pytest.fixture
def netns_ok():
    """Skip unless the namespace testbed can run here (root, ip, tcpdump, tc, nft)."""
    from hsrtcp.testing.netbed import missing_requirements

    why = missing_requirements()
    if why:
        pytest.skip(why)
