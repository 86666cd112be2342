"""The lab's in-namespace side: what Rattan's ``[commands] left`` and ``right`` run.

``python -m hsrtcp.lab.agent {left|right} RUN_DIR`` reads ``RUN_DIR/plan.json`` (written by
:mod:`hsrtcp.lab.emulate`) and, inside its namespace:

- right (server side, ``ns-right-<id>``): sets sysctls, MPTCP limits, starts tcpdump on
  ``vR1-R-<id>`` → ``capture/server.pcap``, starts the measurement server (or the plan's
  right command), writes ``server.ready``, and waits until the left side writes ``left.done``.
- left (phone side, ``ns-left-<id>``): sets sysctls, policy routing for paths 2..P (Rattan
  routes only through veth 1), MPTCP limits and ``subflow`` endpoints, starts one tcpdump per
  path on ``vL<p>-L-<id>`` → ``capture/phone_p<p>.pcap``, waits for ``server.ready``, runs the
  workload (the measure client or a user command), lingers briefly so the last packets are
  captured, stops tcpdump and writes ``left.done`` (with the workload's exit code).

No packet crosses the emulator before the workload starts (tcpdump is listening, IPv6 is
off so no router/neighbour chatter), so the first packet in the captures is the workload's
first SYN — the instant Rattan's trace clock starts (t0).

Both agents also record the namespace's kernel counters at the end (``nstat -asz --json``,
absolute values: the namespaces are new for every run, so they are the run's own counts; the
MPTcpExt* counters witness MPTCP joins and reinjections) in ``kernel/nstat-<side>.json``.

Both agents record their PIDs and their children's in ``RUN_DIR/pids/`` and watch their
parent: if Rattan dies, they stop their children and exit, so nothing is left running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from hsrtcp import atomic
from hsrtcp.errors import LabError
from hsrtcp.lab import netns
from hsrtcp.lab.capture import Tcpdump

TCP_SYSCTLS = (
    "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_frto", "net.ipv4.tcp_sack", "net.ipv4.tcp_dsack",
    "net.ipv4.tcp_timestamps", "net.ipv4.tcp_early_retrans", "net.ipv4.tcp_recovery",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_ecn", "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_slow_start_after_idle", "net.mptcp.enabled", "net.mptcp.scheduler",
    "net.mptcp.path_manager",
)
# Quiet namespaces: no IPv6 chatter crosses the emulator (it would not start the trace
# clock but would muddle the captures), and metrics of earlier connections are not reused.
BASE_SYSCTLS = {
    "net.ipv6.conf.all.disable_ipv6": 1,
    "net.ipv6.conf.default.disable_ipv6": 1,
    "net.ipv4.tcp_no_metrics_save": 1,
}


class Agent:
    def __init__(self, role: str, run_dir: Path):
        self.role = role
        self.run_dir = run_dir
        self.plan = json.loads((run_dir / "plan.json").read_text())
        self.rid = os.environ.get("RATTAN_ID", "")
        self.base = os.environ.get("RATTAN_BASE", "")
        self.children: list[tuple[str, subprocess.Popen]] = []
        self.dumps: list[Tcpdump] = []  # stopped after the children, so they see everything
        self.abort = threading.Event()
        self.pid_dir = run_dir / "pids"
        self.pid_dir.mkdir(exist_ok=True)
        (self.pid_dir / f"{role}-agent.pid").write_text(str(os.getpid()))
        self.log_fh = open(run_dir / f"agent-{role}.log", "a", buffering=1)
        self.parent = os.getppid()
        threading.Thread(target=self._watch_parent, daemon=True).start()

    def log(self, msg: str) -> None:
        self.log_fh.write(f"{time.time():.6f} {msg}\n")

    def _watch_parent(self) -> None:
        while not self.abort.is_set():
            if os.getppid() != self.parent:
                self.log("parent (rattan) died: stopping")
                self.abort.set()
                return
            time.sleep(0.2)

    # -- helpers
    def sh(self, *argv: str) -> None:
        res = subprocess.run(list(argv), capture_output=True, text=True)
        self.log(f"$ {' '.join(argv)} -> {res.returncode} {res.stderr.strip()}")
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {res.stderr.strip()}")

    def spawn(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, **kw)
        (self.pid_dir / f"{self.role}-{name}.pid").write_text(str(proc.pid))
        self.children.append((name, proc))
        return proc

    def tcpdump(self, iface: str, out: Path) -> None:
        # -U: every packet is in the file at once (nothing lost if stopped hard); stderr
        # (tcpdump's counters) goes to <capture>.tcpdump.log for the bundle.
        dump = Tcpdump(iface, out, snaplen=int(self.plan.get("snaplen", 128)), packet_buffered=True,
                       log=out.with_suffix(".tcpdump.log"))
        (self.pid_dir / f"{self.role}-tcpdump-{iface}.pid").write_text(str(dump.pid))
        self.dumps.append(dump)
        dump.wait_ready()

    def apply_sysctls(self) -> None:
        wanted = dict(BASE_SYSCTLS)
        wanted.update(self.plan.get("sysctls", {}))
        applied = netns.sysctl_set(wanted)
        snapshot = netns.sysctl_get(list(TCP_SYSCTLS))
        snapshot.update(applied)
        (self.run_dir / f"sysctls-{self.role}.json").write_text(json.dumps(snapshot, indent=1, sort_keys=True))

    def apply_route_knobs(self) -> None:
        """The plan's per-route TCP knobs (``rto_min_ms``, ``quickack``) on every route of the
        namespace's main table and of the per-path tables; the routes before and after go to
        ``routes-<role>.json`` (kept in the bundle as the witness of what was set)."""
        knobs = self.plan.get("route") or {}
        if not knobs:
            return
        tables = ["main"] + [str(100 + p) for p in range(2, int(self.plan.get("paths", 1)) + 1)]
        record = {"knobs": knobs, "before": {}, "after": {}}
        for table in tables:
            record["before"][table] = _routes(table)
            for r in record["before"][table]:
                self.sh("ip", "route", "change", *route_spec(r), "table", table, *route_knobs(knobs))
            record["after"][table] = _routes(table)
        (self.run_dir / f"routes-{self.role}.json").write_text(json.dumps(record, indent=1))

    def stop_children(self) -> None:
        for name, proc in reversed(self.children):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            self.log(f"{name} exited {proc.returncode}")
        for dump in reversed(self.dumps):
            try:
                stats = dump.stop(timeout_s=5)  # waits until its counters are in the log
            except LabError as exc:
                stats = str(exc)
            self.log(f"tcpdump on {dump.iface} exited {dump.proc.returncode}: {stats}")

    def mptcp_options(self) -> dict:
        """``plan["mptcp"]``: true, or a dict of knobs (docs/mptcp.md §3): ``endpoint_flags``
        (the phone's endpoints of paths 2..P; default ``["subflow"]``), ``subflows`` and
        ``add_addr_accepted`` (``ip mptcp limits``, both sides; default 8 and 8)."""
        opts = self.plan.get("mptcp")
        return opts if isinstance(opts, dict) else {}

    def mptcp_limits(self) -> None:
        opts = self.mptcp_options()
        self.sh("ip", "mptcp", "limits", "set", "subflow", str(int(opts.get("subflows", 8))),
                "add_addr_accepted", str(int(opts.get("add_addr_accepted", 8))))

    def record_mptcp_config(self) -> None:
        """What the phone's path manager was given, as ``ip`` shows it, for the bundle."""
        out = self.run_dir / "kernel"
        out.mkdir(exist_ok=True)
        text = ""
        for argv in (["ip", "mptcp", "endpoint", "show"], ["ip", "mptcp", "limits", "show"]):
            res = subprocess.run(argv, capture_output=True, text=True)
            text += f"$ {' '.join(argv)}\n{res.stdout}{res.stderr}"
        (out / "mptcp-client.txt").write_text(text)

    def record_nstat(self) -> None:
        """The namespace's SNMP/netstat counters (MPTcpExt*, TcpExt*) as the run leaves them."""
        side = "client" if self.role == "left" else "server"
        try:
            res = subprocess.run(["nstat", "-asz", "--json"], capture_output=True, text=True, timeout=10,
                                 env=dict(os.environ, NSTAT_HISTORY=str(self.run_dir / f".nstat-{self.role}")))
            counters = json.loads(res.stdout)["kernel"]
        except (OSError, subprocess.TimeoutExpired, ValueError, KeyError) as exc:
            self.log(f"nstat failed: {exc}")
            return
        out = self.run_dir / "kernel"
        out.mkdir(exist_ok=True)
        (out / f"nstat-{side}.json").write_text(json.dumps(counters, indent=1, sort_keys=True))
        (self.run_dir / f".nstat-{self.role}").unlink(missing_ok=True)

    def wait_file(self, path: Path, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self.abort.is_set():
            if path.exists():
                return True
            time.sleep(0.02)
        return path.exists()

    # -- roles
    def run_right(self) -> int:
        self.apply_sysctls()
        self.apply_route_knobs()
        if self.plan.get("mptcp"):
            self.mptcp_limits()
        cap = self.run_dir / "capture"
        cap.mkdir(exist_ok=True)
        self.tcpdump(f"vR1-R-{self.rid}", cap / "server.pcap")
        server = None
        right_cmd = self.plan.get("right_command")
        if right_cmd:
            self.spawn("right-command", right_cmd, stdout=open(self.run_dir / "right-command.out", "w"),
                       stderr=subprocess.STDOUT)
            ready = {"host": "10.2.1.1", "port": None, "command": right_cmd}
            time.sleep(0.5)  # give the server program time to listen before the client starts
        else:
            from hsrtcp.lab.measure import Limits, Server

            server = Server("0.0.0.0", int(self.plan.get("port", 5201)), self.run_dir / "server",
                            limits=Limits(), mptcp=True)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            ready = {"host": "10.2.1.1", "port": server.address[1]}
        atomic.write_text(self.run_dir / "server.ready", json.dumps(ready))
        self.log("ready")
        self.wait_file(self.run_dir / "left.done", float(self.plan.get("timeout_s", 600)))
        if server is not None:
            server.stop()
            time.sleep(0.3)  # let serve_forever close its flows and files
        self.record_nstat()
        return 0

    def run_left(self) -> int:
        self.apply_sysctls()
        paths = int(self.plan.get("paths", 1))
        for p in range(2, paths + 1):
            dev, table = f"vL{p}-L-{self.rid}", str(100 + p)
            self.sh("ip", "rule", "add", "from", f"10.1.{p}.1", "table", table)
            self.sh("ip", "route", "add", "10.2.1.1", "dev", dev, "table", table)
            self.sh("ip", "route", "add", "default", "via", "10.2.1.1", "dev", dev, "onlink", "table", table)
        self.apply_route_knobs()
        if self.plan.get("mptcp"):
            self.mptcp_limits()
            flags = self.mptcp_options().get("endpoint_flags", ["subflow"])
            for p in range(2, paths + 1):
                self.sh("ip", "mptcp", "endpoint", "add", f"10.1.{p}.1", "dev", f"vL{p}-L-{self.rid}", *flags)
            self.record_mptcp_config()
        cap = self.run_dir / "capture"
        cap.mkdir(exist_ok=True)
        for p in range(1, paths + 1):
            self.tcpdump(f"vL{p}-L-{self.rid}", cap / f"phone_p{p}.pcap")
        if not self.wait_file(self.run_dir / "server.ready", 30.0):
            raise RuntimeError("server side never became ready (see agent-right.log)")
        ready = json.loads((self.run_dir / "server.ready").read_text())
        workload = self.plan["workload"]
        rc = 0
        self.log("workload start")
        (self.run_dir / "workload.start").write_text(f"{time.time():.6f}\n")
        if workload["kind"] == "measure":
            from hsrtcp.lab.measure import FlowSpec, run_client

            spec = FlowSpec(**workload["flow"])
            if spec.type == "conjunction":
                spec.count = paths  # one single-path flow per emulated path
            # give up before the driver's run time limit, so the run still ends cleanly
            results = run_client(ready["host"], ready["port"], spec,
                                 timeout_s=max(5.0, float(self.plan.get("timeout_s", 600)) - 20.0))
            (self.run_dir / "client.json").write_text(json.dumps(results, indent=1))
            rc = 0 if all(r.get("error") is None for r in results) else 1
        else:
            server = ready["host"] if ready.get("port") is None else f"{ready['host']}:{ready['port']}"
            env = dict(os.environ, HSRTCP_SERVER=server)
            proc = self.spawn("command", workload["argv"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            # what the command says goes to the caller as before and into the run (command.out)
            pump = threading.Thread(target=_tee, args=(proc.stdout, self.run_dir / "command.out"), daemon=True)
            pump.start()
            while proc.poll() is None and not self.abort.is_set():
                time.sleep(0.05)
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=5)
            pump.join(timeout=5)
            rc = proc.returncode
        self.log(f"workload end rc={rc}")
        time.sleep(float(self.plan.get("linger_s", 1.0)))
        self.record_nstat()
        return rc


def _tee(src, path: Path) -> None:
    """Copy ``src`` (a pipe) to this process's standard output and to ``path``."""
    out = getattr(sys.stdout, "buffer", None)
    with open(path, "wb") as f:
        for chunk in iter(lambda: src.read1(65536), b""):
            f.write(chunk)
            f.flush()
            if out is not None:
                try:
                    out.write(chunk)
                    out.flush()
                except (OSError, ValueError):
                    out = None  # nobody reads it any more; keep the file going


def _routes(table: str) -> list[dict]:
    res = subprocess.run(["ip", "-j", "route", "show", "table", table], capture_output=True, text=True, check=True)
    return json.loads(res.stdout or "[]")


def route_spec(r: dict) -> list[str]:
    """The arguments that name one route of ``ip -j route show`` for ``ip route change``."""
    argv = [r["dst"]]
    if r.get("gateway"):
        argv += ["via", r["gateway"]]
    if r.get("dev"):
        argv += ["dev", r["dev"]]
    for key in ("protocol", "scope"):
        if r.get(key):
            argv += ["proto" if key == "protocol" else key, str(r[key])]
    if r.get("prefsrc"):
        argv += ["src", r["prefsrc"]]
    if "onlink" in (r.get("flags") or []):
        argv.append("onlink")
    return argv


def route_knobs(knobs: dict) -> list[str]:
    """ip-route(8) metrics of the TCP knobs: ``rto_min_ms`` -> ``rto_min <n>ms`` (the lower
    bound of the retransmission timeout, 200 ms by default), ``quickack`` -> ``quickack 1``
    (no delayed ACKs: every segment is acknowledged at once)."""
    argv: list[str] = []
    if knobs.get("rto_min_ms") is not None:
        argv += ["rto_min", f"{int(knobs['rto_min_ms'])}ms"]
    if "quickack" in knobs:
        argv += ["quickack", "1" if knobs["quickack"] else "0"]
    return argv


def main(argv: list[str]) -> int:
    role, run_dir = argv[0], Path(argv[1])
    agent = Agent(role, run_dir)
    if agent.rid:
        (run_dir / "rattan_id").write_text(agent.rid)
    rc = 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set() or agent.abort.set())
    try:
        rc = agent.run_left() if role == "left" else agent.run_right()
    except Exception as exc:  # noqa: BLE001 - recorded for the harness, which reports it
        agent.log(f"error: {type(exc).__name__}: {exc}")
        (run_dir / f"agent-{role}.error").write_text(f"{type(exc).__name__}: {exc}\n")
        rc = 2
    finally:
        agent.stop_children()
        if role == "left":
            atomic.write_text(run_dir / "left.done", str(rc))
        agent.log(f"workload/agent status {rc}")
    # The workload's exit code travels in left.done; the process exit code tells Rattan
    # (and so the driver) only whether the agent itself failed.
    return 2 if (run_dir / f"agent-{role}.error").exists() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
