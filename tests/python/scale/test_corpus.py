"""`hsrtcp analyze CORPUS -o RESULTS` on the local pool (docs/scale.md): every input's
partition equals a one-by-one `hsrtcp analyze` of that input, row for row; resume, force,
failures, duplicates, the lock, manifests, globs, DuckDB and the study reading the result."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil

import duckdb
import polars as pl
import pytest

from hsrtcp.scale.lock import ResultsLock
from hsrtcp.scale.run import run_corpus

from .conftest import DATA, hsrtcp_cli
from .tables import assert_same_results, partitions

EXPECTED_IDS = {"clean_200k", "small_50k", "trip2--multi_sequential.server.pcap",
                "trip2--zero_window.server.pcap", "trip2--reuse_4tuple.client.pcap", "bundles--run-0001"}


def one_by_one(inp_id: str, corpus, out):
    """The reference: the plain one-input command line for that input."""
    args = {"clean_200k": ["--client", corpus / "clean_200k.client.pcap", "--server", corpus / "clean_200k.server.pcap"],
            "small_50k": ["--client", corpus / "small_50k.client.pcap", "--server", corpus / "small_50k.server.pcap"],
            "trip2--multi_sequential.server.pcap": [corpus / "trip2/multi_sequential.server.pcap", "--vantage", "server"],
            "trip2--zero_window.server.pcap": [corpus / "trip2/zero_window.server.pcap", "--vantage", "server"],
            "trip2--reuse_4tuple.client.pcap": [corpus / "trip2/reuse_4tuple.client.pcap", "--vantage", "client"],
            "bundles--run-0001": [corpus / "bundles/run-0001"]}[inp_id]
    hsrtcp_cli("analyze", *args, "-q", "--no-plot", "-o", out, check=0)


def status(results) -> dict[str, str]:
    df = pl.read_parquet(results / "inputs.parquet")
    return dict(zip(df["input"], df["status"]))


@pytest.mark.parametrize("mode", ["processes", "threads"])
def test_corpus_equals_one_by_one(corpus, tmp_path, mode):
    res = tmp_path / "res"
    code = run_corpus(str(corpus), str(res), quiet=True, workers=2, mode=mode)
    assert code == 0
    parts = partitions(res)
    assert set(parts) == EXPECTED_IDS
    rows = 0
    for inp_id, part in parts.items():
        ref = tmp_path / "ref" / inp_id
        one_by_one(inp_id, corpus, ref)
        rows += assert_same_results(part, ref)
        assert json.loads((part / "_input.json").read_text())["status"] == "done"
    assert rows > 100
    # processes really ran elsewhere (threads: here)
    pids = {json.loads((p / "_input.json").read_text())["pid"] for p in parts.values()}
    assert (os.getpid() not in pids) == (mode == "processes")
    assert pl.read_parquet(res / "failures.parquet").height == 0


def test_cli_duckdb_and_study_read_the_corpus(corpus, tmp_path):
    res = tmp_path / "res"
    p = hsrtcp_cli("analyze", corpus, "-o", res, "-q", check=0)
    assert p.stderr == ""
    flows = duckdb.sql(f"select input, count(*) n from read_parquet('{res}/*/flows.parquet', hive_partitioning=true, "
                       f"union_by_name=true) group by input").fetchall()
    per_input = {i: pl.read_parquet(part / "flows.parquet").height for i, part in partitions(res).items()}
    assert dict(flows) == per_input
    st = hsrtcp_cli("study", res, "-o", tmp_path / "study", "-q", check=0)
    sf = pl.read_parquet(tmp_path / "study" / "study_flows.parquet")
    assert {os.path.basename(r) for r in sf["result"].unique()} <= {f"input={i}" for i in per_input}
    assert sf["result"].n_unique() >= 5, st.stderr
    # hsrtcp query: the partitions are one view per table, with the hive column `input`,
    # beside the corpus's own tables (and a plain results directory in the same query)
    single = tmp_path / "single"
    hsrtcp_cli("analyze", DATA / "clean_200k.server.pcap", "-o", single, "-q", "--no-plot", check=0)
    q = hsrtcp_cli("query", res, single, "select results, input, count(*) n from flows group by all order by all",
                   "-f", "csv", check=0)
    got = {(r["results"], r["input"]): int(r["n"]) for r in csv.DictReader(io.StringIO(q.stdout))}
    want = {("res", i): n for i, n in per_input.items() if n}
    want[("single", "")] = pl.read_parquet(single / "flows.parquet").height
    assert got == want, q.stderr
    q = hsrtcp_cli("query", res, "select count(*) n from inputs where status = 'analyzed'", "-f", "csv", check=0)
    assert int(q.stdout.splitlines()[1]) == len(per_input)


def test_resume_skips_unchanged_and_redoes_changed(corpus, tmp_path):
    res = tmp_path / "res"
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2) == 0
    assert set(status(res).values()) == {"analyzed"}
    inode = {i: (p / "flows.parquet").stat().st_ino for i, p in partitions(res).items()}
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2) == 0
    assert set(status(res).values()) == {"skipped"}
    assert inode == {i: (p / "flows.parquet").stat().st_ino for i, p in partitions(res).items()}
    # a changed capture (other content, same name) is redone; so is a touched one
    shutil.copy(DATA / "ipv6_drops.server.pcap", corpus / "trip2" / "zero_window.server.pcap")
    os.utime(corpus / "small_50k.server.pcap", ns=(1, 1))
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2) == 0
    st = status(res)
    assert {i for i, s in st.items() if s == "analyzed"} == {"trip2--zero_window.server.pcap", "small_50k"}
    changed = partitions(res)["trip2--zero_window.server.pcap"]
    ref = tmp_path / "ref"
    hsrtcp_cli("analyze", corpus / "trip2/zero_window.server.pcap", "--vantage", "server", "-q", "--no-plot",
               "-o", ref, check=0)
    assert_same_results(changed, ref)
    # --force redoes everything
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2, force=True) == 0
    assert set(status(res).values()) == {"analyzed"}


def test_broken_unreadable_and_duplicate_inputs(corpus, tmp_path):
    shutil.copy(DATA / "broken" / "record_cut.pcap", corpus / "record_cut.pcap")
    shutil.copy(DATA / "broken" / "wrong_magic.pcap", corpus / "trip2" / "wrong_magic.pcap")
    os.symlink(tmp_path / "nowhere.pcap", corpus / "ghost.pcap")  # a file that cannot be opened
    shutil.copy(corpus / "trip2" / "zero_window.server.pcap", corpus / "zz_copy.pcap")  # a duplicate
    res = tmp_path / "res"
    p = hsrtcp_cli("analyze", corpus, "-o", res, check=3)
    assert "Traceback" not in p.stderr
    f = pl.read_parquet(res / "failures.parquet")
    got = {(r["input"], r["kind"], r["offset"]) for r in f.iter_rows(named=True)}
    assert got == {("record_cut.pcap", "broken", 574), ("trip2--wrong_magic.pcap", "broken", 0),
                   ("ghost.pcap", "unreadable", None), ("zz_copy.pcap", "duplicate", None)}, f
    ghost = f.filter(pl.col("input") == "ghost.pcap")["reason"][0]
    assert "ghost.pcap" in ghost and "No such file" in ghost
    dup = f.filter(pl.col("input") == "zz_copy.pcap")["reason"][0]
    assert "trip2--zero_window.server.pcap" in dup
    parts = partitions(res)
    # the good inputs are all there; the cut capture keeps the flow read before the error
    assert EXPECTED_IDS <= set(parts)
    assert "ghost.pcap" not in parts and "zz_copy.pcap" not in parts
    ref = tmp_path / "ref"
    hsrtcp_cli("analyze", corpus / "record_cut.pcap", "-q", "--no-plot", "-o", ref, check=3)
    assert_same_results(parts["record_cut.pcap"], ref)
    # a re-run keeps the failure rows of skipped inputs and still exits 3
    p2 = hsrtcp_cli("analyze", corpus, "-o", res, "-q", check=3)
    assert pl.read_parquet(res / "failures.parquet").equals(f)
    assert status(res)["record_cut.pcap"] == "skipped"
    assert p2.stderr == ""


def test_lock_refuses_a_second_run(corpus, tmp_path):
    res = tmp_path / "res"
    res.mkdir()
    with ResultsLock(str(res)):
        p = hsrtcp_cli("analyze", corpus, "-o", res, "-q", check=3)
    assert f"pid {os.getpid()}" in p.stderr and "another hsrtcp run" in p.stderr
    assert not partitions(res)
    hsrtcp_cli("analyze", corpus, "-o", res, "-q", check=0)  # released: the next run goes


def test_interrupted_run_leaves_no_half_partition(corpus, tmp_path):
    """A staging directory of a dead run is not a partition and is cleared by the next run."""
    res = tmp_path / "res"
    stale = res / ".staging" / "clean_200k.999999.deadbeef"
    stale.mkdir(parents=True)
    (stale / "flows.parquet").write_bytes(b"half")
    assert run_corpus(str(corpus), str(res), quiet=True, workers=2) == 0
    assert not (res / ".staging").exists()
    assert duckdb.sql(f"select count(*) from read_parquet('{res}/*/flows.parquet')").fetchall()[0][0] > 0


def test_manifest_pairs_labels_and_problems(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    for side in ("client", "server"):
        shutil.copy(DATA / f"clean_200k.{side}.pcap", d / f"a.{side}.pcap")
    shutil.copy(DATA / "zero_window.server.pcap", d / "solo.pcap")
    (d / "corpus.csv").write_text("capture,vantage,pair,trip,carrier\n"
                                  "a.client.pcap,client,tripA,G1,M\n"
                                  "a.server.pcap,server,tripA,G1,M\n"
                                  "solo.pcap,server,,G2,U\n"
                                  "solo.pcap,client,lonely,G3,T\n")
    res = tmp_path / "res"
    p = hsrtcp_cli("analyze", d / "corpus.csv", "-o", res, "-q", check=3)
    parts = partitions(res)
    assert set(parts) == {"tripA", "solo.pcap"}
    lab = pl.read_parquet(parts["tripA"] / "labels.parquet")
    assert lab["trip"].to_list() == ["G1"] and "carrier" in lab.columns
    assert pl.read_parquet(parts["solo.pcap"] / "labels.parquet")["trip"].to_list() == ["G2"]
    ref = tmp_path / "ref"
    hsrtcp_cli("analyze", "--client", d / "a.client.pcap", "--server", d / "a.server.pcap", "--label", "trip=G1",
               "--label", "carrier=M", "--carrier", "M", "-q", "--no-plot", "-o", ref, check=0)
    assert_same_results(parts["tripA"], ref)
    f = pl.read_parquet(res / "failures.parquet")
    assert f["input"].to_list() == ["lonely"] and "exactly one client and one server" in f["reason"][0], p.stderr
    (d / "bad.csv").write_text("file,vantage\nsolo.pcap,server\n")
    bad = hsrtcp_cli("analyze", d / "bad.csv", "-o", tmp_path / "res2", check=3)  # a bad manifest: input error
    assert "capture" in bad.stderr and "bad.csv" in bad.stderr


def test_glob_corpus_and_usage(corpus, tmp_path):
    res = tmp_path / "res"
    hsrtcp_cli("analyze", f"{corpus}/trip2/*.server.pcap", "-o", res, "-q", check=0)
    assert set(partitions(res)) == {"multi_sequential.server.pcap", "zero_window.server.pcap"}
    assert hsrtcp_cli("analyze", f"{corpus}/*.nothing", "-o", res, "-q", check=2).stderr.count("matches nothing")
    assert "for a corpus" in hsrtcp_cli("analyze", DATA / "nano.server.pcap", "--force", check=2).stderr
    assert hsrtcp_cli("analyze", corpus, "--client", DATA / "nano.client.pcap", "--server",
                      DATA / "nano.server.pcap", check=2).returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no capture files" in hsrtcp_cli("analyze", empty, "-o", res, check=2).stderr


def test_manifest_radio_log_equals_the_one_input_run(tmp_path):
    """A manifest row's radio log, offset and carrier give the same context tables as
    `hsrtcp analyze --radio ... --radio-offset ... --carrier ...` on that input (the
    example pair, python/hsrtcp/examples/; a lab-format log 3600.5 s behind the capture clock, one
    handoff 1 s into the flow, written by tests/python/context/logs.py)."""
    import hsrtcp

    from ..context.logs import lab_log

    root = DATA.parents[1] / "python/hsrtcp/examples"
    f = hsrtcp.analyze([root / "phone.pcap"], vantage="client").flows
    a, b = float(f["first_ts"].min()), float(f["last_ts"].max())
    rows = [(t - 3600.5, "M", "LTE", 1, 10 if t < a + 1 else 11) for t in [a - 1 + 0.5 * i for i in range(int((b - a) * 2) + 6)]]
    d = tmp_path / "m"
    d.mkdir()
    log = lab_log(d / "radio.csv", rows)
    shutil.copy(root / "phone.pcap", d / "phone.pcap")
    shutil.copy(root / "server.pcap", d / "server.pcap")
    (d / "corpus.csv").write_text("capture,vantage,pair,radio,radio_offset,carrier,trip\n"
                                  "phone.pcap,client,ex,radio.csv,3600.5,M,T1\n"
                                  "server.pcap,server,ex,,,M,T1\n")
    res = tmp_path / "res"
    hsrtcp_cli("analyze", d / "corpus.csv", "-o", res, "-q", check=0)
    part = partitions(res)["ex"]
    ctx = pl.read_parquet(part / "context.parquet")
    assert set(ctx["handoffs"]) == {1} and set(ctx["carrier"]) == {"M"}
    ref = tmp_path / "ref"
    hsrtcp_cli("analyze", "--client", d / "phone.pcap", "--server", d / "server.pcap", "--radio", log,
               "--radio-offset", "3600.5", "--carrier", "M", "--label", "carrier=M", "--label", "trip=T1",
               "-q", "--no-plot", "-o", ref, check=0)
    assert_same_results(part, ref)


def test_unusable_results_directory_is_exit_3_with_a_message(corpus, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    p = hsrtcp_cli("analyze", corpus, "-o", f / "res", "-q", check=3)
    assert "Traceback" not in p.stderr and str(f) in p.stderr, p.stderr
