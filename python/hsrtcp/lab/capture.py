"""tcpdump capture processes for the lab and the witness testbed.

A :class:`Tcpdump` writes one interface's packets to a pcap file, optionally inside a named
network namespace. :meth:`Tcpdump.wait_ready` returns once tcpdump has printed
"listening on": from then on the kernel buffers every packet, so traffic may start.
:meth:`Tcpdump.stop` ends it with SIGINT, on which tcpdump flushes its buffer and prints its
counters; :func:`parse_stats` reads them ("captured", "dropped by kernel") from that text
or from a saved log. A capture that lost packets in the kernel is not a witness.

Buffering: by default tcpdump hands packets over when a ring block retires (TPACKET_V3,
1 s timeout), so stopping within a second of the last packet may lose the capture's tail.
``immediate=True`` (``--immediate-mode``) avoids that; ``packet_buffered=True`` (``-U``)
writes every packet to the file at once, so a capture stopped hard still holds it.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from pathlib import Path

from hsrtcp.errors import LabError
from hsrtcp.lab import netns

_STATS = (("captured", re.compile(r"(\d+) packets? captured")),
          ("dropped_by_kernel", re.compile(r"(\d+) packets? dropped by kernel")))


def parse_stats(text: str) -> dict[str, int | None]:
    """tcpdump's final counters from its stderr: ``captured`` and ``dropped_by_kernel``
    (None when absent, e.g. tcpdump was killed before printing them)."""
    out: dict[str, int | None] = {}
    for key, pat in _STATS:
        m = pat.search(text)
        out[key] = int(m.group(1)) if m else None
    return out


class Tcpdump:
    """One tcpdump process writing ``iface``'s packets to ``path``; see the module docstring.

    ``ns`` runs it inside that named namespace (``ip netns exec``). ``log`` also writes its
    stderr to that file, line by line. The process starts in the constructor; call
    :meth:`wait_ready` before starting traffic.
    """

    def __init__(self, iface: str, path: str | Path, *, ns: str | None = None, snaplen: int = 128,
                 buffer_kib: int | None = None, immediate: bool = False, packet_buffered: bool = False,
                 linktype: str | None = None, nano: bool = False, bpf: str | None = None,
                 log: str | Path | None = None):
        self.iface, self.path, self.ns = iface, Path(path), ns
        # -Z root: tcpdump must not drop to its own user, which could not write the file.
        cmd = ["tcpdump", "-i", iface, "-n", "-s", str(snaplen), "-Z", "root", "-w", str(path)]
        if buffer_kib:
            cmd += ["-B", str(buffer_kib)]
        if immediate:
            cmd.append("--immediate-mode")
        if packet_buffered:
            cmd.append("-U")
        if linktype:
            cmd += ["-y", linktype]
        if nano:
            cmd.append("--time-stamp-precision=nano")
        if bpf:
            cmd.append(bpf)
        self.argv = netns.exec_argv(ns, *cmd) if ns else cmd
        self.stderr: list[str] = []
        self._ready = threading.Event()
        # set only by tcpdump's "listening on": the ready event also fires when its stderr
        # closes, which can come before the failed process can be reaped (poll() still None)
        self._listening = False
        self._log = open(log, "w", buffering=1) if log else None
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        try:
            for line in self.proc.stderr:
                self.stderr.append(line.rstrip())
                if self._log:
                    self._log.write(line)
                if "listening on" in line:
                    self._listening = True
                    self._ready.set()
        finally:
            self._ready.set()
            if self._log:
                self._log.close()

    def wait_ready(self, timeout_s: float = 10.0) -> "Tcpdump":
        """Block until tcpdump captures; a :class:`LabError` (and no process) otherwise."""
        if not self._ready.wait(timeout_s) or not self._listening or self.proc.poll() is not None:
            self.kill()
            where = f"{self.ns}/{self.iface}" if self.ns else self.iface
            raise LabError(f"tcpdump on {where} did not start: {' '.join(self.stderr)}")
        return self

    def stop(self, timeout_s: float = 15.0) -> dict[str, int | None]:
        """SIGINT, wait for the file to be complete, return :func:`parse_stats`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise LabError(f"tcpdump writing {self.path} did not stop on SIGINT") from None
        self._reader.join(5)
        return parse_stats("\n".join(self.stderr))

    def kill(self) -> None:
        """SIGKILL if still running (cleanup after an error); idempotent."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
