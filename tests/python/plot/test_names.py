"""Issue 31 in `hsrtcp plot`: --flow takes a short id, a 4-tuple or a flow_id; a matched row
draws its server-side packets with the matcher's verdicts (before: a flat line at 1 B, exit
0); nothing to draw is exit 3; a corpus results directory is read like one analysis.

Witness: the bundled example pair was made in the namespace testbed with nftables counting
what it dropped (python/hsrtcp/examples/truth.json: 17 of 2,780 data segments)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hsrtcp.plot import figure
from hsrtcp.testing import fixtures
from hsrtcp.testing.cli import EXAMPLES, analyze_example
from hsrtcp.testing.cli import run_hsrtcp as run  # (the name the tests use)

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    return analyze_example(tmp_path_factory.mktemp("example") / "r")


def line(fig, gid: str) -> np.ndarray:
    (ln,) = [x for x in fig.axes[0].get_lines() if x.get_gid() == gid]
    return np.asarray(ln.get_ydata(), dtype=float)


def test_matched_row_draws_the_server_packets_and_the_matchers_losses(example):
    truth = json.loads((EXAMPLES / "truth.json").read_text())["nft"]
    flows = pl.read_parquet(example / "flows.parquet")
    m = flows.filter(pl.col("vantage") == "matched").row(0, named=True)
    fig = figure("tsg", example, m["flow_id"])
    server = figure("tsg", example, "f1s")
    data = line(fig, "line-data")
    assert data.max() > 3.9  # MB: the 4,000,000-byte transfer, not a flat line at 1 B
    assert np.array_equal(data, line(server, "line-data"))
    assert fig.axes[0].get_title(loc="left").startswith("f1m (matched): packets of f1s (server, s2c)")
    (lost,) = [c for c in fig.axes[0].collections if c.get_gid() == "matcher-lost"]
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    want = f"lost in the network (matcher): {truth['data_dropped']:,} of {truth['data_seen']:,} data packets"
    assert any(t.startswith(want) for t in labels), labels
    assert len(lost.get_offsets()) >= 1
    assert not any(c.get_gid() == "matcher-lost" for c in server.axes[0].collections)


@pytest.mark.parametrize("kind", ["tsg", "window", "rtt", "throughput"])
def test_every_name_of_a_flow_draws_it(example, kind, tmp_path):
    flows = pl.read_parquet(example / "flows.parquet")
    s = flows.filter(pl.col("vantage") == "server").row(0, named=True)
    tup = f"{s['server_addr']}:{s['server_port']}-{s['client_addr']}:{s['client_port']}"  # either order
    outs = {}
    for spec in ("f1", "f1m", tup, str(s["flow_id"]), "f1s"):
        out = tmp_path / f"{kind}-{len(outs)}.svg"
        p = run("plot", kind, example, "--flow", spec, "-o", out)
        assert p.returncode == 0, (spec, p.stderr)
        outs[spec] = figure(kind, example, spec).axes[0].get_title(loc="left")
    assert outs["f1"] == outs["f1m"] == outs[tup] != outs["f1s"] == outs[str(s["flow_id"])]
    assert outs["f1s"].startswith("f1s: flow 1099511627776 (server, s2c")


def test_flow_values(example, tmp_path):
    p = run("plot", "tsg", example, "--flow", "xyz", "-o", tmp_path / "x.png")
    assert p.returncode == 2 and "'xyz' names no flow" in p.stderr, p.stderr
    p = run("plot", "tsg", example, "--flow", "f9", "-o", tmp_path / "x.png")
    assert p.returncode == 3 and "no flow with short id f9 (1 connection(s): f1;" in p.stderr, p.stderr
    assert not (tmp_path / "x.png").exists()


def test_nothing_to_draw_is_exit_3(multi, tmp_path):
    """A flow whose series carries no byte and which has no retransmission (as a connection
    that only ever sent pure ACKs at this capture): exit 3 with the reason, no file."""
    d = tmp_path / "r"
    shutil.copytree(multi, d)
    fid = pl.read_parquet(d / "flows.parquet").filter(pl.col("data_dir").is_not_null())["flow_id"][0]
    s = pl.read_parquet(d / "series.parquet")
    s.with_columns([pl.when(pl.col("flow_id") == fid).then(0).otherwise(pl.col(c)).cast(s.schema[c]).alias(c)
                    for c in ("bytes", "goodput_bytes")]).write_parquet(d / "series.parquet")
    ev = pl.read_parquet(d / "events.parquet")
    ev.filter(pl.col("flow_id") != fid).write_parquet(d / "events.parquet")
    p = run("plot", "tsg", d, "--flow", fid, "-o", tmp_path / "x.png")
    assert p.returncode == 3, p.stderr
    assert "nothing to draw" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("kind", ["window", "rtt"])
def test_a_figure_with_nothing_drawn_is_never_written(multi, kind, tmp_path, monkeypatch):
    """The last guard (plot.drawn): whatever a kind's module returns, a figure with no
    finite point is exit 3, not a file. (The case above is also caught earlier, in tsg.)"""
    import importlib

    from hsrtcp.plot.style import new_figure

    def empty(res, flow_id=None, **_):
        fig, ax = new_figure()
        ax.plot([np.nan], [np.nan], label="nothing")
        return fig

    monkeypatch.setattr(importlib.import_module(f"hsrtcp.plot.{kind}"), "draw", empty)
    from hsrtcp.cli import main

    out = tmp_path / "x.png"
    assert main(["plot", kind, str(multi), "-o", str(out)]) == 3
    assert not out.exists()


def test_a_corpus_results_directory(tmp_path):
    corpus = fixtures.corpus(tmp_path / "field", ("multi_concurrent.server.pcap", "small_50k.server.pcap"))
    res = tmp_path / "results"
    assert run("analyze", corpus, "-o", res, "-q").returncode == 0
    names = {}
    for part in sorted(res.glob("input=*")):
        f = pl.read_parquet(part / "flows.parquet")
        for r in f.iter_rows(named=True):
            names[(part.name, r["flow_id"])] = r["first_ts"]
    order = sorted(names, key=lambda k: (names[k], k))
    for i, (part, fid) in enumerate(order, start=1):
        p = run("plot", "tsg", res, "--flow", f"f{i}", "-o", tmp_path / f"f{i}.png")
        if p.returncode == 3 and "carries no payload" in p.stderr:
            continue
        assert p.returncode == 0, p.stderr
        fig = figure("tsg", res, f"f{i}")
        assert fig.axes[0].get_title(loc="left").startswith(f"f{i}: flow {fid} "), (part, fig.axes[0].get_title(loc="left"))
    p = run("plot", "tsg", res, "--flow", "0", "-o", tmp_path / "x.png")  # flow_id 0 is in both inputs
    assert p.returncode == 3 and "give the short id" in p.stderr, p.stderr
    for kind in ("cdf", "throughput"):  # before: exit 3, "cdf draws the flows of one analysis"
        p = run("plot", kind, res, "-o", tmp_path / f"{kind}.png")
        assert p.returncode == 0, p.stderr


def counts(fig) -> dict[str, str]:
    """Each legend entry's text after its name: "(n = 12 bins)", "median D = ... (n = 3)"."""
    return {t.get_text().split(" (")[0].split(":")[0]: t.get_text() for t in fig.axes[0].get_legend().get_texts()}


def test_cdf_model_and_throughput_pool_a_corpus(pair, tmp_path):
    """A corpus of two inputs holding the same analysis: cdf and model draw every flow of both
    (twice the n of one), and throughput's largest flows name their input (a flow_id repeats)."""
    corpus = tmp_path / "corpus"
    for name in ("a", "b"):
        shutil.copytree(pair, corpus / f"input={name}")
    for kind in ("cdf", "model"):
        one, both = counts(figure(kind, pair)), counts(figure(kind, corpus))
        assert one.keys() == both.keys() and one
        for k, text in ((k, t) for k, t in one.items() if "n = " in t):  # ("y = x" counts nothing)
            n = int(text.rsplit("n = ", 1)[1].split()[0].strip(")").replace(",", ""))
            assert f"n = {2 * n:,}" in both[k] or f"n = {2 * n})" in both[k], (kind, text, both[k])
    labels = [t.get_text() for t in figure("throughput", corpus).axes[0].get_legend().get_texts()]
    assert any("input a)" in x for x in labels) and any("input b)" in x for x in labels), labels
    assert len({x.split(":")[0] for x in labels}) == len(labels)  # each a distinct short id
    p = run("plot", "model", corpus, "--flow", "f1m", "-o", tmp_path / "m.png")
    assert p.returncode == 3 and "one input's directory" in p.stderr, p.stderr


def test_throughput_of_the_largest_flows_names_each_by_its_short_id(example):
    """The figure of the flows with the most data labelled them "flow 1099511627776 (server,
    s2c)" and "flow 0 (client, s2c)": no name a user can pass to --flow but the long id."""
    from hsrtcp.results import flow_names

    flows = pl.read_parquet(example / "flows.parquet")
    names = dict(flow_names(flows).select("flow_id", "short_id").iter_rows())
    fig = figure("throughput", example)
    drawn = [ln for ln in fig.axes[0].get_lines() if (ln.get_gid() or "").startswith("flow-")]
    assert len(drawn) == 2  # the phone's and the server's rows (the matched row holds no bins)
    for ln in drawn:
        short = names[int(ln.get_gid().removeprefix("flow-"))]
        assert ln.get_label().startswith(f"{short}: flow "), ln.get_label()
