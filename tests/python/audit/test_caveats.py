"""Caveats (issue 35): `hsrtcp analyze` says in its results and its summary where the audit
found a detector unsure in the flow's condition (docs/formats/caveats.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl

from hsrtcp import caveats
from hsrtcp.audit import docs

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


def _analyze(tmp_path, name):
    out = tmp_path / "res"
    p = subprocess.run([sys.executable, "-m", "hsrtcp", "analyze", "--client", str(DATA / f"{name}.client.pcap"),
                        "--server", str(DATA / f"{name}.server.pcap"), "-o", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return out, p.stdout


def test_analyze_writes_the_verdict_table_and_names_unsure_detectors(tmp_path):
    out, stdout = _analyze(tmp_path, "reno_nosack_nots")
    # campaign: M10 without SACK/timestamps 8 TP 5 FP 2 FN -> uncertain; a reno pair is in that condition
    cav = [ln for ln in stdout.splitlines() if ln.startswith("caveat:")]
    # one line per printed row of the pair (f1s, f1m, f1c), not one per detector
    assert len(cav) == 3, stdout
    assert cav[0] == "caveat: f1s (sender vantage, SACK off, timestamps off): M10 timeout uncertain", cav
    assert any(ln.startswith("caveat: f1m (both vantage, SACK off, timestamps off): M12 two_vantage") for ln in cav)
    assert "dsack" not in stdout  # no D-SACK answer without SACK (its column is null)
    assert (out / "caveats.csv").read_bytes() == Path(caveats.TABLE).read_bytes()
    # the per-flow join the format page documents
    flows = pl.read_parquet(out / "flows.parquet")
    cav = pl.read_csv(out / "caveats.csv")
    j = (flows.with_columns(
            pl.when(pl.col("vantage") == "matched").then(pl.lit("both")).otherwise(pl.col("data_vantage"))
            .alias("detector_vantage"),
            pl.col("sack_permitted").cast(pl.String).fill_null("unknown").alias("sack"),
            pl.col("timestamps").cast(pl.String).fill_null("unknown"))
         .join(cav, on=["detector_vantage", "sack", "timestamps"]))
    got = dict(j.filter(pl.col("vantage") == "server").select("detector", "verdict").iter_rows())
    assert got["M10 timeout"] == "uncertain" and got["M12 dsack"] == "not applicable"


def test_verdict_words_follow_the_table(tmp_path):
    """A planted table: only the unsure verdicts of the flow's own condition are named."""
    rows = [{"detector": "M12 receiver", "column": "spurious_timeouts_receiver", "detector_vantage": "receiver",
             "sack": "true", "timestamps": "true", "verdict": v, "cases": "", "audits": ""}
            for v in ("poor",)] + \
           [{"detector": "M10 timeout", "column": "timeout_sequences", "detector_vantage": "sender",
             "sack": "true", "timestamps": "true", "verdict": "good", "cases": "", "audits": ""},
            {"detector": "M12 eifel", "column": "spurious_timeouts_eifel", "detector_vantage": "sender",
             "sack": "unknown", "timestamps": "true", "verdict": "uncertain", "cases": "", "audits": ""}]
    flows = [{"short_id": "f1c", "vantage": "client", "data_vantage": "receiver", "sack_permitted": True,
              "timestamps": True, "spurious_timeouts_receiver": 2},
             {"short_id": "f1s", "vantage": "server", "data_vantage": "sender", "sack_permitted": True,
              "timestamps": True, "timeout_sequences": 3, "spurious_timeouts_eifel": 1},
             {"short_id": "f2", "vantage": None, "data_vantage": "sender", "sack_permitted": None,
              "timestamps": True, "timeout_sequences": 1, "spurious_timeouts_eifel": 0},
             {"short_id": "f3", "vantage": None, "data_vantage": None, "sack_permitted": True,
              "timestamps": True}]
    got = caveats.lines(flows, rows)
    assert got[:2] == [
        "caveat: f1c (receiver vantage, SACK on, timestamps on): M12 receiver poor",
        "caveat: f2 (sender vantage, SACK unknown, timestamps on): M12 eifel uncertain"]
    assert len(got) == 3  # and the pointer line; M10 is good, f3's vantage is unknown
    assert caveats.lines(flows[3:], rows) == []


def test_shipped_table_is_the_regeneration_and_follows_the_summaries(tmp_path, monkeypatch):
    assert Path(caveats.TABLE).read_text(encoding="utf-8") == docs.caveat_table()
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs" / "audit", root / "docs" / "audit")
    shutil.copy(ROOT / docs.DOC, root / docs.DOC)
    (root / "python" / "hsrtcp").mkdir(parents=True)
    shutil.copy(caveats.TABLE, root / docs.CAVEATS)
    v = root / "docs" / "audit" / "campaign" / "verdicts.csv"
    df = pl.read_csv(v, infer_schema_length=None)
    # every M12 receiver hit with SACK and timestamps turned into a miss: recall 0 of 7 -> poor
    sel = (pl.col("detector") == "M12 receiver") & pl.col("sack") & pl.col("timestamps") & (pl.col("outcome") == "TP")
    df.with_columns(pl.when(sel).then(pl.lit("FN")).otherwise(pl.col("outcome")).alias("outcome")).write_csv(v)
    monkeypatch.setattr(docs, "ROOT", root)
    assert docs.main(["--check"]) == 3
    assert docs.main([]) == 0
    table = caveats.load(str(root / docs.CAVEATS))
    verdict = {(r["detector"], r["sack"], r["timestamps"]): r["verdict"] for r in table}
    assert verdict[("M12 receiver", "true", "true")] == "poor"
    assert verdict[("M12 receiver", "unknown", "true")] == "poor"  # unknown = the most cautious of on and off
    assert verdict[("M12 receiver", "false", "false")] == "few cases"
    assert docs.main(["--check"]) == 0


def test_caveats_fold_to_one_line_per_flow_row_and_condition():
    """The demo printed 7 lines for one connection (one per detector); they fold to one line per
    printed row, the detectors grouped by verdict, and flows with the same caveats share a line."""
    cond = {"sack": "true", "timestamps": "true", "cases": "", "audits": ""}
    rows = [dict(cond, detector=d, column=caveats.DETECTORS[d][0], detector_vantage=caveats.DETECTORS[d][1],
                 verdict="uncertain" if d == "M10 timeout" else "few cases") for d in caveats.DETECTORS]
    base = {"sack_permitted": True, "timestamps": True}
    cols = {c: 0 for c, _ in caveats.DETECTORS.values()}
    flows = [dict(base, **cols, short_id="f1c", vantage="client", data_vantage="receiver"),
             dict(base, **cols, short_id="f1s", vantage="server", data_vantage="sender"),
             dict(base, **cols, short_id="f1m", vantage="matched", data_vantage="sender")]
    got = caveats.lines(flows, rows)
    assert got[:-1] == [
        "caveat: f1s (sender vantage, SACK on, timestamps on): M10 timeout uncertain; "
        "M12 dsack, eifel, server audited on few cases",
        "caveat: f1m (both vantage, SACK on, timestamps on): M12 two_vantage, M14 two_vantage audited on few cases",
        "caveat: f1c (receiver vantage, SACK on, timestamps on): M12 receiver audited on few cases"]
    # nine sender rows with the same answers: one line, six ids and the count of the rest
    many = [dict(flows[1], short_id=f"f{i}s") for i in range(1, 10)]
    assert caveats.lines(many, rows)[:-1] == [
        "caveat: f1s, f2s, f3s, f4s, f5s, f6s and 3 more (sender vantage, SACK on, timestamps on): "
        "M10 timeout uncertain; M12 dsack, eifel, server audited on few cases"]
    # a row on which M10 did not answer (null) has its own line without M10
    odd = dict(flows[1], short_id="f7s", timeout_sequences=None)
    got = caveats.lines(many[:2] + [odd], rows)
    assert got[1] == "caveat: f7s (sender vantage, SACK on, timestamps on): M12 dsack, eifel, server audited on few cases"
