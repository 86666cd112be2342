#!/usr/bin/env python3
"""Corpus benchmark (issue 19): ``hsrtcp analyze CORPUS`` on the local pool and on Dask.

    .venv/bin/python bench/corpus.py [--singles 16] [--pairs 16] [--rounds 2] [--packets 0 (all)]
                                     [--only CONFIG ...] [--out bench/results-corpus.json]

Input: the benchmark pair of bench/make_capture.py (bench/work/srv.pcap, cli.pcap; make it
first). The corpus (bench/work/corpus/) is ``--singles`` copies of srv.pcap and ``--pairs``
copies of the pair, each cut to its first ``--packets`` records (default: whole) and with its packet times
shifted by a whole number of hours: distinct content (no copy is a duplicate of another),
identical work. One run, interleaved rounds (configurations take turns so the host's load
falls on all alike), the fastest round of each configuration; ratios only.

Every run also reports what a shared host does to it: the 1-minute load average before
and after, the user + system CPU seconds of the run's whole process tree (load does not
inflate them; CPU / wall = the cores the run actually got), and where the wall time went
(``hsrtcp.scale.run.run_corpus(phases=...)``): interpreter start, imports, discovery,
keying (content hashes), the analysis (pool start included; ``first_result``: its start
until the first input is done), writing the failures and inputs tables, worker time idle
inside the analysis and the tail after the last input.

Measures:

- wall time with 1 worker (threads: no pool to start) and 2 workers (processes):
  speed-up = wall(1) / wall(2);
- Dask: the same corpus with ``--scheduler`` on a cluster started beforehand with the
  ``dask`` CLI (scheduler + 2 single-threaded workers on localhost: the deployment case;
  started before each of its runs and stopped after, so the others do not share the host
  with an idle cluster)
  and with ``--dask`` (hsrtcp starts a local cluster: start-up included); overhead
  against the local pool = wall(dask) / wall(pool) - 1;
- threads against processes at 2 workers on small corpora (the pool's THREAD_BYTES rule);
- peak RSS per worker process with a quarter of the inputs and with all of them;
- throughput: GB of captures per CPU-minute (the workers' CPU seconds, which host load
  does not inflate) and per wall-minute per core, and the projection for 1 TB.
- the content key: sampled hash (first + last MiB) against a full BLAKE2b of every file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))


def record_offsets(data: np.ndarray) -> np.ndarray:
    """Byte offsets of every record header of a classic little-endian pcap."""
    assert data[:4].view("<u4")[0] in (0xA1B2C3D4, 0xA1B23C4D), "not a little-endian pcap"
    offs, pos, n = [], 24, len(data)
    incl = data.view(np.uint8)
    while pos + 16 <= n:
        offs.append(pos)
        caplen = int(incl[pos + 8:pos + 12].view("<u4")[0])
        pos += 16 + caplen
    return np.asarray(offs, dtype=np.int64)


def shifted(src: Path, dst: Path, hours: int, offs: np.ndarray) -> None:
    """``src`` with every record's ts_sec (the first u32 of its header) moved by ``hours``."""
    data = np.fromfile(src, dtype=np.uint8)
    idx = (offs[:, None] + np.arange(4)).reshape(-1)
    data[idx] = (data[idx].view("<u4") + np.uint32(3600 * hours)).view(np.uint8)
    data.tofile(dst)


def cut(src: Path, dst: Path, packets: int) -> np.ndarray:
    """The first ``packets`` records of ``src`` into ``dst`` (a pair cut at the same count on
    both sides covers about the same stretch of time); returns dst's record offsets."""
    data = np.fromfile(src, dtype=np.uint8)
    offs = record_offsets(data)
    if 0 < packets < len(offs):
        data = data[: offs[packets]]
        offs = offs[:packets]
    data.tofile(dst)
    return offs


def make_corpus(singles: int, pairs: int, packets: int) -> Path:
    corpus = WORK / "corpus"
    stamp = corpus / ".made"
    want = f"{singles} {pairs} {packets} {(WORK / 'srv.pcap').stat().st_mtime_ns}"
    if stamp.exists() and stamp.read_text() == want:
        return corpus
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    srv, cli = corpus / ".src.server.pcap", corpus / ".src.client.pcap"
    so = cut(WORK / "srv.pcap", srv, packets)
    co = cut(WORK / "cli.pcap", cli, packets)
    for k in range(singles):
        shifted(srv, corpus / f"single{k:03d}.pcap", k + 1, so)
    for k in range(pairs):
        shifted(cli, corpus / f"pair{k:03d}.client.pcap", 1000 + k, co)
        shifted(srv, corpus / f"pair{k:03d}.server.pcap", 1000 + k, so)
    srv.unlink()
    cli.unlink()
    stamp.write_text(want)
    return corpus


def subset(corpus: Path, n: int) -> Path:
    """A corpus of the first n inputs (hard links, same files)."""
    d = WORK / f"corpus_first{n}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    names = sorted(p.name for p in corpus.glob("single*.pcap"))[: n // 2]
    stems = sorted({p.name.split(".")[0] for p in corpus.glob("pair*.pcap")})[: n - len(names)]
    for s in stems:
        names += [f"{s}.client.pcap", f"{s}.server.pcap"]
    for name in names:
        os.link(corpus / name, d / name)
    return d


def drop_cache(corpus: Path) -> None:
    """Read the corpus once so every configuration starts from the page cache."""
    for p in corpus.rglob("*.pcap"):
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass


def run(corpus: Path, out: Path, *, workers: int | None, mode: str | None = None, scheduler: str | None = None,
        dask_local: bool = False, cpus: int | None = None) -> dict:
    """One corpus run in a fresh process (like the CLI): wall time, the CPU time (user + sys)
    of the process and every worker it started and waited for, the host's load average
    before and after, where the time went (run_corpus's ``phases``) and the inputs table.

    ``cpus``: run on the first ``cpus`` cores only (``taskset``), with ``workers=None`` the
    command's defaults (workers = the cores it may use, threads or processes by its rule):
    what `hsrtcp analyze CORPUS -o R` does on a machine of that many cores."""
    shutil.rmtree(out, ignore_errors=True)
    code = (f"import time,sys,json; t=time.perf_counter(); from hsrtcp.scale.run import run_corpus; ph={{}}; "
            f"c=run_corpus({str(corpus)!r}, {str(out)!r}, quiet=True, workers={workers}, mode={mode!r}, "
            f"scheduler={scheduler!r}, dask_local={dask_local!r}, phases=ph); "
            f"import resource; ru=resource.getrusage(resource.RUSAGE_SELF); "
            f"ph['self_cpu_s']=ru.ru_utime+ru.ru_stime; "
            f"print(json.dumps(ph)); print(time.perf_counter()-t); sys.exit(c)")
    load = os.getloadavg()[0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    pin = ["taskset", "-c", f"0-{cpus - 1}"] if cpus else []
    p = subprocess.run([*pin, PY, "-c", code], capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"corpus run failed ({p.returncode}): {p.stderr[-2000:]}")
    import polars as pl

    idx = pl.read_parquet(out / "inputs.parquet")
    assert set(idx["status"]) == {"analyzed"}, idx
    lines = p.stdout.strip().splitlines()
    phases = json.loads(lines[-2])
    inner = float(lines[-1])
    tasks = phases.pop("tasks", [])
    busy = sum(t["end"] - t["start"] for t in tasks)
    last_end = max((t["end"] for t in tasks), default=0.0)
    self_cpu = phases.pop("self_cpu_s")
    worker_cpu = float(idx["cpu_s"].sum())
    return {"wall_s": wall, "inner_s": inner, "inputs": idx.height,
            "bytes": int(idx["bytes"].sum()),
            # CPU (user + sys) of the run: its own process (all its threads: the whole
            # analysis with threads) plus, with processes or Dask, the workers' CPU for their
            # inputs (idx.cpu_s; the pool's workers are the fork server's children, not the
            # run's, so RUSAGE_CHILDREN misses them; their start-up is not counted)
            "tree_cpu_s": self_cpu + (worker_cpu if phases.get("mode") != "threads" else 0.0),
            "children_cpu_s": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
            "cpu_s": worker_cpu,
            "loadavg_1min_before": load, "loadavg_1min_after": os.getloadavg()[0],
            "phases": dict(phases, interpreter_start=wall - inner, imports=inner - phases.get("total", inner),
                           # worker time idle inside the analyze phase: pool start, tail
                           # (one worker finishing alone), hand-over between inputs
                           worker_idle_in_analyze=max(0.0, (workers or phases.get("workers") or 1)
                                                      * phases.get("analyze", 0.0) - busy),
                           tail_after_last_input=max(0.0, phases.get("analyze", 0.0) - last_end)),
            "rss_peak_per_worker": {str(pid): int(g["rss_peak_bytes"].max())
                                    for (pid,), g in idx.group_by("pid")},
            # each worker's peak RSS after each of its inputs, in the order it ran them:
            # flat in the number of inputs means the sequence stops climbing
            "rss_by_worker_in_order": _rss_in_order(idx, tasks),
            "task_s": float(idx["seconds"].sum())}


def _rss_in_order(idx, tasks: list[dict]) -> dict[str, list[int]]:
    rss = dict(zip(idx["input"], idx["rss_peak_bytes"]))
    out: dict[str, list[int]] = {}
    for t in sorted(tasks, key=lambda t: t["start"]):
        if rss.get(t["input"]) is not None:
            out.setdefault(str(t["pid"]), []).append(int(rss[t["input"]]))
    return out


def start_cluster(n: int) -> tuple[str, list[subprocess.Popen]]:
    dask = Path(PY).with_name("dask")
    sf = WORK / "scheduler.json"
    sf.unlink(missing_ok=True)
    procs = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sf)], env=ENV, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)]
    while not sf.exists():
        time.sleep(0.2)
    for i in range(n):
        procs.append(subprocess.Popen([str(dask), "worker", "--scheduler-file", str(sf), "--nthreads", "1",
                                       "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                                       "--preload", "hsrtcp.scale.preload"], env=ENV,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    from distributed import Client

    addr = json.loads(sf.read_text())["address"]
    with Client(addr, timeout="60s") as c:
        c.wait_for_workers(n, timeout=120)
    return addr, procs


def stop_cluster(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def hash_cost(corpus: Path) -> dict:
    sys.path.insert(0, str(ROOT / "python"))
    from hsrtcp.scale.hashing import file_digest

    files = sorted(corpus.glob("*.pcap"))
    total = sum(f.stat().st_size for f in files)
    t = time.perf_counter()
    for f in files:
        file_digest(str(f))
    sampled = time.perf_counter() - t
    t = time.perf_counter()
    for f in files:
        file_digest(str(f), full=True)
    full = time.perf_counter() - t
    return {"files": len(files), "bytes": total, "sampled_s": sampled, "full_s": full,
            "full_gb_per_s": total / full / 1e9}


PHASES = ("interpreter_start", "imports", "discover", "key", "key_s", "first_result", "analyze", "write",
          "worker_idle_in_analyze", "tail_after_last_input")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--singles", type=int, default=16)
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--packets", type=int, default=0,
                    help="records of each bench capture copied into every corpus file (the first ones; "
                         "0 = all: 119 MB files, 5.7 GB for 16 + 16 inputs; 215,000 = the 30 MB files "
                         "of the runs before 27 Nov, whose fixed costs per run weighed more)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results-corpus.json")
    ap.add_argument("--only", action="append", default=[],
                    help="run only these configurations (repeatable; default all; pool_1 and pool_2 always)")
    a = ap.parse_args()
    if not (WORK / "srv.pcap").exists():
        raise SystemExit("bench/work/srv.pcap missing: run bench/make_capture.py (e.g. --bytes 300000000) first")
    corpus = make_corpus(a.singles, a.pairs, a.packets)
    n_inputs = a.singles + a.pairs
    quarter = subset(corpus, max(2, n_inputs // 4))
    small = subset(corpus, 2)
    tiny = WORK / "fixtures"  # the test fixtures: many small files (tests/data/*.pcap)
    shutil.rmtree(tiny, ignore_errors=True)
    tiny.mkdir()
    for f in sorted((ROOT / "tests" / "data").glob("*.pcap")):
        shutil.copy(f, tiny / f.name)
    load_start = os.getloadavg()
    drop_cache(corpus)

    def on_cluster() -> dict:
        # the cluster runs only around its own runs: an idle scheduler and two workers take
        # about 5 % of a core (heartbeats; measured 27 Nov), which the other configurations
        # would otherwise pay; its start is not timed (the deployment case: it is up already)
        addr, procs = start_cluster(2)
        try:
            return run(corpus, res, workers=2, scheduler=addr)
        finally:
            stop_cluster(procs)

    res = WORK / "bench_results"
    configs = {
        "pool_1": lambda: run(corpus, res, workers=1),                       # threads (1 worker)
        "pool_2": lambda: run(corpus, res, workers=2, mode="processes"),
        # the README command with its defaults on 1 core and on both: what a second core gives
        "cores_1": lambda: run(corpus, res, workers=None, cpus=1),
        "cores_2": lambda: run(corpus, res, workers=None, cpus=2),
        "pool_2_threads": lambda: run(corpus, res, workers=2, mode="threads"),
        "dask_scheduler_2": on_cluster,
        "dask_local_2": lambda: run(corpus, res, workers=2, dask_local=True),
        "quarter_pool_2": lambda: run(quarter, res, workers=2, mode="processes"),
        "small_threads_2": lambda: run(small, res, workers=2, mode="threads"),
        "small_processes_2": lambda: run(small, res, workers=2, mode="processes"),
        "fixtures_threads_2": lambda: run(tiny, res, workers=2, mode="threads"),
        "fixtures_processes_2": lambda: run(tiny, res, workers=2, mode="processes"),
    }
    if a.only:
        configs = {k: v for k, v in configs.items() if k in {"pool_1", "pool_2", "cores_1", "cores_2", *a.only}}
    rounds: dict[str, list[dict]] = {k: [] for k in configs}
    for r in range(a.rounds):
        for name, fn in configs.items():
            rounds[name].append(fn())
            x = rounds[name][-1]
            ph = x["phases"]
            print(f"round {r + 1} {name}: {x['wall_s']:.2f} s wall, {x['tree_cpu_s']:.2f} s CPU (user+sys), "
                  f"load {x['loadavg_1min_before']:.1f}; phases: "
                  + ", ".join(f"{k} {ph[k]:.2f}" for k in PHASES if isinstance(ph.get(k), float)),
                  file=sys.stderr, flush=True)
    best = {k: min(v, key=lambda x: x["wall_s"]) for k, v in rounds.items()}
    opt = lambda k, f: f(best[k]) if k in best else None  # noqa: E731 - configurations left out by --only
    b = best["pool_2"]
    # cores_1 and cores_2 run one after the other in every round: their ratio per round
    second_core = [one["wall_s"] / two["wall_s"] for one, two in zip(rounds["cores_1"], rounds["cores_2"])]
    gb = b["bytes"] / 1e9
    per_cpu_min = gb / (b["cpu_s"] / 60)
    per_core_wall_min = gb / (b["wall_s"] / 60) / 2
    rss_all = max(best["pool_2"]["rss_peak_per_worker"].values())
    rss_quarter = max(best["quarter_pool_2"]["rss_peak_per_worker"].values()) if "quarter_pool_2" in best else float("nan")
    out = {
        "corpus": {"inputs": n_inputs, "singles": a.singles, "pairs": a.pairs, "bytes": b["bytes"],
                   "packets_per_file": a.packets or "all",
                   "capture": json.loads((WORK / "capture.json").read_text()).get("packets", None)},
        "loadavg_start": load_start,
        "best": best,
        "walls": {k: [x["wall_s"] for x in v] for k, v in rounds.items()},
        "loadavg_1min": {k: [x["loadavg_1min_before"] for x in v] for k, v in rounds.items()},
        "speedup_2_over_1": best["pool_1"]["wall_s"] / best["pool_2"]["wall_s"],
        # the same command (defaults) pinned to 1 core and to 2: the speed-up of a second core
        # (one worker is not one core: a capture's reader, engine and writer are threads)
        "speedup_2_cores_over_1": best["cores_1"]["wall_s"] / best["cores_2"]["wall_s"],
        # the same per round: the median says how much of the best-of ratio a typical round
        # on this shared host gets
        "speedup_2_cores_over_1_rounds": second_core,
        "speedup_2_cores_over_1_paired_median": float(np.median(second_core)),
        "phases_cores_1": best["cores_1"]["phases"], "phases_cores_2": best["cores_2"]["phases"],
        # user+sys CPU of the whole run (process tree): equal for 1 and 2 workers means the
        # work did not grow with the workers; cores_used = CPU / wall is what the host gave
        "cpu_s_1": best["pool_1"]["tree_cpu_s"], "cpu_s_2": best["pool_2"]["tree_cpu_s"],
        "cores_used_1": best["pool_1"]["tree_cpu_s"] / best["pool_1"]["wall_s"],
        "cores_used_2": best["pool_2"]["tree_cpu_s"] / best["pool_2"]["wall_s"],
        "phases_1": best["pool_1"]["phases"], "phases_2": best["pool_2"]["phases"],
        "dask_scheduler_overhead": opt("dask_scheduler_2", lambda b: b["wall_s"] / best["pool_2"]["wall_s"] - 1),
        "dask_local_overhead": opt("dask_local_2", lambda b: b["wall_s"] / best["pool_2"]["wall_s"] - 1),
        "threads_over_processes_2": opt("pool_2_threads", lambda b: b["wall_s"] / best["pool_2"]["wall_s"]),
        "small_threads_over_processes": opt("small_threads_2", lambda b: b["wall_s"] / best["small_processes_2"]["wall_s"]),
        "fixtures_threads_over_processes": opt("fixtures_threads_2",
                                               lambda b: b["wall_s"] / best["fixtures_processes_2"]["wall_s"]),
        "rss_peak_worker_all_mb": rss_all / 1e6,
        "rss_peak_worker_quarter_mb": rss_quarter / 1e6,
        # the same run's workers after the first half of their inputs and after all of them
        "rss_peak_worker_first_half_mb": max(seq[len(seq) // 2 - 1]
                                             for seq in best["pool_2"]["rss_by_worker_in_order"].values()
                                             if len(seq) >= 2) / 1e6,
        "gb_per_cpu_minute": per_cpu_min,
        "gb_per_wall_minute_per_core": per_core_wall_min,
        "hash": hash_cost(corpus),
        "loadavg_end": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    # projection: 1 TB on N machines of C cores at the measured per-core rate (see bench/README.md)
    out["fixtures_bytes"] = opt("fixtures_threads_2", lambda b: b["bytes"])
    out["small_bytes"] = opt("small_threads_2", lambda b: b["bytes"])
    out["projection_1tb_hours"] = {f"{n}x{c}cores": 1000 / (per_core_wall_min * c * n) / 60
                                   for n, c in ((1, 2), (1, 32), (4, 32), (16, 32))}
    a.out.write_text(json.dumps(out, indent=1, default=str))
    print(json.dumps({k: v for k, v in out.items() if k not in ("best", "walls")}, indent=1, default=str))


if __name__ == "__main__":
    main()
