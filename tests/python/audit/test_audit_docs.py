"""docs/accuracy.md's tables are recomputed from the committed summaries in docs/audit/
(python -m hsrtcp.audit.docs), and the summaries from the committed fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from hsrtcp.audit import audit, docs, tables

ROOT = Path(__file__).resolve().parents[3]


def test_every_region_equals_its_regeneration():
    text = (ROOT / docs.DOC).read_text(encoding="utf-8")
    names = [m["name"] for m in docs.REGION.finditer(text)]
    assert {"campaign.all", "campaign.counts", "fixtures.all", "fixtures.counts", "v5.all"} <= set(names)
    for m in docs.REGION.finditer(text):
        assert m["body"] == docs.render(m["name"]), f"region {m['name']} is not what its summary gives"


def test_confusion_csv_is_the_recount_of_verdicts():
    for summary in ("fixtures", "campaign", "v2", "dropped", "long", "v5", "v6"):
        d = ROOT / "docs" / "audit" / summary
        got = tables(pl.read_csv(d / "verdicts.csv", infer_schema_length=None))
        want = pl.read_csv(d / "confusion.csv", infer_schema_length=None)
        assert got.select("breakdown", "detector", "tp", "fp", "fn", "tn", "out_of_reach").rows() == \
            want.select("breakdown", "detector", "tp", "fp", "fn", "tn", "out_of_reach").rows()


def test_an_edited_verdict_changes_the_table_and_check_fails(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs" / "audit", root / "docs" / "audit")
    (root / "docs").mkdir(exist_ok=True)
    shutil.copy(ROOT / docs.DOC, root / docs.DOC)
    v = root / "docs" / "audit" / "campaign" / "verdicts.csv"
    df = pl.read_csv(v, infer_schema_length=None)
    # one M14 server-rule miss turned into a hit
    i = df.with_row_index().filter((pl.col("detector") == "M14 server rule") & (pl.col("outcome") == "FN"))["index"][0]
    df = df.with_columns(pl.when(pl.int_range(pl.len()) == i).then(pl.lit("TP")).otherwise(pl.col("outcome")).alias("outcome"))
    df.write_csv(v)
    monkeypatch.setattr(docs, "ROOT", root)
    assert docs.main(["--check"]) == 3
    assert docs.main([]) == 0
    text = (root / docs.DOC).read_text(encoding="utf-8")
    assert "| M14 server rule | server | 1 | 0 | 3 | 4 |" in text
    assert docs.main(["--check"]) == 0


@pytest.mark.parametrize("name", ["ack_blackout", "reno_nosack_nots", "ack_delay"])
def test_fixture_summary_recomputes_from_the_captures(name):
    """The committed fixture verdicts are what the audit gives on the committed captures now."""
    committed = pl.read_csv(ROOT / "docs/audit/fixtures/verdicts.csv", infer_schema_length=None).filter(
        pl.col("run") == name)
    a = audit([ROOT / "tests" / "data" / f"{name}.client.pcap"])
    cols = ["detector", "episode", "seq", "truth", "detected", "truth_cause", "applicable", "outcome"]
    assert a.verdicts.select(cols).rows() == committed.select(cols).rows()


def test_radio_summary_regions_recount_the_radio_verdicts():
    """docs/audit/radio/: the regions read radio_verdicts.csv, and radio_confusion.csv is its recount."""
    d = ROOT / "docs" / "audit" / "radio"
    v = pl.read_csv(d / "radio_verdicts.csv", infer_schema_length=None)
    want = pl.read_csv(d / "radio_confusion.csv", infer_schema_length=None)
    cols = ["breakdown", "detector", "tp", "fp", "fn", "tn"]
    assert tables(v).select(cols).rows() == want.select(cols).rows()
    text = docs.render("radio.radio")
    m24 = v.filter(pl.col("detector") == "M24 suspension")
    tp, fn = (m24["outcome"] == "TP").sum(), (m24["outcome"] == "FN").sum()
    assert f"| M24 suspension | phone | {tp} | 0 | {fn} | 0 |" in text


def test_long_campaign_regions_regenerate_from_its_summaries():
    """docs/audit/long (campaigns/audit-long.toml): its regions are in the page and equal what
    its committed summaries give; the pooled tables count it at >=100 ms base RTT, which no
    other summary reaches, so those rows are its own 'all' rows; at >=100 ms queue v5's and v6's
    long flows join it, so those rows are the sums of the three."""
    text = (ROOT / docs.DOC).read_text(encoding="utf-8")
    names = {m["name"] for m in docs.REGION.finditer(text)}
    assert {"long.all", "long.counts", "long.conditions", "long.standin", "long.radio"} <= names
    assert {"long", "v5", "v6"} <= set(docs.POOLED) and {"long", "v5", "v6"} <= set(docs.PATH_SUMMARIES)
    own = {x.split(" | ")[0]: x.split(" | ")[2:8] for x in docs.render("long.all").splitlines()
           if x.startswith("| M")}
    pooled = [x for x in docs.render("pooled.base_rtt").splitlines() if " | >=100 ms | " in x]
    assert len(pooled) == len(own)
    for row in pooled:
        assert row.split(" | ")[3:9] == own[row.split(" | ")[0]]
    study = [{x.split(" | ")[0]: x.split(" | ")[3:8] for x in docs.render(f"{s}.queue").splitlines()
              if " | >=100 ms | " in x} for s in ("v5", "v6")]
    pooled = [x for x in docs.render("pooled.queue").splitlines() if " | >=100 ms | " in x]
    assert len(pooled) == len(own) and all(set(v) <= set(own) and v for v in study)
    for row in pooled:
        d = row.split(" | ")[0]
        parts = [own[d][:5], *(v.get(d, ["0"] * 5) for v in study)]
        want = [sum(int(p[i]) for p in parts) for i in range(5)]
        assert [int(x) for x in row.split(" | ")[3:8]] == want, d


def test_v5_regions_recount_its_connections(tmp_path):
    """docs/audit/v5 (the v5 channel's study campaign): its regions are in the page; the
    by-scenario rows are the sums of connections.csv, and an edited count changes them."""
    text = (ROOT / docs.DOC).read_text(encoding="utf-8")
    names = {m["name"] for m in docs.REGION.finditer(text)}
    assert {"v5.all", "v5.outage", "v5.counts_by_scenario", "v5.dupacks_by_scenario", "v5.needless",
            "v5.radio"} <= names
    conn = pl.read_csv(ROOT / "docs/audit/v5/connections.csv", infer_schema_length=None)
    h = conn.filter(pl.col("scenario") == "study-300-handoffs-v5")
    s = {c: h[c].sum() for c in ("truth_retrans_tlp", "truth_needless_tlp", "truth_retransmissions",
                                 "truth_m13_packets", "kernel_total_rto", "truth_rto_expirations")}
    row = next(x for x in docs.render("v5.needless").splitlines() if x.startswith("| study-300-handoffs-v5 |"))
    assert f" {s['truth_retrans_tlp']} [{s['truth_needless_tlp']}] |" in row
    assert f" {s['truth_retransmissions']} [" in row and row.endswith(f"| {s['truth_m13_packets']} / "
                                                                      f"{s['truth_m13_packets']} |")
    row = next(x for x in docs.render("v5.counts_by_scenario").splitlines()
               if x.startswith("| study-300-handoffs-v5 |"))
    assert f"| {s['kernel_total_rto']} / {s['truth_rto_expirations']} |" in row
    # one needless TLP fewer in a copy: the row moves
    d = tmp_path / "docs" / "audit" / "v5"
    shutil.copytree(ROOT / "docs" / "audit" / "v5", d)
    # the first handoffs connection with a needless TLP
    first = conn.with_row_index().filter((pl.col("scenario") == "study-300-handoffs-v5")
                                         & (pl.col("truth_needless_tlp") > 0))["index"][0]
    conn.with_columns(pl.when(pl.int_range(pl.len()) == first).then(pl.col("truth_needless_tlp") - 1)
                      .otherwise(pl.col("truth_needless_tlp")).alias("truth_needless_tlp")).write_csv(d / "connections.csv")
    edited = next(x for x in docs.render("v5.needless", tmp_path).splitlines()
                  if x.startswith("| study-300-handoffs-v5 |"))
    assert f" {s['truth_retrans_tlp']} [{s['truth_needless_tlp'] - 1}] |" in edited
