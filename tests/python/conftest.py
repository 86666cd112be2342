"""Shared test fixtures and markers.

Tests marked ``netns`` need root (network namespaces); they skip with a message otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "python/hsrtcp/examples"


def pytest_configure(config):
    # Tests that stop a child with SIGINT stand for Ctrl-C at a terminal, where SIGINT has its
    # default action. A shell starting pytest in the background (`make test &`, nohup, a
    # script) makes it ignored, and an ignored signal stays ignored across exec: the child
    # Python never raises KeyboardInterrupt and those tests wait out their timeouts.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root for network namespaces (run `make test` as root)")
    for item in items:
        if "netns" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def bed_ok():
    """Skip unless the namespace testbed can run here (root, ip, tcpdump, tc, nft)."""
    from hsrtcp.testing.netbed import missing_requirements

    why = missing_requirements()
    if why:
        pytest.skip(why)


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


@pytest.fixture
def small_disk(tmp_path):
    """``mount(options)``: a tmpfs with these options at tmp_path/disk, unmounted at the end
    (root only): the full-disk tests of scale/ and context/."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
        mounted.append(mnt)
        return mnt

    yield mount
    for m in mounted:
        subprocess.run(["umount", str(m)], check=True)
