"""The report's HTML budget at scale (issue 32): beyond FLOW_TABLE_ROWS flows the flow table
holds the flows with a drill-down and the largest others by data bytes (in the results'
order), the scope note gives the query line that writes every flow, and the model chart
draws a seeded sample of PLOT_POINTS flows while its D table is over all of them. The
caps are lowered here so that the real pairs of tests/data exceed them."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from hsrtcp.models import fitting
from hsrtcp.report import build
from hsrtcp.report.charts import sig

from .common import DATA, run

PAIRS = ["drops_cubic", "bbr_drops", "multi_concurrent", "data_blackout", "ack_delay"]


def _embedded(path) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', path.read_text(), re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    res = tmp_path_factory.mktemp("budget") / "res"
    args = ["analyze"]
    for p in PAIRS:
        args += ["--client", DATA / f"{p}.client.pcap", "--server", DATA / f"{p}.server.pcap"]
    assert run([*args, "-q", "--no-plot", "-o", res]) == 0
    return res


def _data_bytes(f: pl.DataFrame) -> dict[str, int]:
    b = (pl.when(pl.col("data_dir") == "c2s").then(pl.col("c2s_payload_bytes"))
         .when(pl.col("data_dir") == "s2c").then(pl.col("s2c_payload_bytes"))
         .otherwise(pl.max_horizontal("c2s_payload_bytes", "s2c_payload_bytes")))
    return dict(zip(f["flow_id"].cast(pl.String), f.select(b).to_series().to_list()))


def test_flow_table_capped_to_the_largest_with_a_query_for_all(results, tmp_path, monkeypatch):
    flows = pl.read_parquet(results / "flows.parquet")
    n = flows.height
    assert n > 7
    monkeypatch.setattr(build, "FLOW_TABLE_ROWS", 7)
    info = build.build_report(results, None, tmp_path / "r.html", top=3)
    assert info.flows == n and info.detailed == 3
    data = _embedded(tmp_path / "r.html")
    table = data["flow_table"]
    assert table["rows"] == 7
    ids = next(c for c in table["columns"] if c["key"] == "flow_id")["values"]
    detail = next(c for c in table["columns"] if c["key"] == "detail")["values"]
    size = _data_bytes(flows)
    shown = sorted(size[i] for i in ids)
    # the 7 largest flows by data bytes (the 3 drilled-down ones are the largest 3)
    assert shown == sorted(size.values())[-7:]
    assert sum(detail) == 3 and {d["flow_id"] for d in data["details"]} <= set(ids)
    # in the results' order
    order = flows["flow_id"].cast(pl.String).to_list()
    assert ids == [i for i in order if i in set(ids)]
    text = (tmp_path / "r.html").read_text()
    assert f"the 7 largest of the {n} flows by data bytes" in text
    assert f"hsrtcp query {results} &quot;select * from flows&quot; -f csv -o flows.csv" in text


def test_query_line_writes_every_flow(results, tmp_path):
    """The line the scope note gives, run as it is: a CSV of every flow."""
    assert run(["query", results, "select * from flows", "-f", "csv", "-o", tmp_path / "flows.csv"]) == 0
    assert pl.read_csv(tmp_path / "flows.csv").height == pl.read_parquet(results / "flows.parquet").height


def test_under_the_cap_the_table_holds_every_flow(results, tmp_path):
    n = pl.read_parquet(results / "flows.parquet").height
    build.build_report(results, None, tmp_path / "r.html", top=3)
    assert _embedded(tmp_path / "r.html")["flow_table"]["rows"] == n
    assert f"lists all {n} flows" in (tmp_path / "r.html").read_text()


def _tiled_results(results, out, copies: int):
    """``results`` with its flows table repeated ``copies`` times (the copies with new flow ids:
    the analyzer's rows and schema, more of them; the other tables as they are)."""
    import shutil

    import numpy as np

    from hsrtcp.results import metadata

    shutil.copytree(results, out)
    f = pl.read_parquet(results / "flows.parquet")
    n = f.height * copies
    k = np.arange(n) // f.height
    # (all uint64: mixed with int64, numpy would go through float64 and merge nearby ids)
    ids = np.where(k == 0, f["flow_id"].to_numpy()[np.arange(n) % f.height],
                   np.uint64(10**12) + np.arange(n, dtype=np.uint64))
    t = f[np.arange(n) % f.height].with_columns(pl.Series("flow_id", ids))
    assert t["flow_id"].n_unique() == n
    t.write_parquet(out / "flows.parquet", metadata=metadata("flows"))
    return out


def test_model_chart_samples_beyond_plot_points(results, tmp_path, monkeypatch):
    res = _tiled_results(results, tmp_path / "res", 5)
    monkeypatch.setattr(fitting, "PLOT_POINTS", 2)
    build.build_report(res, None, tmp_path / "r.html", top=3)
    (ch,) = _embedded(tmp_path / "r.html")["model_charts"]
    fit = fitting.fit_flows(res).flows
    drawn = [s for s in ch["series"] if s["label"] != "measured = predicted"]
    assert drawn and all(len(s["x"]) <= 2 for s in drawn)
    drawable = fit.filter((pl.col("throughput_pkts") > 0) & (pl.col("pred_pftk_full") > 0)).height
    assert drawable > 2
    assert (f"The chart shows 2 of the {drawable} flows with a measurement and a prediction, drawn at random; "
            f"the table is over all {fit.height} flows.") in (tmp_path / "r.html").read_text()
    # each drawn point is a real flow's (measurement, prediction), at the chart's 6 significant
    # digits (3 decimals would not do above 1000: 3203.984 is drawn as 3203.98)
    m, p = fit["throughput_pkts"].to_numpy(), fit["pred_pftk_full"].to_numpy()
    keep = (m > 0) & (p > 0)
    pts = set(zip(sig(m[keep], 6), sig(p[keep], 6)))
    pf = next(s for s in drawn if s["label"] == "PFTK full")
    assert set(zip(pf["x"], pf["y"])) <= pts
