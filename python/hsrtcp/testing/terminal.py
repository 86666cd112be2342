"""Run a command with its stderr on a pseudo-terminal, as a user at a terminal would see it
(progress bars are drawn only there)."""

from __future__ import annotations

import os
import pty
import subprocess


def run_on_a_terminal(argv: list[str], timeout: float) -> tuple[int, str]:
    """``argv`` with stderr on a pty (stdout and stdin not): its exit code and all it wrote
    on stderr, decoded with replacement."""
    leader, follower = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    chunks = []
    try:
        while True:
            try:
                b = os.read(leader, 65536)
            except OSError:  # the pty's other side closed (Linux: EIO)
                break
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(leader)
    return p.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")
