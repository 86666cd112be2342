"""What makes two lab runs comparable: the configuration a run recorded, in four parts.

A campaign reuses a bundle only when the run it would make now is the run the bundle holds
(docs/lab.md, "Re-running a campaign"). Each bundle's manifest records ``config``, four parts
with a SHA-256 each:

- ``scenario``: the emulated path as it was compiled — the trace files, the ground truth
  (events.csv, radio.csv) and the Rattan config without comments, or, for a plain Rattan
  config, the config and the content of every trace it names. A new seed, window, scenario
  key or generator version that changes the path changes this hash; a comment does not.
- ``workload``: the flow spec the client ran, MPTCP and its endpoint options, snaplen.
- ``knobs``: the congestion control, the sysctls of both namespaces and the route knobs.
- ``software``: hsrtcp's version, Rattan's, the kernel release and, for an eBPF congestion
  control, the SHA-256 of its object. The git commit is recorded in ``versions`` but left
  out here: it changes with every edit of the repository (documentation too), while what
  shapes a run is covered by the other parts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hsrtcp.bundle import file_sha256

PARTS = ("scenario", "workload", "knobs", "software")


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _strip_comments(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))


def scenario_part(comp) -> dict:
    """The ``scenario`` part of a compiled scenario or a plain Rattan config
    (:class:`hsrtcp.lab.emulate.Compiled`)."""
    from hsrtcp.lab import rattan

    what = {"name": comp.name, "seed": comp.seed, "duration_s": comp.duration_s, "paths": comp.paths}
    outdir = getattr(comp, "outdir", None)
    files: dict[str, str] = {}
    if outdir and Path(outdir).is_dir():
        outdir = Path(outdir)
        names = sorted(str(p.relative_to(outdir)) for p in (outdir / "traces").glob("*.json"))
        names += [n for n in ("events.csv", "radio.csv") if (outdir / n).is_file()]
        for n in names:
            files[n] = file_sha256(outdir / n)
        cfg_text = Path(comp.rattan_config).read_text(encoding="utf-8")
        files["rattan.toml"] = hashlib.sha256(_strip_comments(cfg_text).encode()).hexdigest()
        sj = outdir / "scenario.json"
        if sj.is_file():
            doc = json.loads(sj.read_text(encoding="utf-8"))
            what["start_s"] = doc.get("window_start_s")
    else:
        cfg = rattan.load_config(comp.rattan_config)
        cfg.pop("commands", None)
        base = Path(comp.rattan_config).parent
        for cell in cfg.get("cells", {}).values():
            t = cell.get("trace")
            if isinstance(t, str):
                p = Path(t) if Path(t).is_absolute() else base / t
                cell["trace"] = "sha256:" + (file_sha256(p) if p.is_file() else "missing")
        files["rattan.toml"] = _digest(cfg)
    return {"sha256": _digest(files), **what}


def workload_part(flow: dict, mptcp, snaplen: int) -> dict:
    what = {"flow": flow, "mptcp": mptcp, "snaplen": snaplen}
    return {"sha256": _digest(what), **what}


def knobs_part(cc: str | None, sysctls: dict, route: dict | None) -> dict:
    what = {"cc": cc, "sysctls": {k: str(v) for k, v in sorted(sysctls.items())}, "route": route or {}}
    return {"sha256": _digest(what), **what}


def software_part(versions: dict, cc: str | None) -> dict:
    what = {"hsrtcp": versions.get("hsrtcp"), "rattan": versions.get("rattan"), "kernel": versions.get("kernel")}
    ebpf = (versions.get("ebpf") or {}).get(cc) if cc else None
    if ebpf is not None:
        what["ebpf_object_sha256"] = ebpf.get("object_sha256")
    return {"sha256": _digest(what), **what}


def config(comp, flow: dict, mptcp, snaplen: int, cc: str | None, sysctls: dict, route: dict | None,
           versions: dict) -> dict:
    """The four parts of one run (what the manifest records under ``config``)."""
    return {"scenario": scenario_part(comp), "workload": workload_part(flow, mptcp, snaplen),
            "knobs": knobs_part(cc, sysctls, route), "software": software_part(versions, cc)}


def _short(v) -> str:
    text = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return text if len(text) <= 60 else text[:57] + "..."


def differences(recorded: dict | None, wanted: dict) -> list[str]:
    """What differs between a bundle's recorded ``config`` and the run's, one phrase per part
    (empty: the same run). The phrase names the values that changed when it can."""
    if not isinstance(recorded, dict):
        return ["no configuration recorded (a bundle from before hsrtcp recorded one)"]
    out = []
    for part in PARTS:
        old, new = recorded.get(part), wanted[part]
        if not isinstance(old, dict):
            out.append(f"{part}: not recorded")
            continue
        if old.get("sha256") == new["sha256"]:
            continue
        changed = []
        for k in sorted(set(old) | set(new)):
            if k == "sha256":
                continue
            a, b = old.get(k), new.get(k)
            if isinstance(a, dict) and isinstance(b, dict):
                for kk in sorted(set(a) | set(b)):
                    if a.get(kk) != b.get(kk):
                        changed.append(f"{k}.{kk} {_short(a.get(kk))} -> {_short(b.get(kk))}")
            elif a != b:
                changed.append(f"{k} {_short(a)} -> {_short(b)}")
        if part == "scenario":
            if not changed:
                changed.append("the compiled path (traces, events or Rattan config) changed")
            # both versions by hash: the bundle's path and the one the campaign compiles now
            changed.append(f"compiled sha256 {str(old.get('sha256'))[:12]} in the bundle, "
                           f"{str(new['sha256'])[:12]} now")
        out.append(f"{part} differs ({'; '.join(changed) or 'content changed'})")
    return out
