"""Lab tests: tests marked `netns` are skipped with the reason when not root or a tool is missing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # labtools (import-mode=importlib)

from hsrtcp.lab import netns


def _netns_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth, raw sockets)"
    missing = [t for t in ("rattan", "tcpdump", "ip") if netns.find_tool(t) is None]
    if missing:
        return f"missing tools: {', '.join(missing)} (make rattan / make sysdeps)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _netns_skip_reason()
    if reason is None:
        return
    for item in items:
        if "netns" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))
