#!/usr/bin/env python3
"""Consumers at scale (issue 32): `hsrtcp model fit` on 1 M flows and the CSV radio reader on
millions of lines, each against today's path (the code of a baseline commit) in the same run.

    .venv/bin/python bench/scale_consumers.py [--flows 1000000] [--radio-lines 2000000,10000000]
        [--baseline REV] [--baseline-max-lines 2000000] [--rounds 1]
        [--out bench/results-consumers.json]

Inputs (built once into bench/work/, not committed):

- ``flows-<N>.parquet``: the flows table of real two-vantage analyses (the pairs of
  tests/data with drops, blackouts and ACK delay, analyzed by ``hsrtcp.analyze``: client,
  server and matched rows, the analyzer's own schema and metadata), its rows repeated to N
  with flow ids 0 … N−1 and p_d, rtt_mean, rto_first_mean and throughput_pkts scaled by a
  seeded factor in [0.5, 1.5] per row, so that the rows differ. Nothing is a hand-made schema:
  the columns, types and file metadata are those the engine wrote.
- ``radio-<N>.csv``: a lab-format radio log (docs/formats/radio.md) of N lines, three carriers
  at 1 Hz, a cell change every 30 s and an EDGE stretch (null RSRP/RSRQ) every 997 s on one
  carrier; written from a generator.
- ``radio-longline-1g.csv``: a header, one sample and 1 GiB of digits without a line end
  (issue 32's "1 GB log with one long line").
- ``report-<N>/``: the results directory of ``hsrtcp analyze`` on the same pairs, its flows
  table repeated to N rows (the first copy keeps its ids and so its events and series).

Runs, each in a fresh interpreter under ``/usr/bin/time -v`` (wall time, user + system CPU,
peak RSS, exit status): ``hsrtcp model fit FLOWS -o DIR --group-by vantage``;
``hsrtcp report DIR -o HTML`` (and the page's size); the radio
reader, ``read_radio(FILE, "lab")`` (the frame's rows and a hash of its content printed, or
the error). The two report pages are compared byte for byte but for their generation time
(``report_pages_equal``). "baseline" runs the same with the package of ``--baseline`` (``git archive`` of
python/hsrtcp into bench/work/, with this build's native module and uPlot), "current" with
the working tree or, with ``--current REV``, another revision made the same way (the working
tree of a shared checkout may hold other work in progress). The model fit tables of the two are compared (equal or not); the radio frames by their
row count and content hash. The baseline reader is run only up to ``--baseline-max-lines``
lines (it holds ~18 times its file). ``--radio-context N`` (N one of ``--radio-lines``) also
runs the analysis' steps on the N-line log with both trees, each step's peak RSS apart
(read, handoffs, context of 2,000 flows, coverage, radio.parquet: :data:`CONTEXT`), and
compares the tables by hash (``radio_context_same_tables``). ``--radio-analyze N`` runs the
command a user types, ``hsrtcp analyze --client C --server S --radio radio-N.csv --carrier M
--radio-offset X -o DIR`` (the console script, :data:`ANALYZE_PAIR`'s captures; X puts their
flows across a cell change in the middle of the log), with both trees, and compares the five
context tables it writes by hash (``radio_analyze_same_tables``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / "work"
PY = ROOT / ".venv" / "bin" / "python"
DATA = ROOT / "tests" / "data"
PAIRS = ["drops_cubic", "bbr_drops", "multi_concurrent", "ack_delay", "data_blackout", "reno_nosack_nots"]
# the environment the runs get: this process's before anything imports polars, which writes its
# allocator setting (_RJEM_MALLOC_CONF) into os.environ, where the runs would inherit it
ENV = dict(os.environ)
# the commit before issue 32's changes to the readers and the fit
DEFAULT_BASELINE = "730c31f"

READER = """
import sys, time
from hsrtcp.context.readers import read_radio
from hsrtcp.errors import InputError
t = time.perf_counter()
try:
    lg = read_radio(sys.argv[1], "lab")
except InputError as exc:
    print("error", round(time.perf_counter() - t, 3), str(exc)[:300])
    sys.exit(3)
print("ok", round(time.perf_counter() - t, 3), lg.frame.height, lg.frame.hash_rows().sum())
"""

# The analysis' uses of a radio log, in the order of hsrtcp.context.enrich.compute_context: the
# scan (checks, radio.parquet, handoffs, coverage, the flows' samples) and the context of 2,000
# flows spread over the log (a tree without hsrtcp.context.stream: read, handoffs, context,
# coverage, radio.parquet). Prints one JSON line: per step the RSS before it and the VmHWM
# after it (never reset: /usr/bin/time's maximum is the whole run's), and where the tables
# are: the bench hashes them in its own process afterwards (s14; before, the script hashed
# them itself, with pyarrow, inside the measured process).
CONTEXT = """
import json, sys
import numpy as np, polars as pl
from hsrtcp.context.classes import flow_context
from hsrtcp.context.coverage import coverage
from hsrtcp.context.handoffs import handoffs
from hsrtcp.context.readers import read_radio
def mb(k):
    return [int(x.split()[1]) // 1024 for x in open("/proc/self/status") if x.startswith(k)][0]
steps = {}
def step(name, fn):
    before = mb("VmRSS")
    r = fn()
    steps[name] = [before, mb("VmHWM")]
    return r
n = 2000
out = sys.argv[2]
# the flows' span: the log's first and last time (the generated log is in time order)
with open(sys.argv[1], "rb") as f:
    f.readline()
    first = float(f.readline().split(b",")[0])
    f.seek(-4096, 2)
    last = float(f.read().splitlines()[-1].split(b",")[0])
a = np.linspace(first, last - 120, n)
flows = pl.DataFrame({"flow_id": pl.Series(range(n), dtype=pl.UInt64), "first_ts": a,
                      "last_ts": a + np.linspace(1, 110, n), "run_id": pl.Series([None] * n, dtype=pl.String),
                      "carrier": ["MUT"[i % 3] for i in range(n)], "preset_reason": pl.Series([None] * n, dtype=pl.String)})
try:  # the tree reads the log block by block (hsrtcp.context.stream, issue 32)
    from hsrtcp.context.stream import scan_radio
except ImportError:
    scan_radio = None
if scan_radio is None:
    radio = step("read", lambda: read_radio(sys.argv[1], "lab").frame.with_columns(pl.lit(None, pl.String).alias("run_id")))
    ho = step("handoffs", lambda: handoffs(radio))
    ctx = step("context", lambda: flow_context(flows, radio, ho))
    cov = step("coverage", lambda: coverage(radio))
    step("radio_parquet", lambda: radio.write_parquet(out))
    ho.write_parquet(out + ".handoffs")
else:
    lg = step("scan", lambda: scan_radio(sys.argv[1], "lab", first_ts=a.tolist(), last_ts=flows["last_ts"].to_list(),
                                         parquet=out))
    if getattr(lg, "handoff_files", None) is not None:  # handoffs spilled to files (s13)
        ctx = step("context", lambda: flow_context(flows, None, None, {None: lg.windows}, {None: lg.handoff_arrays}))
    else:
        ctx = step("context", lambda: flow_context(flows, None, lg.derived, {None: lg.windows}))
        lg.derived.write_parquet(out + ".handoffs")
    cov = lg.coverage
ctx.write_parquet(out + ".context")
cov.write_parquet(out + ".coverage")
print(json.dumps({"steps": steps}, separators=(",", ":")))
"""


# the capture pair of --radio-analyze (its flows last 14 ms: the scan is the run's work)
ANALYZE_PAIR = "drops_cubic"
ANALYZE_TABLES = ("radio", "handoffs", "context", "suspensions", "coverage")


def context_files(out: Path) -> dict[str, list[Path]]:
    """The tables a CONTEXT run leaves beside its radio rows ``out`` (the handoffs: the scan's
    spill files ``out.handoffsN``, or one file)."""
    return {"radio": [out], "handoffs": sorted(out.parent.glob(out.name + ".handoffs*")),
            "context": [Path(f"{out}.context")], "coverage": [Path(f"{out}.coverage")]}


def context_hashes(files: dict[str, list[Path]]) -> dict | None:
    """A run's tables (name -> its files) hashed here, a row group at a time (a sum of the
    rows' hashes: the same as the whole table's, and as s13's in-process hashes), then removed."""
    import polars as pl
    import pyarrow.parquet as pq

    if not all(f.exists() for fs in files.values() for f in fs):
        return None
    hashes = {}
    for name, paths in files.items():
        hashes[name] = sum(int(pl.from_arrow(pf.read_row_group(k)).hash_rows().sum())
                           for pf in map(pq.ParquetFile, paths) for k in range(pf.num_row_groups)) % 2**64 % 10**12
    for f in (f for fs in files.values() for f in fs):
        f.unlink()
    return hashes


def make_flows(path: Path, n: int, tree: Path) -> dict:
    """Build ``path`` in a fresh interpreter running the package of ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    p = subprocess.run([str(PY), __file__, "--make-flows", str(path), "--flows", str(n)], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"building {path} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout)


def _make_flows(path: Path, n: int) -> dict:
    import numpy as np
    import polars as pl

    import hsrtcp

    from hsrtcp.results import metadata

    base = hsrtcp.analyze([], client=[DATA / f"{p}.client.pcap" for p in PAIRS],
                          server=[DATA / f"{p}.server.pcap" for p in PAIRS], progress=False).flows
    meta = metadata("flows")  # what the engine's writer puts in every flows.parquet
    rng = np.random.default_rng(1)
    df = base[np.arange(n) % base.height].with_columns(pl.Series("flow_id", np.arange(n, dtype=np.uint64)))
    df = df.with_columns((pl.col(c) * pl.Series(rng.uniform(0.5, 1.5, n))).alias(c)
                         for c in ("p_d", "rtt_mean", "rto_first_mean", "throughput_pkts"))
    df.write_parquet(path, metadata=meta)
    return {"rows": n, "source_rows": base.height, "columns": df.width, "metadata": meta,
            "bytes": path.stat().st_size}


def make_report_results(out: Path, n: int, tree: Path) -> dict:
    """A results directory for ``hsrtcp report``: ``hsrtcp analyze`` of the PAIRS (run with the
    package of ``tree``), its flows table repeated to ``n`` rows. The first copy keeps the
    analyzed ids (their events, series and RTT samples are in the other tables, so the drill-
    downs of the largest flows have data); the other copies get ids from 10^12 and their
    payload bytes scaled down by 0.1 % a copy, so that the analyzed rows stay the largest."""
    import numpy as np
    import polars as pl

    src = WORK / "report-src"
    if not (src / "flows.parquet").exists():
        args = []
        for p in PAIRS:
            args += ["--client", str(DATA / f"{p}.client.pcap"), "--server", str(DATA / f"{p}.server.pcap")]
        env = dict(os.environ, PYTHONPATH=str(tree))
        p = subprocess.run([str(PY), "-m", "hsrtcp", "analyze", *args, "-q", "--no-plot", "-o", str(src)], env=env,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"analyzing the pairs for the report failed:\n{p.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(src, out)
    f = pl.read_parquet(src / "flows.parquet")
    meta = {k: v for k, v in pl.read_parquet_metadata(src / "flows.parquet").items() if k.startswith("hsrtcp.")}
    i = np.arange(n) % f.height
    k = np.arange(n) // f.height
    # (all uint64: mixed with int64, numpy would go through float64 and merge nearby ids)
    ids = np.where(k == 0, f["flow_id"].to_numpy()[i], np.uint64(10**12) + np.arange(n, dtype=np.uint64))
    shrink = pl.Series(1.0 / (1.0 + k * 1e-3))
    t = f[i].with_columns(pl.Series("flow_id", ids),
                          *[(pl.col(c) * shrink).round().cast(f.schema[c]) for c in ("c2s_payload_bytes",
                                                                                       "s2c_payload_bytes")])
    t.write_parquet(out / "flows.parquet", metadata=meta)
    return {"rows": n, "source_rows": f.height, "tables": sorted(x.name for x in out.glob("*.parquet"))}


def make_radio(path: Path, n: int) -> dict:
    carriers = [("M", 1000, 1_000_000), ("U", 2000, 2_000_001), ("T", 3000, 3_000_002)]
    k = s = 0
    with open(path, "w") as f:
        f.write("ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db\n")
        buf: list[str] = []
        while k < n:
            lat, lon = 39.8652 - s * 1e-5, 116.3786 + s * 1.2e-5
            for j, (c, lac, cid) in enumerate(carriers):
                if k >= n:
                    break
                if j == 2 and s % 997 < 40:
                    buf.append(f"{s}.000,{lat:.6f},{lon:.6f},300.0,{c},EDGE,{lac},{cid + s // 30},,\n")
                else:
                    buf.append(f"{s}.000,{lat:.6f},{lon:.6f},300.0,{c},LTE,{lac},{cid + s // 30},"
                               f"-{70 + s % 30}.4,-{7 + s % 5}.8\n")
                k += 1
            s += 1
            if len(buf) >= 30_000:
                f.write("".join(buf))
                buf = []
        f.write("".join(buf))
    return {"lines": n + 1, "bytes": path.stat().st_size}


def make_long_line(path: Path) -> dict:
    with open(path, "wb") as f:
        f.write(b"ts,lat,lon,speed_kmh,carrier,rat,lac,cid,rsrp_dbm,rsrq_db\n"
                b"0.000,39.865200,116.378600,300.0,M,LTE,1000,1000000,-67.4,-7.8\n")
        block = b"9" * (1 << 20)
        for _ in range(1024):
            f.write(block)
    return {"lines": 3, "bytes": path.stat().st_size}


def analyze_offset(tree: Path, lines: int) -> float:
    """The --radio-offset that puts the middle of ANALYZE_PAIR's flows on the log's cell change
    nearest its middle (make_radio: one every 30 s, three lines a second)."""
    import polars as pl

    out = WORK / "radio-analyze-flows"
    shutil.rmtree(out, ignore_errors=True)
    pair = [str(DATA / f"{ANALYZE_PAIR}.{side}.pcap") for side in ("client", "server")]
    r = timed([str(ROOT / ".venv" / "bin" / "hsrtcp"), "analyze", "--client", pair[0], "--server", pair[1],
               "-o", out.name, "--quiet"], tree)
    if r["exit"] != 0:
        raise SystemExit(f"analyze of {ANALYZE_PAIR}: exit {r['exit']}: {r['stderr_tail']}")
    f = pl.read_parquet(out / "flows.parquet")
    shutil.rmtree(out)
    mid = (f["first_ts"].min() + f["last_ts"].max()) / 2
    return round(mid - 30 * round(lines / 3 / 2 / 30), 6)


def baseline_tree(rev: str) -> Path:
    """python/hsrtcp of ``rev`` with this build's native module, under bench/work/."""
    sha = subprocess.run(["git", "rev-parse", "--short=12", rev], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    dest = WORK / f"baseline-{sha}"
    if not (dest / "python" / "hsrtcp" / "__init__.py").exists():
        dest.mkdir(parents=True, exist_ok=True)
        tar = dest / "src.tar"
        subprocess.run(["git", "archive", "-o", str(tar), sha, "python/hsrtcp"], cwd=ROOT, check=True)
        with tarfile.open(tar) as t:
            t.extractall(dest)  # (our own archive of the repository)
        tar.unlink()
    for so in (ROOT / "python" / "hsrtcp").glob("_native*.so"):
        shutil.copy2(so, dest / "python" / "hsrtcp" / so.name)
    # the report's uPlot (npm, not in git): this checkout's
    modules = dest / "python" / "hsrtcp" / "report" / "js" / "node_modules"
    if not modules.exists() and (ROOT / "python" / "hsrtcp" / "report" / "js" / "node_modules").is_dir():
        modules.parent.mkdir(parents=True, exist_ok=True)
        modules.symlink_to(ROOT / "python" / "hsrtcp" / "report" / "js" / "node_modules")
    return dest / "python"


def timed(cmd: list[str], pythonpath: Path) -> dict:
    env = dict(ENV, PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1")
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env, cwd=WORK)
    wall = time.perf_counter() - t
    info = dict(re.findall(r"^\s*(.+?): (.+)$", p.stderr, re.M))
    status = int(info.get("Exit status", p.returncode))
    tail = [x for x in p.stderr.splitlines() if not x.startswith("\t") and "Command being timed" not in x]
    return {"exit": status, "wall_s": round(wall, 2),
            "cpu_s": round(float(info.get("User time (seconds)", "nan")) + float(info.get("System time (seconds)", "nan")), 2),
            "max_rss_mb": round(int(info.get("Maximum resident set size (kbytes)", "0")) / 1024, 1),
            "stdout": p.stdout.strip()[-400:], "stderr_tail": tail[-3:]}


def context_peak(r: dict) -> float | None:
    """The CONTEXT run's peak RSS: the largest of its steps' VmHWM and /usr/bin/time's maximum
    (the same since s14's script resets nothing; up to s13 it reset VmHWM before each step
    with clear_refs 5, which also reset what /usr/bin/time reports: s13's README numbers were
    the peak after the last reset, below the scan's by 13-30 MB)."""
    try:
        steps = json.loads(r["stdout"])["steps"]
    except (ValueError, KeyError):
        return None
    return max([r["max_rss_mb"], *(float(v[1]) for v in steps.values())])


def same_fit(a: Path, b: Path) -> bool | None:
    import polars as pl

    fa, fb = a / "model_fit_flows.parquet", b / "model_fit_flows.parquet"
    if not (fa.exists() and fb.exists()):
        return None
    return pl.read_parquet(fa).equals(pl.read_parquet(fb)) and \
        pl.read_csv(a / "model_fit_summary.csv").equals(pl.read_csv(b / "model_fit_summary.csv"))


def same_page(a: Path, b: Path) -> bool | None:
    """The two report pages byte for byte, their generation time aside (None: one is missing)."""
    if not (a.exists() and b.exists()):
        return None
    stamp = re.compile(rb'"generated":"[^"]*"|Generated [0-9T:+-]+ by')
    return stamp.sub(b"", a.read_bytes()) == stamp.sub(b"", b.read_bytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=1_000_000)
    ap.add_argument("--radio-lines", default="2000000,10000000", help="comma-separated line counts")
    ap.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision of today's path")
    ap.add_argument("--current", default="tree",
                    help="what is measured against it: 'tree' (the working tree) or a git revision")
    ap.add_argument("--baseline-max-lines", type=int, default=2_000_000)
    ap.add_argument("--overlay", action="append", default=[],
                    help="a file of python/hsrtcp (path from the repository root) copied from the current tree into "
                         "the baseline's: a baseline whose reader predates this build's native module (recorded)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--skip-fit", action="store_true")
    ap.add_argument("--skip-radio", action="store_true")
    ap.add_argument("--skip-report", action="store_true")
    ap.add_argument("--skip-reader", action="store_true",
                    help="not the whole-frame reader runs (read_radio) of the logs: only --radio-context")
    ap.add_argument("--radio-context", type=int, default=0, metavar="LINES",
                    help="also the analysis' steps on the radio log of LINES lines (both trees, any size)")
    ap.add_argument("--radio-analyze", type=int, default=0, metavar="LINES",
                    help="also `hsrtcp analyze --radio` (the command a user types) on the log of LINES lines")
    ap.add_argument("--inputs-tree", choices=("current", "baseline"), default="current",
                    help="the package that analyzes the captures the flows come from")
    ap.add_argument("--make-flows", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results-consumers.json")
    a = ap.parse_args()
    if a.make_flows:
        print(json.dumps(_make_flows(a.make_flows, a.flows)))
        return
    WORK.mkdir(parents=True, exist_ok=True)
    trees = {"baseline": baseline_tree(a.baseline),
             "current": ROOT / "python" if a.current == "tree" else baseline_tree(a.current)}
    current = a.current if a.current == "tree" else trees["current"].parent.name.removeprefix("baseline-")
    for rel in a.overlay:  # (the archive is re-made when the baseline's directory is removed)
        shutil.copy2(trees["current"].parent / rel, trees["baseline"].parent / rel)
    inputs: dict[str, dict] = {}
    flows = WORK / f"flows-{a.flows}.parquet"
    if not a.skip_fit:
        meta = flows.with_suffix(".json")
        if not (flows.exists() and meta.exists()):
            meta.write_text(json.dumps(make_flows(flows, a.flows, trees[a.inputs_tree])))
        inputs["flows"] = {"file": str(flows.relative_to(ROOT)), **json.loads(meta.read_text()),
                           "analyzed_by": a.inputs_tree}
    logs: dict[str, Path] = {}
    if not a.skip_radio:
        for n in (int(x) for x in a.radio_lines.split(",") if x):
            p = WORK / f"radio-{n}.csv"
            meta = p.with_suffix(".json")
            if not (p.exists() and meta.exists()):
                meta.write_text(json.dumps(make_radio(p, n)))
            logs[f"radio_{n}"] = p
            inputs[f"radio_{n}"] = {"file": str(p.relative_to(ROOT)), **json.loads(meta.read_text())}
        p = WORK / "radio-longline-1g.csv"
        if not p.exists():
            make_long_line(p)
        logs["radio_longline_1g"] = p
        inputs["radio_longline_1g"] = {"file": str(p.relative_to(ROOT)), "bytes": p.stat().st_size}
    report_dir = WORK / f"report-{a.flows}"
    if not a.skip_report:
        meta = WORK / f"report-{a.flows}.json"
        if not ((report_dir / "flows.parquet").exists() and meta.exists()):
            meta.write_text(json.dumps(make_report_results(report_dir, a.flows, trees[a.inputs_tree])))
        inputs["report"] = {"dir": str(report_dir.relative_to(ROOT)), **json.loads(meta.read_text()),
                            "analyzed_by": a.inputs_tree}
    if a.radio_analyze:
        inputs["radio_analyze"] = {"log": inputs[f"radio_{a.radio_analyze}"]["file"], "pair": ANALYZE_PAIR,
                                   "radio_offset": (offset := analyze_offset(trees["current"], a.radio_analyze))}
    load0 = os.getloadavg()[0]
    runs: dict[str, list[dict]] = {}
    for _ in range(a.rounds):
        for side, tree in trees.items():
            if not a.skip_fit:
                out = WORK / f"fit-{side}"
                shutil.rmtree(out, ignore_errors=True)
                r = timed([str(PY), "-m", "hsrtcp", "model", "fit", str(flows), "-o", str(out), "--group-by", "vantage"],
                          tree)
                runs.setdefault(f"model_fit_{side}", []).append(r)
            if not a.skip_report:
                html = WORK / f"report-{side}.html"
                html.unlink(missing_ok=True)
                r = timed([str(PY), "-m", "hsrtcp", "report", str(report_dir), "-o", str(html)], tree)
                r["html_mb"] = round(html.stat().st_size / 1e6, 2) if html.exists() else None
                runs.setdefault(f"report_{side}", []).append(r)
            for name, p in ({} if a.skip_reader else logs).items():
                n = inputs[name].get("lines", 0)
                if side == "baseline" and n - 1 > a.baseline_max_lines:
                    continue
                # (paths from bench/work/, the runs' directory: no machine path in the results)
                r = timed([str(PY), "-c", READER, os.path.relpath(p, WORK)], tree)
                runs.setdefault(f"{name}_{side}", []).append(r)
            if a.radio_context:
                out = WORK / f"radio-context-{side}.parquet"
                for f in (f for fs in context_files(out).values() for f in fs):
                    f.unlink(missing_ok=True)
                r = timed([str(PY), "-c", CONTEXT, f"radio-{a.radio_context}.csv", out.name], tree)
                r["peak_mb"] = context_peak(r)
                r["hash"] = context_hashes(context_files(out))
                runs.setdefault(f"radio_context_{a.radio_context}_{side}", []).append(r)
            if a.radio_analyze:
                out = WORK / f"radio-analyze-{side}"
                shutil.rmtree(out, ignore_errors=True)
                pair = [os.path.relpath(DATA / f"{ANALYZE_PAIR}.{k}.pcap", WORK) for k in ("client", "server")]
                r = timed([str(ROOT / ".venv" / "bin" / "hsrtcp"), "analyze", "--client", pair[0], "--server", pair[1],
                           "--radio", f"radio-{a.radio_analyze}.csv", "--carrier", "M",
                           "--radio-offset", repr(offset), "-o", out.name, "--quiet"], tree)
                r["hash"] = context_hashes({t: [out / f"{t}.parquet"] for t in ANALYZE_TABLES})
                shutil.rmtree(out, ignore_errors=True)
                runs.setdefault(f"radio_analyze_{a.radio_analyze}_{side}", []).append(r)
        print(json.dumps({k: {x: v[-1].get(x) for x in ("exit", "wall_s", "cpu_s", "max_rss_mb", "peak_mb")}
                          for k, v in runs.items()}),
              file=sys.stderr, flush=True)
    best = {k: min(v, key=lambda r: (r["exit"], r["wall_s"])) for k, v in runs.items()}
    checks = {}
    if not a.skip_fit:
        checks["model_fit_tables_equal"] = same_fit(WORK / "fit-baseline", WORK / "fit-current")
    if not a.skip_report:  # (equal only against a baseline whose page is the same: issue 32's column reads)
        checks["report_pages_equal"] = same_page(WORK / "report-baseline.html", WORK / "report-current.html")
    for name in logs:
        b, c = best.get(f"{name}_baseline"), best.get(f"{name}_current")
        if b and c:
            checks[f"{name}_same_frame"] = b["stdout"].split()[2:] == c["stdout"].split()[2:] if \
                b["stdout"].startswith("ok") and c["stdout"].startswith("ok") else None
    b, c = best.get(f"radio_context_{a.radio_context}_baseline"), best.get(f"radio_context_{a.radio_context}_current")
    if b and c and b["exit"] == 0 and c["exit"] == 0:
        checks["radio_context_same_tables"] = b["hash"] is not None and b["hash"] == c["hash"]
    b, c = best.get(f"radio_analyze_{a.radio_analyze}_baseline"), best.get(f"radio_analyze_{a.radio_analyze}_current")
    if b and c and b["exit"] == 0 and c["exit"] == 0:
        checks["radio_analyze_same_tables"] = b["hash"] is not None and b["hash"] == c["hash"]
    out = {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                 "load_1min": [round(load0, 2), round(os.getloadavg()[0], 2)]},
        "baseline": a.baseline,
        "baseline_overlay": a.overlay,
        "current": current,
        "inputs": inputs,
        "rounds": a.rounds,
        "best": best,
        "checks": checks,
        "all": runs,
    }
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({"checks": checks} | {k: {x: v.get(x) for x in ("exit", "wall_s", "cpu_s", "max_rss_mb", "peak_mb")}
                                           for k, v in best.items()}, indent=2))


if __name__ == "__main__":
    main()
