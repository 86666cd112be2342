"""One corpus run per results directory: :class:`ResultsLock`.

The lock is ``RESULTS/.hsrtcp.lock``, an advisory ``flock`` holding the holder's pid: the
same file and protocol as :class:`hsrtcp.output.OutputSet` of a one-input run (branch
wt-cli), so a corpus run and a plain ``hsrtcp analyze -o RESULTS`` exclude each other too.
The kernel drops the lock when the process ends (even on SIGKILL), so a stale lock file
never blocks; a second run is refused at once with the holder's pid rather than made to
wait (a corpus run takes hours; waiting silently would look like a hang). On a shared file
system (NFS v4, CephFS, Lustre with flock) the lock covers runs started on other machines.
"""

from __future__ import annotations

import os

from hsrtcp.errors import HsrtcpError

LOCK = ".hsrtcp.lock"


class LockedError(HsrtcpError, RuntimeError):
    """Another run holds the results directory."""


class ResultsLock:
    def __init__(self, results: str) -> None:
        import fcntl

        self.path = os.path.join(results, LOCK)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise LockedError(f"{results}: another hsrtcp run (pid {holder}) is writing to this results "
                              f"directory; wait for it to end or choose another one") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            try:  # the file left behind names no process once this one ends
                os.pwrite(self.fd, b" " * 20 + b"\n", 0)
            except OSError:
                pass
            os.close(self.fd)  # drops the flock; the file stays (unlinking it would race)
            self.fd = None

    def __enter__(self) -> ResultsLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
