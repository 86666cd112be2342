"""`hsrtcp study` at field scale (issue 32): the streamed study (one partition at a time,
hsrtcp.study.stream) gives the in-memory path's tables bit for bit, skips a partition it
cannot read with a failures row, reports progress as plain lines when not on a terminal, and
runs its per-partition part on a real Dask cluster with the same tables.

Inputs: a corpus results directory (input=<id>/ partitions, docs/scale.md) of real
`hsrtcp analyze` runs of the tests/data capture pairs with radio logs written around their
packet times (standing, 300 km/h, 300 km/h with a handoff: three seed classes) and one
capture analyzed without a radio log."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import hsrtcp
from hsrtcp.cli import main
from hsrtcp.study import columns, stats, stream

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"
CASES = {"data_blackout": (0.0, False), "small_50k": (300.0, False), "drops_cubic": (300.0, True),
         "clean_200k": (300.0, False), "zero_window": (0.0, False)}


def _radio(path: Path, start: float, end: float, speed: float, handoff: bool) -> Path:
    first, last, mid = round(start * 1000) - 1000, round(end * 1000) + 1000, round((start + end) / 2 * 1000)
    path.write_text("Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ\n" + "".join(
        f"{ms},M,LTE,1,{8 if handoff and ms >= mid else 7},{speed},-80,-10\n" for ms in range(first, last, 2)))
    return path


def _run(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:
        return exc.code


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("study_scale")
    c = base / "corpus"
    c.mkdir()
    for name, (speed, handoff) in CASES.items():
        client, server = DATA / f"{name}.client.pcap", DATA / f"{name}.server.pcap"
        f = hsrtcp.analyze([client], vantage="client").flows
        log = _radio(base / f"{name}.csv", float(f["first_ts"].min()), float(f["last_ts"].max()), speed, handoff)
        assert _run(["analyze", "--client", str(client), "--server", str(server), "--radio", str(log),
                     "--radio-map", RMAP, "--label", f"case={name}", "-o", str(c / f"input={name}"), "-q",
                     "--no-plot"]) == 0
    assert _run(["analyze", str(DATA / "multi_concurrent.server.pcap"), "-o", str(c / "input=noradio"), "-q",
                 "--no-plot"]) == 0
    return c


def _same(a: hsrtcp.study.Study, b: hsrtcp.study.Study) -> None:
    assert set(b.tables) - set(a.tables) == {"failures"}
    for name, df in a.tables.items():
        other = b.tables[name]
        other = other.collect() if isinstance(other, pl.LazyFrame) else other
        assert df.schema == other.schema, name
        assert df.equals(other), name  # bit for bit: every value, null and order
    assert a.notes == b.notes


@pytest.mark.parametrize("by, bootstrap", [((), 0), ((), 200), (("case", "workload"), 0), (("carrier",), 100)])
def test_streamed_study_equals_the_in_memory_one(corpus, by, bootstrap):
    memory = hsrtcp.study(corpus, by=list(by), bootstrap=bootstrap, seed=3)
    streamed = hsrtcp.study(corpus, by=list(by), bootstrap=bootstrap, seed=3, stream=True)
    assert memory.rows("study_flows") == streamed.rows("study_flows") >= 6
    # the data has what each statistic needs: values in three seed classes, timeouts, handoffs
    perf = streamed.performance.filter(pl.col("metric") == "throughput_bps")
    assert perf.filter(pl.col("value").is_not_null())["flow_class"].n_unique() >= 5
    _same(memory, streamed)
    assert streamed.failures.is_empty()


def test_streamed_large_cells_equal_the_in_memory_ones(corpus, monkeypatch):
    """Cells from stats.LARGE_FLOWS flows (normal-approximation intervals, computed from
    arrays on the streamed path) equal the in-memory path's, with the threshold lowered to
    this corpus's size."""
    monkeypatch.setattr(stats, "LARGE_FLOWS", 6)
    memory = hsrtcp.study(corpus, bootstrap=50, seed=3)
    streamed = hsrtcp.study(corpus, bootstrap=50, seed=3, stream=True)
    _same(memory, streamed)
    perf = streamed.performance.filter(pl.col("note") == stats.LARGE_NOTE)
    assert set(perf["metric"]) >= {"throughput_bps", "throughput_zero_share", "rtt_mean_s"}
    assert perf["value_lo"].null_count() == 0 and perf.filter(pl.col("metric") == "throughput_bps")["median_lo"].null_count() == 0


def test_without_interval_the_cells_are_what_stats_gives(corpus):
    """The numpy cells (--bootstrap 0) against the stats functions on the same values."""
    s = hsrtcp.study(corpus, bootstrap=0, stream=True)
    flows = s.study_flows.collect()
    for col in ("rtt_mean_s", "dupack_rate", "closure_s"):
        values = flows[col].to_list()
        want = stats.per_flow(values, min_flows=1, n_boot=0, rng=None)
        got = s.tables["performance" if col == "rtt_mean_s" else "dupack" if col == "dupack_rate" else "handshake"]
        metric = {"rtt_mean_s": "rtt_mean_s", "dupack_rate": "dupack_rate", "closure_s": "closure_s"}[col]
        row = got.filter((pl.col("flow_class") == "all") & (pl.col("metric") == metric)).row(0, named=True)
        assert (row["value"], row["median"], row["n_flows"], row["note"]) == (want.value, want.median, want.n_flows,
                                                                              want.note)


def test_a_corrupt_partition_is_named_and_skipped(corpus, tmp_path, capsys):
    c = tmp_path / "corpus"
    shutil.copytree(corpus, c)
    bad = c / "input=small_50k" / "flows.parquet"
    bad.write_bytes(b"PAR1" + b"\0" * 100)  # a cut / overwritten file
    whole = hsrtcp.study(corpus, bootstrap=0)
    code = _run(["study", str(c), "-o", str(tmp_path / "st"), "--bootstrap", "0"])
    err = capsys.readouterr().err
    assert code == 3
    assert f"{bad}: cannot read as Parquet" in err and "Traceback" not in err
    assert "1 of 6 results directories could not be read and were skipped" in err
    failures = pl.read_parquet(tmp_path / "st" / "failures.parquet")
    assert failures["result"].to_list() == [str(c / "input=small_50k")]
    assert str(bad) in failures["reason"][0]
    # the rest still counted: every flow but the skipped partition's
    flows = pl.read_parquet(tmp_path / "st" / "study_flows.parquet")
    lost = whole.study_flows.filter(pl.col("result").str.ends_with("input=small_50k")).height
    assert lost > 0 and flows.height == whole.study_flows.height - lost
    assert not flows["result"].str.ends_with("input=small_50k").any()


def test_progress_as_plain_lines_off_a_terminal(corpus, tmp_path, capsys):
    assert _run(["study", str(corpus), "-o", str(tmp_path / "st"), "--bootstrap", "0"]) == 0
    err = capsys.readouterr().err.splitlines()
    lines = [x for x in err if x.startswith("study: ")]
    assert [x.split(" partitions")[0] for x in lines] == [f"study: {k}/6" for k in range(1, 7)]
    assert lines[-1].startswith("study: 6/6 partitions read (100 %), 0 failed")
    assert _run(["study", str(corpus), "-o", str(tmp_path / "st2"), "--bootstrap", "0", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_progress_as_a_bar_on_a_terminal(corpus, tmp_path):
    """On a terminal (stderr a pty) the progress is rich's bar, not the plain lines."""
    from hsrtcp.testing.terminal import run_on_a_terminal

    exe = str(Path(sys.executable).with_name("hsrtcp"))
    code, err = run_on_a_terminal([exe, "study", str(corpus), "-o", str(tmp_path / "st"), "--bootstrap", "0"],
                                  timeout=300)
    assert code == 0
    assert "study: partitions" in err  # the bar's label
    assert "partitions read" not in err  # no plain line


def test_cli_stream_writes_the_in_memory_files(corpus, tmp_path, monkeypatch):
    assert _run(["study", str(corpus), "-o", str(tmp_path / "stream"), "-q", "--by", "case"]) == 0
    monkeypatch.setenv("HSRTCP_STUDY_STREAM", "0")
    assert _run(["study", str(corpus), "-o", str(tmp_path / "memory"), "-q", "--by", "case"]) == 0
    names = sorted(p.name for p in (tmp_path / "memory").glob("*.parquet"))
    assert len(names) == 13
    for n in names:
        assert pl.read_parquet(tmp_path / "memory" / n).equals(pl.read_parquet(tmp_path / "stream" / n)), n
    assert pl.read_parquet(tmp_path / "stream" / "failures.parquet").is_empty()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("hsrtcp-study-")]  # spool removed


DASK = Path(sys.executable).with_name("dask")


@pytest.mark.skipif(not DASK.exists(), reason="the dask CLI is not installed next to this python")
def test_scheduler_runs_the_partitions_on_a_dask_cluster(corpus, tmp_path, capsys):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sched_file)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, start_new_session=True)]
    try:
        procs.append(subprocess.Popen([str(DASK), "worker", "--scheduler-file", str(sched_file), "--nworkers", "2",
                                       "--nthreads", "1", "--memory-limit", "0", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                      start_new_session=True))
        from distributed import Client

        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        with Client(scheduler_file=str(sched_file), timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
            address = client.scheduler.address
            workers = set(client.run(os.getpid).values())
        code = _run(["study", str(corpus), "-o", str(tmp_path / "dask"), "-q", "--bootstrap", "100",
                     "--scheduler", address])
        assert code == 0, capsys.readouterr().err
        s = hsrtcp.study(corpus, bootstrap=0, stream=True, scheduler=address)
        # the partitions were read by the cluster's worker processes, not by this one
        assert len(workers) == 2 and {pid for _host, pid in s.workers} <= workers
        assert os.getpid() not in workers
        # a partition the workers cannot read: named and skipped there as it is locally
        bad = tmp_path / "corpus"
        shutil.copytree(corpus, bad)
        (bad / "input=small_50k" / "flows.parquet").write_bytes(b"PAR1" + b"\0" * 100)
        assert _run(["study", str(bad), "-o", str(tmp_path / "dask-bad"), "-q", "--bootstrap", "100",
                     "--scheduler", address]) == 3
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(30)
    memory = hsrtcp.study(corpus, bootstrap=100)
    for name, df in memory.tables.items():
        assert df.equals(pl.read_parquet(tmp_path / "dask" / f"{name}.parquet")), name
    # and the local run of the same command: the same files, every table (failures too) bit
    # for bit, the same manifest
    assert _run(["study", str(corpus), "-o", str(tmp_path / "local"), "-q", "--bootstrap", "100"]) == 0
    _same_files(tmp_path / "local", tmp_path / "dask")
    assert _run(["study", str(bad), "-o", str(tmp_path / "local-bad"), "-q", "--bootstrap", "100"]) == 3
    assert pl.read_parquet(tmp_path / "dask-bad" / "failures.parquet")["result"].to_list() == [
        str(bad / "input=small_50k")]
    _same_files(tmp_path / "local-bad", tmp_path / "dask-bad")


def _same_files(a: Path, b: Path) -> None:
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    assert "failures.parquet" in names and "study.json" in names
    for n in names:
        if n.endswith(".parquet"):
            x, y = pl.read_parquet(a / n), pl.read_parquet(b / n)
            assert x.schema == y.schema and x.equals(y), n
        else:
            assert (a / n).read_bytes() == (b / n).read_bytes(), n


def test_unreachable_scheduler_is_an_input_error(corpus, tmp_path, capsys):
    code = _run(["study", str(corpus), "-o", str(tmp_path / "st"), "-q", "--scheduler", "tcp://127.0.0.1:9"])
    assert code == 3
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler tcp://127.0.0.1:9" in err and "Traceback" not in err


def test_spool_holds_the_partitions_rows_only_while_the_study_lives(corpus, tmp_path):
    s = hsrtcp.study(corpus, bootstrap=0, stream=True, spool_dir=str(tmp_path))
    spool = Path(s.spool)
    assert spool.parent == tmp_path and len(list(spool.glob("flows-*.parquet"))) == 6
    del s
    assert not spool.exists()


def test_column_cells_match_stats_with_nulls_and_nan():
    """columns' numpy cells against stats on values with nulls, NaN and inf (bootstrap 0)."""
    import numpy as np

    o = hsrtcp.study.tables.Options(n_boot=0)
    values = np.array([1.0, np.nan, 2.5, np.inf, 0.0, 7.25, np.nan])
    mask = np.array([True, True, False, True, True, True, True])
    got = columns._per_flow(values, mask, o, None, True)
    want = stats.per_flow([1.0, None, float("inf"), 0.0, 7.25, None], min_flows=1, n_boot=0, rng=None)
    assert got == want
    num = pl.Series([1.0, None, 3.0, 2.0, float("nan")])
    den = pl.Series([2.0, 4.0, 0.0, None, 5.0])
    valid = (num.is_not_null() & den.is_not_null() & (den > 0)).fill_null(False).to_numpy()
    got = columns._ratio(num, den, valid, np.ones(5, dtype=bool), o, None)
    want = stats.ratio(num.to_list(), den.to_list(), min_flows=1, n_boot=0, rng=None)
    assert got.n_flows == want.n_flows == 2 and got.n == want.n
    assert (got.value is None and want.value is None) or np.isnan(got.value) == np.isnan(want.value)



def test_worker_processes_and_chunks_of_partitions_give_the_same_tables(corpus, tmp_path, monkeypatch):
    """A large study's path on the small corpus: the partitions read by worker processes
    (hsrtcp.scale.pool), three partitions per task and spool file, one of them unreadable."""
    c = tmp_path / "corpus"
    shutil.copytree(corpus, c)
    (c / "input=drops_cubic" / "series.parquet").write_bytes(b"PAR1" + b"\0" * 100)
    monkeypatch.setattr(stream, "PROCESS_MIN_PARTITIONS", 0)
    monkeypatch.setattr(stream, "TASKS_PER_WORKER", 1)
    monkeypatch.setattr("hsrtcp.scale.pool.default_workers", lambda: 2)
    s = hsrtcp.study(c, by=["case"], bootstrap=50, seed=1, stream=True, spool_dir=str(tmp_path), processes=True)
    assert len(list(Path(s.spool).glob("flows-*.parquet"))) == 2  # 6 partitions, 3 a task
    assert os.getpid() not in {pid for _host, pid in s.workers} and len(s.workers) == 2
    assert s.failures["result"].to_list() == [str(c / "input=drops_cubic")]
    assert "series.parquet" in s.failures["reason"][0]
    # the tables of the other five, read in memory
    rest = sorted(str(p) for p in c.iterdir() if p.name != "input=drops_cubic")
    memory = hsrtcp.study(rest, by=["case"], bootstrap=50, seed=1)
    assert s.notes[-1].startswith("skipped: ")
    s.notes = s.notes[:-1]
    s.inputs = memory.inputs
    _same(memory, s)


def test_class_reasons_tied_in_count_are_listed_by_name_on_both_paths():
    """classes.reasons: the three most frequent reasons, a tie in count broken by name (the
    in-memory path listed ties in the order the flows came, the streamed path counts from
    aggregated rows: one rule for both)."""
    from hsrtcp.study import groups, tables

    reasons = ["z gap", "y gap", "x gap", "w gap", "w gap"]
    frame = pl.DataFrame({"flow_class": ["unknown"] * 5 + ["static"], "class_reason": [*reasons, None],
                          "flow_id": list(range(6))})
    o = tables.Options(n_boot=0)
    memory = tables.classes(groups.explode_classes(frame), o)
    streamed = tables.classes(tables.Flows(frame.lazy()), o)
    assert memory.equals(streamed)
    row = memory.filter(pl.col("flow_class") == "unknown").row(0, named=True)
    assert row["reasons"] == "w gap (2); x gap (1); y gap (1)" and row["n_flows"] == 5
    assert memory.filter(pl.col("flow_class") == "all")["share"].to_list() == [1.0]
    assert memory.filter(pl.col("flow_class") == "static")["reasons"].to_list() == [None]


def test_write_ahead_files_are_the_tables(corpus, tmp_path):
    """study_flows and throughput_samples encoded while the summary tables are computed
    (write_ahead, what the command asks) are the files written, equal to the in-memory ones."""
    s = hsrtcp.study(corpus, by=["case"], bootstrap=0, stream=True, write_ahead=True, spool_dir=str(tmp_path))
    assert s.encoded.path("study_flows") == str(Path(s.spool) / "study_flows.parquet")
    s.write(tmp_path / "st")
    memory = hsrtcp.study(corpus, by=["case"], bootstrap=0)
    for name in ("study_flows", "throughput_samples"):
        assert pl.read_parquet(tmp_path / "st" / f"{name}.parquet").equals(memory.tables[name]), name
        assert (tmp_path / "st" / f"{name}.parquet").read_bytes() == Path(s.encoded.path(name)).read_bytes()


def test_flat_lists_keep_what_pooled_keeps():
    """The pooled metrics' flat values from Arrow offsets: nulls, NaN and inf dropped, null
    rows and empty lists count 0, a sliced column read from its own offsets."""
    import numpy as np

    s = pl.Series("v", [[1.0, None, float("nan")], None, [], [2.0, float("inf"), 3.5], [4.0]])
    flat, lengths, starts = columns._flat_lists(pl.DataFrame({"v": s}).lazy(), "v")
    assert flat.tolist() == [1.0, 2.0, 3.5, 4.0] and lengths.tolist() == [1, 0, 0, 2, 1]
    assert starts.tolist() == [0, 1, 1, 1, 3]
    flat, lengths, starts = columns._flat_lists(pl.DataFrame({"v": s}).slice(1, 4).lazy(), "v")
    assert flat.tolist() == [2.0, 3.5, 4.0] and lengths.tolist() == [0, 0, 2, 1] and starts.tolist() == [0, 0, 0, 2]
    o = hsrtcp.study.tables.Options(n_boot=0)
    full = columns._flat_lists(pl.DataFrame({"v": s}).lazy(), "v")
    got = columns._pooled(*full, np.ones(5, dtype=bool), o, None, True)
    assert got == stats.pooled([x if x is not None else [] for x in s.to_list()], min_flows=1, n_boot=0, rng=None)


_ONE_THREAD_SCRIPT = """
import os
import sys

import polars as pl

import hsrtcp
import hsrtcp.scale.pool
from hsrtcp.study import stream

stream.PROCESS_MIN_PARTITIONS = 0
stream.TASKS_PER_WORKER = 1
hsrtcp.scale.pool.default_workers = lambda: 2

if __name__ == "__main__":
    s = hsrtcp.study(sys.argv[1], bootstrap=0, stream=True, processes=True, spool_dir=sys.argv[2])
    assert s.workers and os.getpid() not in {pid for _host, pid in s.workers}
    print(pl.thread_pool_size(), *s.worker_polars_threads)
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: polars has one thread anyway")
def test_worker_processes_run_polars_on_one_thread(corpus, tmp_path):
    """The study's worker processes (one per core) run polars on one thread each (bench/README.md
    "Study": the second thread cost CPU on the worker's core); the command's own polars keeps
    its threads, and a POLARS_MAX_THREADS the user set is kept. A fresh interpreter: the pool's
    fork server takes the environment when it starts, once per process."""
    script = tmp_path / "one_thread.py"
    script.write_text(_ONE_THREAD_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "POLARS_MAX_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])

    def run(**extra) -> list[int]:
        p = subprocess.run([sys.executable, str(script), str(corpus), str(tmp_path)], capture_output=True, text=True,
                           env=dict(env, **extra), timeout=600)
        assert p.returncode == 0, p.stderr
        return [int(x) for x in p.stdout.split()]

    cores = pl.thread_pool_size()
    assert cores >= 2
    assert run() == [cores, 1]
    assert run(POLARS_MAX_THREADS="2") == [2, 2]


def test_empty_suspensions_give_the_joined_plans_frame(corpus):
    """samples.suspensions skips its join when the partition has no suspension (a standing
    trip): the frame it returns is the one the join gives when nothing matches, schema too."""
    from hsrtcp.study import load, samples
    from hsrtcp.study.connections import connections

    res = load.read([corpus / "input=drops_cubic"])
    assert res.suspensions is not None and res.suspensions.height > 0
    conns = connections(res.flows)
    none = 1 + max(conns[c].max() for c in ("flow_id", "client_row", "server_row"))
    unmatched = res.suspensions.head(1).with_columns(pl.lit(none, dtype=res.suspensions.schema["flow_id"])
                                                     .alias("flow_id"))
    res.suspensions = unmatched  # a row of no connection: the plan runs and finds nothing
    joined = samples.suspensions(res, conns)
    res.suspensions = unmatched.clear()
    skipped = samples.suspensions(res, conns)
    assert joined.is_empty() and skipped.schema == joined.schema and skipped.equals(joined)
