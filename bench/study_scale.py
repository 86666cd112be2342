#!/usr/bin/env python3
"""Study benchmark (issue 32): ``hsrtcp study`` on a partitioned corpus results directory of
many flows, streamed against the in-memory path, memory by /usr/bin/time.

    .venv/bin/python bench/study_scale.py [--flows 10000000] [--per-partition 10000]
                                          [--only CONFIG ...] [--out bench/results-study.json]

How the inputs are made (never a hand-written schema): a few *base* results directories,
each the real ``hsrtcp analyze --client --server --radio`` of a generated capture pair of
``--per-partition`` short connections (copies of the committed fixture pairs
tests/data/small_50k and data_blackout, each with its own client port and start time) and a
generated radio log (standing, 300 km/h without handoffs, 300 km/h with a handoff every
``HANDOFF_S`` s: the study's classes). The corpus (bench/work/study/corpus-N/) is
``input=pNNNNN/`` partitions whose files are hard links to the bases' in turn: the real
files of the real writer, as many flows as asked, little disk.

Measures per configuration (one run each, peak RSS and wall by /usr/bin/time -v):

- ``stream``: ``hsrtcp study CORPUS -o OUT`` as a user types it (streaming over the
  partitions, the default; progress lines and the summary printed);
- ``previous``: the same command with the study code of an earlier commit (``--previous``,
  default 094267d, the streamed path before issue 32's second step): a copy of this
  ``python/`` tree in bench/work/study/previous-REV/ with that commit's study package;
- ``memory``: the in-memory path of before (``HSRTCP_STUDY_STREAM=0``), on the same corpus;
- ``dask``: ``--scheduler`` on a cluster of 2 single-threaded workers started beforehand
  (the ``dask`` command line);
- ``--scheduler``: ``stream`` and ``scheduler`` in turn, ``--rounds`` times each: the same
  command with ``--scheduler`` on a ``distributed.LocalCluster`` of 2 single-threaded worker
  processes (with the worker preload of docs/scale.md) started once, in a process of its
  own, before the first round. Its CPU (``cluster_cpu_s``: the scheduler and the workers,
  taken before and after each command) is added to the command's tree; every table of
  each ``scheduler`` round is compared with the ``stream`` round before it, bit for bit.

``--bootstrap`` is passed through when given; by default the command runs with its own
(1000 resamples: cells of 10^4 flows or more take the bootstrap's normal approximation,
docs/study.md; before, one interval of a mean over 10^6 flows cost about 80 CPU-s).
Memory and CPU are also measured over the process tree (``tree_*``): the streamed study
reads the partitions in worker processes that /usr/bin/time does not count.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work" / "study"
DATA = ROOT / "tests" / "data"
PY = sys.executable
HSRTCP = str(Path(sys.executable).with_name("hsrtcp"))
sys.path.insert(0, str(ROOT / "python"))

#: the connections copied into a base capture pair: (fixture, share of the connections)
TEMPLATES = (("small_50k", 0.9), ("data_blackout", 0.1))
#: seconds between the starts of two connections of a base capture
SPACING_S = 0.02
#: seconds between two handoffs of the base with handoffs
HANDOFF_S = 8.0
#: the bases: (name, speed km/h, handoffs)
BASES = (("static", 0.0, False), ("high0", 300.0, False), ("handoffs", 300.0, True))
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"


def _records(path: Path) -> list[tuple[int, bytes, int]]:
    from hsrtcp.testing import pcapio

    return [(r.ts_ns, r.data, r.orig_len) for r in pcapio.read_records(path)]


def _with_port(frame: bytes, client_ip: bytes, port: int) -> bytes:
    """An Ethernet/IPv4/TCP frame with the client's port replaced (checksums are not read
    by the analysis: captures with offloads have wrong ones too)."""
    ip = 14
    ihl = (frame[ip] & 0x0F) * 4
    tcp = ip + ihl
    b = bytearray(frame)
    if frame[ip + 12:ip + 16] == client_ip:  # from the client: source port
        b[tcp:tcp + 2] = struct.pack(">H", port)
    else:
        b[tcp + 2:tcp + 4] = struct.pack(">H", port)
    return bytes(b)


def make_pair(out: Path, n: int) -> tuple[int, int]:
    """``out/client.pcap`` and ``out/server.pcap``: n connections copied from TEMPLATES, one
    every SPACING_S, client ports 10000 + i. Returns the capture's first and last time (ns)."""
    assert n <= 55000, "one client address: at most 55000 ports"
    templates = []
    for name, share in TEMPLATES:
        sides = {s: _records(DATA / f"{name}.{s}.pcap") for s in ("client", "server")}
        first = sides["client"][0][1]
        client_ip = first[14 + 12:14 + 16]
        t0 = min(sides["client"][0][0], sides["server"][0][0])
        templates.append((share, sides, client_ip, t0))
    frames = {"client": [], "server": []}
    base_ns = 1_800_000_000 * 1_000_000_000
    for i in range(n):
        # the templates in proportion, interleaved (i-th connection from the first template
        # whose running share is behind)
        share, sides, client_ip, t0 = templates[0] if (i % 10) < round(templates[0][0] * 10) else templates[1]
        start = base_ns + int(i * SPACING_S * 1e9)
        for s in ("client", "server"):
            for ts, data, orig in sides[s]:
                frames[s].append((start + ts - t0, _with_port(data, client_ip, 10000 + i), orig))
    for s, recs in frames.items():
        recs.sort(key=lambda r: r[0])
        _write(out / f"{s}.pcap", recs)
    last = max(frames["client"][-1][0], frames["server"][-1][0])
    return base_ns, last


def _write(path: Path, recs: list[tuple[int, bytes, int]]) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # nanosecond pcap, Ethernet
        for ts, data, orig in recs:
            f.write(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000, len(data), orig))
            f.write(data)


def make_radio(path: Path, first_ns: int, last_ns: int, speed: float, handoffs: bool) -> None:
    """A radio log every 100 ms from 1 s before the capture to 1 s after it; with handoffs,
    the cell changes every HANDOFF_S."""
    t0, t1 = first_ns // 1_000_000 - 1000, last_ns // 1_000_000 + 1000
    lines = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    for ms in range(t0, t1, 100):
        cell = 7 + (int((ms - t0) / 1000 / HANDOFF_S) if handoffs else 0)
        lines.append(f"{ms},M,LTE,1,{cell},{speed},-80,-10")
    path.write_text("\n".join(lines) + "\n")


def make_base(name: str, speed: float, handoffs: bool, n: int) -> Path:
    d = WORK / f"base-{name}-{n}"
    res = d / "results"
    if (res / "flows.parquet").is_file():
        return res
    d.mkdir(parents=True, exist_ok=True)
    first, last = make_pair(d, n)
    make_radio(d / "radio.csv", first, last, speed, handoffs)
    if res.exists():
        shutil.rmtree(res)
    subprocess.run([HSRTCP, "analyze", "--client", str(d / "client.pcap"), "--server", str(d / "server.pcap"),
                    "--radio", str(d / "radio.csv"), "--radio-map", RMAP, "--label", f"base={name}",
                    "-o", str(res), "-q", "--no-plot"], check=True)
    return res


def make_corpus(flows: int, per: int) -> Path:
    """``corpus-<flows>/input=pNNNNN/``: hard links to the bases' files, in turn."""
    bases = [make_base(name, speed, h, per) for name, speed, h in BASES]
    parts = -(-flows // per)
    c = WORK / f"corpus-{flows}-{per}"
    if c.is_dir() and len([p for p in os.listdir(c) if p.startswith("input=")]) == parts:
        return c
    if c.exists():
        shutil.rmtree(c)
    c.mkdir(parents=True)
    for k in range(parts):
        src = bases[k % len(bases)]
        dst = c / f"input=p{k:05d}"
        dst.mkdir()
        for f in os.listdir(src):
            if f.endswith(".parquet"):
                os.link(src / f, dst / f)
    return c


def connections_in(res: Path) -> int:
    import polars as pl

    f = pl.read_parquet(res / "flows.parquet", columns=["vantage", "flow_id"])
    return int(f.filter(pl.col("vantage") == "matched").height)


def timed(cmd: list[str], env: dict | None = None) -> dict:
    """Wall seconds, peak RSS (MB) and exit code of ``cmd`` by /usr/bin/time -v, and the
    whole process tree's: the study's worker processes are children of a fork server, whose
    CPU and memory /usr/bin/time does not see. The tree is sampled every 50 ms
    (``tree_peak_rss_mb``: the largest sum of the RSS of the command and every process under
    it; ``tree_cpu_s``: each process's CPU time when last seen)."""
    import threading

    import psutil

    t = time.perf_counter()
    p = subprocess.Popen(["/usr/bin/time", "-v", *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **(env or {})))
    peak, cpu, stop_ = [0], {}, threading.Event()

    def sample() -> None:
        root = psutil.Process(p.pid)
        while not stop_.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                break
            rss = 0
            for q in procs:
                try:
                    with q.oneshot():
                        rss += q.memory_info().rss
                        c = q.cpu_times()
                        cpu[q.pid] = c.user + c.system
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], rss)
            stop_.wait(0.05)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _out, err = p.communicate()
    stop_.set()
    th.join()
    wall = time.perf_counter() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    own = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", err))
    return {"wall_s": round(wall, 2), "cpu_s": round(own, 2), "tree_cpu_s": round(sum(cpu.values()), 2),
            "peak_rss_mb": round(int(m.group(1)) / 1024, 1) if m else None,
            "tree_peak_rss_mb": round(peak[0] / 2**20, 1), "exit": p.returncode,
            "stderr_tail": err.splitlines()[-25:] if p.returncode else []}


def dask_cluster(workers: int = 2):
    """A scheduler and ``workers`` single-threaded workers on localhost (the deployment case)."""
    bin_ = Path(sys.executable).parent
    port = 8800 + os.getpid() % 100
    sched = subprocess.Popen([str(bin_ / "dask"), "scheduler", "--port", str(port), "--no-dashboard"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    worker = subprocess.Popen([str(bin_ / "dask"), "worker", f"tcp://127.0.0.1:{port}", "--nworkers", str(workers),
                               "--nthreads", "1", "--memory-limit", "0", "--no-dashboard",
                               "--preload", "hsrtcp.scale.preload"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    from distributed import Client

    with Client(f"tcp://127.0.0.1:{port}", timeout="60s") as c:
        c.wait_for_workers(workers, timeout=120)
    return f"tcp://127.0.0.1:{port}", (sched, worker)


#: a LocalCluster in a process of its own (not a child of the measured command): prints its
#: address, then serves until its stdin closes
_LOCAL_CLUSTER = """
import json, logging, sys
from distributed import LocalCluster
c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                 silence_logs=logging.ERROR, preload=["hsrtcp.scale.preload"], env=json.loads(sys.argv[1]))
c.wait_for_workers(2)
print(c.scheduler_address, flush=True)
sys.stdin.read()
c.close()
"""


def local_cluster(env: dict | None = None):
    """``(address, process)``: a LocalCluster of 2 single-threaded worker processes, ``env``
    in the workers' environment."""
    p = subprocess.Popen([PY, "-c", _LOCAL_CLUSTER, json.dumps(env or {})], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "python")), start_new_session=True)
    address = p.stdout.readline().strip()
    if not address.startswith("tcp://"):
        p.kill()
        raise SystemExit(f"the LocalCluster did not start (exit {p.wait()})")
    return address, p


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and every process under it."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for q in (root, *root.children(recursive=True)):
        try:
            c = q.cpu_times()
            total += c.user + c.system
        except psutil.Error:
            pass
    return total


def same_tables(a: Path, b: Path) -> bool:
    """Every Parquet file of study output ``a`` equal to ``b``'s, bit for bit, and the same files."""
    import polars as pl

    fa = sorted(f for f in os.listdir(a) if f.endswith(".parquet"))
    fb = sorted(f for f in os.listdir(b) if f.endswith(".parquet"))
    return fa == fb and all(pl.read_parquet(a / f).equals(pl.read_parquet(b / f)) for f in fa)


def stop(procs) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        p.wait(timeout=60)


def previous_tree(rev: str) -> Path:
    """This tree's ``python/`` with the study code of commit ``rev`` (python/hsrtcp/study/
    and the study command): the rest (the results reader, the native module) is the one
    the ``stream`` configuration runs, so only the study's method differs."""
    d = WORK / f"previous-{rev}"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(ROOT / "python", d / "python", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(d / "python" / "hsrtcp" / "study")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "python/hsrtcp/study",
                              "python/hsrtcp/cli/study.py"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(d)], input=archive, check=True)
    return d / "python"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=10_000_000, help="connections in the corpus")
    ap.add_argument("--per-partition", type=int, default=10_000)
    ap.add_argument("--bootstrap", type=int, default=None,
                    help="passed to the command (default: not passed, the command's own 1000)")
    ap.add_argument("--only", nargs="*", default=["stream", "memory", "dask"],
                    help="configurations: stream, previous, memory, dask")
    ap.add_argument("--previous", default="094267d", help="commit of the 'previous' configuration")
    ap.add_argument("--scheduler", action="store_true",
                    help="stream and --scheduler (LocalCluster, 2 workers of 1 thread) in turn, --rounds each")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker-polars-threads", default=None,
                    help="POLARS_MAX_THREADS of the LocalCluster's workers (default: not set, polars' own)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    corpus = make_corpus(a.flows, a.per_partition)
    if a.scheduler:
        return scheduler_rounds(a, corpus)
    parts = sorted(p for p in os.listdir(corpus) if p.startswith("input="))
    conns = sum(connections_in(corpus / p) for p in parts[:len(BASES)]) * (len(parts) // len(BASES)) + sum(
        connections_in(corpus / p) for p in parts[:len(parts) % len(BASES)])
    rows = {}
    load = [os.getloadavg()[0]]
    for cfg in a.only:
        out = WORK / f"out-{cfg}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [HSRTCP, "study", str(corpus), "-o", str(out)]
        if a.bootstrap is not None:
            cmd += ["--bootstrap", str(a.bootstrap)]
        env = {}
        procs = ()
        if cfg == "memory":
            env["HSRTCP_STUDY_STREAM"] = "0"
        elif cfg == "previous":
            env["PYTHONPATH"] = str(previous_tree(a.previous))
        elif cfg == "dask":
            address, procs = dask_cluster()
            cmd += ["--scheduler", address]
        try:
            rows[cfg] = timed(cmd, env)
        finally:
            stop(procs)
        print(cfg, rows[cfg], flush=True)
    same = {}
    import polars as pl

    for other in ("memory", "previous"):
        if "stream" in rows and other in rows and not rows[other]["exit"] and not rows["stream"]["exit"]:
            same[other] = all(pl.read_parquet(WORK / "out-stream" / f).equals(pl.read_parquet(WORK / f"out-{other}" / f))
                              for f in os.listdir(WORK / f"out-{other}") if f.endswith(".parquet"))
    load.append(os.getloadavg()[0])
    result = {"corpus": os.path.relpath(corpus, ROOT), "partitions": len(parts), "connections": conns,
              "bootstrap": a.bootstrap if a.bootstrap is not None else "default (1000)", "load_avg_1min": load, "configs": rows,
              "tables_equal": {f"stream == {k}": v for k, v in same.items()} or None,
              "previous": a.previous if "previous" in rows else None, "host_cores": os.cpu_count(),
              "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    print(json.dumps(result, indent=1))
    if a.out:
        a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


def scheduler_rounds(a, corpus: Path) -> int:
    """``stream`` and ``scheduler`` in turn, ``a.rounds`` times each, on one LocalCluster."""
    import statistics

    env = {"POLARS_MAX_THREADS": a.worker_polars_threads} if a.worker_polars_threads else {}
    address, cluster = local_cluster(env)
    rounds = []
    try:
        for k in range(a.rounds):
            for cfg in ("stream", "scheduler"):
                out = WORK / f"out-{cfg}"
                shutil.rmtree(out, ignore_errors=True)
                cmd = [HSRTCP, "study", str(corpus), "-o", str(out)]
                if a.bootstrap is not None:
                    cmd += ["--bootstrap", str(a.bootstrap)]
                if cfg == "scheduler":
                    cmd += ["--scheduler", address]
                load0, c0 = os.getloadavg()[0], tree_cpu(cluster.pid)
                start = time.strftime("%H:%M:%S", time.gmtime())
                row = timed(cmd)
                row["cluster_cpu_s"] = round(tree_cpu(cluster.pid) - c0, 2) if cfg == "scheduler" else 0.0
                row["all_cpu_s"] = round(row["tree_cpu_s"] + row["cluster_cpu_s"], 2)
                row.update(config=cfg, round=k + 1, load_avg_1min=[load0, os.getloadavg()[0]],
                           start_utc=start)
                if cfg == "scheduler" and not row["exit"]:
                    row["tables_equal_stream"] = same_tables(WORK / "out-stream", out)
                rounds.append(row)
                print(cfg, row, flush=True)
    finally:
        cluster.stdin.close()
        try:
            cluster.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(cluster.pid, signal.SIGTERM)
            cluster.wait(timeout=60)

    def med(cfg: str, key: str) -> float:
        return round(statistics.median(r[key] for r in rounds if r["config"] == cfg), 2)

    summary = {cfg: {k: med(cfg, k) for k in ("wall_s", "all_cpu_s", "cpu_s", "tree_peak_rss_mb")}
               for cfg in ("stream", "scheduler")}
    summary["overhead_median"] = {k: round(summary["scheduler"][k] / summary["stream"][k] - 1, 3)
                                  for k in ("wall_s", "all_cpu_s")}
    result = {"corpus": os.path.relpath(corpus, ROOT), "connections_approx": a.flows,
              "bootstrap": a.bootstrap if a.bootstrap is not None else "default (1000)",
              "cluster": "LocalCluster, 2 worker processes x 1 thread, preload hsrtcp.scale.preload",
              "worker_env": env,
              "rounds": rounds, "median": summary,
              "tables_equal": all(r.get("tables_equal_stream") for r in rounds if r["config"] == "scheduler"),
              "host_cores": os.cpu_count(), "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    print(json.dumps({k: v for k, v in result.items() if k != "rounds"}, indent=1))
    if a.out:
        a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["tables_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
