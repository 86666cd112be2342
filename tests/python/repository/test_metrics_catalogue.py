"""docs/metrics.md is the catalogue the code cites: every metric (M), ruling (A) and seed value
(T) id cited in the repository is defined there, and every column it names for a metric is
documented for its table (docs/formats/, the model fit in docs/models.md)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
CATALOGUE = DOCS / "metrics.md"

CITED = re.compile(r"\b([MA])([0-9]{1,3})\b")
SEED_VALUE = re.compile(r"\bT[0-4]-[0-9]{2}\b")
SCANNED = ("python/", "crates/", "tests/", "docs/", "scenarios/", "campaigns/", "scripts/", "bench/",
           "Makefile", "README.md")

# where the columns of each table are documented
TABLE_DOCS = {
    "flows": ["formats/flows.md", "formats/matched.md"],  # matched rows are flows rows
    "series": ["formats/series.md"],
    "rtt": ["formats/rtt.md"],
    "events": ["formats/events.md"],
    "context": ["formats/context.md"],
    "handoffs": ["formats/handoffs.md"],
    "suspensions": ["formats/suspensions.md"],
    "coverage": ["formats/coverage.md"],
    "mptcp": ["formats/mptcp.md"],
    "mptcp_subflows": ["formats/mptcp.md"],
    "mptcp_series": ["formats/mptcp.md"],
    "mptcp_instances": ["formats/mptcp-metrics.md"],
    "mptcp_paths": ["formats/mptcp-metrics.md"],
    "mptcp_kt": ["formats/mptcp-metrics.md"],
    "mptcp_rates": ["formats/mptcp-metrics.md"],
    "model_fit_flows": ["models.md"],  # `hsrtcp model fit` output, documented with the models
}


def _catalogue() -> str:
    return CATALOGUE.read_text(encoding="utf-8")


def _metric_sections(text: str) -> dict[int, str]:
    parts = re.split(r"^### M([0-9]+) — ", text, flags=re.M)
    return {int(parts[i]): parts[i + 1].split("\n## ")[0] for i in range(1, len(parts), 2)}


def _rulings(text: str) -> set[int]:
    return {int(m) for m in re.findall(r"^\| A([0-9]+) \|", text, flags=re.M)}


def _text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", *SCANNED], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout ({exc}): the tracked files are unknown")
    files = []
    for name in filter(None, out.decode().split("\0")):
        path = ROOT / name
        if not path.is_file():
            continue
        head = path.read_bytes()[:8192]
        if b"\0" in head:  # binary (captures, Parquet)
            continue
        if any((d / "LICENSE").is_file() for d in path.parents if d != ROOT and ROOT in d.parents):
            continue  # third-party data kept byte for byte with its own license (hex ids look like rulings)
        files.append(path)
    return files


def test_the_catalogue_defines_every_metric_and_ruling_once():
    text = _catalogue()
    sections = _metric_sections(text)
    assert sorted(sections) == list(range(1, 37))
    assert len(re.findall(r"^### M[0-9]+ — ", text, flags=re.M)) == 36
    assert _rulings(text) == set(range(1, 41))
    assert len(re.findall(r"^\| A[0-9]+ \|", text, flags=re.M)) == 40
    for n, body in sections.items():
        for field in ("- Unit:", "Vantage:", "- Columns:", "- Computed in:"):
            assert field in body, f"M{n} lacks {field!r}"


def test_every_cited_id_is_in_the_catalogue():
    text = _catalogue()
    metrics, rulings = set(_metric_sections(text)), _rulings(text)
    values = set(re.findall(r"^\| (T[0-4]-[0-9]{2}) \|", text, flags=re.M))
    missing = []
    for path in _text_files():
        body = path.read_text(encoding="utf-8", errors="replace")
        for kind, num in CITED.findall(body):
            if int(num) not in (metrics if kind == "M" else rulings):
                missing.append(f"{path.relative_to(ROOT)}: {kind}{num}")
        missing += [f"{path.relative_to(ROOT)}: {t}" for t in SEED_VALUE.findall(body) if t not in values]
    assert not missing, "ids cited but not in docs/metrics.md:\n" + "\n".join(sorted(set(missing)))


def test_nothing_cites_the_research_note_outside_the_repository():
    note = "targets" + ".md"  # built from parts, so that this file does not match itself
    stale = [str(p.relative_to(ROOT)) for p in _text_files() if note in p.read_text(errors="replace")]
    assert not stale


def _documented(doc: Path, table: str, column: str) -> bool:
    text = doc.read_text(encoding="utf-8")
    # the table's own section when the file documents several tables
    m = re.search(rf"^## `{re.escape(table)}`.*?(?=^## |\Z)", text, flags=re.M | re.S)
    section = m.group(0) if m else text
    word = re.compile(rf"(?<![\w<>]){re.escape(column)}(?![\w<>])")
    for line in section.splitlines():
        if line.startswith("|"):
            first = line.split("|")[1]
            if word.search(first.replace("`", " ")):
                return True
    # docs outside docs/formats describe their outputs in prose
    return "formats" not in doc.parts and f"{column}" in section


def test_every_metric_names_documented_columns():
    problems = []
    for n, body in _metric_sections(_catalogue()).items():
        block = re.search(r"^- Columns:(.*?)(?=^- |\Z)", body, flags=re.M | re.S)
        named = re.findall(r"`([a-z_0-9]+)\.([a-z_0-9<>]+)`", block.group(1)) if block else []
        if not named:
            problems.append(f"M{n}: names no table.column")
        for table, column in named:
            docs = TABLE_DOCS.get(table)
            if docs is None:
                problems.append(f"M{n}: unknown table {table!r}")
            elif not any(_documented(DOCS / d, table, column) for d in docs):
                problems.append(f"M{n}: {table}.{column} is not in {', '.join(docs)}")
    assert not problems, "\n".join(problems)


def test_the_column_check_can_fail():
    # a column that no format documents is caught, one that is documented is found
    assert _documented(DOCS / "formats/flows.md", "flows", "dupack_rate")
    assert not _documented(DOCS / "formats/flows.md", "flows", "dupack_ratio")
    assert _documented(DOCS / "formats/mptcp-metrics.md", "mptcp_kt", "k_t")
    assert not _documented(DOCS / "formats/mptcp-metrics.md", "mptcp_kt", "u_c")  # another table's
