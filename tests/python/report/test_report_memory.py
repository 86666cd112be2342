"""The report reads what it draws (issue 32): of the flows table only the columns of
:func:`hsrtcp.report.inputs.flow_columns` for every flow, every column for the drilled-down
flows only. The page must not change: each report below is built twice, once reading every
column of every flow (the reader before issue 32: ``load_results(path, columns=None)``) and
once the projected way, and the two pages are compared byte for byte (the generation time
aside)."""

from __future__ import annotations

import functools
import re

import polars as pl
import pytest

from hsrtcp.report import build, inputs
from hsrtcp.testing import fixtures

from .common import DATA, run

GENERATED = re.compile(rb'"generated":"[^"]*"|Generated [0-9T:+-]+ by')


def _page(path) -> bytes:
    return GENERATED.sub(b"<generated>", path.read_bytes())


def _both(monkeypatch, tmp_path, results, study=None) -> tuple[bytes, bytes, build.ReportInfo]:
    projected = build.build_report(results, study, tmp_path / "projected.html")
    with monkeypatch.context() as m:
        m.setattr(build, "load_results", functools.partial(inputs.load_results, columns=None))
        full = build.build_report(results, study, tmp_path / "full.html")
    assert projected.detailed == full.detailed > 0
    return _page(tmp_path / "projected.html"), _page(tmp_path / "full.html"), projected


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """Five real client/server pairs: client, server and matched rows (drill-downs of matched
    rows show the linked server row's packets)."""
    res = tmp_path_factory.mktemp("memory") / "res"
    args = ["analyze"]
    for p in ("drops_cubic", "bbr_drops", "multi_concurrent", "data_blackout", "ack_delay"):
        args += ["--client", DATA / f"{p}.client.pcap", "--server", DATA / f"{p}.server.pcap"]
    assert run([*args, "-q", "--no-plot", "-o", res]) == 0
    return res


def test_projected_page_equals_full_read_pairs(pairs, tmp_path, monkeypatch):
    a, b, info = _both(monkeypatch, tmp_path, pairs)
    assert info.flows > 20
    assert a == b


def test_projected_page_equals_full_read_with_context_and_study(pair, tmp_path, monkeypatch):
    # context, handoffs, suspensions and labels; with and without the study directory
    a, b, _ = _both(monkeypatch, tmp_path, pair["drops_cubic"])
    assert a == b
    a, b, _ = _both(monkeypatch, tmp_path, pair["drops_cubic"], pair["study"])
    assert a == b


def test_projected_page_equals_full_read_corpus(tmp_path, monkeypatch):
    corpus = fixtures.corpus(tmp_path / "field", ("multi_concurrent.client.pcap", "small_50k.server.pcap"))
    res = tmp_path / "results"
    assert run(["analyze", corpus, "-o", res, "-q", "--no-plot"]) == 0
    a, b, _ = _both(monkeypatch, tmp_path, res)
    assert a == b


def test_flows_projected_and_detail_rows_complete(pairs):
    full = inputs.load_results(pairs, columns=None)
    res = inputs.load_results(pairs)
    assert res.flows.columns == list(inputs.flow_columns())
    assert len(full.flows.columns) > 3 * len(res.flows.columns)  # the columns left unread
    ids = full.flows.get_column("flow_id").to_list()[::3]
    rows = res.detail_rows(res.flows, ids)
    want = full.flows.filter(pl.col("flow_id").is_in(ids))
    assert rows.height == len(ids)
    assert rows.select(want.columns).equals(want)


def test_corpus_detail_rows_follow_renumbered_ids(tmp_path):
    corpus = fixtures.corpus(tmp_path / "field", ("multi_concurrent.client.pcap", "drops_cubic.server.pcap"))
    res_dir = tmp_path / "results"
    assert run(["analyze", corpus, "-o", res_dir, "-q", "--no-plot"]) == 0
    full = inputs.load_results(res_dir, columns=None)
    res = inputs.load_results(res_dir)
    ids = res.flows.get_column("flow_id").to_list()
    rows = res.detail_rows(res.flows, ids).sort("flow_id")
    want = full.flows.sort("flow_id")
    assert rows.height == want.height == len(set(ids))
    # input flow ids repeat across inputs; each renumbered row carries its own input's columns
    assert rows.select(want.columns).equals(want)


def _rows(fragment: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", fragment.split("<tbody>", 1)[1].split("</tbody>", 1)[0])


def _cells(fragment: str) -> list[dict[str, str]]:
    """The table's rows as {header: cell}."""
    head = re.findall(r"<th>(.*?)</th>", fragment.split("<thead>", 1)[1].split("</thead>", 1)[0])
    return [dict(zip(head, re.findall(r"<td>(.*?)</td>", r))) for r in _rows(fragment)]


def test_connections_beyond_the_cap_are_the_first_of_the_full_view(pairs, monkeypatch):
    # beyond CONNECTION_ROWS only the first connections' rows go through the view: their rows
    # (names f1, f2, ... included) must be those of the view over every flow
    res = inputs.load_results(pairs)
    f = build._flow_frame(res)
    whole = build._connections_html(res, f)
    n = int(re.search(r'id="connections">(\d+) connection', whole).group(1))
    assert n > 6 and len(_rows(whole)) == n
    monkeypatch.setattr(build, "CONNECTION_ROWS", 4)
    capped = build._connections_html(res, f)
    assert re.search(r'id="connections">(\d+) connection', capped).group(1) == str(n)
    # the same columns: one null in the first four connections (matched_q here) but not in
    # every connection stays
    assert _cells(capped) == _cells(whole)[:4]
    assert any(r["matched_q"] != '<span class="null">—</span>' for r in _cells(whole)[4:])
    assert all(r["matched_q"] == '<span class="null">—</span>' for r in _cells(whole)[:4])
    assert f"{n - 4} more rows not shown." in capped
