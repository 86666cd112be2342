"""Driver for the Rattan emulator (pinned 0.1.1): validate configs, run, visualize, clean up.

Rattan 0.1.1 facts this module is built on (research/emulation.md §3–4, re-checked here):

- ``rattan run -c config.toml`` in ``Isolated`` mode creates ``ns-left-<id>``,
  ``ns-rattan-<id>``, ``ns-right-<id>``, runs ``[commands] left`` / ``right`` in the outer two
  (env ``RATTAN_ID``, ``RATTAN_BASE`` = the other side's address) and exits when both exit.
- With ``RUST_LOG=info`` it logs ``create namespace: /var/run/netns/ns-left-<id>`` before
  anything else, which is how the driver learns the id even when it crashes early.
- A zero bandwidth anywhere in a bandwidth trace (also any Mahimahi trace, whose gaps
  become zero) makes it panic with exit code 101 and leak ``ns-rattan-<id>``. So configs are
  validated first (:func:`validate_config` rejects 0 bps and Mahimahi traces) and a crash
  is still cleaned up by id.
- The trace clock of the ``*Replay`` cells starts at the first unicast packet.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from hsrtcp import atomic
from hsrtcp.errors import InputError, LabError
from hsrtcp.lab import netns

RATTAN_VERSION = "0.1.1"
CRASH_EXIT_CODE = 101
_NS_RE = re.compile(r"create namespace: \S*/ns-(?:left|rattan|right)-([A-Za-z0-9]{6})")
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(bps|Bps)\s*$", re.IGNORECASE)
_LOG_LINE_RE = re.compile(rb"^(\x1b\[[0-9;]*m)*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z(\x1b\[[0-9;]*m)*\s+(\x1b\[[0-9;]*m)*\s*(TRACE|DEBUG|INFO|WARN|ERROR)\b")
_TIME_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s|m|h)?\s*$")


def find_rattan() -> str:
    path = netns.find_tool("rattan")
    if path is None:
        raise LabError("rattan is not installed: run `make rattan` "
                       f"(cargo install rattan --locked --version {RATTAN_VERSION})")
    return path


def rattan_version(binary: str | None = None) -> str | None:
    try:
        out = subprocess.run([binary or find_rattan(), "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired, LabError):
        return None
    m = re.search(r"rattan\s+(\S+)", out.stdout)
    return m.group(1) if m else None


def parse_rate(text: str) -> float:
    """A Rattan/netem-trace bandwidth string in bit/s: ``"20Mbps"`` → 2e7, ``"1bps"`` → 1.

    ``Bps`` (capital B) is bytes per second, as in the ``human-bandwidth`` crate.
    """
    m = _RATE_RE.match(str(text))
    if not m:
        raise ValueError(f"not a bandwidth: {text!r} (expected e.g. '20Mbps')")
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    unit = 8 if m.group(3) == "Bps" else 1
    return float(m.group(1)) * mult * unit


def parse_duration(text: str) -> float:
    """``"25ms"`` → 0.025, ``"5s"`` → 5.0 (seconds)."""
    m = _TIME_RE.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (expected e.g. '25ms')")
    mult = {None: 1, "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return float(m.group(1)) * mult


# --------------------------------------------------------------------------- configs


def load_config(path: str | Path) -> dict:
    # (on first use: the scenario package loads its compiler, which the agents never need)
    from hsrtcp.lab.scenario.config import read_toml

    return read_toml(path, "rattan config", InputError)


def validate_config(cfg: dict, source: Path) -> None:
    """Reject what would crash or mislead Rattan 0.1.1, naming the file and the cell.

    Checks: Isolated mode (the lab needs its own right namespace); every ``Bw`` bandwidth and
    every bandwidth in a ``BwReplay`` netem-trace (recursively, all segments) is > 0 bps;
    ``BwReplay`` traces are netem-trace JSON/TOML (Mahimahi traces always turn their idle
    milliseconds into 0-bandwidth segments, bug stack-rs/rattan#194); trace files exist.
    """
    source = Path(source)
    env = cfg.get("env", {})
    if env.get("mode") != "Isolated":
        raise InputError(f"{source}: [env] mode must be \"Isolated\" for the lab (got {env.get('mode')!r})")
    cells = cfg.get("cells")
    if not isinstance(cells, dict) or not cells:
        raise InputError(f"{source}: no [cells] section")
    if not isinstance(cfg.get("links"), dict):
        raise InputError(f"{source}: no [links] section")
    for name, cell in cells.items():
        kind = cell.get("type")
        where = f"{source}: [cells.{name}] ({kind})"
        if kind == "Bw":
            for part in str(cell.get("bandwidth", "")).split():
                _check_rate(part, where)
        elif kind in ("BwReplay", "DelayReplay", "LossReplay"):
            trace = cell.get("trace")
            if not trace:
                raise InputError(f"{where}: no trace file")
            tpath = Path(trace) if Path(trace).is_absolute() else source.parent / trace
            if not tpath.is_file():
                raise InputError(f"{where}: trace file {tpath} not found")
            if kind == "BwReplay":
                if tpath.suffix not in (".json", ".toml"):
                    raise InputError(
                        f"{where}: trace {tpath.name} is not netem-trace JSON/TOML; Rattan 0.1.1 turns "
                        "Mahimahi traces into 0-bandwidth segments and crashes (stack-rs/rattan#194). "
                        "Convert it with a floor of 1bps.")
                _check_bw_trace(_load_trace(tpath), f"{where}: {tpath}")


def _check_rate(text: str, where: str) -> None:
    try:
        bps = parse_rate(text)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from exc
    if bps <= 0:
        raise InputError(f"{where}: bandwidth {text!r} is zero; Rattan 0.1.1 crashes on 0 bps "
                         "(stack-rs/rattan#194). Use \"1bps\" for an outage that holds packets.")


def _load_trace(path: Path) -> object:
    try:
        if path.suffix == ".json":
            return json.loads(path.read_text())
        return tomllib.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot parse trace: {exc}") from exc


def _check_bw_trace(node: object, where: str) -> None:
    # netem-trace serialises bandwidths under "bw" (Static), "bw_min"/"bw_max"/"mean"
    # (Normalized, Sawtooth) and as lists of strings in TraceBwConfig patterns.
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("bw", "bw_min", "bw_max", "mean", "bottom", "top") and isinstance(v, str):
                _check_rate(v, where)
            elif k == "pattern" and isinstance(v, list):
                for item in v:
                    if isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
                        for rate in item[1]:
                            _check_rate(rate, where)  # TraceBwConfig [[step, [rates…]]]
                    else:
                        _check_bw_trace(item, where)
            else:
                _check_bw_trace(v, where)
    elif isinstance(node, list):
        for v in node:
            _check_bw_trace(v, where)


def absolutize(cfg: dict, base: Path) -> dict:
    """Copy of ``cfg`` with relative trace/log paths made absolute (relative to ``base``),
    so the config can be written anywhere and rattan run from any directory."""
    out = json.loads(json.dumps(cfg))
    for cell in out.get("cells", {}).values():
        for key in ("trace", "path"):
            if key in cell and not Path(cell[key]).is_absolute():
                cell[key] = str((base / cell[key]).resolve())
    return out


def left_veth_count(cfg: dict) -> int:
    return int(cfg.get("env", {}).get("left_veth_count", 1))


def loss_seeds(cfg: dict) -> dict[str, int]:
    """Seeds of the random cells (``LossReplay`` seed, ``Loss`` is fixed at 42 in 0.1.1)."""
    out = {}
    for name, cell in cfg.get("cells", {}).items():
        if cell.get("type") == "LossReplay":
            out[name] = int(cell.get("seed", 42))
        elif cell.get("type") == "Loss":
            out[name] = 42
    return out


def visualize(config: str | Path, duration_s: float, binary: str | None = None) -> str:
    """The merged per-segment timeline of all replay cells as CSV, without running anything
    (``rattan run --visualize-trace``). Columns: ``start_time_secs,duration_secs,<cell>_<param>…``."""
    cmd = [binary or find_rattan(), "run", "-c", str(config), "--visualize-trace", f"{duration_s:g}s",
           "--visualize-trace-mode", "csv"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                         cwd=str(Path(config).resolve().parent))
    if res.returncode != 0:
        raise LabError(f"rattan --visualize-trace failed (exit {res.returncode}): {_tail(res.stderr)}")
    return res.stdout


def _tail(text: str, n: int = 8) -> str:
    lines = [ln for ln in text.splitlines() if "IFLA_INET6_CONF" not in ln]
    return "\n".join(lines[-n:])


# --------------------------------------------------------------------------- running


@dataclass
class RattanResult:
    rattan_id: str | None
    returncode: int | None
    crashed: bool
    timed_out: bool
    interrupted: bool
    leaked: list[str] = field(default_factory=list)
    log_path: Path | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    #: Rattan's own threads put ahead of other work (see :class:`Rattan`): {"policy",
    #: "priority", "threads": how many were set, "error": why a thread could not be set}
    realtime: dict | None = None


#: SCHED_FIFO priority of Rattan's threads: any real-time priority preempts every normal task;
#: a low one leaves the kernel's own real-time threads ahead of it.
REALTIME_PRIORITY = 10


class Rattan:
    """One ``rattan run`` with guaranteed cleanup.

    Usage::

        with Rattan(config_path, log_path) as r:
            result = r.wait(timeout_s)

    ``__exit__`` (also on exceptions, Ctrl-C, SIGTERM via :func:`netns.signals_raise`) stops
    rattan's whole process group, kills processes left in its namespaces and deletes the
    namespaces. Extra process cleanups can be registered with :meth:`on_cleanup`.

    Rattan's threads run SCHED_FIFO (priority :data:`REALTIME_PRIORITY`), set on each thread
    as it appears, with SCHED_RESET_ON_FORK so the agents it starts stay normal tasks. Under
    load a normal-policy Rattan waited up to 74 ms in 50 ms for a core (its session is its own
    autogroup, so nice -10 did not help: 52 ms); meanwhile nothing was delivered and its raw
    sockets' 208-KiB buffers overflowed, loss the path did not have (docs/lab.md "A quiet lab").
    """

    def __init__(self, config: str | Path, log_path: str | Path, extra_args: list[str] | None = None,
                 stdout=None, id_file: Path | None = None):
        self.config = Path(config)
        self.log_path = Path(log_path)
        self.extra_args = extra_args or []
        self.stdout = stdout
        self.id_file = id_file  # the agents also write the id here, a second source
        self.proc: subprocess.Popen | None = None
        self.rattan_id: str | None = None
        self._log_fh = None
        self._cleanups: list = []
        self.result: RattanResult | None = None
        self.started_at = 0.0
        self._scan_pos = 0
        self._panicked = False
        self._pump: threading.Thread | None = None
        self._rt_thread: threading.Thread | None = None
        self.realtime = {"policy": "SCHED_FIFO", "priority": REALTIME_PRIORITY, "threads": 0, "error": None}

    def on_cleanup(self, fn) -> None:
        self._cleanups.append(fn)

    def __enter__(self) -> Rattan:
        binary = find_rattan()
        env = dict(os.environ, RUST_LOG="info", RUST_BACKTRACE="0", NO_COLOR="1")
        self._log_fh = open(self.log_path, "wb")
        self.started_at = time.time()
        self.proc = subprocess.Popen(
            [binary, "run", "-c", str(self.config), *self.extra_args],
            stdout=subprocess.PIPE if self.stdout is not None else self._log_fh,
            stderr=self._log_fh, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,  # our own process group: Ctrl-C reaches us, we stop it
        )
        if self.stdout is not None:
            # Rattan logs to stdout too; with --left-stdout the left command's output is
            # mixed in. Log lines go to the log file, everything else to the caller.
            self._pump = threading.Thread(target=self._split_stdout, daemon=True)
            self._pump.start()
        self._rt_thread = threading.Thread(target=self._keep_realtime, daemon=True)
        self._rt_thread.start()
        return self

    def _keep_realtime(self) -> None:
        """Put each of Rattan's threads on SCHED_FIFO as it appears (its cells start threads
        during the first ~0.3 s; polled every 10 ms until it exits)."""
        assert self.proc is not None
        pid, done = self.proc.pid, set()
        policy = os.SCHED_FIFO | os.SCHED_RESET_ON_FORK
        param = os.sched_param(REALTIME_PRIORITY)
        while self.proc.poll() is None:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                return
            for tid in tids:
                if tid in done:
                    continue
                done.add(tid)
                try:
                    os.sched_setscheduler(int(tid), policy, param)
                    self.realtime["threads"] += 1
                except ProcessLookupError:
                    pass  # the thread ended in between
                except OSError as exc:  # e.g. no CAP_SYS_NICE: the run goes on, the outcome says so
                    self.realtime["error"] = self.realtime["error"] or f"thread {tid}: {exc.strerror}"
            time.sleep(0.01)

    def _split_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        out = getattr(self.stdout, "buffer", self.stdout)
        for line in self.proc.stdout:
            if _LOG_LINE_RE.match(line):
                self._log_fh.write(line)
                self._log_fh.flush()
            elif out is not None:
                try:
                    out.write(line)
                    out.flush()
                except (BrokenPipeError, ValueError):
                    out = None  # the reader went away (e.g. `| head`); keep draining

    def discover_id(self) -> str | None:
        if self.rattan_id:
            return self.rattan_id
        if self.id_file is not None and self.id_file.is_file():
            rid = self.id_file.read_text().strip()
            if re.fullmatch(r"[A-Za-z0-9]{6}", rid):
                self.rattan_id = rid
                return rid
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return None
        m = _NS_RE.search(re.sub(r"\x1b\[[0-9;]*m", "", text))
        if m:
            self.rattan_id = m.group(1)
        return self.rattan_id

    def panicked(self) -> bool:
        """True once rattan's log shows a Rust panic. A panic in a cell task does not end the
        process at once (it exits 101 only when both commands have exited, and they may
        wait forever on a dead path), so the driver watches for it."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(self._scan_pos)
                chunk = fh.read()
        except OSError:
            return False
        # keep a small overlap so a marker split across reads is still seen
        self._scan_pos += max(0, len(chunk) - 32)
        self._panicked = self._panicked or b"panicked at" in chunk
        return self._panicked

    def wait(self, timeout_s: float) -> RattanResult:
        assert self.proc is not None
        timed_out = False
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None:
            self.discover_id()
            if self.panicked():
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.05)
        self.discover_id()
        crashed = self.panicked() or self.proc.returncode == CRASH_EXIT_CODE
        self.result = RattanResult(self.rattan_id, self.proc.returncode, crashed,
                                   timed_out, False, log_path=self.log_path, started_at=self.started_at)
        return self.result

    def __exit__(self, exc_type, exc, tb) -> None:
        self.cleanup(interrupted=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))

    def cleanup(self, interrupted: bool = False) -> RattanResult:
        """Stop everything this run created. Safe to call more than once."""
        errors = []
        if self.proc is not None:
            self.discover_id()
            # SIGTERM first: rattan then removes its own namespaces and veths.
            netns.stop_process(self.proc, grace_s=5.0)
            self.discover_id()
        for fn in self._cleanups:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - keep cleaning, report at the end
                errors.append(exc)
        leaked = netns.cleanup_rattan(self.rattan_id) if self.rattan_id else []
        if self._pump is not None:
            self._pump.join(timeout=5)
        if self._rt_thread is not None:
            self._rt_thread.join(timeout=5)
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
        rc = self.proc.returncode if self.proc is not None else None
        if self.result is None:
            self.result = RattanResult(self.rattan_id, rc, rc == CRASH_EXIT_CODE or self._panicked, False, interrupted,
                                       log_path=self.log_path, started_at=self.started_at)
        self.result.leaked = sorted(set(self.result.leaked) | set(leaked))
        self.result.interrupted = self.result.interrupted or interrupted
        self.result.returncode = rc
        self.result.ended_at = time.time()
        self.result.realtime = dict(self.realtime)
        if errors:
            raise LabError(f"cleanup errors: {errors}")
        return self.result

    def log_tail(self, n: int = 12) -> str:
        try:
            return _tail(re.sub(r"\x1b\[[0-9;]*m", "", self.log_path.read_text(errors="replace")), n)
        except OSError:
            return ""


def write_config(cfg: dict, path: Path, left: list[str], right: list[str]) -> Path:
    """Write ``cfg`` plus a ``[commands]`` section (left/right argv lists) to ``path``."""
    out = dict(cfg)
    out["commands"] = {"left": list(left), "right": list(right)}
    atomic.write_text(path, tomli_w.dumps(out))
    return path

