"""The ``hsrtcp`` program as a user runs it: a fresh process, for tests of the whole command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: the demo captures shipped in the package (phone.pcap, server.pcap and their truth.json)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_hsrtcp(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m hsrtcp ARGS`` (paths allowed), its output as text."""
    return subprocess.run([sys.executable, "-m", "hsrtcp", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def analyze_example(out: Path) -> Path:
    """``hsrtcp analyze`` of the demo's phone and server captures into ``out``."""
    p = run_hsrtcp("analyze", "--client", EXAMPLES / "phone.pcap", "--server", EXAMPLES / "server.pcap", "-o", out, "-q")
    assert p.returncode == 0, p.stderr
    return out
