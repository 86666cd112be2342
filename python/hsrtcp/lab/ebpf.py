"""Congestion controls written in eBPF (``ebpf/*.bpf.c``): build, register, unregister.

The kernel's BPF struct_ops lets a program implement ``tcp_congestion_ops``
(``bpf_tcp_ca``). Once registered, the algorithm appears in
``/proc/sys/net/ipv4/tcp_available_congestion_control`` of every network namespace (the list
of congestion controls is global) and a socket selects it with ``TCP_CONGESTION`` like reno or
bbr. The lab uses this for ``hsrbbr`` (docs/hsrbbr.md).

- Build: ``make ebpf`` (vmlinux.h from ``bpftool btf dump`` of the running kernel, then
  ``clang -target bpf``) writes ``ebpf/build/<name>.bpf.o``; :func:`object_path` builds it
  the same way when the Makefile was not run.
- Register: ``bpftool struct_ops register OBJ`` in the initial namespace (root). The verifier
  checks the program first: a faulty algorithm can stall its own connections, never the
  kernel.
- Lifetime: :func:`loaded` is a context manager every lab entry point wraps around a run that
  names an eBPF algorithm. It registers the algorithm if it is not there yet and unregisters
  it on the way out — only when the lab registered it and no other live lab process still
  uses it (a user file per process under :data:`STATE_DIR`, under a lock), so concurrent runs
  and an algorithm registered by hand are left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from hsrtcp import atomic
from hsrtcp.errors import LabError

#: Algorithms built from ebpf/<name>.bpf.c; the struct_ops map and the algorithm share the name.
#: Ablation variants (docs/hsrbbr.md): name -> (source, the define that removes one change).
VARIANTS = {
    "hsrbbr_nomodel": ("hsrbbr", "HSRBBR_NO_MODEL"),
    "hsrbbr_noprobe": ("hsrbbr", "HSRBBR_NO_REPROBE"),
    "hsrbbr_noundo": ("hsrbbr", "HSRBBR_NO_UNDO"),
    "hsrbbr_noloss": ("hsrbbr", "HSRBBR_NO_LOSSKEEP"),
}
ALGORITHMS = ("hsrbbr", *VARIANTS)
STATE_DIR = Path("/run/hsrtcp-ebpf")
BTF = Path("/sys/kernel/btf/vmlinux")
_AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


#: the sources the package carries (a wheel has no ebpf/): hsrtcp/lab/bpf, in the source tree a
#: link to ebpf/ so there is one copy
PACKAGED = Path(__file__).resolve().parent / "bpf"


def source_dir() -> Path:
    """Where the eBPF sources are: ``HSRTCP_EBPF_DIR``, else ``ebpf/`` of the source tree this
    package runs from, else the copy the installed package carries (:data:`PACKAGED`)."""
    env = os.environ.get("HSRTCP_EBPF_DIR")
    if env:
        return Path(env)
    tree = Path(__file__).resolve().parents[3] / "ebpf"
    return tree if tree.is_dir() else PACKAGED


def build_dir() -> Path:
    """Where objects are built: ``build/`` next to the sources, except for the packaged copy
    (site-packages is no place to write), then a cache per kernel: the object is compiled
    against the running kernel's BTF."""
    src = source_dir()
    if src.resolve() != PACKAGED.resolve() or (src / "build").is_dir():
        return src / "build"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "hsrtcp" / "ebpf" / os.uname().release


def is_ebpf(cc: str | None) -> bool:
    return cc in ALGORITHMS


def available() -> list[str]:
    try:
        return _AVAILABLE.read_text().split()
    except OSError:
        return []


def missing_toolchain() -> str | None:
    """Why an eBPF algorithm cannot be built/loaded here, or None when it can."""
    tools = [t for t in ("clang", "bpftool") if shutil.which(t) is None]
    if tools:
        return f"missing {', '.join(tools)} (make sysdeps installs clang, libbpf-dev, bpftool)"
    if not Path("/usr/include/bpf/bpf_helpers.h").is_file():
        return "missing libbpf headers (apt-get install libbpf-dev)"
    if not BTF.is_file():
        return f"kernel without BTF ({BTF} missing): struct_ops congestion control needs it"
    return None


def _run(argv: list[str], what: str) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{what}: {exc}") from exc
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise LabError(f"{what} failed (exit {r.returncode}):\n{tail}")
    return r.stdout


def build(name: str, out_dir: Path | None = None) -> Path:
    """Compile ``ebpf/<name>.bpf.c`` against the running kernel's BTF; return the object.

    The same steps as ``make ebpf``; rebuilt only when the source is newer than the object."""
    base, define = VARIANTS.get(name, (name, None))
    src = source_dir() / f"{base}.bpf.c"
    if not src.is_file():
        raise LabError(f"{src}: eBPF source of {name!r} not found (run from the hsrtcp source tree)")
    why = missing_toolchain()
    if why:
        raise LabError(f"cannot build {name}: {why}")
    out_dir = out_dir or build_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    obj = out_dir / f"{name}.bpf.o"
    if obj.is_file() and obj.stat().st_mtime >= src.stat().st_mtime:
        return obj
    vmlinux = out_dir / "vmlinux.h"
    if not vmlinux.is_file():
        text = _run(["bpftool", "btf", "dump", "file", str(BTF), "format", "c"], "bpftool btf dump")
        atomic.write_text(vmlinux, text)
    atomic.write_file(obj, lambda tmp: _run(
        ["clang", "-O2", "-g", "-Wall", "-target", "bpf", "-D__TARGET_ARCH_x86", f"-I{out_dir}",
         *([f"-D{define}"] if define else []), "-c", str(src), "-o", tmp], f"clang {src.name}"))
    return obj


def object_path(name: str) -> Path:
    obj = build_dir() / f"{name}.bpf.o"
    src = source_dir() / f"{VARIANTS.get(name, (name,))[0]}.bpf.c"
    if obj.is_file() and (not src.is_file() or obj.stat().st_mtime >= src.stat().st_mtime):
        return obj
    return build(name)


def _require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("loading an eBPF congestion control needs root (bpftool struct_ops register)")


def register(name: str) -> None:
    """Register ``name`` with bpftool (no-op when the kernel already offers it)."""
    if name in available():
        return
    _require_root()
    obj = object_path(name)
    _run(["bpftool", "struct_ops", "register", str(obj)], f"bpftool struct_ops register {obj}")
    if name not in available():
        raise LabError(f"bpftool registered {obj} but {name!r} is not in {_AVAILABLE}")


def unregister(name: str) -> None:
    """Unregister ``name`` (its struct_ops map). Sockets that use it keep it until they close."""
    if name not in available():
        return
    _require_root()
    try:
        _run(["bpftool", "struct_ops", "unregister", "name", name], f"bpftool struct_ops unregister {name}")
    except LabError:
        # bpftool also tries the maps of earlier registrations that the kernel is still freeing
        # (sockets of a finished run hold them: "Operation now in progress") and then exits
        # 255 although the live one was unregistered; what counts is that the name is gone
        if name in available():
            raise


@contextlib.contextmanager
def _locked():
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _live_users(name: str) -> list[Path]:
    d = STATE_DIR / name / "users"
    live = []
    for p in d.glob("*") if d.is_dir() else []:
        try:
            os.kill(int(p.name), 0)
            live.append(p)
        except (ValueError, ProcessLookupError):
            p.unlink(missing_ok=True)  # a user that died without releasing
        except PermissionError:
            live.append(p)
    return live


_HELD: dict[str, int] = {}  # nesting depth per algorithm in this process


def acquire(name: str) -> None:
    """Make ``name`` available for this process (register it if needed, count us as a user)."""
    if _HELD.get(name):
        _HELD[name] += 1
        return
    with _locked():
        d = STATE_DIR / name
        (d / "users").mkdir(parents=True, exist_ok=True)
        _live_users(name)
        if name not in available():
            register(name)
            (d / "owned").write_text("registered by the hsrtcp lab\n")
        (d / "users" / str(os.getpid())).write_text("")
    _HELD[name] = 1


def release(name: str) -> None:
    """Stop using ``name``; unregister it when the lab registered it and nobody else uses it."""
    _HELD[name] = _HELD.get(name, 1) - 1
    if _HELD[name] > 0:
        return
    _HELD.pop(name, None)
    with _locked():
        d = STATE_DIR / name
        (d / "users" / str(os.getpid())).unlink(missing_ok=True)
        if not _live_users(name) and (d / "owned").exists():
            unregister(name)
            (d / "owned").unlink(missing_ok=True)


@contextlib.contextmanager
def loaded(names):
    """Context manager: the eBPF algorithms among ``names`` are registered inside it."""
    wanted = sorted({n for n in names if is_ebpf(n)})
    done: list[str] = []
    try:
        for n in wanted:
            acquire(n)
            done.append(n)
        yield wanted
    finally:
        for n in reversed(done):
            release(n)


def names_in(text: str) -> list[str]:
    """eBPF algorithm names mentioned as words in a command line (e.g. ``--cc hsrbbr``)."""
    import re

    return [n for n in ALGORITHMS if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]
