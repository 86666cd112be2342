"""The report's "Studies' gallery" (issue 33): what `hsrtcp figures` makes from the report's
study (or, without one, from a study of its results) is embedded — figures as PNG images,
tables as HTML tables — and the coverage list says of every item whether it was made and what
is missing. The witness is `hsrtcp figures` itself run on the same inputs: its coverage.md
and its item files (tests/data/study: the committed lab campaign, docs/study.md run H)."""

from __future__ import annotations

import base64
import html
import re
import struct
from pathlib import Path

import pytest

from hsrtcp.cli import main
from hsrtcp.report.build import build_report
from hsrtcp.report.gallery import BUDGET_BYTES

from .common import DATA, run

STUDY = DATA / "study"


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gallery") / "res"
    assert run(["analyze", DATA / "lab_truth" / "run", "-q", "--no-plot", "-o", out]) == 0
    return out


def _coverage_md(path: Path) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| (seed\S+) \| (.*?) \| (made|partly|not made|drawing) \| (.*?) \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = (m.group(3), m.group(5).replace("\\|", "|"))
    return rows


def _section(page: str) -> str:
    return page.split('<section id="gallery">')[1].split("</section>")[0]


def _coverage_html(section: str) -> dict[str, tuple[str, str]]:
    table = section.split('id="gallery-coverage"')[1]
    rows = {}
    for m in re.finditer(r'<tr class="[^"]*" data-item="([^"]+)"><td>[^<]*</td><td>[^<]*</td><td>([^<]*)</td>'
                         r"<td>([^<]*)</td></tr>", table):
        rows[m.group(1)] = (html.unescape(m.group(2)), html.unescape(m.group(3)).replace("\n", " "))
    return rows


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_gallery_lists_the_items_of_the_committed_campaign(lab, tmp_path):
    assert main(["figures", str(STUDY), str(lab), "-o", str(tmp_path / "g"), "-q"]) == 0
    want = _coverage_md(tmp_path / "g" / "coverage.md")
    assert len(want) == 59
    build_report(lab, STUDY, tmp_path / "r.html")
    section = _section((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert _coverage_html(section) == want  # every item, its status and what is missing
    made = {k for k, (status, _) in want.items() if status in ("made", "partly")}
    assert len(made) >= 20
    for item in made:
        m = re.search(rf'<figure class="gallery-item" id="gallery-{item}" data-status="([^"]+)">(.*?)</figure>',
                      section, re.S)
        assert m, item
        assert m.group(1) == want[item][0]
        if (tmp_path / "g" / f"{item}.pdf").is_file():  # a figure: an image that decodes
            src = re.search(r'src="data:image/png;base64,([^"]+)"', m.group(2)).group(1)
            w, h = _png_size(base64.b64decode(src))
            assert w > 200 and h > 100
        else:  # a table: the cells of the item's Markdown file
            md = (tmp_path / "g" / f"{item}.md").read_text(encoding="utf-8")
            cells = [c.strip() for line in md.splitlines() if line.startswith("|") and not set(line) <= set("|-: ")
                     for c in line.replace("\\|", "\u2502").strip("|").split("|")]
            got = [html.unescape(c) for c in re.findall(r"<t[hd]>([^<]*)</t[hd]>", m.group(2))]
            assert [c for c in cells if c] == [c for c in got if c], item
    assert len(section) < BUDGET_BYTES + 200_000


def test_without_a_study_the_gallery_comes_from_a_study_of_the_results(lab, tmp_path):
    assert main(["study", str(lab), "-o", str(tmp_path / "s"), "-q"]) == 0
    assert main(["figures", str(tmp_path / "s"), str(lab), "-o", str(tmp_path / "g"), "-q"]) == 0
    want = _coverage_md(tmp_path / "g" / "coverage.md")
    build_report(lab, None, tmp_path / "r.html")
    section = _section((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "a study of the results" in section
    assert _coverage_html(section) == want
    assert "seed000-fig-04" in {k for k, (s, _) in want.items() if s in ("made", "partly")}
    assert 'id="gallery-seed000-fig-04"' in section


def test_no_gallery(lab, tmp_path):
    assert main(["report", str(lab), "-o", str(tmp_path / "r.html"), "--no-gallery"]) == 0
    section = _section((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "Left out (--no-gallery)" in section and "gallery-item" not in section


def test_results_without_a_radio_log_give_a_gallery(drops, tmp_path):
    """No context: study_flows has no rats, so no generation; seed 000's 3G-vs-4G item is not
    made and says why (it raised ColumnNotFoundError before, and the whole gallery was lost)."""
    build_report(drops, None, tmp_path / "r.html")
    section = _section((tmp_path / "r.html").read_text(encoding="utf-8"))
    cov = _coverage_html(section)
    assert len(cov) == 59
    # (data): the results lack a radio log, which the user can give (issue 33's gap kinds)
    assert cov["seed000-3g-vs-4g"] == ("not made", "(data) study_flows.parquet of STUDY: no column rats (from "
                                                    "context: a radio log)")


def test_large_results_without_a_study_say_how_to_make_one(lab, tmp_path, monkeypatch):
    from hsrtcp.report import gallery

    monkeypatch.setattr(gallery, "MAX_FLOWS_FOR_STUDY", 2)  # the results hold 3 flows rows
    build_report(lab, None, tmp_path / "r.html")
    section = _section((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "3 flows rows (more than 2)" in section and "hsrtcp study RESULTS -o STUDY" in section
    assert "gallery-item" not in section
    build_report(lab, STUDY, tmp_path / "s.html")  # with a STUDY: the study alone
    section = _section((tmp_path / "s.html").read_text(encoding="utf-8"))
    assert "alone (the results hold 3 flows rows" in section
    assert _coverage_html(section)["seed000-fig-04"][0] == "not made"  # it needs RESULTS
