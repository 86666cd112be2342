#!/usr/bin/env python3
"""Speed and memory of hsrtcp against tcptrace and tshark, on the same capture, in one run.

    .venv/bin/python bench/run.py                 # single capture: bench/work/srv.pcap
    .venv/bin/python bench/run.py --pair          # two vantages: bench/work/cli.pcap + srv.pcap
    .venv/bin/python bench/run.py --capture F.pcap --out bench/results.json
    .venv/bin/python bench/run.py --capture bench/work/mptcp.pcap --out bench/results-mptcp.json  # MPTCP
    .venv/bin/python bench/run.py --packets --out bench/results-packets.json  # + the packets table

Commands measured (the tools take turns, round after round, so that load on the shared host
falls on all of them alike; the input is read into the page cache again before every run of
every tool, because the VM reclaims cold page cache between runs):

- ``hsrtcp analyze FILE -o OUT -q --no-plot`` (``--pair``: ``hsrtcp analyze --client C
  --server S -o OUT -q --no-plot``) — skipped with a message if the CLI cannot run;
- ``hsrtcp analyze FILE -o OUT`` (``--pair``: ``hsrtcp analyze --client C --server S -o OUT``):
  the README's command with its defaults (summary printed to the pipe, no figure), row
  ``hsrtcp_default``;
- ``--packets`` (single capture): ``hsrtcp analyze FILE -o OUT -q --no-plot --packets`` as one
  more tool in the same rounds, row ``hsrtcp_packets``, with the size of its ``packets.parquet``
  per packet (issue 31: ≥ 1x tcptrace while writing every row; the default command unchanged);
  then that table against ``tshark -T fields`` frame by frame (``packets_vs_tshark``: frames
  compared, mismatches; any mismatch makes the run exit 1);
- ``tcptrace -n -l -r FILE`` (``--pair``: once per file, times summed);
- ``tshark -n -q -z conv,tcp -r FILE`` (TCP sequence analysis on, as by default);
- per extra packet ("marginal"): both tools also run on the first quarter of the capture;
  the difference to the whole file cancels fixed costs such as the interpreter's start;
- informational: ``python -c "import hsrtcp.cli, hsrtcp.cli.quick, hsrtcp.cli.run_analysis, hsrtcp.streaming,
  hsrtcp._native"``, the fixed start-up cost inside hsrtcp's figure (``hsrtcp analyze`` on
  single captures imports no polars), and the native pipeline timed in-process.

The package is byte-compiled (``compileall``, into the gitignored ``__pycache__``) before the
rounds, with the interpreter the command starts: an installed package has its bytecode, and
without it every run compiles hsrtcp's modules from source (on a host that sets
PYTHONDONTWRITEBYTECODE=1, every run: 54 M instructions of the README command's main thread).

Each runs under ``/usr/bin/time -v`` when present (user, system seconds, peak RSS; wall
time from ``perf_counter`` around it, finer than its centiseconds);
otherwise under a small Python launcher that reports wall time and the child's
``ru_maxrss``. Packets are counted from the capture's record headers. Printed and written to
``bench/results.json``: per tool packets/s (wall, fastest of ``--repeat`` rounds), packets per
CPU-second (user + system, steadier on a shared machine) and peak RSS, and the ratios
hsrtcp/tcptrace and hsrtcp/tshark (speed by wall and by CPU, memory), and the median over
rounds of hsrtcp/tcptrace within a round (paired). If the capture is missing it is made first with
bench/make_capture.py (``mptcp.pcap``: bench/make_mptcp_capture.py; root needed).

Targets (design.md, issue 19): single capture ≥ 3× tcptrace's packets/s, memory independent
of capture length; two vantages ≥ 2× tcptrace over both files, memory bounded by the
matcher's window and the open flows (``--pair``: quarter, half and whole pair, every file
cut to the same fraction; ratio ``hsrtcp_memory_whole_over_quarter``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
TIME = "/usr/bin/time"
# A tool's timed runs: its command lines, their environment, and the files they read.
Job = tuple[list[list[str]], dict | None, list[Path] | None]


def _byte_order(head: bytes) -> str:
    """struct prefix of a classic pcap from its global header ('<' or '>')."""
    return "<" if struct.unpack("<I", head[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"


def count_records(path: Path) -> int:
    """Records of a classic pcap (either byte order), reading record headers only."""
    n = 0
    with open(path, "rb") as f:
        e = _byte_order(f.read(24))
        while True:
            h = f.read(16)
            if len(h) < 16:
                return n
            f.seek(struct.unpack_from(e + "I", h, 8)[0], 1)
            n += 1


def prefix(path: Path, records: int, dest: Path) -> None:
    """Write the first ``records`` records of a classic pcap to ``dest``."""
    with open(path, "rb") as f, open(dest, "wb") as out:
        head = f.read(24)
        e = _byte_order(head)
        out.write(head)
        for _ in range(records):
            h = f.read(16)
            out.write(h + f.read(struct.unpack_from(e + "I", h, 8)[0]))


def _parquet_rows(path: Path) -> int | None:
    """Rows of a Parquet file from its footer (pyarrow), None without pyarrow."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    return pq.read_metadata(path).num_rows


def warm(paths: list[Path]) -> None:
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def _clock(s: str) -> float:
    """'h:mm:ss' or 'm:ss.ss' → seconds."""
    parts = [float(x) for x in s.split(":")]
    sec = 0.0
    for x in parts:
        sec = sec * 60 + x
    return sec


_LAUNCHER = (
    "import resource, subprocess, sys, time, json\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "w = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.write(p.stderr.decode(errors='replace')[-2000:])\n"
    "print(json.dumps({'rc': p.returncode, 'wall_s': w, 'user_s': r.ru_utime, 'sys_s': r.ru_stime,"
    " 'max_rss_bytes': r.ru_maxrss * 1024}))\n"
)


def measure(cmd: list[str], env: dict | None = None) -> dict:
    """Run ``cmd`` once; wall/user/sys seconds, peak RSS in bytes, exit code, stderr tail."""
    if os.path.exists(TIME):
        t0 = time.perf_counter()
        p = subprocess.run([TIME, "-v", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, env=env)
        wall_outer = time.perf_counter() - t0
        err = p.stderr
        def grab(label):
            m = re.search(rf"^\s*{re.escape(label)}:\s*(.+)$", err, re.M)
            return m.group(1).strip() if m else None
        rss = grab("Maximum resident set size (kbytes)")
        wall = grab("Elapsed (wall clock) time (h:mm:ss or m:ss)")
        cut = err.find("\tCommand being timed")
        # time -v prints wall time in centiseconds, 10 % of a 0.1 s run: the outer clock is
        # finer (it adds the same ~1 ms of starting time itself to every tool)
        wall_s = wall_outer if wall_outer > 0 else _clock(wall)
        return {"rc": p.returncode, "wall_s": wall_s,
                "user_s": float(grab("User time (seconds)") or "nan"),
                "sys_s": float(grab("System time (seconds)") or "nan"),
                "max_rss_bytes": int(rss) * 1024 if rss else None, "meter": "/usr/bin/time -v",
                "stderr_tail": (err[:cut] if cut >= 0 else err)[-600:].strip()}
    p = subprocess.run([sys.executable, "-c", _LAUNCHER, *cmd], capture_output=True, text=True, env=env)
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["meter"] = "getrusage(RUSAGE_CHILDREN)"
    res["stderr_tail"] = p.stderr[-600:].strip()
    return res


_CORE_TIMER = r"""
import json, sys, tempfile, time
from hsrtcp import _native
path, repeat = sys.argv[1], int(sys.argv[2])
best = None
for _ in range(repeat):
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        out = _native.ParquetOut(tmp)
        d = out.analyze(_native.FileJob(path, "bench", vantage="server"), keep_flows=True)
        out.close()
        dt = time.perf_counter() - t0
    best = dt if best is None else min(best, dt)
f = d["flows"][0]
print(json.dumps({"wall_s": best, "retransmissions": f["retransmissions"], "timeouts": f["timeouts"],
                  "c2s_packets": f["c2s_packets"], "s2c_packets": f["s2c_packets"]}))
"""


def core_rate(python: str, env: dict | None, capture: Path, packets: int, repeat: int) -> dict:
    """The Rust pipeline alone (read, decode, engine, tables written to Parquet; no
    interpreter start or imports): the native calls of ``hsrtcp analyze`` timed inside one
    process. With the capture's TCP_INFO (capture.json) as
    a witness of what the engine counted."""
    p = subprocess.run([python, "-c", _CORE_TIMER, str(capture), str(max(1, repeat))],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return {"ok": False, "error": p.stderr[-600:]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    out = {"ok": True, "wall_s": r["wall_s"], "packets_per_s": packets / r["wall_s"],
           "meter": "time.perf_counter around hsrtcp._native.ParquetOut(dir).analyze(FileJob(...)) + close(), "
                    "best of the repeats"}
    meta = capture.parent / "capture.json"
    # (capture.json describes srv.pcap only: no witness for another input such as mptcp.pcap)
    if meta.exists() and json.loads(meta.read_text()).get("packets_server") == packets:
        info = json.loads(meta.read_text()).get("tcp_info") or {}
        if "total_retrans" in info:
            out["witness"] = {
                "retransmissions": {"kernel": info["total_retrans"], "hsrtcp": r["retransmissions"]},
                "timeouts": {"kernel": info.get("total_rto"), "hsrtcp": r["timeouts"]},
                "packets": {"kernel": info["segs_out"] + info["segs_in"] + 1,
                            "hsrtcp": r["c2s_packets"] + r["s2c_packets"]},
            }
    return out


def _script_python(script: Path) -> str:
    """The interpreter a console script starts (its #! line), else this one."""
    first = script.read_bytes()[:512].split(b"\n", 1)[0]
    shebang = first[2:].decode(errors="replace").strip() if first.startswith(b"#!") else ""
    return shebang if shebang and " " not in shebang else sys.executable


def byte_compile(python: str, env: dict | None) -> dict:
    """Write the bytecode of the hsrtcp package the command imports, as an install has it
    (pip compiles a wheel's modules; an editable install writes ``__pycache__`` on first
    import unless PYTHONDONTWRITEBYTECODE is set). compileall writes it even then."""
    probe = subprocess.run([python, "-c", "import os, hsrtcp; print(os.path.dirname(hsrtcp.__file__))"],
                           capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        return {"ok": False, "error": probe.stderr[-300:]}
    pkg = probe.stdout.strip()
    p = subprocess.run([python, "-m", "compileall", "-q", pkg], capture_output=True, text=True, env=env)
    return {"ok": p.returncode == 0, "package": os.path.relpath(pkg, ROOT),
            "dont_write_bytecode_env": os.environ.get("PYTHONDONTWRITEBYTECODE")}


def hsrtcp_command() -> tuple[list[str] | None, dict | None, str | None]:
    """How to run the hsrtcp CLI here, or why it cannot run."""
    env = dict(os.environ)
    if importlib.util.find_spec("hsrtcp") is None:
        env["PYTHONPATH"] = str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", "")
        sys.path.insert(0, str(ROOT / "python"))
    try:
        spec = importlib.util.find_spec("hsrtcp.cli")
    except ImportError as exc:
        return None, None, f"hsrtcp CLI not importable: {exc}"
    if spec is None:
        return None, None, "hsrtcp CLI not importable"
    # The console script a user types (`hsrtcp analyze ...`, no runpy), when installed next
    # to this interpreter and it imports the package of this tree (with the PYTHONPATH a
    # worktree sets, the shared venv's script runs the worktree's package); else `python -m`.
    script = Path(sys.executable).parent / "hsrtcp"
    if script.exists():
        # Probe with the interpreter the script starts (its #! line), not this one: a
        # worktree's venv copied from the main tree has a script whose #! names the main
        # tree's interpreter, which imports the main tree's package, not this tree's.
        probe = subprocess.run([_script_python(script), "-c", "import hsrtcp; print(hsrtcp.__file__)"],
                               capture_output=True, text=True, env=env)
        here = str(ROOT / "python") + os.sep
        if probe.returncode == 0 and os.path.realpath(probe.stdout.strip()).startswith(here):
            return [str(script)], env, None
    return [sys.executable, "-m", "hsrtcp"], env, None


def packets_vs_tshark(capture: Path, out: Path) -> dict:
    """Issue 31's witness on the bench capture: the packets table `hsrtcp analyze --packets`
    wrote, every frame against `tshark -T fields` (hsrtcp.testing.packets_tshark, the fixtures'
    comparison)."""
    import polars as pl

    from hsrtcp.testing.packets_tshark import compare

    c = compare(capture, pl.read_parquet(out / "packets.parquet"), pl.read_parquet(out / "flows.parquet"))
    return {"frames_compared": c.frames, "mismatches": c.mismatches, "first_mismatches": c.first,
            "frames_with_relative_numbers": c.checked_rel, "frames_with_scaled_window": c.checked_window,
            "frames_with_sack": c.checked_sack}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture", type=Path, default=WORK / "srv.pcap", help="single-capture input")
    ap.add_argument("--pair", action="store_true", help="two-vantage mode: --client and --server files")
    ap.add_argument("--client", type=Path, default=WORK / "cli.pcap")
    ap.add_argument("--server", type=Path, default=WORK / "srv.pcap")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results.json")
    ap.add_argument("--skip", action="append", default=[], choices=["hsrtcp", "tcptrace", "tshark"])
    ap.add_argument("--packets", action="store_true",
                    help="also time `hsrtcp analyze --packets` (the packets table) in the same rounds")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per tool; the fastest (least disturbed) run is reported")
    a = ap.parse_args()

    files = [a.client, a.server] if a.pair else [a.capture]
    if not all(f.exists() for f in files):
        if all(f.parent == WORK for f in files):
            maker = "make_mptcp_capture.py" if a.capture.name == "mptcp.pcap" and not a.pair else "make_capture.py"
            print(f"benchmark capture missing; making it with bench/{maker} …")
            rc = subprocess.run([sys.executable, str(ROOT / "bench" / maker)]).returncode
            if rc != 0:
                return rc
        else:
            print(f"missing input: {[str(f) for f in files if not f.exists()]}", file=sys.stderr)
            return 2
    packets = sum(count_records(f) for f in files)
    warm(files)
    results: dict = {"mode": "pair" if a.pair else "single", "files": [str(f) for f in files],
                     "packets": packets, "bytes": sum(f.stat().st_size for f in files),
                     "host": {"machine": platform.machine(), "cpus": os.cpu_count(),
                              "kernel": platform.release(), "python": platform.python_version(),
                              # 1/5/15-minute load averages when the rounds start (and end,
                              # below): on a shared host they say how far to trust the walls
                              "loadavg_start": list(os.getloadavg())},
                     "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tools": {},
                     # the pair rows read it at the top level too
                     "loadavg_start": os.getloadavg()}

    def best(cmds: list[list[str]], env: dict | None = None, inputs: list[Path] | None = None) -> list[dict]:
        """One tool alone: its ``--repeat`` rounds, the fastest kept (see ``interleaved``)."""
        return interleaved({"": (cmds, env, inputs)})[""]

    def record(name: str, runs: list[dict], cmds: list[list[str]]) -> None:
        ok = all(r["rc"] == 0 for r in runs)
        cpu = sum(r["user_s"] + r["sys_s"] for r in runs)
        wall = sum(r["wall_s"] for r in runs)
        rss = max((r["max_rss_bytes"] or 0) for r in runs) or None
        results["tools"][name] = {
            "ok": ok, "commands": [" ".join(c) for c in cmds], "wall_s": wall,
            "user_s": sum(r["user_s"] for r in runs), "sys_s": sum(r["sys_s"] for r in runs),
            "max_rss_bytes": rss, "packets_per_s": packets / wall if ok and wall > 0 else None,
            "packets_per_cpu_s": packets / cpu if ok and cpu > 0 else None,
            "walls_of_all_repeats_s": runs[0].get("all_walls_s"),
            "meter": runs[0]["meter"],
            "error": None if ok else " | ".join(r["stderr_tail"] for r in runs if r["rc"] != 0)[-800:],
        }

    def interleaved(jobs: dict[str, Job]) -> dict[str, list[dict]]:
        """Run every job's command list once per round for ``--repeat`` rounds, the tools
        taking turns (hsrtcp, tcptrace, tshark, hsrtcp, ...), so that load on the shared host,
        which comes and goes over seconds, falls on every tool alike. Per job the round with
        the least wall time is kept (on a shared machine the others measure the neighbours,
        not the tool); the walls of all rounds are kept for the paired ratio. A job's inputs
        (default: the captures) are the files its commands read."""
        reps: dict[str, list[list[dict]]] = {name: [] for name in jobs}
        failed: set[str] = set()
        for _ in range(max(1, a.repeat)):
            for name, (cmds, env, inputs) in jobs.items():
                if name in failed:
                    continue
                runs = []
                for c in cmds:
                    # Warm again before every run, for every tool: this VM reclaims cold page
                    # cache (DAMON), and a run that reads part of the file from disk measures
                    # the disk, not the tool.
                    warm(inputs if inputs is not None else files)
                    runs.append(measure(c, env))
                reps[name].append(runs)
                if any(r["rc"] != 0 for r in runs):
                    failed.add(name)
        chosen = {}
        for name, rounds in reps.items():
            walls = [sum(r["wall_s"] for r in runs) for runs in rounds]
            kept = rounds[walls.index(min(walls))]
            for r in kept:
                r["all_walls_s"] = walls
            chosen[name] = kept
        return chosen

    with tempfile.TemporaryDirectory(prefix="hsrtcp-bench-") as tmp:
        jobs: dict[str, Job] = {}
        base = env = None
        if "hsrtcp" not in a.skip:
            base, env, why = hsrtcp_command()
            if base is None:
                results["tools"]["hsrtcp"] = {"ok": False, "skipped": why}
                print(f"hsrtcp: skipped ({why})")
            else:
                interp = base[0] if base[0] != str(Path(sys.executable).parent / "hsrtcp") else _script_python(Path(base[0]))
                results["bytecode"] = byte_compile(interp, env)
                out = str(Path(tmp) / "hsrtcp-out")
                if a.pair:
                    cmd = base + ["analyze", "--client", str(a.client), "--server", str(a.server),
                                  "-o", out, "-q", "--no-plot"]
                else:
                    cmd = base + ["analyze", str(a.capture), "-o", out, "-q", "--no-plot"]
                jobs["hsrtcp"] = ([cmd], env, None)
                # The README's command exactly, with its defaults (summary printed, no
                # figure): what a new user times (issue 18). Its output goes to the pipe.
                readme = (["analyze", "--client", str(a.client), "--server", str(a.server)] if a.pair
                          else ["analyze", str(a.capture)])
                jobs["hsrtcp_default"] = ([base + readme + ["-o", out + "-default"]], env, None)
                if a.packets and not a.pair:
                    jobs["hsrtcp_packets"] = ([base + ["analyze", str(a.capture), "-o", out + "-packets", "-q",
                                                        "--no-plot", "--packets"]], env, None)
        for peer, argv in (("tcptrace", ["tcptrace", "-n", "-l", "-r"]),
                           ("tshark", ["tshark", "-n", "-q", "-z", "conv,tcp", "-r"])):
            if peer in a.skip:
                continue
            if shutil.which(peer):
                jobs[peer] = ([argv + [str(f)] for f in files], None, None)
            else:
                results["tools"][peer] = {"ok": False, "skipped": f"{peer} not installed"}
        for name, runs in interleaved(jobs).items():
            record(name, runs, jobs[name][0])
        if "hsrtcp_packets" in jobs:
            table = Path(out + "-packets") / "packets.parquet"
            if table.exists():
                results["packets_table"] = {"bytes": table.stat().st_size, "rows": _parquet_rows(table),
                                            "bytes_per_packet": table.stat().st_size / packets}
                if shutil.which("tshark"):  # (also under --skip tshark, which skips its timing)
                    results["packets_vs_tshark"] = packets_vs_tshark(a.capture, table.parent)
        if base is not None:
            # Interpreter start and imports alone, to tell fixed cost from per-packet cost
            # (informational: not in the ratios).
            start = [sys.executable, "-c", "import hsrtcp.cli, hsrtcp.cli.quick, hsrtcp.cli.run_analysis, "
                     "hsrtcp.streaming, hsrtcp._native"]
            record("hsrtcp_startup", best([start], env, inputs=[]), [start])
            if not a.pair:
                results["tools"]["hsrtcp_core"] = core_rate(sys.executable, env, a.capture, packets, a.repeat)
            # Peak memory against capture length (flat = bounded by open flows; for a pair,
            # by the matcher's window and open flows): the first quarter and half of every
            # file (of both files of a pair: the same stretch of time), then the whole.
            scaling = []
            for frac in (0.25, 0.5):
                parts = []
                for f in files:
                    part = Path(tmp) / f"prefix-{frac}-{f.name}"
                    prefix(f, max(1, int(count_records(f) * frac)), part)
                    parts.append(part)
                n = sum(count_records(p) for p in parts)
                args = (["--client", str(parts[0]), "--server", str(parts[1])] if a.pair else [str(parts[0])])
                r = best([base + ["analyze", *args, "-o", out + f"-{frac}", "-q", "--no-plot"]], env, parts)[0]
                entry = {"packets": n, "max_rss_bytes": r["max_rss_bytes"], "wall_s": r["wall_s"]}
                if "tcptrace" not in a.skip and shutil.which("tcptrace"):
                    entry["tcptrace_wall_s"] = sum(best([["tcptrace", "-n", "-l", "-r", str(p)]], inputs=[p])[0]["wall_s"]
                                                   for p in parts)
                scaling.append(entry)
                for p in parts:
                    p.unlink()
            h = results["tools"]["hsrtcp"]
            scaling.append({"packets": packets, "max_rss_bytes": h["max_rss_bytes"], "wall_s": h["wall_s"]})
            results["memory_scaling"] = scaling
            if scaling[0].get("max_rss_bytes") and h.get("max_rss_bytes"):
                # 1.0 = flat; 4.0 = memory proportional to the capture
                results["ratios_memory_whole_over_quarter"] = h["max_rss_bytes"] / scaling[0]["max_rss_bytes"]

    results["host"]["loadavg_end"] = list(os.getloadavg())
    tools = results["tools"]
    ratios = {}
    h = tools.get("hsrtcp", {})
    for peer in ("tcptrace", "tshark"):
        p = tools.get(peer, {})
        if h.get("packets_per_s") and p.get("packets_per_s"):
            ratios[f"hsrtcp_over_{peer}_speed"] = h["packets_per_s"] / p["packets_per_s"]
            if h.get("packets_per_cpu_s") and p.get("packets_per_cpu_s"):
                ratios[f"hsrtcp_over_{peer}_speed_cpu"] = h["packets_per_cpu_s"] / p["packets_per_cpu_s"]
        if h.get("ok") and p.get("ok") and h.get("max_rss_bytes") and p.get("max_rss_bytes"):
            ratios[f"hsrtcp_over_{peer}_memory"] = h["max_rss_bytes"] / p["max_rss_bytes"]
    for name in ("hsrtcp_default", "hsrtcp_packets"):
        d, tt0 = tools.get(name, {}), tools.get("tcptrace", {})
        if d.get("packets_per_s") and tt0.get("packets_per_s"):
            ratios[f"{name}_over_tcptrace_speed"] = d["packets_per_s"] / tt0["packets_per_s"]
            dw, tw0 = d.get("walls_of_all_repeats_s") or [], tt0.get("walls_of_all_repeats_s") or []
            dp = sorted(t / x for x, t in zip(dw, tw0) if x > 0)
            if dp:
                ratios[f"{name}_over_tcptrace_speed_paired_median"] = statistics.median(dp)
    # Paired: round by round (the tools ran in turn), then the median round. Less sensitive
    # than the ratio of the two fastest runs to a quiet moment that only one tool met.
    hw, tw = h.get("walls_of_all_repeats_s") or [], tools.get("tcptrace", {}).get("walls_of_all_repeats_s") or []
    paired = sorted(t / x for x, t in zip(hw, tw) if x > 0)
    if paired and h.get("ok") and tools["tcptrace"].get("ok"):
        ratios["hsrtcp_over_tcptrace_speed_paired_median"] = statistics.median(paired)
        results["paired_ratios"] = paired
    core, tt = tools.get("hsrtcp_core", {}), tools.get("tcptrace", {})
    if core.get("packets_per_s") and tt.get("packets_per_s"):
        ratios["hsrtcp_core_over_tcptrace_speed"] = core["packets_per_s"] / tt["packets_per_s"]
    # Per extra packet, fixed costs (interpreter start, imports) cancelled: the rate that
    # decides on long captures. From the quarter prefix to the whole file, both tools.
    q = (results.get("memory_scaling") or [{}])[0]
    if q.get("tcptrace_wall_s") and h.get("ok") and tt.get("ok"):
        dh, dt = h["wall_s"] - q["wall_s"], tt["wall_s"] - q["tcptrace_wall_s"]
        if dh > 0 and dt > 0:
            ratios["hsrtcp_over_tcptrace_marginal_speed"] = dt / dh
            results["marginal"] = {"packets": packets - q["packets"], "hsrtcp_s": dh, "tcptrace_s": dt,
                                   "hsrtcp_packets_per_s": (packets - q["packets"]) / dh,
                                   "tcptrace_packets_per_s": (packets - q["packets"]) / dt}
    results["loadavg_end"] = os.getloadavg()
    if results.get("ratios_memory_whole_over_quarter"):
        # peak RSS of the whole input over its first quarter: 1.0 flat, 4.0 proportional
        ratios["hsrtcp_memory_whole_over_quarter"] = results.pop("ratios_memory_whole_over_quarter")
    results["ratios"] = ratios
    if core.get("witness"):
        results["witness"] = core["witness"]

    print(f"{results['mode']} mode, {packets:,} packets in {len(files)} file(s), "
          f"{results['bytes'] / 1e6:.0f} MB; load average {results['loadavg_start'][0]:.1f} -> "
          f"{results['loadavg_end'][0]:.1f}")
    print(f"{'tool':14} {'wall s':>8} {'user s':>8} {'pkts/s':>12} {'pkts/CPU-s':>12} {'peak RSS MB':>12}")
    for name, t in tools.items():
        if name == "hsrtcp_core" and t.get("ok"):
            print(f"{name:14} {t['wall_s']:8.2f} {'':>8} {t['packets_per_s']:12,.0f} {'(in-process)':>12}")
            continue
        if name == "hsrtcp_startup" and t.get("ok"):
            print(f"{name:14} {t['wall_s']:8.2f} {t['user_s']:8.2f} {'(imports only)':>12} {'':>12} "
                  f"{(t['max_rss_bytes'] or 0) / 1e6:12.1f}")
            continue
        if not t.get("ok"):
            print(f"{name:14} {'—':>8} {'—':>8} {'—':>12} {'—':>12}  "
                  f"{t.get('skipped') or 'failed: ' + (t.get('error') or '')[-300:]}")
            continue
        rss = f"{t['max_rss_bytes'] / 1e6:.1f}" if t["max_rss_bytes"] else "?"
        def num(x):  # a run too short for the clock's resolution has no rate
            return f"{x:12,.0f}" if x else f"{'—':>12}"
        print(f"{name:14} {t['wall_s']:8.2f} {t['user_s']:8.2f} {num(t['packets_per_s'])} "
              f"{num(t['packets_per_cpu_s'])} {rss:>12}")
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}")
    for name in ("hsrtcp", "hsrtcp_default"):
        if tools.get(name, {}).get("commands"):
            print(f"{name} ran: {tools[name]['commands'][0]}")
    print("load average (1/5/15 min) at start {} and end {}".format(
        *("/".join(f"{x:.1f}" for x in results["host"][k]) for k in ("loadavg_start", "loadavg_end"))))
    if results.get("memory_scaling"):
        print("hsrtcp peak RSS by capture length: " + ", ".join(
            f"{m['packets']:,} packets {(m['max_rss_bytes'] or 0) / 1e6:.0f} MB" for m in results["memory_scaling"]))
    if results.get("packets_table"):
        pt = results["packets_table"]
        print(f"packets.parquet: {pt['rows']:,} rows, {pt['bytes'] / 1e6:.1f} MB, {pt['bytes_per_packet']:.1f} bytes per packet")
    vt = results.get("packets_vs_tshark")
    if vt:
        print(f"packets table vs tshark: {vt['frames_compared']:,} frames compared, {vt['mismatches']} mismatches")
    if results.get("witness"):
        print("witness (server socket's TCP_INFO vs hsrtcp on the server capture): "
              + ", ".join(f"{k} {v['kernel']} vs {v['hsrtcp']}" for k, v in results["witness"].items()))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = a.out.with_suffix(".json.tmp")
    # the results are committed: paths inside the repository are recorded relative to it
    text = json.dumps(results, indent=1).replace(json.dumps(f"{ROOT}{os.sep}")[1:-1], "")
    tmp_out.write_text(text + "\n")
    tmp_out.replace(a.out)
    print(f"wrote {a.out}")
    if vt and vt["mismatches"]:
        print("FAILED: the packets table differs from tshark on the bench capture:\n  "
              + "\n  ".join(vt["first_mismatches"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
