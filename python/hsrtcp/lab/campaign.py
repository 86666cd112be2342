"""Campaigns: scenarios × congestion controls × flow types × repetitions, one bundle per run.

A campaign file (TOML; paths are relative to the file)::

    [campaign]
    name = "cc-compare"
    scenarios = ["../scenarios/smoke.toml"]   # scenario TOMLs or raw Rattan configs
    ccs = ["cubic", "bbr"]
    repetitions = 2
    mptcp = false          # true: MPTCP sockets; subflows over every path of the scenario
    duration_s = 25        # optional: override the scenario's duration
    reseed = false         # true: repetition r uses scenario seed + r - 1 (new trip draws);
                           # false (default): every repetition and cc sees the same path
    first_repetition = 1   # optional: number repetitions from here (a campaign that extends
                           # another one's draws: its trips are new, its run ids distinct)

    [sysctls]              # per-namespace knobs, applied on both sides
    "net.ipv4.tcp_frto" = 2

    [mptcp]                # optional MPTCP knobs (docs/mptcp.md §3)
    endpoint_flags = ["subflow", "backup"]   # the phone's endpoints of paths 2..P
    subflows = 8           # ip mptcp limits, both sides
    add_addr_accepted = 8

    [[flows]]
    type = "duration"      # duration | size | sequence | concurrent | udp | conjunction
                           # (conjunction: seed 004's MPTCP + single-path instance, docs/mptcp.md)
    duration_s = 20
    [[flows]]
    type = "size"
    size = "2MB"
    path = 2               # the carrier a single-path flow uses (required when the scenario
                           # has several; binds the phone address 10.1.<path>.1)

A misspelt key is named with the key it was probably meant to be, and so is a sysctl the
kernel does not have.

A quiet lab (docs/lab.md, "A quiet lab")::

    [campaign]
    max_load = 2           # the host's 1-min load average a run may start and end under
                           # (default: the number of CPUs)
    load_wait_s = 300      # how long a run waits for the load to fall under it (default 0)
    pin = true             # the emulator and the endpoints on cores of their own, where
                           # the machine has two per shard (default true)

A run above ``max_load`` at its start (after the wait) or its end is marked ``noisy`` in its
manifest (``host``); study and findings leave noisy runs out unless told to keep them.

Checks declared before the runs (docs/findings.md): ``[checks] names = [...]``, recorded in
every bundle, so a report can tell a check named before the runs from one added afterwards.

Arms of a paired study (baseline plus one factor at a time, docs/findings.md) are
``[[variants]]`` instead of ``ccs``: each names a congestion control and its own knobs, and
a scenario entry may be a table that picks a window of the trip::

    [campaign]
    scenarios = [{file = "../scenarios/bt-300kmh.toml", start_s = 800, label = "cruise"}]
    reseed = true

    [[variants]]
    name = "cubic-frto0"     # run ids and the manifest's "variant" carry the name
    cc = "cubic"
    sysctls = {"net.ipv4.tcp_frto" = 0}     # on top of the campaign's [sysctls]
    route = {rto_min_ms = 50, quickack = true}  # `ip route change ... rto_min 50ms quickack 1`

With variants the runs go in blocks: repetition (trip seed), then scenario, then every
variant, so the arms of one pair run minutes apart and a campaign stopped early leaves
complete blocks.

Runs go to ``RUNS/<run_id>/`` (``<index>_<scenario>_<cc>_<flow>_r<rep>``), each built in a
``RUNS/.partial-<run_id>`` directory and renamed when complete, so an interrupted campaign
never leaves a half bundle under a final name, and re-running the same campaign skips the
runs already done — only those whose recorded configuration (:mod:`hsrtcp.lab.runconfig`)
equals the run's; a changed campaign is refused (:class:`ConfigConflict`) unless ``force``.
Runs are sequential: one emulator at a time keeps the machine quiet.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hsrtcp.bundle import has_manifest, manifest
from hsrtcp.errors import InputError
from hsrtcp.lab import bundle, emulate, netns, runconfig
from hsrtcp.lab.measure import FLOW_TYPES, FlowSpec, parse_size
from hsrtcp.lab.scenario import advice
from hsrtcp.lab.scenario.config import read_toml

_KNOWN_CAMPAIGN_KEYS = {"name", "scenarios", "ccs", "repetitions", "mptcp", "duration_s", "snaplen", "reseed",
                        "first_repetition", "max_load", "load_wait_s", "pin"}
_TOP_KEYS = {"campaign", "sysctls", "mptcp", "flows", "variants", "checks"}
_KNOWN_SCENARIO_KEYS = {"file", "start_s", "label"}
_KNOWN_VARIANT_KEYS = {"name", "cc", "sysctls", "route"}
#: per-route TCP knobs a variant may set (ip-route(8) metrics; applied by the lab agents)
ROUTE_KEYS = {"rto_min_ms": (1, 120_000), "quickack": None}
_KNOWN_FLOW_KEYS = {"type", "duration_s", "size", "size_bytes", "count", "gap_s", "direction", "quickack",
                    "rate_bps", "payload_bytes", "label", "path", "ccs"}


def _unknown(where: str, keys, known) -> InputError:
    """An unknown-keys error that suggests the known key a typo was meant to be."""
    hints = []
    for k in sorted(keys):
        close = difflib.get_close_matches(str(k), sorted(known), n=1)
        hints.append(f"{k!r} (did you mean {close[0]!r}?)" if close else repr(k))
    return InputError(f"{where}: unknown key{'s' if len(hints) > 1 else ''} {', '.join(hints)} "
                      f"(known: {', '.join(sorted(known))})")


def _known_keys(where: str, table: dict, known) -> None:
    """Raise :func:`_unknown`'s error when ``table`` has keys outside ``known``."""
    unknown = set(table) - set(known)
    if unknown:
        raise _unknown(where, unknown, known)


def _check_sysctls(where: str, sysctls: dict) -> None:
    """Every sysctl a campaign sets exists (the namespaces have the host's net.* names); a
    misspelt one is named with the closest existing name."""
    for key in sysctls:
        rel = Path(*str(key).split("."))
        if (Path("/proc/sys") / rel).is_file():
            continue
        parent = Path("/proc/sys") / rel.parent
        names = [".".join([*rel.parent.parts, n.name]) for n in parent.iterdir()] if parent.is_dir() else []
        close = difflib.get_close_matches(str(key), names, n=1)
        raise InputError(f"{where}: no sysctl {key!r} on this kernel"
                         + (f" (did you mean {close[0]!r}?)" if close else ""))


@dataclass
class Campaign:
    name: str
    scenarios: list[Path]
    ccs: list[str]
    flows: list[dict]
    repetitions: int = 1
    first_repetition: int = 1
    mptcp: bool = False
    duration_s: float | None = None
    sysctls: dict = field(default_factory=dict)
    snaplen: int = 128
    reseed: bool = False
    mptcp_options: dict = field(default_factory=dict)
    source: Path | None = None
    #: per scenario (same order): window start in trip seconds and a name for run ids, or None
    scenario_starts: list = field(default_factory=list)
    scenario_labels: list = field(default_factory=list)
    #: the arms of a paired design ({"name", "cc", "sysctls", "route"}); empty: ``ccs`` alone
    variants: list[dict] = field(default_factory=list)
    #: the load bound of a run (None: the number of CPUs when it runs), the wait for it, pinning
    max_load: float | None = None
    load_wait_s: float = 0.0
    pin: bool = True
    #: the checks named before the runs ([checks] names); None: the file has no [checks]
    checks: list[str] | None = None

    def scenario_label(self, i: int) -> str:
        labels = self.scenario_labels
        return labels[i] if i < len(labels) and labels[i] else _slug(self.scenarios[i].stem)

    def scenario_start(self, i: int) -> float | None:
        return self.scenario_starts[i] if i < len(self.scenario_starts) else None

    def _repetitions(self) -> range:
        return range(self.first_repetition, self.first_repetition + self.repetitions)

    def runs(self) -> list[dict]:
        out = []
        if self.variants:
            # blocks: a trip seed, a scenario, then every arm (see the module docstring)
            combos = itertools.product(self._repetitions(), range(len(self.scenarios)),
                                       self.variants, self.flows)
            for i, (rep, si, var, flow) in enumerate(combos, 1):
                run_id = f"{i:03d}_{_slug(self.scenario_label(si))}_{_slug(var['name'])}_{flow_label(flow)}_r{rep}"
                out.append({"run_id": run_id, "scenario": self.scenarios[si], "scenario_index": si,
                            "cc": var["cc"], "variant": var, "flow": flow, "repetition": rep})
            return out
        combos = itertools.product(enumerate(self.scenarios), self.ccs, self.flows, self._repetitions())
        for i, ((si, sc), cc, flow, rep) in enumerate(combos, 1):
            run_id = f"{i:03d}_{_slug(self.scenario_label(si))}_{cc}_{flow_label(flow)}_r{rep}"
            out.append({"run_id": run_id, "scenario": sc, "scenario_index": si, "cc": cc, "flow": flow,
                        "repetition": rep})
        return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-")[:40] or "x"


def flow_label(flow: dict) -> str:
    t = flow["type"]
    if flow.get("label"):
        return _slug(flow["label"])
    if t in ("size", "sequence") or (t == "concurrent" and flow.get("size_bytes")):
        size = flow["size_bytes"]
        human = f"{size // 1000**2}MB" if size % 1000**2 == 0 else f"{size // 1000}KB" if size % 1000 == 0 else f"{size}B"
        return f"{t}-{human}" + (f"x{flow.get('count', 1)}" if t != "size" else "")
    if t == "concurrent":
        return f"concurrent-{flow.get('count', 1)}x{flow.get('duration_s') or 'scen'}s"
    return f"{t}-{flow.get('duration_s') or 'scen'}s"


def load(path: str | Path) -> Campaign:
    """Parse and validate a campaign file; errors name the file and the offending key."""
    path = Path(path)
    raw = read_toml(path, "campaign", InputError)
    c = raw.get("campaign")
    if not isinstance(c, dict):
        raise InputError(f"{path}: no [campaign] table")
    _known_keys(f"{path}: [campaign]", c, _KNOWN_CAMPAIGN_KEYS)
    _known_keys(f"{path}: top level", raw, _TOP_KEYS)
    scen = c.get("scenarios")
    if not isinstance(scen, list) or not scen:
        raise InputError(f"{path}: [campaign] scenarios must be a non-empty list of files")
    scenarios, starts, labels = [], [], []
    for k, s in enumerate(scen):
        start = label = None
        if isinstance(s, dict):
            where = f"{path}: [campaign] scenarios #{k + 1}"
            _known_keys(where, s, _KNOWN_SCENARIO_KEYS)
            if not isinstance(s.get("file"), str):
                raise InputError(f"{where}: needs file = \"<scenario.toml>\"")
            start = s.get("start_s")
            if start is not None and (isinstance(start, bool) or not isinstance(start, (int, float))
                                      or not 0 <= start <= 12 * 3600):
                raise InputError(f"{where}: start_s must be a trip time within 0..43200 s")
            label = s.get("label")
            if label is not None and (not isinstance(label, str) or not label.strip()):
                raise InputError(f"{where}: label must be a non-empty name")
            s = s["file"]
        elif not isinstance(s, str):
            raise InputError(f"{path}: [campaign] scenarios #{k + 1} must be a file name or a table with file")
        p = Path(s) if Path(s).is_absolute() else (path.parent / s)
        if not p.is_file():
            raise InputError(f"{path}: scenario {s!r} not found (looked at {p})")
        scenarios.append(p.resolve())
        starts.append(None if start is None else float(start))
        labels.append(label)
    variants = _variants(path, raw.get("variants"))
    if variants and "ccs" in c:
        raise InputError(f"{path}: give either [campaign] ccs or [[variants]] (each variant names its cc)")
    ccs = [v["cc"] for v in variants] if variants else c.get("ccs", ["cubic"])
    if not isinstance(ccs, list) or not ccs or not all(isinstance(x, str) for x in ccs):
        raise InputError(f"{path}: [campaign] ccs must be a list of names, e.g. [\"cubic\", \"bbr\"]")
    from hsrtcp.lab.measure import available_ccs

    from hsrtcp.lab import ebpf  # eBPF algorithms are registered per run by emulate.run

    offered = available_ccs() + [n for n in ebpf.ALGORITHMS if n not in available_ccs()]
    for cc in dict.fromkeys(ccs):
        if ebpf.is_ebpf(cc) and cc not in available_ccs() and ebpf.missing_toolchain():
            raise InputError(f"{path}: congestion control {cc!r} is built with eBPF here, but: "
                             f"{ebpf.missing_toolchain()}")
        if cc not in offered:
            raise InputError(f"{path}: congestion control {cc!r} is not available here (kernel offers {offered})")
    reps = c.get("repetitions", 1)
    if not isinstance(reps, int) or not 1 <= reps <= 1000:
        raise InputError(f"{path}: [campaign] repetitions must be a whole number in 1..1000")
    first_rep = c.get("first_repetition", 1)
    if not isinstance(first_rep, int) or isinstance(first_rep, bool) or not 1 <= first_rep <= 1000:
        raise InputError(f"{path}: [campaign] first_repetition must be a whole number in 1..1000")
    flows_raw = raw.get("flows", [{"type": "duration"}])
    if not isinstance(flows_raw, list) or not flows_raw:
        raise InputError(f"{path}: [[flows]] must list at least one flow")
    flows = []
    for i, f in enumerate(flows_raw):
        where = f"{path}: [[flows]] #{i + 1}"
        if not isinstance(f, dict):
            raise InputError(f"{where}: must be a table")
        _known_keys(where, f, _KNOWN_FLOW_KEYS)
        if f.get("type") not in FLOW_TYPES:
            raise InputError(f"{where}: type must be one of {FLOW_TYPES}")
        f = dict(f)
        if "size" in f:
            try:
                f["size_bytes"] = parse_size(f.pop("size"))
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from exc
        if "path" in f and (isinstance(f["path"], bool) or not isinstance(f["path"], int) or not 1 <= f["path"] <= 8):
            raise InputError(f"{where}: path must be a path number within 1..8 (the carrier, 10.1.<path>.1)")
        if "path" in f and (c.get("mptcp") or f["type"] == "conjunction"):
            raise InputError(f"{where}: path chooses the path of a single-path flow; an MPTCP flow uses every path")
        flows.append(f)
    sysctls = raw.get("sysctls", {})
    if not isinstance(sysctls, dict) or not all(str(k).startswith("net.") for k in sysctls):
        raise InputError(f"{path}: [sysctls] may only hold per-namespace net.* keys")
    _check_sysctls(f"{path}: [sysctls]", sysctls)
    for i, v in enumerate(variants):
        _check_sysctls(f"{path}: [[variants]] #{i + 1} sysctls", v["sysctls"])
    mptcp_options = _mptcp_options(raw.get("mptcp", {}), path)
    duration = c.get("duration_s")
    if duration is not None and (not isinstance(duration, (int, float)) or not 1 <= duration <= 3600):
        raise InputError(f"{path}: [campaign] duration_s must be within 1..3600 seconds")
    max_load = c.get("max_load")
    if max_load is not None and (isinstance(max_load, bool) or not isinstance(max_load, (int, float))
                                 or not 0 < max_load <= 10_000):
        raise InputError(f"{path}: [campaign] max_load must be a load average above 0 (e.g. the number of CPUs)")
    wait = c.get("load_wait_s", 0)
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait <= 86_400:
        raise InputError(f"{path}: [campaign] load_wait_s must be within 0..86400 seconds")
    pin = c.get("pin", True)
    if not isinstance(pin, bool):
        raise InputError(f"{path}: [campaign] pin must be true or false")
    checks = _checks(path, raw.get("checks"))
    return Campaign(name=str(c.get("name", path.stem)), scenarios=scenarios, ccs=ccs, flows=flows,
                    repetitions=reps, first_repetition=first_rep, mptcp=bool(c.get("mptcp", False)), duration_s=duration,
                    sysctls=dict(sysctls), snaplen=int(c.get("snaplen", 128)), reseed=bool(c.get("reseed", False)),
                    mptcp_options=mptcp_options,
                    source=path.resolve(), scenario_starts=starts, scenario_labels=labels, variants=variants,
                    max_load=None if max_load is None else float(max_load), load_wait_s=float(wait), pin=pin,
                    checks=checks)


def _checks(path: Path, raw) -> list[str] | None:
    """``[checks] names``: the checks the campaign's report will make, named before it runs
    (names as hsrtcp.findings.runs.check_name writes them; unique, non-empty)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: [checks] must be a table with names = [\"...\", ...]")
    _known_keys(f"{path}: [checks]", raw, {"names"})
    names = raw.get("names")
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise InputError(f"{path}: [checks] names must be a list of check names")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"{path}: [checks] names gives {dup[0]!r} twice")
    return [n.strip() for n in names]


#: how often a run waiting for a quiet host looks at the load again
LOAD_POLL_S = 10.0


def wait_for_quiet(max_load: float, wait_s: float, read=None, sleep=time.sleep,
                   clock=time.monotonic) -> tuple[dict, float]:
    """Wait (at most ``wait_s``) until the host's 1-min load average is at most ``max_load``;
    return the last reading (:func:`hsrtcp.lab.bundle.host_load`) and the seconds waited. An
    unreadable load does not wait."""
    read = read or bundle.host_load
    t0 = clock()
    now = read()
    while now["loadavg_1min"] is not None and now["loadavg_1min"] > max_load and clock() - t0 < wait_s:
        sleep(min(LOAD_POLL_S, max(0.0, wait_s - (clock() - t0))))
        now = read()
    return now, round(clock() - t0, 1)


def host_record(start: dict, end: dict, max_load: float, waited_s: float, pinned: dict) -> dict:
    """The manifest's ``host``: the load at the run's start and end, the bound, the wait,
    the cores it was pinned to, and whether it is ``noisy`` (above the bound at either end)
    with the reason."""
    why = [f"load {r['loadavg_1min']:g} > {max_load:g} at the {when}"
           + (f" (after waiting {waited_s:g} s)" if when == "start" and waited_s else "")
           for when, r in (("start", start), ("end", end))
           if r.get("loadavg_1min") is not None and r["loadavg_1min"] > max_load]
    return {"loadavg_1min_start": start.get("loadavg_1min"), "loadavg_1min_end": end.get("loadavg_1min"),
            "cpus": start.get("cpus"), "max_load": max_load, "load_wait_s": waited_s, "pinned": pinned,
            "noisy": bool(why), "noisy_why": "; ".join(why) or None}


def plan_pinning(cores: list[int], shard: tuple[int, int] | None = None) -> dict:
    """The cores of this process's runs: the emulator on one, the endpoints (agents, measure
    server and client, tcpdump) on another, each shard its own two, and the lowest core left
    to the rest of the machine when there are enough. Too few cores: nothing pinned, and why."""
    k, n = shard or (0, 1)
    cores = sorted(cores)
    if len(cores) >= 2 * n + 1:
        emu, ends = cores[1 + 2 * k], cores[2 + 2 * k]
    elif len(cores) >= 2 * n:
        emu, ends = cores[2 * k + 1], cores[2 * k]
    else:
        return {"emulator": None, "endpoints": None,
                "why": f"{len(cores)} core(s) for {n} shard(s): pinning needs 2 per shard"}
    return {"emulator": [emu], "endpoints": [ends]}


_ENDPOINT_FLAGS = {"subflow", "signal", "backup", "fullmesh"}


def _mptcp_options(raw: object, path: Path) -> dict:
    """The campaign's ``[mptcp]`` table, checked (docs/mptcp.md §3)."""
    if not isinstance(raw, dict):
        raise InputError(f"{path}: [mptcp] must be a table")
    _known_keys(f"{path}: [mptcp]", raw, {"endpoint_flags", "subflows", "add_addr_accepted"})
    flags = raw.get("endpoint_flags", ["subflow"])
    if not isinstance(flags, list) or not flags or not set(flags) <= _ENDPOINT_FLAGS:
        raise InputError(f"{path}: [mptcp] endpoint_flags must be a list of {sorted(_ENDPOINT_FLAGS)}")
    if "subflow" not in flags:
        raise InputError(f"{path}: [mptcp] endpoint_flags needs 'subflow' (else the phone opens no subflow "
                         "on the other paths)")
    for key in ("subflows", "add_addr_accepted"):
        v = raw.get(key, 8)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 8:
            raise InputError(f"{path}: [mptcp] {key} must be a whole number in 0..8 (the kernel's maximum)")
    return dict(raw)


def _variants(path: Path, raw) -> list[dict]:
    """The ``[[variants]]`` of a campaign, checked: unique names, a cc, net.* sysctls and
    known route knobs (:data:`ROUTE_KEYS`)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: [[variants]] must list at least one variant")
    out, names = [], set()
    for i, v in enumerate(raw):
        where = f"{path}: [[variants]] #{i + 1}"
        if not isinstance(v, dict):
            raise InputError(f"{where}: must be a table")
        _known_keys(where, v, _KNOWN_VARIANT_KEYS)
        name = v.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", name):
            raise InputError(f"{where}: name must match [A-Za-z0-9][A-Za-z0-9_.-]{{0,39}}")
        if name in names:
            raise InputError(f"{where}: variant name {name!r} given twice")
        names.add(name)
        if not isinstance(v.get("cc"), str):
            raise InputError(f"{where}: needs cc = \"<congestion control>\"")
        sysctls = v.get("sysctls", {})
        if not isinstance(sysctls, dict) or not all(str(k).startswith("net.") for k in sysctls):
            raise InputError(f"{where}: sysctls may only hold per-namespace net.* keys")
        route = v.get("route", {})
        if not isinstance(route, dict):
            raise InputError(f"{where}: route must be a table, e.g. {{rto_min_ms = 50}}")
        for key, val in route.items():
            if key not in ROUTE_KEYS:
                close = difflib.get_close_matches(key, sorted(ROUTE_KEYS), n=1)
                raise InputError(f"{where}: route key {key!r} unknown"
                                 + (f" (did you mean {close[0]!r}?)" if close else "")
                                 + f" (known: {sorted(ROUTE_KEYS)})")
            bounds = ROUTE_KEYS[key]
            if bounds is None:
                if not isinstance(val, bool):
                    raise InputError(f"{where}: route {key} must be true or false")
            elif isinstance(val, bool) or not isinstance(val, int) or not bounds[0] <= val <= bounds[1]:
                raise InputError(f"{where}: route {key} must be a whole number within {bounds[0]}..{bounds[1]}")
        out.append({"name": name, "cc": v["cc"], "sysctls": dict(sysctls), "route": dict(route)})
    return out


def _flow_spec(flow: dict, cc: str, mptcp: bool, duration: float | None) -> FlowSpec:
    f = dict(flow)
    if f["type"] in ("duration", "udp", "concurrent", "conjunction") and not f.get("duration_s") and not f.get("size_bytes"):
        f["duration_s"] = duration or 180.0
    if f["type"] in ("size", "sequence"):
        f.setdefault("duration_s", None)
    spec = FlowSpec(**f, cc=cc, mptcp=mptcp)
    return spec.validate()


def shard_of(runs: list[dict], k: int, n: int) -> list[dict]:
    """The runs of shard ``k`` of ``n`` (0-based): whole blocks of a trip seed and a scenario
    (every arm of a pair in the same shard), block i going to shard i mod n."""
    if not (isinstance(k, int) and isinstance(n, int) and n >= 1 and 0 <= k < n):
        raise ValueError(f"shard must be K/N with 0 <= K < N, got {k}/{n}")
    blocks: dict[tuple, int] = {}
    out = []
    for r in runs:
        b = blocks.setdefault((r["repetition"], r.get("scenario_index", 0)), len(blocks))
        if b % n == k:
            out.append(r)
    return out


class ConfigConflict(InputError):
    """The output directory holds bundles made with another configuration (or runs that are
    not this campaign's): nothing was run. The message names every such run and what differs."""

    def __init__(self, message: str, runs: list[str]):
        super().__init__(message)
        self.runs = runs


def _bundle_state(final: Path, wanted: dict, redo_noisy: bool = False) -> tuple[str, str]:
    """(state, why) of the bundle at ``final`` for a run whose configuration is ``wanted``:
    ``missing``, ``done`` (complete, same configuration), ``failed``, ``broken`` or, with
    ``redo_noisy``, ``noisy`` (run it again), ``differs`` (made with another configuration)."""
    if not has_manifest(final):
        return "missing", "no bundle yet"
    try:
        m = manifest(final)
    except InputError as exc:
        return "broken", f"unreadable manifest ({exc})"
    diff = runconfig.differences(m.get("config"), wanted)
    if diff:
        return "differs", "; ".join(diff)
    if m.get("status") != "ok":
        errors = m.get("errors") or ["no reason recorded"]
        return "failed", "the earlier run failed: " + "; ".join(errors).splitlines()[0][:300]
    problems = bundle.check(final)
    if problems:
        return "broken", f"incomplete bundle ({problems[0]})"
    host = m.get("host") if isinstance(m.get("host"), dict) else {}
    if host.get("noisy"):
        if redo_noisy:
            return "noisy", f"the earlier run was noisy ({host.get('noisy_why')})"
        return "done", f"complete bundle with the same configuration (noisy: {host.get('noisy_why')})"
    return "done", "complete bundle with the same configuration"


def _prepare(campaign: Campaign, r: dict, out: Path, compiled: dict, versions: dict) -> dict:
    """Everything a run needs before it starts: its compiled path, flow spec, knobs and the
    configuration it will record (runconfig)."""
    sc = r["scenario"]
    si = r.get("scenario_index", 0)
    start = campaign.scenario_start(si)
    key = (sc, start, r["repetition"] if campaign.reseed else 1)
    if key not in compiled:
        seed = None
        if campaign.reseed:
            from hsrtcp.lab import scenario as scenario_mod

            seed = scenario_mod.load(sc).seed + r["repetition"] - 1
        name = _slug(campaign.scenario_label(si)) + (f"-seed{seed}" if seed is not None else "")
        compiled[key] = emulate.compile_source(sc, out / ".scenarios" / name, campaign.duration_s, seed=seed,
                                               **({"start_s": start} if start is not None else {}))
    comp = compiled[key]
    # a conjunction instance always needs the MPTCP endpoints of every path
    mptcp = campaign.mptcp or r["flow"]["type"] == "conjunction"
    spec = _flow_spec(r["flow"], r["cc"], mptcp, campaign.duration_s or comp.duration_s)
    where = f"{campaign.source or campaign.name}: [[flows]] #{campaign.flows.index(r['flow']) + 1}"
    if not mptcp and spec.path is None and comp.paths > 1:
        raise InputError(f"{where}: scenario {comp.name} has {comp.paths} paths (carriers) and a single-path flow "
                         f"uses one: choose it with path = 1..{comp.paths} (or mptcp = true to use them all)")
    if spec.path is not None and spec.path > comp.paths:
        raise InputError(f"{where}: path = {spec.path}, but scenario {comp.name} has {comp.paths} path(s)")
    warnings = list(comp.warnings)
    flow_s = spec.duration_s if spec.type in ("duration", "udp", "conjunction") or \
        (spec.type == "concurrent" and not spec.size_bytes) else None
    w = advice.flow_warning(flow_s, comp.duration_s, f"{where} ({spec.type})")
    if w:
        warnings.append(w)
    variant = r.get("variant")
    sysctls = {**campaign.sysctls, **(variant["sysctls"] if variant else {})}
    route = variant["route"] if variant and variant["route"] else None
    mptcp_opt = (campaign.mptcp_options or True) if mptcp else False
    cfg = runconfig.config(comp, spec.to_dict(), mptcp_opt, campaign.snaplen, r["cc"], sysctls, route, versions)
    return {**r, "compiled": comp, "mptcp": mptcp, "mptcp_opt": mptcp_opt, "spec": spec, "sysctls": sysctls,
            "route": route, "scenario_start": start, "config": cfg, "warnings": warnings}


def _conflict_message(out: Path, campaign: Campaign, conflicts: list[tuple[str, str]]) -> str:
    lines = [f"{out}: {len(conflicts)} bundle(s) there were not made by this campaign "
             f"({campaign.source or campaign.name}) as it is now:"]
    lines += [f"  {rid}: {why}" for rid, why in conflicts[:50]]
    if len(conflicts) > 50:
        lines.append(f"  ... and {len(conflicts) - 50} more")
    lines.append("Nothing was run. Give the changed campaign another output directory (-o), or run it with "
                 "--force to delete these bundles and make the runs again.")
    return "\n".join(lines)


def run(campaign: Campaign, out: str | Path, progress: bool = True, keep_failed: bool = True,
        on_result=None, shard: tuple[int, int] | None = None, force: bool = False,
        quiet: bool = False, redo_noisy: bool = False) -> list[dict]:
    """Run every combination; return one summary dict per run (``run_id``, ``status``, ``path``).

    A bundle already in ``out`` is reused only when it is complete, its run succeeded and
    its recorded configuration (:mod:`hsrtcp.lab.runconfig`: scenario, workload, knobs,
    software) equals the run's now; failed and incomplete bundles are run again. When a
    bundle was made with another configuration, or a bundle is not a run of this campaign,
    :class:`ConfigConflict` is raised before anything runs, naming each of them and what
    differs; ``force=True`` deletes those bundles instead and makes the runs again. So the
    folder's ``campaign.toml`` (written once the check passed) always describes its bundles.
    Ctrl-C stops after cleaning up the current run (its partial directory is removed) and
    re-raises.

    ``shard = (k, n)``: only the runs of :func:`shard_of`, so that n processes share one
    campaign directory (each recovers only its own runs' partial directories). Whether
    concurrent runs distort each other depends on the machine: docs/lab.md says how to check.

    A quiet lab (docs/lab.md): each run waits up to ``campaign.load_wait_s`` for the host's
    load to fall to ``campaign.max_load`` (default: the number of CPUs); the load at its start
    and end, the bound and the cores it was pinned to (:func:`plan_pinning`) go into its
    manifest's ``host``, with ``noisy`` when it ran above the bound. A noisy bundle counts as
    done when the campaign is run again, unless ``redo_noisy``.

    Progress goes to standard error (:class:`_Progress`): a line per run (started, finished
    with its numbers, skipped or failed and why); ``progress=True`` adds a bar on a
    terminal; ``quiet=True`` says nothing.
    """
    netns.require_root("a campaign")
    netns.require_tools("rattan", "tcpdump", "ip")
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    all_runs = campaign.runs()
    runs = shard_of(all_runs, *shard) if shard else all_runs
    recover_partials(out, only={r["run_id"] for r in runs} if shard else None)
    versions = bundle.tool_versions(ebpf_ccs=[r["cc"] for r in runs])
    compiled: dict[tuple, emulate.Compiled] = {}
    prepared = [_prepare(campaign, r, out, compiled, versions) for r in runs]
    states = [_bundle_state(out / r["run_id"], r["config"], redo_noisy) for r in prepared]
    ids = {r["run_id"] for r in all_runs}
    conflicts = [(r["run_id"], why) for r, (state, why) in zip(prepared, states) if state == "differs"]
    conflicts += [(d.name, "not a run of this campaign") for d in sorted(out.iterdir())
                  if d.is_dir() and not d.name.startswith(".") and d.name not in ids
                  and has_manifest(d)]
    if conflicts and not force:
        raise ConfigConflict(_conflict_message(out, campaign, conflicts), [c[0] for c in conflicts])
    for rid, _ in conflicts:
        shutil.rmtree(out / rid)
    (out / "campaign.json").write_text(json.dumps(
        {"name": campaign.name, "source": str(campaign.source), "runs": [r["run_id"] for r in all_runs]}, indent=1))
    if campaign.source and campaign.source.is_file():
        shutil.copyfile(campaign.source, out / "campaign.toml")

    summaries: list[dict] = []
    prog = _Progress(len(runs), bar=progress, quiet=quiet)
    todo = sum(1 for s, _ in states if s != "done")
    prog.line(f"campaign {campaign.name}: {len(runs)} runs, {len(runs) - todo} already done, {todo} to make; "
              f"bundles in {out}")
    max_load = campaign.max_load if campaign.max_load is not None else float(os.cpu_count() or 1)
    pinned = (plan_pinning(sorted(os.sched_getaffinity(0)), shard) if campaign.pin
              else {"emulator": None, "endpoints": None, "why": "pin = false in the campaign"})
    if pinned["emulator"] is not None and not netns.find_tool("taskset"):
        pinned = {"emulator": None, "endpoints": None, "why": "taskset (util-linux) not found"}
    prog.line(f"quiet lab: a run above load {max_load:g} "
              + (f"waits up to {campaign.load_wait_s:g} s, then " if campaign.load_wait_s else "")
              + "is marked noisy; "
              + (f"emulator on core {pinned['emulator'][0]}, endpoints on core {pinned['endpoints'][0]}"
                 if pinned["emulator"] is not None else f"nothing pinned ({pinned['why']})"))
    for w in dict.fromkeys(w for r in prepared for w in r["warnings"]):
        prog.line(f"warning: {w}")
    try:
        for r, (state, why) in zip(prepared, states):
            final = out / r["run_id"]
            if state == "done":
                summaries.append({"run_id": r["run_id"], "status": "skipped (already done)", "path": str(final)})
                prog.skipped(r["run_id"], why)
                continue
            comp = r["compiled"]
            partial = out / f".partial-{r['run_id']}"
            shutil.rmtree(partial, ignore_errors=True)
            variant = r.get("variant")
            extra = {"route": r["route"]} if r["route"] else {}
            if pinned["emulator"] is not None:
                extra["cpus"] = pinned
            load_start, waited = wait_for_quiet(max_load, campaign.load_wait_s)
            t_start = time.monotonic()
            prog.start(r["run_id"], _what(r) + (f" (again: {why})" if state in ("failed", "broken", "noisy") else ""))
            try:
                outcome = emulate.run(comp, partial, {"kind": "measure", "flow": r["spec"].to_dict()},
                                      # cc is set per socket (TCP_CONGESTION; on an MPTCP socket it
                                      # applies to every subflow). The namespace default cannot be
                                      # set to a restricted cc outside the init namespace (EPERM).
                                      mptcp=r["mptcp_opt"], snaplen=campaign.snaplen, sysctls=r["sysctls"],
                                      duration_s=campaign.duration_s, **extra)
            except KeyboardInterrupt:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            host = host_record(load_start, bundle.host_load(), max_load, waited, pinned)
            meta = {"run_id": r["run_id"], "cc": r["cc"], "flow": r["spec"].to_dict(), "mptcp": r["mptcp"],
                    "repetition": r["repetition"], "campaign": campaign.name, "snaplen": campaign.snaplen,
                    "config": r["config"], "host": host, "checks": campaign.checks}
            if variant:
                meta["variant"] = {**variant, "sysctls": r["sysctls"],
                                   "scenario_label": campaign.scenario_label(r.get("scenario_index", 0)),
                                   "scenario_start_s": r["scenario_start"]}
            manifest = bundle.finalize(partial, outcome, comp, meta, versions)
            if final.exists():
                shutil.rmtree(final)
            if manifest["status"] == "ok" or keep_failed:
                partial.rename(final)
            summary = {"run_id": r["run_id"], "status": manifest["status"], "path": str(final),
                       "errors": manifest["errors"], "noisy": host["noisy"]}
            summaries.append(summary)
            if on_result:
                on_result(summary)
            prog.finished(r["run_id"], time.monotonic() - t_start, manifest["status"],
                          (bundle.headline(final) if manifest["status"] == "ok"
                           else "; ".join(manifest["errors"]).splitlines()[0][:300])
                          + (f" [noisy: {host['noisy_why']}]" if host["noisy"] else ""))
    finally:
        prog.close()
    return summaries


def recover_partials(out: Path, only: set[str] | None = None) -> list[str]:
    """Clean up after an earlier campaign that was killed hard (SIGKILL, power loss) in
    ``out``: its ``.partial-*`` run directories name their Rattan id and pid files, so the
    namespaces and processes they left are known to be ours. Returns the namespaces removed.
    ``only``: the run ids to recover (a shard leaves the other shards' runs alone)."""
    removed: list[str] = []
    for partial in sorted(Path(out).glob(".partial-*")):
        if only is not None and partial.name.removeprefix(".partial-") not in only:
            continue
        netns.kill_by_cmdline(str(partial))  # rattan, agents, tcpdump of that run
        rid_file = partial / "rattan_id"
        if rid_file.is_file():
            rid = rid_file.read_text().strip()
            try:
                removed += netns.cleanup_rattan(rid)
            except ValueError:
                pass
        shutil.rmtree(partial, ignore_errors=True)
    return removed


class _Progress:
    """What a campaign tells while it runs, on standard error.

    One plain line per run — started, finished with its headline numbers
    (:func:`hsrtcp.lab.bundle.headline`), skipped and why, failed and why — written and
    flushed at once, so a log file shows a run as it starts. On a terminal with
    ``bar=True`` the lines go above a bar of runs done / total, the time elapsed and the
    time left (mean duration of the runs made so far × runs left)."""

    def __init__(self, total: int, bar: bool = True, quiet: bool = False, stream=None, console=None):
        self.total = total
        self.done = 0
        self.started_at = time.monotonic()
        self.durations: list[float] = []
        self.counts = {"ok": 0, "failed": 0, "skipped": 0}
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.p = None
        self.console = None
        if bar and not quiet and (console is not None or self.stream.isatty()):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.console = console or Console(file=self.stream)
            self.p = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("runs, elapsed"), TimeElapsedColumn(), TextColumn("left ≈ {task.fields[left]}"),
                              console=self.console)
            self.p.start()
            self.task = self.p.add_task("campaign", total=total, left="?")

    def line(self, text: str) -> None:
        if self.quiet:
            return
        if self.console is not None:  # above the bar while it runs
            self.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def _tag(self) -> str:
        return f"[{self.done + 1}/{self.total}]"

    def start(self, run_id: str, what: str) -> None:
        self.line(f"{self._tag()} {run_id} started: {what}")
        if self.p:
            self.p.update(self.task, description=run_id)

    def skipped(self, run_id: str, why: str) -> None:
        self.line(f"{self._tag()} {run_id} skipped: {why}")
        self.counts["skipped"] += 1
        self._advance(0.0)

    def finished(self, run_id: str, seconds: float, status: str, detail: str) -> None:
        word = "finished" if status == "ok" else "failed"
        self.line(f"{self._tag()} {run_id} {word} after {_hms(seconds)}: {detail}")
        self.counts["ok" if status == "ok" else "failed"] += 1
        self._advance(seconds)

    def left_s(self) -> float | None:
        if not self.durations:
            return None
        return (self.total - self.done) * sum(self.durations) / len(self.durations)

    def _advance(self, seconds: float) -> None:
        self.done += 1
        if seconds > 0:
            self.durations.append(seconds)
        if self.p:
            left = self.left_s()
            self.p.update(self.task, advance=1, left="?" if left is None else _hms(left))

    def close(self) -> None:
        if self.p:
            self.p.stop()
            self.p = None
        c = self.counts
        self.line(f"campaign: {self.done} of {self.total} runs in {_hms(time.monotonic() - self.started_at)} "
                  f"({c['ok']} ok, {c['failed']} failed, {c['skipped']} skipped)")


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _what(r: dict) -> str:
    """A run in a few words, for its 'started' line."""
    comp, spec = r["compiled"], r["spec"]
    seed = f", seed {comp.seed}" if comp.seed is not None else ""
    flow = spec.type
    if spec.size_bytes:
        flow += f" {spec.size_bytes / 1e6:g} MB" + (f" x{spec.count}" if spec.count > 1 else "")
    elif spec.duration_s:
        flow += f" {spec.duration_s:g} s"
    knobs = ", ".join(f"{k}={v}" for k, v in r["sysctls"].items())
    return (f"scenario {comp.name}{seed} ({comp.paths} path{'s' if comp.paths != 1 else ''}), cc {r['cc']}, "
            f"{flow}{', MPTCP' if r['mptcp'] else ''}{', ' + knobs if knobs else ''}")
