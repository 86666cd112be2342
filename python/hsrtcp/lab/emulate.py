"""One lab run: an emulated path (Rattan), captures on both ends, a workload, cleanup.

Topology (Isolated mode, P = number of carriers/paths)::

      ns-left-<id> (phone)          ns-rattan-<id> (emulator)           ns-right-<id> (server)
   10.1.1.1 vL1-L ─────── vL1-R ─┐                              ┌─ vR1-L ──────── vR1-R 10.2.1.1
   10.1.2.1 vL2-L ─────── vL2-R ─┤  cells: bw → delay → loss    │
      …  (P paths)               └──── per path and direction ──┘
   tcpdump on every vL<p>-L                                         tcpdump on vR1-R
   measure client / COMMAND                                         measure server

:func:`run` accepts either a scenario (compiled with :mod:`hsrtcp.lab.scenario`) or a
plain Rattan config TOML (a file with a ``[cells]`` table), starts Rattan with the two
agents (:mod:`hsrtcp.lab.agent`) and always cleans up (see :mod:`hsrtcp.lab.netns`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import hsrtcp
from hsrtcp.errors import InputError, LabError
from hsrtcp.lab import netns, rattan


@dataclass
class Compiled:
    """What a run needs from a scenario (the fields of the scenario module's CompiledScenario)."""

    rattan_config: Path
    paths: int
    duration_s: float | None
    radio_csv: Path | None = None
    events_csv: Path | None = None
    name: str = "scenario"
    source: Path | None = None
    seed: int | None = None
    scenario: object = None  # the loaded Scenario, when there is one
    outdir: Path | None = None  # the compiled scenario directory (traces, scenario.json)
    warnings: list = field(default_factory=list)  # hsrtcp.lab.scenario.advice


def compile_source(source: str | Path | dict, outdir: Path, duration_s: float | None = None,
                   seed: int | None = None, start_s: float | None = None) -> Compiled:
    """Turn a scenario TOML/dict or a raw Rattan config into a :class:`Compiled`.

    ``seed`` replaces the scenario's seed (a different trip realisation and loss draws);
    ``start_s`` the window's start in trip seconds. Both are refused for a raw Rattan
    config, whose randomness and timing are fixed in the file."""
    if not isinstance(source, dict):
        path = Path(source)
        if not path.exists():
            raise InputError(f"{path}: scenario or rattan config not found")
        if path.is_dir() or (path.name == "rattan.toml" and (path.parent / "scenario.json").is_file()):
            return _open_compiled(path if path.is_dir() else path.parent, outdir, duration_s, seed, start_s)
        cfg = rattan.load_config(path) if path.is_file() else {}
        if "cells" in cfg:  # a raw Rattan config: use as is
            if seed is not None or start_s is not None:
                raise InputError(f"{path}: a plain Rattan config has no scenario seed or window to vary")
            return Compiled(path, rattan.left_veth_count(cfg), duration_s, name=path.stem, source=path)
    try:
        from hsrtcp.lab import scenario as scenario_mod
        load = scenario_mod.load
    except (ImportError, AttributeError) as exc:
        raise LabError(f"the scenario compiler (hsrtcp.lab.scenario) is not available: {exc}") from exc
    sc = load(source)
    if seed is not None or start_s is not None:
        sc = sc.with_overrides(seed=seed, start_s=start_s)
    from hsrtcp.lab.scenario import advice

    warnings = advice.warnings(sc.with_overrides(duration_s=duration_s) if duration_s else sc)
    outdir.mkdir(parents=True, exist_ok=True)
    comp = sc.compile(outdir, duration=duration_s)
    name = getattr(sc, "name", None) or (Path(source).stem if not isinstance(source, dict) else "scenario")
    return Compiled(Path(comp.rattan_config), int(comp.paths), comp.duration_s,
                    _opt_path(getattr(comp, "radio_csv", None)), _opt_path(getattr(comp, "events_csv", None)),
                    name=str(name), source=None if isinstance(source, dict) else Path(source),
                    seed=getattr(sc, "seed", None), scenario=sc, outdir=_opt_path(getattr(comp, "outdir", None)),
                    warnings=warnings)


def _open_compiled(src: Path, outdir: Path, duration_s: float | None, seed: int | None,
                   start_s: float | None) -> Compiled:
    """A directory ``hsrtcp scenario generate`` wrote (or its rattan.toml): copied into
    ``outdir`` so the run carries its radio log and ground truth like a scenario file's run."""
    from hsrtcp.lab.scenario import CompiledScenario
    from hsrtcp.lab.scenario.config import ScenarioError

    if seed is not None or start_s is not None:
        raise InputError(f"{src}: a compiled scenario has its seed and window fixed; compile it again "
                         f"(hsrtcp scenario generate --seed/--start) or give the scenario file")
    if not (src / "scenario.json").is_file() or not (src / "rattan.toml").is_file():
        raise InputError(f"{src}: not a compiled scenario directory (no scenario.json and rattan.toml; "
                         f"hsrtcp scenario generate writes them)")
    try:
        CompiledScenario.open(src)
        if outdir.resolve() != src.resolve():
            shutil.copytree(src, outdir, dirs_exist_ok=True)
        cs = CompiledScenario.open(outdir)
        name = json.loads(cs.scenario_json.read_text(encoding="utf-8")).get("name") or src.name
    except ScenarioError as exc:
        raise InputError(str(exc)) from None
    warnings = []
    if duration_s is not None and duration_s > cs.duration_s:
        warnings.append(f"{src}: --duration {duration_s:g} s is longer than the compiled window ({cs.duration_s:g} s): "
                        f"after it the path keeps the window's last rate, delay and loss; compile a longer window")
    return Compiled(Path(cs.rattan_config), int(cs.paths), cs.duration_s, Path(cs.radio_csv), Path(cs.events_csv),
                    name=str(name), source=src / "rattan.toml", seed=cs.seed, outdir=Path(cs.outdir),
                    warnings=warnings)


def _opt_path(p) -> Path | None:
    return Path(p) if p else None


@dataclass
class RunOutcome:
    run_dir: Path
    rattan_id: str | None
    rattan_rc: int | None
    left_rc: int | None
    crashed: bool
    timed_out: bool
    interrupted: bool
    leaked: list[str]
    started_at: float
    ended_at: float
    errors: list[str] = field(default_factory=list)
    #: the host's load when the run started and ended (hsrtcp.lab.bundle.host_load)
    load_start: dict | None = None
    load_end: dict | None = None
    #: how Rattan's threads were scheduled (hsrtcp.lab.rattan.RattanResult.realtime)
    emulator_realtime: dict | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def _agent_argv(role: str, run_dir: Path, cores: list[int] | None = None) -> list[str]:
    pkg_root = str(Path(hsrtcp.__file__).resolve().parent.parent)
    # env: the namespaces inherit our environment, but make the import path explicit so an
    # un-installed checkout (PYTHONPATH=python) works too.
    argv = ["env", f"PYTHONPATH={pkg_root}", sys.executable, "-m", "hsrtcp.lab.agent", role, str(run_dir)]
    # taskset: the agent and all it starts (server, client, tcpdump) inherit these cores
    return ["taskset", "-c", ",".join(map(str, cores)), *argv] if cores else argv


def _set_cores(cores) -> set[int]:
    """Pin the calling thread (a child started now inherits it); return its cores before."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cores))
    return before


def ebpf_ccs(workload: dict, right_command: list[str] | None = None) -> list[str]:
    """eBPF congestion controls (hsrtcp.lab.ebpf) a workload names: the flow's cc, or a word in
    the command lines (``--cc hsrbbr``, ``iperf3 -C hsrbbr``)."""
    from hsrtcp.lab import ebpf

    names = set()
    flow = workload.get("flow") or {}
    for cc in [flow.get("cc"), *(flow.get("ccs") or [])]:
        if ebpf.is_ebpf(cc):
            names.add(cc)
    for argv in (workload.get("argv") or [], right_command or []):
        names.update(ebpf.names_in(" ".join(map(str, argv))))
    return sorted(names)


def run(source: str | Path | dict | Compiled, run_dir: str | Path, workload: dict, **kw) -> RunOutcome:
    """Run ``workload`` on the phone side of the emulated path (see :func:`_run`), with the eBPF
    congestion controls it names registered for the run (unregistered afterwards when the lab
    registered them and no other run uses them)."""
    from hsrtcp.lab import ebpf

    netns.require_root()
    with ebpf.loaded(ebpf_ccs(workload, kw.get("right_command"))):
        return _run(source, run_dir, workload, **kw)


def _run(source: str | Path | dict | Compiled, run_dir: str | Path, workload: dict, *, mptcp: bool = False,
         sysctls: dict | None = None, duration_s: float | None = None, timeout_s: float | None = None,
         port: int = 5201, snaplen: int = 128, right_command: list[str] | None = None,
         passthrough_stdout: bool = False, route: dict | None = None, cpus: dict | None = None) -> RunOutcome:
    """Run ``workload`` on the phone side of the emulated path; return what happened.

    ``workload`` is ``{"kind": "measure", "flow": FlowSpec-dict}`` (the measure client) or
    ``{"kind": "command", "argv": [...]}`` (any program; ``HSRTCP_SERVER=host:port`` points at
    the measure server on the right). ``route``: per-route TCP knobs set on both sides
    (``rto_min_ms``, ``quickack``; :func:`hsrtcp.lab.agent.route_knobs`). ``cpus``: ``{"emulator":
    [cores], "endpoints": [cores]}`` pins Rattan and the two agents with what they start
    (hsrtcp.lab.campaign.plan_pinning). Files land in ``run_dir`` (captures in
    ``capture/``, server TCP_INFO in ``server/tcpinfo/``, logs). Raises :class:`LabError`
    for setup problems (not root, tool missing, bad config); an emulator crash or timeout is
    reported in the outcome's ``errors`` after cleanup.
    """
    netns.require_root()
    netns.require_tools("rattan", "tcpdump", "ip")
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    comp = source if isinstance(source, Compiled) else compile_source(source, run_dir / "scenario", duration_s)
    cfg = rattan.load_config(comp.rattan_config)
    cfg.pop("commands", None)
    rattan.validate_config(cfg, comp.rattan_config)
    cfg = rattan.absolutize(cfg, comp.rattan_config.parent)
    paths = rattan.left_veth_count(cfg)
    dur = duration_s or comp.duration_s
    if timeout_s is None:
        flow_time = (workload.get("flow") or {}).get("duration_s") or dur or 60
        timeout_s = float(flow_time) + 90.0
    plan = {"paths": paths, "mptcp": mptcp, "sysctls": sysctls or {}, "snaplen": snaplen, "port": port,
            "workload": workload, "right_command": right_command, "timeout_s": timeout_s, "linger_s": 1.0}
    if route:
        plan["route"] = dict(route)
    for stale in ("server.ready", "left.done", "rattan_id", "agent-left.error", "agent-right.error"):
        (run_dir / stale).unlink(missing_ok=True)
    (run_dir / "plan.json").write_text(json.dumps(plan, indent=1))
    ends = (cpus or {}).get("endpoints")
    config_path = rattan.write_config(cfg, run_dir / "rattan.toml", _agent_argv("left", run_dir, ends),
                                      _agent_argv("right", run_dir, ends))
    extra = ["--left-stdout"] if passthrough_stdout else []
    errors: list[str] = []
    interrupted = False
    r = rattan.Rattan(config_path, run_dir / "rattan.log", extra_args=extra,
                      stdout=sys.stdout if passthrough_stdout else None, id_file=run_dir / "rattan_id")
    r.on_cleanup(lambda: netns.pidfile_cleanup(run_dir / "pids", str(run_dir)))
    from hsrtcp.lab.bundle import host_load

    load_start = host_load()
    emu = (cpus or {}).get("emulator")
    before = _set_cores(emu) if emu else None  # Rattan inherits the cores at its start
    try:
        with netns.signals_raise():
            with r:
                if before is not None:
                    os.sched_setaffinity(0, before)
                    before = None
                res = r.wait(timeout_s)
    except KeyboardInterrupt:
        interrupted = True
        errors.append("interrupted (Ctrl-C or SIGTERM); everything was cleaned up")
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)
    res = r.result
    assert res is not None
    if res.crashed:
        errors.append(f"rattan crashed (panic; exit {res.returncode}); namespaces it left were removed: {res.leaked}\n"
                      f"{r.log_tail()}")
    elif res.timed_out:
        errors.append(f"run exceeded its time limit of {timeout_s:.0f} s and was stopped")
    elif res.returncode not in (0, None) and not interrupted:
        errors.append(f"rattan exited with {res.returncode}:\n{r.log_tail()}")
    for role in ("left", "right"):
        err = run_dir / f"agent-{role}.error"
        if err.exists():
            errors.append(f"{role} side: {err.read_text().strip()}")
    left_rc = None
    if (run_dir / "left.done").exists():
        try:
            left_rc = int((run_dir / "left.done").read_text().strip())
        except ValueError:
            left_rc = None
    outcome = RunOutcome(run_dir, res.rattan_id, res.returncode, left_rc, res.crashed, res.timed_out,
                         interrupted or res.interrupted, res.leaked, res.started_at, res.ended_at, errors,
                         load_start, host_load(), emulator_realtime=res.realtime)
    (run_dir / "outcome.json").write_text(json.dumps(
        {k: (str(v) if isinstance(v, Path) else v) for k, v in outcome.__dict__.items()}, indent=1))
    if interrupted:
        raise KeyboardInterrupt("lab run interrupted; cleaned up")
    return outcome


def copy_if(src: Path | None, dst: Path) -> Path | None:
    if src is None or not Path(src).is_file():
        return None
    shutil.copyfile(src, dst)
    return dst
