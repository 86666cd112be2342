"""`hsrtcp report` without a browser: the file is self-contained, its embedded data come from
the tables (retransmission marks = events rows), the drill-down is limited to the top flows,
and bad input is a message naming the file with exit 3, never a traceback."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import polars as pl
import pytest

from hsrtcp.cli import main
from hsrtcp.report import assets
from hsrtcp.report.downsample import downsample
from .common import DATA, run


def _embedded(path) -> dict:
    text = path.read_text()
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_self_contained_and_marks_equal_the_events_table(drops, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert run(["report", drops, "-o", out]) == 0
    assert "wrote" in capsys.readouterr().err
    text = out.read_text()
    # nothing to fetch: no external script, stylesheet, image or font (the gallery's images are data: URIs)
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=(?!\"data:)", text)
    assert "http://" not in text.split('id="report-data"')[0] and "https://" not in text.split('id="report-data"')[0]
    assert text.count("<script") == 3  # data, uPlot, the report's script
    data = _embedded(out)
    flow = pl.read_parquet(drops / "flows.parquet").row(0, named=True)
    ev = (pl.read_parquet(drops / "events.parquet")
          .filter((pl.col("kind") == "retransmission") & (pl.col("dir") == flow["data_dir"])).sort("ts"))
    tseq = data["details"][0]["charts"][0]
    assert tseq["id"] == f"tseq-{flow['flow_id']}"
    got = [(m["t"], m["s0"], m["s1"], m["cls"]) for m in tseq["marks"]]
    want = [(round(r["ts"] - flow["first_ts"], 6), r["seq_start"], r["seq_end"], r["class"]) for r in ev.iter_rows(named=True)]
    assert got == want and len(got) == 15
    # the ACK line ends at the flow's acknowledged bytes (goodput_bytes), from sequence 1
    ack = tseq["series"][0]
    assert ack["y"][-1] == 1 + flow["goodput_bytes"]


def test_top_limits_the_drilldown_not_the_flow_table(tmp_path):
    res = tmp_path / "multi"
    assert run(["analyze", DATA / "multi_concurrent.server.pcap", "-q", "--no-plot", "-o", res]) == 0
    flows = pl.read_parquet(res / "flows.parquet")
    assert flows.height >= 3
    assert run(["report", res, "-o", tmp_path / "r.html", "--top", "1"]) == 0
    data = _embedded(tmp_path / "r.html")
    assert data["flow_table"]["rows"] == flows.height
    assert len(data["details"]) == 1
    largest = flows.sort("s2c_payload_bytes", descending=True)["flow_id"][0]
    assert data["details"][0]["flow_id"] == str(largest)
    assert f"for the 1 largest flow(s) by data bytes of {flows.height}" in (tmp_path / "r.html").read_text()


def _bad(tmp_path, capsys, args, *needles):
    code = run(["report", *args, "-o", tmp_path / "bad.html"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err
    assert not (tmp_path / "bad.html").exists()


def test_bad_input_is_a_message_and_exit_3(drops, pair, tmp_path, capsys):
    _bad(tmp_path, capsys, [tmp_path / "nowhere"], "nowhere", "not a results directory")

    missing = tmp_path / "missing"
    shutil.copytree(drops, missing)
    (missing / "rtt.parquet").unlink()
    _bad(tmp_path, capsys, [missing], "rtt.parquet", "missing table 'rtt'")

    old = tmp_path / "old"
    shutil.copytree(drops, old)
    pl.read_parquet(old / "events.parquet").drop("seq_start", "seq_end").write_parquet(old / "events.parquet")
    _bad(tmp_path, capsys, [old], "events.parquet", "older hsrtcp", "seq_start, seq_end")

    empty = tmp_path / "empty"
    shutil.copytree(drops, empty)
    pl.read_parquet(empty / "flows.parquet").clear().write_parquet(empty / "flows.parquet")
    _bad(tmp_path, capsys, [empty], "flows.parquet", "no flows")

    garbage = tmp_path / "garbage"
    shutil.copytree(drops, garbage)
    (garbage / "series.parquet").write_bytes(b"not parquet at all")
    _bad(tmp_path, capsys, [garbage], "series.parquet", "cannot read as Parquet")

    _bad(tmp_path, capsys, [drops, tmp_path / "nostudy"], "nostudy", "not a study directory")
    study = tmp_path / "study_v9"
    shutil.copytree(pair["study"], study)
    manifest = json.loads((study / "study.json").read_text())
    (study / "study.json").write_text(json.dumps({**manifest, "study_schema_version": 9}))
    _bad(tmp_path, capsys, [drops, study], "study.json", "study_schema_version 9")


def test_a_flow_without_data_is_a_note_not_an_error(drops, tmp_path):
    """A flow whose data-direction bins are missing (e.g. a handshake-only connection) gets
    its table row and a note in the drill-down; the report is still written."""
    d = tmp_path / "nobins"
    shutil.copytree(drops, d)
    pl.read_parquet(d / "series.parquet").clear().write_parquet(d / "series.parquet")
    assert run(["report", d, "-o", tmp_path / "r.html"]) == 0
    detail = _embedded(tmp_path / "r.html")["details"][0]
    assert any("no series bins" in n for n in detail["notes"])
    assert len(detail["charts"][0]["marks"]) == 15  # the events still place the retransmissions


def test_missing_charting_library_is_a_clear_error(drops, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(assets, "UPLOT_JS", tmp_path / "none" / "uPlot.iife.min.js")
    code = main(["report", str(drops), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 3 and "npm ci --omit=dev" in err and "make build" in err and "Traceback" not in err


def test_downsample_keeps_each_pixel_columns_extremes():
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 100, 200_000))
    y = rng.normal(size=x.size)
    y[12345] = 50.0  # a spike must survive
    y[rng.integers(0, x.size, 1000)] = np.nan
    width = 300
    keep = downsample(x, y, width)
    assert len(keep) <= 4 * width and np.all(np.diff(keep) > 0)
    assert 12345 in keep and keep[0] == 0 and keep[-1] == x.size - 1
    col = np.minimum(((x - x[0]) / (x[-1] - x[0]) * width).astype(int), width - 1)
    for c in range(0, width, 7):
        sel = np.flatnonzero(col == c)
        kept = np.intersect1d(sel, keep)
        assert np.nanmax(y[kept]) == np.nanmax(y[sel]) and np.nanmin(y[kept]) == np.nanmin(y[sel])
    assert np.array_equal(downsample(x[:100], y[:100], width), np.arange(100))


def test_command_is_listed_and_lazy():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "hsrtcp", "--help"], capture_output=True, text=True)
    assert "report" in p.stdout
    p = subprocess.run([sys.executable, "-c", "import hsrtcp.cli.report, sys; "
                        "print('polars' in sys.modules, 'hsrtcp.report.build' in sys.modules)"],
                       capture_output=True, text=True)
    assert p.stdout.split() == ["False", "False"], p.stdout + p.stderr


def test_models_section_compares_measured_with_each_models_prediction(tmp_path):
    """data_blackout pair: the matched row has every model input (p_d, q, P_a, T from its
    timeout): its point in the model chart is (throughput_pkts, prediction) of each model,
    the values `hsrtcp model fit` gives; the rows lacking inputs are counted, not drawn."""
    from hsrtcp.models.fitting import fit_flows

    res = tmp_path / "blackout"
    assert run(["analyze", "--client", DATA / "data_blackout.client.pcap", "--server",
                DATA / "data_blackout.server.pcap", "-q", "--no-plot", "-o", res]) == 0
    assert run(["report", res, "-o", tmp_path / "r.html"]) == 0
    data = _embedded(tmp_path / "r.html")
    (ch,) = data["model_charts"]
    fit = fit_flows(res).flows.filter(pl.col("missing_inputs").list.len() == 0)
    assert fit.height == 1
    row = fit.row(0, named=True)
    by_label = {s["label"]: s for s in ch["series"]}
    for key, label in (("pftk_full", "PFTK full"), ("enh_rederived", "Enhanced (re-derived)")):
        s = by_label[label]
        assert s["x"] == [pytest.approx(row["throughput_pkts"], rel=1e-5)]
        assert s["y"] == [pytest.approx(row[f"pred_{key}"], rel=1e-5)]
    text = (tmp_path / "r.html").read_text()
    assert "median_d" in text  # the D summary table
    # the flow's timeout sequence is a band of its time–sequence graph
    ev = pl.read_parquet(res / "events.parquet").filter(pl.col("kind") == "timeout_sequence")
    assert ev.height >= 1
    # (a matched row's drill-down shows its server row's packets again: issue 31)
    bands = [b for d in data["details"] if not d["name"].endswith("m")
             for b in d["charts"][0]["bands"] if b["label"].startswith("timeout")]
    assert len(bands) == ev.height


@pytest.mark.netns
def test_lab_bundle_provenance(tmp_path):
    """A real one-run campaign (smoke scenario, cubic, Rattan; root): the report of its analyzed
    bundle shows the manifest's scenario, congestion control, seeds and versions."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if shutil.which("rattan") is None and not (Path.home() / ".cargo/bin/rattan").exists():
        pytest.skip("rattan is not installed (make rattan)")
    root = DATA.parents[1]
    campaign = tmp_path / "one.toml"
    campaign.write_text(f'[campaign]\nname = "report-one"\nscenarios = ["{root / "scenarios" / "smoke.toml"}"]\n'
                        'ccs = ["cubic"]\nrepetitions = 1\n\n[[flows]]\ntype = "duration"\nduration_s = 23\n')
    env = dict(os.environ, PATH=f"{Path.home() / '.cargo/bin'}:{os.environ.get('PATH', '')}")
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "campaign", str(campaign), "-o", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    (bundle,) = [d for d in (tmp_path / "runs").iterdir() if (d / "manifest.json").exists()]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert run(["analyze", bundle, "-q", "--no-plot", "-o", tmp_path / "res"]) == 0
    assert run(["report", tmp_path / "res", "-o", tmp_path / "r.html"]) == 0
    text = (tmp_path / "r.html").read_text()
    prov = text[text.index('id="provenance"'):]
    assert f"Bundle {bundle}" in prov and manifest["run_id"] in prov
    assert ">cubic<" in prov and "smoke" in prov
    import html

    assert html.escape(json.dumps(manifest["seeds"], sort_keys=True)) in prov  # every seed, scenario and cells
    assert manifest["versions"]["kernel"] in prov and manifest["versions"]["rattan"] in prov


def test_mptcp_section_lists_the_flows_with_an_mptcp_option(drops, tmp_path):
    """No fixture carries MPTCP yet, so flows.mptcp is set on the drops row: the section then
    lists that subflow per capture; with mptcp false it says there is none."""
    assert run(["report", drops, "-o", tmp_path / "plain.html"]) == 0
    plain = (tmp_path / "plain.html").read_text()
    assert "No flow carried an MPTCP option" in plain
    d = tmp_path / "mp"
    shutil.copytree(drops, d)
    flows = pl.read_parquet(d / "flows.parquet")
    flows.with_columns(pl.lit(True).alias("mptcp")).write_parquet(d / "flows.parquet")
    assert run(["report", d, "-o", tmp_path / "mp.html"]) == 0
    text = (tmp_path / "mp.html").read_text()
    section = text[text.index('id="mptcp"'):text.index('id="provenance"')]
    assert "1 TCP connection(s) carried an MPTCP option" in section
    assert flows["client_addr"][0] in section and "drops_cubic.server.pcap" in section
