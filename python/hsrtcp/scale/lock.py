"""One corpus run per results directory: :class:`ResultsLock`.

The lock is ``RESULTS/.hsrtcp.lock``, an advisory ``flock`` holding the holder's pid: the
same file and protocol (:func:`hsrtcp.output.lock_file`) as :class:`hsrtcp.output.OutputSet`
of a one-input run, so a corpus run and a plain ``hsrtcp analyze -o RESULTS`` exclude each other too.
The kernel drops the lock when the process ends (even on SIGKILL), so a stale lock file
never blocks; a second run is refused at once with the holder's pid rather than made to
wait (a corpus run takes hours; waiting silently would look like a hang). On a shared file
system (NFS v4, CephFS, Lustre with flock) the lock covers runs started on other machines.
"""

from __future__ import annotations

import os

from hsrtcp.errors import HsrtcpError
from hsrtcp.output import LOCK, LockHeld, claim, lock_file, unlock_file


class LockedError(HsrtcpError, RuntimeError):
    """Another run holds the results directory."""


class ResultsLock:
    def __init__(self, results: str) -> None:
        self.path = os.path.join(results, LOCK)
        try:
            fd = lock_file(self.path)
        except LockHeld as held:
            raise LockedError(f"{results}: another hsrtcp run (pid {held.holder}) is writing to this results "
                              f"directory; wait for it to end or choose another one") from None
        try:
            claim(fd)
        except OSError:
            os.close(fd)
            raise
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            unlock_file(self.fd)
            self.fd = None

    def __enter__(self) -> ResultsLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
