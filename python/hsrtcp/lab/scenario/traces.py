"""Reading netem-trace files back and checking them against rattan's own reading.

``read_trace`` parses the subset of netem-trace JSON that the compiler writes (Repeated*
pattern of Static* segments, human units). ``rattan_visualize`` runs
``rattan run -c CONFIG --visualize-trace <D>s --visualize-trace-mode csv`` (no root needed: it
only loads the config and expands the traces) and parses its table, so a compiled scenario can
be diffed against the emulator's interpretation of it (:func:`check_against_rattan`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

from .config import ScenarioError

_BW_UNITS = {"bps": 1, "kbps": 10**3, "Kbps": 10**3, "Mbps": 10**6, "Gbps": 10**9, "Tbps": 10**12}
_T_UNITS = {"ns": 1e-9, "nsec": 1e-9, "us": 1e-6, "μs": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3,
            "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0, "d": 86400.0}
_TOKEN = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-zμ]+)\s*,?")


def _sum_of_units(s: str, units: dict[str, float], what: str) -> float:
    """The sum of ``s``'s number-unit tokens (units: factors of ``units``); ValueError
    naming ``what`` on anything else."""
    total, pos = 0.0, 0
    for m in _TOKEN.finditer(s):
        if m.start() != pos or m.group(2) not in units:
            raise ValueError(f"bad {what} {s!r}")
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"bad {what} {s!r}")
    return total


def parse_bandwidth(s: str) -> float:
    """'12.345678Mbps' / '1Gbps 200Mbps' / '25000bps' -> bit/s."""
    return _sum_of_units(s, _BW_UNITS, "bandwidth")


def parse_duration(s: str) -> float:
    """'1500ms' / '1s,530ms,500μs' / '1s 500ms' -> seconds."""
    return _sum_of_units(s, _T_UNITS, "duration")


def read_trace(path: Path) -> list[tuple[int, object]]:
    """[(duration_ms, value)] of a compiler-written trace: bw in bit/s (int), delay in µs (int),
    loss as a tuple of probabilities."""
    try:
        pattern = _pattern(json.loads(Path(path).read_text(encoding="utf-8")))
        if pattern is None:
            raise ScenarioError(f"{path}: unreadable trace: not what hsrtcp scenario generate writes "
                                "(one object {KIND: {\"pattern\": [{SEGMENT: {...}}, ...]}})")
        out = []
        for ik, seg in pattern:
            dur = int(round(parse_duration(seg["duration"]) * 1000))
            if ik == "StaticBwConfig":
                out.append((dur, int(round(parse_bandwidth(seg["bw"])))))
            elif ik == "StaticDelayConfig":
                out.append((dur, int(round(parse_duration(seg["delay"]) * 1e6))))
            elif ik == "StaticLossConfig":
                out.append((dur, tuple(float(x) for x in seg["loss"])))
            else:
                raise ValueError(f"unsupported segment type {ik}")
        return out
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ScenarioError(f"{path}: unreadable trace: {exc}") from exc
    except (OverflowError, RecursionError) as exc:  # a duration beyond float range; nesting too deep
        raise ScenarioError(f"{path}: unreadable trace: a value out of range or nested too deep") from exc


def _pattern(doc) -> list[tuple[str, dict]] | None:
    """The (segment kind, fields) of a trace document, or None when it is JSON of another
    shape (``[]``, ``null``, a pattern of numbers): said as the file's fault, not Python's."""
    if not (isinstance(doc, dict) and len(doc) == 1):
        return None
    body = next(iter(doc.values()))
    if not (isinstance(body, dict) and isinstance(body.get("pattern"), list)):
        return None
    out = []
    for item in body["pattern"]:
        if not (isinstance(item, dict) and len(item) == 1 and isinstance(next(iter(item.values())), dict)):
            return None
        out.append(next(iter(item.items())))
    return out


def rattan_binary() -> str | None:
    return shutil.which("rattan") or (str(Path.home() / ".cargo/bin/rattan")
                                      if (Path.home() / ".cargo/bin/rattan").exists() else None)


def rattan_visualize(config: Path, duration_s: float, rattan: str | None = None) -> list[dict]:
    """Rows of rattan's merged trace table: start/duration (s) and per cell the parsed value
    (bandwidth bit/s, delay s, loss pattern tuple), keyed by the cell's column name."""
    exe = rattan or rattan_binary()
    if exe is None:
        raise ScenarioError("rattan not found (make rattan installs it)")
    dur_ms = int(math.ceil(duration_s * 1000))
    # rattan opens relative trace paths from its working directory: the config's own
    proc = subprocess.run([exe, "run", "-c", str(Path(config).resolve()), "--visualize-trace", f"{dur_ms}ms",
                           "--visualize-trace-mode", "csv"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RUST_LOG": "error", "NO_COLOR": "1"},
                          cwd=str(Path(config).resolve().parent))
    if proc.returncode != 0:  # rattan logs its reason (a config error: exit 78) on stdout
        said = re.sub(r"\x1b\[[0-9;]*m", "", (proc.stderr.strip() or proc.stdout.strip()))[-2000:]
        raise ScenarioError(f"{config}: rattan --visualize-trace failed (exit {proc.returncode}): {said}")
    # rattan's log lines go to stdout too (e.g. "Router not supported" warnings): skip to the header
    text = proc.stdout
    k = text.find("start_time_secs")
    if k < 0:
        raise ScenarioError(f"{config}: rattan --visualize-trace printed no table: {text[-500:]!r}")
    rows = []
    for r in csv.DictReader(io.StringIO(text[k:])):
        row: dict = {"start_s": float(r.pop("start_time_secs")), "duration_s": float(r.pop("duration_secs"))}
        for k, v in r.items():
            if k.endswith("_bandwidth"):
                row[k] = parse_bandwidth(v)
            elif k.endswith("_delay"):
                row[k] = parse_duration(v)
            elif k.endswith("_loss_pattern"):
                row[k] = tuple(float(x) for x in v.split(";"))
        rows.append(row)
    return rows


def check_against_rattan(compiled, rattan: str | None = None) -> list[str]:
    """Compare rattan's expansion of the compiled config with the scenario's own segments.

    Returns a list of human-readable mismatches (empty = identical).
    """
    rows = rattan_visualize(compiled.rattan_config, compiled.duration_s, rattan)
    seg = compiled.segments()
    problems = []
    tag = {"down": "dn", "up": "up"}
    import bisect

    rows.sort(key=lambda vr: vr["start_s"])
    row_t = [vr["start_s"] for vr in rows]  # a lookup: [harq] traces have 10^4-10^5 segments
    for r in seg.iter_rows(named=True):
        pre = f"p{r['path']}_{tag[r['direction']]}"
        # every rattan row that starts inside this segment must carry its values
        for vr in rows[bisect.bisect_left(row_t, r["t_start"] - 1e-6):bisect.bisect_left(row_t, r["t_end"] - 1e-6)]:
            got_bw = vr.get(f"{pre}_bw_bandwidth")
            got_dl = vr.get(f"{pre}_delay_delay")
            got_ls = vr.get(f"{pre}_loss_loss_pattern")
            if got_bw is None or abs(got_bw - r["bw_bps"]) > max(1.0, 1e-6 * r["bw_bps"]):
                problems.append(f"{pre} t={vr['start_s']}: bandwidth {got_bw} != {r['bw_bps']}")
            if got_dl is None or abs(got_dl - r["delay_s"]) > 1.5e-6:
                problems.append(f"{pre} t={vr['start_s']}: delay {got_dl} != {r['delay_s']}")
            if got_ls is None or any(abs(a - b) > 1e-9 for a, b in zip(got_ls, r["loss_pattern"])) \
                    or len(got_ls) != len(r["loss_pattern"]):
                problems.append(f"{pre} t={vr['start_s']}: loss {got_ls} != {r['loss_pattern']}")
    # and rattan must change values only where the scenario has a boundary
    bounds = set(round(x, 3) for x in seg["t_start"].to_list())
    for vr in rows:
        if round(vr["start_s"], 3) not in bounds:
            problems.append(f"rattan has a change at t={vr['start_s']} that the scenario does not")
    return problems


def self_check(compiled) -> list[str]:
    """Internal consistency of a compiled directory (no rattan needed).

    Every trace covers exactly the window; no bandwidth below 1 bit/s (rattan#194); loss
    probabilities in [0, 1]; every outage in events.csv is 1 bit/s (held) or loss [1.0]
    (dropped) over its whole span in both directions of its path (a dropped outage's uplink
    held instead when the scenario says ``[handoff] dropped_uplink = "held"``).
    """
    problems = []
    dur_ms = int(round(compiled.duration_s * 1000))
    for p in range(1, compiled.paths + 1):
        for d in ("down", "up"):
            for what in ("bw", "delay", "loss"):
                f = compiled.trace_file(what, d, p)
                runs = read_trace(f)
                total = sum(r[0] for r in runs)
                if total != dur_ms:
                    problems.append(f"{f}: covers {total} ms, window is {dur_ms} ms")
                if what == "bw" and min(v for _, v in runs) < 1:
                    problems.append(f"{f}: bandwidth below 1 bit/s")
                if what == "loss" and any(not (0.0 <= x <= 1.0) for _, v in runs for x in v):
                    problems.append(f"{f}: loss probability outside [0, 1]")
    seg = compiled.segments()
    ev = compiled.events()
    hp = json.loads(compiled.scenario_json.read_text(encoding="utf-8")).get("params", {}).get("handoff", {})
    for r in ev.filter(ev["kind"] == "outage").iter_rows(named=True):
        if r["t_end"] <= r["t_start"]:
            continue
        for d in ("down", "up"):
            s = seg.filter((seg["path"] == r["path"]) & (seg["direction"] == d)
                           & (seg["t_end"] > r["t_start"] + 1e-9) & (seg["t_start"] < r["t_end"] - 1e-9))
            held_up = d == "up" and hp.get("dropped_uplink") == "held"
            if r["outage_kind"] == "held" or held_up:
                bad = s.filter(s["bw_bps"] != 1)
            else:
                bad = s.filter(s["loss_rate"] < 1.0)
            if len(bad):
                problems.append(f"outage path {r['path']} {d} {r['t_start']}-{r['t_end']} ({r['outage_kind']}) "
                                f"not fully applied: {len(bad)} segment(s) differ")
    return problems
