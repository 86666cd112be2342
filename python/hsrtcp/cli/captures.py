"""Captures given again beside a results directory (`hsrtcp apps`, `hsrtcp congestion`): each
matched to the name under which the analysis read it."""

from __future__ import annotations

import os
from pathlib import Path


def match_captures(results: Path, names: set[str], captures) -> dict[str, Path]:
    """``{name in the captures table: path given}`` for the ``captures`` given, matched by
    their path or file name to the ``names`` the analysis of ``results`` read; an
    InputError names a capture that is missing or that the analysis did not read."""
    from hsrtcp.errors import InputError

    paths = {}
    for cap in captures:
        if not cap.is_file():
            raise InputError(f"{cap}: no such capture file")
        match = [n for n in names if n == str(cap) or os.path.basename(n) == cap.name]
        if not match:
            raise InputError(f"{cap}: not a capture of {results} (it read {', '.join(sorted(names)) or 'no capture'})")
        paths.update({n: cap for n in match})
    return paths
