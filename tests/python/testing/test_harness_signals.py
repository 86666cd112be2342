"""The test session itself: what its child processes inherit."""

from __future__ import annotations

import subprocess
import sys


def test_children_see_sigint_as_at_a_terminal():
    # The SIGINT cases (testing/test_witness_netbed.py, lab/test_cleanup.py, scale/test_stop.py,
    # foundation/test_hardening.py) stand for Ctrl-C and need the child's default action.
    # pytest started in the background inherits SIGINT ignored and passed that on: the netbed
    # case failed with TimeoutExpired. tests/python/conftest.py restores the default.
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
