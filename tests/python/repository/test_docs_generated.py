"""Numbers in docs/ come from the committed data (issue 34): `python -m hsrtcp.docsgen`
rewrites every `<!-- generated:NAME -->` region of docs/study.md and docs/findings.md from
tests/data/study*/ and docs/findings/arms.csv. Regenerated into a copy of the repository's
files, the documents must come out byte-identical to the committed ones; a number edited by
hand, or data changed without regenerating, must make `--check` fail and name the region."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from hsrtcp import docsgen

ROOT = Path(__file__).resolve().parents[3]
INPUTS = ("tests/data/study", "tests/data/study-with-static", "tests/data/study-by-workload", "tests/data/study-v2",
          "tests/data/study-v3", "tests/data/study-v4", "tests/data/study-v5", "tests/data/study-v6",
          "docs/audit/v5/connections.csv", "docs/audit/v6/connections.csv",  # docs/lab.md: the levels with the truth
          "docs/findings/arms.csv", "docs/passive/cc_accuracy.csv",
          # docs/models.md's region: the lab's per-ACK loss of each study scenario
          "scenarios/study-static.toml", "scenarios/study-300-nohandoff.toml", "scenarios/study-300-handoffs.toml",
          "tests/data/mptcp-conjunction")  # docs/mptcp.md §5


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    """The documents and the committed data they are written from, copied."""
    for rel in (*docsgen.DOCS, *INPUTS):
        src, dst = ROOT / rel, tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst)
    return tmp_path


def _docsgen(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsrtcp.docsgen", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=600)


def test_regenerating_gives_the_committed_documents_byte_for_byte(copy):
    # blank every region first, so the comparison cannot pass by leaving the text alone
    for rel in docsgen.DOCS:
        p = copy / rel
        text = p.read_text(encoding="utf-8")
        blank = docsgen.REGION.sub(lambda m: f"<!-- generated:{m.group('name')} -->\n<!-- /generated -->", text)
        assert blank != text
        p.write_text(blank, encoding="utf-8")
    r = _docsgen(copy)
    assert r.returncode == 0, r.stderr
    for rel in docsgen.DOCS:
        assert (copy / rel).read_bytes() == (ROOT / rel).read_bytes(), f"{rel}: run python -m hsrtcp.docsgen"


def test_the_committed_documents_pass_the_check():
    r = _docsgen(ROOT, "--check")
    assert r.returncode == 0, r.stderr


def test_a_number_edited_by_hand_fails_the_check(copy):
    p = copy / "docs/study.md"
    text = p.read_text(encoding="utf-8")
    assert "6.27 % [" in text  # the spurious RTO rate with handoffs (issue 34)
    p.write_text(text.replace("6.27 % [", "5.86 % [", 1), encoding="utf-8")
    r = _docsgen(copy, "--check")
    assert r.returncode == 1
    assert "docs/study.md: study-main" in r.stderr
    assert p.read_text(encoding="utf-8") != text  # --check writes nothing
    assert _docsgen(copy).returncode == 0
    assert p.read_text(encoding="utf-8") == text


def test_changed_data_changes_the_document_and_its_recorded_hash(copy):
    arms = copy / "docs/findings/arms.csv"
    df = pl.read_csv(arms)
    df = df.with_columns(pl.when(pl.col("run_id") == df["run_id"][0]).then(pl.col("goodput_bps") * 2)
                         .otherwise(pl.col("goodput_bps")).alias("goodput_bps"))
    df.write_csv(arms)
    r = _docsgen(copy, "--check")
    assert r.returncode == 1
    assert "docs/findings.md: findings-levels" in r.stderr and "docs/study.md" not in r.stderr
    old = (copy / "docs/findings.md").read_text(encoding="utf-8")
    assert _docsgen(copy).returncode == 0
    new = (copy / "docs/findings.md").read_text(encoding="utf-8")
    old_hash = [ln for ln in old.splitlines() if ln.startswith("<!-- inputs")][0]
    new_hash = [ln for ln in new.splitlines() if ln.startswith("<!-- inputs")][0]
    assert old_hash != new_hash


def test_a_table_that_disagrees_with_its_connections_is_refused(copy):
    p = copy / "tests/data/study/dupack.parquet"
    df = pl.read_parquet(p)
    df.with_columns(pl.when(pl.col("flow_class") == "high_0").then(pl.col("value") + 0.01)
                    .otherwise(pl.col("value")).alias("value")).write_parquet(p)
    r = _docsgen(copy, "--check")
    assert r.returncode == 3
    assert "tests/data/study: dupack_rate of high_0" in r.stderr and "study_flows.parquet" in r.stderr


def test_an_unknown_region_names_file_and_line(copy):
    p = copy / "docs/findings.md"
    p.write_text("title\n\n<!-- generated:no-such -->\n<!-- /generated -->\n", encoding="utf-8")
    r = _docsgen(copy, "docs/findings.md")
    assert r.returncode == 3
    assert "docs/findings.md:3: no generator for region 'no-such'" in r.stderr


def test_every_generator_has_its_region():
    names = set()
    for rel in docsgen.DOCS:
        names |= set(docsgen.regions((ROOT / rel).read_text(encoding="utf-8")))
    assert names == set(docsgen.GENERATORS)


def _rows(region: str) -> dict[tuple[str, str], list[str]]:
    out = {}
    for line in region.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0] not in ("metric", "---"):
            out[(cells[0], cells[1])] = cells
    return out


def test_orderings_within_workloads_report_the_reversals_as_they_come_out():
    """Issue 34's reading of the committed data, each cell also computed here from the
    connections with polars alone: within the long downloads and the 2 MB flows the RTT's
    speed step reverses (intervals excluding zero), and the DupACK rate's handoff step is
    about zero within a workload although it is large pooled."""
    flows = pl.read_parquet(ROOT / "tests/data/study/study_flows.parquet")
    cls = {"static": ["static"], "high_0": ["high_0"], "high_1_16": ["high_1_8", "high_9_16"]}

    def mean(col, c, w):
        return flows.filter(pl.col("flow_class").is_in(cls[c]), pl.col("workload") == w)[col].mean()

    text = (ROOT / "docs/study.md").read_text(encoding="utf-8")
    rows = _rows(docsgen.regions(text)["study-orderings-by-workload"])
    for w, name in (("duration", "120-s downloads"), ("2MB", "2 MB flows")):
        r = rows[("RTT M7", name)]
        assert mean("rtt_mean_s", "static", w) > mean("rtt_mean_s", "high_0", w)
        assert r[2].startswith(f"{mean('rtt_mean_s', 'static', w) * 1000:.0f} ms")
        assert "**speed reversed** (interval excludes 0)" in r[8]
    r = rows[("DupACK rate M15", "120-s downloads")]
    step = mean("dupack_rate", "high_1_16", "duration") - mean("dupack_rate", "high_0", "duration")
    assert abs(step) < 0.002 and "handoffs as expected (interval includes 0)" in r[8]
    assert r[3].startswith("17.5 %") and r[4].startswith("17.6 %")
    pooled = rows[("DupACK rate M15", "all workloads")]
    assert pooled[3].startswith("11.1 %") and pooled[4].startswith("16.7 %")


def test_an_unreadable_input_is_an_input_error_naming_it(copy):
    (copy / "tests/data/study/study_flows.parquet").write_bytes(b"not parquet")
    r = _docsgen(copy, "--check")
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert "tests/data/study/study_flows.parquet: cannot be read" in r.stderr
