"""Shared test fixtures and markers.

Tests marked ``netns`` need root (network namespaces); they skip with a message otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "python/hsrtcp/examples"


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root for network namespaces (run `make test` as root)")
    for item in items:
        if "netns" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(autouse=True)
def _cwd_is_restored():
    """A test that changes the working directory and leaves it changed breaks later tests that
    name repository files relatively (CI failed that way once): restore it and fail the test."""
    before = os.getcwd()
    yield
    after = os.getcwd()
    if after != before:
        os.chdir(before)
        pytest.fail(f"the test left the working directory changed: {before} -> {after} (use monkeypatch.chdir)")
