"""Root and tool checks, namespaces, process cleanup and signal handling: the one layer the
lab (:mod:`hsrtcp.lab.emulate`) and the witness testbed (:mod:`hsrtcp.testing.netbed`) share.

The lab's promise: every namespace, veth and process it creates is gone after a run —
on success, on failure, on Ctrl-C / SIGTERM, and when the emulator crashes. Rattan names
its namespaces ``ns-left-<id>``, ``ns-rattan-<id>``, ``ns-right-<id>`` (a random 6-character
``RATTAN_ID``) and its veths ``vL<i>-{L,R}-<id>`` / ``vR<j>-{L,R}-<id>``; the veths live
inside those namespaces, so deleting the namespaces (after killing the processes still in
them) removes the veths too. When rattan panics it leaves ``ns-rattan-<id>`` behind
(research/emulation.md §4.4), which :func:`cleanup_rattan` removes.

The witness testbed names its namespaces ``hsb<6 hex>-{cli,rtr,srv}`` and removes them with
:func:`delete_netns` too. Only namespaces whose id this process learned are touched — never "all ns-rattan-*": other
users of the machine may be running their own.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from hsrtcp.errors import LabError

NETNS_DIR = Path("/var/run/netns")
RATTAN_PREFIXES = ("ns-left-", "ns-rattan-", "ns-right-")
_ID_RE = re.compile(r"^[A-Za-z0-9]{6}$")


def require_root(what: str = "the lab") -> None:
    """Stop with a clear :class:`LabError` unless running as root."""
    if os.geteuid() != 0:
        raise LabError(
            f"{what} needs root: it creates network namespaces and veth pairs and runs Rattan "
            "(raw sockets). Run it as root, e.g. `sudo $(which hsrtcp) ...`."
        )


def find_tool(name: str) -> str | None:
    """Path of an executable, also looking in ~/.cargo/bin (where `make rattan` installs)."""
    found = shutil.which(name)
    if found:
        return found
    cargo = Path.home() / ".cargo" / "bin" / name
    try:
        return str(cargo) if cargo.is_file() and os.access(cargo, os.X_OK) else None
    except OSError:  # e.g. another user's home
        return None


def require_tools(*names: str) -> dict[str, str]:
    """Paths of the named tools; a :class:`LabError` naming every missing one otherwise."""
    paths = {n: find_tool(n) for n in names}
    missing = [n for n, p in paths.items() if p is None]
    if missing:
        hints = {"rattan": "make rattan", "tcpdump": "make sysdeps", "ip": "apt-get install iproute2"}
        how = "; ".join(f"{n}: {hints.get(n, 'install it')}" for n in missing)
        raise LabError(f"missing tools for the lab: {', '.join(missing)} ({how})")
    return paths  # type: ignore[return-value]


def list_netns() -> set[str]:
    """Names of the named network namespaces (``ip netns list``)."""
    try:
        return {p.name for p in NETNS_DIR.iterdir()}
    except FileNotFoundError:
        return set()


def exec_argv(name: str, *cmd: str) -> list[str]:
    """The command line running ``cmd`` inside the named namespace (``ip netns exec``)."""
    return ["ip", "netns", "exec", name, *cmd]


def add_netns(name: str) -> None:
    """Create a named namespace; a :class:`LabError` with ip's message if that fails."""
    res = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if res.returncode != 0:
        raise LabError(f"cannot create namespace {name}: {res.stderr.strip()}")


def rattan_ids_in(names: set[str]) -> set[str]:
    """Rattan instance ids appearing in a set of namespace names."""
    ids = set()
    for n in names:
        for pre in RATTAN_PREFIXES:
            if n.startswith(pre) and _ID_RE.match(n[len(pre):]):
                ids.add(n[len(pre):])
    return ids


def netns_pids(name: str) -> list[int]:
    """PIDs of the processes living in a named namespace."""
    res = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(x) for x in res.stdout.split() if x.isdigit()]


def kill_pids(pids: list[int], grace_s: float = 2.0) -> list[int]:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL what is left. Returns the pids signalled."""
    pids = [p for p in pids if p != os.getpid() and _alive(p)]
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for p in pids:
        if _alive(p):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
    return pids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def delete_netns(name: str) -> bool:
    """Kill the processes inside a namespace, then delete it. True if it existed."""
    if name not in list_netns():
        return False
    kill_pids(netns_pids(name))
    res = subprocess.run(["ip", "netns", "del", name], capture_output=True, text=True)
    if res.returncode != 0 and name in list_netns():
        # The bind mount can outlive a busy namespace briefly; one retry after a pause.
        time.sleep(0.2)
        kill_pids(netns_pids(name), grace_s=0.5)
        res = subprocess.run(["ip", "netns", "del", name], capture_output=True, text=True)
        if res.returncode != 0 and name in list_netns():
            raise LabError(f"cannot delete namespace {name}: {res.stderr.strip()}")
    return True


def cleanup_rattan(rattan_id: str) -> list[str]:
    """Remove what a Rattan instance left behind: its namespaces and the processes in them.

    Returns the namespaces that had to be removed (empty after a clean exit).
    """
    if not _ID_RE.match(rattan_id):
        raise ValueError(f"not a rattan id: {rattan_id!r}")
    removed = []
    for pre in RATTAN_PREFIXES:
        if delete_netns(pre + rattan_id):
            removed.append(pre + rattan_id)
    return removed


def pidfile_cleanup(pid_dir: Path, marker: str) -> list[int]:
    """Kill processes recorded in ``pid_dir/*.pid`` whose command line contains ``marker``.

    The marker (the run directory) guards against killing an unrelated process that reused
    a recorded PID.
    """
    victims = []
    for f in sorted(Path(pid_dir).glob("*.pid")):
        try:
            pid = int(f.read_text().split()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if marker in cmdline:
            victims.append(pid)
    return kill_pids(victims)


def pids_mentioning(marker: str) -> list[int]:
    """The processes (other than this one) whose command line contains ``marker``."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(d.name))
    return pids


def kill_by_cmdline(marker: str) -> list[int]:
    """Kill every process whose command line contains ``marker`` (a run directory path, unique
    to one run), e.g. a Rattan left running by a harness that was killed hard."""
    return kill_pids(pids_mentioning(marker))


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM/SIGHUP arrives, so ``finally`` blocks run."""


@contextlib.contextmanager
def signals_raise():
    """Turn SIGTERM and SIGHUP into :class:`Interrupted` (SIGINT already raises
    ``KeyboardInterrupt``) for the duration of the block, so cleanup code always runs."""

    def handler(signum, frame):  # noqa: ARG001
        raise Interrupted(f"signal {signal.Signals(signum).name}")

    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            old[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: leave signals alone
            pass
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def stop_process(proc: subprocess.Popen, grace_s: float = 3.0) -> int | None:
    """Stop a child started with ``start_new_session=True``: SIGTERM its whole process group,
    then SIGKILL after ``grace_s``. Returns its exit code."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    else:
        # The leader is gone but members of its group may remain (e.g. tcpdump).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode


def sysctl_set(values: dict[str, object]) -> dict[str, str]:
    """Write sysctls of the *current* network namespace via /proc/sys; return read-backs.

    Only ``net.*`` keys are accepted (they are per namespace; anything else would change
    the whole machine).
    """
    out = {}
    for key, value in values.items():
        if not re.fullmatch(r"net\.[A-Za-z0-9_.\-]+", key):
            raise LabError(f"sysctl {key!r} refused: only per-namespace net.* keys may be set by the lab")
        path = Path("/proc/sys") / key.replace(".", "/")
        try:
            path.write_text(str(value))
            out[key] = path.read_text().strip()
        except OSError as exc:
            raise LabError(f"cannot set sysctl {key}={value}: {exc.strerror}") from exc
    return out


def sysctl_get(keys: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for key in keys:
        try:
            out[key] = (Path("/proc/sys") / key.replace(".", "/")).read_text().strip()
        except OSError:
            out[key] = None
    return out
