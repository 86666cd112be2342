"""A three-namespace testbed with real kernel TCP: client — router — server.

::

    [cli] c0 10.0.1.2 ── r0 10.0.1.1 [rtr] r1 10.0.2.1 ── s0 10.0.2.2 [srv]
          fd00:1::2        fd00:1::1       fd00:2::1        fd00:2::2

veth links with MTU 1500, offloads (TSO, GSO, GRO, SG, checksum) switched off through the
ethtool ioctl so that both captures show real MTU-sized segments. The router forwards and can:

- drop server→client *data* segments with probability ``p_data`` and client→server *pure ACKs*
  (ACK flag, no payload, no SYN/FIN/RST) with probability ``p_ack``, using nftables
  ``numgen random mod 1000000 < K`` rules; optionally only inside a time window relative to the
  start of the transfer (``drop_window=(start_s, end_s)``) or only among the first ``n``
  packets of each direction of a connection (``drop_first_n``, conntrack packet accounting,
  which counts the handshake packets too). Named nft counters record exactly how many packets
  were examined and dropped: the strongest witness for the loss truth.
- limit the rate toward the client with a ``tbf`` qdisc on r0 (``rate_bps``), optionally only
  inside ``rate_window=(start_s, end_s)``, or following a step schedule
  ``rate_schedule=[(t_s, rate_bps or None), ...]`` (None lifts the limit: the tbf is set to
  10 Gbit/s so queued packets drain instead of vanishing); the qdisc's drop counter is read
  back too.
- delay ACKs without netem: ``uplink_rate_schedule`` puts a tbf with a long queue
  (``uplink_limit_bytes``, default 200 kB) on r1, toward the server; a low rate there queues
  the client's ACKs (an uplink delay spike: the "RTO too short" case of M14).

Every namespace name carries a random suffix so concurrent testbeds never collide. The testbed
is a context manager; namespaces and the processes it started are removed on exit, also on
exceptions, Ctrl-C (KeyboardInterrupt) and SIGTERM/SIGHUP (raised as
:class:`hsrtcp.lab.netns.Interrupted` while active). Namespaces, captures and cleanup are
the lab's (:mod:`hsrtcp.lab.netns`, :mod:`hsrtcp.lab.capture`).

Example::

    with Testbed(p_data=0.01, p_ack=0.02) as bed:
        run = bed.transfer("drops", nbytes=2_000_000, cc="cubic")
    run.server_pcap, run.client_pcap, run.tcp_info["total_retrans"], run.nft["data_dropped"]

Requires root, ``ip``, ``tcpdump`` and (for drops) ``nft``; :func:`missing_requirements`
says what is missing so tests can skip with a clear message.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hsrtcp.errors import LabError
from hsrtcp.lab import netns
from hsrtcp.lab.capture import Tcpdump
from hsrtcp.lab.rattan import REALTIME_PRIORITY
from hsrtcp.pcapio import rewrite_pcap

AGENT = str(Path(__file__).with_name("_agent.py"))

CLIENT_V4, ROUTER_CLI_V4, ROUTER_SRV_V4, SERVER_V4 = "10.0.1.2", "10.0.1.1", "10.0.2.1", "10.0.2.2"
CLIENT_V6, ROUTER_CLI_V6, ROUTER_SRV_V6, SERVER_V6 = "fd00:1::2", "fd00:1::1", "fd00:2::1", "fd00:2::2"
SERVER_PORT = 5201

# TCP sysctls a test may set per namespace; the testbed always sets tcp_congestion_control
# explicitly because this kernel's default (bbr) would otherwise leak into experiments.
TCP_SYSCTLS = ("tcp_sack", "tcp_timestamps", "tcp_frto", "tcp_dsack", "tcp_window_scaling",
               "tcp_congestion_control", "tcp_early_retrans", "tcp_recovery", "tcp_ecn",
               "tcp_rmem", "tcp_wmem", "tcp_no_metrics_save")

_LIVE: set["Testbed"] = set()


def missing_requirements(need_nft: bool = True) -> str | None:
    """A sentence saying why the testbed cannot run here, or None if it can."""
    if os.geteuid() != 0:
        return "the namespace testbed needs root (network namespaces, tcpdump, nftables)"
    tools = ["ip", "tcpdump", "tc"] + (["nft"] if need_nft else [])
    missing = [t for t in tools if netns.find_tool(t) is None]
    if missing:
        return f"the namespace testbed needs {', '.join(missing)} (not found on PATH)"
    return None


def _run(cmd: list[str], *, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, input=input, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise LabError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


def _await_ready(proc: subprocess.Popen, ready: Path, timeout_s: float, poll_s: float, who: str) -> None:
    """Wait until an agent has written its ready file; an agent that exits first or does not
    write it within ``timeout_s`` fails the run with its stderr."""
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise LabError(f"{who} agent did not start: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(poll_s)


@dataclass
class Run:
    """The result of one :meth:`Testbed.transfer`: captures, kernel truth and parameters.

    - ``server_pcap`` / ``client_pcap``: tcpdump captures on s0 (sender side) and c0
      (receiver side). If ``time_offset_s`` is set, the client capture's timestamps were
      shifted by that amount after the run (the unshifted file is ``client_pcap_orig``).
    - ``connections``: per TCP connection, as the server saw it: client/server address and
      port, bytes sent, congestion control, and ``tcp_info`` (the server socket's TCP_INFO
      after the peer's FIN: all data acknowledged, counters final). ``client`` holds the
      client side's results (bytes received, its own TCP_INFO).
    - ``nft``: router counters ``data_seen``, ``data_dropped``, ``ack_seen``,
      ``ack_dropped`` (packets), ``qdisc_dropped``: packets the tbf toward the client dropped,
      ``qdisc_dropped_up``: packets the uplink tbf dropped (None when not installed).
    - ``capture_stats``: tcpdump's "captured" / "dropped by kernel" per side.
    - ``t0``: the start of the transfer (host clock): the client agent is up and connects
      next; ``drop_window`` and the rate schedules count from it.
    """

    name: str
    workdir: str
    server_pcap: str
    client_pcap: str
    client_pcap_orig: str | None
    family: int
    client_addr: str
    server_addr: str
    server_port: int
    params: dict
    sysctls: dict
    connections: list[dict]
    client: list[dict]
    nft: dict
    qdisc_dropped: int | None
    capture_stats: dict
    t0: float
    time_offset_s: float | None = None
    offloads: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def tcp_info(self) -> dict:
        """TCP_INFO of the server socket of the first connection."""
        return self.connections[0]["tcp_info"]

    def to_dict(self) -> dict:
        return asdict(self)

    def save(self, path: str | Path | None = None) -> Path:
        """Write the run's metadata as JSON (default: ``<workdir>/<name>.run.json``)."""
        p = Path(path) if path else Path(self.workdir) / f"{self.name}.run.json"
        p.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return p


def _run_ahead() -> None:
    """Put the calling timer thread, and the `nft`/`tc` it starts, ahead of ordinary work:
    a path change must happen when it is due. Under CFS at load 8-9 a drop window's 'on'
    (a Python thread starting `ip netns exec … nft`) came so late that a 0.3-0.5 s window
    dropped nothing, or ran 0.46-0.59 s (two of eight witness runs). SCHED_FIFO (at the
    lab emulator's priority) is per thread here, and children inherit it; without the
    privilege the thread stays as it is."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_PRIORITY))
    except (PermissionError, OSError):
        pass


class Testbed:
    """Client — router — server namespaces; see the module docstring.

    Parameters:
        p_data, p_ack: drop probabilities (0..1) in the router, see the module docstring.
        drop_window: (start_s, end_s) relative to the transfer start; drops only inside it.
        drop_first_n: drops only among the first n packets of the direction of a connection.
        rate_bps: tbf rate limit on the router's egress toward the client (bit/s).
        rate_window: (start_s, end_s) during which the rate limit is installed.
        rate_schedule: [(t_s, rate_bps | None), ...] steps relative to the transfer start;
            overrides rate_bps/rate_window.
        rate_burst_bytes, rate_queue_s: tbf burst and queue latency bound.
        uplink_rate_schedule: like rate_schedule, for client→server traffic (tbf on r1, burst
            ``uplink_burst_bytes`` (small, so ACKs cannot slip through in a burst), queue
            limit ``uplink_limit_bytes``).
        cc: congestion control set by sysctl in client and server namespaces (default cubic).
        sysctls: ``net.ipv4.*`` TCP sysctls (short names, e.g. ``{"tcp_sack": 0}``) applied
            to both ends; ``server_sysctls`` / ``client_sysctls`` override per end.
        workdir: where captures go (created).
    """

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, *, p_data: float = 0.0, p_ack: float = 0.0,
                 drop_window: tuple[float, float] | None = None, drop_first_n: int | None = None,
                 rate_bps: int | None = None, rate_window: tuple[float, float] | None = None,
                 rate_schedule: list[tuple[float, int | None]] | None = None,
                 rate_burst_bytes: int = 32_000, rate_queue_s: float = 0.05,
                 uplink_rate_schedule: list[tuple[float, int | None]] | None = None,
                 uplink_limit_bytes: int = 200_000, uplink_burst_bytes: int = 1600,
                 cc: str = "cubic", sysctls: dict | None = None,
                 server_sysctls: dict | None = None, client_sysctls: dict | None = None,
                 workdir: str | Path = "netbed-out"):
        for p in (p_data, p_ack):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"drop probability {p} outside [0, 1]")
        self.p_data, self.p_ack = p_data, p_ack
        self.drop_window, self.drop_first_n = drop_window, drop_first_n
        self.rate_bps, self.rate_window = rate_bps, rate_window
        if rate_schedule is None and rate_bps and rate_window is not None:
            rate_schedule = [(rate_window[0], rate_bps), (rate_window[1], None)]
        self.rate_schedule = sorted(rate_schedule) if rate_schedule else None
        self.rate_burst_bytes, self.rate_queue_s = rate_burst_bytes, rate_queue_s
        self.uplink_rate_schedule = sorted(uplink_rate_schedule) if uplink_rate_schedule else None
        self.uplink_limit_bytes, self.uplink_burst_bytes = uplink_limit_bytes, uplink_burst_bytes
        self.cc = cc
        common = {"tcp_congestion_control": cc, **(sysctls or {})}
        self.sysctls = {"srv": {**common, **(server_sysctls or {})},
                        "cli": {**common, **(client_sysctls or {})}}
        for side in self.sysctls.values():
            for k in side:
                if k not in TCP_SYSCTLS:
                    raise ValueError(f"unsupported sysctl {k!r}; known: {', '.join(TCP_SYSCTLS)}")
        self.workdir = Path(workdir)
        suffix = secrets.token_hex(3)
        self.ns = {"cli": f"hsb{suffix}-cli", "rtr": f"hsb{suffix}-rtr", "srv": f"hsb{suffix}-srv"}
        self._procs: list[subprocess.Popen] = []
        self._timers: list[threading.Timer] = []
        self._timer_errors: list[str] = []
        self._created: list[str] = []
        self._signals = contextlib.ExitStack()
        self.offloads: dict = {}
        self.notes: list[str] = []
        self.effective_sysctls: dict = {}
        self._qdisc_lock = threading.Lock()
        self.use_nft = p_data > 0 or p_ack > 0

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> "Testbed":
        why = missing_requirements(need_nft=self.use_nft)
        if why:
            raise LabError(why)
        _LIVE.add(self)
        self._signals.enter_context(netns.signals_raise())
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop timers and processes we started, delete our namespaces. Idempotent."""
        for t in self._timers:
            t.cancel()
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        self._procs.clear()
        for ns in reversed(self._created):
            # also kills what is still running inside; a namespace that resists deletion
            # must not hide the exception that brought us here
            with contextlib.suppress(LabError):
                netns.delete_netns(ns)
        self._created.clear()
        _LIVE.discard(self)
        self._signals.close()

    # -- setup ----------------------------------------------------------------------------

    def _ns(self, role: str, *cmd: str, check: bool = True, input: str | None = None):
        return _run(netns.exec_argv(self.ns[role], *cmd), check=check, input=input)

    def _setup(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for role in ("cli", "rtr", "srv"):
            netns.add_netns(self.ns[role])
            self._created.append(self.ns[role])
        c, r, s = self.ns["cli"], self.ns["rtr"], self.ns["srv"]
        # Both ends created directly inside their namespaces: no name clashes in the root ns.
        _run(["ip", "link", "add", "c0", "netns", c, "mtu", "1500", "type", "veth",
              "peer", "name", "r0", "netns", r, "mtu", "1500"])
        _run(["ip", "link", "add", "s0", "netns", s, "mtu", "1500", "type", "veth",
              "peer", "name", "r1", "netns", r, "mtu", "1500"])
        batch = {
            "cli": ["addr add 10.0.1.2/24 dev c0", "addr add fd00:1::2/64 dev c0 nodad",
                    "link set lo up", "link set c0 up", "route add default via 10.0.1.1",
                    "route add default via fd00:1::1"],
            "rtr": ["addr add 10.0.1.1/24 dev r0", "addr add fd00:1::1/64 dev r0 nodad",
                    "addr add 10.0.2.1/24 dev r1", "addr add fd00:2::1/64 dev r1 nodad",
                    "link set lo up", "link set r0 up", "link set r1 up"],
            "srv": ["addr add 10.0.2.2/24 dev s0", "addr add fd00:2::2/64 dev s0 nodad",
                    "link set lo up", "link set s0 up", "route add default via 10.0.2.1",
                    "route add default via fd00:2::1"],
        }
        for role, lines in batch.items():
            _run(["ip", "-n", self.ns[role], "-batch", "-"], input="\n".join(lines) + "\n")
        self._ns("rtr", "sysctl", "-q", "-w", "net.ipv4.ip_forward=1",
                 "net.ipv6.conf.all.forwarding=1")
        for role, ifaces in (("cli", ["c0"]), ("rtr", ["r0", "r1"]), ("srv", ["s0"])):
            out = self._ns(role, sys.executable, AGENT, "offloads", *ifaces)
            self.offloads.update(json.loads(out.stdout))
        failed = {i: f for i, f in self.offloads.items() if f}
        if failed:
            # Captures would then show GSO super-segments; tests check segment sizes ≤ MSS.
            self.notes.append(f"offloads not fully switched off: {failed}")
        for role in ("cli", "srv"):
            for k, v in self.sysctls[role].items():
                p = self._ns(role, "sysctl", "-q", "-w", f"net.ipv4.{k}={v}", check=False)
                if p.returncode == 0:
                    continue
                if k == "tcp_congestion_control":
                    # Outside the initial netns the kernel only lets a CC not listed in the
                    # host's tcp_allowed_congestion_control be set per socket (CAP_NET_ADMIN),
                    # which both agents do with TCP_CONGESTION; the namespace default stays.
                    self.notes.append(f"{role}: default CC not settable ({p.stderr.strip()}); "
                                      "sockets set TCP_CONGESTION explicitly")
                    continue
                raise LabError(f"sysctl net.ipv4.{k}={v} in {self.ns[role]}: {p.stderr.strip()}")
            self.effective_sysctls[role] = {
                k: self._ns(role, "sysctl", "-n", f"net.ipv4.{k}").stdout.strip()
                for k in TCP_SYSCTLS if k not in ("tcp_rmem", "tcp_wmem")}
        if self.use_nft:
            self._ns("rtr", "nft", "-f", "-", input=self._nft_ruleset())
            if self.drop_first_n is not None:
                self._ns("rtr", "sysctl", "-q", "-w", "net.netfilter.nf_conntrack_acct=1")
        if self.rate_bps and self.rate_schedule is None:
            self._tbf(self.rate_bps)
        self._wait_reachable()

    def _wait_reachable(self) -> None:
        # IPv6 neighbour discovery and link-up are asynchronous; a TCP connect would cope, but
        # a SYN retransmission in a fixture is noise, so wait until the path answers.
        for addr in (SERVER_V4, SERVER_V6):
            for _ in range(50):
                p = self._ns("cli", "ping", "-c", "1", "-W", "1", addr, check=False) \
                    if shutil.which("ping") else None
                if p is None or p.returncode == 0:
                    break
                time.sleep(0.1)

    def _nft_ruleset(self) -> str:
        kd, ka = round(self.p_data * 1_000_000), round(self.p_ack * 1_000_000)
        rules = []
        # A data segment has payload: IP length > IP header + TCP header. nft cannot do
        # arithmetic between fields, so one rule per TCP data offset (5..15 words); IPv4 from
        # Linux carries no IP options (20-byte header), IPv6 no extension headers here.
        for d in range(5, 16):
            th = 4 * d
            rules.append(f'iifname "r1" oifname "r0" tcp doff {d} ip length > {20 + th} jump sdata')
            rules.append(f'iifname "r1" oifname "r0" tcp doff {d} ip6 length > {th} jump sdata')
            ack = "tcp flags & (fin | syn | rst | ack) == ack"
            rules.append(f'iifname "r0" oifname "r1" {ack} tcp doff {d} ip length {20 + th} jump cack')
            rules.append(f'iifname "r0" oifname "r1" {ack} tcp doff {d} ip6 length {th} jump cack')
        first_d = first_a = ""
        if self.drop_first_n is not None:
            # Server→client is the conntrack reply direction (the client opens).
            first_d = f"ct reply packets <= {int(self.drop_first_n)} "
            first_a = f"ct original packets <= {int(self.drop_first_n)} "
        gate = "" if self.drop_window is not None and self.drop_window[0] > 0 else "jump sdrop"
        gate_a = "" if self.drop_window is not None and self.drop_window[0] > 0 else "jump adrop"
        fwd = "\n    ".join(rules)
        return f"""
table inet hsb {{
  counter data_seen {{ }}
  counter data_dropped {{ }}
  counter ack_seen {{ }}
  counter ack_dropped {{ }}
  chain sdrop {{
    {_drop_rule(first_d, kd, "data_dropped")}
  }}
  chain adrop {{
    {_drop_rule(first_a, ka, "ack_dropped")}
  }}
  chain sdata {{
    counter name data_seen
    {gate}
  }}
  chain cack {{
    counter name ack_seen
    {gate_a}
  }}
  chain forwarding {{
    type filter hook forward priority 0; policy accept;
    {fwd}
  }}
}}
"""

    def _drops_active(self, on: bool) -> None:
        cmds = ["flush chain inet hsb sdata", "flush chain inet hsb cack",
                "add rule inet hsb sdata counter name data_seen",
                "add rule inet hsb cack counter name ack_seen"]
        if on:
            cmds += ["add rule inet hsb sdata jump sdrop", "add rule inet hsb cack jump adrop"]
        self._ns("rtr", "nft", "-f", "-", input="\n".join(cmds) + "\n")

    def _tbf(self, rate_bps: int | None, dev: str = "r0") -> None:
        # the queue bound: a latency toward the client, a byte limit toward the server (at a
        # few kbit/s a latency bound would hold only a handful of ACKs)
        queue = (["latency", f"{int(self.rate_queue_s * 1000)}ms"] if dev == "r0"
                 else ["limit", str(self.uplink_limit_bytes)])
        burst = self.rate_burst_bytes if dev == "r0" else self.uplink_burst_bytes
        if not rate_bps:
            # "No limit" is a tbf at 10 Gbit/s, not a deleted qdisc: deleting it would silently
            # discard the packets still queued in it (no drop counter sees them).
            rate_bps, burst = 10_000_000_000, 1_000_000
        with self._qdisc_lock:
            # replace on an existing tbf changes it in place, keeping its queue and counters
            self._ns("rtr", "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
                     "rate", f"{int(rate_bps)}bit", "burst", str(burst), *queue)

    def _qdisc_dropped(self, dev: str = "r0") -> int | None:
        p = self._ns("rtr", "tc", "-s", "-j", "qdisc", "show", "dev", dev, check=False)
        try:
            for q in json.loads(p.stdout):
                if q.get("kind") == "tbf":
                    return int(q.get("drops", 0))
        except (ValueError, TypeError):
            pass
        return None

    def nft_counters(self) -> dict:
        """Current values (packets) of the router's named counters; zeros without nft rules."""
        names = ("data_seen", "data_dropped", "ack_seen", "ack_dropped")
        if not self.use_nft:
            return {n: 0 for n in names}
        out = json.loads(self._ns("rtr", "nft", "-j", "list", "counters", "table", "inet", "hsb").stdout)
        vals = {}
        for item in out.get("nftables", []):
            c = item.get("counter")
            if c and c.get("name") in names:
                vals[c["name"]] = int(c["packets"])
        return vals

    def _schedule(self, at_s: float, fn, *args) -> None:
        def run():
            try:
                _run_ahead()
                fn(*args)
            except Exception as e:  # a timer thread's error is lost unless kept
                self._timer_errors.append(f"{getattr(fn, '__name__', fn)}{args}: {e}")

        t = threading.Timer(max(0.0, at_s), run)
        t.daemon = True
        self._timers.append(t)
        t.start()

    def _schedule_window(self, t0: float, start: float, end: float) -> None:
        """Drops on at t0 + start (unless the ruleset starts with them), off at t0 + end, on
        one thread so the two cannot swap: as two timers, at load 16 the 0.2-s 'on' ran
        after the 0.5-s 'off' and every ACK was dropped for good (issue 30)."""
        def window():
            if start > 0:
                self._drops_active(True)
            # the running Timer's own event: set when the transfer's timers are cancelled
            cancelled = threading.current_thread().finished
            if not cancelled.wait(max(0.0, t0 + end - time.time())):
                self._drops_active(False)

        self._schedule(start, window)

    # -- experiments ----------------------------------------------------------------------

    def transfer(self, name: str, *, nbytes: int | None = None, duration: float | None = None,
                 cc: str | None = None, ipv6: bool = False, conns: int = 1,
                 concurrent: bool = False, gap_s: float = 0.0, client_port: int | None = None,
                 rcvbuf: int | None = None, pause_after: int = 0, pause_s: float = 0.0,
                 sndbuf: int | None = None, max_pacing_rate: int | None = None,
                 snaplen: int = 128, client_iface: str = "c0", client_linktype: str | None = None,
                 nano: bool = False, bpf: str | None = "tcp", buffer_kib: int = 16384,
                 immediate: bool = True,
                 time_offset_s: float | None = None, port: int = SERVER_PORT,
                 timeout_s: float = 120.0) -> Run:
        """Run one download: the server sends ``nbytes`` (or for ``duration`` seconds) to the
        client on each of ``conns`` connections, with congestion control ``cc`` set on the
        server socket (TCP_CONGESTION; default: the testbed's ``cc``).

        Client options: ``concurrent`` connections or sequential ones ``gap_s`` apart;
        ``client_port`` binds every connection to the same source port (sequential
        connections then reuse the 4-tuple: the connection-epoch case); ``rcvbuf`` sets
        SO_RCVBUF and ``pause_after``/``pause_s`` stop reading for a while after that many
        bytes (zero window).

        Capture options: ``snaplen``, ``client_iface`` (``"any"`` gives Linux cooked v2 with
        libpcap ≥ 1.10), ``client_linktype`` (e.g. ``"LINUX_SLL"``), ``nano`` (nanosecond
        timestamps), ``bpf`` filter (default ``tcp``), kernel buffer ``buffer_kib``,
        ``immediate`` (tcpdump --immediate-mode; turn off for bulk captures, the testbed then
        waits 1.5 s before stopping tcpdump so the last ring block is retired and written).
        ``time_offset_s`` shifts the client capture's clock afterwards.
        """
        cc = cc or self.cc
        if (nbytes is None) == (duration is None):
            raise ValueError("transfer needs exactly one of nbytes and duration")
        server = SERVER_V6 if ipv6 else SERVER_V4
        client = CLIENT_V6 if ipv6 else CLIENT_V4
        srv_pcap = self.workdir / f"{name}.server.pcap"
        cli_pcap = self.workdir / f"{name}.client.pcap"
        ready = self.workdir / f".{name}.{self.ns['srv']}.ready"
        ready.unlink(missing_ok=True)
        nft_before = self.nft_counters()
        qd_before = {d: self._qdisc_dropped(d) or 0 for d in ("r0", "r1")}
        dumps = []
        try:
            for ns, iface, path, linktype in ((self.ns["srv"], "s0", srv_pcap, None),
                                              (self.ns["cli"], client_iface, cli_pcap, client_linktype)):
                dumps.append(Tcpdump(iface, path, ns=ns, snaplen=snaplen, linktype=linktype, nano=nano,
                                     bpf=bpf, buffer_kib=buffer_kib, immediate=immediate))
                self._procs.append(dumps[-1].proc)
                dumps[-1].wait_ready()
            scmd = netns.exec_argv(self.ns["srv"], sys.executable, AGENT, "serve",
                                   "--bind", server, "--port", str(port), "--cc", cc, "--conns", str(conns),
                                   "--ready-file", str(ready), "--drain-timeout", str(timeout_s))
            scmd += ["--bytes", str(nbytes)] if nbytes is not None else ["--duration", str(duration)]
            if sndbuf:
                scmd += ["--sndbuf", str(sndbuf)]
            if max_pacing_rate:
                scmd += ["--max-pacing-rate", str(max_pacing_rate)]
            sp = subprocess.Popen(scmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self._procs.append(sp)
            _await_ready(sp, ready, 10, 0.01, "server")
            ready.unlink(missing_ok=True)
            ccmd = netns.exec_argv(self.ns["cli"], sys.executable, AGENT, "fetch",
                                   "--host", server, "--port", str(port), "--cc", cc, "--conns", str(conns),
                                   "--timeout", str(timeout_s))
            if concurrent:
                ccmd.append("--concurrent")
            if gap_s:
                ccmd += ["--gap", str(gap_s)]
            if client_port:
                ccmd += ["--bind-port", str(client_port)]
            if rcvbuf:
                ccmd += ["--rcvbuf", str(rcvbuf)]
            if pause_s:
                ccmd += ["--pause-after", str(pause_after), "--pause", str(pause_s)]
            # t0 is when the client is up and about to connect, not when it was spawned:
            # starting a Python process in a namespace takes 0.1-0.5 s on a loaded host, and
            # the drop and rate windows are relative to the transfer (at load 10 a window of
            # 0.3-0.5 s after the spawn had passed before the connection began)
            cready = self.workdir / f".{name}.{self.ns['cli']}.ready"
            cgo = self.workdir / f".{name}.{self.ns['cli']}.go"
            for f in (cready, cgo):
                f.unlink(missing_ok=True)
            ccmd += ["--ready-file", str(cready), "--go-file", str(cgo)]
            cp = subprocess.Popen(ccmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self._procs.append(cp)
            _await_ready(cp, cready, 60, 0.002, "client")
            # Steps at 0 s are the path the transfer starts on: set before the client goes. On
            # a timer thread they raced the connection (at load 11 a 3-MB transfer meant for
            # 10 Mbit/s crossed the bare veth in 10 ms before its tbf existed).
            for sched, dev in ((self.rate_schedule, "r0"), (self.uplink_rate_schedule, "r1")):
                for at, rate in sched or []:
                    if at <= 0:
                        self._tbf(rate, dev)
            t0 = time.time()
            self._timer_errors.clear()
            if self.drop_window is not None and self.use_nft:
                self._schedule_window(t0, *self.drop_window)
            for sched, dev in ((self.rate_schedule, "r0"), (self.uplink_rate_schedule, "r1")):
                for at, rate in sched or []:
                    if at > 0:
                        self._schedule(at, self._tbf, rate, dev)
            cgo.write_text("go\n")
            cout, cerr = cp.communicate(timeout=timeout_s + 30)
            for f in (cready, cgo):
                f.unlink(missing_ok=True)
            sout, serr = sp.communicate(timeout=timeout_s + 30)
            if sp.returncode != 0 or not sout.strip():
                raise LabError(f"server agent failed ({sp.returncode}): {serr.strip()} {sout.strip()}")
            if cp.returncode != 0:
                raise LabError(f"client agent failed ({cp.returncode}): {cerr.strip()} {cout.strip()}")
            if self._timer_errors:
                raise LabError(f"a scheduled path change failed: {'; '.join(self._timer_errors)}")
            time.sleep(0.2 if immediate else 1.5)  # last ACK/FIN reach both capture points
            stats = {"server": dumps[0].stop(), "client": dumps[1].stop()}
        finally:
            for d in dumps:
                d.kill()
            for t in self._timers:
                t.cancel()
            self._timers.clear()
        for side, st in stats.items():
            if st.get("dropped_by_kernel"):
                raise LabError(f"tcpdump on the {side} side dropped {st['dropped_by_kernel']} packets "
                               "(capture loss would corrupt the ground truth)")
        nft_after = self.nft_counters()
        nft = {k: nft_after.get(k, 0) - nft_before.get(k, 0) for k in nft_after}
        with self._qdisc_lock:
            qd = qd_up = None
            if self.rate_bps or self.rate_schedule:
                qd = (self._qdisc_dropped("r0") or 0) - qd_before["r0"]
            if self.uplink_rate_schedule:
                qd_up = (self._qdisc_dropped("r1") or 0) - qd_before["r1"]
        orig = None
        if time_offset_s:
            orig = str(cli_pcap.with_suffix(".orig.pcap"))
            os.replace(cli_pcap, orig)
            rewrite_pcap(orig, cli_pcap, time_offset_s=time_offset_s)
        params = {
            "nbytes": nbytes, "duration": duration, "cc": cc, "ipv6": ipv6, "conns": conns,
            "concurrent": concurrent, "gap_s": gap_s, "client_port": client_port, "rcvbuf": rcvbuf,
            "pause_after": pause_after, "pause_s": pause_s, "sndbuf": sndbuf,
            "max_pacing_rate": max_pacing_rate, "snaplen": snaplen, "client_iface": client_iface,
            "client_linktype": client_linktype, "nano": nano, "bpf": bpf,
            "p_data": self.p_data, "p_ack": self.p_ack, "drop_window": self.drop_window,
            "drop_first_n": self.drop_first_n, "rate_bps": self.rate_bps,
            "rate_window": self.rate_window, "rate_schedule": self.rate_schedule,
            "rate_burst_bytes": self.rate_burst_bytes,
            "rate_queue_s": self.rate_queue_s, "uplink_rate_schedule": self.uplink_rate_schedule,
            "uplink_limit_bytes": self.uplink_limit_bytes, "uplink_burst_bytes": self.uplink_burst_bytes,
            "mtu": 1500,
        }
        return Run(
            name=name, workdir=str(self.workdir), server_pcap=str(srv_pcap), client_pcap=str(cli_pcap),
            client_pcap_orig=orig, family=6 if ipv6 else 4, client_addr=client, server_addr=server,
            server_port=port, params=params, sysctls=self.effective_sysctls, notes=list(self.notes),
            connections=json.loads(sout)["connections"], client=json.loads(cout)["connections"],
            nft={**nft, "qdisc_dropped": qd, "qdisc_dropped_up": qd_up}, qdisc_dropped=qd, capture_stats=stats, t0=t0,
            time_offset_s=time_offset_s, offloads=self.offloads,
        )


def _drop_rule(prefix: str, k: int, counter: str) -> str:
    """One nft rule dropping a packet with probability k / 10^6 (none for k = 0)."""
    if k <= 0:
        return ""
    rnd = "" if k >= 1_000_000 else f"numgen random mod 1000000 < {k} "
    return f"{prefix}{rnd}counter name {counter} drop"


@atexit.register
def _cleanup_live() -> None:
    for bed in list(_LIVE):
        bed.close()


def shift_pcap_time(src: str | Path, dst: str | Path, offset_s: float) -> int:
    """Write ``src`` to ``dst`` with every timestamp moved by ``offset_s`` seconds (a clock
    offset between two vantage points). Returns the number of records."""
    return rewrite_pcap(src, dst, time_offset_s=offset_s)
