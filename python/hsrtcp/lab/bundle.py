"""Run bundles: one directory per lab run, readable by the analyzer like a field capture.

Layout and manifest are specified in docs/formats/bundle.md (format version
:data:`BUNDLE_FORMAT_VERSION`). :func:`finalize` turns a run directory written by
:func:`hsrtcp.lab.emulate.run` into a bundle in place; :func:`check` lists what is wrong
with a bundle (an empty list means complete and valid).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import hsrtcp
from hsrtcp.lab import capture, rattan
from hsrtcp import atomic, pcapio
from hsrtcp.bundle import MANIFEST, file_sha256, read_manifest
from hsrtcp.errors import InputError

BUNDLE_FORMAT_VERSION = 1
# Scratch files of a run that are not part of a bundle.
_SCRATCH = ("plan.json", "server.ready", "left.done", "rattan_id", "workload.start", "outcome.json")


def source_commit() -> dict[str, object] | None:
    """The git commit of the source tree hsrtcp runs from (``commit``, and ``dirty`` when
    tracked files differ from it), or None when it does not run from a git checkout."""
    root = Path(hsrtcp.__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}


def _module_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def ebpf_provenance(name: str) -> dict[str, object]:
    """The object an eBPF congestion control is loaded from and its SHA-256 (docs/hsrbbr.md
    compares versions of hsrbbr by it), and the source's."""
    from hsrtcp.errors import LabError
    from hsrtcp.lab import ebpf

    src = ebpf.source_dir() / f"{name}.bpf.c"
    info: dict[str, object] = {"object": None, "object_sha256": None,
                               "source_sha256": file_sha256(src) if src.is_file() else None}
    try:
        obj = ebpf.object_path(name)
    except LabError as exc:
        info["error"] = str(exc).splitlines()[0]
        return info
    info["object"] = f"ebpf/build/{obj.name}"
    info["object_sha256"] = file_sha256(obj)
    return info


def tool_versions(ebpf_ccs=()) -> dict[str, object]:
    """Provenance of a run: hsrtcp's version and commit, the libraries that shape results
    (numpy draws the scenario traces, polars writes tcpinfo.parquet), Rattan, the kernel,
    Python, tcpdump and, for each eBPF congestion control in ``ebpf_ccs``, its object's hash."""
    def first_line(argv: list[str]) -> str | None:
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        text = (res.stdout or res.stderr).strip().splitlines()
        return text[0] if text else None

    from hsrtcp.lab import ebpf

    src = source_commit()
    out: dict[str, object] = {
        "hsrtcp": hsrtcp.__version__,
        "hsrtcp_commit": src["commit"] if src else None,
        "hsrtcp_dirty": src["dirty"] if src else None,
        "numpy": _module_version("numpy"),
        "polars": _module_version("polars"),
        "rattan": rattan.rattan_version(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "tcpdump": first_line(["tcpdump", "--version"]),
    }
    names = sorted({c for c in ebpf_ccs if ebpf.is_ebpf(c)})
    if names:
        out["ebpf"] = {n: ebpf_provenance(n) for n in names}
    return out


#: where the kernel publishes the load averages (tests give a file of their own)
LOADAVG = Path("/proc/loadavg")


def host_load(loadavg: str | os.PathLike | None = None) -> dict[str, object]:
    """The host's 1-minute load average and CPU count now (``loadavg_1min`` is None when
    the file, :data:`LOADAVG` by default, cannot be read: a host without /proc)."""
    try:
        first = Path(loadavg or LOADAVG).read_text(encoding="ascii").split()[0]
        load = float(first)
    except (OSError, UnicodeDecodeError, IndexError, ValueError):
        load = None
    return {"loadavg_1min": load, "cpus": os.cpu_count()}


def _tcpdump_stats(log: Path) -> dict[str, int | None]:
    return capture.parse_stats(log.read_text(errors="replace") if log.is_file() else "")


def finalize(run_dir: Path, outcome, compiled, meta: dict, versions: dict | None = None) -> dict:
    """Arrange ``run_dir`` as a bundle and write ``manifest.json``; return the manifest.

    ``meta`` carries the run's identity (run_id, cc, flow, mptcp, repetition, campaign...).
    The manifest is written last and atomically: a directory with a manifest is complete.
    """
    run_dir = Path(run_dir)
    ws = run_dir / "workload.start"
    workload_start = float(ws.read_text().strip()) if ws.is_file() else None
    logs = run_dir / "logs"
    logs.mkdir(exist_ok=True)
    for f in list(run_dir.glob("agent-*")) + list(run_dir.glob("right-command.out")):
        f.rename(logs / f.name)
    if (run_dir / "rattan.log").exists():
        (run_dir / "rattan.log").rename(logs / "rattan.log")
    for f in (run_dir / "capture").glob("*.tcpdump.log"):
        f.rename(logs / f.name)
    server = run_dir / "server"
    tcpinfo_dir = run_dir / "tcpinfo"
    if (server / "tcpinfo").is_dir():
        if tcpinfo_dir.exists():
            shutil.rmtree(tcpinfo_dir)
        (server / "tcpinfo").rename(tcpinfo_dir)
    tcpinfo_dir.mkdir(exist_ok=True)
    if (server / "flows.jsonl").exists():
        (server / "flows.jsonl").rename(run_dir / "server_flows.jsonl")
    if server.is_dir():
        shutil.rmtree(server)
    for name in _SCRATCH:
        (run_dir / name).unlink(missing_ok=True)
    shutil.rmtree(run_dir / "pids", ignore_errors=True)
    _write_tcpinfo_parquet(tcpinfo_dir, run_dir / "tcpinfo.parquet")

    # The compiled scenario (traces, resolved parameters) travels with the bundle, so the
    # expected timeline can be recomputed from the bundle alone.
    sc_dir = getattr(compiled, "outdir", None)
    if sc_dir and Path(sc_dir).is_dir() and Path(sc_dir).resolve() != (run_dir / "scenario").resolve():
        shutil.rmtree(run_dir / "scenario", ignore_errors=True)
        # (the compiler's lock file names its process, long gone: not part of the bundle)
        shutil.copytree(sc_dir, run_dir / "scenario", ignore=shutil.ignore_patterns(".hsrtcp.lock"))
    elif (run_dir / "scenario").is_dir() and not any((run_dir / "scenario").iterdir()):
        (run_dir / "scenario").rmdir()
    (run_dir / "scenario" / ".hsrtcp.lock").unlink(missing_ok=True)
    if sc_dir and (run_dir / "rattan.toml").is_file():
        _relative_traces(run_dir / "rattan.toml", Path(sc_dir).resolve(), run_dir / "scenario")
    radio = _copy(compiled.radio_csv, run_dir / "radio.csv")
    events = _copy(compiled.events_csv, run_dir / "events.csv")
    cap = run_dir / "capture"
    phone = sorted(cap.glob("phone_p*.pcap"), key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    t0, t0_src = None, None
    for p in phone + [cap / "server.pcap"]:
        if p.is_file():
            t = pcapio.first_ip_time(p)
            if t is not None and (t0 is None or t < t0):
                t0, t0_src = t, str(p.relative_to(run_dir))
    sysctls = {}
    for role, side in (("left", "client"), ("right", "server")):
        f = run_dir / f"sysctls-{role}.json"
        if f.is_file():
            sysctls[side] = json.loads(f.read_text())
            f.unlink()
    cfg = rattan.load_config(run_dir / "rattan.toml") if (run_dir / "rattan.toml").is_file() else {}
    manifest = {
        "bundle_format_version": BUNDLE_FORMAT_VERSION,
        "run_id": meta.get("run_id", run_dir.name),
        "status": "ok" if outcome.ok else "failed",
        "errors": outcome.errors,
        "versions": versions or tool_versions(),
        "scenario": {
            "name": compiled.name,
            "source": str(compiled.source) if compiled.source else None,
            "sha256": file_sha256(compiled.source) if compiled.source and Path(compiled.source).is_file() else None,
            # the path as compiled (runconfig's scenario part): equal hashes, same emulated path
            "compiled_sha256": (meta.get("config") or {}).get("scenario", {}).get("sha256"),
            "duration_s": compiled.duration_s,
            "paths": compiled.paths,
        },
        "cc": meta.get("cc"),
        "flow": meta.get("flow"),
        "mptcp": meta.get("mptcp", False),
        "repetition": meta.get("repetition"),
        "campaign": meta.get("campaign"),
        **({"variant": meta["variant"]} if meta.get("variant") else {}),
        **({"config": meta["config"]} if meta.get("config") else {}),
        **({"checks": meta["checks"]} if meta.get("checks") is not None else {}),
        **({"host": meta["host"]} if meta.get("host") else _host(outcome)),
        **{k: meta[k] for k in ("command", "right_command") if k in meta},
        "seeds": {"scenario": compiled.seed, "rattan_cells": rattan.loss_seeds(cfg)},
        "sysctls": sysctls,
        "start_time": outcome.started_at,
        "workload_start_time": workload_start,
        "end_time": outcome.ended_at,
        "t0": t0,
        "t0_source": t0_src,
        "rattan": {"id": outcome.rattan_id, "exit_code": outcome.rattan_rc, "crashed": outcome.crashed,
                   "timed_out": outcome.timed_out, "leaked_namespaces_removed": outcome.leaked},
        "client_exit_code": outcome.left_rc,
        "captures": {
            "snaplen": meta.get("snaplen", 128),
            "phone": [str(p.relative_to(run_dir)) for p in phone],
            "server": "capture/server.pcap" if (cap / "server.pcap").is_file() else None,
            "tcpdump": {p.stem: _tcpdump_stats(logs / f"{p.stem}.tcpdump.log") for p in phone + [cap / "server.pcap"]},
        },
        "radio": "radio.csv" if radio else None,
        "events": "events.csv" if events else None,
        "files": {},
    }
    for f in sorted(run_dir.rglob("*")):
        if f.is_file() and f.name != MANIFEST:
            manifest["files"][str(f.relative_to(run_dir))] = {"bytes": f.stat().st_size, "sha256": file_sha256(f)}
    atomic.write_text(run_dir / MANIFEST, json.dumps(manifest, indent=1, sort_keys=False))
    return manifest


def _host(outcome) -> dict:
    """``host`` of a run outside a campaign (hsrtcp emulate): the load it started and ended
    at, no bound to judge it by."""
    start, end = getattr(outcome, "load_start", None), getattr(outcome, "load_end", None)
    if not start and not end:
        return {}
    return {"host": {"loadavg_1min_start": (start or {}).get("loadavg_1min"),
                     "loadavg_1min_end": (end or {}).get("loadavg_1min"),
                     "cpus": (start or end or {}).get("cpus"), "max_load": None, "noisy": None}}


def _relative_traces(config: Path, sc_dir: Path, copy: Path) -> None:
    """Point the trace cells of the Rattan config that ran at the bundle's own copy of the
    compiled scenario, relative to the config, so the bundle names no path outside itself
    (its [commands] stay as they ran: a record)."""
    import tomli_w

    cfg = rattan.load_config(config)
    changed = False
    for cell in cfg.get("cells", {}).values():
        t = cell.get("trace")
        if isinstance(t, str) and Path(t).is_absolute() and Path(t).resolve().is_relative_to(sc_dir):
            target = copy / Path(t).resolve().relative_to(sc_dir)
            if target.is_file():
                cell["trace"] = target.relative_to(config.parent).as_posix()
                changed = True
    if changed:
        atomic.write_text(config, tomli_w.dumps(cfg))


def _copy(src, dst: Path) -> Path | None:
    if src is None or not Path(src).is_file():
        return None
    shutil.copyfile(src, dst)
    return dst


def _write_tcpinfo_parquet(tcpinfo_dir: Path, out: Path) -> None:
    """All per-flow TCP_INFO CSVs in one Parquet table with a ``flow_id`` column."""
    import polars as pl

    frames = []
    for f in sorted(tcpinfo_dir.glob("*.csv")):
        df = pl.read_csv(f, infer_schema_length=None)
        if df.height:
            frames.append(df.with_columns(pl.lit(f.stem).alias("flow_id"), pl.col("subflow").cast(pl.Int64)))
    if frames:
        table = pl.concat(frames, how="diagonal_relaxed")
        table = table.select(["flow_id", *[c for c in table.columns if c != "flow_id"]])
        atomic.write_file(out, table.write_parquet)


def check(bundle_dir: Path) -> list[str]:
    """Problems of a bundle: missing files, bad manifest, checksum mismatches."""
    bundle_dir = Path(bundle_dir)
    problems = []
    mpath = bundle_dir / MANIFEST
    try:
        m = read_manifest(bundle_dir)  # the one reader's checks: readable, UTF-8, a JSON object
    except InputError as exc:
        return [str(exc)]
    if m is None:
        return [f"{bundle_dir}: no {MANIFEST}"]
    if m.get("bundle_format_version") != BUNDLE_FORMAT_VERSION:
        problems.append(f"{mpath}: bundle_format_version {m.get('bundle_format_version')!r} != {BUNDLE_FORMAT_VERSION}")
    for key in ("run_id", "status", "versions", "scenario", "cc", "flow", "start_time", "t0", "sysctls", "seeds",
                "captures", "files"):
        if key not in m:
            problems.append(f"{mpath}: missing key {key!r}")
    if problems:
        return problems
    for key in ("hsrtcp", "rattan", "kernel"):
        if not m["versions"].get(key):
            problems.append(f"{mpath}: versions.{key} is empty")
    needed = ["rattan.toml", "logs/rattan.log", *m["captures"]["phone"]]
    if m["captures"]["server"]:
        needed.append(m["captures"]["server"])
    else:
        problems.append(f"{mpath}: no server capture")
    if not m["captures"]["phone"]:
        problems.append(f"{mpath}: no phone capture")
    if m["flow"] is not None:
        needed += ["client.json", "server_flows.jsonl", "tcpinfo.parquet"]
    for extra in (m.get("radio"), m.get("events")):
        if extra:
            needed.append(extra)
    for rel in needed:
        if not (bundle_dir / rel).is_file():
            problems.append(f"{bundle_dir}: missing {rel}")
    for rel, info in m["files"].items():
        f = bundle_dir / rel
        if not f.is_file():
            problems.append(f"{bundle_dir}: listed file {rel} missing")
        elif f.stat().st_size != info["bytes"]:
            problems.append(f"{bundle_dir}: {rel} has {f.stat().st_size} bytes, manifest says {info['bytes']}")
    if m["t0"] is None:
        problems.append(f"{mpath}: t0 is null (no packet captured)")
    return problems


def headline(bundle_dir: Path) -> str:
    """One line of a run's numbers for progress logs: flows, bytes and goodput the client
    saw, the flows that ended with an error, the server's retransmissions and timeouts
    (the last TCP_INFO sample of each flow and subflow)."""
    bundle_dir = Path(bundle_dir)
    parts = []
    try:
        client = json.loads((bundle_dir / "client.json").read_text())
    except (OSError, ValueError):
        client = None
    if isinstance(client, list) and client:
        got = sum(int(c.get("bytes") or 0) for c in client)
        t0 = min((c["t_start"] for c in client if c.get("t_start")), default=None)
        t1 = max((c["t_end"] for c in client if c.get("t_end")), default=None)
        rate = f" at {got * 8 / (t1 - t0) / 1e6:.2f} Mbit/s" if t0 and t1 and t1 > t0 else ""
        errors = sum(1 for c in client if c.get("error"))
        parts.append(f"{len(client)} flow{'s' if len(client) != 1 else ''}, {got / 1e6:.2f} MB{rate}")
        if errors:
            parts.append(f"{errors} flow{'s' if errors != 1 else ''} with an error")
    ti = bundle_dir / "tcpinfo.parquet"
    if ti.is_file():
        import polars as pl

        try:
            t = pl.read_parquet(ti, columns=["flow_id", "subflow", "ts", "total_retrans", "total_rto"])
            last = t.sort("ts").group_by(["flow_id", "subflow"]).last()
            parts.append(f"{int(last['total_retrans'].fill_null(0).sum())} retransmissions, "
                         f"{int(last['total_rto'].fill_null(0).sum())} RTOs (server)")
        except (OSError, pl.exceptions.PolarsError):
            pass
    return ", ".join(parts) if parts else "no client result"


def client_result(output: Path) -> list[dict] | None:
    """The measure client's result list in a command's output (``command.out`` of an
    ``emulate`` run whose command was ``hsrtcp measure client``), or None."""
    try:
        text = Path(output).read_text(errors="replace")
    except OSError:
        return None
    dec = json.JSONDecoder()
    for m in re.finditer(r"^\[", text, re.MULTILINE):
        try:
            value, _ = dec.raw_decode(text[m.start():])
        except ValueError:
            continue
        if isinstance(value, list) and value and all(isinstance(x, dict) and "flow_id" in x and "bytes" in x
                                                     for x in value):
            return value
    return None
