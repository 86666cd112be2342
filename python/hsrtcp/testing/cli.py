"""The ``hsrtcp`` program as a user runs it: a fresh process, for tests of the whole command."""

from __future__ import annotations

import os
import shutil
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


def run_campaign(campaign: Path, out: Path, **env: str) -> list[Path]:
    """``hsrtcp campaign CAMPAIGN -o OUT`` through Rattan (``make rattan`` puts it in
    ~/.cargo/bin; the test is skipped without it), ``env`` added to the environment; the
    bundles it wrote (directories with a manifest.json), sorted."""
    import pytest

    cargo = Path.home() / ".cargo" / "bin"
    if shutil.which("rattan") is None and not (cargo / "rattan").exists():
        pytest.skip("rattan is not installed (make rattan)")
    env = dict(os.environ, PATH=f"{cargo}:{os.environ.get('PATH', '')}", **env)
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "campaign", str(campaign), "-o", str(out)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    from hsrtcp.bundle import run_bundles

    return run_bundles(out)
