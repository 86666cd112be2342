"""What the command-line tests of the passive tools share: a capture's results directory and
`hsrtcp TOOL ...` run as a user runs it (its own process: exit code, stdout and stderr)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hsrtcp


def results_of(capture: Path, out: Path) -> Path:
    """``out`` holding the analysis of ``capture`` (the RESULTS a tool reads)."""
    hsrtcp.analyze_to([str(capture)], str(out))
    return out


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsrtcp", *map(str, args)], capture_output=True, text=True,
                          timeout=120)
