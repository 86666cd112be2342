"""Lab commands: ``measure`` (server/client), ``emulate``, ``campaign``; ``scenario`` re-exported.

Every heavy import happens inside the command, so ``hsrtcp --help`` stays fast.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import click

from hsrtcp.errors import ExitCode, LabError


def _lab_errors(fn):
    """Show a LabError (not root, tool missing, emulator crash…) as a one-line error, exit 3."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LabError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def _parse_sysctls(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for v in values:
        if "=" not in v:
            raise click.BadParameter(f"{v!r}: expected KEY=VALUE, e.g. net.ipv4.tcp_frto=0", param_hint="--sysctl")
        k, val = v.split("=", 1)
        out[k.strip()] = val.strip()
    return out


def _hostport(text: str, default_port: int) -> tuple[str, int]:
    if text.count(":") == 1:
        host, port = text.split(":")
        try:
            return host, int(port)
        except ValueError:
            raise click.BadParameter(f"{text!r}: port must be a number", param_hint="SERVER") from None
    return text, default_port


# --------------------------------------------------------------------------- measure


@click.group()
def measure() -> None:
    """Traffic generator: a server that sends (downlink, as in the seed studies) and samples
    TCP_INFO every 10 ms per flow, and a client that asks for flows. Works over any network."""


@measure.command("server")
@click.option("--bind", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", "-p", default=5201, show_default=True, type=click.IntRange(0, 65535))
@click.option("--out", "-o", default="measure-server", show_default=True, type=click.Path(file_okay=False),
              help="Directory for tcpinfo/<flow_id>.csv and flows.jsonl.")
@click.option("--max-connections", default=64, show_default=True, type=click.IntRange(1, 1024))
@click.option("--max-duration", default=3600.0, show_default=True, type=click.FloatRange(0.001, 86400),
              help="Longest flow a client may ask for, seconds.")
@click.option("--max-size", default="10GB", show_default=True, help="Largest flow a client may ask for.")
@click.option("--max-udp-rate", default=200e6, show_default=True, type=float, help="bit/s")
@click.option("--max-flows", type=click.IntRange(1), default=None, help="Exit after serving this many flows.")
@click.option("--no-mptcp", is_flag=True, help="Listen with plain TCP (default: MPTCP, which also accepts TCP).")
@click.option("--sysctl", "sysctls", multiple=True, metavar="KEY=VALUE",
              help="Set a per-namespace net.* sysctl first (root; e.g. net.ipv4.tcp_frto=0).")
@click.option("--ebpf", "ebpf_ccs", multiple=True, type=click.Choice(["hsrbbr"]),
              help="Register this eBPF congestion control while the server runs (root; docs/hsrbbr.md).")
@_lab_errors
def measure_server(bind, port, out, max_connections, max_duration, max_size, max_udp_rate, max_flows, no_mptcp,
                   sysctls, ebpf_ccs) -> None:
    """Run the measurement server until Ctrl-C."""
    from hsrtcp.lab import ebpf
    from hsrtcp.lab import measure as m
    from hsrtcp.lab import netns

    with ebpf.loaded(ebpf_ccs):
        _measure_server(m, netns, bind, port, out, max_connections, max_duration, max_size, max_udp_rate,
                        max_flows, no_mptcp, sysctls)


def _measure_server(m, netns, bind, port, out, max_connections, max_duration, max_size, max_udp_rate, max_flows,
                    no_mptcp, sysctls) -> None:

    if sysctls:
        netns.sysctl_set(_parse_sysctls(sysctls))
    limits = m.Limits(max_connections=max_connections, max_duration_s=max_duration,
                      max_size_bytes=m.parse_size(max_size), max_udp_rate_bps=max_udp_rate)
    click.echo(f"measure server on {bind}:{port}, writing to {out} (Ctrl-C to stop)", err=True)
    m.serve(bind, port, out, limits=limits, mptcp=not no_mptcp, max_flows=max_flows)


@measure.command("client")
@click.argument("server")
@click.option("--port", "-p", default=5201, show_default=True, type=click.IntRange(1, 65535),
              help="Used when SERVER has no :PORT.")
@click.option("--flow", "flow_type", default="duration", show_default=True,
              type=click.Choice(["duration", "size", "sequence", "concurrent", "udp", "conjunction"]),
              help="conjunction: MPTCP + one single-path flow bound to 10.1.<p>.1 per path p = 1..-n "
                   "(seed 004's instance, docs/mptcp.md)")
@click.option("--duration", "-t", type=float, default=None, help="Seconds (default 180 for duration flows).")
@click.option("--size", default=None, help="Bytes per flow: 50KB, 64KB, 2MB, 64KiB ...")
@click.option("--count", "-n", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Flows in a sequence / concurrent set.")
@click.option("--gap", default=0.0, show_default=True, type=float, help="Pause between sequence flows, seconds.")
@click.option("--cc", default=None, help="Congestion control (reno, cubic, bbr, hsrbbr = eBPF, docs/hsrbbr.md). Always set it: the kernel default varies.")
@click.option("--mptcp", is_flag=True, help="Use an MPTCP socket (IPPROTO_MPTCP).")
@click.option("--path", "path", type=click.IntRange(1, 8), default=None,
              help="In the lab: the emulated path (carrier) of a single-path flow; binds 10.1.<path>.1.")
@click.option("--up", "uplink", is_flag=True, help="Client sends (uplink) instead of the server.")
@click.option("--quickack", is_flag=True, help="Disable delayed ACKs on the receiving side (TCP_QUICKACK).")
@click.option("--rate", default=1e6, show_default=True, type=float, help="UDP rate, bit/s.")
@click.option("--payload", default=1200, show_default=True, type=click.IntRange(16, 1472), help="UDP payload bytes.")
@click.option("--sysctl", "sysctls", multiple=True, metavar="KEY=VALUE", help="Per-namespace net.* sysctl (root).")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None, help="Write results JSON here (default stdout).")
@_lab_errors
def measure_client(server, port, flow_type, duration, size, count, gap, cc, mptcp, path, uplink, quickack, rate,
                   payload, sysctls, out) -> None:
    """Ask SERVER[:PORT] for flows and report what arrived."""
    from hsrtcp.lab import measure as m
    from hsrtcp.lab import netns

    if sysctls:
        netns.sysctl_set(_parse_sysctls(sysctls))
    host, port = _hostport(server, port)
    if duration is None and flow_type in ("duration", "udp", "conjunction") or (flow_type == "concurrent" and not size and duration is None):
        duration = 180.0
    spec = m.FlowSpec(type=flow_type, duration_s=duration, size_bytes=m.parse_size(size) if size else None,
                      count=count, gap_s=gap, direction="up" if uplink else "down", cc=cc, mptcp=mptcp,
                      quickack=quickack, rate_bps=rate, payload_bytes=payload, path=path)
    from hsrtcp.lab import ebpf

    # an upload's sender is this socket: an eBPF cc (hsrbbr) must be registered here
    with ebpf.loaded([cc] if uplink and cc not in m.available_ccs() else []):
        results = m.run_client(host, port, spec)
    text = json.dumps(results, indent=1)
    if out:
        Path(out).write_text(text)
    else:
        click.echo(text)
    for r in results:
        if r.get("error"):
            click.echo(f"flow {r.get('label')}: {r['error']}", err=True)
    if any(r.get("error") for r in results):
        sys.exit(ExitCode.FAILED)


# --------------------------------------------------------------------------- emulate


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--scenario", "-s", default=None, type=click.Path(exists=True),
              help="Scenario TOML (scenarios/), a directory `hsrtcp scenario generate` wrote (or its "
                   "rattan.toml), or a Rattan config with [cells]; or the inline options below.")
@click.option("--rate", default=None, metavar="DOWN[/UP]",
              help="Without -s: a constant rate, e.g. 10Mbps or 10Mbps/2Mbps (default 10Mbps both ways).")
@click.option("--delay", type=click.FloatRange(0, 10000), default=None, help="Without -s: one-way delay, ms (default 30).")
@click.option("--loss", type=click.FloatRange(0, 1), default=None,
              help="Without -s: random loss probability in each direction (default 0).")
@click.option("--trace", "mm_trace", default=None, type=click.Path(exists=True, dir_okay=False),
              help="Without -s: a Mahimahi (mm-link) trace as the downlink capacity.")
@click.option("--handoff-every", type=click.FloatRange(min=0.5), default=None, metavar="SECONDS",
              help="Without -s: a handoff every N s (outage, loss burst and RTT spike drawn as scenario.md's "
                   "[handoff] defaults).")
@click.option("--duration", type=float, default=None,
              help="Override the scenario duration, seconds (inline: the window, default 60).")
@click.option("--mptcp", is_flag=True, help="Configure MPTCP endpoints over every path (subflows).")
@click.option("--sysctl", "sysctls", multiple=True, metavar="KEY=VALUE", help="net.* sysctl in both namespaces.")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Run directory (captures, server TCP_INFO, logs). Default: a new temporary directory.")
@click.option("--timeout", type=float, default=None, help="Stop the run after this many seconds.")
@click.option("--right", "right_cmd", default=None, metavar="'CMD ARGS'",
              help="Run this on the server side instead of the measure server, e.g. --right 'iperf3 -s -1'.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@_lab_errors
def emulate(scenario, rate, delay, loss, mm_trace, handoff_every, duration, mptcp, sysctls, out, timeout, right_cmd,
            command) -> None:
    """Run COMMAND on the phone (left) side of an emulated path; the measure server runs on the
    server (right) side and HSRTCP_SERVER=host:port says where. Example:

        hsrtcp emulate -s scenarios/smoke.toml -- hsrtcp measure client '$HSRTCP_SERVER' --cc cubic -t 20

    (quote $HSRTCP_SERVER, or use `sh -c`, so it expands inside the emulated namespace.)
    With --right, that command replaces the measure server and HSRTCP_SERVER holds only the
    server address (10.2.1.1).
    """
    import shlex
    import tempfile

    from hsrtcp.lab import emulate as em
    from hsrtcp.lab import netns

    netns.require_root()

    import time

    cmd = list(command)
    if any("$HSRTCP_SERVER" in c for c in cmd):
        cmd = ["sh", "-c", " ".join(cmd)]
    if out and Path(out).exists() and (not Path(out).is_dir() or any(Path(out).iterdir())):
        raise click.UsageError(f"-o {out}: exists and is not an empty directory; a run writes a bundle of its own "
                               "(choose a new directory)")
    run_dir = Path(out) if out else Path(tempfile.mkdtemp(prefix="hsrtcp-emulate-"))

    def say(text: str) -> None:  # what emulate is doing, on stderr (stdout is COMMAND's)
        click.echo(f"emulate: {text}", err=True)

    inline = {"--rate": rate, "--delay": delay, "--loss": loss, "--trace": mm_trace, "--handoff-every": handoff_every}
    given = [k for k, v in inline.items() if v is not None]
    if scenario is not None and given:
        raise click.UsageError(f"{', '.join(given)} build a path without a scenario file; with -s edit the file")
    source = scenario if scenario is not None else _inline_scenario(rate, delay, loss, mm_trace, handoff_every,
                                                                    duration or 60.0)
    t0 = time.monotonic()
    comp = em.compile_source(source, Path(run_dir).resolve() / "scenario", duration)
    if comp.outdir:
        say(f"scenario {comp.name} (seed {comp.seed}) compiled: {comp.paths} path(s), window "
            f"{comp.duration_s:g} s, ground truth in {run_dir}/scenario")
    else:
        say(f"Rattan config {scenario}: {comp.paths} path(s)")
    if scenario is None:
        say(f"inline path: {_describe_inline(rate, delay, loss, mm_trace, handoff_every)}")
    from hsrtcp.lab.scenario import advice

    warnings = list(comp.warnings)
    if comp.events_csv and comp.duration_s:
        warnings += advice.end_outages(comp.events_csv, comp.duration_s)
    w = advice.flow_warning(_client_flow_s(command), duration or comp.duration_s, "the measure client's flow")
    warnings += _inline_warnings(rate, mm_trace) if scenario is None else []
    for w in [*warnings, *([w] if w else [])]:
        click.echo(f"warning: {w}", err=True)
    if comp.paths > 1 and not mptcp:
        say(f"{comp.paths} paths: a single-path connection leaves through path 1 unless it binds 10.1.<p>.1 "
            "(hsrtcp measure client --path p); --mptcp sets up subflows on every path")
    server = shlex.join(shlex.split(right_cmd)) if right_cmd else "the measure server (10.2.1.1:5201)"
    say(f"starting the emulator; on the phone side (10.1.1.1): {shlex.join(list(command))}; "
        f"on the server side: {server}")
    from hsrtcp.lab import bundle, runconfig

    workload = {"kind": "command", "argv": cmd}
    right = shlex.split(right_cmd) if right_cmd else None
    knobs = _parse_sysctls(sysctls)
    versions = bundle.tool_versions(ebpf_ccs=em.ebpf_ccs(workload, right))
    outcome = em.run(comp, run_dir, workload, mptcp=mptcp, sysctls=knobs, duration_s=duration, timeout_s=timeout,
                     right_command=right, passthrough_stdout=True)
    how = "failed: " + "; ".join(outcome.errors).splitlines()[0] if outcome.errors else \
        f"the command exited {outcome.left_rc}"
    say(f"done after {time.monotonic() - t0:.1f} s, {how}; everything was cleaned up")
    # the run directory becomes a bundle like a campaign's (docs/formats/bundle.md)
    client = bundle.client_result(Path(run_dir) / "command.out")
    if client is not None:  # the command was the measure client: its result, as a campaign keeps it
        (Path(run_dir) / "client.json").write_text(json.dumps(client, indent=1))
    meta = {"run_id": Path(run_dir).resolve().name, "flow": None, "mptcp": mptcp, "snaplen": 128,
            "command": list(command), "right_command": right,
            "config": runconfig.config(comp, {"command": list(command), "right_command": right}, mptcp, 128, None,
                                       knobs, None, versions)}
    manifest = bundle.finalize(Path(run_dir).resolve(), outcome, comp, meta, versions)
    say(f"bundle in {run_dir} (manifest.json, capture/, tcpinfo/, {'client.json, ' if client else ''}"
        f"{'radio.csv, events.csv, ' if manifest['radio'] else ''}logs/); next: hsrtcp analyze {run_dir} -o results")
    if outcome.errors:
        raise LabError("; ".join(outcome.errors))
    if outcome.left_rc:
        sys.exit(outcome.left_rc)


def _client_flow_s(command) -> float | None:
    """Seconds the flow of an `hsrtcp measure client` COMMAND lasts (None: another command, or
    a flow of a size)."""
    argv = list(command)
    i = next((k for k in range(len(argv) - 1) if argv[k] == "measure" and argv[k + 1] == "client"), None)
    if i is None:
        return None
    try:
        ctx = measure_client.make_context("client", argv[i + 2:], resilient_parsing=True)
    except click.ClickException:
        return None
    p = ctx.params
    if p.get("duration") is not None:
        return None if p.get("flow_type") in ("size", "sequence") else float(p["duration"])
    if p.get("flow_type", "duration") in ("duration", "udp", "conjunction") or \
            (p.get("flow_type") == "concurrent" and not p.get("size")):
        return 180.0  # the client's default
    return None


def _rates(rate: str | None) -> tuple[float, float]:
    from hsrtcp.lab import rattan

    if rate is None:
        return 10e6, 10e6
    parts = rate.split("/")
    try:
        down = rattan.parse_rate(parts[0])
        up = rattan.parse_rate(parts[1]) if len(parts) == 2 else down
    except (ValueError, IndexError):
        raise click.BadParameter(f"{rate!r}: expected DOWN[/UP] rates such as 10Mbps or 10Mbps/2Mbps",
                                 param_hint="--rate") from None
    if len(parts) > 2 or down < 1000 or up < 1000:
        raise click.BadParameter(f"{rate!r}: expected DOWN[/UP], each at least 1kbps", param_hint="--rate")
    return down, up


def _inline_warnings(rate: str | None, mm_trace: str | None) -> list[str]:
    """What an inline option combination silently drops: with --trace the trace is the
    downlink, so the DOWN part of --rate DOWN[/UP] is not used."""
    if not (rate and mm_trace):
        return []
    down, up = _rates(rate)
    return [f"--rate {rate}: the downlink follows the Mahimahi trace (--trace), {down / 1e6:g} Mbit/s down "
            f"is not used; the uplink is {up / 1e6:g} Mbit/s"]


def _inline_scenario(rate, delay, loss, mm_trace, every, window: float) -> dict:
    """The scenario of emulate's inline options: one carrier at a constant rate (the signal
    model held at its peak: no interference, the lowest spectral efficiency reaches it), a
    fixed one-way delay and loss, optionally a Mahimahi downlink and a handoff every N s."""
    down, up = _rates(rate)
    times = [round(every * k, 3) for k in range(1, int(window / every) + 1) if every * k < window] if every else []
    carrier = {"name": "M", "peak_down_bps": down, "peak_up_bps": up}
    if mm_trace:
        carrier["trace_down"] = str(Path(mm_trace).resolve())
    return {"scenario": {"name": "inline", "duration_s": window},
            "trip": {"speed_kmh": 300.0},
            "link": {"base_owd_ms": 30.0 if delay is None else delay, "loss_down": loss or 0.0,
                     "loss_up": loss or 0.0},
            "radio": {"load": 0.01, "se_max": 0.1, "se_efficiency": 1.0},
            # every handoff alike: a radio-link failure (rlf_p) would turn one into seconds of outage
            "handoff": {"times_s": times, "rlf_p": 0.0} if times else {"count": 0},
            "carriers": [carrier]}


def _describe_inline(rate, delay, loss, mm_trace, every) -> str:
    down, up = _rates(rate)
    cap = f"Mahimahi trace {mm_trace} down, {up / 1e6:g} Mbit/s up" if mm_trace else \
        f"{down / 1e6:g} Mbit/s down, {up / 1e6:g} Mbit/s up"
    return (f"{cap}, {30.0 if delay is None else delay:g} ms one way, loss {loss or 0:g}, "
            + (f"a handoff every {every:g} s" if every else "no handoffs"))


# --------------------------------------------------------------------------- campaign


@click.command()
@click.argument("campaign_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "-o", "out", type=click.Path(file_okay=False), help="Runs directory (required unless --list).")
@click.option("--no-progress", is_flag=True,
              help="No progress bar, only the plain line per run (what a log gets when standard error is "
                   "not a terminal).")
@click.option("--list", "list_only", is_flag=True, help="Only list the runs it would do.")
@click.option("--shard", default=None, metavar="K/N",
              help="Only shard K of N (0-based; whole seed x scenario blocks), for N processes sharing OUT.")
@click.option("--force", is_flag=True,
              help="Delete the bundles in OUT made with another configuration (or not runs of this "
                   "campaign) and make those runs again. Without it such a campaign is refused.")
@click.option("--redo-noisy", is_flag=True,
              help="Make again the runs whose bundle is marked noisy (ran above the campaign's max_load).")
@_lab_errors
def campaign(campaign_file, out, no_progress, list_only, shard, force, redo_noisy) -> None:
    """Run a campaign: scenarios × congestion controls (or [[variants]]) × flow types ×
    repetitions, one bundle per run in OUT/<run_id>/ (format: docs/formats/bundle.md).

    Re-running it into the same OUT runs only what is missing (or failed). A bundle is
    reused only when its recorded configuration (scenario as compiled, workload, knobs,
    software) equals the run's; if the campaign changed, it is refused, naming each run that
    differs: use another OUT, or --force."""
    from hsrtcp.lab import campaign as cp

    c = cp.load(campaign_file)
    shard_kn = None
    if shard is not None:
        try:
            k, n = (int(x) for x in shard.split("/"))
            cp.shard_of([], k, n)
        except ValueError:
            raise click.UsageError(f"--shard must be K/N with 0 <= K < N, got {shard!r}") from None
        shard_kn = (k, n)
    if list_only:
        for r in (cp.shard_of(c.runs(), *shard_kn) if shard_kn else c.runs()):
            click.echo(r["run_id"])
        return
    if not out:
        raise click.UsageError("--out/-o RUNS is required")
    # a ConfigConflict (bundles in OUT of another configuration) is an input error: exit 3
    results = cp.run(c, out, progress=not no_progress, shard=shard_kn, force=force, redo_noisy=redo_noisy)
    failed = [r for r in results if r["status"] == "failed"]
    click.echo(f"{len(results)} runs, {len(failed)} failed; bundles in {out}", err=True)
    for r in failed:
        click.echo(f"  {r['run_id']}: {'; '.join(r['errors'])[:500]}", err=True)
    if failed:
        sys.exit(ExitCode.FAILED)


# --------------------------------------------------------------------------- scenario (other module)


def __getattr__(name: str):
    # `scenario` belongs to hsrtcp.cli.lab_scenario; re-exported lazily so importing this
    # module never fails because of it.
    if name == "scenario":
        try:
            from hsrtcp.cli.lab_scenario import scenario as real
        except ImportError as exc:
            raise AttributeError(f"scenario commands unavailable: {exc}") from exc
        return real
    raise AttributeError(name)
